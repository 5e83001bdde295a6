#!/usr/bin/env python3
"""qoslab against ns-3.44 on a set of TCP dumbbells beyond the basic peer check.

Each case is the dumbbell of validation/ns3_peer.py (10 Mb/s bottleneck, 100 Mb/s
access, IW 10, delayed ACKs, min RTO 200 ms, 1460-byte segments, starts uniform in
[0, 1) s from the seed, 60 s with 10 s warm-up) with its own RTT mix, queue, buffer,
SACK setting and number of flows. Per case and seed both simulators run the same start
times; the table gives, as mean [min–max] over the seeds on each side: total goodput
(and the ratio of the means), goodput per RTT class, Jain's index over the flows,
bottleneck drops after the warm-up, and the RTT-bias exponent k (goodput ∝ RTT^−k,
least squares on logs of the per-flow goodputs of one seed). Goals: totals within 3 %,
Jain within ±0.05, k within ±0.15 (of the means).

Usage: python3 validation/ns3_cases.py [--seeds N] [--cases a,b] [--out FILE]
Needs: cargo build --release --bin qoslab-run; validation/ns3/build.sh
Writes docs/validation/ns3-cases.md (and prints one line per seed as it goes).
"""

from __future__ import annotations

import argparse
import math
import pathlib
import random
import statistics
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import ns3_peer as peer

from qoslab import fairness

# name → (flows, RTTs cycled [ms], queue kind of ns3_peer.QUEUES, buffer [packets], SACK)
# Without SACK the first recovery after slow start (windows are uncapped) repairs one hole
# per RTT for several seconds: those cases run 90 s with a 30 s warm-up instead.
LONG = {"droptail-nosack", "red-nosack"}
CASES = {
    "rtt-10-270-red": (8, [10, 270], "red", 100, True),
    "rtt-10-270-droptail": (8, [10, 270], "droptail", 100, True),
    "rtt-20-200-red": (4, [20, 200], "red", 100, True),
    "rtt-5mix-red": (10, [10, 30, 90, 150, 270], "red", 100, True),
    "droptail-small-buffer": (8, [20, 40, 80, 160], "droptail", 20, True),
    "droptail-nosack": (8, [20, 40, 80, 160], "droptail", 100, False),
    "red-nosack": (8, [20, 40, 80, 160], "red", 100, False),
    "2-flows-droptail": (2, [40, 80], "droptail", 100, True),
    "64-flows-red": (64, [20, 40, 80, 160], "red", 100, True),
}


def jain(xs):
    """Jain's index; NaN when all are zero (:func:`qoslab.fairness.jain`)."""
    return fairness.jain(xs)


def span(v, fmt="{:.3f}"):
    return f"{fmt.format(statistics.mean(v))} [{fmt.format(min(v))}–{fmt.format(max(v))}]"


def run_case(name, seeds, duration, warmup, delack_ms=200):
    n, rtts, queue, limit, sack = CASES[name]
    if name in LONG:
        duration, warmup = duration + 30, warmup + 20
    per_flow = [rtts[i % len(rtts)] for i in range(n)]
    res = {"q": [], "n": []}
    for seed in range(1, seeds + 1):
        rnd = random.Random(seed)
        starts = [round(rnd.random(), 6) for _ in range(n)]
        args = (n, queue, starts, duration, warmup, seed)
        kw = dict(limit=limit, rtts=rtts, sack=sack, delack_ms=delack_ms)
        gq, _, _, dq = peer.run_qoslab(peer.qoslab_scenario(*args, **kw), drops=True)
        gn, _, _, dn = peer.run_ns3(*args, drops=True, **kw)
        for side, g, d in (("q", gq, dq), ("n", gn, dn)):
            res[side].append(
                {
                    "total": sum(g),
                    "jain": jain(g),
                    "drops": d,
                    # flows at ≤ 70 kb/s: about one segment per 200 ms timeout
                    "starved": sum(x <= 70e3 for x in g),
                    "k": peer.rtt_exponent(per_flow, g) if len(set(rtts)) > 1 else float("nan"),
                    "cls": {
                        r: statistics.mean(x for x, rr in zip(g, per_flow, strict=True) if rr == r)
                        for r in rtts
                    },
                }
            )
        print(
            f"{name} seed {seed}: total {sum(gq) / 1e6:.3f} vs {sum(gn) / 1e6:.3f} Mb/s, "
            f"drops {dq} vs {dn}",
            flush=True,
        )
    return res


def verdict(res):
    tq = statistics.mean(x["total"] for x in res["q"])
    tn = statistics.mean(x["total"] for x in res["n"])
    jq = statistics.mean(x["jain"] for x in res["q"])
    jn = statistics.mean(x["jain"] for x in res["n"])
    kq = statistics.mean(x["k"] for x in res["q"])
    kn = statistics.mean(x["k"] for x in res["n"])
    ok = [abs(tq / tn - 1) <= 0.03, abs(jq - jn) <= 0.05]
    if not math.isnan(kq):
        ok.append(abs(kq - kn) <= 0.15)
    return tq / tn, jq - jn, kq - kn, all(ok)


def unlocked(res):
    """ΔJain and Δk over the seeds in which no flow of either simulator sits at one
    segment per timeout (≤ 70 kb/s), and how many such seeds there are."""
    keep = [
        i
        for i, (q, n) in enumerate(zip(res["q"], res["n"], strict=True))
        if q["starved"] == 0 and n["starved"] == 0
    ]
    if not keep:
        return math.nan, math.nan, 0
    mean = lambda side, key: statistics.mean(res[side][i][key] for i in keep)  # noqa: E731
    return mean("q", "jain") - mean("n", "jain"), mean("q", "k") - mean("n", "k"), len(keep)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--warmup", type=float, default=10.0)
    ap.add_argument(
        "--delack-timeout",
        type=int,
        default=200,
        help="delayed-ACK timeout [ms] on both sides (below the 200 ms minimum RTO, ns-3's "
        "one-segment-per-timeout lock cannot form)",
    )
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated subset")
    ap.add_argument("--out", default=str(peer.ROOT / "docs" / "validation" / "ns3-cases.md"))
    args = ap.parse_args()
    for b in (peer.QOSLAB, peer.NS3):
        if not b.exists():
            print(f"missing {b}: see the usage line", file=sys.stderr)
            return 2
    summary = [
        "| case | flows | RTTs (ms) | queue | SACK | total ratio | ΔJain | Δk | goals "
        "| ΔJain, Δk without locked flows (seeds) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    detail = []
    for name in args.cases.split(","):
        n, rtts, queue, limit, sack = CASES[name]
        res = run_case(name, args.seeds, args.duration, args.warmup, args.delack_timeout)
        ratio, dj, dk, ok = verdict(res)
        uj, uk, un = unlocked(res)
        qdesc = f"{queue} {limit}" if queue == "droptail" else f"{queue} (wait) {limit}"
        summary.append(
            f"| {name} | {n} | {'/'.join(map(str, rtts))} | {qdesc} | {'on' if sack else 'off'} "
            f"| {ratio:.3f} | {dj:+.3f} | {'—' if math.isnan(dk) else f'{dk:+.2f}'} "
            f"| {'met' if ok else '**missed**'} | "
            f"{'—' if math.isnan(uj) else f'{uj:+.3f}'}, "
            f"{'—' if math.isnan(uk) else f'{uk:+.2f}'} ({un}) |"
        )
        detail += [
            f"### {name}",
            "",
            "| | qoslab | ns-3 |",
            "|---|---|---|",
            "| total goodput (Mb/s) | "
            + " | ".join(span([x["total"] / 1e6 for x in res[s]]) for s in "qn")
            + " |",
        ]
        for r in rtts:
            detail.append(
                f"| goodput per flow, RTT {r} ms (Mb/s) | "
                + " | ".join(span([x["cls"][r] / 1e6 for x in res[s]]) for s in "qn")
                + " |"
            )
        detail += [
            "| Jain's index | "
            + " | ".join(span([x["jain"] for x in res[s]]) for s in "qn")
            + " |",
            "| flows at ≤ 0.07 Mb/s (one segment per RTO) | "
            + " | ".join(span([x["starved"] for x in res[s]], "{:.1f}") for s in "qn")
            + " |",
            "| bottleneck drops | "
            + " | ".join(span([x["drops"] for x in res[s]], "{:.0f}") for s in "qn")
            + " |",
        ]
        if len(set(rtts)) > 1:
            detail.append(
                "| k (goodput ∝ RTT^−k) | "
                + " | ".join(span([x["k"] for x in res[s]], "{:.2f}") for s in "qn")
                + " |"
            )
        detail.append("")
    lines = [
        "# qoslab against ns-3.44: more dumbbells",
        "",
        f"Made by `python3 validation/ns3_cases.py --seeds {args.seeds}"
        f"{'' if args.cases == ','.join(CASES) else f' --cases {args.cases}'}"
        f"{'' if args.delack_timeout == 200 else f' --delack-timeout {args.delack_timeout}'}` "
        f"(delayed-ACK timeout {args.delack_timeout} ms on both sides, "
        f"{args.duration:g} s, {args.warmup:g} s warm-up — cases without SACK "
        f"{args.duration + 30:g} s, {args.warmup + 20:g} s —, {args.seeds} seeds on each side; "
        "values are mean [min–max] over the seeds). Setup as in "
        "[ns3-peer.md](ns3-peer.md): qoslab runs SACK with RFC 6675 recovery (ns-3's "
        "`TcpClassicRecovery`) or plain NewReno, limited transmit on in both, 2 bytes of "
        "framing per packet on every link (ns-3's PPP header). Goals: total ratio within "
        "0.97–1.03, |ΔJain| ≤ 0.05, |Δk| ≤ 0.15. The last column repeats ΔJain and Δk "
        "over the seeds in which no flow of either simulator is locked at one segment per "
        'timeout (≤ 0.07 Mb/s; see README.md, "ns-3 flows lock up").',
        "",
        *summary,
        "",
        *detail,
    ]
    out = pathlib.Path(args.out)
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""qoslab's DCTCP (RFC 8257) against ns-3.44's TcpDctcp through a step-marking queue.

Each case is a dumbbell (1 Gb/s access links, 2 ms bottleneck delay, PPP framing, RTT =
2·(access + 2 + 1 ms), starts uniform in [0, 1) s from the seed) with its own bottleneck
rate, flow count and RTT mix. Every flow is DCTCP with g = 1/16 and α starting at 1 (both
simulators' defaults), ECN, SACK with NewReno-style recovery, IW 10, delayed ACKs every 2
segments / 200 ms, min RTO 200 ms, 1460-byte segments. The bottleneck marks at an
instantaneous threshold: in ns-3 a RedQueueDisc with MinTh = MaxTh = K − 1, QW = 1,
UseEcn, UseHardDrop false, not gentle, 999 packets, in front of the one-packet device
queue (validation/ns3/dumbbell.cc ``--cc=dctcp --queue=red_step``); in qoslab RED with
min_th = max_th = K, w_q = 1, ecn, hard_drop = false, 1000 packets, so that both mark
an arrival finding K packets waiting in all (ns-3's disc holds one packet fewer than
what waits: as validation/ns3_peer.py splits a DropTail). K = 20.

Judged per case, decided before any number was seen:
- total goodput: qoslab / ns-3 (means over seeds) within 3 %;
- Jain's index over the flows: means over seeds within 0.05;
- bottleneck queue p50 and p95 in packets: bytes queued (ns-3: disc + device queue; in
  both the packet on the wire excluded) sampled every 10 ms after the warm-up, ÷ 1500;
  per seed its percentiles, then their mean over seeds. Band: within max(20 % of
  ns-3's, 3 packets): DCTCP's queue saw-tooths by about one packet per flow per RTT
  around K, the 10 ms samples catch it at random phases, and the two simulators'
  windows are cut in whole segments (qoslab, as Linux) or in bytes (ns-3).

Counterfactual (``--byte-counting``): qoslab's flows with ``byte_counting = true``. With
delayed ACKs qoslab's default increase adds MSS²/cwnd per ACK (ns-2's rule), half a
segment per RTT, where ns-3's TcpNewReno-based TcpDctcp counts the segments each ACK
acknowledges (one segment per RTT, as RFC 3465 and Linux); ns-3's rows are run again.

Usage: python3 validation/ns3_dctcp.py [--seeds N] [--cases a,b] [--byte-counting]
       python3 validation/ns3_dctcp.py --page   (rewrites the page from the data)
Needs: validation/ns3/build.sh (the ns-3 peer), maturin develop (qoslab).
Writes validation/data/ns3-dctcp.json and docs/validation/ns3-dctcp.md.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import random
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "validation"))
import ns3_peer as peer  # noqa: E402

from qoslab.twin import jain  # noqa: E402  (Jain's index; NaN when all are zero)

DATA = ROOT / "validation" / "data" / "ns3-dctcp.json"
PAGE = ROOT / "docs" / "validation" / "ns3-dctcp.md"
K = 20
LIMIT = 1000
SAMPLE_S = 0.010
PKT = 1500

# name → (flows, bottleneck, RTTs cycled over the flows [ms])
CASES = {
    "4x100M-rtt10": (4, "100Mbps", [10]),
    "8x50M-rtt10-40": (8, "50Mbps", [10, 20, 40]),
    "2x20M-rtt20-60": (2, "20Mbps", [20, 60]),
}
TOTAL_TOL = 0.03
JAIN_TOL = 0.05
QUEUE_REL = 0.20
QUEUE_ABS = 3.0


def starts_for(n: int, seed: int) -> list[float]:
    rnd = random.Random(seed)
    return [round(rnd.random(), 6) for _ in range(n)]


def scenario(case, seed, duration, warmup, byte_counting=False) -> dict:
    """The qoslab dumbbell of the case with DCTCP flows and the step-marking queue;
    ``byte_counting`` turns RFC 3465 byte counting on (the counterfactual)."""
    n, bottleneck, rtts = CASES[case]
    starts = starts_for(n, seed)
    tcp = {
        "variant": "sack",
        "mss": 1460,
        "halve": "pipe",
        "max_window": 100000,
        "initial_window": 10,
        "delayed_ack": True,
        "delack_timeout": "200ms",
        "min_rto": "200ms",
        "granularity": "1ms",
        "ecn": True,
        "cc": {"kind": "dctcp", "g": 0.0625, "alpha_init": 1.0},
    }
    if byte_counting:
        tcp["byte_counting"] = True
    nodes = [{"name": "r1", "kind": "router"}, {"name": "r2", "kind": "router"}]
    links, flows = [], []
    access = {"rate": "1Gbps", "framing": 2, "queue": {"kind": "droptail", "limit": 1000}}
    for i in range(n):
        rtt = rtts[i % len(rtts)]
        nodes += [{"name": f"s{i}"}, {"name": f"d{i}"}]
        links.append({"a": f"s{i}", "b": "r1", "delay": f"{rtt / 2 - 3}ms", **access})
        links.append({"a": "r2", "b": f"d{i}", "delay": "1ms", **access})
        flows.append(
            {"name": f"f{i}", "from": f"s{i}", "to": f"d{i}", "start": starts[i], "tcp": tcp}
        )
    step = {
        "kind": "red",
        "limit": LIMIT,
        "min_th": K,
        "max_th": K,
        "w_q": 1,
        "max_p": 1,
        "ecn": True,
        "hard_drop": False,
    }
    links.append(
        {"a": "r1", "b": "r2", "rate": bottleneck, "delay": "2ms", "framing": 2, "queue": step}
    )
    return {
        "name": f"dctcp-{case}",
        "duration": duration,
        "warmup": warmup,
        "seed": seed,
        "node": nodes,
        "link": links,
        "flow": flows,
        "record": {"interval": f"{SAMPLE_S * 1000:g}ms", "queues": ["r1->r2"]},
    }


def run_qoslab(case, seed, duration, warmup, byte_counting=False):
    import polars as pl

    from qoslab.api import run

    t0 = time.perf_counter()
    res = run(scenario(case, seed, duration, warmup, byte_counting))
    wall = time.perf_counter() - t0
    good = [float(x) for x in res.flows.sort("flow")["goodput_bps"]]
    s = res.queue_samples.filter((pl.col("iface") == "r1->r2") & (pl.col("t") >= warmup - 1e-9))
    marks = int(res.queues.filter(pl.col("iface") == "r1->r2")["ecn_marked"][0])
    return good, [int(b) for b in s["bytes"]], marks, wall


def run_ns3(case, seed, duration, warmup, byte_counting=False):
    n, bottleneck, rtts = CASES[case]
    args = peer.ns3_args(
        n,
        "droptail",
        starts_for(n, seed),
        duration,
        warmup,
        seed,
        limit=LIMIT,
        bottleneck=bottleneck,
        access="1Gbps",
        rtts=rtts,
    )
    args = ["--queue=red_step" if a.startswith("--queue=") else a for a in args]
    args += ["--cc=dctcp", f"--red-k={K - 1}", f"--sample-ms={SAMPLE_S * 1000:g}"]
    t0 = time.perf_counter()
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - t0
    good, samples, marks = [], [], 0
    for line in out.splitlines():
        p = line.split()
        if p[0] == "flow":
            good.append(float(p[5]))
        elif p[0] == "qbytes_samples":
            samples = [int(x) for x in p[1].split(",")]
        elif p[0] == "bottleneck_marks":
            marks = int(p[1])
    return good, samples, marks, wall


def percentiles_pkts(samples: list[int]) -> tuple[float, float]:
    q = statistics.quantiles([b / PKT for b in samples], n=100, method="inclusive")
    return q[49], q[94]


# --- the page, from the data alone ------------------------------------------------------


def summarize(data, case, variant="base"):
    rows = [r for r in data["rows"] if r["case"] == case and r.get("variant", "base") == variant]
    out = {}
    for sim in ("qoslab", "ns-3.44"):
        rs = [r for r in rows if r["sim"] == sim]
        out[sim] = {
            "total": statistics.mean(sum(r["goodputs"]) for r in rs),
            "jain": statistics.mean(jain(r["goodputs"]) for r in rs),
            "p50": statistics.mean(r["queue_pkts"][0] for r in rs),
            "p95": statistics.mean(r["queue_pkts"][1] for r in rs),
            "marks": statistics.mean(r["marks"] for r in rs),
            "seeds": len(rs),
        }
    q, m = out["qoslab"], out["ns-3.44"]
    checks = {
        "total": abs(q["total"] / m["total"] - 1) <= TOTAL_TOL,
        "jain": abs(q["jain"] - m["jain"]) <= JAIN_TOL,
    }
    for p in ("p50", "p95"):
        checks[p] = abs(q[p] - m[p]) <= max(QUEUE_REL * m[p], QUEUE_ABS)
    return out, checks


def page(data) -> str:
    meta = data["meta"]
    lines = [
        "# qoslab's DCTCP against ns-3.44's TcpDctcp",
        "",
        f"Made by `{meta['command']}` from `validation/data/ns3-dctcp.json` "
        "(`python3 validation/ns3_dctcp.py --page` rewrites this page from it). "
        f"{meta['duration']:g} s runs with {meta['warmup']:g} s warm-up, seeds "
        f"{', '.join(map(str, meta['seeds']))}; the set-up and the bands are in the script's "
        "docstring ([validation/ns3_dctcp.py](../../validation/ns3_dctcp.py)): DCTCP flows "
        "(RFC 8257, g = 1/16, α from 1) through a queue that marks every ECN-capable arrival "
        f"finding {data['k']} packets or more ([DCTCP's step marking]"
        "(../queues-and-conditioners.md#dctcps-step-marking); in ns-3 RedQueueDisc with "
        "MinTh = MaxTh, QW = 1, UseEcn, UseHardDrop false).",
        "",
        "Bands, set before the runs: total goodput within 3 %; Jain's index within 0.05; "
        "bottleneck queue p50 and p95 (10 ms samples of the packets waiting, per seed, mean "
        "over seeds) within max(20 % of ns-3's, 3 packets).",
        "",
    ]
    body, total, misses = table(data, "base")
    lines += [*body, "", f"**{total - misses} of {total}** cases within every band.", ""]
    for note in data.get("notes", []):
        lines += [note, ""]
    for variant, vmeta in data.get("variants", {}).items():
        title, text = VARIANT_TEXT.get(variant, (f"Variant {variant}", ""))
        body, total, misses = table(data, variant)
        lines += [f"## {title}", "", f"`{vmeta['command']}`. {text}", "", *body, ""]
        lines += [f"**{total - misses} of {total}** cases within every band.", ""]
    return "\n".join(lines)


VARIANT_TEXT = {
    "byte_counting": (
        "Counterfactual: qoslab with byte counting",
        "qoslab's flows count acknowledged bytes (`byte_counting = true`, RFC 3465) instead "
        "of adding MSS²/cwnd per ACK: with delayed ACKs every second segment, ns-3's "
        "TcpDctcp (its NewReno increase counts acknowledged segments) grows one segment per "
        "RTT, qoslab's default half of that. ns-3's rows are run again with the same seeds.",
    ),
}


def table(data, variant) -> tuple[list[str], int, int]:
    lines = [
        "| case | total Mb/s qoslab / ns-3 (ratio) | Jain qoslab / ns-3 | queue p50 packets "
        "qoslab / ns-3 | queue p95 packets qoslab / ns-3 (band ±) | CE marks per run "
        "qoslab / ns-3 | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    total = misses = 0
    for case in data["cases"]:
        if not any(r["case"] == case and r.get("variant", "base") == variant for r in data["rows"]):
            continue
        out, checks = summarize(data, case, variant)
        q, m = out["qoslab"], out["ns-3.44"]
        failed = [k for k, ok in checks.items() if not ok]
        total += 1
        misses += bool(failed)
        verdict = "within" if not failed else "outside: " + ", ".join(failed)
        band = max(QUEUE_REL * m["p95"], QUEUE_ABS)
        lines.append(
            f"| {case} | {q['total'] / 1e6:.2f} / {m['total'] / 1e6:.2f} "
            f"({q['total'] / m['total']:.3f}) | {q['jain']:.3f} / {m['jain']:.3f} | "
            f"{q['p50']:.1f} / {m['p50']:.1f} | {q['p95']:.1f} / {m['p95']:.1f} (±{band:.1f}) | "
            f"{q['marks']:.0f} / {m['marks']:.0f} | {verdict} |"
        )
    return lines, total, misses


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--duration", type=float, default=20.0)
    ap.add_argument("--warmup", type=float, default=5.0)
    ap.add_argument(
        "--byte-counting",
        action="store_true",
        help="counterfactual: qoslab's flows with byte_counting = true",
    )
    ap.add_argument("--page", action="store_true", help="rewrite the page from the data only")
    args = ap.parse_args()
    if args.page:
        PAGE.write_text(page(json.loads(DATA.read_text())))
        print(f"wrote {PAGE}")
        return 0
    if not peer.NS3.exists():
        print(f"missing {peer.NS3}: run validation/ns3/build.sh", file=sys.stderr)
        return 2
    cases = args.cases.split(",")
    variant = "byte_counting" if args.byte_counting else "base"
    rows = []
    for case in cases:
        for seed in range(1, args.seeds + 1):
            for sim, fn in (("qoslab", run_qoslab), ("ns-3.44", run_ns3)):
                good, samples, marks, wall = fn(
                    case, seed, args.duration, args.warmup, args.byte_counting
                )
                rows.append(
                    {
                        "case": case,
                        "seed": seed,
                        "sim": sim,
                        "variant": variant,
                        "goodputs": good,
                        "queue_pkts": list(percentiles_pkts(samples)),
                        "samples": len(samples),
                        "marks": marks,
                        "wall_s": round(wall, 2),
                    }
                )
                r = rows[-1]
                print(
                    f"{variant} {case} seed {seed} {sim}: {sum(good) / 1e6:.2f} Mb/s jain "
                    f"{jain(good):.3f} queue p50/p95 {r['queue_pkts'][0]:.1f}/"
                    f"{r['queue_pkts'][1]:.1f} pkts, {marks} marks ({wall:.1f} s)",
                    flush=True,
                )
    cmd = "python3 validation/ns3_dctcp.py"
    if args.seeds != 3:
        cmd += f" --seeds {args.seeds}"
    if cases != list(CASES):
        cmd += f" --cases {','.join(cases)}"
    if args.byte_counting:
        cmd += " --byte-counting"
    meta = {
        "command": cmd,
        "duration": args.duration,
        "warmup": args.warmup,
        "seeds": list(range(1, args.seeds + 1)),
    }
    if variant == "base":
        data = {
            "meta": meta,
            "k": K,
            "cases": {c: list(CASES[c]) for c in cases},
            "rows": rows,
            "notes": [],
            "variants": {},
        }
    else:
        # A counterfactual joins the committed base runs; its rows replace its earlier ones.
        data = json.loads(DATA.read_text())
        data["rows"] = [r for r in data["rows"] if r.get("variant", "base") != variant] + rows
        data.setdefault("variants", {})[variant] = meta
    DATA.parent.mkdir(parents=True, exist_ok=True)
    DATA.write_text(json.dumps(data, indent=1) + "\n")
    PAGE.write_text(page(data))
    print(f"wrote {DATA} and {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""qoslab's CoDel, FQ-CoDel and PIE against ns-3.44's CoDelQueueDisc, FqCoDelQueueDisc
and PieQueueDisc on held-out TCP dumbbells (issue 61).

Each case is the dumbbell of validation/ns3_peer.py (100 Mb/s access links, SACK with
NewReno-style recovery, IW 10, delayed ACKs every 2 segments / 200 ms, min RTO 200 ms,
1460-byte segments, PPP framing, starts uniform in [0, 1) s from the seed) with its own
bottleneck rate, flow count and RTT mix, none of them used while the queues were written.
The bottleneck queue is the AQM with the RFC defaults and ECN off in both simulators:
CoDel and FQ-CoDel target 5 ms, interval 100 ms (FQ-CoDel 1024 flows, 10240 packets);
CoDel and PIE 1000 packets; PIE target 15 ms, T_UPDATE 15 ms, α 0.125, β 1.25, 150 ms
burst allowance, no derandomization, the §5.5 cap on, and in ns-3 its timestamp delay
estimator (`UseDequeueRateEstimator = false`, as qoslab measures the delay). qoslab runs
through the Python API (``qoslab.api.run``); ns-3 runs validation/ns3/dumbbell.cc
``--queue=codel|fq_codel|pie``.

Judged per case and queue, decided before any number was seen:
- total goodput: qoslab / ns-3 (means over seeds) within 3 %;
- Jain's index over the flows: means over seeds within 0.05;
- per-flow ranking: flows grouped by RTT, the group means over seeds; every pair of
  groups whose ns-3 means differ by more than 10 % is ordered the same in qoslab (pairs
  closer than that, which FQ-CoDel makes of every pair, are ties either way);
- bottleneck queueing delay p50 and p95: the bytes queued at the bottleneck (in ns-3
  the queue disc plus the one-packet device queue behind it; in both, the packet on the
  wire excluded) sampled every 10 ms after the warm-up, × 8 / rate; per seed its
  percentiles, then their mean over seeds. Band: within max(30 % of ns-3's, two packet
  times at the bottleneck rate). Why that wide: ns-3's disc stamps a packet's sojourn
  when it leaves for the device queue, one packet time before it reaches the wire, so
  its CoDel and PIE see a delay one packet time shorter than qoslab's (whose queue feeds
  the wire directly) and hold the total queue up to one packet time longer; the 10 ms
  samples of a sawtooth queue add about as much again; 30 % is the spread of the
  percentiles between seeds of one simulator on these short runs.

Usage: python3 validation/ns3_aqm.py [--seeds N] [--cases a,b] [--queues q,r]
       python3 validation/ns3_aqm.py --page   (rewrites the page from the data)
Needs: validation/ns3/build.sh (the ns-3 peer), maturin develop (qoslab).
Writes validation/data/ns3-aqm.json and docs/validation/ns3-aqm.md.
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

DATA = ROOT / "validation" / "data" / "ns3-aqm.json"
PAGE = ROOT / "docs" / "validation" / "ns3-aqm.md"
AQM_LIMIT = 1000  # CoDel's and PIE's packets in both (FQ-CoDel: its own 10240)
SAMPLE_S = 0.010

# name → (flows, bottleneck, RTTs cycled over the flows [ms])
CASES = {
    "4x10M-rtt20-200": (4, "10Mbps", [20, 50, 100, 200]),
    "16x50M-rtt20-160": (16, "50Mbps", [20, 40, 80, 160]),
    "2x2M-rtt40-120": (2, "2Mbps", [40, 120]),
    "8x20M-rtt10-270": (8, "20Mbps", [10, 30, 90, 270]),
}
QUEUES = ["codel", "fq_codel", "pie"]
# Controls, not judged as AQMs: the same dumbbell with a DropTail of N packets in all (in
# ns-3 N − 1 in the disc and 1 in the device queue, as validation/ns3_peer.py splits it),
# to tell the TCP peer's own agreement at a rate and buffer apart from the queues'.
CONTROLS = {"droptail5": 5, "droptail10": 10}
QOSLAB_QUEUE = {
    "codel": {"kind": "codel", "limit": AQM_LIMIT, "target": "5ms", "interval": "100ms"},
    "fq_codel": {
        "kind": "fq_codel",
        "limit": 10240,
        "flows": 1024,
        "quantum": 1514,
        "target": "5ms",
        "interval": "100ms",
    },
    "pie": {
        "kind": "pie",
        "limit": AQM_LIMIT,
        "target": "15ms",
        "t_update": "15ms",
        "alpha": 0.125,
        "beta": 1.25,
        "max_burst": "150ms",
    },
}
TOTAL_TOL = 0.03
JAIN_TOL = 0.05
RANK_TIE = 0.10
DELAY_REL = 0.30


def rate_bps(rate: str) -> float:
    return float(rate.removesuffix("bps").replace("G", "e9").replace("M", "e6"))


def starts_for(n: int, seed: int) -> list[float]:
    rnd = random.Random(seed)
    return [round(rnd.random(), 6) for _ in range(n)]


def scenario(case, queue, seed, duration, warmup, delack_ms=200, plus_packet=False) -> dict:
    """The qoslab dumbbell of ns3_peer.qoslab_scenario, as a dict, with the AQM;
    ``plus_packet`` raises the AQM's target by one packet time at the bottleneck (the
    counterfactual of ns-3's one-packet device queue, see the module docstring)."""
    n, bottleneck, rtts = CASES[case]
    starts = starts_for(n, seed)
    tcp = {
        "variant": "sack",
        "mss": 1460,
        "halve": "pipe",
        "max_window": 100000,
        "initial_window": 10,
        "delayed_ack": True,
        "delack_timeout": f"{delack_ms}ms",
        "min_rto": "200ms",
        "granularity": "1ms",
    }
    nodes = [{"name": "r1", "kind": "router"}, {"name": "r2", "kind": "router"}]
    links, flows = [], []
    access = {"rate": "100Mbps", "framing": 2, "queue": {"kind": "droptail", "limit": 1000}}
    for i in range(n):
        rtt = rtts[i % len(rtts)]
        nodes += [{"name": f"s{i}"}, {"name": f"d{i}"}]
        links.append({"a": f"s{i}", "b": "r1", "delay": f"{rtt / 2 - 3}ms", **access})
        links.append({"a": "r2", "b": f"d{i}", "delay": "1ms", **access})
        flows.append(
            {"name": f"f{i}", "from": f"s{i}", "to": f"d{i}", "start": starts[i], "tcp": tcp}
        )
    if queue in CONTROLS:
        aqm = {"kind": "droptail", "limit": CONTROLS[queue]}
    else:
        aqm = dict(QOSLAB_QUEUE[queue])
    if plus_packet and "target" in aqm:
        pkt_ms = 1502 * 8 / rate_bps(bottleneck) * 1e3
        aqm["target"] = f"{float(aqm['target'].removesuffix('ms')) + pkt_ms:.6f}ms"
    links.append(
        {
            "a": "r1",
            "b": "r2",
            "rate": bottleneck,
            "delay": "2ms",
            "framing": 2,
            "queue": aqm,
        }
    )
    return {
        "name": f"aqm-{case}-{queue}",
        "duration": duration,
        "warmup": warmup,
        "seed": seed,
        "node": nodes,
        "link": links,
        "flow": flows,
        "record": {"interval": f"{SAMPLE_S * 1000:g}ms", "queues": ["r1->r2"]},
    }


def run_qoslab(case, queue, seed, duration, warmup, delack_ms=200, plus_packet=False):
    import polars as pl

    from qoslab.api import run

    t0 = time.perf_counter()
    res = run(scenario(case, queue, seed, duration, warmup, delack_ms, plus_packet))
    wall = time.perf_counter() - t0
    f = res.flows.sort("flow")
    good = [float(x) for x in f["goodput_bps"]]
    s = res.queue_samples.filter((pl.col("iface") == "r1->r2") & (pl.col("t") >= warmup - 1e-9))
    return good, [int(b) for b in s["bytes"]], wall


def run_ns3(case, queue, seed, duration, warmup, delack_ms=200, plus_packet=False):
    n, bottleneck, rtts = CASES[case]
    args = peer.ns3_args(
        n,
        "droptail",
        starts_for(n, seed),
        duration,
        warmup,
        seed,
        # ns3_args gives the disc one packet less (the device queue holds one more): the
        # AQMs get their own limit in the disc, a control its total.
        limit=CONTROLS[queue]
        if queue in CONTROLS
        else (10240 if queue == "fq_codel" else AQM_LIMIT) + 1,
        bottleneck=bottleneck,
        rtts=rtts,
        delack_ms=delack_ms,
    )
    ns3_queue = "droptail" if queue in CONTROLS else queue
    args = [f"--queue={ns3_queue}" if a.startswith("--queue=") else a for a in args]
    args.append(f"--sample-ms={SAMPLE_S * 1000:g}")
    t0 = time.perf_counter()
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - t0
    good, samples = [], []
    for line in out.splitlines():
        p = line.split()
        if p[0] == "flow":
            good.append(float(p[5]))
        elif p[0] == "qbytes_samples":
            samples = [int(x) for x in p[1].split(",")]
    return good, samples, wall


def percentiles_ms(samples: list[int], rate: float) -> tuple[float, float]:
    q = statistics.quantiles([b * 8 / rate * 1e3 for b in samples], n=100, method="inclusive")
    return q[49], q[94]


# --- the page, from the data alone ------------------------------------------------------


def summarize(data, case, queue, variant="base"):
    n, bottleneck, rtts = data["cases"][case]
    rate = rate_bps(bottleneck)
    rows = [
        r
        for r in data["rows"]
        if r["case"] == case and r["queue"] == queue and r.get("variant", "base") == variant
    ]
    out = {}
    for sim in ("qoslab", "ns-3.44"):
        rs = [r for r in rows if r["sim"] == sim]
        per_flow = [rtts[i % len(rtts)] for i in range(n)]
        out[sim] = {
            "total": statistics.mean(sum(r["goodputs"]) for r in rs),
            "jain": statistics.mean(jain(r["goodputs"]) for r in rs),
            "p50": statistics.mean(r["qdelay_ms"][0] for r in rs),
            "p95": statistics.mean(r["qdelay_ms"][1] for r in rs),
            "cls": {
                rtt: statistics.mean(
                    statistics.mean(
                        g for g, rr in zip(r["goodputs"], per_flow, strict=True) if rr == rtt
                    )
                    for r in rs
                )
                for rtt in rtts
            },
            "seeds": len(rs),
        }
    q, m = out["qoslab"], out["ns-3.44"]
    pkt_ms = 2 * 1500 * 8 / rate * 1e3
    checks = {
        "total": abs(q["total"] / m["total"] - 1) <= TOTAL_TOL,
        "jain": abs(q["jain"] - m["jain"]) <= JAIN_TOL,
    }
    bad_pairs = []
    for a in rtts:
        for b in rtts:
            if a < b and abs(m["cls"][a] - m["cls"][b]) > RANK_TIE * max(m["cls"][a], m["cls"][b]):
                if (m["cls"][a] > m["cls"][b]) != (q["cls"][a] > q["cls"][b]):
                    bad_pairs.append(f"{a}/{b} ms")
    checks["ranking"] = not bad_pairs
    for p in ("p50", "p95"):
        checks[p] = abs(q[p] - m[p]) <= max(DELAY_REL * m[p], pkt_ms)
    return out, checks, bad_pairs, pkt_ms


VARIANT_TEXT = {
    "delack100": (
        "Counterfactual: a 100 ms delayed-ACK timeout on both sides",
        "ns-3 flows lock at one segment per timeout when the receiver's 200 ms delayed-ACK "
        "timer loses to the sender's 200 ms minimum RTO "
        "([README](README.md#more-dumbbells-against-ns-3) and [ns3-locks.md](ns3-locks.md)); a "
        "100 ms timer on both sides removes the cycle, so a miss that goes away here is "
        "the TCP peer's, not the queues'.",
    ),
    "target+1pkt": (
        "Counterfactual: qoslab's AQM target raised by one packet time",
        "ns-3's disc stamps a packet's sojourn when it moves to the one-packet device "
        "queue, one packet time (1502 B at the bottleneck rate) before the wire, so its "
        "CoDel and PIE act on a delay one packet time shorter than qoslab's. Here "
        "qoslab's target (5 ms CoDel and FQ-CoDel, 15 ms PIE) is raised by that time, "
        "ns-3 unchanged: a miss that goes away here comes from that set-up difference "
        "(6 ms at 2 Mb/s, more than CoDel's 5 ms target), not from qoslab's queue.",
    ),
    "droptail-control": (
        "Control: the TCP peer with a small DropTail at the same rates",
        "Not an AQM: the same dumbbell with a DropTail of 5 or 10 packets in all (ns-3: "
        "N − 1 in the disc, 1 in the device queue). Where qoslab and ns-3 already differ "
        "here, with no AQM, a gap in the AQM rows of the same case is not the queues' own.",
    ),
    "delack100+droptail-control": (
        "Control with the 100 ms delayed-ACK timeout",
        "The DropTail control above with the 100 ms delayed-ACK timeout on both sides, "
        "the pair of the 100 ms AQM rows.",
    ),
    "delack100+target+1pkt": (
        "Counterfactual: both of the above",
        "The 100 ms delayed-ACK timeout on both sides and qoslab's target raised by one "
        "packet time.",
    ),
}


def table(data, variant) -> tuple[list[str], int, int]:
    lines = [
        "| case | queue | total Mb/s qoslab / ns-3 (ratio) | Jain qoslab / ns-3 | goodput per RTT "
        "group (Mb/s) qoslab / ns-3 | delay p50 ms qoslab / ns-3 | delay p95 ms qoslab / ns-3 "
        "(band ±) | ns-3 flows ≤ 0.07 Mb/s per seed | verdict |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    misses = total = 0
    in_variant = [r["queue"] for r in data["rows"] if r.get("variant", "base") == variant]
    for case in data["cases"]:
        for queue in dict.fromkeys(in_variant):
            rows = [
                r
                for r in data["rows"]
                if r["case"] == case and r["queue"] == queue and r.get("variant", "base") == variant
            ]
            if not rows:
                continue
            out, checks, bad_pairs, pkt_ms = summarize(data, case, queue, variant)
            q, m = out["qoslab"], out["ns-3.44"]
            total += 1
            failed = [k for k, ok in checks.items() if not ok]
            misses += bool(failed)
            verdict = (
                "within"
                if not failed
                else "outside: "
                + ", ".join(
                    f"ranking ({', '.join(bad_pairs)})" if k == "ranking" else k for k in failed
                )
            )
            cls = "; ".join(
                f"{rtt} ms {q['cls'][rtt] / 1e6:.2f} / {m['cls'][rtt] / 1e6:.2f}"
                for rtt in q["cls"]
            )
            ns3 = [r for r in rows if r["sim"] == "ns-3.44"]
            locked = statistics.mean(sum(g <= 70e3 for g in r["goodputs"]) for r in ns3)
            b95 = max(DELAY_REL * m["p95"], pkt_ms)
            lines.append(
                f"| {case} | {queue} | {q['total'] / 1e6:.3f} / {m['total'] / 1e6:.3f} "
                f"({q['total'] / m['total']:.3f}) | {q['jain']:.3f} / {m['jain']:.3f} | {cls} | "
                f"{q['p50']:.1f} / {m['p50']:.1f} | {q['p95']:.1f} / {m['p95']:.1f} (±{b95:.1f}) | "
                f"{locked:.1f} | {verdict} |"
            )
    return lines, total, misses


def page(data) -> str:
    meta = data["meta"]
    lines = [
        "# qoslab's CoDel, FQ-CoDel and PIE against ns-3.44",
        "",
        f"Made by `{meta['command']}` from `validation/data/ns3-aqm.json` "
        "(`python3 validation/ns3_aqm.py --page` rewrites this page from it). "
        f"{meta['duration']:g} s runs with {meta['warmup']:g} s warm-up, seeds "
        f"{', '.join(map(str, meta['seeds']))}; the set-up, the TCP settings and the bands are "
        "in the script's docstring ([validation/ns3_aqm.py](../../validation/ns3_aqm.py)): "
        "qoslab's queues with the RFC defaults (RFC 8289, 8290, 8033), ECN off, against ns-3's "
        "CoDelQueueDisc, FqCoDelQueueDisc and PieQueueDisc set to the same values (PIE on its "
        "timestamp delay estimator, as qoslab's).",
        "",
        "Bands, set before the runs: total goodput within 3 %; Jain's index within 0.05; "
        "RTT groups whose ns-3 goodputs differ by more than 10 % ordered the same; queueing "
        "delay p50 and p95 (10 ms samples of the bytes queued at the bottleneck ÷ rate, per "
        "seed, mean over seeds) within max(30 % of ns-3's, two packet times at the bottleneck "
        "rate) — ns-3's disc hands each packet to a one-packet device queue, so its AQM sees "
        "the delay one packet time short of qoslab's.",
        "",
    ]
    body, total, misses = table(data, "base")
    lines += body
    lines += ["", f"**{total - misses} of {total}** case × queue rows within every band.", ""]
    for note in data.get("notes", []):
        lines += [note, ""]
    for variant, vmeta in data.get("variants", {}).items():
        title, text = VARIANT_TEXT.get(variant, (f"Variant {variant}", ""))
        body, total, misses = table(data, variant)
        lines += [f"## {title}", "", f"`{vmeta['command']}`. {text}", "", *body, ""]
        lines += [f"**{total - misses} of {total}** rows within every band.", ""]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--queues", default=",".join(QUEUES))
    ap.add_argument("--duration", type=float, default=30.0)
    ap.add_argument("--warmup", type=float, default=10.0)
    ap.add_argument(
        "--delack-timeout",
        type=int,
        default=200,
        help="delayed-ACK timeout on both sides [ms]; not 200: a counterfactual variant",
    )
    ap.add_argument(
        "--plus-packet",
        action="store_true",
        help="counterfactual: qoslab's AQM target + one packet time at the bottleneck",
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
    parts = []
    if args.delack_timeout != 200:
        parts.append(f"delack{args.delack_timeout}")
    if args.plus_packet:
        parts.append("target+1pkt")
    cases, queues = args.cases.split(","), args.queues.split(",")
    if all(q in CONTROLS for q in queues):
        parts.append("droptail-control")
    variant = "+".join(parts) or "base"
    rows = []
    for case in cases:
        rate = rate_bps(CASES[case][1])
        for queue in queues:
            for seed in range(1, args.seeds + 1):
                for sim, fn in (("qoslab", run_qoslab), ("ns-3.44", run_ns3)):
                    good, samples, wall = fn(
                        case,
                        queue,
                        seed,
                        args.duration,
                        args.warmup,
                        args.delack_timeout,
                        args.plus_packet,
                    )
                    rows.append(
                        {
                            "case": case,
                            "queue": queue,
                            "seed": seed,
                            "sim": sim,
                            "variant": variant,
                            "goodputs": good,
                            "qdelay_ms": list(percentiles_ms(samples, rate)),
                            "samples": len(samples),
                            "wall_s": round(wall, 2),
                        }
                    )
                    r = rows[-1]
                    print(
                        f"{variant} {case} {queue} seed {seed} {sim}: "
                        f"{sum(good) / 1e6:.3f} Mb/s jain {jain(good):.3f} p50/p95 "
                        f"{r['qdelay_ms'][0]:.1f}/{r['qdelay_ms'][1]:.1f} ms ({wall:.1f} s)",
                        flush=True,
                    )
    cmd = "python3 validation/ns3_aqm.py"
    if args.seeds != 3:
        cmd += f" --seeds {args.seeds}"
    if cases != list(CASES):
        cmd += f" --cases {','.join(cases)}"
    if queues != QUEUES:
        cmd += f" --queues {','.join(queues)}"
    if args.delack_timeout != 200:
        cmd += f" --delack-timeout {args.delack_timeout}"
    if args.plus_packet:
        cmd += " --plus-packet"
    meta = {
        "command": cmd,
        "duration": args.duration,
        "warmup": args.warmup,
        "seeds": list(range(1, args.seeds + 1)),
    }
    if variant == "base":
        data = {
            "meta": meta,
            "cases": {c: list(CASES[c]) for c in cases},
            "queues": queues,
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

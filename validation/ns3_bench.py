#!/usr/bin/env python3
"""Speed of qoslab against ns-3.44 on TCP dumbbells, measured in the same run.

Scenarios (issue 3): 8 flows at 10 Mb/s, 64 flows at 10 Mb/s, 16 flows at 100 Mb/s,
1000 flows at 1 Gb/s; RTTs 20/40/80/160 ms cycling; access links 10× the bottleneck;
DropTail; SACK, delayed ACKs, IW 10. Each simulator runs the same scenario (same
start times) once; the table gives wall times, qoslab's events per wall second, the
bottleneck packets each forwards per wall second, and the speed ratio.

Usage: python3 validation/ns3_bench.py [--scale K] [--only N,...]
Needs: cargo build --release --bin qoslab-run; validation/ns3/build.sh
Writes docs/validation/ns3-speed.md.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import random
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from ns3_peer import NS3, QOSLAB, ROOT, qoslab_scenario, run_ns3

CASES = [  # flows, bottleneck, access, queue limit [packets], simulated seconds
    (8, "10Mbps", "100Mbps", 100, 60),
    (64, "10Mbps", "100Mbps", 200, 60),
    (16, "100Mbps", "1Gbps", 500, 20),
    (1000, "1Gbps", "10Gbps", 2000, 10),
]


def run_qoslab_timed(text):
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write(text)
    t0 = time.perf_counter()
    out = subprocess.run([str(QOSLAB), f.name], check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - t0
    r = json.loads(out)
    q = dict(zip(r["tables"]["queues"]["names"], r["tables"]["queues"]["columns"], strict=True))
    hops = q["departed"][q["iface"].index("r1->r2")]
    return wall, r["summary"]["events"], hops, r["summary"]["wall_s"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every case's simulated time")
    ap.add_argument("--only", default="", help="comma-separated flow counts to run")
    ap.add_argument("--out", default=str(ROOT / "docs" / "validation" / "ns3-speed.md"))
    args = ap.parse_args()
    for b in (QOSLAB, NS3):
        if not b.exists():
            print(f"missing {b}: see the usage line", file=sys.stderr)
            return 2
    only = {int(x) for x in args.only.split(",") if x}
    rows = []  # (flows, bottleneck, simulated s, qoslab wall, engine wall, events, …)
    for n, bn, acc, limit, secs in CASES:
        if only and n not in only:
            continue
        duration = secs * args.scale
        rnd = random.Random(n)
        starts = [round(rnd.random(), 6) for _ in range(n)]
        text = qoslab_scenario(n, "droptail", starts, duration, 0.0, 1, bn, acc, limit)
        qw, ev, qh, engine_wall = run_qoslab_timed(text)
        _, nw, nh = run_ns3(n, "droptail", starts, duration, 0.0, 1, limit, bn, acc)
        rows.append((n, bn, duration, qw, engine_wall, ev, qh, nw, nh))
        print(
            f"{n:5} flows @ {bn:>8}: qoslab {qw:7.2f} s ({ev / engine_wall / 1e6:5.2f} M events/s, "
            f"{qh / qw:9,.0f} pkt/s)  ns-3 {nw:7.2f} s ({nh / nw:7,.0f} pkt/s)  "
            f"ratio {nw / qw:5.0f}x",
            flush=True,
        )
    lines = [
        "# qoslab against ns-3.44: speed on TCP dumbbells",
        "",
        f"Made by `python3 validation/ns3_bench.py --scale {args.scale:g}` on this project's "
        "machine (2 cores; both simulators single-threaded, run one after the other in the same "
        "invocation). Wall times are whole processes (start-up and result output included); "
        "events/s is qoslab's engine alone.",
        "",
        "| flows | bottleneck | simulated (s) | qoslab wall (s) | qoslab events/s | "
        "qoslab bottleneck pkt/s | ns-3 wall (s) | ns-3 bottleneck pkt/s | speed ratio |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for n, bn, d, qw, ew, ev, qh, nw, nh in rows:
        lines.append(
            f"| {n} | {bn} | {d:g} | {qw:.2f} | {ev / ew / 1e6:.2f} M | {qh / qw:,.0f} "
            f"| {nw:.2f} | {nh / nw:,.0f} | {nw / qw:.0f}× |"
        )
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

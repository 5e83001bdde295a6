#!/usr/bin/env python3
"""Where ns-3's goodput goes without SACK: retransmissions, recoveries and timeouts.

In the `droptail-nosack` dumbbell of `ns3_cases.py`, ns-3's total goodput is 0.83 of
qoslab's while Jain's index and k agree. This script runs that case (and its SACK twin,
and the RED pair) in both simulators with the same seeds and counts, after the warm-up:
bottleneck drops, segments sent again, entries into fast recovery and timeouts, and the
bottleneck's packets as a share of its capacity, so one can see whether the link idles or
carries data the receivers already hold.

Usage: python3 validation/ns3_nosack.py [--seeds N] [--delack-timeout MS]
Needs: the ns-3 peer (validation/ns3/build.sh) and the editable qoslab in .venv.
Writes docs/validation/ns3-nosack.md.
"""

import argparse
import random
import statistics
import sys

import ns3_peer as peer
import tomllib
from ns3_cases import CASES, LONG

import qoslab

#: The cases compared: the two without SACK and their twins with it.
PAIRS = ["droptail-nosack", "droptail-sack", "red-nosack", "red-sack"]


def case(name):
    """Flows, RTTs, queue, buffer and SACK of a case (the `-sack` twins add SACK)."""
    if name.endswith("-sack") and not name.endswith("-nosack"):
        n, rtts, queue, limit, _ = CASES[name.replace("-sack", "-nosack")]
        return n, rtts, queue, limit, True
    return CASES[name]


def run(name, seed, delack_ms, duration=60.0, warmup=10.0):
    """Counts of both simulators for one seed of one case."""
    n, rtts, queue, limit, sack = case(name)
    if name in LONG or name.replace("-sack", "-nosack") in LONG:
        duration, warmup = duration + 30, warmup + 20
    rnd = random.Random(seed)
    starts = [round(rnd.random(), 6) for _ in range(n)]
    kw = dict(limit=limit, rtts=rtts, sack=sack, delack_ms=delack_ms)
    text = peer.qoslab_scenario(n, queue, starts, duration, warmup, seed, **kw)
    res = qoslab.run(tomllib.loads(text))
    f = res.flows
    q = res.table("queues").filter(res.table("queues")["iface"] == "r1->r2").row(0, named=True)
    measured = duration - warmup
    link_pkts = 10e6 * measured / 8 / 1502  # 1500-byte packets + 2 bytes of framing
    ours = {
        "goodput_mbps": f["goodput_bps"].sum() / 1e6,
        "link_use": q["departed"] / link_pkts,
        "drops": int(q["dropped"]),
        "retransmitted": int(f["retransmits"].sum()),
        "fast_recoveries": int(f["fast_retransmits"].sum()),
        "timeouts": int(f["timeouts"].sum()),
    }
    good, c = peer.run_ns3(n, queue, starts, duration, warmup, seed, drops=True, stats=True, **kw)
    theirs = {
        "goodput_mbps": sum(good) / 1e6,
        "link_use": c["measured_packets"] / link_pkts,
        "drops": int(c["bottleneck_drops"]),
        "retransmitted": int(c["retransmitted"]),
        "fast_recoveries": int(c["fast_recoveries"]),
        "timeouts": int(c["timeouts"]),
    }
    return ours, theirs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--delack-timeout", type=int, default=100)
    ap.add_argument("--cases", default=",".join(PAIRS), help="comma-separated cases")
    ap.add_argument("--out", default=str(peer.ROOT / "docs" / "validation" / "ns3-nosack.md"))
    args = ap.parse_args()
    if not peer.NS3.exists():
        print(f"missing {peer.NS3}: run validation/ns3/build.sh", file=sys.stderr)
        return 2
    keys = [
        ("goodput_mbps", "total goodput (Mb/s)", "{:.3f}"),
        ("link_use", "bottleneck packets ÷ capacity", "{:.3f}"),
        ("drops", "bottleneck drops", "{:.0f}"),
        ("retransmitted", "segments sent again", "{:.0f}"),
        ("fast_recoveries", "fast recoveries entered", "{:.0f}"),
        ("timeouts", "timeouts", "{:.0f}"),
    ]
    lines = [
        "# Without SACK: where ns-3's goodput goes"
        if args.cases == ",".join(PAIRS)
        else "# Retransmissions, recoveries and timeouts in both simulators",
        "",
        f"Made by `python3 validation/ns3_nosack.py --seeds {args.seeds} --delack-timeout "
        f"{args.delack_timeout}"
        + ("" if args.cases == ",".join(PAIRS) else f" --cases {args.cases}")
        + "` (cases of [ns3-cases.md](ns3-cases.md), the `-sack` twins "
        "with SACK on; all counts after the warm-up, summed over the flows; mean "
        "[min–max] over the seeds on each side).",
        "",
    ]
    for name in args.cases.split(","):
        rows = [run(name, s, args.delack_timeout) for s in range(1, args.seeds + 1)]
        lines += [f"## {name}", "", "| | qoslab | ns-3 |", "|---|---|---|"]
        for k, label, fmt in keys:
            cells = []
            for side in (0, 1):
                v = [r[side][k] for r in rows]
                m = fmt.format(statistics.mean(v))
                cells.append(f"{m} [{fmt.format(min(v))}–{fmt.format(max(v))}]")
            lines.append(f"| {label} | {cells[0]} | {cells[1]} |")
        lines.append("")
        print(f"{name}: done", flush=True)
    with open(args.out, "w") as fh:
        fh.write("\n".join(lines))
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

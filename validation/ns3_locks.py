#!/usr/bin/env python3
"""How long ns-3's long-RTT flows sit locked at one segment per timeout.

A flow counts as locked in `ns3_cases.py` only when its goodput over the whole
measurement is at most 0.07 Mb/s. A flow locked for part of the run passes that test and
still drags k (goodput ∝ RTT^-k) up. This script traces every flow of a case's longest
RTT class in ns-3 (`--trace`) and reports its goodput, its timeouts after the warm-up
and the longest stretch after the warm-up during which its cwnd stayed at one segment.

Usage: python3 validation/ns3_locks.py [--case NAME] [--seeds N] [--delack-timeout MS]
Needs: the ns-3 peer (validation/ns3/build.sh). Writes docs/validation/ns3-locks.md.
"""

import argparse
import random
import subprocess
import sys

import ns3_peer as peer
from ns3_cases import CASES

MSS = 1460


def trace(args, flow, warmup, duration):
    """Goodput [b/s], timeouts and the longest stretch at cwnd = 1 segment after the
    warm-up [s] of one ns-3 flow."""
    out = subprocess.run(
        [*args, f"--trace={flow}"], check=True, capture_output=True, text=True
    ).stdout.splitlines()
    good = next(float(x.split()[5]) for x in out if x.startswith(f"flow {flow} "))
    rows = [x.split() for x in out if x.startswith("trace ")]
    loss = [r for r in rows if r[2] == "state" and r[3] == "CA_LOSS"]
    timeouts = sum(1 for r in loss if float(r[1]) > warmup)
    longest, since = 0.0, None
    for r in rows:
        if r[2] != "cwnd":
            continue
        t, c = float(r[1]), int(r[3])
        if c == MSS and since is None:
            since = t
        elif c != MSS and since is not None:
            longest, since = max(longest, t - max(since, warmup)), None
    if since is not None:
        longest = max(longest, duration - max(since, warmup))
    return good, timeouts, max(longest, 0.0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--case", default="droptail-small-buffer", choices=list(CASES))
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--delack-timeout", type=int, default=100)
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--warmup", type=float, default=10.0)
    ap.add_argument("--out", default=str(peer.ROOT / "docs" / "validation" / "ns3-locks.md"))
    args = ap.parse_args()
    if not peer.NS3.exists():
        print(f"missing {peer.NS3}: run validation/ns3/build.sh", file=sys.stderr)
        return 2
    n, rtts, queue, limit, sack = CASES[args.case]
    longest_rtt = max(rtts)
    flows = [i for i in range(n) if rtts[i % len(rtts)] == longest_rtt]
    lines = [
        f"# ns-3's {longest_rtt} ms flows in `{args.case}`: time locked at one segment",
        "",
        f"Made by `python3 validation/ns3_locks.py --case {args.case} --seeds {args.seeds} "
        f"--delack-timeout {args.delack_timeout}` (the case and seeds of "
        "[ns3-cases.md](ns3-cases.md); after the warm-up of "
        f"{args.warmup:g} s, to {args.duration:g} s). A flow whose goodput exceeds "
        "0.07 Mb/s is not counted as locked there, though it may have spent most of the "
        "run at one segment per timeout.",
        "",
        "| seed | flow | goodput (Mb/s) | timeouts | longest time at cwnd = 1 segment (s) |",
        "|---|---|---|---|---|",
    ]
    for seed in range(1, args.seeds + 1):
        rnd = random.Random(seed)
        starts = [round(rnd.random(), 6) for _ in range(n)]
        base = peer.ns3_args(
            n, queue, starts, args.duration, args.warmup, seed, limit=limit, rtts=rtts,
            sack=sack, delack_ms=args.delack_timeout,
        )  # fmt: skip
        for f in flows:
            g, to, stuck = trace(base, f, args.warmup, args.duration)
            lines.append(f"| {seed} | {f} | {g / 1e6:.3f} | {to} | {stuck:.1f} |")
        print(f"seed {seed}: done", flush=True)
    with open(args.out, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

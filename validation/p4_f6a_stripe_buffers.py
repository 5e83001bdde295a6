"""Fig. 6(a)'s striping misses at small weights with larger socket buffers
(docs/papers/p4.md#calibrations): f0 striped over w connections on the multiple-link
topology with the chosen 64 KB, or 1 MB, of send and receive buffer per socket, at the
figure's full-mode settings (600 s, seeds 1-3).

    python3 validation/p4_f6a_stripe_buffers.py [DURATION] [SEEDS]

e.g. ``100s 1`` for quick mode's settings. Prints f0's ratio ÷ w (its goodput over the
mean of f1..f9's, divided by w), mean and per seed, per weight and buffer.
"""

import argparse

from qoslab.api import run
from qoslab.reproduce import p4, scenarios_dir

WEIGHTS = (5, 10)
BUFFERS_KB = (p4.BUFFER_KB, 1024)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("duration", nargs="?", default="600s", help="run length")
    ap.add_argument("seeds", nargs="?", default="1,2,3", help="comma-separated seeds")
    a = ap.parse_args()
    duration, seeds = a.duration, [int(s) for s in a.seeds.split(",")]
    path = scenarios_dir() / "p4" / "f6-stripe.toml"
    print(f"{duration}, seeds {seeds}; f0's ratio ÷ w (the ideal's band: 0.8-1.2)")
    for w in WEIGHTS:
        for kb in BUFFERS_KB:
            ov = {**p4.buffer_overrides("stripe", kb, w), "duration": duration}
            rs = [p4.ratio_row(p4.flow_goodputs(run(path, ov, seed=s)))["ratio"] / w for s in seeds]
            each = " ".join(f"{r:.3f}" for r in rs)
            print(f"w = {w:<3} {kb:>5} KB per socket: {sum(rs) / len(rs):.3f}  ({each})")


if __name__ == "__main__":
    main()

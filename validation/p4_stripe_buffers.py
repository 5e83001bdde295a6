"""Why striping sits near half the ideal at small weights (docs/papers/p4.md#small-w-band):
f0 striped over w connections on Fig. 2's single link, with its 64 KB per socket, or
512 KB of send buffer, of receive buffer, or both. One seed, 100 s (the scenario's).

    python3 validation/p4_stripe_buffers.py [SEED]

Prints f0's ratio ÷ w (its goodput over the mean of f1..f9's, divided by w) per weight
and buffer setting.
"""

import argparse

from qoslab.api import run
from qoslab.reproduce import p4, scenarios_dir

BIG = "512000B"
SETTINGS = {
    "64 KB each (Fig. 2)": {},
    "512 KB receive buffer": {"flow.f0.tcp.rcv_buffer": BIG},
    "512 KB send buffer": {"flow.f0.stripe.send_buffer": BIG},
    "512 KB both": {"flow.f0.tcp.rcv_buffer": BIG, "flow.f0.stripe.send_buffer": BIG},
}


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("seed", nargs="?", type=int, default=1, help="the run's seed")
    seed = ap.parse_args().seed
    path = scenarios_dir() / "p4" / "f2-stripe.toml"
    print(f"seed {seed}; f0's ratio ÷ w")
    print(f"{'setting':24} " + " ".join(f"w = {w:<3}" for w in (2, 5)))
    for label, ov in SETTINGS.items():
        vals = []
        for w in (2, 5):
            res = run(path, {**p4.weight_overrides("stripe", w), **ov}, seed=seed)
            vals.append(p4.ratio_row(p4.flow_goodputs(res))["ratio"] / w)
        print(f"{label:24} " + " ".join(f"{v:7.3f}" for v in vals))


if __name__ == "__main__":
    main()

"""P4 F6b: relative standard deviation of the ten long flows' throughputs when all ten
have weight w, WAIMD against striping, with their timeouts (multi-link topology).

    python validation/p4_f6b_rsd.py               # 600 s, seeds 1-3

Per method and weight: the relative standard deviation (population standard deviation
over the mean), the mean goodput of a long flow, the timeouts per long flow (for
striping: per flow over all its connections) and the spread of those timeouts.
"""

import argparse
import statistics

import qoslab
from qoslab.reproduce import p4, scenarios_dir


def main() -> None:
    """Prints one row per method, weight and seed."""
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.parse_args()
    head = ["method", "w", "seed", "rsd", "mean kb/s", "TO/flow", "TO min", "TO max"]
    print(" ".join(f"{h:>10}" for h in head))
    for method in ("waimd", "stripe"):
        for w in (1, 10, 20):
            for seed in (1, 2, 3):
                ov = {**p4.weight_overrides(method, w, p4.N_FLOWS), "duration": "600s"}
                r = qoslab.run(scenarios_dir() / "p4" / f"f6b-{method}.toml", ov, seed=seed)
                g = p4.flow_goodputs(r)
                if method == "stripe":
                    to = r.tables["stripe"].sort("flow")["timeouts"].to_list()
                else:
                    f = r.tables["flows"]
                    to = [int(f.filter(f["name"] == f"f{i}")["timeouts"][0]) for i in range(10)]
                row = [
                    method,
                    w,
                    seed,
                    p4.rel_std(g),
                    statistics.mean(g) / 1e3,
                    statistics.mean(to),
                    min(to),
                    max(to),
                ]
                print(" ".join(f"{v:>10.3g}" if isinstance(v, float) else f"{v:>10}" for v in row))


if __name__ == "__main__":
    main()

"""P4 F9: ten pTCP flows of equal weight on the single link as the number of TCBs
(10 × w) passes the network's storage (about 600 packets): what happens to the pipes,
and why the flows' throughput and fairness hold in qoslab.

    python validation/p4_f9_storage.py            # 300 s, seeds 1-2

Per number of TCBs: storage per TCB [packets]; timeouts per TCB in the run (all
pipes); fast reassignments per flow; the bottleneck's utilisation (sum of the ten
goodputs over 10 Mb/s); mean goodput per flow; relative standard deviation and Jain's
index of the ten goodputs.
"""

import argparse

import qoslab
from qoslab.fairness import jain
from qoslab.reproduce import p4, scenarios_dir


def main() -> None:
    """Prints one row per number of TCBs and seed."""
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.parse_args()
    head = ["TCBs", "seed", "pkts/TCB", "TO/TCB", "reassign/f", "util", "kb/s/flow", "rsd", "jain"]
    print(" ".join(f"{h:>10}" for h in head))
    for tcbs in (50, 100, 300, 600, 1000, 1500):
        w = tcbs // p4.N_FLOWS
        for seed in (1, 2):
            ov = {**p4.weight_overrides("ptcp", w, p4.N_FLOWS), "duration": "300s"}
            r = qoslab.run(scenarios_dir() / "p4" / "f9-ptcp.toml", ov, seed=seed)
            g = p4.flow_goodputs(r)
            pt = r.tables["ptcp"]
            row = [
                tcbs,
                seed,
                p4.STORAGE_PKTS / tcbs,
                pt["timeouts"].sum() / tcbs,
                pt["reassigns"].sum() / p4.N_FLOWS,
                sum(g) / 10e6,
                sum(g) / len(g) / 1e3,
                p4.rel_std(g),
                jain(g),
            ]
            print(" ".join(f"{v:>10.3g}" if isinstance(v, float) else f"{v:>10}" for v in row))


if __name__ == "__main__":
    main()

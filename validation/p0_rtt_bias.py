"""How much the wait in the QoS manager inflates TCP's RTT samples in the P0 shaping
scenarios. A held packet waits in the manager after TCP released it (P0's ns-2 agent
kept it inside TCP), so its wait is part of the RTT TCP measures for it.

Per connection (seed 1, 200 s): the base RTT, the manager's mean wait over all the
packets it passed (held ones × their mean wait / all packets), the share of packets
held, and TCP's final smoothed RTT. Run: ``python validation/p0_rtt_bias.py``.
"""

from __future__ import annotations

import argparse

import qoslab
from qoslab.reproduce import p0, scenarios_dir

STEMS = ["f4-equal-depth", "f5-unequal", "f7-lru", "f10-equal", "f10-unequal"]


def rows(stem: str, max_window: int | None = None) -> list[dict]:
    """One row per connection of scenario ``stem`` (``max_window`` overrides 100)."""
    ov = {f"flow.{i}.tcp.max_window": max_window for i in range(4)} if max_window else None
    res = qoslab.run(scenarios_dir() / "p0" / f"{stem}.toml", ov, seed=1)
    q, fl = res.tables["qosmgr"], res.tables["flows"]
    out = []
    for i in range(len(q)):
        held, pk = int(q["held"][i]), max(int(q["packets"][i]), 1)
        wait = float(q["mean_wait"][i]) * held / pk
        out.append({"scenario": stem, "window": max_window or 100, "name": q["name"][i],
                    "base_rtt": float(q["rtt"][i]), "held_share": held / pk,
                    "mean_wait_all": wait, "final_srtt": float(fl["srtt"][i]),
                    "wait_over_base": wait / float(q["rtt"][i])})  # fmt: skip
    return out


def main() -> None:
    argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    ).parse_args()
    print(f"{'scenario':16} {'win':>4} {'connection':12} {'base':>6} {'held':>5} "
          f"{'wait':>6} {'srtt':>6} {'wait/base':>9}")  # fmt: skip
    for w in (None, 20):
        for stem in STEMS:
            for r in rows(stem, w):
                print(f"{r['scenario']:16} {r['window']:>4} {r['name']:12} {r['base_rtt']:6.3f} "
                      f"{r['held_share']:5.2f} {r['mean_wait_all']:6.3f} {r['final_srtt']:6.3f} "
                      f"{r['wait_over_base']:9.1f}")  # fmt: skip
    _ = p0  # the scenarios are P0's (python -m qoslab.reproduce.p0 writes them)


if __name__ == "__main__":
    main()

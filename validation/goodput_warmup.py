"""Goodput after a warm-up that ends inside loss recoveries: 30 NewReno flows (access
delays 5/10/20/40 ms) through a 300 Mb/s CoDel bottleneck for 8 s, with warm-ups of 0,
3 and 6 s. Prints the flows' goodput bytes after the warm-up over the payload the
bottleneck sent after it (departed bytes × 1460/1500). Bytes count when TCP delivers
them in order, so data held out of order at the warm-up's end counts after it: with a
3 s warm-up (inside slow start's recoveries) the ratio is above 1, with 6 s below.

    python validation/goodput_warmup.py

The numbers are quoted in docs/scenario-format.md (the `flows` table).
"""

from __future__ import annotations

import argparse

import qoslab


def scenario(warmup: str) -> dict:
    """The 30-flow CoDel dumbbell with ``warmup``."""
    nodes = [{"name": "r1", "kind": "router"}, {"name": "r2", "kind": "router"},
             {"name": "d"}] + [{"name": f"s{i}"} for i in range(30)]  # fmt: skip
    links = [{"a": f"s{i}", "b": "r1", "rate": "1Gbps", "delay": f"{[5, 10, 20, 40][i % 4]}ms"}
             for i in range(30)]  # fmt: skip
    links.append({"a": "r1", "b": "r2", "rate": "300Mbps", "delay": "2ms",
                  "queue": {"kind": "codel"}})  # fmt: skip
    links.append({"a": "r2", "b": "d", "rate": "1Gbps", "delay": "1ms"})
    flows = [{"name": f"f{i}", "from": f"s{i}", "to": "d",
              "tcp": {"variant": "newreno", "max_window": 5000}} for i in range(30)]  # fmt: skip
    return {"name": "goodput-warmup", "duration": "8s", "warmup": warmup, "node": nodes,
            "link": links, "flow": flows}  # fmt: skip


def main() -> None:
    argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    ).parse_args()
    print("warm-up  goodput bytes  bottleneck payload bytes  ratio")
    for warmup in ["0s", "3s", "6s"]:
        r = qoslab.run(scenario(warmup))
        good = r.tables["flows"]["goodput_bytes"].sum()
        q = r.tables["queues"]
        sent = q.filter(q["iface"] == "r1->r2")["departed_bytes"][0] * 1460 / 1500
        print(f"{warmup:>7}  {good:13d}  {sent:24.0f}  {good / sent:.3f}")


if __name__ == "__main__":
    main()

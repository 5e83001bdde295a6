"""Where the WWW experiment of P3 Table II loses packets, and whose: per conditioner
(ns-2 session timing, a few seeds) the drops at each inter-domain interface, and per web
aggregate its packets coloured DP2 and its drop ratio, with the mean response time to
all data of its objects. Shows that the three aggregates meet at one congested link and
that the RTT-aware markers make the short aggregate W3 pay there.

    python validation/p3_www_drops.py [--seeds 5]
"""

from __future__ import annotations

import argparse

import polars as pl

import qoslab
from qoslab.reproduce import p3_web, scenarios_dir


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    a = ap.parse_args()
    for stem in p3_web.MD_MARKERS:
        drops: dict[str, int] = {}
        agg: dict[str, list[float]] = {}
        for seed in range(1, a.seeds + 1):
            res = qoslab.run(scenarios_dir() / "p3" / f"www-{stem}.toml", seed=seed)
            for r in res.tables["drops"].iter_rows(named=True):
                drops[r["place"]] = drops.get(r["place"], 0) + r["packets"]
            fl = res.tables["flows"].select("flow", "name", "drops")
            col = res.tables["colours"].select("name", "green_pkts", "yellow_pkts", "red_pkts")
            obj = res.tables["web_objects"].group_by("flow").agg(pl.col("response_all").sum(),
                                                                 pl.len().alias("n"))  # fmt: skip
            for r in fl.join(col, on="name").join(obj, on="flow").iter_rows(named=True):
                tot = r["green_pkts"] + r["yellow_pkts"] + r["red_pkts"]
                v = agg.setdefault(r["name"], [0, 0, 0, 0.0, 0])
                v[0] += tot
                v[1] += r["red_pkts"]
                v[2] += r["drops"]
                v[3] += r["response_all"]
                v[4] += r["n"]
        print(f"{stem}: drops by interface {dict(sorted(drops.items()))}")
        for name, (tot, red, dr, resp, n) in agg.items():
            print(f"  {name}: DP2 {red / tot:6.1%}  drop ratio {dr / tot:6.1%}  "
                  f"mean response (all data) {resp / n:.3f} s over {n} objects")  # fmt: skip


if __name__ == "__main__":
    main()

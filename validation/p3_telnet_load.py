"""How the Telnet delays of P3 Table I follow the offered load, which the paper does not
give: qoslab's Table I scenarios with the sessions' start window varied (a shorter
window packs the same sessions into less time). Prints each conditioner's mean delay
per packet for the long (F1, F2, F4) and short (F3, F5) groups and overall, mean over
seeds, per start window.

    python validation/p3_telnet_load.py [--windows 30 40 50 60] [--seeds 5]
"""

from __future__ import annotations

import argparse

import polars as pl

import qoslab
from qoslab.reproduce import p3, p3_telnet, scenarios_dir


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--windows", type=float, nargs="+", default=[30, 40, 50, 60])
    ap.add_argument("--seeds", type=int, default=5)
    a = ap.parse_args()
    print("window [s]  conditioner   long [s]  short [s]  overall [s]")
    for win in a.windows:
        for stem in p3.MD_MARKERS:
            path = scenarios_dir() / "p3" / f"telnet-{stem}.toml"
            ov = {f"flow.{i}.start_jitter": f"{win:g}s" for i in range(5 * p3_telnet.TEL_SESSIONS)}
            ws = []
            for seed in range(1, a.seeds + 1):
                w, _ = p3_telnet.telnet_delays(qoslab.run(path, ov, seed))
                ws.append(w.filter(pl.col("delay").is_not_nan()))
            w = pl.concat(ws)

            def mean(aggs: list[str], w: pl.DataFrame = w) -> float:
                return float(w.filter(pl.col("aggregate").is_in(aggs))["delay"].mean())  # type: ignore[arg-type]

            long, short = mean(p3_telnet.LONG), mean(p3_telnet.SHORT)
            overall = mean(p3_telnet.LONG + p3_telnet.SHORT)
            print(f"{win:10g}  {stem:12}  {long:8.2f}  {short:9.2f}  {overall:11.2f}")


if __name__ == "__main__":
    main()

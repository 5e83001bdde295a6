"""Why small-window protection gives P3's F1 more timeouts per delivered segment in
qoslab (the RTT-SW ÷ basic comparison of Fig. 5) while it cuts the time spent in
timeout recovery: with protection the micro-flows' windows hover at the threshold k,
where protection stops and three duplicate ACKs cannot arrive. Prints, for the basic
RTT-aware marker and RTT-SW at F2 RTT 100 ms, the F1 throughput and per-micro-flow
share (segments per RTT), the Fig. 5 measures, and how the traced micro-flows' timeouts
spread over the cwnd [segments] they had when the timer fired.

    python validation/p3_f5_timeouts.py [--seeds 5]
"""

from __future__ import annotations

import argparse

import polars as pl

import qoslab
from qoslab.reproduce import p3, p3_telnet, scenarios_dir


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    a = ap.parse_args()
    for stem, seed in [(s, k) for s in p3_telnet.F5_STEMS for k in range(1, a.seeds + 1)]:
        res = qoslab.run(
            scenarios_dir() / "p3" / f"{stem}.toml",
            {"record.traces": p3_telnet.F5_TRACED},
            seed,
        )
        m = p3_telnet.cwnd_measures(res, p3.WARMUP, p3.DURATION)
        per_rtt = m["f1_mbps"] * 1e6 / p3.MICRO * p3.F1_RTT / 8 / p3_telnet.MSS
        print(f"{p3.LABELS[stem]}, seed {seed}: F1 {m['f1_mbps']:.2f} Mb/s = "
              f"{per_rtt:.3f} segments per RTT per micro-flow")  # fmt: skip
        for k, v in m.items():
            if k != "f1_mbps":
                print(f"  {k:24} {v:.3f}")
        tr = res.tables["traces"].filter(pl.col("t") >= p3.WARMUP).sort(["flow", "t"])
        tr = tr.with_columns(
            pl.col("state").shift(1).over("flow").alias("prev_state"),
            (pl.col("cwnd").shift(1).over("flow") // p3_telnet.MSS).alias("cwnd_before"),
        )
        fired = tr.filter((pl.col("state") == "loss") & (pl.col("prev_state") != "loss"))
        spread = fired.group_by("cwnd_before").len().sort("cwnd_before")
        total = max(fired.height, 1)
        print("  timeouts by cwnd before: " + ", ".join(
            f"{int(c)}: {n / total:.0%}" for c, n in spread.iter_rows()))  # fmt: skip


if __name__ == "__main__":
    main()

"""P0's open readings side by side, on the reproduction's own scenarios.

1. Common-bucket order (Fig. 7, equal links): ``fcfs`` (a connection served but still
   waiting becomes non-compliant again), ``fcfs_first`` (it keeps the time it first
   became non-compliant, §4.2.2's words), ``lru``, ``sequential`` with the list as built
   (50 ms first) and reversed (600 ms first), and ``rotating`` (a neutral scan); each with
   the default triggers (timer, send, ACK) and with the timer alone. Jain (max-min) and
   the 50 ms connection's throughput over its fair share.
2. Bucket depth (Fig. 4, partitioned shaping, equal links): equal against RTT-proportional
   depths with the window cap at 100 segments (the paper's setting; connections always
   backlogged at the manager) and near the rate window (20 000 B/s × RTT: 1, 6, 6, 12
   segments), where a connection's bucket can fill while it has nothing to send.
3. Aggregate-fair increase (``p0-mix``, 50-packet queue): Reno, the increase scaled by the
   smoothed RTT and by the base RTT (``rtt = "min"``). Jain of the long connections and
   access-link utilisation.

    .venv/bin/python validation/p0_readings.py [--seeds 3] [--mix-seconds 60]
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time
from typing import Any

import qoslab
from qoslab.reproduce import p0

ORDERS = ["fcfs", "fcfs_first", "lru", "sequential", "sequential_reversed", "rotating"]


def run(sc: dict[str, Any], seed: int) -> tuple[list[float], Any]:
    """Per-connection throughput [B/s] in the order of RTTS (50, 300, 300, 600 ms)."""
    res = qoslab.run(sc, seed=seed)
    fl = res.tables["flows"]
    by = dict(zip(fl["name"], fl["goodput_bytes"], strict=True))
    names = sorted(by, key=lambda n: int(n.split("-")[1]))
    dur = float(res.summary["duration"])
    return [by[n] * p0.PKT / p0.MSS / dur for n in names], res


def order_rows(seeds: int) -> list[str]:
    shares = p0.fair_shares(p0.EQUAL, True)
    out = ["| order | triggers | Jain (max-min) | 50 ms ÷ share | 600 ms ÷ share | seeds |",
           "|---|---|---|---|---|---|"]  # fmt: skip
    for trig_name, trig in [("timer+send+ack", None), ("timer alone", [])]:
        for order in ORDERS:
            sc = p0.scenario("f7-x", p0.EQUAL, p0.common_policy(order.split("_reversed")[0]))
            if order.endswith("_reversed"):
                sc["flow"] = sc["flow"][::-1]
            if trig is not None:
                sc["qosmgr"][0]["triggers"] = trig
            js, s50, s600 = [], [], []
            for seed in range(1, seeds + 1):
                thr, _ = run(copy.deepcopy(sc), seed)
                x = [t / s for t, s in zip(thr, shares, strict=True)]
                js.append(p0.jain(x))
                s50.append(x[0])
                s600.append(x[3])
            out.append(f"| {order} | {trig_name} | {statistics.fmean(js):.3f} "
                       f"(min {min(js):.3f}) | {statistics.fmean(s50):.2f} "
                       f"| {statistics.fmean(s600):.2f} | {seeds} |")  # fmt: skip
    return out


def depth_rows(seeds: int) -> list[str]:
    shares = p0.fair_shares(p0.EQUAL, True)
    out = ["| window cap [segments] | depth | Jain | throughput 50/300/300/600 ms [B/s] "
           "| total [% of rate] |", "|---|---|---|---|---|"]  # fmt: skip
    for cap in [100, 13, 12, 11]:
        for depth, qos in [("equal", p0.SHAPE_PART_EQ), ("rtt", p0.SHAPE_PART_RTT)]:
            sc = p0.scenario("f4-x", p0.EQUAL, qos)
            for f in sc["flow"]:
                f["tcp"]["max_window"] = cap
            thr_all, js = [], []
            for seed in range(1, seeds + 1):
                thr, _ = run(copy.deepcopy(sc), seed)
                thr_all.append(thr)
                js.append(p0.jain([t / s for t, s in zip(thr, shares, strict=True)]))
            mean = [statistics.fmean(t[i] for t in thr_all) for i in range(4)]
            out.append(f"| {cap} | {depth} | {statistics.fmean(js):.3f} "
                       f"| {' / '.join(f'{m:.0f}' for m in mean)} "
                       f"| {100 * sum(mean) / p0.RATE:.1f} |")  # fmt: skip
    return out


def mix_rows(seeds: int, secs: float) -> list[str]:
    out = ["| increase | Jain of the long connections | 50/600 ms | utilisation [%] | seeds |",
           "|---|---|---|---|---|"]  # fmt: skip
    for name, cc in [("reno", None), ("aggregate_fair, srtt", "srtt"),
                     ("aggregate_fair, min (base RTT)", "min")]:  # fmt: skip
        js, r, u = [], [], []
        for seed in range(1, seeds + 1):
            sc = p0.mix_scenario("reno" if cc is None else "aggregate_fair", seed, secs)
            if cc is not None:
                for f in sc["flow"]:
                    f["tcp"]["cc"] = {**f["tcp"]["cc"], "rtt": cc}
            res = qoslab.run(sc, seed=seed)
            fl = res.tables["flows"]
            longs = [g * p0.PKT / p0.MSS / secs for g in fl["goodput_bytes"].head(4)]
            wire = float(fl["goodput_bytes"].sum()) * p0.PKT / p0.MSS / secs
            js.append(p0.jain(longs))
            r.append(longs[0] / max(longs[3], 1e-9))
            u.append(100 * wire / (p0.ACCESS / 8))
        out.append(f"| {name} | {statistics.fmean(js):.3f} | {statistics.fmean(r):.1f} "
                   f"| {statistics.fmean(u):.1f} | {seeds} |")  # fmt: skip
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--mix-seconds", type=float, default=60.0)
    a = ap.parse_args()
    t0 = time.perf_counter()
    for part in (order_rows(a.seeds), depth_rows(a.seeds), mix_rows(2, a.mix_seconds)):
        print("\n".join(part) + "\n", flush=True)
    print(f"{time.perf_counter() - t0:.0f} s wall")


if __name__ == "__main__":
    main()

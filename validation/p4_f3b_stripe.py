"""P4 F3b: why application striping at w = 20 keeps about half the ideal ratio as the
bottleneck falls from 10 to 3 Mb/s in qoslab (the paper's striping falls further).

    python validation/p4_f3b_stripe.py            # 300 s, seeds 1-3, 10, 6, 4 and 3 Mb/s
    python validation/p4_f3b_stripe.py --seeds 6 --rates 10 6 3 --send-buffer 2MB

Per bottleneck rate (RED buffer and socket buffers scaled as in the experiment): f0's
ratio over the mean unit flow; timeouts per unit flow and per striped connection in the
run; the unit flows' mean goodput over the fair share of one TCB (rate / 29); f0's
head-of-line waits, zero windows and windows below one segment (``small_win``: the
scaled buffers are not multiples of the segment, so they fill without reading 0). The
unit flows the ratio divides by time out more as well, so the ratio hardly falls.

``--send-buffer`` gives each striped socket that send buffer instead of the scaled one
(the receive buffers stay scaled): the probe that the send buffer is not the cause. The
summary gives per rate the means over seeds and f0's ratio at the lowest rate over that
at the highest (the experiment's "ratio at 3 Mb/s ÷ ratio at 10 Mb/s").
"""

import argparse
import statistics

import qoslab
from qoslab.reproduce import p4, scenarios_dir

W = 20
HEAD = [
    "Mb/s",
    "seed",
    "ratio",
    "TO/unit",
    "TO/conn",
    "unit/share",
    "hol_waits",
    "zero_win",
    "small_win",
]


def fmt(row: list) -> str:
    """One right-aligned row, floats to three significant digits."""
    return " ".join(f"{v:>10.3g}" if isinstance(v, float) else f"{v:>10}" for v in row)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3, help="seeds 1..N (default 3)")
    ap.add_argument("--rates", type=int, nargs="+", default=[10, 6, 4, 3], help="Mb/s")
    ap.add_argument("--send-buffer", help="send buffer per striped socket, e.g. 2MB")
    a = ap.parse_args()
    print(fmt(HEAD))
    rows = []
    for mbps in a.rates:
        for seed in range(1, a.seeds + 1):
            ov = {**p4.bandwidth_overrides("stripe", mbps, W), "duration": "300s"}
            if a.send_buffer:
                ov["flow.f0.stripe.send_buffer"] = a.send_buffer
            r = qoslab.run(scenarios_dir() / "p4" / "f2-stripe.toml", ov, seed=seed)
            g = p4.flow_goodputs(r)
            flows, st = r.tables["flows"], r.tables["stripe"]
            unit_to = flows.filter(flows["name"] != "f0")["timeouts"].mean()
            row = [
                mbps,
                seed,
                p4.ratio_row(g)["ratio"],
                unit_to,
                st["timeouts"][0] / W,
                sum(g[1:]) / 9 / (mbps * 1e6 / (W + 9)),
                st["hol_waits"][0],
                st["zero_windows"][0],
                st["small_windows"][0],
            ]
            rows.append(row)
            print(fmt(row), flush=True)
    print(
        f"\nmeans over seeds 1-{a.seeds}"
        + (f", send buffer {a.send_buffer}" if a.send_buffer else "")
    )
    print(fmt(["Mb/s", "ratio", "TO/unit", "small_win"]))
    mean = {}
    for mbps in a.rates:
        rs = [x for x in rows if x[0] == mbps]
        mean[mbps] = statistics.fmean(x[2] for x in rs)
        m = [statistics.fmean(float(x[i]) for x in rs) for i in (2, 3, 8)]
        print(fmt([mbps, *m]))
    lo, hi = min(a.rates), max(a.rates)
    print(f"ratio at {lo} Mb/s ÷ ratio at {hi} Mb/s: {mean[lo] / mean[hi]:.3f}")


if __name__ == "__main__":
    main()

"""P4 F3b: why application striping at w = 20 keeps about half the ideal ratio as the
bottleneck falls from 10 to 3 Mb/s in qoslab (the paper's striping falls further).

    python validation/p4_f3b_stripe.py            # 300 s, seeds 1-3

Per bottleneck rate (RED buffer and socket buffers scaled as in the experiment): f0's
ratio over the mean unit flow; timeouts per unit flow and per striped connection in the
run; the unit flows' mean goodput over the fair share of one TCB (rate / 29); f0's
head-of-line waits, zero windows and windows below one segment (``small_win``: the
scaled buffers are not multiples of the segment, so they fill without reading 0). The
unit flows the ratio divides by time out more as well, so the ratio hardly falls.
"""

import qoslab
from qoslab.reproduce import p4, scenarios_dir

W = 20
head = [
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
print(" ".join(f"{h:>10}" for h in head))
for mbps in (10, 6, 4, 3):
    for seed in (1, 2, 3):
        ov = {**p4.bandwidth_overrides("stripe", mbps, W), "duration": "300s"}
        r = qoslab.run(scenarios_dir() / "p4" / "f2-stripe.toml", ov, seed=seed)
        g = p4._goodputs(r)
        flows, st = r.tables["flows"], r.tables["stripe"]
        unit_to = flows.filter(flows["name"] != "f0")["timeouts"].mean()
        row = [
            mbps,
            seed,
            p4._ratio_row(g)["ratio"],
            unit_to,
            st["timeouts"][0] / W,
            sum(g[1:]) / 9 / (mbps * 1e6 / (W + 9)),
            st["hol_waits"][0],
            st["zero_windows"][0],
            st["small_windows"][0],
        ]
        print(" ".join(f"{v:>10.3g}" if isinstance(v, float) else f"{v:>10}" for v in row))

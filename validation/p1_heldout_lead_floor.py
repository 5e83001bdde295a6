"""Counterfactual for the held-out case's one short flow-seed with qoslab's default TCP
(docs/papers/p1.md#recovery-lead): every TRC gets at least RTT_dev of delay to lead
with (``rtt_min`` = RTT_net + RTT_dev where that is above the 200 ms default), so no
flow's recovery lead is cut to its RTT_TRC (L = min(RTT_dev, RTT_TRC)). Per seed and
flow: achieved ÷ requested, timeouts, W_max, RTT_TRC [ms].

    python3 validation/p1_heldout_lead_floor.py '[1,2,3,4,5,6,11,14]'
"""

import json
import sys

import polars as pl

from qoslab.api import run
from qoslab.reproduce import p1

RTT_DEV = 0.010
seeds = json.loads(sys.argv[1]) if len(sys.argv) > 1 else [1, 2, 3, 4, 5]
sc = p1.heldout10_scenario(p1.DEFAULT_TCP)
sc.pop("sweep", None)
req = p1._requested(sc)
probe = run({**sc, "duration": "1s", "warmup": "0s"}, seed=1).tables["trc"]
rtt_net = dict(zip(probe["name"], probe["rtt_net"], strict=True))
for c in sc["conditioner"]:
    for st in c["stages"]:
        st["rtt_min"] = f"{max(0.2, rtt_net[st['flow']] + RTT_DEV) * 1e3:.4f}ms"
worst = {}
for s in seeds:
    r = run(sc, seed=s)
    fl = r.tables["flows"].join(r.tables["trc"].select("name", "w_max", "rtt_trc"), on="name")
    fl = fl.with_columns(
        (pl.col("goodput_bps") / pl.col("name").replace_strict(req, return_dtype=pl.Float64)).alias(
            "ratio"
        )
    )
    row = zip(fl["name"], fl["ratio"], fl["timeouts"], fl["w_max"], fl["rtt_trc"], strict=True)
    print(s, " ".join(f"{n}:{x:.4f}/{t}/{w}/{d * 1e3:.1f}" for n, x, t, w, d in row))
    for n, x in zip(fl["name"], fl["ratio"], strict=True):
        worst[n] = min(worst.get(n, 9.0), x)
print("worst per flow:", {n: round(x, 4) for n, x in sorted(worst.items())})

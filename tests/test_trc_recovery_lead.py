"""The TRC's recovery lead (``recovery_lead``, docs/papers/p1.md#recovery-lead) on a
held-out variant with qoslab's default TCP: requests and access delays that are neither
in the model fits nor in ``p1-heldout``'s case."""

from __future__ import annotations

import polars as pl

import qoslab
from qoslab.reproduce import p1

#: Seven requests (Σ = 8.5 Mb/s = ρ·10 Mb/s) at other RTTs than HELDOUT10_FLOWS.
FLOWS = [(100e3, 0.25), (300e3, 0.004), (600e3, 0.2), (1.2e6, 0.03), (2e6, 0.12),
         (2.3e6, 0.07), (2e6, 0.01)]  # fmt: skip
SEEDS = [1, 2, 3]


def _run(lead: str | None) -> pl.DataFrame:
    sc = p1.heldout10_scenario(p1.DEFAULT_TCP, flows=FLOWS, lead=lead, duration="400s")
    sc.pop("sweep", None)
    req = p1.requested_rates(sc)
    out = []
    for seed in SEEDS:
        r = qoslab.run(sc, seed=seed)
        out.append(r.tables["flows"].join(r.tables["trc"].select("name", "led"), on="name"))
    return (
        pl.concat(out)
        .with_columns(pl.col("name").replace_strict(req, return_dtype=pl.Float64).alias("req"))
        .with_columns((pl.col("goodput_bps") / pl.col("req")).alias("ratio"))
    )


def test_default_tcp_reaches_every_request_with_the_lead_and_not_without():
    lead = _run(None)  # the default: RTT_dev = 10 ms
    # The paper's claim on every flow and seed: ≥ the request, ≤ 3 % above R·1.06.
    assert lead["ratio"].min() >= 1.0, lead.sort("ratio").head(3)
    assert lead["ratio"].max() <= 1.03 * 1.06, lead.sort("ratio").tail(3)
    assert (lead["led"] > 0).all()
    # Fig. 1 as printed (no lead): spurious timeouts take flows below their request.
    fig1 = _run("0s")
    assert fig1["ratio"].min() < 1.0
    assert (fig1["led"] == 0).all()
    assert fig1["timeouts"].sum() >= 4 * max(lead["timeouts"].sum(), 1)


def test_the_lead_has_room_on_every_path():
    """With a lead L, RTT_min = max(RTT*_min, RTT_net + L) (p1.md#lead-room): a path
    within L of RTT*_min = 200 ms gets RTT_TRC ≥ L; without a lead (Fig. 1 as printed,
    ECN mode, or a coarse-clock TCP) Fig. 2 is unchanged."""
    from qoslab.trc import parameters

    rtt_net = 0.1936  # RTT_net + 10 ms above 200 ms, RTT_net below it
    led = parameters(3e6, rtt_net=rtt_net, tcp=p1.DEFAULT_TCP)
    assert led["recovery_lead"] == 0.010
    assert abs(led["rtt_min"] - (rtt_net + 0.010)) < 1e-12
    assert led["rtt_trc"] >= 0.010 - 1e-12
    printed = parameters(3e6, rtt_net=rtt_net, tcp=p1.DEFAULT_TCP, recovery_lead=0.0)
    assert abs(printed["rtt_min"] - 0.2) < 1e-12 and printed["rtt_trc"] < 0.010
    # The P1 scenarios' TCP (100 ms clock): no lead by default, Fig. 2 as printed.
    p1_tcp = parameters(3e6, rtt_net=rtt_net, tcp=p1.P1_TCP)
    assert p1_tcp["recovery_lead"] == 0.0 and abs(p1_tcp["rtt_min"] - 0.2) < 1e-12
    # ECN mode drops nothing to lead.
    ecn = parameters(3e6, rtt_net=rtt_net, tcp={**p1.DEFAULT_TCP, "ecn": True}, ecn=True)
    assert ecn["recovery_lead"] == 0.0 and abs(ecn["rtt_min"] - 0.2) < 1e-12
    # What a scenario's TRC does is the same computation.
    sc = p1.heldout10_scenario(p1.DEFAULT_TCP, flows=[(3e6, 0.0958)], duration="2s")
    sc.pop("sweep", None)
    trc = qoslab.run({**sc, "warmup": "0s"}, seed=1).tables["trc"]
    got = parameters(3e6, rtt_net=trc["rtt_net"][0], tcp=p1.DEFAULT_TCP)
    bare = parameters(3e6, rtt_net=trc["rtt_net"][0], tcp=p1.DEFAULT_TCP, recovery_lead=0.0)
    assert bare["rtt_trc"] < 0.010 <= trc["rtt_trc"][0] + 1e-9
    assert abs(trc["rtt_trc"][0] - got["rtt_trc"]) < 1e-9

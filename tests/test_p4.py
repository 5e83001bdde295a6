"""P4-F2 (WAIMD and application striping): the generated scenarios, that the weight
overrides reach the engine, and the experiment's claims in a short run."""

from __future__ import annotations

import qoslab
from qoslab.reproduce import p4, scenarios_dir
from qoslab.reproduce.p1 import to_toml


def test_committed_scenarios_match_the_generator():
    assert len(p4.specs()) == 2
    for rel, data in p4.specs().items():
        path = scenarios_dir() / rel
        assert path.read_text() == to_toml(data, p4.HEADER), f"regenerate {rel}"
        qoslab.check(path)


def test_weight_overrides_reach_f0():
    path = scenarios_dir() / "p4" / "f2-stripe.toml"
    r = qoslab.run(path, {"flow.f0.stripe.connections": 3, "duration": "30s", "warmup": "5s"})
    assert r.tables["stripe"]["connections"].to_list() == [3]
    assert r.tables["stripe_connections"].height == 3


def test_weighted_flow_beats_unit_flows_and_waimd_collapses_at_large_weights():
    def ratio(method: str, w: int) -> float:
        path = scenarios_dir() / "p4" / f"f2-{method}.toml"
        ov = {**p4._weight_override(method, w), "duration": "60s"}
        g = qoslab.run(path, ov).tables["flows"]["goodput_bps"].to_list()
        return g[0] / (sum(g[1:]) / 9)

    assert ratio("waimd", 5) > 2.5
    assert ratio("stripe", 5) > 2.0
    assert ratio("waimd", 100) < 20

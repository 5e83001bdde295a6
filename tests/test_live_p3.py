"""P3 on real TCP (``qoslab reproduce p3-live``): RTT-aware markers with the passive edge
estimator in front of Linux Reno aggregates.

The live run needs root and /dev/net/tun (skipped with the reason elsewhere, like
tests/test_live.py); the registry and scenario checks run anywhere."""

from __future__ import annotations

import pytest

from conftest import assert_live_experiment_named_only_and_skipped, needs_live
from qoslab.api import live
from qoslab.reproduce.p3_live import (
    LINUX_MSS,
    MARKERS,
    MICRO,
    P3_SPIN,
    RACK_OFF,
    RUN_WINDOW,
    WHOLE_RUN,
    edge_rtt,
    scenario_data,
)


def test_p3_live_is_named_only_and_skips_without_live_mode(tmp_path, monkeypatch):
    assert_live_experiment_named_only_and_skipped("p3-live", tmp_path, monkeypatch)


def test_every_marker_is_passive_at_its_edge_with_linux_connections():
    assert MARKERS == ["standard", "rtt", "rtt-rto", "rtt-sw", "rtt-sw-cir"]
    for stem in MARKERS:
        d = scenario_data(stem, 0.2, "10s", "2s")
        # A short spin only: the 300 µs of p0/p1-live starves 80 connections' agents.
        assert d["live"] == {"cc": "reno", "spin": P3_SPIN} and P3_SPIN == "100us"
        aggs = [f["name"].split("-")[0] for f in d["flow"]]
        assert aggs.count("F1") == aggs.count("F2") == MICRO >= 20
        assert all(f["tcp"] == {"mss": LINUX_MSS} for f in d["flow"])
        # The RTT-setting delays sit between edge and core, where the edge sees them:
        # F2's 200 ms round trip is 98.5 ms one way on e2–c plus 3 × 0.5 ms.
        assert d["link"][3]["a"] == "e2" and d["link"][3]["delay"] == "98.5ms"
        for a, c in enumerate(d["conditioner"], 1):
            (st,) = c["stages"]
            assert c["at"] == f"e{a}"
            assert st["rtt"] == st["rto"] == "passive" and st["group"] == "edges"
            assert st["scheme"] == {"standard": "standard", "rtt": "rtt", "rtt-rto": "rtt_rto",
                                    "rtt-sw": "rtt", "rtt-sw-cir": "rtt"}[stem]  # fmt: skip
            # RTT-SW's two readings of the profile bound, side by side.
            assert st.get("protect_bound") == {"rtt-sw": "none", "rtt-sw-cir": "cir"}.get(stem)
    assert (
        scenario_data("rtt-sw", 0.1, "10s", "2s")["conditioner"][0]["stages"][0]["small_window"]
        == 3
    )
    # The counterfactual: the same, Linux without RACK and tail-loss probes.
    cf = scenario_data("rtt-sw", 0.1, "10s", "2s", rack_tlp=False)
    assert cf["live"] == {"cc": "reno", "spin": P3_SPIN, "rack_tlp": False}
    assert cf["name"].endswith("-no-rack-tlp") and RACK_OFF == ["standard", "rtt-rto", "rtt-sw"]
    # The window counterfactual: the same scenario but every stage's minimum over the run.
    base = scenario_data("standard", 0.1, "10s", "2s")
    whole = scenario_data("standard", 0.1, "10s", "2s", whole_run=True)
    assert whole["name"] == base["name"] + "-run-min" and WHOLE_RUN == ["standard"]
    for c in whole["conditioner"]:
        (st,) = c["stages"]
        assert st.pop("min_window") == RUN_WINDOW == "1000s"
    assert {**whole, "name": base["name"]} == base
    # Beyond the edge: the RTT less the host–edge link's 0.5 ms each way.
    assert edge_rtt(0.1, "F1") == pytest.approx(0.019)
    assert edge_rtt(0.1, "F2") == pytest.approx(0.099)


@needs_live
def test_the_passive_marker_measures_linux_connections_and_lifts_the_long_aggregate():
    # 20 Linux Reno connections per aggregate, basic RTT-aware marker, 40 s: the passive
    # estimator samples every connection at both edges and finds at least the round
    # trips beyond them (19 and 99 ms), at most those plus 60 ms: the receivers' delayed
    # ACKs (windows of a segment or two wait for them; Linux's timeout is 40 ms and adapts
    # upwards) and the RED queue; the marker gives the 100 ms
    # aggregate more than the 20 ms one (P3 Fig. 4), the standard marker does not.
    def run(stem: str) -> tuple[float, dict]:
        d = scenario_data(stem, 0.1, "40s", "15s")
        d["flow"] = [f for f in d["flow"] if int(f["name"].split("-")[1]) < 20]
        res = live(d, seed=1)
        fl = res.tables["flows"]
        g = {a: sum(b for n, b in zip(fl["name"], fl["goodput_bps"], strict=True)
                    if n.startswith(f"{a}-")) for a in ("F1", "F2")}  # fmt: skip
        m = {row["at"]: row for row in res.tables["rtt_markers"].iter_rows(named=True)}
        return g["F2"] / g["F1"], m

    rtt, m = run("rtt")
    for edge, want in (("e1", 19.0), ("e2", 99.0)):
        assert m[edge]["passive_flows"] == 20, m[edge]
        assert m[edge]["passive_samples"] > 500, m[edge]
        assert want * 0.97 <= m[edge]["rtt_ms"] <= want + 60, m[edge]
    std, _ = run("standard")
    assert rtt > 1.0 > std, (rtt, std)

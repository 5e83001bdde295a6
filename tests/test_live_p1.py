"""P1 on real TCP (``qoslab reproduce p1-live``): the TRC in front of Linux senders.

The live run needs root and /dev/net/tun (skipped with the reason elsewhere, like
tests/test_live.py); the registry and scenario checks run anywhere."""

from __future__ import annotations

from pathlib import Path

from conftest import assert_live_experiment_named_only_and_skipped, needs_live
from qoslab.api import live
from qoslab.reproduce import Context
from qoslab.reproduce.p1_live import CASES, CCS, LINUX_MSS, case_data
from qoslab.trc import fitted_models


def test_p1_live_is_named_only_and_skips_without_live_mode(tmp_path, monkeypatch):
    assert_live_experiment_named_only_and_skipped("p1-live", tmp_path, monkeypatch)


def test_each_linux_sender_has_a_live_fitted_model_and_its_case_uses_it(tmp_path):
    models = fitted_models()
    ctx = Context("p1-live", Path(tmp_path), True, None, None)
    for cc, model in CCS.items():
        assert model in models, f"no fitted model {model}: validation/trc_model_fit.py"
        d = case_data(ctx, "t1-124ms", "10s", "2s", cc)
        assert d["live"] == {"cc": cc, "spin": "300us"}
        assert all(f["tcp"]["mss"] == LINUX_MSS for f in d["flow"])
        assert {st["model"] for c in d["conditioner"] for st in c["stages"]} == {model}
        assert d["link"][0]["delay"] == "124ms" and "sweep" not in d
    # The simulated reference: qoslab's default TCP, its own fitted model.
    sim = case_data(ctx, "f6b", "10s", "2s", None)
    assert "live" not in sim and all("model" not in st for st in sim["conditioner"][0]["stages"])
    assert set(CASES) == {"t1-1.5ms", "t1-124ms", "f6b"}


@needs_live
def test_a_trc_sets_a_linux_reno_flows_rate_and_without_it_the_flow_takes_the_link():
    # One Linux Reno flow, 10 Mb/s bottleneck, a 1 Mb/s request under the live fit.
    def sc(trc: bool) -> dict:
        d = {
            "name": "p1-live-one", "duration": "25s", "warmup": "8s",
            "node": [{"name": "s"}, {"name": "r0", "kind": "router"},
                     {"name": "r1", "kind": "router"}, {"name": "d"}],
            "link": [{"a": "s", "b": "r0", "rate": "100Mbps", "delay": "1.5ms"},
                     {"a": "r0", "b": "r1", "rate": "10Mbps", "delay": "0.5ms",
                      "queue": {"kind": "droptail", "limit": 112}},
                     {"a": "r1", "b": "d", "rate": "100Mbps", "delay": "0.5ms"}],
            "flow": [{"name": "f", "from": "s", "to": "d",
                      "tcp": {"mss": LINUX_MSS, "max_window": 2000}}],
            "live": {"cc": "reno"},
        }  # fmt: skip
        if trc:
            stage = {"kind": "trc", "flow": "f", "rate": "1000kbps", "model": "linux-reno"}
            d["conditioner"] = [{"at": "s", "stages": [stage]}]
        return d

    on = live(sc(True), seed=1)
    g = on.flows["goodput_bps"][0] / 1e6
    trc = on.tables["trc"]
    assert trc["dropped"][0] > 0  # the TRC dropped: it controlled the flow
    # The paper's claim on a short run: at least the request, about the target R·1.06.
    assert 1.0 <= g <= 1.06 * 1.05, g
    off = live(sc(False), seed=1)
    assert off.flows["goodput_bps"][0] > 5e6  # Reno alone takes most of the 10 Mb/s

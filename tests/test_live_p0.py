"""P0 on real TCP (``qoslab reproduce p0-live``): the aggregate policies on Linux TCP.

The live runs need root and /dev/net/tun (skipped with the reason elsewhere, like
tests/test_live.py); the registry checks (skipped status, left out of ``--all``) run
anywhere."""

from __future__ import annotations

from pathlib import Path

from conftest import assert_live_experiment_named_only_and_skipped, needs_live
from qoslab import reproduce
from qoslab.api import live
from qoslab.reproduce import Context
from qoslab.reproduce.p0_live import CCS, _metrics, label_of, scenario_data


def test_p0_live_is_named_only_and_skips_without_live_mode(tmp_path, monkeypatch):
    idx = assert_live_experiment_named_only_and_skipped("p0-live", tmp_path, monkeypatch)
    (e,) = idx["experiments"]
    assert reproduce.experiment_status(e) == "skipped"
    assert reproduce.summarize(idx)["ok"]


def test_p0_live_runs_linux_reno_with_the_datapath_spinning(tmp_path):
    # Without spin this machine's late wake-ups break the timing bounds of every run.
    ctx = Context("p0-live", Path(tmp_path), True, None, None)
    d = scenario_data(ctx, "f4-rtt-depth.toml", "8s", "3s")
    assert d["live"] == {"cc": "reno", "spin": "300us"}
    assert (d["duration"], d["warmup"]) == ("8s", "3s")
    # CUBIC, Linux's default, runs every policy too, under labels of its own.
    c = scenario_data(ctx, "f4-rtt-depth.toml", "8s", "3s", "cubic")
    assert c["live"] == {"cc": "cubic", "spin": "300us"} and c["name"].endswith("-cubic")
    assert CCS == ("reno", "cubic")
    assert label_of("off", "reno") == "off" and label_of("off", "cubic") == "off (cubic)"


@needs_live
def test_p0_live_partitioned_shaping_holds_the_rate_and_off_does_not(tmp_path):
    # A tiny P0-live: 8 s of the four Linux Reno connections (RTT 50/300/300/600 ms).
    ctx = Context("p0-live", Path(tmp_path), True, None, None)
    shaped = live(scenario_data(ctx, "f4-rtt-depth.toml", "8s", "3s"), seed=1, twin=True)
    off = live(scenario_data(ctx, "f3-equal.toml", "8s", "3s"), seed=1, twin=True)
    s, o = _metrics(shaped, False), _metrics(off, False)
    # The datapath's manager held every connection's data: packets went through it.
    q = shaped.tables["qosmgr"]
    assert (q["packets"] > 0).all() and q["held"].sum() > 0
    # Shaping holds the aggregate to r_m (IP level) and shares it equally across RTTs;
    # without it the total exceeds the rate and the short RTT takes more.
    assert 0.85 < s["total"] < 1.05, s
    assert s["jain"] > 0.95, s
    assert o["total"] > 1.2, o
    assert o["minmax"] < s["minmax"], (o, s)
    # The twin agrees with the live run on the shaped total.
    t = _metrics(shaped, True)
    assert abs(t["total"] / s["total"] - 1) < 0.1, (s, t)

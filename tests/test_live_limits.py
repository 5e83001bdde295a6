"""Live mode's limits: a scenario faster than the datapath is refused before anything is
created, naming the link and the budget; forced past the budget, the run's timing
verdict fails and its advice does not offer `[live] spin` for a shortage of CPU. Needs
root and /dev/net/tun."""

from __future__ import annotations

import pytest

from conftest import needs_live, two_hosts
from qoslab.api import live
from qoslab.exceptions import ScenarioError

pytestmark = needs_live

FAST = (
    two_hosts("fast", rate="20Gbps", delay="1ms", limit=10000, duration="2s", warmup="0.5s")
    + """
[[flow]]
name = "bulk"
from = "a"
to = "b"
tcp = {}
[live]
cc = "cubic"
"""
)


def test_a_link_faster_than_the_datapath_is_refused_before_the_run(tmp_path):
    p = tmp_path / "fast.toml"
    p.write_text(FAST)
    with pytest.raises(ScenarioError) as e:
        live(p)
    msg = str(e.value)
    assert "link[0].rate" in msg and "31250 packets/s" in msg and "live.max_pps" in msg, msg
    assert str(p) in msg, msg


def test_past_the_budget_the_verdict_fails_without_suggesting_spin(tmp_path):
    # Forced past the budget: one Linux flow cannot fill 20 Gb/s through the datapath.
    p = tmp_path / "fast.toml"
    p.write_text(FAST + "max_pps = 1e8\n")
    r = live(p)
    s = r.summary
    assert s["live_timing_ok"] is False, s
    assert s["live_timing_cause"] in (
        "cpu-bound",
        "cpu-starved",
        "rate not achieved",
        "cpu-saturated",
        "cpu-bursts",
    ), s["live_timing_cause"]
    gp = r.flows["goodput_bps"][0]
    assert gp < 0.5 * 20e9, gp
    hosts = r.table("live_hosts")
    a = hosts.row(hosts["host"].to_list().index("a"), named=True)
    assert a["link"] == "a->b (link[0].rate)" and a["link_rate_bps"] == 20e9
    assert a["link_out_bps"] < 0.5 * 20e9 and a["tun_read_bytes"] > 0
    text = " ".join(s["warnings"])
    # The advice names the budget, and never offers spin as the remedy.
    assert "live.max_pps" in text or "quieter" in text, text
    assert "keeps events on time" not in text, text
    assert s["live_peak_pps"] == pytest.approx(20e9 / 12_000 * 1.5)

"""What a new user trips over on the command line: a rate without its unit, flows that
deliver nothing, a delay as long as the run, a wrong [sweep] table under `qoslab run`,
flow counts with flow groups."""

from __future__ import annotations

import pytest

import qoslab
from conftest import cli, small_text

#: Four flow entries of ten copies each over a bottleneck whose rate is given without a
#: unit (10 bit/s): nothing gets through.
SLOW = """
name = "slow"
duration = "3s"

[[node]]
name = "a"
[[node]]
name = "r"
kind = "router"
[[node]]
name = "d"

[[link]]
a = "a"
b = "r"
rate = "10Mbps"
delay = "5ms"
[[link]]
a = "r"
b = "d"
rate = {rate}
delay = {delay}

[[flow]]
name = "web"
from = "a"
to = "d"
count = 10
tcp = {{}}
[[flow]]
name = "bulk"
from = "a"
to = "d"
count = 10
group = "bulk"
tcp = {{}}
[[flow]]
name = "v"
from = "a"
to = "d"
count = 10
cbr = {{ rate = "64kbps" }}
[[flow]]
name = "w"
from = "a"
to = "d"
cbr = {{ rate = "64kbps" }}
"""


def _slow(tmp_path, rate="10", delay='"5ms"', extra=""):
    p = tmp_path / "slow.toml"
    p.write_text(SLOW.format(rate=rate, delay=delay) + extra)
    return p


def test_rate_without_unit_warns_in_summary_and_on_the_terminal(tmp_path):
    p = _slow(tmp_path)
    r = cli("run", p, "-o", tmp_path / "out", check=True)
    rate = [w for w in r.stderr.splitlines() if "link[1].rate" in w]
    assert len(rate) == 1, r.stderr
    assert str(p) in rate[0] and "10 bit/s is below 1 kb/s" in rate[0], rate
    silent = [w for w in r.stderr.splitlines() if "delivered nothing" in w]
    assert len(silent) == 1, r.stderr
    # The copies of each group named as one range, the single flow by its name.
    assert "all 31 flows" in silent[0], silent
    for name in ("web-1…web-10", "bulk-1…bulk-10", "v-1…v-10", "w;"):
        assert name in silent[0], (name, silent)
    res = qoslab.load(tmp_path / "out")
    warnings = res.summary["warnings"]
    assert any("`link[1].rate` = 10 bit/s" in w for w in warnings), warnings
    assert any("delivered nothing" in w for w in warnings), warnings
    assert (res.flows["goodput_bps"] == 0).all()


def test_check_prints_the_rate_warning_and_counts_flow_entries(tmp_path):
    p = _slow(tmp_path)
    r = cli("check", p, check=True)
    assert "4 flow entries (31 flows)" in r.stdout, r.stdout
    assert "10 bit/s is below 1 kb/s" in r.stderr, r.stderr
    # The flow entries as a table: the groups, their copies and their kinds.
    assert "bulk-1…bulk-10" in r.stdout and "web-1…web-10" in r.stdout, r.stdout
    row = next(line for line in r.stdout.splitlines() if "v-1…v-10" in line)
    assert "10" in row and "cbr" in row, row


def test_a_plausible_scenario_gets_no_warning(small, tmp_path):
    r = cli("check", small, check=True)
    assert "(4 nodes, 3 links, 2 flows)" in r.stdout, r.stdout
    assert "warning" not in r.stderr, r.stderr
    r = cli("run", small, "-o", tmp_path / "out", check=True)
    assert "warning" not in r.stderr, r.stderr
    assert qoslab.load(tmp_path / "out").summary["warnings"] == []


def test_some_silent_flows_are_counted_among_all(tmp_path):
    # The bottleneck is fine, one flow's own access link is not.
    p = tmp_path / "s.toml"
    p.write_text(
        small_text(
            extra='[[node]]\nname = "h4"\n[[link]]\na = "h4"\nb = "r1"\nrate = 100\n'
            'delay = "1ms"\n[[flow]]\nname = "c"\nfrom = "h4"\nto = "h3"\n'
            'cbr = { rate = "100kbps" }\n'
        )
    )
    res = qoslab.run(p)
    silent = [w for w in res.summary["warnings"] if "delivered nothing" in w]
    assert len(silent) == 1 and silent[0].startswith("1 of 3 flows"), res.summary["warnings"]
    assert ": c;" in silent[0], silent


def test_a_delay_as_long_as_the_run_warns(tmp_path):
    p = _slow(tmp_path, rate='"10Mbps"', delay="3")
    r = cli("check", p, check=True)
    assert "`link[1].delay` = 3s is not shorter than the run (duration = 3s)" in r.stderr
    assert '"3ms"' in r.stderr, r.stderr


BAD_SWEEPS = [
    ("[sweep]\nrepeat = 3\n", "sweep.repeat", "unknown key"),
    ('[sweep.grid]\n"link.9.rate" = ["1Mbps", "2Mbps"]\n', "link.9.rate", ""),
    ('[sweep.grid]\n"link.1.rate" = []\n', "sweep.grid.link.1.rate", "non-empty"),
    ('[sweep.grid]\n"link.1.rate" = ["1Mbps", "fast"]\n', "link.1.rate", "fast"),
]


@pytest.mark.parametrize(("table", "key", "words"), BAD_SWEEPS)
def test_run_rejects_a_bad_sweep_table_as_check_does(tmp_path, table, key, words):
    p = _slow(tmp_path, rate='"10Mbps"', extra=table)
    c = cli("check", p)
    r = cli("run", p, "-o", tmp_path / "out")
    assert c.returncode == 2 and r.returncode == 2, (c.stderr, r.stderr)
    assert key in c.stderr and words in c.stderr, c.stderr
    assert r.stderr == c.stderr
    assert not (tmp_path / "out").exists()


def test_run_says_it_runs_one_point_not_the_sweep(tmp_path):
    p = _slow(tmp_path, rate='"10Mbps"', extra="[sweep]\nseeds = 3\n")
    r = cli("run", p, "-o", tmp_path / "out", check=True)
    assert "runs one point" in r.stderr and f"qoslab sweep {p}" in r.stderr, r.stderr
    p2 = _slow(tmp_path, rate='"10Mbps"')
    r = cli("run", p2, "-o", tmp_path / "out2", check=True)
    assert "runs one point" not in r.stderr, r.stderr

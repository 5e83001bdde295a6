"""`qoslab live --repeat N`: per-flow means with 95 % intervals of live, twin and their
difference paired by repeat. The statistics without root; one short repeated live run
(two repeats of 3 s, with the twin) with root and /dev/net/tun."""

from __future__ import annotations

import math
import subprocess
import sys

import polars as pl
import pytest

from conftest import needs_live, two_hosts
from qoslab.live_repeat import mean_ci, repeat_tables, repeat_text
from qoslab.store import Result, load
from qoslab.tables import t_quantile


def _fake(live: list[float], sim: list[float], cc: str = "reno", ok: bool = True) -> Result:
    """A live run with a `twin` table: flows f0, f1 … at `live` and `sim` b/s."""
    rows = [
        {"flow": f"f{i}", "comparable": cc == "reno", "live_bps": lv, "sim_bps": sm}
        for i, (lv, sm) in enumerate(zip(live, sim, strict=True))
    ]
    rows.append(
        {"flow": "(total)", "comparable": cc == "reno", "live_bps": sum(live), "sim_bps": sum(sim)}
    )
    flows = pl.DataFrame({"name": [f"f{i}" for i in range(len(live))], "goodput_bps": live})
    return Result({"live_timing_ok": ok}, {"twin": pl.DataFrame(rows), "flows": flows})


def test_mean_ci_is_the_student_t_interval():
    m, ci, n = mean_ci([1.0, 2.0, 4.0, None, math.nan])
    sd = math.sqrt(((1 - 7 / 3) ** 2 + (2 - 7 / 3) ** 2 + (4 - 7 / 3) ** 2) / 2)
    assert (n, m) == (3, pytest.approx(7 / 3))
    assert ci == pytest.approx(t_quantile(0.975, 2) * sd / math.sqrt(3))
    assert math.isnan(mean_ci([5.0])[1]) and mean_ci([])[2] == 0


def test_the_difference_is_paired_by_repeat():
    # Live moves by ±2 Mb/s from repeat to repeat and the twin with it, 0.5 Mb/s above:
    # unpaired, the intervals overlap; paired, the difference is exactly 0.5 Mb/s.
    live = [8e6, 12e6, 10e6]
    sim = [x + 0.5e6 for x in live]
    res = [_fake([lv], [sm]) for lv, sm in zip(live, sim, strict=True)]
    per, ci, summ = repeat_tables(res, [7, 8, 9])
    assert per.height == 6 and per["seed"].unique().sort().to_list() == [7, 8, 9]
    f0 = ci.row(0, named=True)
    assert f0["flow"] == "f0" and f0["n"] == 3
    assert f0["live_bps_mean"] == pytest.approx(10e6)
    assert f0["live_bps_ci95"] == pytest.approx(t_quantile(0.975, 2) * 2e6 / math.sqrt(3))
    assert f0["sim_bps_ci95"] == pytest.approx(f0["live_bps_ci95"])
    assert f0["diff_bps_mean"] == pytest.approx(0.5e6)
    assert f0["diff_bps_ci95"] == pytest.approx(0.0, abs=1e-6)
    assert f0["diff_mean"] == pytest.approx((0.5 / 8 + 0.5 / 12 + 0.5 / 10) / 3)
    assert ci["flow"].to_list()[-1] == "(total)"
    assert summ["repeats"] == 3 and summ["repeat_dirs"][0] == "repeat-1"
    text = repeat_text(ci)
    assert max(len(x) for x in text.splitlines()) <= 80, text
    assert "10.000 ± 4.968" in text and "+5.1 ± " in text, text


def test_a_difference_is_not_given_where_the_senders_differ():
    res = [_fake([10e6], [9e6], cc="cubic"), _fake([11e6], [9e6], cc="cubic", ok=False)]
    _per, ci, summ = repeat_tables(res, [1, 2])
    f0 = ci.row(0, named=True)
    assert f0["comparable"] is False and f0["diff_mean"] is None and f0["diff_bps_mean"] is None
    assert f0["live_bps_mean"] == pytest.approx(10.5e6)
    assert summ["repeat_timing_ok"] == 1
    assert "not comparable" in repeat_text(ci)


TINY = (
    two_hosts("tiny", warmup="1s")
    + """
[[flow]]
name = "t1"
from = "a"
to = "b"
tcp = {}
[[flow]]
name = "t2"
from = "a"
to = "b"
tcp = {}
"""
)


@needs_live
def test_repeat_runs_each_repeat_and_summarises_with_intervals(tmp_path):
    p = tmp_path / "tiny.toml"
    p.write_text(TINY)
    out = tmp_path / "rep"
    cmd = [sys.executable, "-m", "qoslab", "live", str(p), "--repeat", "2", "--twin"]
    cmd += ["--seed", "5", "-o", str(out)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "repeat 1/2 (seed 5)" in run.stdout and "repeat 2/2 (seed 6)" in run.stdout
    assert "±" in run.stdout and "over 2 repeats" in run.stdout, run.stdout
    # Each repeat is a normal run folder with its own seed and twin.
    r1, r2 = load(out / "repeat-1"), load(out / "repeat-2")
    assert (r1.summary["seed"], r2.summary["seed"]) == (5, 6)
    assert "twin" in r1.tables and "twin" in r2.tables
    s = load(out)
    ci, per = s.table("repeat_ci"), s.table("repeats")
    assert ci["flow"].to_list() == ["t1", "t2", "(total)"] and ci["n"].to_list() == [2, 2, 2]
    # The summary is the repeats' own numbers: the paired difference from each repeat's.
    for name in ("t1", "(total)"):
        live = [r.table("twin").filter(pl.col("flow") == name)["live_bps"][0] for r in (r1, r2)]
        sim = [r.table("twin").filter(pl.col("flow") == name)["sim_bps"][0] for r in (r1, r2)]
        row = ci.filter(pl.col("flow") == name).row(0, named=True)
        assert row["live_bps_mean"] == pytest.approx(sum(live) / 2)
        d = [b - a for a, b in zip(live, sim, strict=True)]
        assert row["diff_bps_mean"] == pytest.approx(sum(d) / 2)
        assert row["diff_bps_ci95"] == pytest.approx(
            t_quantile(0.975, 1) * abs(d[0] - d[1]) / 2, rel=1e-9, abs=1e-6
        )
    assert per.height == 6
    from qoslab.report import write_report

    html = write_report(out).read_text()
    assert "mean ± 95 % CI over the repeats" in html and "±" in html

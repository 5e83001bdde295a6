"""Flow groups (``count`` and ``group`` on a ``[[flow]]``) and the DiffServ summaries
of a sweep; the worked example ``scenarios/examples/diffserv_study.toml`` turned into
a report with per-group figures and a per-colour drop table (issue 35, items 8, 9 and
the acceptance example)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import qoslab
from conftest import cli, small_text
from qoslab import ScenarioError
from qoslab.sweep import query, run_sweep

ROOT = Path(__file__).resolve().parents[1]
STUDY = ROOT / "scenarios" / "examples" / "diffserv_study.toml"


def _grouped(tmp_path: Path) -> Path:
    text = small_text("3s").replace(
        'name = "a"\n', 'name = "a"\ncount = 3\nstart_jitter = "0.5s"\n'
    )
    text = text.replace('name = "b"\n', 'name = "b"\ngroup = "bee"\n')
    p = tmp_path / "g.toml"
    p.write_text(text)
    return p


def test_count_makes_copies_with_a_group_column(tmp_path):
    r = qoslab.run(_grouped(tmp_path))
    f = r.flows
    assert f["name"].to_list() == ["a-1", "a-2", "a-3", "b"]
    assert f["group"].to_list() == ["a", "a", "a", "bee"]
    g = r.by_group()
    row = g.filter(pl.col("group") == "a").row(0, named=True)
    assert row["flows"] == 3
    assert row["goodput_bps"] == pytest.approx(f["goodput_bps"][:3].sum())
    assert g["share"].sum() == pytest.approx(1.0)
    # the copies start at different times (start_jitter per copy), so they differ
    assert len(set(f["goodput_bytes"][:3].to_list())) > 1
    assert "group" in r.tables["series"].columns


@pytest.mark.parametrize("bad", ["0", "-1", '"3"', "1.5", "100001"])
def test_bad_count_is_a_scenario_error(tmp_path, bad):
    p = tmp_path / "b.toml"
    p.write_text(small_text("1s").replace('name = "a"\n', f'name = "a"\ncount = {bad}\n'))
    with pytest.raises(ScenarioError, match=r"flow\[0\]\.count"):
        qoslab.check(p)


def test_sweep_summarises_per_group_with_intervals(tmp_path):
    out = tmp_path / "sw"
    res = run_sweep(_grouped(tmp_path), out, seeds=3, grid={"link.2.rate": ["1Mbps", "2Mbps"]},
                    workers=1, progress=False)  # fmt: skip
    assert res.failed == 0
    g = pl.read_parquet(out / "summary_groups.parquet")
    assert set(g["group"]) == {"a", "bee"} and set(g["n"]) == {3}
    assert {"goodput_bps_mean", "goodput_bps_ci95", "share_mean", "share_ci95"} <= set(g.columns)
    # the group's mean is the mean over seeds of the per-seed sums of its flows
    flows = query(out, "SELECT * FROM flows")
    per_seed = (
        flows.filter((pl.col("group") == "a") & (pl.col("link.2.rate") == "1Mbps"))
        .group_by("seed")
        .agg(pl.col("goodput_bps").sum())
    )
    got = g.filter((pl.col("group") == "a") & (pl.col("link.2.rate") == "1Mbps"))
    assert got["goodput_bps_mean"][0] == pytest.approx(per_seed["goodput_bps"].mean())
    assert query(out, "SELECT count(*) AS n FROM summary_groups")["n"][0] == 4


def test_diffserv_study_report_without_sql(tmp_path):
    """The worked example, shortened: per-group figures with intervals and per-colour
    tables in the report, nothing written by hand."""
    out = tmp_path / "study"
    p = cli(
        "sweep", STUDY, "--set", "duration=8s", "--set", "warmup=3s", "--seeds", "2",
        "--grid", "conditioner.0.stages.0.cir=300kbps,900kbps",
        "-j", "1", "--no-progress", "-o", out, "--report", cwd=tmp_path, timeout=600,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    g = pl.read_parquet(out / "summary_groups.parquet")
    assert set(g["group"]) == {"EF", "A", "B", "C"}
    assert set(g["case"]) == {"srtcm", "trtcm", "tsw3cm"}
    c = pl.read_parquet(out / "summary_colours.parquet")
    assert {"green_pkts_mean", "yellow_pkts_mean", "red_pkts_mean"} <= set(c.columns)
    d = pl.read_parquet(out / "summary_colour_drops.parquet")
    assert {"dropped_green_mean", "dropped_red_ci95"} <= set(d.columns)
    html = (out / "report.html").read_text()
    assert "goodput per group vs committed rate (conditioner 0, stage 0)" in html
    assert "Queue drops per colour" in html and "Packets of each colour per meter" in html
    assert "tsw3cm" in html
    # a higher committed rate gives aggregate A more green packets (srTCM)
    af1 = c.filter((pl.col("case") == "srtcm") & (pl.col("place") == "a->r1"))
    green = dict(zip(af1["conditioner.0.stages.0.cir"], af1["green_pkts_mean"], strict=True))
    assert green["900kbps"] > 1.5 * green["300kbps"]


def test_run_report_draws_the_rio_colour_averages(tmp_path):
    from qoslab.report import expected_figures, write_report

    r = qoslab.run(ROOT / "scenarios/examples/diffserv_ef_af_be.toml", {"duration": "8s"})
    qcs = r.tables["queue_colour_samples"]
    assert {"avg_green", "avg_yellow", "avg_red"} <= set(qcs.columns)
    d = r.save(tmp_path / "run")
    assert "colour-averages" in expected_figures(qoslab.load(d))
    html = write_report(d).read_text()
    assert "per-colour averages of the RIO/WRED queues" in html
    assert (d / "figures" / "colour-averages.png").is_file()

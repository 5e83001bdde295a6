"""``qoslab plot``: any table of a run or sweep folder, one column against another, the
mean and its 95 % interval where rows share an x, and errors that name the table and
list its columns."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import polars as pl
import pytest

from conftest import cli, small_text
from qoslab.api import run
from qoslab.quickplot import aggregate, load_table, quick_plot
from qoslab.sweep import run_sweep
from qoslab.tables import t_quantile

SWEEP = """
[sweep]
seeds = 3
[sweep.grid]
"link.2.rate" = ["500kbps", "1Mbps"]
"""


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("qp")
    sc = d / "s.toml"
    sc.write_text(small_text(duration="2s") + SWEEP)
    run(sc).save(d / "run")
    run_sweep(sc, d / "sw", progress=False, log=lambda m: None, workers=1)
    return d / "run", d / "sw"


def test_aggregate_gives_mean_and_student_t_interval():
    df = pl.DataFrame({"x": [1, 1, 1, 2], "g": ["a", "a", "a", "a"], "y": [1.0, 2.0, 6.0, 5.0]})
    a = aggregate(df, "x", "y", "g")
    assert a["n"].to_list() == [3, 1]
    assert a["mean"].to_list() == [3.0, 5.0]
    sd = math.sqrt(((1 - 3) ** 2 + (2 - 3) ** 2 + (6 - 3) ** 2) / 2)
    assert a["ci95"][0] == pytest.approx(t_quantile(0.975, 2) * sd / math.sqrt(3))
    assert a["ci95"][1] == 0.0


def test_a_sweep_plots_the_mean_over_seeds_against_the_swept_value(folders):
    _, sw = folders
    fig = quick_plot(sw, "link.2.rate", "goodput_bps", by="name")
    ax = fig.axes[0]
    # one line per flow, at the swept rates' numeric values, with the seeds' mean
    flows = load_table(sw, "flows")
    bars = {c.get_label(): c for c in ax.containers}
    assert sorted(bars) == sorted(flows["name"].unique().to_list()) == ["a", "b"]
    a = bars["a"].lines[0]
    assert sorted(a.get_xdata()) == [500e3, 1e6]
    want = flows.filter((pl.col("name") == "a") & (pl.col("link.2.rate") == "1Mbps"))
    assert want.height == 3
    assert dict(zip(a.get_xdata(), a.get_ydata(), strict=True))[1e6] == pytest.approx(
        want["goodput_bps"].mean()
    )
    assert bars["a"].has_yerr
    assert "95 % CI" in ax.get_ylabel()


def test_the_cli_writes_the_image_and_names_a_wrong_column_with_the_list(folders, tmp_path):
    rdir, sw = folders
    out = tmp_path / "g.png"
    p = cli("plot", sw, "--x", "link.2.rate", "--y", "goodput_bps", "--by", "name", "-o", out)
    assert p.returncode == 0, p.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    p = cli("plot", rdir, "--x", "t", "--y", "goodput", "--table", "series", cwd=tmp_path)
    assert p.returncode != 0
    assert "table 'series' has no column 'goodput' (--y)" in p.stderr
    assert "its columns: flow, t, goodput_bps, cum_bytes" in p.stderr
    p = cli("plot", rdir, "--x", "flow", "--y", "name", cwd=tmp_path)
    assert "table 'flows': column 'name' (--y) holds String, not numbers" in p.stderr
    p = cli("plot", rdir, "--x", "t", "--y", "goodput_bps", "--table", "serie", cwd=tmp_path)
    assert "has no table 'serie'; its tables:" in p.stderr and "series" in p.stderr
    # the default name, in the current folder
    p = cli("plot", rdir, "--x", "t", "--y", "goodput_bps", "--table", "series", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "series-goodput_bps-vs-t.png").is_file()


def test_text_on_x_gives_points_not_lines(folders):
    rdir, _ = folders
    fig = quick_plot(rdir, "name", "goodput_bps")
    (bar,) = fig.axes[0].containers
    assert bar.lines[0].get_linestyle() == "None"
    assert list(bar.lines[0].get_xdata()) == [0.0, 1.0]
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["a", "b"]


def test_a_count_table_adds_up_within_a_run_and_counts_runs_without_rows_as_zero(tmp_path):
    """``drops`` has a row per place and cause that saw any: a seed with no drop at a
    place has no row there, and must count as 0 in the mean over seeds (it was left out,
    so the mean came out higher), and two causes at one place add up (they were
    averaged). The reference is the queues table, which has a row for every run."""
    from qoslab.quickplot import aggregate, load_table, quick_plot, totals

    out = tmp_path / "sw"
    sc = Path(__file__).resolve().parents[1] / "scenarios/examples/drop_events.toml"
    run_sweep(sc, out, seeds=5, overrides={"duration": "3s"}, progress=False,
              log=lambda m: None, workers=1)  # fmt: skip
    x = "conditioner.0.stages.0.rate"
    drops = load_table(out, "drops")
    got = aggregate(totals(out, drops, x, "packets", "place"), x, "packets", "place")
    q = load_table(out, "queues").filter(pl.col("iface") == "r1->r2")
    want = dict(q.group_by(x).agg(pl.col("dropped").mean()).iter_rows())
    r12 = got.filter(pl.col("place") == "r1->r2")
    assert r12["n"].to_list() == [5] * r12.height  # every seed, with or without a row
    assert dict(zip(r12[x], r12["mean"], strict=True)) == pytest.approx(want)
    old = drops.filter(pl.col("place") == "r1->r2").group_by(x).agg(pl.len())
    assert old["len"].min() < 5  # a seed without a row there: the old mean's mistake
    fig = quick_plot(out, x, "goodput_bps", table="flows")  # two flows pooled: said so
    assert "--by name draws one line each" in fig.axes[0].get_title()


def test_a_corrupt_parquet_file_is_named_and_nothing_is_lost(folders, tmp_path):
    rdir, sw = folders
    for src, table, x, y in ((rdir, "flows", "name", "goodput_bps"),
                             (sw, "summary", "link.2.rate", "goodput_bps_mean")):  # fmt: skip
        d = tmp_path / src.name
        shutil.copytree(src, d)
        bad = d / f"{table}.parquet"
        damaged = bad.read_bytes()[:100]  # cut short: no Parquet footer
        bad.write_bytes(damaged)
        before = {f: f.read_bytes() for f in d.rglob("*") if f.is_file()}
        p = cli("plot", d, "--table", table, "--x", x, "--y", y, cwd=tmp_path)
        assert p.returncode == 2, p.stderr
        assert "Traceback" not in p.stderr and "internal error" not in p.stderr, p.stderr
        assert f"{bad}: corrupt or not a Parquet file" in p.stderr, p.stderr
        # nothing written, nothing removed, the damaged file as it was
        assert not list(tmp_path.glob("*.png"))
        assert {f: f.read_bytes() for f in d.rglob("*") if f.is_file()} == before

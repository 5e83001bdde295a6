"""A DiffServ study answered from ``qoslab sweep … --report`` and the catalog alone:
per-class goodput with intervals, queue drops per class and colour (best effort's
never green), goodput against RTT per group with Jain's index, the run report's group
table and curves, and report tables with "mean ± CI" and a unit on every number. The
study is ``scenarios/examples/diffserv_classes_study.toml``, shortened."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

import qoslab
from conftest import cli
from qoslab.report import write_report
from qoslab.studies import class_colour_drops, group_fairness
from qoslab.sweep import query
from qoslab.tables import column_unit

ROOT = Path(__file__).resolve().parents[1]
STUDY = ROOT / "scenarios" / "examples" / "diffserv_classes_study.toml"
CIR = "conditioner.0.stages.0.cir"


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> Path:
    """The study, 6 s of which 2 s warm-up, 2 seeds, AF1's committed rate at two values."""
    tmp = tmp_path_factory.mktemp("study")
    out = tmp / "study"
    p = cli(
        "sweep", STUDY, "--set", "duration=6s", "--set", "warmup=2s", "--seeds", "2",
        "--grid", f"{CIR}=500kbps,1.5Mbps", "-j", "1", "--no-progress", "-o", out, "--report",
        cwd=tmp, timeout=600,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    return out


def test_best_effort_drops_are_never_green_in_a_run():
    """The engine counts the drops of best effort (DSCP 0, unmetered) as colour "none":
    the BE class loses packets, none of them green; the AF classes lose none "none"."""
    r = qoslab.run(STUDY, {"duration": "6s", "warmup": "2s"})
    c = r.tables["classes"].filter(pl.col("iface") == "r1->r2")
    be = c.filter(pl.col("class") == "be").row(0, named=True)
    assert be["dropped"] > 0
    assert be["dropped_green"] == 0 and be["dropped_none"] == be["dropped"]
    af = c.filter(pl.col("class").is_in(["af1", "af2"]))
    assert af["dropped_none"].sum() == 0 and af["dropped_red"].sum() > 0
    cd = r.tables["colour_drops"].filter(pl.col("iface") == "r1->r2").row(0, named=True)
    assert cd["dropped_none"] == c["dropped_none"].sum()
    assert cd["dropped_green"] == c["dropped_green"].sum()


def test_class_colour_drops_splits_classes_and_keeps_none_apart():
    """Per class with per-class queues, per interface otherwise; a colour a result lacks
    counts 0; ``dropped`` is the sum of the four."""
    classes = pl.DataFrame({
        "run": ["a"] * 2, "iface": ["q"] * 2, "class": ["af1", "be"],
        "dropped_green": [1, 0], "dropped_yellow": [2, 0], "dropped_red": [3, 0],
        "dropped_none": [0, 7],
    })  # fmt: skip
    drops = pl.DataFrame({
        "run": ["a", "a"], "iface": ["q", "rio"], "dropped_green": [1, 4],
        "dropped_yellow": [2, 0], "dropped_red": [3, 5], "dropped_none": [7, 0],
    })  # fmt: skip
    t = class_colour_drops(classes, drops, ["run"]).sort("iface", "class")
    assert t["class"].to_list() == ["af1", "be", ""]
    assert t["dropped_none"].to_list() == [0, 7, 0]
    assert t["dropped_green"].to_list() == [1, 0, 4]
    assert t["dropped"].to_list() == [6, 7, 9]
    old = class_colour_drops(pl.DataFrame(), drops.drop("dropped_none"), ["run"])
    assert old["dropped_none"].to_list() == [0, 0]


def test_jain_per_group():
    f = pl.DataFrame({"run": ["a"] * 4, "group": ["x", "x", "y", "y"],
                      "goodput_bps": [1.0, 1.0, 3.0, 0.0]})  # fmt: skip
    j = dict(group_fairness(f, ["run"]).select("group", "jain").iter_rows())
    assert j["x"] == pytest.approx(1.0) and j["y"] == pytest.approx(0.5)


def test_sweep_answers_the_study_from_its_tables(study):
    # per-class goodput with intervals
    c = pl.read_parquet(study / "summary_classes.parquet")
    assert {"goodput_bps_mean", "goodput_bps_ci95"} <= set(c.columns)
    assert {"EF", "AF1", "AF2", "BE"} <= set(c["class"])
    # drops per class and colour, with intervals, summing the runs' class counters
    d = pl.read_parquet(study / "summary_colour_drops.parquet")
    assert set(d["class"]) == {"ef", "af1", "af2", "be"} and set(d["case"]) == {"srtcm", "trtcm"}
    for col in ("green", "yellow", "red", "none"):
        assert {f"dropped_{col}_mean", f"dropped_{col}_ci95"} <= set(d.columns)
    be = d.filter(pl.col("class") == "be")
    assert be["dropped_green_mean"].sum() == 0 and be["dropped_none_mean"].sum() > 0
    raw = query(study, "SELECT \"case\", seed, sum(dropped_none) AS n FROM classes "
                       f"WHERE class = 'be' AND \"{CIR}\" = '500kbps' GROUP BY ALL")  # fmt: skip
    got = be.filter(pl.col(CIR) == "500kbps").sort("case")["dropped_none_mean"].to_list()
    want = raw.group_by("case").agg(pl.col("n").mean()).sort("case")["n"].to_list()
    assert got == pytest.approx(want)
    # goodput against RTT per group: the per-flow summary names group and added delay
    s = pl.read_parquet(study / "summary.parquet")
    assert {"flow_group", "extra_delay_mean", "srtt_mean"} <= set(s.columns)
    af1 = s.filter((pl.col("flow_group") == "AF1") & (pl.col("case") == "srtcm")
                   & (pl.col(CIR) == "500kbps")).sort("extra_delay_mean")  # fmt: skip
    assert af1.height == 10
    assert af1["extra_delay_mean"].to_list() == pytest.approx([i / 100 for i in range(10)])
    # Jain's index per group, within its bounds
    g = pl.read_parquet(study / "summary_groups.parquet")
    jain = g.filter(pl.col("group") != "EF")["jain_mean"]
    assert jain.min() >= 0.1 - 1e-9 and jain.max() <= 1 + 1e-9
    assert g.filter(pl.col("group") == "EF")["jain_mean"].to_list() == pytest.approx([1.0] * 4)
    # and the catalog has them as tables
    n = query(study, "SELECT count(*) AS n FROM summary_colour_drops")["n"][0]
    assert n == d.height


def test_sweep_report_shows_the_study_first(study):
    html = (study / "report.html").read_text()
    assert '<nav class="toc">' in html
    for f in ("colour_drops-bars", "colours-bars", "goodput-vs-rtt", "first-run-group-goodput"):
        assert f'src="figures/{f}.svg"' in html, f
        assert (study / "figures" / f"{f}.svg").is_file()
    assert "Queue drops per colour and class" in html
    assert "Goodput against RTT per flow group" in html
    # "mean ± CI" side by side: no interval or std column in any header, units on means
    heads = re.findall(r"<th[^>]*>(.*?)</th>", html)
    assert heads and not [h for h in heads if "_ci95" in h or "_std" in h]
    assert 'dropped_none <span class="unit">[packets]</span>' in html
    assert 'goodput_bps <span class="unit">[bit/s]</span>' in html
    assert " ± " in html
    # a 41-flow run: one curve per group, not one per flow
    assert 'src="figures/first-run-goodput.svg"' not in html
    assert "goodput per flow group" in html


def test_report_figures_are_the_same_files_for_the_same_results(study):
    # the report written again, in this process (the command wrote it in another): the
    # same SVG bytes (no date, element ids from a fixed salt)
    first = {f.name: f.read_bytes() for f in (study / "figures").glob("*.svg")}
    assert len(first) >= 8
    assert not [b for b in first.values() if b"<dc:date>" in b]
    write_report(study)
    again = {f.name: f.read_bytes() for f in (study / "figures").glob("*.svg")}
    assert [n for n in first if again.get(n) != first[n]] == []
    assert sorted(again) == sorted(first)


def test_units_of_rates_delays_and_fractions():
    assert column_unit("edge_drops_per_s") == "packets/s"
    assert column_unit("events_per_s") == "1/s"
    assert column_unit("delay_p99_mean") == "s"
    for c in ("mean", "p50", "jitter", "extra_delay_mean"):
        assert column_unit(c) == "s", c
    assert column_unit("dropped_none_ci95") == "packets"
    assert column_unit("share_mean") == "0–1"

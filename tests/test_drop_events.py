"""The per-packet drop log from Python: ``Result.drop_events`` adds up to the ``drops``,
``queues`` and ``flows`` tables, names flow groups like the other per-flow tables,
survives a saved run, and is a view of the sweep catalog where the same sums hold per
run."""

from __future__ import annotations

import json

import polars as pl
import pytest

from qoslab import load
from qoslab.api import example, run
from qoslab.sweep import open_catalog, run_sweep

SHORT = {"duration": "4s", "warmup": "1s"}


@pytest.fixture(scope="module")
def result():
    return run(example("drop_events"), {**SHORT, "flow.cbr.group": "video"})


def test_rows_add_up_to_the_drops_queues_and_flows_tables(result, tmp_path):
    ev = result.drop_events
    assert set(ev["cause"]) >= {"policed", "red_early", "overflow"}
    assert set(ev["action"]) == {"drop", "mark"}
    drops = ev.filter(pl.col("action") == "drop")
    by_place = drops.group_by("place", "cause").len().rename({"len": "packets"})
    want = result.drops.select("place", "cause", "packets").cast({"packets": pl.UInt32})
    assert by_place.sort("place", "cause").equals(want.sort("place", "cause"))
    marks = ev.filter(pl.col("action") == "mark").group_by("iface").len()
    q = result.queues.filter(pl.col("ecn_marked") > 0)
    assert dict(marks.iter_rows()) == dict(q.select("iface", "ecn_marked").iter_rows())
    per_flow = dict(drops.group_by("name").len().iter_rows())
    assert per_flow == {n: d for n, d in result.flows.select("name", "drops").iter_rows() if d}
    # the flow's group beside its name, as in the other per-flow tables
    assert ev.columns[:4] == ["t", "flow", "name", "group"]
    assert set(ev.filter(pl.col("name") == "cbr")["group"]) == {"video"}
    assert result.summary["drop_events"] == ev.height
    # a saved run keeps the table
    again = load(result.save(tmp_path / "r"))
    assert again.drop_events.equals(ev)


def test_off_by_default_and_limited(result):
    assert run(
        example("drop_events"), {**SHORT, "record.drop_events": False}
    ).drop_events.is_empty()
    r = run(example("drop_events"), {**SHORT, "record.drop_events_limit": 50})
    assert r.drop_events.height == 50
    assert r.summary["drop_events_left_out"] == result.drop_events.height - 50
    assert any("record.drop_events_limit" in w for w in r.summary["warnings"])


def test_the_sweep_catalog_has_the_drop_log(tmp_path):
    out = tmp_path / "sw"
    grid = {"conditioner.0.stages.0.rate": ["1Mbps", "2Mbps"]}
    run_sweep(example("drop_events"), out, seeds=1, grid=grid, overrides=SHORT,
              progress=False, log=lambda m: None, workers=1)  # fmt: skip
    con = open_catalog(out)
    try:
        got = con.sql(
            'SELECT d.run, d."conditioner.0.stages.0.rate", d.place, d.cause, count(*) AS n '
            "FROM drop_events d WHERE action = 'drop' GROUP BY ALL ORDER BY ALL"
        ).fetchall()
        want = con.sql(
            'SELECT run, "conditioner.0.stages.0.rate", place, cause, packets FROM drops '
            "ORDER BY ALL"
        ).fetchall()
    finally:
        con.close()
    assert got == want
    assert {r[1] for r in got} == {"1Mbps", "2Mbps"}


def test_a_sweep_says_when_runs_cut_their_drop_log_short(tmp_path):
    """A run's warnings reach the sweep's output, one line per kind with its count: a
    drop log cut short by record.drop_events_limit in every run was silent in a sweep
    (the catalog's drop_events then held 5 rows per run of about 250)."""
    from qoslab.sweep import run_warnings

    lines: list[str] = []
    out = tmp_path / "sw"
    grid = {"conditioner.0.stages.0.rate": ["1Mbps", "2Mbps"]}
    overrides = {**SHORT, "record.drop_events_limit": 5}
    run_sweep(example("drop_events"), out, seeds=1, grid=grid, overrides=overrides,
              progress=False, log=lines.append, workers=1)  # fmt: skip
    cut = [x for x in lines if "drop_events kept the first 5" in x]
    assert len(cut) == 1 and cut[0].startswith("warning: 2 of 2 runs: ")
    assert run_warnings(out) == [cut[0].removeprefix("warning: ")]
    # A run that gives one kind twice (two flows, say) is one run of that kind.
    f = next((out / "runs").glob("*/summary.json"))
    s = json.loads(f.read_text())
    s["warnings"] += [w.replace("first 5", "first 7") for w in s["warnings"]]
    f.write_text(json.dumps(s))
    assert run_warnings(out)[0].startswith("2 of 2 runs: ")
    quiet: list[str] = []
    run_sweep(example("drop_events"), tmp_path / "ok", seeds=1, grid=grid, overrides=SHORT,
              progress=False, log=quiet.append, workers=1)  # fmt: skip
    assert not [x for x in quiet if "drop_events kept" in x]

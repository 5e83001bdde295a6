"""Sweep inputs: table-valued grid values get short labels (tables,
report, catalog); grid keys inside one another and grid points that collapse into one
run are errors naming both; numpy / range inputs are accepted, bad arguments and seeds
are ScenarioErrors raised before any run."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import qoslab
from conftest import cli, small_text
from qoslab import ScenarioError
from qoslab.sweep import open_catalog, run_sweep, value_label

COND = """
[[conditioner]]
at = "h1"
stages = [ { kind = "srtcm", cir = "1Mbps", cbs = 3000, ebs = 3000 } ]
"""


def _write(tmp_path: Path, extra: str = "", duration: str = "1s") -> Path:
    p = tmp_path / "s.toml"
    p.write_text(small_text(duration, extra))
    return p


def _runs(out: Path) -> pl.DataFrame:
    con = open_catalog(out)
    try:
        return pl.from_arrow(con.sql("SELECT * FROM runs ORDER BY run").to_arrow_table())
    finally:
        con.close()


def test_value_labels():
    assert value_label({"kind": "droptail", "limit": 20}) == "droptail-20"
    assert value_label({"kind": "red"}) == "red"
    assert value_label("2Mbps") == "2Mbps"
    assert value_label(3) == 3
    assert value_label([{"at": "h1", "stages": [{"kind": "srtcm", "cir": "1Mbps"}]}]) == (
        "h1-srtcm-1Mbps"
    )
    assert value_label({"name": "mine", "kind": "red"}) == "mine"


def test_readme_table_valued_grid_report(tmp_path):
    """The README's own example: --grid 'link.2.queue=[{…}, {…}]' --report (crashed
    with "unhashable type: 'dict'")."""
    sc = _write(tmp_path)
    out = tmp_path / "sw"
    p = cli(
        "sweep",
        sc,
        "--grid",
        'link.2.queue=[{kind="droptail", limit=20}, {kind="red"}]',
        "-j",
        "1",
        "--no-progress",
        "-o",
        out,
        "--report",
        cwd=tmp_path,
    )
    assert p.returncode == 0, p.stderr
    assert "internal error" not in p.stderr
    assert (out / "report.html").is_file()
    assert sorted(_runs(out)["link.2.queue"].to_list()) == ["droptail-20", "red"]
    s = pl.read_parquet(out / "summary.parquet")
    assert set(s["link.2.queue"].to_list()) == {"droptail-20", "red"}
    html = (out / "report.html").read_text()
    assert "droptail-20" in html
    # the plan keeps the values themselves beside their labels
    plan = json.loads((out / "sweep.json").read_text())
    assert {json.dumps(r["params"]["link.2.queue"], sort_keys=True) for r in plan["runs"]} == {
        '{"kind": "droptail", "limit": 20}',
        '{"kind": "red"}',
    }


def test_list_valued_and_named_grid_values(tmp_path):
    """Gridding a whole list (the conditioners) and naming table values by a table."""
    sc = _write(tmp_path, COND)
    out = tmp_path / "sw"
    two = [
        [{"at": "h1", "stages": [{"kind": "srtcm", "cir": "1Mbps", "cbs": 3000, "ebs": 3000}]}],
        [{"at": "h1", "stages": [{"kind": "srtcm", "cir": "2Mbps", "cbs": 3000, "ebs": 3000}]}],
    ]
    run_sweep(sc, out, grid={"conditioner": two}, workers=1, progress=False)
    assert sorted(_runs(out)["conditioner"].to_list()) == [
        "h1-srtcm-1Mbps-3000-3000",
        "h1-srtcm-2Mbps-3000-3000",
    ]
    from qoslab.report import write_report

    assert write_report(out).is_file()
    out2 = tmp_path / "sw2"
    named = {"dt20": {"kind": "droptail", "limit": 20}, "red": {"kind": "red"}}
    run_sweep(sc, out2, grid={"link.2.queue": named}, workers=1, progress=False)
    assert sorted(_runs(out2)["link.2.queue"].to_list()) == ["dt20", "red"]
    # and in the scenario file
    sc3 = _write(
        tmp_path,
        '[sweep.grid."link.2.queue"]\ndt20 = { kind = "droptail", limit = 20 }\n'
        'red = { kind = "red" }\n',
    )
    qoslab.check(sc3)
    assert len(qoslab.sweep.plan(*_spec(sc3))) == 2


def _spec(path):
    from qoslab.scenario import load
    from qoslab.sweep import SweepSpec

    sc = load(path)
    return sc, SweepSpec.from_scenario(sc)


def test_grid_key_inside_another_is_an_error_naming_both(tmp_path):
    sc = _write(
        tmp_path,
        COND
        + '[sweep.grid]\n"conditioner.0.stages.0.cir" = ["1Mbps", "2Mbps"]\n'
        + 'conditioner = [[{at = "h1", stages = [{kind = "srtcm", cir = "2Mbps", '
        + "cbs = 3000, ebs = 3000}]}], []]\n",
    )
    with pytest.raises(ScenarioError) as e:
        qoslab.check(sc)
    assert "conditioner.0.stages.0.cir" in str(e.value) and "'conditioner'" in str(e.value)
    p = cli("check", sc)
    assert p.returncode == 2 and "conditioner.0.stages.0.cir" in p.stderr
    assert "grid point(s)" not in p.stdout
    # the same place spelt two ways (by name and by index)
    with pytest.raises(ScenarioError, match=r"flow\.a\.cbr\.rate"):
        run_sweep(
            _write(tmp_path),
            tmp_path / "x",
            grid={"flow.a.cbr.rate": ["1Mbps"], "flow.0.cbr.rate": ["2Mbps"]},
            progress=False,
        )
    assert not (tmp_path / "x").exists()


def test_collapsing_grid_points_are_an_error(tmp_path):
    sc = _write(tmp_path)
    with pytest.raises(ScenarioError, match="run the same scenario") as e:
        run_sweep(
            sc,
            tmp_path / "x",
            grid={"link.2.rate": ["1Mbps", "2Mbps", "1Mbps"], "warmup": ["0.5s"]},
            progress=False,
        )
    # both points are named (by their labels: the repeated value's are told apart)
    assert "link.2.rate='1Mbps#1'" in str(e.value) and "link.2.rate='1Mbps#2'" in str(e.value)
    assert not (tmp_path / "x").exists()
    # a grid value equal to another after parsing, e.g. 1Mbps given twice
    with pytest.raises(ScenarioError, match="run the same scenario"):
        qoslab.sweep.plan(*_spec(_write(tmp_path, '[sweep.grid]\n"seed" = [1, 1]\n')))


def test_numpy_and_range_grid_values_and_seeds(tmp_path):
    sc = _write(tmp_path)
    out = tmp_path / "sw"
    res = run_sweep(
        sc,
        out,
        grid={"link.2.queue.limit": np.array([10, 30]), "flow.a.cbr.size": [np.int64(500)]},
        seeds=np.array([1, 2], dtype=np.uint64),
        workers=1,
        progress=False,
    )
    assert res.failed == 0 and res.summary is not None
    assert (out / "catalog.duckdb").is_file()
    assert sorted(set(_runs(out)["link.2.queue.limit"].to_list())) == [10, 30]
    res2 = run_sweep(sc, tmp_path / "sw2", grid={"link.2.queue.limit": range(10, 30, 10)},
                     seeds=range(3, 5), workers=1, progress=False)  # fmt: skip
    assert res2.total == 4 and res2.summary is not None
    r = qoslab.run(sc, {"link.2.queue.limit": np.int32(7)}, seed=np.uint64(3))
    assert r.summary["seed"] == 3


@pytest.mark.parametrize(
    "seeds", [[1, 2**64], [2**64 + 5], [-1], [1.5], ["1"], [True], "3", 0, 2**70]
)
def test_bad_seeds_are_refused_before_any_run(tmp_path, seeds):
    out = tmp_path / "sw"
    with pytest.raises(ScenarioError, match=r"sweep\.seeds"):
        run_sweep(_write(tmp_path), out, seeds=seeds, progress=False)
    assert not out.exists()


def test_seed_count_past_the_largest_seed_is_refused(tmp_path):
    sc = _write(tmp_path).read_text().replace("seed = 1", f"seed = {2**64 - 2}")
    (tmp_path / "t.toml").write_text(sc)
    with pytest.raises(ScenarioError, match=r"sweep\.seeds"):
        run_sweep(tmp_path / "t.toml", tmp_path / "sw", seeds=5, progress=False)
    assert not (tmp_path / "sw").exists()


def test_deep_grid_value_is_a_scenario_error(tmp_path):
    deep: object = 1
    for _ in range(2000):
        deep = [deep]
    with pytest.raises(ScenarioError, match="nest"):
        run_sweep(_write(tmp_path), tmp_path / "sw", grid={"link.2.rate": [deep]}, progress=False)
    with pytest.raises(ScenarioError, match="nest"):
        qoslab.run(_write(tmp_path), {"link.2.rate": deep})
    p = cli("check", _write(tmp_path), "--set", "link.2.rate=" + "[" * 2000 + "1" + "]" * 2000)
    assert p.returncode == 2 and "internal error" not in p.stderr


@pytest.mark.parametrize("bad", [None, b"x.toml", 3, ["a.toml"], ""])
def test_bad_scenario_argument_is_a_scenario_error(bad):
    for f in (qoslab.run, qoslab.check):
        with pytest.raises(ScenarioError, match="argument scenario"):
            f(bad)


@pytest.mark.parametrize("bad", [[("link.2.rate", "1Mbps")], "link.2.rate=1Mbps", 5])
def test_bad_overrides_and_grid_are_scenario_errors(tmp_path, bad):
    sc = _write(tmp_path)
    with pytest.raises(ScenarioError, match="argument overrides"):
        qoslab.run(sc, bad)
    with pytest.raises(ScenarioError, match="argument overrides"):
        run_sweep(sc, tmp_path / "sw", overrides=bad, progress=False)
    with pytest.raises(ScenarioError, match="argument grid"):
        run_sweep(sc, tmp_path / "sw", grid=bad, progress=False)
    assert not (tmp_path / "sw").exists()


def test_non_regular_and_huge_scenario_files_are_refused(tmp_path):
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    with pytest.raises(ScenarioError, match="not a regular file"):
        qoslab.check(fifo)  # would block reading
    with pytest.raises(ScenarioError, match="not a regular file"):
        qoslab.check("/dev/zero")  # would read without end
    big = tmp_path / "big.toml"
    with open(big, "wb") as f:
        f.truncate(qoslab.scenario.MAX_FILE_BYTES + 1)
    with pytest.raises(ScenarioError, match="larger than a scenario"):
        qoslab.check(big)
    p = cli("check", "/dev/zero", timeout=60)
    assert p.returncode == 2 and "not a regular file" in p.stderr


def test_a_mistake_in_the_scenario_is_named_as_its_own_not_as_the_grid_values(tmp_path):
    """A key the scenario itself gets wrong, outside the grid, is the scenario's error:
    the sweep blamed the first grid value ("grid value '1Mbps' is not valid (at
    conditioner[0]…)") where ``qoslab check`` named the scenario's key. A value that is
    wrong only with the grid still names the grid value."""
    bad = COND.replace("ebs = 3000", "ebs = 3000, bogus = 1")
    sc = _write(tmp_path, bad)
    with pytest.raises(ScenarioError) as e:
        run_sweep(sc, tmp_path / "x", grid={"link.0.rate": ["1Mbps", "2Mbps"]}, progress=False)
    assert "bogus" in str(e.value) and "grid value" not in str(e.value)
    grid = {"conditioner.0.stages.0.cir": ["1Mbps", "-5Mbps"]}
    with pytest.raises(ScenarioError) as e:
        run_sweep(_write(tmp_path, COND), tmp_path / "y", grid=grid, progress=False)
    assert "grid value '-5Mbps'" in str(e.value)

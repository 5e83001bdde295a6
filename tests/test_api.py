"""The Python API end to end on a small scenario."""

from __future__ import annotations

import json

import polars as pl
import pyarrow as pa
import pytest
import tomllib

import qoslab
from conftest import small_text
from qoslab import _core


def test_run_path_returns_tables(small):
    r = qoslab.run(small)
    assert isinstance(r.flows, pl.DataFrame)
    assert r.flows["name"].to_list() == ["a", "b"]
    for col in (
        "flow",
        "name",
        "kind",
        "src",
        "dst",
        "bytes_sent",
        "goodput_bytes",
        "goodput_bps",
        "drops",
    ):
        assert col in r.flows.columns
    assert {"flow", "t", "goodput_bps", "cum_bytes"} <= set(r.series.columns)
    # 1.2 Mb/s offered into 1 Mb/s: the bottleneck is full and drops.
    total = r.flows["goodput_bps"].sum()
    assert 0.85e6 < total <= 1.0e6
    assert r.flows["drops"].sum() > 0
    assert r.summary["events"] > 0 and r.summary["seed"] == 1
    assert isinstance(r.to_arrow("flows"), pa.Table)


def test_run_dict_equals_path(small):
    data = tomllib.loads(small.read_text())
    a, b = qoslab.run(small), qoslab.run(data)
    assert a.flows.equals(b.flows) and a.series.equals(b.series)


def test_overrides_by_index_and_name(small):
    base = qoslab.run(small)
    r = qoslab.run(small, overrides={"link.2.rate": "2Mbps", "flow.b.cbr.rate": "200kbps"})
    assert r.scenario["link"][2]["rate"] == "2Mbps"
    assert r.scenario["flow"][1]["cbr"]["rate"] == "200kbps"
    # No more congestion: no drops, and less goodput than offered only by warm-up edges.
    assert r.flows["drops"].sum() == 0
    assert r.flows["goodput_bps"].sum() != base.flows["goodput_bps"].sum()
    r2 = qoslab.run(small, overrides={"link[2].rate": "2Mbps", "flow[1].cbr.rate": "200kbps"})
    assert r2.flows.equals(r.flows)


def test_seed_is_deterministic_and_matters(small):
    a, b, c = qoslab.run(small, seed=7), qoslab.run(small, seed=7), qoslab.run(small, seed=8)
    assert a.summary["seed"] == 7
    assert a.flows.equals(b.flows)
    assert not a.series.equals(c.series)


def test_save_and_load_roundtrip(small, tmp_path):
    r = qoslab.run(small)
    d = r.save(tmp_path / "out")
    back = qoslab.load(d)
    for name, df in r.tables.items():
        assert back.tables[name].equals(df), name
    s = json.loads((d / "summary.json").read_text())
    for k in ("scenario_hash", "seed", "qoslab_version", "wall_s", "events"):
        assert k in s
    assert back.scenario == r.scenario
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_corrupt_results_name_the_file(small, tmp_path):
    d = qoslab.run(small).save(tmp_path / "out")
    (d / "flows.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(qoslab.ResultsError, match=r"flows\.parquet.*corrupt"):
        qoslab.load(d)
    (d / "summary.json").write_text("{ broken")
    with pytest.raises(qoslab.ResultsError, match=r"summary\.json.*corrupt"):
        qoslab.load(d)
    with pytest.raises(qoslab.ResultsError, match="not a finished"):
        qoslab.load(tmp_path / "nothing")


def test_scenario_error_names_file_and_key(small, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(small_text().replace('rate = "1Mbps"', 'rate = "-1Mbps"'))
    with pytest.raises(qoslab.ScenarioError) as ei:
        qoslab.run(bad)
    e = ei.value
    assert e.file == str(bad) and e.key == "link[2].rate"
    assert str(e).startswith(f"{bad}: link[2].rate: ")
    assert "positive" in e.detail
    with pytest.raises(qoslab.ScenarioError, match="no entry named 'zz'"):
        qoslab.run(small, overrides={"flow.zz.cbr.rate": "1Mbps"})


def test_exception_hierarchy():
    assert issubclass(qoslab.ScenarioError, qoslab.QoslabError)
    assert issubclass(qoslab.SimulationError, qoslab.QoslabError)
    assert issubclass(qoslab.ResultsError, qoslab.QoslabError)
    assert qoslab.ScenarioError.__module__ == "qoslab"


def test_panic_becomes_simulation_error():
    with pytest.raises(qoslab.SimulationError, match="panicked"):
        _core._panic_for_test()
    # The interpreter is still fine afterwards.
    assert _core.version() == qoslab.__version__


def test_check_does_not_run(small):
    sc = qoslab.check(small)
    assert sc.name == "small"
    with pytest.raises(qoslab.ScenarioError, match="duration"):
        qoslab.check({"node": []})


def test_gil_released_during_run(small):
    """Two runs in two threads overlap (the engine does not hold the GIL).

    A spinner thread counts 1 ms sleeps while the main thread runs the engine, and is
    compared with the same spinner while the main thread only sleeps as long: both
    counts shrink alike on a loaded machine, so the test does not depend on the load.
    With the GIL held for the whole run the spinner would get about no ticks."""
    import threading
    import time

    data = tomllib.loads(small_text("20000s"))

    def spin_during(work) -> int:
        ticks = 0
        done = threading.Event()

        def spin():
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                time.sleep(0.001)

        th = threading.Thread(target=spin)
        th.start()
        work()
        done.set()
        th.join()
        return ticks

    t0 = time.perf_counter()
    during_run = spin_during(lambda: qoslab.run(data))
    one = time.perf_counter() - t0
    during_sleep = spin_during(lambda: time.sleep(one))
    assert during_sleep >= 20, f"the machine gave the spinner {during_sleep} ticks in {one:.2f} s"
    assert during_run > 0.3 * during_sleep, (during_run, during_sleep, one)

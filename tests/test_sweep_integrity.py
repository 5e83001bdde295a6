"""Sweep integrity: verified resume, the folder lock, stale builds, grid checks before
running, a catalog that survives a move, and the documented Python snippet."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

import qoslab
from conftest import cli, small_text
from qoslab import _core
from qoslab.exceptions import OutputError
from qoslab.sweep import open_catalog, run_sweep

ROOT = Path(__file__).resolve().parents[1]


def _scenario(tmp_path: Path, extra: str = "") -> Path:
    p = tmp_path / "s.toml"
    p.write_text(small_text("2s", extra))
    return p


def _sweep(sc: Path, out: Path, **kw):
    logs: list[str] = []
    kw = {"seeds": 2, "workers": 1, "progress": False, **kw}
    return run_sweep(sc, out, log=logs.append, **kw), logs


def _rehash(run: Path, rel: str) -> None:
    """Updates the manifest entry of ``rel`` after a test edited that file on purpose."""
    m = json.loads((run / "manifest.json").read_text())
    data = (run / rel).read_bytes()
    m["files"][rel] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    (run / "manifest.json").write_text(json.dumps(m))


def test_resume_verifies_runs_and_redoes_damaged_ones(tmp_path):
    sc, out = _scenario(tmp_path), tmp_path / "out"
    res, _ = _sweep(sc, out, seeds=3)
    assert res.done == 3
    runs = sorted((out / "runs").iterdir())
    (runs[0] / "flows.parquet").unlink()
    with open(runs[1] / "series.parquet", "r+b") as f:
        f.truncate(100)
    res, logs = _sweep(sc, out, seeds=3)
    assert (res.done, res.skipped, res.damaged, res.failed) == (2, 1, 2, 0)
    assert len(logs) == 1 and "2 finished runs are damaged" in logs[0]
    assert "flows.parquet missing" in logs[0] and "series.parquet has 100 bytes" in logs[0]
    assert set(res.summary["n"]) == {3}  # every cell over all three seeds
    for r in runs:
        assert qoslab.load(r).flows.height == 2
    res, logs = _sweep(sc, out, seeds=3)
    assert (res.done, res.skipped, logs) == (0, 3, [])


def test_runs_record_the_build_and_other_builds_are_rerun(tmp_path):
    sc, out = _scenario(tmp_path), tmp_path / "out"
    _sweep(sc, out)
    runs = sorted((out / "runs").iterdir())
    for r in runs:
        s = json.loads((r / "summary.json").read_text())
        assert s["engine_build"] == _core.build_id()
        assert re.fullmatch(r"\d+\.\d+\.\d+\+[0-9a-f]{16}", s["engine_build"])
    s = json.loads((runs[0] / "summary.json").read_text())
    s["engine_build"] = "0.0.1+0123456789abcdef"
    (runs[0] / "summary.json").write_text(json.dumps(s))
    _rehash(runs[0], "summary.json")
    res, logs = _sweep(sc, out)
    assert (res.done, res.skipped, res.stale, res.damaged) == (1, 1, 1, 0)
    assert len(logs) == 1 and "another qoslab engine build" in logs[0]
    assert "0.0.1+0123456789abcdef" in logs[0]
    s = json.loads((runs[0] / "summary.json").read_text())
    assert s["engine_build"] == _core.build_id()


def test_second_sweep_is_refused_while_the_first_holds_the_lock(tmp_path):
    sc, out = _scenario(tmp_path), tmp_path / "out"
    _sweep(sc, out, seeds=1)
    lock = out / ".qoslab" / "lock"
    holder = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time()}
    lock.write_text(json.dumps(holder))
    with pytest.raises(OutputError, match=f"in use by another qoslab sweep \\(pid {os.getpid()}"):
        _sweep(sc, out, seeds=2)
    p = cli("sweep", sc, "-o", out, "--seeds", "2", "--no-progress")
    assert p.returncode == 2 and f"pid {os.getpid()} on {socket.gethostname()}" in p.stderr
    assert len(list((out / "runs").iterdir())) == 1  # nothing ran
    # The lock of a process that has ended is taken over, with a warning.
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    lock.write_text(json.dumps({**holder, "pid": dead.pid}))
    res, logs = _sweep(sc, out, seeds=2)
    assert res.done == 1 and any("taking over the lock" in m for m in logs)
    assert not lock.exists()  # released at the end
    # A live pid that is not the process that took the lock (the pid was reused).
    if Path(f"/proc/{os.getpid()}/stat").is_file():
        lock.write_text(json.dumps({**holder, "proc_start": 1}))
        res, logs = _sweep(sc, out, seeds=2)
        assert res.skipped == 2 and any("taking over the lock" in m for m in logs)


def test_failure_record_goes_when_the_run_succeeds(tmp_path):
    sc, out = _scenario(tmp_path), tmp_path / "out"
    _sweep(sc, out)
    key = sorted(p.name for p in (out / "runs").iterdir())[0]
    rec = out / "failed" / f"{key}.json"
    rec.write_text(json.dumps({"key": key, "error_type": "X", "error": "from another sweep"}))
    _sweep(sc, out)
    assert not rec.exists()
    with open_catalog(out) as con:
        assert con.sql("SELECT DISTINCT status FROM runs").fetchall() == [("done",)]


def test_every_grid_value_is_checked_before_any_run(tmp_path):
    sc, out = _scenario(tmp_path), tmp_path / "out"
    for grid, needles in [
        ({"link.2.rate": ["1Mbps", "fast"]}, ["link.2.rate", "'fast'"]),
        ({"link.2.rat": ["1Mbps"]}, ["link.2.rat", "rat"]),
        ({"link.2.queue": [{"kind": "droptail", "limit": 20}, {"kind": "nope"}]}, ["nope"]),
    ]:
        with pytest.raises(qoslab.ScenarioError) as e:
            _sweep(sc, out, grid=grid)
        for n in needles:
            assert n in str(e.value), (n, str(e.value))
        assert not out.exists()  # nothing created, nothing ran
    p = cli("sweep", sc, "--grid", "link.2.rate=1Mbps,fast", "-o", out, "--no-progress")
    assert p.returncode == 2 and "`link.2.rate`" in p.stderr and "'fast'" in p.stderr
    assert not out.exists()


def test_check_validates_the_sweep_table(tmp_path):
    good = _scenario(tmp_path, '[sweep]\nseeds = [3, 5]\n[sweep.grid]\n"link.2.rate" = ["1Mbps"]\n')
    p = cli("check", good, check=True)
    assert "1 grid point(s) × 2 seed(s)" in p.stdout
    bad = tmp_path / "bad.toml"
    bad.write_text(good.read_text().replace('["1Mbps"]', '["1Mbps", "-2Mbps"]'))
    p = cli("check", bad)
    assert p.returncode == 2 and "`link.2.rate`" in p.stderr and "-2Mbps" in p.stderr
    with pytest.raises(qoslab.ScenarioError, match="-2Mbps"):
        qoslab.check(bad)


def test_grid_takes_a_toml_array_and_seeds_a_list(tmp_path):
    sc, out = _scenario(tmp_path), tmp_path / "out"
    queues = '[{kind="droptail", limit=20}, {kind="red", min_th=5, max_th=15}]'
    p = cli(
        "sweep",
        sc,
        "--grid",
        f"link.2.queue={queues}",
        "--seeds",
        "3,5",
        "-j",
        "1",
        "-o",
        out,
        "--no-progress",
    )
    assert p.returncode == 0, p.stderr
    plan = json.loads((out / "sweep.json").read_text())
    assert plan["spec"]["seeds"] == [3, 5]
    assert [r["params"]["link.2.queue"]["kind"] for r in plan["runs"]] == ["droptail"] * 2 + [
        "red"
    ] * 2
    assert "4 done" in p.stdout
    p = cli("sweep", sc, "--seeds", "[3, 5]", "-o", out, "--grid", f"link.2.queue={queues}")
    assert p.returncode == 0 and "4 already finished" in p.stdout


def test_moved_sweep_folder_opens_and_queries(tmp_path):
    sc = _scenario(tmp_path)
    first = tmp_path / "first"
    _sweep(sc, first, grid={"link.2.rate": ["1Mbps", "2Mbps"]})
    moved = tmp_path / "elsewhere" / "copy"
    shutil.copytree(first, moved.parent / "tmp")
    (moved.parent / "tmp").rename(moved)
    shutil.rmtree(first)
    with open_catalog(moved) as con:
        for table in ("flows", "series", "drops", "queues"):
            cols = [d[0] for d in con.sql(f"SELECT * FROM {table} LIMIT 0").description]
            assert cols[:3] == ["run", "seed", "link.2.rate"], (table, cols)
        flows = pl.from_arrow(
            con.sql(
                'SELECT "link.2.rate" AS rate, count(*) AS n FROM flows GROUP BY 1 ORDER BY 1'
            ).to_arrow_table()
        )
    assert flows.to_dicts() == [{"rate": "1Mbps", "n": 4}, {"rate": "2Mbps", "n": 4}]
    p = cli("sql", moved, "SELECT count(*) AS n_rows FROM flows", cwd=tmp_path, check=True)
    assert "n_rows" in p.stdout and "8" in p.stdout
    p = cli("sql", moved, "SELECT nope FROM flows", cwd=tmp_path)
    assert p.returncode == 2 and "nope" in p.stderr and "Traceback" not in p.stderr
    # DuckDB's own client, started in the folder, reads the same views.
    import duckdb

    here = os.getcwd()
    os.chdir(moved)
    try:
        con = duckdb.connect("catalog.duckdb", read_only=True)
        assert con.sql("SELECT count(*) FROM flows").fetchall() == [(8,)]
        con.close()
    finally:
        os.chdir(here)


def test_one_worker_runs_in_process(tmp_path, monkeypatch):
    import concurrent.futures

    def no_pool(*a, **k):
        raise AssertionError("a process pool was started for one worker")

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", no_pool)
    monkeypatch.setattr("qoslab.sweep.pool.ProcessPoolExecutor", no_pool)
    res, _ = _sweep(_scenario(tmp_path), tmp_path / "out", workers=1)
    assert res.done == 2


def _readme_sweep_snippet() -> str:
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    return next(b for b in blocks if "run_sweep" in b)


@pytest.mark.parametrize("how", ["script", "stdin"])
def test_readme_python_snippet_runs_as_pasted(tmp_path, how):
    snippet = _readme_sweep_snippet()
    assert "if __name__" not in snippet  # as a user would paste it
    (tmp_path / "scenarios").symlink_to(ROOT / "scenarios")
    script = tmp_path / "snippet.py"
    script.write_text(snippet + "\nprint('SUMMARY', sw.summary.height, sw.done)\n")
    cmd = [sys.executable, str(script)] if how == "script" else [sys.executable, "-"]
    p = subprocess.run(
        cmd,
        cwd=tmp_path,
        input=None if how == "script" else script.read_text(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert re.search(r"SUMMARY [1-9]\d* [1-9]", p.stdout), p.stdout


def test_two_sweeps_at_once_one_is_refused(tmp_path):
    sc, out = _scenario(tmp_path), tmp_path / "out"
    sc.write_text(small_text("60s"))
    cmd = [sys.executable, "-m", "qoslab", "sweep", str(sc), "-o", str(out), "--seeds", "8"]
    first = subprocess.Popen([*cmd, "-j", "1", "--no-progress"], stderr=subprocess.DEVNULL)
    try:
        lock = out / ".qoslab" / "lock"
        deadline = time.monotonic() + 60
        while not lock.exists():
            assert first.poll() is None and time.monotonic() < deadline, "first sweep ended"
            time.sleep(0.01)
        with pytest.raises(OutputError) as e:
            _sweep(sc, out, seeds=8)
        assert first.poll() is None, "the first sweep ended before the second started"
        assert f"pid {first.pid} on {socket.gethostname()}" in str(e.value)
    finally:
        first.terminate()
        first.wait(timeout=120)
    # No failure records: the folder is missing when the first sweep was stopped before
    # it made one, or empty.
    failed = out / "failed"
    assert not failed.exists() or not any(failed.iterdir())
    res, _ = _sweep(sc, out, seeds=8)  # the first one's finished runs are kept
    assert res.done + res.skipped == 8 and res.failed == 0

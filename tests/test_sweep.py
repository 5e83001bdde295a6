"""Sweeps: planning, resume after a kill, failures recorded, Ray equals the local pool."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
import tomllib

import qoslab
from conftest import small_text
from qoslab.store import TABLES
from qoslab.sweep import open_catalog, query, run_sweep, t95

SWEEP = """
[sweep]
seeds = 3
[sweep.grid]
"link.2.rate" = ["1Mbps", "2Mbps"]
"""


def _scenario(tmp_path: Path, duration: str = "4s", extra: str = SWEEP) -> Path:
    p = tmp_path / "sw.toml"
    p.write_text(small_text(duration, extra))
    return p


def _catalog(out: Path, sql: str) -> pl.DataFrame:
    con = open_catalog(out)
    try:
        return pl.from_arrow(con.sql(sql).to_arrow_table())
    finally:
        con.close()


def test_sweep_table_grid_and_summary(tmp_path):
    sc = _scenario(tmp_path)
    res = run_sweep(sc, tmp_path / "out", workers=2, progress=False)
    assert (res.total, res.done, res.failed, res.skipped) == (6, 6, 0, 0)
    runs = _catalog(res.out, "SELECT * FROM runs ORDER BY run")
    assert runs.height == 6 and runs["run"].n_unique() == 6
    assert set(runs["status"]) == {"done"}
    flows = _catalog(res.out, 'SELECT "link.2.rate", seed, name, goodput_bps FROM flows')
    assert flows.height == 12
    s = res.summary
    assert s.height == 4 and {"goodput_bps_mean", "goodput_bps_ci95", "n"} <= set(s.columns)
    # The CI is t(n-1) * sd / sqrt(n) over the seeds of one cell.
    one = flows.filter((pl.col("link.2.rate") == "1Mbps") & (pl.col("name") == "a"))
    row = s.filter((pl.col("link.2.rate") == "1Mbps") & (pl.col("name") == "a"))
    sd = one["goodput_bps"].std()
    assert row["goodput_bps_mean"][0] == pytest.approx(one["goodput_bps"].mean())
    assert row["goodput_bps_ci95"][0] == pytest.approx(t95(2) * sd / 3**0.5)
    # Doubling the bottleneck raises total goodput.
    tot = s.group_by("link.2.rate").agg(pl.col("goodput_bps_mean").sum()).sort("link.2.rate")
    assert tot["goodput_bps_mean"][1] > 1.1 * tot["goodput_bps_mean"][0]
    # Rerun: everything is skipped, nothing redone.
    again = run_sweep(sc, tmp_path / "out", workers=2, progress=False)
    assert (again.done, again.skipped) == (0, 6)


def test_cli_flags_override_the_table(tmp_path):
    sc = _scenario(tmp_path)
    from conftest import cli

    p = cli(
        "sweep",
        sc,
        "--seeds",
        "2",
        "--grid",
        "flow.b.cbr.rate=100kbps,200kbps,300kbps",
        "-j",
        "2",
        "-o",
        tmp_path / "o",
        "--no-progress",
        check=True,
    )
    assert "12 runs: 12 done" in p.stdout
    runs = _catalog(tmp_path / "o", "SELECT * FROM runs")
    assert runs.select("link.2.rate", "flow.b.cbr.rate").unique().height == 6


def test_failed_run_is_recorded_and_others_finish(tmp_path):
    # A valid scenario whose runs with a tiny event budget fail while running.
    sc = _scenario(tmp_path, extra="")
    res = run_sweep(
        sc,
        tmp_path / "out",
        seeds=2,
        workers=2,
        progress=False,
        grid={"max_events": [10_000_000, 10, 20_000_000]},
    )
    assert (res.done, res.failed) == (4, 2)
    failed = sorted((tmp_path / "out" / "failed").glob("*.json"))
    assert len(failed) == 2
    rec = json.loads(failed[0].read_text())
    assert rec["error_type"] == "SimulationError" and "event budget" in rec["error"]
    assert rec["params"] == {"max_events": 10}
    runs = _catalog(res.out, "SELECT status, count(*) AS n FROM runs GROUP BY status ORDER BY 1")
    assert runs.to_dicts() == [{"status": "done", "n": 4}, {"status": "failed", "n": 2}]
    from conftest import cli

    p = cli(
        "sweep",
        sc,
        "--seeds",
        "2",
        "--grid",
        "max_events=10000000,10,20000000",
        "-o",
        tmp_path / "out",
        "--no-progress",
    )
    assert p.returncode == 1 and "4 already finished (skipped), 2 failed" in p.stdout


def _calibrated_duration(target_s: float) -> str:
    """A scenario duration whose run takes about ``target_s`` of wall time here."""
    data = tomllib.loads(small_text("50s"))
    t0 = time.perf_counter()
    qoslab.run(data)
    per_sim_s = (time.perf_counter() - t0) / 50
    return f"{max(4.0, target_s / per_sim_s):.0f}s"


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_killed_sweep_resumes_without_redoing(tmp_path, sig):
    grid = '[sweep]\nseeds = 6\n[sweep.grid]\n"link.2.rate" = ["1Mbps", "2Mbps"]\n'
    sc = _scenario(tmp_path, _calibrated_duration(0.4), extra=grid)
    out = tmp_path / "out"
    cmd = [
        sys.executable,
        "-m",
        "qoslab",
        "sweep",
        str(sc),
        "-j",
        "2",
        "-o",
        str(out),
        "--no-progress",
    ]
    log = (tmp_path / "first.log").open("w")
    proc = subprocess.Popen(cmd, start_new_session=True, stdout=log, stderr=log)
    runs = out / "runs"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        n = len(list(runs.glob("*/summary.json"))) if runs.is_dir() else 0
        if n >= 4:
            break
        assert proc.poll() is None, (tmp_path / "first.log").read_text()
        time.sleep(0.01)
    os.killpg(proc.pid, sig)
    proc.wait(timeout=60)
    log.close()
    time.sleep(0.5)  # let any orphaned worker die before we look
    finished = {p.parent.name: p.stat() for p in runs.glob("*/summary.json")}
    assert 4 <= len(finished) < 12, "the sweep finished before it could be killed"
    plan = json.loads((out / "sweep.json").read_text())["runs"]
    assert len(plan) == 12

    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert f"{12 - len(finished)} done, {len(finished)} already finished (skipped)" in p.stdout
    after = {d.name for d in runs.iterdir()}
    assert after == {r["key"] for r in plan}  # every run exactly once, no leftovers
    for key, st in finished.items():  # none redone
        now = (runs / key / "summary.json").stat()
        assert (now.st_ino, now.st_mtime_ns) == (st.st_ino, st.st_mtime_ns)
    cat = _catalog(out, "SELECT run, status FROM runs")
    assert cat.height == 12 and set(cat["status"]) == {"done"} and cat["run"].n_unique() == 12
    flows = _catalog(out, "SELECT run FROM flows")
    assert flows.height == 24


def _tables(out: Path) -> dict[str, dict[str, pl.DataFrame]]:
    res = {}
    for d in sorted((out / "runs").iterdir()):
        r = qoslab.load(d)
        res[d.name] = {n: r.tables[n] for n in (*TABLES, "captures") if n in r.tables}
    return res


def test_ray_gives_identical_tables(tmp_path):
    ray = pytest.importorskip("ray")
    # With a capture: its pcap bytes come back from the Ray workers.
    sc = _scenario(tmp_path, extra=SWEEP + '\n[[capture]]\niface = "r1->h3"\nfile = "bn.pcap"\n')
    local = run_sweep(sc, tmp_path / "local", workers=2, progress=False)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        remote = run_sweep(sc, tmp_path / "ray", ray="local", progress=False)
        nodes = {n["NodeID"] for n in ray.nodes()}
    finally:
        ray.shutdown()
    assert (local.done, remote.done, remote.failed) == (6, 6, 0)
    # which node ran what: the host and the Ray node id in every run's summary and in
    # the catalog; local runs name their host only
    import socket

    for d in (tmp_path / "ray" / "runs").iterdir():
        s = json.loads((d / "summary.json").read_text())
        assert s["host"] == socket.gethostname() and s["ray_node"] in nodes
    for d in (tmp_path / "local" / "runs").iterdir():
        assert "ray_node" not in json.loads((d / "summary.json").read_text())
    ran = query(tmp_path / "ray", "SELECT host, ray_node, count(*) AS n FROM runs GROUP BY ALL")
    assert ran.height == 1 and ran["n"][0] == 6 and ran["ray_node"][0] in nodes
    a, b = _tables(tmp_path / "local"), _tables(tmp_path / "ray")
    assert a.keys() == b.keys()
    for key in a:
        assert a[key].keys() == b[key].keys()
        for name in a[key]:
            assert a[key][name].equals(b[key][name]), (key, name)
        assert set(a[key]["captures"]["file"]) == {"pcap/bn.pcap"}
        pcap = (tmp_path / "local" / "runs" / key / "pcap" / "bn.pcap").read_bytes()
        assert len(pcap) > 24
        assert pcap == (tmp_path / "ray" / "runs" / key / "pcap" / "bn.pcap").read_bytes()
    assert local.summary.equals(remote.summary)


@pytest.mark.skipif(
    "forkserver" not in __import__("multiprocessing").get_all_start_methods(),
    reason="workers are forked from a fork server only where there is one",
)
def test_pool_workers_start_with_qoslab_already_imported(tmp_path):
    # Every sweep starts a pool; its workers come from a fork server that has qoslab
    # (polars, the engine) imported, so a worker spends next to no CPU before its first
    # run (importing them costs about 0.3 s of CPU per worker and sweep).
    from qoslab.scenario import load
    from qoslab.store import prepare_output
    from qoslab.sweep import SweepSpec, plan
    from qoslab.sweep.pool import _LocalPool

    sc = load(_scenario(tmp_path, "1s"))
    tasks = plan(sc, SweepSpec.from_scenario(sc, seeds=1))
    out = prepare_output(tmp_path / "o", "sweep")
    for t in tasks[:2]:  # the second pool: the fork server is already running
        pool = _LocalPool(1)
        try:
            status = next(pool.run([dict(vars(t))], out))
        finally:
            pool.close(False)
        assert status["ok"], status
        cpu = status["cpu_before_s"]
        assert cpu < 0.1, f"a new worker spent {cpu:.2f} s of CPU before its first run"


PRELOAD_AFTER_OTHER_POOL = """
import sys
from concurrent.futures import ProcessPoolExecutor

from qoslab.scenario import load
from qoslab.store import prepare_output
from qoslab.sweep import SweepSpec, plan, worker_context
from qoslab.sweep.pool import _LocalPool

if __name__ == "__main__":
    # Another pool of qoslab's (a report's) starts the process's one fork server first.
    with ProcessPoolExecutor(1, mp_context=worker_context()) as ex:
        ex.submit(int).result()
    sc = load(sys.argv[1])
    task = plan(sc, SweepSpec.from_scenario(sc, seeds=1))[0]
    pool = _LocalPool(1)
    try:
        status = next(pool.run([dict(vars(task))], prepare_output(sys.argv[2], "sweep")))
    finally:
        pool.close(False)
    print(status["cpu_before_s"])
"""


@pytest.mark.skipif(
    "forkserver" not in __import__("multiprocessing").get_all_start_methods(),
    reason="workers are forked from a fork server only where there is one",
)
def test_sweep_workers_are_preloaded_when_another_pool_started_the_fork_server(tmp_path):
    # The fork server is one per process and takes its preload list only when it
    # starts: a report's pool that started it without the list left every later sweep
    # worker importing polars and the engine itself (0.3 s of CPU each).
    import subprocess
    import sys

    script = tmp_path / "probe.py"
    script.write_text(PRELOAD_AFTER_OTHER_POOL)
    sc = _scenario(tmp_path, "1s")
    out = subprocess.run([sys.executable, str(script), str(sc), str(tmp_path / "o")],
                         capture_output=True, text=True, check=True)  # fmt: skip
    cpu = float(out.stdout.split()[-1])
    assert cpu < 0.1, f"a sweep worker spent {cpu:.2f} s of CPU before its first run"


def test_outcome_reports_time_in_the_workers_tasks(tmp_path):
    res = run_sweep(_scenario(tmp_path), tmp_path / "o", seeds=2, workers=1, progress=False)
    assert res.done == 4
    # The engine call, then writing the run: the task's time holds both.
    assert res.call_s > 0 and res.task_s > res.call_s
    assert res.task_s < res.wall_s


def test_gather_reads_all_runs_at_once_into_the_same_frame(tmp_path):
    # gather reads every run's file in one call; the frame is the one file-by-file
    # reading gives (leading run, seed and params columns with their types, row order).
    from qoslab.sweep import gather, load_tasks
    from qoslab.sweep.summary import _with_params

    out = tmp_path / "o"
    run_sweep(_scenario(tmp_path), out, seeds=2, workers=1, progress=False)
    tasks = load_tasks(out)
    for table in ("flows", "queues", "traces"):
        one_by_one = pl.concat(
            [
                _with_params(pl.read_parquet(out / "runs" / t.key / f"{table}.parquet"), t)
                for t in tasks
            ],
            how="diagonal_relaxed",
        )
        got = gather(out, table)
        assert got.schema == one_by_one.schema and got.equals(one_by_one), table
    assert gather(out, "no_such_table").is_empty()

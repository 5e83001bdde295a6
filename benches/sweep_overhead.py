"""Overhead of the sweep machinery: how much of a sweep's wall time is spent outside
the engine (process pool, scenario handling, result conversion, Parquet writes,
catalog and summary).

    python benches/sweep_overhead.py [--runs 100] [--workers 1] [--engine-s 1.0]
    python benches/sweep_overhead.py --scenario scenarios/p1/t1-2mbps.toml --runs 200 --workers 2

Each run is the two-CBR example scaled so that one run keeps the engine busy for about
``--engine-s`` seconds (a "one-second run"); seeds differ so every run is real work.
With ``--scenario`` the runs are that scenario as it is (its grid, ``--runs`` runs in all),
e.g. one cell of P1's Table 1.
The share outside the engine is ``1 - (sum of engine wall times / workers) / sweep wall
time``; the per-run overhead in milliseconds is printed too, since it is what matters
for runs much shorter than a second. Target: under 10 %.

The per-run overhead is then split, by timing each part again on its own after the
sweep: handing the tables over from Rust (``_core.run`` less the engine), writing a
run's Parquet files and manifest, and the sweep's summary and DuckDB catalog (once per
sweep, shown per run); the rest is the process pool and Python bookkeeping. Last, the
CPU a pool worker spends starting (imports) before its first run, once per sweep and
worker.
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

import qoslab
from qoslab.api import run_resolved
from qoslab.scenario import load
from qoslab.store import new_stage, prepare_output, write_run
from qoslab.sweep import (
    SweepSpec,
    build_catalog,
    gather,
    plan,
    run_sweep,
    summarise,
)
from qoslab.sweep.pool import _LocalPool

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "examples" / "two_cbr.toml"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--engine-s", type=float, default=1.0, help="engine time per run [s]")
    ap.add_argument("--scenario", type=Path, help="sweep this scenario as it is instead")
    a = ap.parse_args()

    if a.scenario is None:
        scenario = SCENARIO
        # Calibrate: simulated seconds per engine-second on this machine.
        probe = qoslab.run(SCENARIO, overrides={"duration": "100s"})
        sim_per_s = 100 / probe.summary["wall_s"]
        duration = max(1.0, a.engine_s * sim_per_s)
        overrides = {"duration": f"{duration:.1f}s"}
        seeds = a.runs
    else:
        scenario = a.scenario
        overrides = {}
        sc0 = load(scenario)
        points = len(plan(sc0, SweepSpec.from_scenario(sc0, seeds=1)))  # grid points
        seeds = max(1, a.runs // points)
        duration = float(str(sc0.data.get("duration", "0")).removesuffix("s") or 0)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "sweep"
        t0 = time.perf_counter()
        res = run_sweep(
            scenario,
            out,
            seeds=seeds,
            workers=a.workers,
            overrides=overrides,
            progress=False,
        )
        wall = time.perf_counter() - t0
        # The parts, again on their own: summary + catalog once per sweep, Parquet per run.
        t1 = time.perf_counter()
        summarise(out)
        t2 = time.perf_counter()
        build_catalog(out)
        t3 = time.perf_counter()
        summary_s, catalog_s = t2 - t1, t3 - t2
        for table in ("flows", "trc", "drops"):  # what `qoslab reproduce p1-t1` reads back
            gather(out, table)
        gather_s = time.perf_counter() - t3
        sc = load(scenario).with_overrides(overrides)
        one = run_resolved(sc, 1)
        k = 10
        t4 = time.perf_counter()
        for i in range(k):
            stage = new_stage(Path(tmp) / "w" / ".qoslab", f"r{i}")
            write_run(Path(tmp) / "w" / "runs" / f"r{i}", one, stage, extra={"params": {}})
        parquet_ms = (time.perf_counter() - t4) / k * 1e3
    runs = res.total
    assert res.done == runs, res.line()
    busy = res.engine_s / a.workers
    share = 1 - busy / wall
    per_run_ms = (wall - busy) * a.workers / runs * 1e3
    print(
        f"{runs} runs of {duration:.0f} simulated s (~{res.engine_s / runs:.2f} s engine "
        f"each), {a.workers} worker(s)"
    )
    print(f"sweep wall {wall:.2f} s, engine {res.engine_s:.2f} s")
    call_share = 1 - res.call_s / a.workers / wall
    print(
        f"outside the engine call (_core.run incl. building and handing over the tables): "
        f"{call_share * 100:.1f} %"
    )
    print(
        f"outside the engine loop: {share * 100:.1f} % of wall time "
        f"({per_run_ms:.1f} ms per run); target < 10 %"
    )
    handover_ms = (res.call_s - res.engine_s) / runs * 1e3
    sweep_ms = (summary_s + catalog_s) / runs * 1e3
    rest_ms = per_run_ms - handover_ms - parquet_ms - sweep_ms
    print(
        f"per run: {handover_ms:.1f} ms tables from Rust, {parquet_ms:.1f} ms Parquet + "
        f"manifest, {sweep_ms:.1f} ms summary + catalog ({summary_s:.2f} s + "
        f"{catalog_s:.2f} s per sweep), {rest_ms:.1f} ms pool and Python"
    )
    # Measured in the workers during the sweep (not again on their own):
    task_s = getattr(res, "task_s", math.nan)  # qoslab before this field: not measured
    in_task_ms = (task_s - res.call_s) / runs * 1e3
    between_ms = (wall * a.workers - task_s) / runs * 1e3
    print(
        f"in the workers, per run: {in_task_ms:.1f} ms writing the run and bookkeeping "
        f"around the engine call, {between_ms:.1f} ms between runs (pool dispatch, "
        "start-up, the driver's planning, summary and catalog, idle workers)"
    )
    print(
        f"reading flows, trc and drops back (gather): {gather_s:.2f} s "
        f"({gather_s / runs * 1e3:.1f} ms per run)"
    )
    # A fresh pool, as every sweep starts one: the CPU its worker spent before its run.
    with tempfile.TemporaryDirectory() as tmp:
        one_task = plan(sc, SweepSpec.from_scenario(sc, seeds=1))[0]
        pool = _LocalPool(1)
        try:
            status = next(pool.run([dict(vars(one_task))], prepare_output(Path(tmp), "sweep")))
        finally:
            pool.close(False)
    start_ms = status.get("cpu_before_s", math.nan) * 1e3  # nan: qoslab before the field
    print(
        f"worker start-up: {start_ms:.0f} ms of CPU per worker and sweep "
        f"({start_ms * a.workers / runs:.1f} ms per run of this sweep)"
    )


if __name__ == "__main__":
    main()

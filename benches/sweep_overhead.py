"""Overhead of the sweep machinery: how much of a sweep's wall time is spent outside
the engine (process pool, scenario handling, result conversion, Parquet writes,
catalog and summary).

    python benches/sweep_overhead.py [--runs 100] [--workers 1] [--engine-s 1.0]

Each run is the two-CBR example scaled so that one run keeps the engine busy for about
``--engine-s`` seconds (a "one-second run"); seeds differ so every run is real work.
The share outside the engine is ``1 - (sum of engine wall times / workers) / sweep wall
time``; the per-run overhead in milliseconds is printed too, since it is what matters
for runs much shorter than a second. Target: under 10 %.

The per-run overhead is then split, by timing each part again on its own after the
sweep: handing the tables over from Rust (``_core.run`` less the engine), writing a
run's Parquet files and manifest, and the sweep's summary and DuckDB catalog (once per
sweep, shown per run); the rest is the process pool and Python bookkeeping.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import qoslab
from qoslab.api import run_resolved
from qoslab.scenario import load
from qoslab.store import new_stage, write_run
from qoslab.sweep import build_catalog, run_sweep, summarise

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "examples" / "two_cbr.toml"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--engine-s", type=float, default=1.0, help="engine time per run [s]")
    a = ap.parse_args()

    # Calibrate: simulated seconds per engine-second on this machine.
    probe = qoslab.run(SCENARIO, overrides={"duration": "100s"})
    sim_per_s = 100 / probe.summary["wall_s"]
    duration = max(1.0, a.engine_s * sim_per_s)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "sweep"
        t0 = time.perf_counter()
        res = run_sweep(
            SCENARIO,
            out,
            seeds=a.runs,
            workers=a.workers,
            overrides={"duration": f"{duration:.1f}s"},
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
        sc = load(SCENARIO).with_overrides({"duration": f"{duration:.1f}s"})
        one = run_resolved(sc, 1)
        k = 10
        t4 = time.perf_counter()
        for i in range(k):
            stage = new_stage(Path(tmp) / "w" / ".qoslab", f"r{i}")
            write_run(Path(tmp) / "w" / "runs" / f"r{i}", one, stage, extra={"params": {}})
        parquet_ms = (time.perf_counter() - t4) / k * 1e3
    assert res.done == a.runs, res.line()
    busy = res.engine_s / a.workers
    share = 1 - busy / wall
    per_run_ms = (wall - busy) * a.workers / a.runs * 1e3
    print(
        f"{a.runs} runs of {duration:.0f} simulated s (~{res.engine_s / a.runs:.2f} s engine "
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
    handover_ms = (res.call_s - res.engine_s) / a.runs * 1e3
    sweep_ms = (summary_s + catalog_s) / a.runs * 1e3
    rest_ms = per_run_ms - handover_ms - parquet_ms - sweep_ms
    print(
        f"per run: {handover_ms:.1f} ms tables from Rust, {parquet_ms:.1f} ms Parquet + "
        f"manifest, {sweep_ms:.1f} ms summary + catalog ({summary_s:.2f} s + "
        f"{catalog_s:.2f} s per sweep), {rest_ms:.1f} ms pool and Python"
    )


if __name__ == "__main__":
    main()

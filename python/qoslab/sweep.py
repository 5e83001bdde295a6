"""Parameter sweeps: a grid of overrides × seeds, run in a local process pool or on Ray.

A sweep is described by a ``[sweep]`` table in the scenario, by CLI flags, or both
(flags win)::

    [sweep]
    seeds = 10                     # 10 seeds from the scenario's seed up, or a list [1, 5, 9]
    [sweep.grid]
    "link.0.rate" = ["5Mbps", "10Mbps"]
    "flow.cbr1.cbr.rate" = ["1Mbps", "2Mbps"]

Layout of a sweep directory::

    sweep.json          the plan: scenario file, grid, seeds, every run's key and params
    runs/<key>/         one finished run each (see qoslab.store); key = hash(scenario, seed)
    failed/<key>.json   a run that raised: its params, seed, error type and message
    summary.parquet     mean and 95 % CI across seeds, per grid point and flow
    catalog.duckdb      SQL over everything: tables runs and summary; views flows, series,
                        drops, queues, queue_samples, traces over the runs' Parquet files
                        (each with run key, seed and params)

Resuming (running the same sweep into the same directory) skips finished runs and
retries failed ones. A killed sweep leaves no half-written run behind.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import shutil
import signal
import sys
import time
import traceback
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from qoslab.exceptions import QoslabError, ResultsError, scenario_error
from qoslab.scenario import Scenario, apply_overrides, load, parse_key_path, run_key
from qoslab.store import TABLES, TMP_MARK, is_complete, write_run

__all__ = [
    "RunTask",
    "SweepOutcome",
    "SweepSpec",
    "build_catalog",
    "plan",
    "run_sweep",
    "summarise",
]

#: Metrics of the ``flows`` table summarised across seeds.
SUMMARY_METRICS = ("goodput_bps", "goodput_bytes", "bytes_sent", "drops")


@dataclass
class SweepSpec:
    """What to sweep: ``grid`` maps key paths to values; ``seeds`` lists the seeds."""

    grid: dict[str, list[Any]] = field(default_factory=dict)
    seeds: list[int] = field(default_factory=lambda: [1])

    @classmethod
    def from_scenario(
        cls,
        sc: Scenario,
        seeds: int | Sequence[int] | None = None,
        grid: Mapping[str, Sequence[Any]] | None = None,
    ) -> SweepSpec:
        """The scenario's ``[sweep]`` table, with ``seeds`` and ``grid`` laid over it."""
        table = dict(sc.sweep or {})
        unknown = set(table) - {"seeds", "grid"}
        if unknown:
            k = sorted(unknown)[0]
            raise scenario_error(sc.file, f"sweep.{k}", "unknown key; expected seeds or grid")
        g = table.get("grid", {})
        if not isinstance(g, dict) or not all(isinstance(v, list) and v for v in g.values()):
            raise scenario_error(
                sc.file, "sweep.grid", "expected a table of key path = [values, ...] (non-empty)"
            )
        g = dict(g)
        g.update({k: list(v) for k, v in (grid or {}).items()})
        for k in g:
            try:
                parse_key_path(k)
            except ValueError:
                raise scenario_error(
                    sc.file, f"sweep.grid.{k}", "not a key path like link.0.rate"
                ) from None
        s = seeds if seeds is not None else table.get("seeds", 1)
        if isinstance(s, bool) or not isinstance(s, (int, list, tuple)):
            raise scenario_error(sc.file, "sweep.seeds", "expected a count or a list of seeds")
        if isinstance(s, int):
            if s < 1:
                raise scenario_error(sc.file, "sweep.seeds", f"expected a count >= 1, found {s}")
            seed_list = [sc.seed + i for i in range(s)]
        else:
            seed_list = [int(x) for x in s]
        return cls(g, seed_list)


@dataclass
class RunTask:
    """One run of a sweep: resolved scenario data, seed, the grid point, its key."""

    key: str
    seed: int
    params: dict[str, Any]
    data: dict[str, Any]
    file: str | None


def plan(sc: Scenario, spec: SweepSpec) -> list[RunTask]:
    """Every (grid point × seed) run, in a stable order."""
    keys = list(spec.grid)
    tasks = []
    seen = set()
    for values in itertools.product(*(spec.grid[k] for k in keys)):
        params = dict(zip(keys, values, strict=True))
        data = apply_overrides(sc.data, params, file=sc.file)
        for seed in spec.seeds:
            key = run_key(data, seed)
            if key in seen:
                continue
            seen.add(key)
            tasks.append(RunTask(key, int(seed), params, {**data, "seed": int(seed)}, sc.file))
    return tasks


@dataclass
class SweepOutcome:
    """How a sweep went. ``summary`` is the mean/CI table (``None`` if nothing finished)."""

    out: Path
    total: int
    skipped: int
    done: int
    failed: int
    failures: list[dict[str, Any]]
    wall_s: float
    engine_s: float
    summary: pl.DataFrame | None = None
    #: Time inside ``_core.run`` calls (engine loop + building and handing over tables).
    call_s: float = 0.0

    def line(self) -> str:
        """One line for humans."""
        return (
            f"{self.total} runs: {self.done} done, {self.skipped} already finished (skipped), "
            f"{self.failed} failed; {self.wall_s:.1f}s -> {self.out}"
        )


# --------------------------------------------------------------------------- workers


def _execute(task: dict[str, Any], runs_dir: str | None) -> dict[str, Any]:
    """Runs one task. With ``runs_dir`` the worker writes the run directory itself (a
    shared file system); without, the result travels back to the driver (Ray)."""
    from qoslab.api import run_resolved

    t0 = time.perf_counter()
    status: dict[str, Any] = {"key": task["key"], "seed": task["seed"], "params": task["params"]}
    try:
        sc = Scenario(task["data"], task["file"])
        res = run_resolved(sc, task["seed"])
        status["engine_s"] = float(res.summary.get("wall_s", res.summary["call_s"]))
        status["call_s"] = float(res.summary["call_s"])
        extra = {"sweep_key": task["key"], "params": task["params"]}
        if runs_dir is not None:
            write_run(Path(runs_dir) / task["key"], res, extra=extra)
        else:
            res.summary.update(extra)
            status["result"] = (res.summary, res.tables, res.scenario)
        status["ok"] = True
    except Exception as e:  # recorded, never lost: the sweep goes on
        status.update(
            ok=False,
            error_type=type(e).__name__,
            error=str(e),
            traceback="" if isinstance(e, QoslabError) else traceback.format_exc(),
        )
    status["total_s"] = time.perf_counter() - t0
    return status


def _default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


class _LocalPool:
    def __init__(self, workers: int) -> None:
        import multiprocessing as mp

        method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
        self.ex = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context(method))

    def run(self, tasks: list[dict], runs_dir: Path):
        pending = {self.ex.submit(_execute, t, str(runs_dir)) for t in tasks}
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in done:
                yield f.result()

    def close(self, abort: bool) -> None:
        if abort:
            procs = list((getattr(self.ex, "_processes", None) or {}).values())
            self.ex.shutdown(wait=False, cancel_futures=True)
            for p in procs:
                p.terminate()
        else:
            self.ex.shutdown(wait=True)


class _RayPool:
    def __init__(self, address: str) -> None:
        try:
            import ray
        except ImportError:
            raise QoslabError(
                "--ray needs Ray: pip install 'qoslab[ray]' (or pip install ray)"
            ) from None
        self.ray = ray
        if not ray.is_initialized():
            ray.init(address=None if address == "local" else address, log_to_driver=False)
        self.remote = ray.remote(num_cpus=1)(_execute)

    def run(self, tasks: list[dict], runs_dir: Path):
        refs = [self.remote.remote(t, None) for t in tasks]
        while refs:
            done, refs = self.ray.wait(refs, num_returns=1)
            status = self.ray.get(done[0])
            if status.get("ok"):
                from qoslab.store import Result

                summary, tables, scenario = status.pop("result")
                write_run(runs_dir / status["key"], Result(summary, tables, scenario))
            yield status

    def close(self, abort: bool) -> None:
        pass  # the Ray runtime belongs to whoever started it; tasks end with the driver


# --------------------------------------------------------------------------- driver


def _atomic_write_text(path: Path, text: str) -> None:
    tmp = path.parent / f".{path.name}{TMP_MARK}{uuid.uuid4().hex[:8]}"
    tmp.write_text(text)
    os.replace(tmp, path)


def _clean_stale(d: Path) -> None:
    if d.is_dir():
        for p in d.iterdir():
            if p.name.startswith(".") and (TMP_MARK in p.name or ".old-" in p.name):
                shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)


def run_sweep(
    scenario: str | Path | Mapping[str, Any] | Scenario,
    out: str | Path,
    *,
    seeds: int | Sequence[int] | None = None,
    grid: Mapping[str, Sequence[Any]] | None = None,
    overrides: Mapping[str, Any] | None = None,
    workers: int | None = None,
    ray: str | None = None,
    progress: bool = True,
) -> SweepOutcome:
    """Runs every (grid point × seed) of ``scenario`` into the directory ``out``.

    Args:
      scenario: path, dict or ``Scenario``; its ``[sweep]`` table is the default plan.
      out: sweep directory (created; reused to resume).
      seeds: a count (seeds from the scenario's seed up) or a list; overrides ``[sweep]``.
      grid: ``{key path: [values]}``, laid over the ``[sweep.grid]`` table.
      overrides: fixed ``{key path: value}`` applied before the grid.
      workers: local processes (default: the cores this process may use).
      ray: ``"auto"``, ``"local"`` or a cluster address: run on Ray instead.
      progress: show a progress bar (runs done, failed, time left).
    """
    t0 = time.perf_counter()
    sc = load(scenario).with_overrides(overrides)
    spec = SweepSpec.from_scenario(sc, seeds=seeds, grid=grid)
    tasks = plan(sc, spec)
    out = Path(out)
    runs_dir, failed_dir = out / "runs", out / "failed"
    runs_dir.mkdir(parents=True, exist_ok=True)
    failed_dir.mkdir(exist_ok=True)
    _clean_stale(runs_dir)
    _clean_stale(failed_dir)
    _clean_stale(out)
    _atomic_write_text(
        out / "sweep.json",
        json.dumps(
            {
                "scenario_file": sc.file,
                "name": sc.name,
                "spec": asdict(spec),
                "overrides": sc.overrides,
                "runs": [{"key": t.key, "seed": t.seed, "params": t.params} for t in tasks],
            },
            indent=2,
            default=str,
        ),
    )
    todo = [t for t in tasks if not is_complete(runs_dir / t.key)]
    skipped = len(tasks) - len(todo)
    failures: list[dict[str, Any]] = []
    done = 0
    engine_s = call_s = 0.0
    bar = None
    if progress and todo:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(tasks), initial=skipped, unit="run", desc=sc.name, file=sys.stderr)
    pool: _LocalPool | _RayPool | None = None
    abort = True
    try:
        if todo:
            if ray:
                pool = _RayPool(ray)
            else:
                pool = _LocalPool(min(workers or _default_workers(), len(todo)))
            for status in pool.run([asdict(t) for t in todo], runs_dir):
                key = status["key"]
                if status["ok"]:
                    done += 1
                    engine_s += status.get("engine_s", 0.0)
                    call_s += status.get("call_s", 0.0)
                    (failed_dir / f"{key}.json").unlink(missing_ok=True)
                else:
                    failures.append(status)
                    _atomic_write_text(failed_dir / f"{key}.json", json.dumps(status, indent=2))
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(done=skipped + done, failed=len(failures), refresh=False)
        abort = False
    finally:
        if pool is not None:
            pool.close(abort)
        if bar is not None:
            bar.close()
    summary = summarise(out, tasks)
    build_catalog(out, tasks)
    return SweepOutcome(
        out,
        len(tasks),
        skipped,
        done,
        len(failures),
        failures,
        time.perf_counter() - t0,
        engine_s,
        summary,
        call_s,
    )


def install_sigterm_handler() -> None:
    """Makes SIGTERM end a sweep like Ctrl-C does (workers stopped, nothing half-written)."""

    def _raise(signum, frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, _raise)


# --------------------------------------------------------------------------- results


def _finished(out: Path, tasks: list[RunTask]) -> list[RunTask]:
    return [t for t in tasks if is_complete(out / "runs" / t.key)]


def _param_columns(tasks: list[RunTask]) -> list[str]:
    return list(tasks[0].params) if tasks else []


def _with_params(df: pl.DataFrame, t: RunTask) -> pl.DataFrame:
    cols = [pl.lit(t.key).alias("run"), pl.lit(t.seed).alias("seed")]
    cols += [pl.lit(_param_value(v)).alias(k) for k, v in t.params.items()]
    return df.select([*cols, *[c for c in df.columns if c not in ("run", "seed", *t.params)]])


def _param_value(v: Any) -> Any:
    return v if isinstance(v, (int, float, str, bool)) else json.dumps(v, sort_keys=True)


def gather(out: str | Path, table: str, tasks: list[RunTask] | None = None) -> pl.DataFrame:
    """One engine table over every finished run of a sweep, with run key, seed and
    params as leading columns."""
    out = Path(out)
    if tasks is None:
        tasks = _load_tasks(out)
    frames = []
    for t in _finished(out, tasks):
        f = out / "runs" / t.key / f"{table}.parquet"
        if f.is_file():
            try:
                frames.append(_with_params(pl.read_parquet(f), t))
            except Exception as e:  # polars raises several types for damaged files
                raise ResultsError(f"{f}: corrupt or not a Parquet file ({e})") from None
    frames = [f for f in frames if f.width > 0]
    if not frames:
        return pl.DataFrame()
    return pl.concat(frames, how="diagonal_relaxed")


def _load_tasks(out: Path) -> list[RunTask]:
    plan_ = json.loads((out / "sweep.json").read_text())
    return [RunTask(r["key"], r["seed"], r["params"], {}, None) for r in plan_["runs"]]


def t95(df: int) -> float:
    """The two-sided 95 % Student t quantile for ``df`` degrees of freedom (exact)."""
    from qoslab.tables import t_quantile

    if df < 1:
        return math.nan
    return t_quantile(0.975, df)


def summarise(out: str | Path, tasks: list[RunTask] | None = None) -> pl.DataFrame | None:
    """Mean and 95 % CI half-width across seeds of each flow metric, per grid point and
    flow; written to ``summary.parquet``. ``None`` if no run has finished."""
    from qoslab.tables import with_numeric_companions

    out = Path(out)
    tasks = _load_tasks(out) if tasks is None else tasks
    flows = gather(out, "flows", tasks)
    if flows.is_empty():
        (out / "summary.parquet").unlink(missing_ok=True)
        return None
    by = [*_param_columns(tasks), "name"]
    by = [c for c in by if c in flows.columns]
    metrics = [m for m in SUMMARY_METRICS if m in flows.columns]
    aggs: list[pl.Expr] = [pl.len().alias("n")]
    for m in metrics:
        aggs += [
            pl.col(m).cast(pl.Float64).mean().alias(f"{m}_mean"),
            pl.col(m).cast(pl.Float64).std().alias(f"{m}_std"),
        ]
    s = flows.group_by(by, maintain_order=True).agg(aggs)
    s = with_numeric_companions(s, by)  # e.g. link.2.rate "2Mbps" → link.2.rate_bps 2e6
    tq = pl.col("n").map_elements(lambda n: t95(n - 1), return_dtype=pl.Float64)
    s = s.with_columns(
        [(tq * pl.col(f"{m}_std") / pl.col("n").sqrt()).alias(f"{m}_ci95") for m in metrics]
    )
    tmp = out / f".summary.parquet{TMP_MARK}{uuid.uuid4().hex[:8]}"
    s.write_parquet(tmp)
    os.replace(tmp, out / "summary.parquet")
    return s


def build_catalog(out: str | Path, tasks: list[RunTask] | None = None) -> Path:
    """(Re)builds ``catalog.duckdb``: a ``runs`` table (key, seed, params, status, error),
    a ``summary`` table, and one view per engine table over the runs' Parquet files
    (absolute paths: after moving a sweep directory, rerun the sweep to rebuild it)."""
    import duckdb

    from qoslab.tables import numeric_companions

    out = Path(out)
    tasks = _load_tasks(out) if tasks is None else tasks
    rows = []
    for t in tasks:
        row: dict[str, Any] = {"run": t.key, "seed": t.seed, "status": "pending", "error": None}
        row.update({k: _param_value(v) for k, v in t.params.items()})
        row.update(numeric_companions(t.params))  # link.2.rate_bps …: ORDER BY by value
        if is_complete(out / "runs" / t.key):
            s = json.loads((out / "runs" / t.key / "summary.json").read_text())
            row.update(status="done", events=s.get("events"), wall_s=s.get("wall_s"))
        elif (out / "failed" / f"{t.key}.json").is_file():
            f = json.loads((out / "failed" / f"{t.key}.json").read_text())
            row.update(status="failed", error=f"{f.get('error_type')}: {f.get('error')}")
        rows.append(row)
    runs = pl.DataFrame(rows, infer_schema_length=None)
    tmp = out / f".catalog.duckdb{TMP_MARK}{uuid.uuid4().hex[:8]}"
    con = duckdb.connect(str(tmp))
    try:
        con.register("runs_df", runs.to_arrow())
        con.execute("CREATE TABLE runs AS SELECT * FROM runs_df")
        params = "".join(f', r."{k}"' for k in _param_columns(tasks))
        for name in TABLES:
            # Views over the runs' Parquet files, not copies: a sweep of long runs with
            # queue sampling holds tens of millions of rows, and copying them all into
            # the catalog cost more than the runs themselves.
            files = [
                str((out / "runs" / t.key / f"{name}.parquet").resolve())
                for t in tasks
                if is_complete(out / "runs" / t.key)
                and (out / "runs" / t.key / f"{name}.parquet").is_file()
            ]
            if not files:
                continue
            lst = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
            con.execute(
                f'CREATE VIEW "{name}" AS SELECT r.run, r.seed{params}, t.* EXCLUDE (filename) '
                f"FROM read_parquet([{lst}], union_by_name = true, filename = true) t "
                "JOIN runs r ON r.run = regexp_extract(t.filename, '/runs/([^/]+)/[^/]+$', 1)"
            )
        if (out / "summary.parquet").is_file():
            con.register("summary_df", pl.read_parquet(out / "summary.parquet").to_arrow())
            con.execute("CREATE TABLE summary AS SELECT * FROM summary_df")
    finally:
        con.close()
    os.replace(tmp, out / "catalog.duckdb")
    return out / "catalog.duckdb"

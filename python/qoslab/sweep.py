"""Parameter sweeps: a grid of overrides × seeds, run in a local process pool or on Ray.

A sweep is described by a ``[sweep]`` table in the scenario, by CLI flags, or both
(flags win)::

    [sweep]
    seeds = 10                     # 10 seeds from the scenario's seed up, or a list [1, 5, 9]
    [sweep.grid]
    "link.0.rate" = ["5Mbps", "10Mbps"]
    "flow.cbr1.cbr.rate" = ["1Mbps", "2Mbps"]

Every grid point is resolved and checked before any run starts.

Layout of a sweep folder::

    sweep.json          the plan: scenario file, grid, seeds, every run's key and params
    runs/<key>/         one finished run each (see qoslab.store); key = hash(scenario, seed)
    failed/<key>.json   a run that raised: its params, seed, error type and message
    summary.parquet     mean and 95 % CI across seeds, per grid point and flow
    catalog.duckdb      SQL over everything: tables runs and summary; views flows, series,
                        drops, queues, queue_samples, traces over the runs' Parquet files
                        (each with run key, seed and params; paths relative to the folder,
                        open it with :func:`open_catalog`)
    .qoslab/            qoslab's own: owner.json, the lock, staging folders

Resuming (running the same sweep into the same folder) verifies every finished run
against its manifest and reruns the damaged ones and those of another engine build
(each with a one-line warning), skips the others and retries failed ones. A killed
sweep leaves no half-written run behind. Only one sweep at a time writes into a folder.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import os
import signal
import socket
import sys
import time
import traceback
import types
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from qoslab import _core
from qoslab.exceptions import OutputError, QoslabError, ResultsError, ScenarioError, scenario_error
from qoslab.scenario import Scenario, apply_overrides, load, parse_key_path, run_key
from qoslab.store import (
    OWN,
    TABLES,
    Result,
    atomic_write_text,
    is_complete,
    new_stage,
    os_error,
    prepare_output,
    remove_stage,
    verify_run,
    write_run,
)

__all__ = [
    "RunTask",
    "SweepOutcome",
    "SweepSpec",
    "build_catalog",
    "gather",
    "load_tasks",
    "open_catalog",
    "plain_main",
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
        for k, v in (grid or {}).items():
            if isinstance(v, (str, bytes)) or not isinstance(v, Sequence) or not v:
                raise scenario_error(sc.file, k, "grid values must be a non-empty list")
            g[k] = list(v)
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
            bad = [x for x in s if isinstance(x, bool) or not isinstance(x, int) or x < 0]
            if bad or not s:
                raise scenario_error(
                    sc.file,
                    "sweep.seeds",
                    f"expected a non-empty list of whole numbers >= 0, found {bad[0]!r}"
                    if bad
                    else "expected a non-empty list of seeds",
                )
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


def _show(v: Any) -> str:
    return json.dumps(v, default=str) if not isinstance(v, str) else repr(v)


def plan(sc: Scenario, spec: SweepSpec) -> list[RunTask]:
    """Every (grid point × seed) run, in a stable order.

    Every grid point is resolved and checked with the engine first: a bad key or value
    raises :class:`~qoslab.ScenarioError` naming the key and the value (or, when the
    values are fine alone but not together, the whole point) before anything runs.
    """
    from qoslab.api import check_data

    def bad_value(k: str, v: Any) -> ScenarioError | None:
        try:
            check_data(sc, apply_overrides(sc.data, {k: v}, file=sc.file))
        except ScenarioError as e:
            detail = getattr(e, "detail", str(e))
            at = getattr(e, "key", "")
            where = f" (at {at})" if at and at != k else ""
            msg = f"grid value {_show(v)} is not valid{where}: {detail}"
            return scenario_error(sc.file, k, msg)
        return None

    keys = list(spec.grid)
    tasks = []
    seen = set()
    for values in itertools.product(*(spec.grid[k] for k in keys)):
        params = dict(zip(keys, values, strict=True))
        try:
            data = apply_overrides(sc.data, params, file=sc.file)
            check_data(sc, data)
        except ScenarioError as e:
            for k, v in params.items():
                err = bad_value(k, v)
                if err is not None:
                    raise err from None
            shown = ", ".join(f"{k}={_show(v)}" for k, v in params.items())
            raise scenario_error(
                sc.file,
                getattr(e, "key", ""),
                f"the grid point {shown} is not valid: {getattr(e, 'detail', e)}",
            ) from None
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
    #: Finished runs found damaged (a file missing or changed) and run again.
    damaged: int = 0
    #: Finished runs made by another engine build and run again.
    stale: int = 0
    #: Time the workers spent on the runs (the engine call, writing the run folder and
    #: the bookkeeping around them); the rest of their time is pool dispatch and idling.
    task_s: float = 0.0

    def line(self) -> str:
        """One line for humans."""
        redo = []
        if self.damaged:
            redo.append(f"{self.damaged} damaged")
        if self.stale:
            redo.append(f"{self.stale} of another build")
        again = f" (rerun: {', '.join(redo)})" if redo else ""
        partial = (
            f" (the summary covers the {self.total - self.failed} finished runs only)"
            if self.failed
            else ""
        )
        return (
            f"{self.total} runs: {self.done} done{again}, {self.skipped} already finished "
            f"(skipped), {self.failed} failed{partial}; {self.wall_s:.1f}s -> {self.out}"
        )


# --------------------------------------------------------------------------- workers


def _execute(task: dict[str, Any], out_dir: str | None) -> dict[str, Any]:
    """Runs one task. With ``out_dir`` the worker writes the run folder itself (a
    shared file system), staging it (pcap files included) under ``out_dir/.qoslab``;
    without, the result and its pcap bytes travel back to the driver (Ray)."""
    from qoslab.api import run_resolved

    t0 = time.perf_counter()
    status: dict[str, Any] = {"key": task["key"], "seed": task["seed"], "params": task["params"]}
    # CPU this worker spent before this run: its start-up (imports) and earlier runs.
    status["cpu_before_s"] = time.process_time()
    stage = None
    try:
        sc = Scenario(task["data"], task["file"])
        if out_dir is not None:
            stage = new_stage(Path(out_dir) / OWN, task["key"])
            res = run_resolved(sc, task["seed"], pcap_dir=stage / "pcap")
        else:
            res = run_resolved(sc, task["seed"])
        status["engine_s"] = float(res.summary.get("wall_s", res.summary["call_s"]))
        status["call_s"] = float(res.summary["call_s"])
        extra = {"sweep_key": task["key"], "params": task["params"]}
        if out_dir is not None:
            write_run(Path(out_dir) / "runs" / task["key"], res, stage, extra=extra)
        else:
            res.summary.update(extra)
            pcap = None
            if res.pcap_dir is not None and res.pcap_dir.is_dir():
                pcap = {
                    f.relative_to(res.pcap_dir).as_posix(): f.read_bytes()
                    for f in sorted(res.pcap_dir.rglob("*"))
                    if f.is_file()
                }
            if res.pcap_cleanup is not None:
                res.pcap_cleanup()
            status["result"] = (res.summary, res.tables, res.scenario, pcap)
        status["ok"] = True
    except Exception as e:  # recorded, never lost: the sweep goes on
        status.update(
            ok=False,
            error_type=type(e).__name__,
            error=str(e),
            traceback="" if isinstance(e, QoslabError) else traceback.format_exc(),
        )
    finally:
        if stage is not None and stage.exists():
            remove_stage(stage)
    status["total_s"] = time.perf_counter() - t0
    return status


def _default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


class _InlinePool:
    """One worker: runs in this process, no pool to start."""

    def run(self, tasks: list[dict], out: Path) -> Iterator[dict]:
        for t in tasks:
            yield _execute(t, str(out))

    def close(self, abort: bool) -> None:
        pass


@contextlib.contextmanager
def plain_main() -> Iterator[None]:
    """While worker processes start, hide the user's ``__main__``: a worker started by
    ``spawn``/``forkserver`` would otherwise run the user's script again (a script without
    ``if __name__ == "__main__":`` would start the sweep again in every worker), or fail
    for a script read from stdin. Workers need only qoslab, which they import by name."""
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main


def worker_context():
    """The multiprocessing context of qoslab's worker pools (sweeps, reports): a fork
    server where the platform has one, else ``spawn``.

    The fork server imports what a sweep worker needs once (polars, the engine): each
    sweep's workers are forked from it ready, instead of spending 0.3 s of CPU each on
    imports (0.6 s of wall per sweep on two cores). Only qoslab's own modules, never the
    user's ``__main__``. One fork server serves the whole process and its preload takes
    effect only before it starts, so every pool of qoslab's asks for it here."""
    import multiprocessing as mp

    method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
    ctx = mp.get_context(method)
    if method == "forkserver":
        ctx.set_forkserver_preload(["qoslab.sweep", "qoslab.api"])
    return ctx


class _LocalPool:
    def __init__(self, workers: int) -> None:
        self.ex = ProcessPoolExecutor(max_workers=workers, mp_context=worker_context())

    def run(self, tasks: list[dict], out: Path) -> Iterator[dict]:
        with plain_main():
            pending = {self.ex.submit(_execute, t, str(out)) for t in tasks}
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
                "--ray needs Ray: pip install 'qoslab[ray]' (or pip install 'ray[client]')"
            ) from None
        self.ray = ray
        if not ray.is_initialized():
            try:
                ray.init(address=None if address == "local" else address, log_to_driver=False)
            except Exception as e:  # Ray raises ConnectionError, RuntimeError, ValueError, …
                hint = (
                    "start one with `ray start --head`, or use --ray local for a Ray runtime "
                    "on this machine"
                    if address == "auto"
                    else "check the address (ray://HOST:10001 needs pip install 'ray[client]')"
                )
                raise QoslabError(
                    f"cannot reach a Ray cluster at {address!r} ({type(e).__name__}: "
                    f"{str(e).strip().splitlines()[0] if str(e).strip() else e}); {hint}"
                ) from None
        self.remote = ray.remote(num_cpus=1)(_execute)

    def run(self, tasks: list[dict], out: Path) -> Iterator[dict]:
        refs = [self.remote.remote(t, None) for t in tasks]
        while refs:
            done, refs = self.ray.wait(refs, num_returns=1)
            status = self.ray.get(done[0])
            if status.get("ok"):
                summary, tables, scenario, pcap = status.pop("result")
                res = Result(summary, tables, scenario)
                res.pcap_files = pcap
                try:
                    write_run(out / "runs" / status["key"], res, new_stage(out / OWN, "ray"))
                except Exception as e:
                    status.update(ok=False, error_type=type(e).__name__, error=str(e))
            yield status

    def close(self, abort: bool) -> None:
        pass  # the Ray runtime belongs to whoever started it; tasks end with the driver


# --------------------------------------------------------------------------- driver


def _proc_start(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot, Linux), to tell a reused
    pid from the process that took a lock; ``None`` where /proc is not available."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat[stat.rindex(")") + 2 :].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _pid_alive(pid: int, started: Any = None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    now = _proc_start(pid)
    return not (isinstance(started, int) and now is not None and now != started)


def _holder(info: Any) -> str:
    if not isinstance(info, dict):
        return "an unknown process (the lock file is unreadable)"
    started = info.get("started")
    when = (
        time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started))
        if isinstance(started, (int, float))
        else "?"
    )
    return f"pid {info.get('pid')} on {info.get('host')}, started {when}"


def _create_exclusive(src: Path, dest: Path) -> None:
    """Creates ``dest`` with the content of ``src``, atomically; raises
    ``FileExistsError`` if ``dest`` exists."""
    try:
        os.link(src, dest)  # whole file at once: no reader sees it empty
    except FileExistsError:
        raise
    except OSError:  # a file system without hard links
        fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(fd, "w") as f:
            f.write(src.read_text())


@contextlib.contextmanager
def sweep_lock(out: Path, log: Callable[[str], None]) -> Iterator[None]:
    """Holds ``out/.qoslab/lock`` while a sweep writes into ``out``. A second sweep
    raises :class:`~qoslab.OutputError` naming the holder; the lock of a process that
    is gone (same host, pid no longer running) is taken over with a warning."""
    own = out / OWN
    lock = own / "lock"
    me: dict[str, Any] = {"pid": os.getpid(), "host": socket.gethostname()}
    me.update(started=time.time(), proc_start=_proc_start(os.getpid()))
    me["token"] = uuid.uuid4().hex
    tmp = own / f"lock.{os.getpid()}-{me['token'][:8]}"
    try:
        tmp.write_text(json.dumps(me))
        for _ in range(3):
            try:
                _create_exclusive(tmp, lock)
                break
            except FileExistsError:
                try:
                    info = json.loads(lock.read_text())
                except FileNotFoundError:
                    continue
                except (OSError, ValueError):
                    info = None
                gone = (
                    isinstance(info, dict)
                    and info.get("host") == me["host"]
                    and isinstance(info.get("pid"), int)
                    and not _pid_alive(info["pid"], info.get("proc_start"))
                )
                if not gone:
                    raise OutputError(
                        f"{out} is in use by another qoslab sweep ({_holder(info)}); wait "
                        f"for it to finish, or if that process no longer runs, delete {lock}"
                    ) from None
                log(f"warning: taking over the lock of a sweep that ended ({_holder(info)})")
                # Rename first: of two sweeps taking over at once, only one succeeds.
                stale = own / f"lock.stale-{me['token'][:8]}"
                with contextlib.suppress(FileNotFoundError):
                    os.rename(lock, stale)
                    stale.unlink()
        else:
            raise OutputError(f"{out}: could not take the lock {lock}; try again")
    except OSError as e:
        raise os_error(lock, e) from None
    finally:
        tmp.unlink(missing_ok=True)
    try:
        yield
    finally:
        try:
            if json.loads(lock.read_text()).get("token") == me["token"]:
                lock.unlink()
        except (OSError, ValueError):
            pass


def _clean_stages(out: Path) -> None:
    """Removes staging folders left by killed runs (the lock is held: none is in use)."""
    stage_root = out / OWN / "stage"
    if stage_root.is_dir():
        for p in stage_root.iterdir():
            if p.is_dir():
                remove_stage(p)


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _classify(out: Path, tasks: list[RunTask]) -> tuple[list[RunTask], list[str], list[str]]:
    """The tasks to run; the finished runs found damaged and those of another build,
    each as ``"runs/<key> (why)"``."""
    build = _core.build_id()
    todo, damaged, stale = [], [], []
    for t in tasks:
        d = out / "runs" / t.key
        if not d.exists():
            todo.append(t)
            continue
        if not is_complete(d) and (d / "summary.json").is_file():
            stale.append(f"runs/{t.key} (written before runs had manifests)")
            todo.append(t)
            continue
        problem = verify_run(d)
        if problem is not None:
            damaged.append(f"runs/{t.key} ({problem})")
            todo.append(t)
            continue
        try:
            made_by = json.loads((d / "summary.json").read_text()).get("engine_build")
        except (OSError, ValueError, AttributeError):
            made_by = None
        if made_by != build:
            stale.append(f"runs/{t.key} (engine {made_by})")
            todo.append(t)
            continue
        (out / "failed" / f"{t.key}.json").unlink(missing_ok=True)
    return todo, damaged, stale


def _some(items: list[str], n: int = 3) -> str:
    return ", ".join(items[:n]) + (f" and {len(items) - n} more" if len(items) > n else "")


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
    log: Callable[[str], None] | None = None,
) -> SweepOutcome:
    """Runs every (grid point × seed) of ``scenario`` into the folder ``out``.

    Args:
      scenario: path, dict or ``Scenario``; its ``[sweep]`` table is the default plan.
      out: sweep folder: missing, empty, or an earlier sweep (resumed: finished runs are
        verified and kept, damaged runs and runs of another engine build are redone).
      seeds: a count (seeds from the scenario's seed up) or a list; overrides ``[sweep]``.
      grid: ``{key path: [values]}``, laid over the ``[sweep.grid]`` table.
      overrides: fixed ``{key path: value}`` applied before the grid.
      workers: local processes (default: the cores this process may use); with 1 the
        runs happen in this process, without a pool.
      ray: ``"auto"``, ``"local"`` or a cluster address: run on Ray instead.
      progress: show a progress bar (runs done, failed, time left).
      log: where warnings go (one line each; default: standard error).

    Raises:
      ScenarioError: the scenario, the grid (any key or value) or the seeds are not valid;
        raised before any run starts.
      OutputError: ``out`` cannot be used (not a sweep folder, in use by another sweep,
        not writable).
    """
    t0 = time.perf_counter()
    log = log or _stderr
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)):
        raise QoslabError(f"workers must be a whole number >= 1, found {workers!r}")
    if workers is not None and workers < 1:
        raise QoslabError(f"workers must be >= 1, found {workers}")
    sc = load(scenario).with_overrides(overrides)
    spec = SweepSpec.from_scenario(sc, seeds=seeds, grid=grid)
    tasks = plan(sc, spec)
    out = prepare_output(Path(out), "sweep")
    with sweep_lock(out, log):
        return _run_locked(sc, spec, tasks, out, workers, ray, progress, log, t0)


def _run_locked(sc, spec, tasks, out, workers, ray, progress, log, t0) -> SweepOutcome:
    runs_dir, failed_dir = out / "runs", out / "failed"
    try:
        runs_dir.mkdir(exist_ok=True)
        failed_dir.mkdir(exist_ok=True)
        _clean_stages(out)
        atomic_write_text(
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
            out / OWN,
        )
    except OSError as e:
        raise os_error(out, e) from None
    todo, damaged, stale = _classify(out, tasks)
    if damaged:
        n = len(damaged)
        log(
            f"warning: {n} finished run{'s are' if n > 1 else ' is'} damaged and will be "
            f"run again: {_some(damaged)}"
        )
    if stale:
        n = len(stale)
        log(
            f"warning: {n} finished run{'s were' if n > 1 else ' was'} made by another "
            f"qoslab engine build (this one is {_core.build_id()}) and will be run again: "
            f"{_some(stale)}"
        )
    skipped = len(tasks) - len(todo)
    failures: list[dict[str, Any]] = []
    done = 0
    engine_s = call_s = task_s = 0.0
    bar = None
    if progress and todo:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(tasks), initial=skipped, unit="run", desc=sc.name, file=sys.stderr)
    pool: _InlinePool | _LocalPool | _RayPool | None = None
    abort = True
    try:
        if todo:
            if ray:
                pool = _RayPool(ray)
            elif min(workers or _default_workers(), len(todo)) == 1:
                pool = _InlinePool()
            else:
                pool = _LocalPool(min(workers or _default_workers(), len(todo)))
            # Shallow: asdict would deep-copy every run's scenario (a millisecond each).
            for status in pool.run([dict(vars(t)) for t in todo], out):
                key = status["key"]
                task_s += status.get("total_s", 0.0)
                if status["ok"]:
                    done += 1
                    engine_s += status.get("engine_s", 0.0)
                    call_s += status.get("call_s", 0.0)
                    (failed_dir / f"{key}.json").unlink(missing_ok=True)
                else:
                    failures.append(status)
                    atomic_write_text(
                        failed_dir / f"{key}.json", json.dumps(status, indent=2), out / OWN
                    )
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
        len(damaged),
        len(stale),
        task_s,
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
        tasks = load_tasks(out)
    found = [
        (t, out / "runs" / t.key / f"{table}.parquet")
        for t in _finished(out, tasks)
        if (out / "runs" / t.key / f"{table}.parquet").is_file()
    ]
    fast = _gather_at_once(found) if found else None
    if fast is not None:
        return fast
    frames = []
    for t, f in found:
        try:
            frames.append(_with_params(pl.read_parquet(f), t))
        except Exception as e:  # polars raises several types for damaged files
            raise ResultsError(f"{f}: corrupt or not a Parquet file ({e})") from None
    frames = [f for f in frames if f.width > 0]
    if not frames:
        return pl.DataFrame()
    return pl.concat(frames, how="diagonal_relaxed")


_FILE_COL = "__qoslab_file"


def _gather_at_once(found: list[tuple[RunTask, Path]]) -> pl.DataFrame | None:
    """:func:`gather` with every file read in one call (two to three times faster than
    file by file); ``None`` when the files' schemas differ (or one does not read), for
    the file-by-file way, which names a damaged file. The same frame either way: the
    leading columns are made per run as there and repeated over its rows."""
    try:
        body = pl.read_parquet([str(f) for _, f in found], include_file_paths=_FILE_COL)
    except Exception:  # schemas differ, or a file is damaged: file by file
        return None
    if body.width <= 1:  # tables without columns: file by file
        return None
    index = {str(f): i for i, (_, f) in enumerate(found)}
    rows = body[_FILE_COL].replace_strict(index, return_dtype=pl.UInt32)
    head = pl.concat([_with_params(pl.DataFrame(), t) for t, _ in found], how="diagonal_relaxed")
    lead = set(head.columns)
    body = body.select([c for c in body.columns if c != _FILE_COL and c not in lead])
    return pl.concat([head[rows], body], how="horizontal")


def load_tasks(out: Path) -> list[RunTask]:
    """The runs a sweep directory planned (``sweep.json``), in plan order."""
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
    tasks = load_tasks(out) if tasks is None else tasks
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
    tmp = out / OWN / f"summary.parquet.{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.parent.mkdir(exist_ok=True)
    try:
        s.write_parquet(tmp)
        os.replace(tmp, out / "summary.parquet")
    finally:
        tmp.unlink(missing_ok=True)
    return s


def build_catalog(out: str | Path, tasks: list[RunTask] | None = None) -> Path:
    """(Re)builds ``catalog.duckdb``: a ``runs`` table (key, seed, params, status, error),
    a ``summary`` table, and one view per engine table over the runs' Parquet files, each
    with run key, seed and params as leading columns.

    The views name the files relative to the sweep folder, so a moved or copied folder
    still works (and a copy never reads the original's files): open the catalog with
    :func:`open_catalog`, or with DuckDB's own client from inside the sweep folder.
    """
    import duckdb

    from qoslab.tables import numeric_companions

    out = Path(out)
    tasks = load_tasks(out) if tasks is None else tasks
    rows = []
    names = list(TABLES)  # and any other table the runs produced (captures, …)
    complete = [t for t in tasks if is_complete(out / "runs" / t.key)]
    done = {t.key for t in complete}
    for t in tasks:
        row: dict[str, Any] = {"run": t.key, "seed": t.seed, "status": "pending", "error": None}
        row.update({k: _param_value(v) for k, v in t.params.items()})
        row.update(numeric_companions(t.params))  # link.2.rate_bps …: ORDER BY by value
        if t.key in done:
            s = json.loads((out / "runs" / t.key / "summary.json").read_text())
            row.update(status="done", events=s.get("events"), wall_s=s.get("wall_s"))
            names += [n for n in s.get("tables", []) if isinstance(n, str) and n not in names]
        elif (out / "failed" / f"{t.key}.json").is_file():
            f = json.loads((out / "failed" / f"{t.key}.json").read_text())
            row.update(status="failed", error=f"{f.get('error_type')}: {f.get('error')}")
        rows.append(row)
    runs = pl.DataFrame(rows, infer_schema_length=None)
    (out / OWN).mkdir(exist_ok=True)
    tmp = out / OWN / f"catalog.duckdb.{os.getpid()}-{uuid.uuid4().hex[:8]}"
    con = duckdb.connect(str(tmp))
    try:
        con.execute("SET file_search_path = ?", [str(out)])
        con.register("runs_df", runs.to_arrow())
        con.execute("CREATE TABLE runs AS SELECT * FROM runs_df")
        params = "".join(f', r."{k}"' for k in _param_columns(tasks))
        for name in names:
            # Views over the runs' Parquet files, not copies: a sweep of long runs with
            # queue sampling holds tens of millions of rows, and copying them all into
            # the catalog cost more than the runs themselves.
            files = [
                f"runs/{t.key}/{name}.parquet"
                for t in complete
                if os.path.isfile(os.path.join(out, "runs", t.key, f"{name}.parquet"))
            ]
            if not files:
                continue
            lst = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
            con.execute(
                f'CREATE VIEW "{name}" AS SELECT r.run, r.seed{params}, t.* EXCLUDE (filename) '
                f"FROM read_parquet([{lst}], union_by_name = true, filename = true) t "
                "JOIN runs r ON r.run = regexp_extract(t.filename, '(^|/)runs/([^/]+)/[^/]+$', 2)"
            )
        if (out / "summary.parquet").is_file():
            con.register("summary_df", pl.read_parquet(out / "summary.parquet").to_arrow())
            con.execute("CREATE TABLE summary AS SELECT * FROM summary_df")
    finally:
        con.close()
    try:
        os.replace(tmp, out / "catalog.duckdb")
    finally:
        tmp.unlink(missing_ok=True)
        Path(f"{tmp}.wal").unlink(missing_ok=True)
    return out / "catalog.duckdb"


def open_catalog(out: str | Path, read_only: bool = True):
    """A DuckDB connection to the catalog of the sweep folder ``out`` (wherever the folder
    now is): ``open_catalog("results/x-sweep").sql("SELECT * FROM flows")``."""
    import duckdb

    out = Path(out)
    f = out / "catalog.duckdb"
    if not f.is_file():
        raise ResultsError(f"{f}: not found; {out} is not a finished qoslab sweep folder")
    con = duckdb.connect(str(f), read_only=read_only)
    con.execute("SET file_search_path = ?", [str(out.resolve())])
    return con

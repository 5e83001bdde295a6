"""Runs a planned sweep into its folder (:func:`run_sweep`): one sweep per folder at a
time (a lock), finished runs kept and skipped on resume, failures recorded, stopped
cleanly by Ctrl-C or SIGTERM."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from qoslab import _core
from qoslab.exceptions import OutputError
from qoslab.scenario import (
    Scenario,
    load,
)
from qoslab.store import (
    OWN,
    atomic_write_text,
    is_complete,
    os_error,
    pid_alive,
    prepare_output,
    proc_start,
    remove_run,
    remove_stage,
    verify_run,
)
from qoslab.sweep.catalog import build_catalog
from qoslab.sweep.pool import _default_workers, _InlinePool, _LocalPool, _RayPool, check_workers
from qoslab.sweep.spec import RunTask, SweepOutcome, SweepSpec, plan
from qoslab.sweep.summary import _finished, run_warnings, summarise

_proc_start = proc_start
_pid_alive = pid_alive


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
    cases: Mapping[str, Mapping[str, Any]] | None = None,
    ray: str | None = None,
    progress: bool = True,
    log: Callable[[str], None] | None = None,
    max_wall: float | None = None,
    prune: bool = False,
) -> SweepOutcome:
    """Runs every (grid point × seed) of ``scenario`` into the folder ``out``.

    Args:
      scenario: path, dict or ``Scenario``; its ``[sweep]`` table is the default plan.
      out: sweep folder: missing, empty, or an earlier sweep (resumed: finished runs are
        verified and kept, damaged runs and runs of another engine build are redone).
      seeds: a count (seeds from the scenario's seed up) or a list; overrides ``[sweep]``.
      grid: ``{key path: [values]}``, laid over the ``[sweep.grid]`` table.
      overrides: fixed ``{key path: value}`` applied before the grid.
      cases: ``{case name: {key path: value}}``, laid over ``[sweep.cases]``: named
        settings that change several keys together, each crossed with the grid and the
        seeds (the case name is the ``case`` column).
      workers: local processes (default: the cores this process may use); with 1 the
        runs happen in this process, without a pool.
      ray: ``"auto"``, ``"local"`` or a cluster address: run on Ray instead.
      progress: show a progress bar (runs done, failed, time left).
      log: where warnings go (one line each; default: standard error).
      max_wall: stop each run after this many seconds of wall-clock time (it is
        recorded as failed, the sweep goes on); default no limit.
      prune: remove the runs in ``out`` that this plan does not hold (an earlier,
        different sweep into the same folder); only the files qoslab wrote. Without it
        they are kept, and a warning counts them.

    Interrupted (Ctrl-C, SIGTERM), it logs how many runs are kept and that running the
    same sweep again resumes it, then raises.

    Raises:
      ScenarioError: the scenario, the grid (any key or value) or the seeds are not valid;
        raised before any run starts.
      OutputError: ``out`` cannot be used (not a sweep folder, in use by another sweep,
        not writable).
    """
    t0 = time.perf_counter()
    log = log or _stderr
    check_workers(workers)
    from qoslab.api import check_max_wall

    sc = load(scenario).with_overrides(overrides)
    wall = check_max_wall(max_wall)
    spec = SweepSpec.from_scenario(sc, seeds=seeds, grid=grid, cases=cases)
    tasks = plan(sc, spec)
    if not isinstance(out, (str, os.PathLike)) or not str(out):
        raise OutputError(f"out must be a folder path, found {out!r}")
    out = prepare_output(Path(out), "sweep")
    with sweep_lock(out, log):
        return _run_locked(sc, spec, tasks, out, workers, ray, progress, log, t0, wall, prune)


def _orphans(out: Path, tasks: list[RunTask], log: Callable[[str], None], prune: bool) -> None:
    """Runs (and failure records) in ``out`` that the plan ``tasks`` does not hold: an
    earlier, different sweep into the same folder. Removed with ``prune`` (the files
    qoslab wrote only), else kept and counted in a warning: the summary and the catalog
    cover this plan's runs only."""
    keys = {t.key for t in tasks}
    runs = sorted(
        p
        for p in (out / "runs").iterdir()
        if p.is_dir() and p.name not in keys and (is_complete(p) or (p / "summary.json").is_file())
    )
    failed = sorted(
        p for p in (out / "failed").glob("*.json") if p.is_file() and p.stem not in keys
    )
    if not runs and not failed:
        return
    if not prune:
        n = len(runs)
        also = f" and {len(failed)} failure record(s)" if failed else ""
        log(
            f"warning: {out} holds {n} run{'s' if n != 1 else ''}{also} not in this plan "
            "(kept; the summary and the catalog cover this plan only; --prune removes them)"
        )
        return
    left = [p for p in runs if not remove_run(p)]
    for p in failed:
        p.unlink(missing_ok=True)
    log(
        f"pruned {len(runs) - len(left)} run(s) and {len(failed)} failure record(s) not in "
        f"this plan from {out}"
        + (
            f"; kept {len(left)} folder(s) holding files qoslab did not write: "
            f"{_some([f'runs/{p.name}' for p in left])}"
            if left
            else ""
        )
    )


def _run_locked(
    sc, spec, tasks, out, workers, ray, progress, log, t0, wall, prune=False
) -> SweepOutcome:
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
                    "runs": [
                        {"key": t.key, "seed": t.seed, "params": t.params, "labels": t.labels}
                        for t in tasks
                    ],
                },
                indent=2,
                default=str,
            ),
            out / OWN,
        )
    except OSError as e:
        raise os_error(out, e) from None
    try:
        _orphans(out, tasks, log, prune)
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
    abort, interrupted = True, False
    try:
        if todo:
            if ray:
                pool = _RayPool(ray)
            elif min(workers or _default_workers(), len(todo)) == 1:
                pool = _InlinePool()
            else:
                pool = _LocalPool(min(workers or _default_workers(), len(todo)))
            # Shallow: asdict would deep-copy every run's scenario (a millisecond each).
            for status in pool.run([{**vars(t), "max_wall": wall} for t in todo], out):
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
    except (KeyboardInterrupt, SystemExit):
        interrupted = True
        raise
    finally:
        if pool is not None:
            pool.close(abort)
        if bar is not None:
            bar.close()
        if interrupted:
            kept = len(_finished(out, tasks))
            log(f"interrupted: {kept}/{len(tasks)} runs kept in {out}; rerun to resume")
    summary = summarise(out, tasks)
    build_catalog(out, tasks)
    for line in run_warnings(out, tasks):
        log(f"warning: {line}")
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

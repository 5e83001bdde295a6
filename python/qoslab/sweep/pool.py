"""The worker processes of sweeps and reproductions: a run executed in a worker and sent
back whole (:func:`portable`), local process pools, Ray, and the start method."""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import time
import traceback
import types
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any

from qoslab.exceptions import QoslabError
from qoslab.scenario import (
    Scenario,
)
from qoslab.store import (
    OWN,
    Result,
    new_stage,
    remove_stage,
    write_run,
)
from qoslab.sweep.spec import CASE


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
            res = run_resolved(
                sc, task["seed"], pcap_dir=stage / "pcap", max_wall=task.get("max_wall")
            )
        else:
            res = run_resolved(sc, task["seed"], max_wall=task.get("max_wall"))
        status["engine_s"] = float(res.summary.get("wall_s", res.summary["call_s"]))
        status["call_s"] = float(res.summary["call_s"])
        # The machine that ran it: with Ray, which node ran what.
        extra = {"sweep_key": task["key"], "params": task["params"], "host": socket.gethostname()}
        node = _ray_node()
        if node is not None:
            extra["ray_node"] = node
        if CASE in (task.get("labels") or {}):
            extra["case"] = task["labels"][CASE]
        if out_dir is not None:
            write_run(Path(out_dir) / "runs" / task["key"], res, stage, extra=extra)
        else:
            res.summary.update(extra)
            status["result"] = portable(res)
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


def portable(res: Any) -> tuple:
    """A worker's Result as it travels to the parent process (which builds the Result
    again): summary, tables, scenario and its pcap files as bytes by path, their
    temporary folder removed here."""
    pcap = None
    if res.pcap_dir is not None and res.pcap_dir.is_dir():
        pcap = {
            f.relative_to(res.pcap_dir).as_posix(): f.read_bytes()
            for f in sorted(res.pcap_dir.rglob("*"))
            if f.is_file()
        }
    if res.pcap_cleanup is not None:
        res.pcap_cleanup()
    return res.summary, res.tables, res.scenario, pcap


def _ray_node() -> str | None:
    """The id of the Ray node this task runs on (``ray list nodes`` names it), or
    ``None`` outside Ray (Ray is never imported for that)."""
    ray = sys.modules.get("ray")
    try:
        if ray is None or not ray.is_initialized():
            return None
        return str(ray.get_runtime_context().get_node_id())
    except Exception:  # an older or half-started Ray: the host name still says where
        return None


def check_workers(workers: Any) -> None:
    """Raises :class:`~qoslab.QoslabError` unless ``workers`` is None (the default
    count) or a whole number >= 1: the one check of ``-j`` for sweeps and for an
    experiment's ``Context.run_many``."""
    if workers is not None and (
        isinstance(workers, bool) or not isinstance(workers, int) or workers < 1
    ):
        raise QoslabError(f"workers must be a whole number >= 1, found {workers!r}")


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


def stop_executor(ex: ProcessPoolExecutor, abort: bool) -> list[Any]:
    """Stops a process pool of qoslab's (a sweep's or an experiment's): at once
    (``abort``: queued work cancelled, the workers terminated, as on Ctrl-C, SIGTERM or a
    failed run) or after its work. Returns the worker processes it had (the executor
    forgets them once shut down)."""
    procs = list((getattr(ex, "_processes", None) or {}).values())
    if abort:
        ex.shutdown(wait=False, cancel_futures=True)
        for p in procs:
            p.terminate()
    else:
        ex.shutdown(wait=True)
    return procs


class _LocalPool:
    """The local worker processes of a sweep."""

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
        stop_executor(self.ex, abort)


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

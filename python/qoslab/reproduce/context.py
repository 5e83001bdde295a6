"""What an experiment runs with: its :class:`Context` (where to write, quick or full,
runs and sweeps saved under the experiment's folder, a pool of worker processes for
:meth:`Context.run_many`) and the packaged scenarios (:func:`scenarios_dir`)."""

from __future__ import annotations

import json
import sys
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def scenarios_dir() -> Path:
    """The packaged scenarios (``qoslab/scenarios``, package data read through
    :mod:`importlib.resources`; ``QOSLAB_SCENARIOS`` overrides).

    In a clone ``python/qoslab/scenarios`` is a symbolic link to the repository's
    ``scenarios/`` folder, the one copy; building the wheel copies the files in."""
    import os
    from importlib.resources import files

    env = os.environ.get("QOSLAB_SCENARIOS")
    if env:
        return Path(env)
    res = files("qoslab") / "scenarios"
    if not isinstance(res, Path):  # e.g. imported from a zip file
        from qoslab.exceptions import QoslabError

        raise QoslabError(
            f"qoslab's packaged scenarios are not on the file system ({res}); "
            "install qoslab as an ordinary (unzipped) package or set QOSLAB_SCENARIOS"
        )
    return res


@dataclass(frozen=True)
class RunJob:
    """One run of :meth:`Context.run_many`: what :func:`qoslab.api.run` takes, and the
    label to save it under (``None``: not saved)."""

    scenario: Any
    overrides: Mapping[str, Any] | None = None
    seed: int | None = None
    label: str | None = None


def _cores() -> int:
    """The cores this process may use."""
    from qoslab.sweep.pool import _default_workers

    return _default_workers()


def _run_job(job: RunJob) -> tuple:
    """A worker's part of :meth:`Context.run_many`: the run's summary, tables, scenario
    and pcap files as bytes (the Result is built again in the parent, as a sweep's)."""
    from qoslab.api import run
    from qoslab.sweep import portable

    return portable(run(job.scenario, job.overrides, job.seed))


class _JobPool:
    """The worker processes of one experiment's :meth:`Context.run_many` calls, started
    at the first and kept until the experiment ends (a pool costs about 0.1 s to start)."""

    def __init__(self, workers: int) -> None:
        from concurrent.futures import ProcessPoolExecutor

        from qoslab.sweep import worker_context

        self.closed = False
        self.ex = ProcessPoolExecutor(max_workers=workers, mp_context=worker_context())

    def submit(self, jobs: list[RunJob]) -> Iterator[Any]:
        """Hands every job to the workers now; the Results come in the jobs' order as
        they are read, each given up by the pool when read (so a few wait in memory, not
        all). On any error (Ctrl-C, a failed run, a reader that stops early) the workers
        stop."""
        from qoslab.sweep import plain_main

        with plain_main():
            futures = deque(self.ex.submit(_run_job, j) for j in jobs)
        return self._results(futures)

    def _results(self, futures: deque) -> Iterator[Any]:
        from qoslab.store import Result

        try:
            while futures:
                summary, tables, scenario, pcap = futures.popleft().result()
                res = Result(summary, tables, scenario)
                res.pcap_files = pcap
                yield res
        except BaseException:  # GeneratorExit too: nobody reads the rest
            self.close(abort=True)
            raise

    def close(self, abort: bool = False) -> None:
        """Stops the workers: at once (``abort``), or after their work."""
        from qoslab.sweep.pool import stop_executor

        self.closed = True
        #: The worker processes it had (the executor forgets them once shut down).
        self.procs = stop_executor(self.ex, abort)


class Context:
    """Handed to each experiment: where to write, how thorough to be, how to run."""

    def __init__(
        self,
        name: str,
        out: Path,
        quick: bool,
        workers: int | None,
        ray: str | None,
        paper_only: bool = False,
    ):
        self.name, self.out, self.quick = name, out, quick
        self.workers, self.ray = workers, ray
        #: Only the paper's own configurations (``--paper-only``): no explanatory extras.
        self.paper_only = paper_only
        self.runs: list[Path] = []
        self.sweeps: list[Path] = []
        self._pool: _JobPool | None = None
        #: Engine seconds (``call_s``) of each run :meth:`run_many` did not save.
        self.pooled_s: list[float] = []

    def close(self, abort: bool = False) -> None:
        """Stops the worker processes :meth:`run_many` started (if any): after their
        work, or at once (``abort``: the experiment failed or was stopped)."""
        if self._pool is not None:
            if not self._pool.closed:
                self._pool.close(abort)
            self._pool = None

    def scenario(self, rel: str) -> Path:
        """A scenario file by its path under ``scenarios/``."""
        return scenarios_dir() / rel

    def run(
        self,
        scenario: Any,
        overrides: Mapping[str, Any] | None = None,
        seed: int | None = None,
        label: str | None = None,
    ):
        """Runs once and saves the result under ``runs/<label>``; returns the Result."""
        from qoslab.api import run

        res = run(scenario, overrides, seed)
        label = label or f"run{len(self.runs)}"
        self.runs.append(res.save(self.out / "runs" / label))
        return res

    def run_many(self, jobs: Sequence[RunJob]) -> Iterator[Any]:
        """Runs independent ``jobs`` on local worker processes (``-j``; local under
        ``--ray`` too, whose cluster serves the sweeps) and gives their Results in the
        jobs' order, each as soon as it and those before it are done (iterate once; a few
        wait in memory, not all); a job with a ``label`` is saved under ``runs/<label>``
        as :meth:`run` would, in the jobs' order, as it is given.

        Each run is deterministic in its scenario, overrides and seed, so the Results are
        those of the same jobs run one after another with :func:`qoslab.api.run`; only
        the wall time changes (an experiment's serial loop of runs kept one of two
        cores idle). With one worker or one job they run here, one at a time as read.
        Every job goes to the workers at the call; Ctrl-C, SIGTERM under ``qoslab
        reproduce``, a failed run or a reader that stops early stop them.

        Raises:
          QoslabError: ``workers`` is not a whole number >= 1.
        """
        from qoslab.api import run

        jobs = list(jobs)
        from qoslab.sweep import check_workers

        check_workers(self.workers)
        workers = self.workers or _cores()
        if workers <= 1 or len(jobs) <= 1:
            results: Iterator[Any] = (run(j.scenario, j.overrides, j.seed) for j in jobs)
        else:
            if self._pool is None or self._pool.closed:
                self._pool = _JobPool(workers)
            results = self._pool.submit(jobs)
        return self._kept(jobs, results)

    def _kept(self, jobs: list[RunJob], results: Iterator[Any]) -> Iterator[Any]:
        """:meth:`run_many`'s Results as read: the labelled ones saved, the others timed."""
        for j, res in zip(jobs, results, strict=True):
            if j.label is not None:
                self.runs.append(res.save(self.out / "runs" / j.label))
            else:  # a saved run's summary.json has its time already
                self.pooled_s.append(float(res.summary.get("call_s", 0.0)))
            yield res

    def live(self, data: Mapping[str, Any], seed: int, label: str, *, twin: bool = False):
        """Runs scenario ``data`` live once with ``seed`` and saves it under
        ``runs/<label>``; returns the Result. A finished run already there, of the same
        scenario, seed and engine build and intact (every file as its manifest lists it),
        is loaded instead (its twin, deterministic, simulated again): live runs take real
        time, so a full mode stopped halfway resumes where it stopped. A damaged run or
        one of another scenario or build is run again, and stderr says why."""
        from qoslab._core import build_id
        from qoslab.api import add_twin, live
        from qoslab.scenario import load as load_scenario
        from qoslab.scenario import run_key
        from qoslab.store import is_complete, verify_run
        from qoslab.store import load as load_run

        dest = self.out / "runs" / label
        if dest.exists():
            resolved = dict(load_scenario(dict(data)).data)
            resolved["seed"] = seed
            why = "not finished" if not is_complete(dest) else verify_run(dest)
            if why is None:
                try:
                    summary = json.loads((dest / "summary.json").read_text())
                except (OSError, ValueError):
                    summary = {}
                if summary.get("scenario_hash") != run_key(resolved, seed):
                    why = "another scenario or seed"
                elif summary.get("engine_build") != build_id():
                    why = f"engine {summary.get('engine_build')}"
            if why is None:
                res = load_run(dest)
                if twin:
                    add_twin(res, resolved, seed)
                self.runs.append(dest)
                return res
            print(f"{self.name}: runs/{label} is run again ({why})", file=sys.stderr, flush=True)
        res = live(data, seed=seed, twin=twin)
        self.runs.append(res.save(dest))
        return res

    def sweep(self, scenario: Any, label: str | None = None, **kw: Any):
        """Runs a sweep into ``sweeps/<label>`` (see :func:`qoslab.sweep.run_sweep`)."""
        from qoslab.sweep import run_sweep

        label = label or f"sweep{len(self.sweeps)}"
        kw.setdefault("workers", self.workers)
        kw.setdefault("ray", self.ray)
        kw.setdefault("progress", False)
        outcome = run_sweep(scenario, self.out / "sweeps" / label, **kw)
        self.sweeps.append(outcome.out)
        return outcome

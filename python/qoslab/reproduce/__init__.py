"""Paper reproductions: a registry of experiments that ``qoslab reproduce`` runs.

Extension point (for the paper issues)
--------------------------------------
Add a module ``python/qoslab/reproduce/pN.py`` (``p0.py`` … ``p4.py``, one per paper in
``PAPERS.md``); every module in this package is imported when the registry is first
used, so nothing else needs editing. In it, register each experiment::

    from qoslab.reproduce import Comparison, Context, Outcome, register

    @register("p1-table3", title="Table 3: goodput of 4 TCP flows", paper="P1 §5.2")
    def table3(ctx: Context) -> Outcome:
        sw = ctx.sweep(ctx.scenario("p1/table3.toml"), seeds=3 if ctx.quick else 30)
        ours = sw.summary.filter(pl.col("name") == "tcp1")["goodput_bps_mean"][0]
        return Outcome(
            comparisons=[Comparison("tcp1 goodput", ours / 1e6, paper=2.41, unit="Mbit/s")],
            sweeps=[sw.out],
        )

- ``ctx.quick`` is true under ``--quick``: use fewer seeds and shorter durations so
  ``reproduce --all --quick`` stays within minutes on a laptop.
- ``ctx.run`` / ``ctx.sweep`` save their results under the experiment's directory; the
  report draws figures from those files (throughput over time for runs, goodput vs
  the swept parameter for sweeps) and puts ``comparisons`` (ours beside the paper's)
  and ``tables`` at the top of the experiment's section.
- Raise to fail: the experiment is recorded as failed with its error and the others go on.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

__all__ = [
    "REGISTRY",
    "Comparison",
    "Context",
    "Experiment",
    "Outcome",
    "discover",
    "register",
    "run_experiments",
]


@dataclass
class Comparison:
    """One number of ours beside the paper's (``paper=None`` if the paper gives none)."""

    quantity: str
    ours: float
    paper: float | None = None
    unit: str = ""
    note: str = ""


@dataclass
class Outcome:
    """What an experiment returns: comparisons, extra tables, and the run/sweep
    directories it produced (those made through ``ctx`` are added automatically)."""

    comparisons: list[Comparison] = field(default_factory=list)
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)
    notes: str = ""
    runs: list[Path] = field(default_factory=list)
    sweeps: list[Path] = field(default_factory=list)


@dataclass
class Experiment:
    """A registered experiment."""

    name: str
    title: str
    paper: str
    fn: Callable[[Context], Outcome]


REGISTRY: dict[str, Experiment] = {}


def register(name: str, *, title: str, paper: str = "") -> Callable:
    """Decorator registering ``fn(ctx) -> Outcome`` as experiment ``name``."""

    def deco(fn: Callable[[Context], Outcome]) -> Callable[[Context], Outcome]:
        if name in REGISTRY and REGISTRY[name].fn is not fn:
            raise ValueError(f"experiment {name!r} is registered twice")
        REGISTRY[name] = Experiment(name, title, paper, fn)
        return fn

    return deco


_discovered = False


def discover() -> dict[str, Experiment]:
    """Imports every module of this package (p0.py … p4.py) and returns the registry."""
    global _discovered
    if not _discovered:
        for m in pkgutil.iter_modules(__path__):
            importlib.import_module(f"{__name__}.{m.name}")
        _discovered = True
    return dict(sorted(REGISTRY.items()))


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


class Context:
    """Handed to each experiment: where to write, how thorough to be, how to run."""

    def __init__(self, name: str, out: Path, quick: bool, workers: int | None, ray: str | None):
        self.name, self.out, self.quick = name, out, quick
        self.workers, self.ray = workers, ray
        self.runs: list[Path] = []
        self.sweeps: list[Path] = []

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


def run_experiments(
    names: list[str] | None,
    out: str | Path,
    *,
    quick: bool = False,
    workers: int | None = None,
    ray: str | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Runs the named experiments (all if ``names`` is None) into ``out`` and writes
    ``out/reproduce.json``: per experiment its status, comparisons and directories."""
    reg = discover()
    names = list(reg) if names is None else names
    unknown = [n for n in names if n not in reg]
    if unknown:
        from qoslab.exceptions import QoslabError

        known = ", ".join(reg) or "none registered yet"
        raise QoslabError(f"unknown experiment {unknown[0]!r}; known: {known}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    index: dict[str, Any] = {"quick": quick, "experiments": [], "started": time.time()}
    for name in names:
        exp = reg[name]
        ctx = Context(name, out / name, quick, workers, ray)
        ctx.out.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        entry: dict[str, Any] = {"name": name, "title": exp.title, "paper": exp.paper}
        log(f"reproduce {name}: {exp.title}")
        try:
            outcome = exp.fn(ctx) or Outcome()
            for tname, df in outcome.tables.items():
                df.write_parquet(ctx.out / f"table-{tname}.parquet")
            entry.update(
                status="done",
                comparisons=[c.__dict__ for c in outcome.comparisons],
                tables=list(outcome.tables),
                notes=outcome.notes,
                runs=[str(p) for p in dict.fromkeys([*ctx.runs, *outcome.runs])],
                sweeps=[str(p) for p in dict.fromkeys([*ctx.sweeps, *outcome.sweeps])],
            )
        except Exception as e:
            entry.update(
                status="failed", error=f"{type(e).__name__}: {e}", traceback=traceback.format_exc()
            )
            log(f"  failed: {type(e).__name__}: {e}")
        entry["wall_s"] = time.perf_counter() - t0
        index["experiments"].append(entry)
    index["registered"] = list(reg)
    (out / "reproduce.json").write_text(json.dumps(index, indent=2, default=str))
    return index

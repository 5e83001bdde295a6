"""The registry of experiments and figures: :func:`register`, :func:`figure`,
:func:`discover` (imports every paper module of the package), and what skips an
experiment on a machine that cannot run it."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

if TYPE_CHECKING:
    from qoslab.reproduce.context import Context
    from qoslab.reproduce.verdicts import Outcome


class SkipExperiment(Exception):
    """Raised by an experiment that cannot run on this machine (e.g. live mode without
    root or ``/dev/net/tun``): it is recorded as ``skipped`` with the message as reason,
    neither failed nor passed."""


#: ``[live] spin`` of the live experiments' runs: on this project's machine (a VM) wake-ups
#: from sleep come 40–300 µs late, which alone breaks the timing bounds; spinning the last
#: 300 µs before each event keeps p99 under 100 µs for about 5–20 % of a core
#: (``validation/live_spin.py``, its output in ``validation/data/live-spin.md``). For a few
#: connections: p3-live's 80 do not spin (``p3_live.scenario_data`` says why).
LIVE_SPIN = "300us"


def require_live() -> None:
    """Raises :class:`SkipExperiment` with the reason when live mode cannot run here (the
    live experiments' first step)."""
    from qoslab.api import live_unavailable

    problem = live_unavailable()
    if problem:
        raise SkipExperiment(f"{problem}; run as root on Linux with /dev/net/tun")


@dataclass
class Experiment:
    """A registered experiment."""

    name: str
    title: str
    paper: str
    fn: Callable[[Context], Outcome]
    #: Whether ``reproduce --all`` runs it (false for live experiments, which need root
    #: and run in real time: name them to run them).
    in_all: bool = True


REGISTRY: dict[str, Experiment] = {}


def register(name: str, *, title: str, paper: str = "", in_all: bool = True) -> Callable:
    """Decorator registering ``fn(ctx) -> Outcome`` as experiment ``name``; ``in_all=False``
    leaves it out of ``reproduce --all`` (it runs only when named)."""

    def deco(fn: Callable[[Context], Outcome]) -> Callable[[Context], Outcome]:
        if name in REGISTRY and REGISTRY[name].fn is not fn:
            raise ValueError(f"experiment {name!r} is registered twice")
        REGISTRY[name] = Experiment(name, title, paper, fn, in_all)
        return fn

    return deco


@dataclass
class Saved:
    """An experiment's saved outputs, as a figure function sees them: its directory,
    its tables (read from ``table-<name>.parquet``), its comparisons (dicts with
    verdicts) and whether it ran in quick mode."""

    dir: Path
    entry: dict[str, Any]
    quick: bool = False

    @property
    def comparisons(self) -> list[dict[str, Any]]:
        """The comparisons as stored in ``reproduce.json``."""
        return list(self.entry.get("comparisons") or [])

    @property
    def tables(self) -> dict[str, pl.DataFrame]:
        """Every table the experiment returned, by name."""
        return {t: self.table(t) for t in self.entry.get("tables", [])}

    def table(self, name: str) -> pl.DataFrame:
        """One table the experiment returned."""
        return pl.read_parquet(self.dir / f"table-{name}.parquet")


FigureFn = Callable[[Saved], Any]
FIGURES: dict[str, FigureFn] = {}


def figure(name: str) -> Callable[[FigureFn], FigureFn]:
    """Decorator registering ``fn(saved: Saved) -> Figure | list[Figure] | None`` as the
    drawing of experiment ``name``'s paper figure in the paper's form (axes, scales,
    normalisation), from the saved tables only, with the paper's values overlaid
    (:func:`qoslab.plot.overlay_paper`). The report shows it first in the experiment's
    section and writes it as SVG and PNG under ``<experiment>/figures/``."""

    def deco(fn: FigureFn) -> FigureFn:
        if name in FIGURES and FIGURES[name] is not fn:
            raise ValueError(f"a figure for experiment {name!r} is registered twice")
        FIGURES[name] = fn
        return fn

    return deco


_discovered = False
#: The package whose paper modules :func:`discover` imports.
PACKAGE = "qoslab.reproduce"
#: The package's own framework modules (no experiments in them).
FRAMEWORK = frozenset({"context", "registry", "runner", "scenario_files", "verdicts"})


def discover() -> dict[str, Experiment]:
    """Imports every module of this package (p0.py … p4.py) and returns the registry."""
    global _discovered
    if not _discovered:
        pkg = importlib.import_module(PACKAGE)
        for m in pkgutil.iter_modules(pkg.__path__):
            if m.name not in FRAMEWORK:
                importlib.import_module(f"{PACKAGE}.{m.name}")
        _discovered = True
    return dict(sorted(REGISTRY.items()))

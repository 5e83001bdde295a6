"""Paper reproductions: a registry of experiments that ``qoslab reproduce`` runs.

Extension point (for the paper issues)
--------------------------------------
Add a module ``python/qoslab/reproduce/pN.py`` (``p0.py`` … ``p4.py``, one per paper in
``PAPERS.md``); every module in this package is imported when the registry is first
used, so nothing else needs editing. In it, register each experiment::

    from qoslab.reproduce import Comparison, Context, Explanation, Outcome, register

    @register("p1-table3", title="Table 3: goodput of 4 TCP flows", paper="P1 §5.2")
    def table3(ctx: Context) -> Outcome:
        sw = ctx.sweep(ctx.scenario("p1/table3.toml"), seeds=3 if ctx.quick else 30)
        ours = sw.summary.filter(pl.col("name") == "tcp1")["goodput_bps_mean"][0]
        return Outcome(
            comparisons=[
                # the paper's number, accepted within ±2 %
                Comparison("tcp1 goodput", ours / 1e6, paper=2.41, unit="Mbit/s", rtol=0.02),
                # the paper's min–max over its runs
                Comparison("tcp2 goodput", g2, interval=(1.1, 1.2), unit="Mbit/s"),
                # a bound the paper claims, with what it stands for
                Comparison("worst / requested", w, at_least=1.0, against="the request",
                           explanation=Explanation(
                               "queueing delay at 2 Mb/s exceeds RTT_dev",
                               doc="docs/papers/p1.md#t1-queueing",
                               script="python3 validation/p1_t1_rtt_dev.py",
                               covers=(0.98, 1.0))),
            ],
            sweeps=[sw.out],
        )

- Each :class:`Comparison` is checked against its reference (``paper`` value,
  ``interval``, or the bounds ``at_least`` / ``at_most``) widened by ``rtol`` (relative
  to the reference) or ``atol`` (absolute), and gets a verdict: ``within``;
  ``outside-explained`` when it is outside but its :class:`Explanation` (a paragraph of
  the docs and the script that shows why) covers the value; otherwise ``outside``. A
  comparison without a reference is ``info``. ``qoslab reproduce`` prints and reports
  the verdicts and exits with 1 when any comparison is ``outside``.
- ``ctx.quick`` is true under ``--quick``: use fewer seeds and shorter durations so
  ``reproduce --all --quick`` stays within minutes on a laptop.
- ``ctx.paper_only`` is true under ``--paper-only``: run only the paper's own
  configurations and skip qoslab's extra runs that explain a difference (P1: the
  tables rerun under the paper's eq. 1).
- ``ctx.run`` / ``ctx.sweep`` save their results under the experiment's directory; the
  report draws figures from those files (throughput over time for runs, goodput vs
  the swept parameter for sweeps) and puts ``comparisons`` (ours beside the paper's)
  and ``tables`` at the top of the experiment's section.
- :func:`figure` registers a function drawing the paper's figure from the experiment's
  saved tables (see its docstring); the report shows it first.
- Raise to fail: the experiment is recorded as failed with its error and the others go on.
"""

from __future__ import annotations

import importlib
import json
import math
import pkgutil
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

__all__ = [
    "FIGURES",
    "REGISTRY",
    "VERDICTS",
    "Comparison",
    "Context",
    "Experiment",
    "Explanation",
    "Outcome",
    "Saved",
    "count_verdicts",
    "discover",
    "experiment_status",
    "figure",
    "register",
    "run_experiments",
    "summarize",
]


VERDICTS = ("within", "outside-explained", "outside", "info")
"""Every verdict a comparison can get, best first (``info``: nothing to compare against)."""


@dataclass(frozen=True)
class Explanation:
    """Why a comparison may lie outside its reference: one sentence (``why``), the docs
    paragraph that says so (``doc``: a repository path with an ``#anchor``, e.g.
    ``docs/papers/p1.md#t1-queueing``) and the command that shows it (``script``, e.g.
    ``python3 validation/p1_t1_rtt_dev.py``). ``covers`` = (low, high) limits the values of
    *ours* it accounts for; outside them the comparison is plainly ``outside``."""

    why: str
    doc: str
    script: str = ""
    covers: tuple[float, float] | None = None

    def applies(self, ours: float) -> bool:
        """Whether this explanation accounts for the value ``ours``."""
        if self.covers is None:
            return True
        lo, hi = self.covers
        return lo <= ours <= hi


def _num(x: float) -> str:
    return f"{x:.6g}"


@dataclass
class Comparison:
    """One number of ours beside what it is compared against, and its verdict.

    Give exactly one reference: ``paper`` (the paper's value), ``interval`` (the paper's
    (min, max) over its runs) or a bound ``at_least`` and/or ``at_most`` (a claim such as
    "≥ the request" or "≤ 1.03 × the model"; ``against`` says what the bound stands
    for). ``rtol`` widens the reference by that fraction of its magnitude, ``atol`` by an
    absolute amount (the larger of the two applies). ``explanation`` turns ``outside``
    into ``outside-explained`` for the values it covers. With no reference the verdict is
    ``info``. ``unit`` and ``note`` are shown beside the numbers.
    """

    quantity: str
    ours: float
    paper: float | None = None
    unit: str = ""
    note: str = ""
    interval: tuple[float, float] | None = None
    at_least: float | None = None
    at_most: float | None = None
    against: str = ""
    rtol: float = 0.0
    atol: float = 0.0
    explanation: Explanation | None = None

    def __post_init__(self) -> None:
        kinds = [
            self.paper is not None,
            self.interval is not None,
            self.at_least is not None or self.at_most is not None,
        ]
        if sum(kinds) > 1:
            raise ValueError(
                f"comparison {self.quantity!r}: give one of paper=, interval= or "
                "at_least=/at_most=, not several"
            )
        if self.interval is not None:
            lo, hi = self.interval
            if lo > hi:
                raise ValueError(f"comparison {self.quantity!r}: interval {lo} > {hi}")
            self.interval = (float(lo), float(hi))
        if self.rtol < 0 or self.atol < 0:
            raise ValueError(f"comparison {self.quantity!r}: tolerances must be ≥ 0")
        self.ours = float(self.ours)

    @property
    def kind(self) -> str:
        """``value``, ``interval``, ``bound`` or ``none``: what ``ours`` is compared against."""
        if self.paper is not None:
            return "value"
        if self.interval is not None:
            return "interval"
        if self.at_least is not None or self.at_most is not None:
            return "bound"
        return "none"

    def limits(self) -> tuple[float | None, float | None]:
        """The reference range before tolerance: (low, high), None = unbounded."""
        if self.paper is not None:
            return float(self.paper), float(self.paper)
        if self.interval is not None:
            return self.interval
        return self.at_least, self.at_most

    def accepted(self) -> tuple[float | None, float | None]:
        """The range ``ours`` must lie in: :meth:`limits` widened by the tolerance."""
        lo, hi = self.limits()

        def slack(x: float) -> float:
            return max(self.atol, self.rtol * abs(x))

        return (
            None if lo is None else lo - slack(lo),
            None if hi is None else hi + slack(hi),
        )

    @property
    def verdict(self) -> str:
        """``within``, ``outside-explained``, ``outside`` or ``info`` (see the class)."""
        if self.kind == "none":
            return "info"
        lo, hi = self.accepted()
        x = self.ours
        inside = not math.isnan(x) and (lo is None or x >= lo) and (hi is None or x <= hi)
        if inside:
            return "within"
        if self.explanation is not None and not math.isnan(x) and self.explanation.applies(x):
            return "outside-explained"
        return "outside"

    @property
    def deviation(self) -> float | None:
        """Signed relative distance of ``ours`` outside the reference range (0 inside
        it); None without a reference or against a limit of 0."""
        lo, hi = self.limits()
        x = self.ours
        if lo is not None and x < lo:
            return (x - lo) / abs(lo) if lo != 0 else None
        if hi is not None and x > hi:
            return (x - hi) / abs(hi) if hi != 0 else None
        return None if self.kind == "none" else 0.0

    @property
    def reference(self) -> str:
        """The reference as text, e.g. ``53.2–53.3 ± 3 %``, ``≥ 1 (the request)``."""
        k = self.kind
        if k == "none":
            return ""
        if k == "value":
            ref = _num(self.paper)  # type: ignore[arg-type]
        elif k == "interval":
            lo, hi = self.interval  # type: ignore[misc]
            ref = f"{_num(lo)}–{_num(hi)}" if lo != hi else _num(lo)
        elif self.at_least is not None and self.at_most is not None:
            ref = f"{_num(self.at_least)}–{_num(self.at_most)}"
        elif self.at_least is not None:
            ref = f"≥ {_num(self.at_least)}"
        else:
            ref = f"≤ {_num(self.at_most)}"  # type: ignore[arg-type]
        tol = []
        if self.rtol:
            tol.append(f"{_num(self.rtol * 100)} %")
        if self.atol:
            tol.append(_num(self.atol))
        if tol:
            ref += " ± " + " or ".join(tol)
        if self.against:
            ref += f" ({self.against})"
        return ref

    def to_dict(self) -> dict[str, Any]:
        """The comparison with its verdict, as stored in ``reproduce.json``."""
        d = {
            "quantity": self.quantity,
            "ours": self.ours,
            "paper": self.paper,
            "unit": self.unit,
            "note": self.note,
            "kind": self.kind,
            "interval": list(self.interval) if self.interval else None,
            "at_least": self.at_least,
            "at_most": self.at_most,
            "against": self.against,
            "rtol": self.rtol,
            "atol": self.atol,
            "reference": self.reference,
            "deviation": self.deviation,
            "verdict": self.verdict,
            "explanation": None,
        }
        if self.explanation is not None:
            e = self.explanation
            d["explanation"] = {
                "why": e.why,
                "doc": e.doc,
                "script": e.script,
                "covers": list(e.covers) if e.covers else None,
            }
        return d


def count_verdicts(comparisons: list[Mapping[str, Any]]) -> dict[str, int]:
    """Number of comparisons per verdict (every verdict in :data:`VERDICTS` present)."""
    out = dict.fromkeys(VERDICTS, 0)
    for c in comparisons:
        v = c.get("verdict", "info")
        out[v] = out.get(v, 0) + 1
    return out


def experiment_status(entry: Mapping[str, Any]) -> str:
    """An experiment's status from its run and its verdicts: ``failed``, ``outside``
    (some comparison outside and unexplained), ``outside-explained``, or ``within``."""
    if entry.get("status") == "failed":
        return "failed"
    n = count_verdicts(entry.get("comparisons") or [])
    if n["outside"]:
        return "outside"
    if n["outside-explained"]:
        return "outside-explained"
    return "within"


def summarize(index: Mapping[str, Any]) -> dict[str, Any]:
    """Counts over a reproduction (``reproduce.json``): experiments per status and
    comparisons per verdict; ``ok`` is false when an experiment failed or a comparison is
    outside and unexplained."""
    exps = index.get("experiments", [])
    statuses = dict.fromkeys(("within", "outside-explained", "outside", "failed"), 0)
    verdicts = dict.fromkeys(VERDICTS, 0)
    for e in exps:
        statuses[experiment_status(e)] += 1
        for k, v in count_verdicts(e.get("comparisons") or []).items():
            verdicts[k] = verdicts.get(k, 0) + v
    ok = statuses["failed"] == 0 and verdicts["outside"] == 0
    return {"experiments": statuses, "comparisons": verdicts, "ok": ok}


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
    full: Sequence[str] = (),
    paper_only: bool = False,
) -> dict[str, Any]:
    """Runs the named experiments (all if ``names`` is None) into ``out`` and writes
    ``out/reproduce.json``: per experiment its status, comparisons, directories and
    mode. With ``quick``, experiments whose name starts with one of ``full`` still run
    in full mode (e.g. ``full=["p0-"]``: P0's full mode takes about a minute). With
    ``paper_only``, experiments skip their explanatory extra runs (``ctx.paper_only``)."""
    reg = discover()
    names = list(reg) if names is None else names
    unknown = [n for n in names if n not in reg]
    if unknown:
        from qoslab.exceptions import QoslabError

        known = ", ".join(reg) or "none registered yet"
        raise QoslabError(f"unknown experiment {unknown[0]!r}; known: {known}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    index: dict[str, Any] = {
        "quick": quick,
        "paper_only": paper_only,
        "experiments": [],
        "started": time.time(),
    }
    for name in names:
        exp = reg[name]
        q = quick and not any(name.startswith(p) for p in full)
        ctx = Context(name, out / name, q, workers, ray, paper_only)
        ctx.out.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        entry: dict[str, Any] = {"name": name, "title": exp.title, "paper": exp.paper, "quick": q}
        if paper_only:
            entry["paper_only"] = True
        log(f"reproduce {name}: {exp.title}")
        try:
            outcome = exp.fn(ctx) or Outcome()
            for tname, df in outcome.tables.items():
                df.write_parquet(ctx.out / f"table-{tname}.parquet")
            entry.update(
                status="done",
                comparisons=[c.to_dict() for c in outcome.comparisons],
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
        entry["verdicts"] = count_verdicts(entry.get("comparisons") or [])
        entry["verdict"] = experiment_status(entry)
        index["experiments"].append(entry)
    index["registered"] = list(reg)
    index["summary"] = summarize(index)
    (out / "reproduce.json").write_text(json.dumps(index, indent=2, default=str))
    return index

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
import numbers
import os
import re
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
from qoslab.scenario import (
    Scenario,
    _from_numpy,
    _plain,
    apply_overrides,
    as_list,
    check_seed,
    load,
    parse_key_path,
    run_key,
)
from qoslab.store import (
    OWN,
    TABLES,
    Result,
    atomic_write_text,
    group_delays,
    is_complete,
    new_stage,
    os_error,
    pid_alive,
    prepare_output,
    proc_start,
    remove_run,
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
    "query",
    "run_sweep",
    "summarise",
]

#: The DuckDB storage format of ``catalog.duckdb``: readable by DuckDB 1.0 and later
#: (the Python library and the ``duckdb`` command-line client alike).
CATALOG_STORAGE = "v1.0.0"

#: Metrics of the ``flows`` table summarised across seeds: with them the flow's added
#: round-trip delay ``extra_delay`` and its smoothed RTT ``srtt`` at the end [s], for
#: goodput against RTT; the summary also names each flow's group (``flow_group``).
SUMMARY_METRICS = ("goodput_bps", "goodput_bytes", "bytes_sent", "drops", "extra_delay", "srtt")


@dataclass
class SweepSpec:
    """What to sweep: ``grid`` maps key paths to values; ``seeds`` lists the seeds;
    ``labels`` gives each grid value its short name (the value itself when it is a
    number or a string, ``droptail-20`` for a table, or the name the user gave it)."""

    grid: dict[str, list[Any]] = field(default_factory=dict)
    seeds: list[int] = field(default_factory=lambda: [1])
    labels: dict[str, list[Any]] = field(default_factory=dict)
    #: Named settings ``{case name: {key path: value}}``, each crossed with the grid
    #: and the seeds; the case name is the ``case`` column of every table.
    cases: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: ``[sweep.labels]``: swept key (or ``case``) → the name figures give its axis.
    axis_labels: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for k, vs in self.grid.items():
            if k not in self.labels:
                self.labels[k] = value_labels(vs)

    @classmethod
    def from_scenario(
        cls,
        sc: Scenario,
        seeds: int | Sequence[int] | None = None,
        grid: Mapping[str, Sequence[Any]] | None = None,
        cases: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> SweepSpec:
        """The scenario's ``[sweep]`` table, with ``seeds``, ``grid`` and ``cases`` laid
        over it.

        A grid entry is a list of values, or a table ``{label = value, …}`` that names
        its values. Lists may also be tuples, ``range`` objects or numpy arrays, and
        seeds numpy integers."""
        table = dict(sc.sweep or {})
        unknown = set(table) - {"seeds", "grid", "cases", "labels"}
        if unknown:
            k = sorted(unknown)[0]
            raise scenario_error(
                sc.file, f"sweep.{k}", "unknown key; expected seeds, grid, cases or labels"
            )
        g = table.get("grid", {})
        if not isinstance(g, Mapping):
            raise scenario_error(
                sc.file, "sweep.grid", "expected a table of key path = [values, ...] (non-empty)"
            )
        if grid is not None and not isinstance(grid, Mapping):
            raise scenario_error(
                sc.file,
                "",
                "the argument grid must be a table {key path: [values]}, found a "
                f"{type(grid).__name__}",
            )
        values: dict[str, list[Any]] = {}
        labels: dict[str, list[Any]] = {}
        for where, src in (("sweep.grid.", g), ("", grid or {})):
            for k, v in src.items():
                if not isinstance(k, str):
                    raise scenario_error(
                        sc.file,
                        str(k),
                        f"a grid key is a key path such as link.0.rate, found {k!r}",
                    )
                vals, labs = _grid_entry(sc.file, f"{where}{k}", v)
                values[k], labels[k] = vals, labs
        for k in values:
            try:
                parse_key_path(k)
            except ValueError:
                raise scenario_error(
                    sc.file, f"sweep.grid.{k}", "not a key path like link.0.rate"
                ) from None
        case_table = table.get("cases", {})
        if cases is not None:
            if not isinstance(cases, Mapping):
                raise scenario_error(
                    sc.file,
                    "",
                    "the argument cases must be a table {case name: {key path: value}}, "
                    f"found a {type(cases).__name__}",
                )
            case_table = {**case_table, **cases}
        case_list = _cases(sc, case_table)
        axis_labels = _axis_labels(
            sc, table.get("labels", {}), [*([CASE] if case_list else []), *values]
        )
        _check_nested_keys(sc, list(values))
        for name, settings in case_list.items():
            _check_nested_keys(sc, list(values), list(settings), name)
        s = seeds if seeds is not None else table.get("seeds", 1)
        s = _from_numpy(s)
        if isinstance(s, numbers.Integral) and not isinstance(s, bool):
            s = int(s)
            if s < 1:
                raise scenario_error(sc.file, "sweep.seeds", f"expected a count >= 1, found {s}")
            if s > MAX_SEEDS:
                raise scenario_error(
                    sc.file, "sweep.seeds", f"expected at most {MAX_SEEDS} seeds, found {s}"
                )
            check_seed(sc.seed + s - 1, sc.file, "sweep.seeds")  # the last one too
            seed_list = [sc.seed + i for i in range(s)]
        else:
            lst = as_list(s)
            if lst is None:
                found = f"a {type(s).__name__}" if not isinstance(s, str) else repr(s)
                raise scenario_error(
                    sc.file, "sweep.seeds", f"expected a count or a list of seeds, found {found}"
                )
            if not lst:
                raise scenario_error(sc.file, "sweep.seeds", "expected a non-empty list of seeds")
            if len(lst) > MAX_SEEDS:
                raise scenario_error(
                    sc.file, "sweep.seeds", f"expected at most {MAX_SEEDS} seeds, found {len(lst)}"
                )
            seed_list = [
                check_seed(_from_numpy(x), sc.file, f"sweep.seeds[{i}]") for i, x in enumerate(lst)
            ]
        return cls(values, seed_list, labels, case_list, axis_labels)


#: The most seeds a sweep takes (a count beyond is a typo, not a plan).
MAX_SEEDS = 100_000

#: The column that holds a run's case name.
CASE = "case"


def _cases(sc: Scenario, table: Any) -> dict[str, dict[str, Any]]:
    """``[sweep.cases]`` checked: case names (plain names) → tables of key path → value."""
    if not isinstance(table, Mapping):
        raise scenario_error(
            sc.file, "sweep.cases", "expected a table of case name = { key path = value, … }"
        )
    out: dict[str, dict[str, Any]] = {}
    for name, settings in table.items():
        where = f"sweep.cases.{name}"
        if (
            not isinstance(name, str)
            or not name
            or not all(c.isalnum() or c in "-_.+" for c in name)
        ):
            raise scenario_error(
                sc.file, "sweep.cases", f"a case name is a plain name such as trtcm, found {name!r}"
            )
        if not isinstance(settings, Mapping):
            raise scenario_error(
                sc.file,
                where,
                'expected a table of key path = value, e.g. { "link.0.rate" = "1Mbps" }',
            )
        vals = {}
        for k, v in settings.items():
            if not isinstance(k, str):
                raise scenario_error(sc.file, where, f"a key path is a string, found {k!r}")
            try:
                parse_key_path(k)
            except ValueError:
                raise scenario_error(
                    sc.file, f"{where}.{k}", "not a key path like link.0.rate"
                ) from None
            vals[k] = _plain(v, sc.file, f"{where}.{k}")
        out[name] = vals
    return out


def _axis_labels(sc: Scenario, table: Any, swept: list[str]) -> dict[str, str]:
    """``[sweep.labels]`` checked: each key a swept key (or ``case`` in a sweep with
    cases), each value a non-empty string, the name figures give that key's axis."""
    example = 'e.g. { "link.0.rate" = "bottleneck rate" }'
    if not isinstance(table, Mapping):
        raise scenario_error(
            sc.file, "sweep.labels", f"expected a table of swept key = axis label, {example}"
        )
    out: dict[str, str] = {}
    for k, v in table.items():
        where = f"sweep.labels.{k}"
        if k not in swept:
            known = ", ".join(swept) if swept else "none: this sweep has no grid or cases"
            raise scenario_error(sc.file, where, f"not a swept key; the swept keys: {known}")
        if not isinstance(v, str) or not v.strip():
            raise scenario_error(
                sc.file, where, f"expected a non-empty text (the axis label), found {v!r}"
            )
        out[k] = v
    return out


def _grid_entry(file: str | None, key: str, v: Any) -> tuple[list[Any], list[Any]]:
    """One grid entry's values and labels: a non-empty list (or tuple, range, numpy
    array) of values, or a table ``{label = value, …}``; values are checked as scenario
    values (numpy numbers become Python ones, nesting is limited)."""
    if isinstance(v, Mapping):
        if not v:
            raise scenario_error(file, key, "grid values must be a non-empty list or table")
        vals = [_plain(x, file, f"{key}.{lab}") for lab, x in v.items()]
        return vals, [str(lab) for lab in v]
    lst = as_list(v)
    if not lst:
        what = "an empty list" if lst == [] else f"a {type(v).__name__}"
        raise scenario_error(
            file,
            key,
            f"grid values must be a non-empty list (or a table naming them), found {what}",
        )
    vals = [_plain(x, file, f"{key}[{i}]") for i, x in enumerate(lst)]
    return vals, value_labels(vals)


#: The longest label made for a table-valued grid value.
_LABEL_MAX = 40


def value_label(v: Any) -> Any:
    """A short name for a grid value: a number or a string is itself; a table is its
    ``name`` if it has one, else its ``kind`` and its other plain values joined by
    ``-`` (``{kind="droptail", limit=20}`` → ``droptail-20``); a list joins its
    entries' labels with ``+``."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return _label_text(v)[:_LABEL_MAX] or "-"


def _label_text(v: Any) -> str:
    if isinstance(v, Mapping):
        if isinstance(v.get("name"), str) and v["name"]:
            return v["name"]
        parts = [str(v["kind"])] if isinstance(v.get("kind"), str) else []
        parts += [_label_text(x) for k, x in v.items() if k not in ("kind", "name")]
        return "-".join(p for p in parts if p)
    if isinstance(v, list):
        return "+".join(_label_text(x) for x in v)
    if isinstance(v, bool):
        return str(v).lower()
    return str(v)


def value_labels(values: Sequence[Any]) -> list[Any]:
    """:func:`value_label` of each value, made unique (``#2``, ``#3`` appended to a
    label that two different values share)."""
    labels = [value_label(v) for v in values]
    count: dict[Any, int] = {}
    for lab in labels:
        count[str(lab)] = count.get(str(lab), 0) + 1
    seen: dict[str, int] = {}
    out = []
    for lab in labels:
        if count[str(lab)] > 1:
            seen[str(lab)] = seen.get(str(lab), 0) + 1
            lab = f"{lab}#{seen[str(lab)]}"
        out.append(lab)
    return out


def _resolve_path(data: Any, tokens: list[str | int]) -> list[str | int]:
    """``tokens`` with list entries chosen by name replaced by their index in ``data``
    (as far as ``data`` goes), so two spellings of one place compare equal."""
    out: list[str | int] = []
    node = data
    for tok in tokens:
        if isinstance(node, list):
            if isinstance(tok, str):
                idx = next(
                    (j for j, e in enumerate(node) if isinstance(e, dict) and e.get("name") == tok),
                    None,
                )
                tok = idx if idx is not None else tok
            node = node[tok] if isinstance(tok, int) and 0 <= tok < len(node) else None
        elif isinstance(node, dict):
            tok = str(tok)
            node = node.get(tok)
        else:
            node = None
        out.append(tok)
    return out


def _check_nested_keys(
    sc: Scenario, grid: list[str], case_keys: Sequence[str] = (), case: str | None = None
) -> None:
    """A grid key inside another (``conditioner.0.stages.0.cir`` inside ``conditioner``)
    is an error naming both: the outer value would replace the inner one in some runs
    and the runs would be labelled with a value they did not use. So is a key of the
    case ``case`` (``case_keys``) inside a grid key, or at the same place; a grid key
    inside a case key is fine (each run sets the case first, then the grid value in it)."""
    where = [(k, f"grid key {k!r}", f"sweep.grid.{k}") for k in grid]
    where += [(k, f"case {case!r} key {k!r}", f"sweep.cases.{case}.{k}") for k in case_keys]
    paths = [_resolve_path(sc.data, parse_key_path(k)) for k, _, _ in where]
    for i, pa in enumerate(paths):
        for j, pb in enumerate(paths):
            if i == j or len(pa) > len(pb) or pb[: len(pa)] != pa:
                continue
            if len(pa) == len(pb) and j < i:
                continue  # the same pair, reported the other way round
            if i >= len(grid) and j >= len(grid):
                continue  # two keys of one case: its table says what it sets
            if i >= len(grid) and len(pa) < len(pb):
                continue  # a grid key inside a case's table: the case is set first
            what = "the same place as" if len(pa) == len(pb) else "inside"
            (a, name_a, _), (_, name_b, key_b) = where[i], where[j]
            raise scenario_error(
                sc.file,
                key_b,
                f"{name_b} is {what} {name_a}: each run sets {a!r} whole, so the "
                f"values of {where[j][0]!r} would be overwritten or mislabelled; sweep one "
                "of them, or set both together in [sweep.cases]",
            )


@dataclass
class RunTask:
    """One run of a sweep: resolved scenario data, seed, the grid point, its key, and
    the grid point's labels (see :attr:`SweepSpec.labels`)."""

    key: str
    seed: int
    params: dict[str, Any]
    data: dict[str, Any]
    file: str | None
    labels: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.labels and self.params:
            self.labels = {k: value_label(v) for k, v in self.params.items()}


def _show(v: Any) -> str:
    return json.dumps(v, default=str) if not isinstance(v, str) else repr(v)


def plan(sc: Scenario, spec: SweepSpec) -> list[RunTask]:
    """Every (grid point × seed) run, in a stable order.

    Every grid point is resolved and checked with the engine first: a bad key or value
    raises :class:`~qoslab.ScenarioError` naming the key and the value (or, when the
    values are fine alone but not together, the whole point) before anything runs. Two
    grid points that resolve to the same scenario (a value equal to another, or one
    key undoing another) are an error naming both points.
    """
    from qoslab.api import check_data

    base: list[ScenarioError | None] = []

    def base_error() -> ScenarioError | None:
        """The scenario's own error without any grid value (checked once)."""
        if not base:
            try:
                check_data(sc, sc.data)
                base.append(None)
            except ScenarioError as e:
                base.append(e)
        return base[0]

    def bad_value(k: str, v: Any) -> ScenarioError | None:
        try:
            check_data(sc, apply_overrides(sc.data, {k: v}, file=sc.file))
        except ScenarioError as e:
            detail = getattr(e, "detail", str(e))
            at = getattr(e, "key", "")
            own = base_error() if at and at != k else None
            if own is not None and getattr(own, "key", "") == at:
                return own  # the scenario's mistake, whatever the grid value
            where = f" (at {at})" if at and at != k else ""
            msg = f"grid value {_show(v)} is not valid{where}: {detail}"
            return scenario_error(sc.file, k, msg)
        return None

    keys = list(spec.grid)
    tasks = []
    seen = set()
    points: dict[str, str] = {}
    labels_of = {k: spec.labels.get(k) or value_labels(spec.grid[k]) for k in keys}
    cases: list[tuple[str | None, dict[str, Any]]] = list(spec.cases.items()) or [(None, {})]
    for case, settings in cases:
        if case is not None:
            try:
                check_data(sc, apply_overrides(sc.data, settings, file=sc.file))
            except ScenarioError as e:
                for k, v in settings.items():  # the key at fault, if one is alone
                    try:
                        check_data(sc, apply_overrides(sc.data, {k: v}, file=sc.file))
                    except ScenarioError as e1:
                        at = getattr(e1, "key", "")
                        where = f" (at {at})" if at and at != k else ""
                        raise scenario_error(
                            sc.file,
                            f"sweep.cases.{case}.{k}",
                            f"case {case!r} key {k!r} = {_show(v)} is not valid{where}: "
                            f"{getattr(e1, 'detail', e1)}",
                        ) from None
                raise scenario_error(
                    sc.file,
                    f"sweep.cases.{case}",
                    f"the case {case!r} is not valid: {getattr(e, 'key', '')}: "
                    f"{getattr(e, 'detail', e)}",
                ) from None
        tasks += _plan_case(sc, spec, case, settings, keys, labels_of, seen, points, bad_value)
    return tasks


def _plan_case(sc, spec, case, settings, keys, labels_of, seen, points, bad_value):
    """The runs of one case (``None``: no cases) of :func:`plan`."""
    from qoslab.api import check_data

    tasks = []
    indices = itertools.product(*(range(len(spec.grid[k])) for k in keys))
    for idx in indices:
        params = {k: spec.grid[k][i] for k, i in zip(keys, idx, strict=True)}
        labels = {} if case is None else {CASE: case}
        labels.update({k: labels_of[k][i] for k, i in zip(keys, idx, strict=True)})
        shown = ", ".join(f"{k}={_show(v)}" for k, v in labels.items())
        try:
            data = apply_overrides(sc.data, {**settings, **params}, file=sc.file)
            check_data(sc, data)
        except ScenarioError as e:
            for k, v in params.items():
                err = bad_value(k, v)
                if err is not None:
                    raise err from None
            raise scenario_error(
                sc.file,
                getattr(e, "key", ""),
                f"the grid point {shown} is not valid: {getattr(e, 'detail', e)}",
            ) from None
        same = run_key(data, 0)
        if same in points:
            raise scenario_error(
                sc.file,
                "sweep.grid",
                f"the grid points {points[same]} and {shown} run the same scenario; "
                "each grid point must change the scenario (remove the repeated value, or "
                "the grid key that undoes another)",
            )
        points[same] = shown
        for seed in spec.seeds:
            key = run_key(data, seed)
            if key in seen:
                continue
            seen.add(key)
            tasks.append(
                RunTask(key, int(seed), params, {**data, "seed": int(seed)}, sc.file, labels)
            )
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


# --------------------------------------------------------------------------- results


def _finished(out: Path, tasks: list[RunTask]) -> list[RunTask]:
    return [t for t in tasks if is_complete(out / "runs" / t.key)]


def _param_columns(tasks: list[RunTask]) -> list[str]:
    """The columns that say a run's grid point: its case (with cases) and grid keys."""
    return list(tasks[0].labels) if tasks else []


def _with_params(df: pl.DataFrame, t: RunTask) -> pl.DataFrame:
    cols = [pl.lit(t.key).alias("run"), pl.lit(t.seed).alias("seed")]
    cols += [pl.lit(_param_value(v)).alias(k) for k, v in t.labels.items()]
    return df.select([*cols, *[c for c in df.columns if c not in ("run", "seed", *t.labels)]])


def _param_value(v: Any) -> Any:
    return v if isinstance(v, (int, float, str, bool)) else json.dumps(v, sort_keys=True)


def run_warnings(out: str | Path, tasks: list[RunTask] | None = None) -> list[str]:
    """The warnings of a sweep's finished runs, one line per kind (the text with its
    numbers taken out): how many runs gave it, and one run's words with its key, e.g.
    a ``drop_events`` table cut short by ``record.drop_events_limit`` in 9 of 9 runs. A
    sweep prints them, so that no run's warning goes unsaid."""
    out = Path(out)
    tasks = load_tasks(out) if tasks is None else tasks
    done = _finished(out, tasks)
    kinds: dict[str, tuple[set[str], str, str]] = {}  # kind: runs, first words, its run
    for t in done:
        try:
            warned = json.loads((out / "runs" / t.key / "summary.json").read_text())["warnings"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        for w in warned if isinstance(warned, list) else []:
            kind = re.sub(r"[0-9][0-9.,e+-]*", "N", str(w))
            kinds.setdefault(kind, (set(), str(w), t.key))[0].add(t.key)
    return [
        f"{len(runs)} of {len(done)} runs: {w} (e.g. run {key})" for runs, w, key in kinds.values()
    ]


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
    return [
        RunTask(r["key"], r["seed"], r["params"], {}, None, r.get("labels") or {})
        for r in plan_["runs"]
    ]


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
    if "group" in flows.columns:
        from qoslab.studies import FLOW_GROUP

        aggs.append(pl.col("group").first().alias(FLOW_GROUP))
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
    _write_parquet(out, "summary.parquet", s)
    params = _param_columns(tasks)
    for name, df in _diffserv_summaries(out, tasks, flows, params).items():
        if df is None or df.is_empty():
            (out / f"{name}.parquet").unlink(missing_ok=True)
        else:
            _write_parquet(out, f"{name}.parquet", df)
    return s


def _write_parquet(out: Path, name: str, df: pl.DataFrame) -> None:
    tmp = out / OWN / f"{name}.{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.parent.mkdir(exist_ok=True)
    try:
        df.write_parquet(tmp)
        os.replace(tmp, out / name)
    finally:
        tmp.unlink(missing_ok=True)


#: The summaries beside ``summary.parquet`` (each ``<name>.parquet`` and a catalog
#: table): per flow group, per DiffServ class, per meter and colour, per queue and
#: colour (drops), per sampled RIO/WRED queue and colour (RED averages).
EXTRA_SUMMARIES = (
    "summary_groups",
    "summary_classes",
    "summary_colours",
    "summary_colour_drops",
    "summary_colour_averages",
)


def seed_stats(df: pl.DataFrame, by: list[str], metrics: list[str]) -> pl.DataFrame:
    """Per value of ``by``: ``n`` (rows, one per seed) and each metric's ``_mean``,
    ``_std`` and ``_ci95`` (half-width of the 95 % Student-t interval of the mean)."""
    metrics = [m for m in metrics if m in df.columns]
    aggs: list[pl.Expr] = [pl.len().alias("n")]
    for m in metrics:
        aggs += [
            pl.col(m).cast(pl.Float64).mean().alias(f"{m}_mean"),
            pl.col(m).cast(pl.Float64).std().alias(f"{m}_std"),
        ]
    s = df.group_by(by, maintain_order=True).agg(aggs)
    tq = pl.col("n").map_elements(lambda n: t95(n - 1), return_dtype=pl.Float64)
    return s.with_columns(
        [(tq * pl.col(f"{m}_std") / pl.col("n").sqrt()).alias(f"{m}_ci95") for m in metrics]
    )


#: The per-group delay columns of ``summary_groups`` (runs with ``record.delays``).
GROUP_DELAY_METRICS = ("delay_mean", "delay_p50", "delay_p95", "delay_p99", "delay_max")


def _diffserv_summaries(
    out: Path, tasks: list[RunTask], flows: pl.DataFrame, params: list[str]
) -> dict[str, pl.DataFrame | None]:
    """Across seeds, per grid point: goodput, share, drops, retransmissions and Jain's
    fairness index per flow group (``count``/``group`` flows; with ``record.delays``
    also the group's one-way packet delay: mean, p50, p95, p99, max) and per DiffServ
    class; packets of each colour per meter; queue drops of each colour (``none``: no
    drop precedence, best effort among them) per interface and class; the per-colour
    RED averages of sampled RIO/WRED queues."""
    from qoslab.studies import DROP_COLOURS, class_colour_drops, group_fairness
    from qoslab.tables import with_numeric_companions

    res: dict[str, pl.DataFrame | None] = dict.fromkeys(EXTRA_SUMMARIES)
    sums = ("goodput_bps", "drops", "retransmits")

    def per_run(df: pl.DataFrame, key: list[str], cols: list[str]) -> pl.DataFrame:
        cols = [c for c in cols if c in df.columns]
        g = df.group_by(["run", *params, *key], maintain_order=True).agg(
            [pl.col(c).sum() for c in cols]
        )
        if "goodput_bps" in cols:
            total = pl.col("goodput_bps").sum().over("run")
            g = g.with_columns((pl.col("goodput_bps") / total).alias("share"))
        return g

    def finish(df: pl.DataFrame, key: list[str], cols: list[str]) -> pl.DataFrame:
        return with_numeric_companions(seed_stats(df, [*params, *key], cols), params)

    if "group" in flows.columns:
        g = per_run(flows.filter(pl.col("group") != ""), ["group"], list(sums))
        metrics = [*sums, "share"]
        jain = group_fairness(flows, ["run"])
        if not jain.is_empty():
            g = g.join(jain, on=["run", "group"], how="left", maintain_order="left")
            metrics.append("jain")
        hist = gather(out, "delay_histogram", tasks)
        if not hist.is_empty():
            # Per run, the percentiles of all the group's packets together; then the
            # mean and interval of each across seeds.
            tabs = {"delay_histogram": hist, "delays": gather(out, "delays", tasks)}
            d = group_delays({**tabs, "flows": flows}, by=["run"])
            if not d.is_empty():
                g = g.join(d, on=["run", "group"], how="left", maintain_order="left")
                metrics += [c for c in GROUP_DELAY_METRICS if c in d.columns]
        res["summary_groups"] = finish(g, ["group"], metrics)
    fc = gather(out, "flow_classes", tasks)
    if not fc.is_empty() and {"flow", "class"} <= set(fc.columns):
        j = flows.join(fc.select("run", "flow", "class"), on=["run", "flow"])
        c = per_run(j, ["class"], list(sums))
        res["summary_classes"] = finish(c, ["class"], [*sums, "share"])
    colours = gather(out, "colours", tasks)
    pk = ["green_pkts", "yellow_pkts", "red_pkts"]
    if not colours.is_empty() and set(pk) <= set(colours.columns):
        key = [k for k in ("place", "stage", "kind") if k in colours.columns]
        c = per_run(colours, key, pk).with_columns(
            (pl.col("green_pkts") / pl.sum_horizontal(pk)).alias("green_fraction")
        )
        res["summary_colours"] = finish(c, key, [*pk, "green_fraction"])
    drops = class_colour_drops(
        gather(out, "classes", tasks), gather(out, "colour_drops", tasks), ["run", *params]
    )
    if not drops.is_empty():
        dk = [*(f"dropped_{c}" for c in DROP_COLOURS), "dropped"]
        res["summary_colour_drops"] = finish(drops, ["iface", "class"], dk)
    res["summary_colour_averages"] = _colour_averages(out, tasks, params, finish)
    return res


#: The per-colour RED averages of ``queue_colour_samples`` (RIO-C, RIO-D, WRED).
COLOUR_AVERAGES = ("avg_green", "avg_yellow", "avg_red")


def _colour_averages(
    out: Path, tasks: list[RunTask], params: list[str], finish: Callable[..., pl.DataFrame]
) -> pl.DataFrame | None:
    """Per grid point, sampled queue (``iface``, ``class``): the time-mean after the
    warm-up of each colour's RED average (``avg_green``, ``avg_yellow``, ``avg_red``
    [packets], as the queue's drop decisions use them) in each run, then their mean and
    95 % interval across seeds. ``None`` when no run sampled a multi-colour queue."""
    qcs = gather(out, "queue_colour_samples", tasks)
    cols = [c for c in COLOUR_AVERAGES if c in qcs.columns]
    if qcs.is_empty() or not cols or not {"t", "iface"} <= set(qcs.columns):
        return None
    warm = {}
    for t in _finished(out, tasks):
        try:
            s = json.loads((out / "runs" / t.key / "summary.json").read_text())
            warm[t.key] = float(s.get("warmup") or 0.0)
        except (OSError, ValueError, TypeError):
            warm[t.key] = 0.0
    key = [k for k in ("iface", "class") if k in qcs.columns]
    w = pl.col("run").replace_strict(warm, default=0.0, return_dtype=pl.Float64)
    per_run = (
        qcs.filter(pl.col("t") >= w)
        .group_by(["run", *params, *key], maintain_order=True)
        .agg([pl.col(c).cast(pl.Float64).mean() for c in cols])
    )
    if per_run.is_empty():
        return None
    return finish(per_run, key, cols)


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
        row.update({k: _param_value(v) for k, v in t.labels.items()})
        row.update(numeric_companions(t.labels))  # link.2.rate_bps …: ORDER BY by value
        if t.key in done:
            s = json.loads((out / "runs" / t.key / "summary.json").read_text())
            row.update(
                status="done", events=s.get("events"), wall_s=s.get("wall_s"), host=s.get("host")
            )
            if s.get("ray_node"):
                row["ray_node"] = s["ray_node"]
            names += [n for n in s.get("tables", []) if isinstance(n, str) and n not in names]
        elif (out / "failed" / f"{t.key}.json").is_file():
            f = json.loads((out / "failed" / f"{t.key}.json").read_text())
            row.update(status="failed", error=f"{f.get('error_type')}: {f.get('error')}")
        rows.append(row)
    _number_companions(rows, tasks)
    runs = with_sql_aliases(pl.DataFrame(rows, infer_schema_length=None))
    (out / OWN).mkdir(exist_ok=True)
    tmp = out / OWN / f"catalog.duckdb.{os.getpid()}-{uuid.uuid4().hex[:8]}"
    con = duckdb.connect(":memory:")
    try:
        # An older storage version than the library's own: DuckDB 2.0 writes version
        # 69 by default, which the command-line client on PyPI (duckdb-cli 1.5) and
        # DuckDB 1.x libraries refuse to open.
        path = str(tmp).replace("'", "''")
        con.execute(f"ATTACH '{path}' AS catalog (STORAGE_VERSION '{CATALOG_STORAGE}')")
        con.execute("USE catalog")
        con.execute("SET file_search_path = ?", [str(out)])
        con.register("runs_df", runs.to_arrow())
        con.execute("CREATE TABLE runs AS SELECT * FROM runs_df")
        # The grid point (with the numeric companions and plain-named aliases).
        lead = [c for c in runs.columns if c not in ("run", "seed", *_RUN_COLUMNS)]
        params = "".join(f', r."{k}"' for k in lead)
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
            # A reserved-word column of the runs' own tables (flows.group) gets its
            # alias too, when the first file has it (then the union of all has it).
            first = pl.read_parquet_schema(out / files[0])
            aliases = "".join(
                f', t."{old}" AS {new}'
                for old, new in SQL_ALIASES.items()
                if old in first and new not in first and new not in lead
            )
            con.execute(
                f'CREATE VIEW "{name}" AS SELECT r.run, r.seed{params}, t.* EXCLUDE (filename)'
                f"{aliases} "
                f"FROM read_parquet([{lst}], union_by_name = true, filename = true) t "
                "JOIN runs r ON r.run = regexp_extract(t.filename, '(^|/)runs/([^/]+)/[^/]+$', 2)"
            )
        for table in ("summary", *EXTRA_SUMMARIES):
            if (out / f"{table}.parquet").is_file():
                df = with_sql_aliases(pl.read_parquet(out / f"{table}.parquet"))
                con.register("summary_df", df.to_arrow())
                con.execute(f'CREATE TABLE "{table}" AS SELECT * FROM summary_df')
                con.unregister("summary_df")
    finally:
        con.close()
    try:
        os.replace(tmp, out / "catalog.duckdb")
    finally:
        tmp.unlink(missing_ok=True)
        Path(f"{tmp}.wal").unlink(missing_ok=True)
    return out / "catalog.duckdb"


#: The columns of the catalog's ``runs`` table that describe a run, not its grid point.
_RUN_COLUMNS = ("status", "error", "events", "wall_s", "host", "ray_node")

#: Catalog columns named by SQL reserved words (``SELECT case, group …`` does not
#: parse), each with a plain-named copy beside it in every table and view that has it.
SQL_ALIASES = {"case": "case_name", "group": "flow_group"}


def with_sql_aliases(df: pl.DataFrame) -> pl.DataFrame:
    """``df`` with a copy of each column named by an SQL reserved word under its plain
    name (:data:`SQL_ALIASES`) right after it, unless that name is taken."""
    cols = list(df.columns)
    for old, new in SQL_ALIASES.items():
        if old in df.columns and new not in df.columns:
            df = df.with_columns(pl.col(old).alias(new))
            cols.insert(cols.index(old) + 1, new)
    return df.select(cols)


def _number_companions(rows: list[dict[str, Any]], tasks: list[RunTask]) -> None:
    """Fills the numeric companion of a swept value given as a plain number (a rate in
    bit/s, a time in seconds) where other values of the same key carry a unit, so that
    every run of the catalog has one: ``link.2.rate`` = 500000 beside ``"1Mbps"``."""
    names: dict[str, str] = {}
    for row, t in zip(rows, tasks, strict=True):
        for k in t.labels:
            for suffix in ("_bps", "_s", "_bytes"):
                if f"{k}{suffix}" in row:
                    names.setdefault(k, f"{k}{suffix}")
    for row, t in zip(rows, tasks, strict=True):
        for k, name in names.items():
            v = t.labels.get(k)
            if name not in row and isinstance(v, (int, float)) and not isinstance(v, bool):
                row[name] = float(v)


def query(out: str | Path, sql: str) -> pl.DataFrame:
    """The result of the SQL ``sql`` over the catalog of the sweep folder ``out`` as a
    polars DataFrame: ``query("results/x-sweep", "SELECT * FROM runs")`` (the same with
    DuckDB 1.x and 2.x, whose connections no longer have ``execute(…).pl()``)."""
    con = open_catalog(out)
    try:
        df = pl.from_arrow(con.sql(sql).to_arrow_table())
    finally:
        con.close()
    assert isinstance(df, pl.DataFrame)
    return df


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

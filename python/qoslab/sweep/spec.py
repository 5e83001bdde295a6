"""A sweep's plan: the ``[sweep]`` table or CLI flags as a :class:`SweepSpec`, its cases
and labels, and every run as a :class:`RunTask` resolved and checked before any starts
(:func:`plan`)."""

from __future__ import annotations

import itertools
import json
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from qoslab.exceptions import ScenarioError, scenario_error
from qoslab.scenario import (
    Scenario,
    _from_numpy,
    _plain,
    apply_overrides,
    as_list,
    check_seed,
    parse_key_path,
    run_key,
)


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

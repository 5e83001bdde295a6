"""Scenario files on the Python side: load TOML (or take a dict), apply overrides by
key path, strip the ``[sweep]`` table, and hash a resolved scenario.

Key paths name a value in the scenario's tree. Both spellings work:
``link.0.rate`` / ``link[0].rate`` (list index) and ``flow.cbr1.cbr.rate`` (a list
element chosen by its ``name``). Errors use the engine's spelling, ``flow[2].cbr.rate``.
"""

from __future__ import annotations

import copy
import datetime as _dt
import hashlib
import json
import math
import numbers
import os
import re
import stat
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qoslab.exceptions import scenario_error

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = [
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_FLOW_COUNT",
    "Scenario",
    "apply_overrides",
    "as_list",
    "check_seed",
    "expand_flow_groups",
    "expand_flows",
    "load",
    "parse_key_path",
    "parse_value",
    "run_key",
    "to_json",
]

_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")

#: How deeply tables and lists may nest (the engine's limit too).
MAX_DEPTH = 32

#: The largest scenario file read [bytes]: a scenario is text of a few kilobytes; a
#: bigger file is a mistake (a capture, a log) and is refused before it is read.
MAX_FILE_BYTES = 16 * 2**20

_U64_MAX = 2**64 - 1
_I64_MIN = -(2**63)


def check_seed(value: Any, file: str | None = None, key: str = "seed") -> int:
    """``value`` as a run seed, a whole number from 0 to 2^64 − 1; anything else (a
    string, a fraction, a negative or too large number, a bool) raises
    :class:`~qoslab.ScenarioError` at ``key``."""
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if ok and 0 <= int(value) <= _U64_MAX:
        return int(value)
    found = f"the string {json.dumps(value)}" if isinstance(value, str) else repr(value)
    raise scenario_error(
        file, key, f"expected a seed: a whole number from 0 to {_U64_MAX}, found {found}"
    )


def _plain(value: Any, file: str | None, path: str, depth: int = 0) -> Any:
    """A copy of ``value`` holding only what a scenario can (tables with string keys,
    lists, strings, finite numbers, booleans, dates); anything else raises
    :class:`~qoslab.ScenarioError` naming the key path ``path``."""
    if depth > MAX_DEPTH:
        raise scenario_error(
            file, path, f"tables and lists nest more than {MAX_DEPTH} levels deep here"
        )
    value = _from_numpy(value)
    if value is None or isinstance(value, (bool, str, _dt.date, _dt.time)):
        return value
    if isinstance(value, numbers.Integral):
        v = int(value)
        if path == "seed":
            return check_seed(v, file)
        if not _I64_MIN <= v <= _U64_MAX:
            raise scenario_error(
                file, path, f"expected a number from {_I64_MIN} to {_U64_MAX}, found {v}"
            )
        return v
    if isinstance(value, numbers.Real):
        f = float(value)
        if not math.isfinite(f):
            raise scenario_error(file, path, f"expected a finite number, found {f}")
        return f
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise scenario_error(
                    file, path, f"keys must be strings, found {type(k).__name__} {k!r}"
                )
            out[k] = _plain(v, file, f"{path}.{k}" if path else k, depth + 1)
        return out
    if isinstance(value, (list, tuple, range)):
        return [_plain(v, file, f"{path}[{i}]", depth + 1) for i, v in enumerate(value)]
    raise scenario_error(
        file,
        path,
        f"a {type(value).__name__} cannot be a scenario value "
        "(expected a string, number, boolean, list or table)",
    )


def _from_numpy(value: Any) -> Any:
    """A numpy scalar or array as the Python number or list it holds (``value`` as it
    is otherwise); numpy is not imported for this."""
    if type(value).__module__ == "numpy" and hasattr(value, "tolist"):
        return value.tolist()
    return value


def as_list(value: Any) -> list[Any] | None:
    """``value`` as a list when it is one, a tuple, a ``range`` or a numpy array; else
    ``None`` (a string, a table, a number)."""
    value = _from_numpy(value)
    if isinstance(value, (list, tuple, range)):
        return list(value)
    return None


@dataclass
class Scenario:
    """A scenario as data: ``data`` is what the engine gets, ``sweep`` the stripped
    ``[sweep]`` table (``None`` if absent), ``file`` where it came from, ``overrides``
    the ``{key path: value}`` applied to it so far (see :meth:`with_overrides`)."""

    data: dict[str, Any]
    file: str | None = None
    sweep: dict[str, Any] | None = None
    overrides: dict[str, Any] = field(default_factory=dict)

    @property
    def seed(self) -> int:
        """The scenario's own seed (default 1, as the engine's); a seed that is not a
        whole number from 0 to 2^64 − 1 raises :class:`~qoslab.ScenarioError`."""
        return check_seed(self.data.get("seed", 1), self.file)

    def with_overrides(self, overrides: Mapping[str, Any] | None) -> Scenario:
        """A copy with ``overrides`` applied (the original is left alone)."""
        if overrides is not None and not isinstance(overrides, Mapping):
            raise scenario_error(
                self.file,
                "",
                "the argument overrides must be a table {key path: value}, e.g. "
                f'{{"link.0.rate": "5Mbps"}}, found a {type(overrides).__name__}',
            )
        if not overrides:
            return self
        data = apply_overrides(self.data, overrides, file=self.file)
        return Scenario(data, self.file, self.sweep, {**self.overrides, **overrides})

    @property
    def name(self) -> str:
        """``name`` from the file, else the file's stem, else ``"scenario"``."""
        if isinstance(self.data.get("name"), str) and self.data["name"]:
            return self.data["name"]
        if self.file:
            return Path(self.file).stem
        return "scenario"


def load(scenario: str | Path | Mapping[str, Any] | Scenario) -> Scenario:
    """Reads a TOML (or ``.json``) scenario file, or takes a dict, and strips ``sweep``."""
    if isinstance(scenario, Scenario):
        _plain(scenario.data, scenario.file, "")
        return scenario
    if isinstance(scenario, Mapping):
        data = scenario
        file = None
    elif isinstance(scenario, (str, os.PathLike)) and str(scenario):
        path = Path(scenario)
        file = str(path)
        text = _read_file(path, file)
        data = _parse_text(text, file, json_=path.suffix.lower() == ".json")
    else:
        found = "an empty path" if isinstance(scenario, str) else f"a {type(scenario).__name__}"
        if isinstance(scenario, bytes):
            found += " (decode it: a path is a str)"
        raise scenario_error(
            None,
            "",
            "the argument scenario must be a file path (str or Path), a table (dict) or a "
            f"Scenario, found {found}",
        )
    if not isinstance(data, Mapping):
        raise scenario_error(file, "", "expected a table of keys at the top level")
    data = _plain(data, file, "")
    sweep = data.pop("sweep", None)
    if sweep is not None and not isinstance(sweep, dict):
        raise scenario_error(file, "sweep", "expected a table, e.g. [sweep] seeds = 10")
    return Scenario(data, file, sweep)


def _read_file(path: Path, file: str) -> str:
    """The text of the scenario file ``path``; a missing or unreadable file, anything
    but a regular file (a FIFO would block, ``/dev/zero`` never ends) and a file above
    :data:`MAX_FILE_BYTES` raise :class:`~qoslab.ScenarioError`."""
    try:
        st = path.stat()
    except FileNotFoundError:
        raise scenario_error(file, "", "no such file") from None
    except (OSError, ValueError) as e:
        raise scenario_error(file, "", f"cannot be read ({e})") from None
    if stat.S_ISDIR(st.st_mode):
        raise scenario_error(file, "", "is a folder, not a scenario file")
    if not stat.S_ISREG(st.st_mode):
        raise scenario_error(
            file, "", "is not a regular file (a pipe, a device or a socket); give a TOML file"
        )
    if st.st_size > MAX_FILE_BYTES:
        raise scenario_error(
            file,
            "",
            f"is {st.st_size} bytes, larger than a scenario can be ({MAX_FILE_BYTES} bytes)",
        )
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise scenario_error(file, "", f"cannot be read ({e})") from None
    if len(raw) > MAX_FILE_BYTES:
        raise scenario_error(file, "", f"is larger than a scenario can be ({MAX_FILE_BYTES} bytes)")
    try:
        # utf-8-sig: a byte-order mark some editors write is not part of the text.
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise scenario_error(file, "", f"cannot be read ({e})") from None


def _parse_text(text: str, file: str, json_: bool) -> Any:
    """A scenario file's text parsed as JSON or TOML; syntax errors and nesting deeper
    than the parser can follow raise :class:`~qoslab.ScenarioError`."""
    deep = f"tables and lists nest too deeply (at most {MAX_DEPTH} levels)"
    if json_:
        try:
            return json.loads(text, parse_constant=_no_constant)
        except json.JSONDecodeError as e:
            raise scenario_error(
                file, "", f"not valid JSON: {e.msg} (at line {e.lineno}, column {e.colno})"
            ) from None
        except ValueError as e:  # NaN / Infinity, or a number too long to convert
            raise scenario_error(file, "", _value_error(e)) from None
        except RecursionError:
            raise scenario_error(file, "", deep) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise scenario_error(file, "", f"not valid TOML: {e}") from None
    except ValueError as e:  # tomllib converts numbers with int(), which has limits
        raise scenario_error(file, "", f"not valid TOML: {_value_error(e)}") from None
    except RecursionError:
        raise scenario_error(file, "", deep) from None


def _value_error(e: ValueError) -> str:
    if "Exceeds the limit" in str(e):
        return "a number has thousands of digits; no scenario value is that large"
    return str(e)


def _no_constant(name: str) -> Any:
    raise ValueError(f"expected finite numbers, found {name} (JSON has no {name})")


#: The most copies one ``[[flow]]`` may stand for (``count``).
MAX_FLOW_COUNT = 10_000


def expand_flow_groups(
    data: Mapping[str, Any], file: str | None = None
) -> tuple[dict[str, Any], dict[str, str]]:
    """``data`` as the engine reads it, and each flow's group (flow name → group).

    A ``[[flow]]`` with ``count = N`` (N > 1) stands for N copies named ``<name>-1`` …
    ``<name>-N``, alike but for their names, so that each draws its own start time from
    ``start_jitter`` and its own random streams; their ``group`` is ``group`` if given,
    else the flow's name. A flow without ``count`` may carry a ``group`` label too.
    ``extra_delay`` gives each copy its own added delay (see :func:`expand_flows`).
    ``count``, ``group`` and ``extra_delay`` are Python-side keys: the engine never
    sees them."""
    engine, groups, _ = expand_flows(data, file)
    return engine, groups


#: The keys of a spread of ``extra_delay`` values (``{ min, max, spread }``).
_SPREAD_KEYS = ("min", "max", "spread")

_DUR_UNITS = {"": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9, "min": 60.0}
_DUR = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-zµ]*)\s*$")


def _delay_seconds(v: Any, file: str | None, key: str) -> float:
    """A duration as the engine reads it (seconds as a number, or ``"10ms"``), in
    seconds; zero or positive."""
    x: float | None = None
    if isinstance(v, numbers.Real) and not isinstance(v, bool):
        x = float(v)
    elif isinstance(v, str):
        m = _DUR.match(v)
        if m and m.group(2) in _DUR_UNITS:
            x = float(m.group(1)) * _DUR_UNITS[m.group(2)]
    if x is None or not math.isfinite(x) or not 0 <= x < 1e9:
        raise scenario_error(
            file, key, f'expected a duration of zero or more like "10ms", found {v!r}'
        )
    return x


def _extra_delays(
    spec: Any, count: int, name: str, seed: int, file: str | None, key: str
) -> list[float]:
    """The ``extra_delay`` of each of a flow's ``count`` copies [s]: a list of one
    duration per copy, one duration for all, or ``{ min, max, spread }``: evenly from
    ``min`` to ``max`` (``spread = "even"``, the default; the first copy gets ``min``,
    the last ``max``), or drawn uniformly from [min, max) per copy (``"uniform"``),
    from a stream of the run's seed and the flow's name (each seed draws anew)."""
    if isinstance(spec, Mapping):
        bad = sorted(set(spec) - set(_SPREAD_KEYS))
        if bad:
            raise scenario_error(
                file, f"{key}.{bad[0]}", "unknown key; expected min, max and spread"
            )
        for k in ("min", "max"):
            if k not in spec:
                raise scenario_error(file, f"{key}.{k}", "required (the range of the copies)")
        lo = _delay_seconds(spec["min"], file, f"{key}.min")
        hi = _delay_seconds(spec["max"], file, f"{key}.max")
        if hi < lo:
            raise scenario_error(
                file, f"{key}.max", f"expected max >= min, found {spec['max']!r} < {spec['min']!r}"
            )
        spread = spec.get("spread", "even")
        if spread == "even":
            if count == 1:
                return [lo]
            return [lo + (hi - lo) * k / (count - 1) for k in range(count)]
        if spread == "uniform":
            import random

            h = hashlib.sha256(f"{seed}/{name}/extra_delay".encode()).digest()
            rng = random.Random(int.from_bytes(h[:8], "little"))
            return [lo + (hi - lo) * rng.random() for _ in range(count)]
        raise scenario_error(
            file, f"{key}.spread", f'expected "even" or "uniform", found {spread!r}'
        )
    if isinstance(spec, list):
        if len(spec) != count:
            raise scenario_error(
                file,
                key,
                f"expected one delay per copy: {count} (count = {count}), found a list of "
                f"{len(spec)}",
            )
        return [_delay_seconds(v, file, f"{key}[{i}]") for i, v in enumerate(spec)]
    d = _delay_seconds(spec, file, key)
    return [d] * count


def expand_flows(
    data: Mapping[str, Any], file: str | None = None
) -> tuple[dict[str, Any], dict[str, str], dict[str, float]]:
    """:func:`expand_flow_groups` that also returns each delayed flow's ``extra_delay``
    [s] (flow name → seconds; flows without one are absent).

    A flow's ``extra_delay`` holds its data packets at its sender (a ``delay`` stage of a
    ``policy`` rule matching the flow, appended to the chain ``at`` the flow's ``from``
    host, or a chain made for it), so its round-trip time is the path's plus that
    delay: per copy from a list, evenly spread or drawn from a range (the usual way to
    give a group of TCP flows different RTTs over one access link)."""
    flows = data.get("flow")
    if not isinstance(flows, list) or not any(
        isinstance(f, dict) and ({"count", "group", "extra_delay"} & set(f)) for f in flows
    ):
        return dict(data), {}, {}
    out: list[Any] = []
    groups: dict[str, str] = {}
    extra: dict[str, float] = {}
    senders: dict[str, list[str]] = {}  # host → names of its delayed flows, in order
    seed = data.get("seed", 1)
    for i, f in enumerate(flows):
        if not isinstance(f, dict) or not ({"count", "group", "extra_delay"} & set(f)):
            out.append(f)
            continue
        f = dict(f)
        count = f.pop("count", 1)
        group = f.pop("group", None)
        delay_spec = f.pop("extra_delay", None)
        if (
            isinstance(count, bool)
            or not isinstance(count, int)
            or not 1 <= count <= MAX_FLOW_COUNT
        ):
            raise scenario_error(
                file,
                f"flow[{i}].count",
                f"expected a whole number of copies from 1 to {MAX_FLOW_COUNT}, found {count!r}",
            )
        if group is not None and (not isinstance(group, str) or not group):
            raise scenario_error(
                file, f"flow[{i}].group", f"expected a group name (a string), found {group!r}"
            )
        name = f.get("name")
        if count > 1 and (not isinstance(name, str) or not name):
            raise scenario_error(
                file, f"flow[{i}].name", "a flow with count > 1 needs a name (its copies' stem)"
            )
        delays = None
        if delay_spec is not None:
            if not isinstance(name, str) or not name:
                raise scenario_error(
                    file, f"flow[{i}].name", "a flow with extra_delay needs a name"
                )
            if not isinstance(f.get("from"), str):
                raise scenario_error(file, f"flow[{i}].from", "required (a host's name)")
            delays = _extra_delays(delay_spec, count, name, seed, file, f"flow[{i}].extra_delay")
        names = [name] if count == 1 else [f"{name}-{k + 1}" for k in range(count)]
        for k, n in enumerate(names):
            out.append(f if count == 1 else dict(f, name=n))
            if isinstance(n, str) and (count > 1 or group is not None):
                groups[n] = group or name
            if delays is not None and delays[k] > 0:
                extra[n] = delays[k]
                senders.setdefault(f["from"], []).append(n)
    res = {**data, "flow": out}
    if senders:
        res["conditioner"] = _delay_chains(data.get("conditioner"), senders, extra)
    return res, groups, extra


def _delay_chains(
    conditioners: Any, senders: dict[str, list[str]], extra: dict[str, float]
) -> list[Any]:
    """The ``[[conditioner]]`` list with, at each sending host of delayed flows, a
    ``policy`` stage holding each flow's data for its ``extra_delay`` (appended to the
    host's own chain, so its stages keep their indices)."""
    chains = [dict(c) if isinstance(c, dict) else c for c in (conditioners or [])]
    for host, names in senders.items():
        stage = {
            "kind": "policy",
            "rules": [
                {"filter": {"flow": n}, "conditioner": {"kind": "delay", "delay": extra[n]}}
                for n in names
            ],
        }
        own = next(
            (c for c in chains if isinstance(c, dict) and c.get("at") == host),
            None,
        )
        if own is not None and isinstance(own.get("stages"), list):
            own["stages"] = [*own["stages"], stage]
        else:
            chains.append({"at": host, "stages": [stage]})
    return chains


def parse_key_path(path: str) -> list[str | int]:
    """``"flow[2].cbr.rate"`` or ``"flow.2.cbr.rate"`` → ``["flow", 2, "cbr", "rate"]``;
    a name stays a string (``"flow.cbr1.rate"`` → ``["flow", "cbr1", "rate"]``)."""
    tokens: list[str | int] = []
    pos = 0
    for m in _TOKEN.finditer(path):
        gap = path[pos : m.start()]
        if gap not in ("", "."):
            raise ValueError(f"bad key path {path!r}")
        pos = m.end()
        name, index = m.groups()
        if index is not None:
            tokens.append(int(index))
        elif name.isdigit():
            tokens.append(int(name))
        else:
            tokens.append(name)
    if not tokens or path[pos:] not in ("",):
        raise ValueError(f"bad key path {path!r}")
    return tokens


def _spell(tokens: list[str | int]) -> str:
    out = ""
    for t in tokens:
        out += f"[{t}]" if isinstance(t, int) else (f".{t}" if out else t)
    return out


def apply_overrides(
    data: Mapping[str, Any], overrides: Mapping[str, Any], *, file: str | None = None
) -> dict[str, Any]:
    """A deep copy of ``data`` with each ``key path → value`` of ``overrides`` set.

    Missing tables along the path are created (``link.0.queue.limit`` on a link with no
    queue); a list element is chosen by index or by its ``name``. A path that leads
    nowhere raises :class:`~qoslab.ScenarioError` naming the path and the choices.
    """
    out = copy.deepcopy(dict(data))
    for raw, value in overrides.items():
        if not isinstance(raw, str):
            raise scenario_error(
                file, str(raw), f"a key path is a string such as link.0.rate, found {raw!r}"
            )
        try:
            tokens = parse_key_path(raw)
        except ValueError as e:
            raise scenario_error(file, raw, f"{e}; expected e.g. link.0.rate") from None
        node: Any = out
        done: list[str | int] = []
        for i, tok in enumerate(tokens):
            last = i == len(tokens) - 1
            if isinstance(node, list):
                idx = _list_index(node, tok, file, done)
                done.append(idx)
                if last:
                    node[idx] = _plain(value, file, _spell(done))
                else:
                    node = node[idx]
            elif isinstance(node, dict):
                key = str(tok)
                done.append(key)
                if last:
                    node[key] = _plain(value, file, _spell(done))
                else:
                    node = node.setdefault(key, {})
            else:
                raise scenario_error(
                    file, _spell(done), f"is a value, so override {raw!r} cannot go inside it"
                )
    return out


def _list_index(node: list, tok: str | int, file: str | None, done: list[str | int]) -> int:
    if isinstance(tok, int):
        if 0 <= tok < len(node):
            return tok
        raise scenario_error(
            file,
            _spell([*done, tok]),
            f"there are {len(node)} entries (indices 0..{len(node) - 1})",
        )
    names = [e.get("name") for e in node if isinstance(e, dict)]
    for j, e in enumerate(node):
        if isinstance(e, dict) and e.get("name") == tok:
            return j
    shown = ", ".join(repr(n) for n in names if n is not None) or "none have names"
    raise scenario_error(file, _spell(done), f"no entry named {tok!r} (names: {shown})")


def parse_value(text: str) -> Any:
    """A CLI value: TOML syntax if it parses (``100``, ``1.5``, ``true``, ``{kind="red"}``,
    ``"x"``), else the plain string (``5Mbps``)."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text
    except RecursionError:
        raise scenario_error(
            None, "", f"a value nests too deeply (at most {MAX_DEPTH} levels)"
        ) from None


def _default(o: Any) -> Any:
    if isinstance(o, (_dt.date, _dt.time, _dt.datetime)):
        return o.isoformat()
    raise TypeError(f"cannot put a {type(o).__name__} in a scenario")


def to_json(data: Mapping[str, Any]) -> str:
    """Canonical JSON (sorted keys, no spaces): what the engine gets and what is hashed.

    ``data`` must hold only what :func:`load` lets through (no NaN or infinity)."""
    return json.dumps(
        data, sort_keys=True, separators=(",", ":"), default=_default, allow_nan=False
    )


def run_key(data: Mapping[str, Any], seed: int) -> str:
    """A run's identity: a hash of (resolved scenario without its seed, seed)."""
    body = {k: v for k, v in data.items() if k != "seed"}
    h = hashlib.sha256(to_json({"scenario": body, "seed": int(seed)}).encode())
    return h.hexdigest()[:16]

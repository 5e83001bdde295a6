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
import re
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
    "Scenario",
    "apply_overrides",
    "check_seed",
    "load",
    "parse_key_path",
    "parse_value",
    "run_key",
    "to_json",
]

_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")

#: How deeply tables and lists may nest (the engine's limit too).
MAX_DEPTH = 32

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
    if isinstance(value, (list, tuple)):
        return [_plain(v, file, f"{path}[{i}]", depth + 1) for i, v in enumerate(value)]
    raise scenario_error(
        file,
        path,
        f"a {type(value).__name__} cannot be a scenario value "
        "(expected a string, number, boolean, list or table)",
    )


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
    else:
        path = Path(scenario)
        file = str(path)
        try:
            # utf-8-sig: a byte-order mark some editors write is not part of the text.
            text = path.read_text(encoding="utf-8-sig")
        except FileNotFoundError:
            raise scenario_error(file, "", "no such file") from None
        except (OSError, UnicodeDecodeError) as e:
            raise scenario_error(file, "", f"cannot be read ({e})") from None
        data = _parse_text(text, file, json_=path.suffix.lower() == ".json")
    if not isinstance(data, Mapping):
        raise scenario_error(file, "", "expected a table of keys at the top level")
    data = _plain(data, file, "")
    sweep = data.pop("sweep", None)
    if sweep is not None and not isinstance(sweep, dict):
        raise scenario_error(file, "sweep", "expected a table, e.g. [sweep] seeds = 10")
    return Scenario(data, file, sweep)


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

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
    "Scenario",
    "apply_overrides",
    "load",
    "parse_key_path",
    "parse_value",
    "run_key",
    "to_json",
]

_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


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
        """The scenario's own seed (default 1, as the engine's)."""
        return int(self.data.get("seed", 1))

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
        return scenario
    if isinstance(scenario, Mapping):
        data = copy.deepcopy(dict(scenario))
        file = None
    else:
        path = Path(scenario)
        file = str(path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise scenario_error(file, "", "no such file") from None
        except (OSError, UnicodeDecodeError) as e:
            raise scenario_error(file, "", f"cannot be read ({e})") from None
        if path.suffix.lower() == ".json":
            try:
                data = json.loads(text)
            except json.JSONDecodeError as e:
                raise scenario_error(
                    file, "", f"not valid JSON: {e.msg} (at line {e.lineno}, column {e.colno})"
                ) from None
        else:
            try:
                data = tomllib.loads(text)
            except tomllib.TOMLDecodeError as e:
                raise scenario_error(file, "", f"not valid TOML: {e}") from None
    if not isinstance(data, dict):
        raise scenario_error(file, "", "expected a table of keys at the top level")
    sweep = data.pop("sweep", None)
    if sweep is not None and not isinstance(sweep, dict):
        raise scenario_error(file, "sweep", "expected a table, e.g. [sweep] seeds = 10")
    return Scenario(data, file, sweep)


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
                    node[idx] = copy.deepcopy(value)
                else:
                    node = node[idx]
            elif isinstance(node, dict):
                key = str(tok)
                done.append(key)
                if last:
                    node[key] = copy.deepcopy(value)
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
    """Canonical JSON (sorted keys, no spaces): what the engine gets and what is hashed."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), default=_default)


def run_key(data: Mapping[str, Any], seed: int) -> str:
    """A run's identity: a hash of (resolved scenario without its seed, seed)."""
    body = {k: v for k, v in data.items() if k != "seed"}
    h = hashlib.sha256(to_json({"scenario": body, "seed": int(seed)}).encode())
    return h.hexdigest()[:16]

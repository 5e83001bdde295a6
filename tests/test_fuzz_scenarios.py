"""Scenario fuzzing: mutants of the shipped scenarios either pass or fail as a
``ScenarioError`` (exit 2 from the command line), never as any other exception.

Mutations: values of the wrong type, extreme numbers, bad units, NaN and infinities,
deleted keys and list entries, unknown keys, deep nesting. Fixed seed, a few hundred
mutants, a few seconds.
"""

from __future__ import annotations

import copy
import json
import math
import random
from pathlib import Path
from typing import Any

import tomllib
from click.testing import CliRunner

import qoslab
from qoslab.cli import cli as qoslab_cli

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted((ROOT / "scenarios" / "examples").glob("*.toml")) + sorted(
    (ROOT / "scenarios" / "p1").glob("*.toml")
)
# About 3 % of mutants are valid scenarios: 600 keep the ">= 10 accepted" bound well
# below the expected count whichever example files the mutants are drawn from.
MUTANTS = 600
SEED = 20_261_123

ODD_VALUES: list[Any] = [
    "",
    "abc",
    "10 furlongs",
    "-1Mbps",
    "2MBps",
    "1KB",
    "0s",
    "1e999",
    "nan",
    0,
    -1,
    1,
    0.5,
    1.5,
    -0.0,
    1e-300,
    1e308,
    -1e308,
    2**31,
    2**32,
    2**63,
    2**64 - 1,
    2**64,
    -(2**63),
    math.nan,
    math.inf,
    -math.inf,
    True,
    False,
    None,
    [],
    {},
    [1, "x"],
    {"kind": "red"},
    {"kind": "nosuch"},
]


def _places(tree: Any, path: tuple = ()) -> list[tuple]:
    """Every path in the tree (to tables, lists and values)."""
    out = [path]
    if len(path) > 40:  # inside a deep nest made by an earlier mutation
        return out
    if isinstance(tree, dict):
        for k, v in tree.items():
            out += _places(v, (*path, k))
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            out += _places(v, (*path, i))
    return out


def _get(tree: Any, path: tuple) -> Any:
    for p in path:
        tree = tree[p]
    return tree


def _mutate(tree: dict, rng: random.Random) -> str:
    """Applies one random mutation in place; returns what it did."""
    path = rng.choice(_places(tree)[1:])
    parent, last = _get(tree, path[:-1]), path[-1]
    value = parent[last]
    op = rng.choice(["odd", "odd", "odd", "delete", "unknown", "scale", "nest"])
    if op == "delete":
        del parent[last]
    elif op == "unknown":
        target = value if isinstance(value, dict) else tree
        target["zz_unknown"] = rng.choice(ODD_VALUES)
    elif op == "scale" and isinstance(value, (int, float)) and not isinstance(value, bool):
        parent[last] = value * rng.choice([0, -1, 10**12, 1e-12, 2**40])
    elif op == "nest":
        deep: Any = value
        for _ in range(rng.choice([3, 40, 2000])):
            deep = [deep]
        parent[last] = deep
    else:
        parent[last] = copy.deepcopy(rng.choice(ODD_VALUES))
    return f"{op} at {'.'.join(map(str, path))}"


def _mutants() -> list[tuple[str, dict]]:
    rng = random.Random(SEED)
    bases = [(p.name, tomllib.loads(p.read_text())) for p in SOURCES]
    out = []
    for _ in range(MUTANTS):
        name, base = rng.choice(bases)
        tree = copy.deepcopy(base)
        tree.pop("sweep", None)
        what = [_mutate(tree, rng) for _ in range(rng.choice([1, 1, 2, 3]))]
        out.append((f"{name}: {'; '.join(what)}", tree))
    return out


def _short(tree: dict) -> dict:
    """The mutant, cut to a short run with an event budget (for the runs)."""
    t = copy.deepcopy(tree)
    t["duration"] = "0.3s"
    t["warmup"] = 0
    t["max_events"] = 300_000
    return t


def test_mutants_pass_or_fail_as_scenario_errors(tmp_path):
    assert len(SOURCES) >= 10
    bad: list[str] = []
    accepted: list[tuple[str, dict]] = []
    rejected: list[tuple[str, dict]] = []
    for what, tree in _mutants():
        try:
            qoslab.check(tree)
            accepted.append((what, tree))
        except qoslab.ScenarioError as e:
            rejected.append((what, tree))
            if not str(e) or "internal" in str(e):
                bad.append(f"{what}: unhelpful message {e}")
        except Exception as e:
            bad.append(f"{what}: {type(e).__name__}: {e}")
    # Both outcomes occur, so the mutations are neither all harmless nor all fatal.
    assert len(accepted) >= 10 and len(rejected) > 100, (len(accepted), len(rejected))
    for what, tree in accepted[:40]:
        try:
            qoslab.run(_short(tree))
        except qoslab.ScenarioError:
            pass
        except qoslab.SimulationError as e:
            if "event budget" not in str(e):
                bad.append(f"{what} (run): SimulationError: {e}")
        except Exception as e:
            bad.append(f"{what} (run): {type(e).__name__}: {e}")
    assert not bad, "\n".join(bad)
    # A sample through the command line: exit 2, no traceback.
    runner = CliRunner()
    for i, (what, tree) in enumerate(rejected[:25]):
        try:
            text = json.dumps(tree)  # NaN and Infinity as Python writes them
        except RecursionError:  # too deep for json itself; the checks above had it
            continue
        f = tmp_path / f"m{i}.json"
        f.write_text(text)
        res = runner.invoke(qoslab_cli, ["check", str(f)])
        assert res.exit_code == 2, f"{what}: {res.output}"
        assert "Traceback" not in res.output and "internal error" not in res.output, res.output

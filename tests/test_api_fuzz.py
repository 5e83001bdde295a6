"""Random calls of ``check``, ``run`` and ``run_sweep`` (fixed seed) with random
scenarios, paths, overrides, grids and seeds: every outcome is a success or a
:class:`~qoslab.QoslabError` (once 80 of 2,000 such calls raised a TypeError,
AttributeError, RecursionError or a JSON error instead)."""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np

import qoslab
from conftest import small_text
from qoslab import QoslabError

KEYS = [
    "link.2.queue.limit",
    "link.2.queue",
    "link.2.delay",
    "flow.a.cbr.size",
    "flow.b.cbr.jitter",
    "flow.a.start",
    "warmup",
    "seed",
    "link.9.rate",
    "flow.nope.cbr.rate",
    "link[2].queue.kind",
    "",
    "link..rate",
    "record.interval",
    "conditioner",
]


def _deep(n: int) -> object:
    v: object = 1
    for _ in range(n):
        v = [v]
    return v


def _value(r: random.Random, depth: int = 0) -> object:
    choices = [
        lambda: r.randint(-5, 200),
        lambda: r.choice([2**63, 2**64, 2**64 - 1, -(2**63) - 1, 10**30]),
        lambda: r.uniform(-1, 3),
        lambda: r.choice([math.nan, math.inf, -math.inf]),
        lambda: r.choice(["1Mbps", "5ms", "0.2s", "red", "", "x" * 50, "1e3", "-1s"]),
        lambda: r.choice([None, True, False, b"bytes", object(), 1j, {1, 2}]),
        lambda: np.int64(r.randint(1, 100)),
        lambda: np.float32(r.random()),
        lambda: np.arange(r.randint(0, 3)),
        lambda: range(r.randint(0, 3)),
        lambda: {"kind": r.choice(["droptail", "red", "nope"]), "limit": r.randint(1, 50)},
        lambda: [_value(r, depth + 1) for _ in range(r.randint(0, 2))] if depth < 3 else 1,
        lambda: _deep(r.choice([40, 2000])),
        lambda: {r.choice(["a", 1, None]): 1},
    ]
    return r.choice(choices)()


def _mapping(r: random.Random, grid: bool) -> object:
    kind = r.random()
    if kind < 0.1:
        return r.choice([None, [], "link.2.rate=1Mbps", 5, [("warmup", "0.1s")], b"x"])
    out: dict[object, object] = {}
    for _ in range(r.randint(0, 2)):
        key = r.choice([*KEYS, 3, None]) if r.random() < 0.95 else ("tuple",)
        if grid:
            v = r.random()
            out[key] = (
                [_value(r) for _ in range(r.randint(0, 3))]
                if v < 0.6
                else np.array([10, 20])
                if v < 0.7
                else {"n1": _value(r), "n2": _value(r)}
                if v < 0.8
                else _value(r)
            )
        else:
            out[key] = _value(r)
    return out


def _seed(r: random.Random) -> object:
    return r.choice(
        [None, 1, 7, np.uint64(3), 0, -1, 2**64, 2**64 - 1, "3", 1.5, True, [1, 2], math.nan]
    )


def _seeds(r: random.Random) -> object:
    return r.choice(
        [None, 1, 2, 0, -3, np.int8(2), range(1, 3), np.array([1, 2]), [1, 2**64], [],
         ["a"], [1.0], "2", [np.uint64(2**64 - 1)], 2**70, {"a": 1}]
    )  # fmt: skip


def _scenario(r: random.Random, tmp: Path) -> object:
    good = tmp / "good.toml"
    x = r.random()
    if x < 0.45:
        return good
    if x < 0.6:
        return qoslab.scenario.load(good).data
    if x < 0.65:
        return str(good)
    return r.choice(
        [
            None,
            b"good.toml",
            tmp / "missing.toml",
            tmp,
            "/dev/null",
            "",
            3,
            ["a"],
            {"duration": "0.1s"},
            {"duration": _value(r)},
            {1: 2},
            tmp / "bad.toml",
            tmp / "deep.toml",
        ]
    )


def test_random_api_calls_raise_only_qoslab_errors(tmp_path):
    (tmp_path / "good.toml").write_text(small_text("0.3s").replace('warmup = "0.5s"', ""))
    (tmp_path / "bad.toml").write_text("duration = [1,\n")
    (tmp_path / "deep.toml").write_text("x = " + "[" * 3000 + "]" * 3000 + "\n")
    r = random.Random(35)
    bad: list[str] = []
    outcomes = {"ok": 0, "qoslab error": 0}
    for i in range(300):
        what = r.choice(["check", "run", "run", "sweep"])
        sc = _scenario(r, tmp_path)
        try:
            if what == "check":
                qoslab.check(sc, _mapping(r, False))  # type: ignore[arg-type]
            elif what == "run":
                qoslab.run(sc, _mapping(r, False), _seed(r), max_wall=20)  # type: ignore[arg-type]
            else:
                out = r.choice([tmp_path / f"sw{i}", tmp_path / "good.toml", "", None])
                qoslab.run_sweep(
                    sc,  # type: ignore[arg-type]
                    out,  # type: ignore[arg-type]
                    seeds=_seeds(r),  # type: ignore[arg-type]
                    grid=_mapping(r, True),  # type: ignore[arg-type]
                    overrides=_mapping(r, False) if r.random() < 0.3 else None,  # type: ignore[arg-type]
                    workers=1,
                    progress=False,
                    log=lambda m: None,
                    max_wall=20,
                )
            outcomes["ok"] += 1
        except QoslabError:
            outcomes["qoslab error"] += 1
        except Exception as e:
            bad.append(f"call {i} ({what}): {type(e).__name__}: {str(e)[:200]}")
    assert not bad, f"{len(bad)} calls raised a non-qoslab exception:\n" + "\n".join(bad[:20])
    # the fuzz reaches both sides: some calls succeed, most are refused
    assert outcomes["ok"] >= 20 and outcomes["qoslab error"] >= 100, outcomes

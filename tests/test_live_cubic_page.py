"""docs/validation/live-cubic.md is what validation/live_cubic_twin.py makes of its stored
data (no root needed), and its verdicts follow the bands."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parent.parent


def _mod():
    spec = importlib.util.spec_from_file_location(
        "live_cubic_twin", ROOT / "validation" / "live_cubic_twin.py"
    )
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


M = _mod()


def test_the_page_is_the_scripts_output_of_the_stored_data():
    d = json.loads(M.DATA.read_text())
    assert M.PAGE.read_text() == M.page(d), "run validation/live_cubic_twin.py --from-json"


def test_verdicts_follow_the_bands():
    def case(live, twin, lp, tp):
        rows = [
            {"live": a, "twin": b, "twin_reno": b, "live_period": c, "twin_period": e}
            for a, b, c, e in zip(live, twin, lp, tp, strict=True)
        ]
        return M.verdicts({"repeats": rows})

    v = case([10, 10.1, 9.9], [10.05, 10.12, 9.93], [2.3, 2.31, 2.29], [2.28, 2.28, 2.28])
    assert v["goodput"][2] == "within" and v["period"][2] == "within"
    v = case([10, 10.1, 9.9], [10.5, 10.6, 10.4], [4.6, 4.7, 5.0], [5.6, 5.6, 5.6])
    assert v["goodput"][2] == "outside" and v["period"][2] == "outside"
    v = case([10], [10], [2.3], [2.3])
    assert v["goodput"][2].startswith("not judged")


def test_episode_period_groups_bursts():
    drops = pl.DataFrame({"t": [1.0, 11.0, 11.2, 11.4, 15.0, 15.1, 19.2, 30.0]})
    assert M.episode_period(drops, 10, 60) == (30.0 - 11.0) / 3
    assert math.isnan(M.episode_period(drops, 29, 60))


def test_counterfactual_twins_are_judged_against_the_same_live_runs():
    rows = [
        {"live": 10, "twin": 10, "twin_reno": 10, "live_period": p, "twin_period": 5.6}
        for p in (4.7, 4.75, 4.8)
    ]
    assert M.verdicts({"repeats": rows})["period"][2] == "outside"
    twins = [{"twin": 10, "twin_period": 4.74} for _ in rows]
    assert M.verdicts({"repeats": rows}, twins)["period"][2] == "within"
    # Every counterfactual is one key of the twin's CUBIC.
    assert all(len(keys) == 1 for keys, _ in M.COUNTERFACTUALS.values())

"""docs/marker-vs-fq-codel.md: its results block is what validation/marker_vs_fq_codel.py
makes of the committed data, the data were taken from the example scenario as it is
and by today's engine, and the comparison's headline (the marker holds the committed
rate, FQ-CoDel shares by flow) holds in a fresh run and fails without the marker."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest

import qoslab
from conftest import load_script

ROOT = Path(__file__).resolve().parents[1]
mod = load_script(ROOT / "validation" / "marker_vs_fq_codel.py")


@pytest.fixture(scope="module")
def data():
    return json.loads(mod.DATA.read_text())


def test_the_committed_page_is_generated_from_the_committed_data(data):
    text = mod.PAGE.read_text()
    assert mod.BEGIN in text and mod.END in text
    assert mod.page(data, text) == text


def test_the_page_follows_the_data(data):
    text = mod.PAGE.read_text()
    assert "only the trTCM (CBS 30 kB) + RIO-C holds it in every seed" in text
    changed = copy.deepcopy(data)
    # The markers' assured flows at half their goodput: none holds 4 Mb/s any longer.
    for r in changed["runs"]:
        if r["case"] in ("diffserv", "small_buckets"):
            for f in r["flows"]:
                if f["group"] == "assured":
                    f["goodput_bps"] /= 2
    new = mod.page(changed, text)
    assert new != text
    assert "only the trTCM (CBS 30 kB) + RIO-C holds it" not in new
    assert "no configuration holds it in every seed" in new


def test_the_data_are_of_the_scenario_as_it_is(data):
    assert data["scenario_sha256"] == mod.scenario_digest(), (
        "scenarios/examples/marker_vs_fq_codel.toml changed: rerun "
        "python validation/marker_vs_fq_codel.py"
    )
    assert len(data["runs"]) == 40  # 4 cases × 2 best-effort counts × 5 seeds
    assert {r["seed"] for r in data["runs"]} == {1, 2, 3, 4, 5}


def test_path_delays_by_hand():
    import tomllib

    sc = tomllib.loads(mod.SCENARIO.read_text())
    got = mod.path_delays(sc)
    # assured: 44 + 5 + 1 ms, and 1500 B at 100, 10 and 100 Mb/s (0.12 + 1.2 + 0.12 ms)
    assert got["assured"] == pytest.approx(0.05144, abs=1e-12)
    assert got["best-effort"] == pytest.approx(0.01144, abs=1e-12)


def test_summary_by_hand():
    """Two seeds of one configuration: means, the range of goodput / committed rate,
    Jain over all flows and delays less the path's."""

    def run(seed, a, b, d50):
        return {
            "case": "diffserv",
            "best_effort_flows": 1,
            "seed": seed,
            "flows": [
                {"name": "assured-1", "group": "assured", "goodput_bps": a},
                {"name": "be-1", "group": "best-effort", "goodput_bps": b},
            ],
            "groups": {
                "assured": {"delay_p50": d50, "delay_p95": 0.2},
                "best-effort": {"delay_p50": 0.05, "delay_p95": 0.1},
            },
        }

    d = {
        "committed_bps": 4e6,
        "path_delay_s": {"assured": 0.05, "best-effort": 0.01},
        "runs": [run(1, 4e6, 4e6, 0.07), run(2, 2e6, 6e6, 0.09)],
    }
    (row,) = mod.summarise(d)
    assert row["assured goodput"] == 3e6
    assert row["best-effort goodput"] == 5e6
    assert (row["share"], row["share_min"], row["share_max"]) == (0.75, 0.5, 1.0)
    # Jain: 1 for (4, 4); (2 + 6)² / (2 · (4 + 36)) = 0.8 for (2, 6)
    assert row["jain"] == pytest.approx(0.9)
    assert row["assured p50"] == pytest.approx(0.03)
    assert row["best-effort p95"] == pytest.approx(0.09)
    assert not mod._holds(row)


def _assured(res) -> float:
    g = {r["group"]: r for r in res.by_group().to_dicts()}
    return g["assured"]["goodput_bps"]


def test_todays_engine_gives_the_committed_data(data):
    """The file as written (the diffserv case, 8 best-effort flows, seed 1) gives the
    stored numbers exactly; if the engine changed them, rerun the script."""
    stored = next(
        r
        for r in data["runs"]
        if (r["case"], r["best_effort_flows"], r["seed"]) == ("diffserv", 8, 1)
    )
    res = qoslab.run(mod.SCENARIO)
    got = {f["name"]: f["goodput_bps"] for f in res.flows.to_dicts()}
    want = {f["name"]: f["goodput_bps"] for f in stored["flows"]}
    assert got == want, "the engine's numbers moved: rerun python validation/marker_vs_fq_codel.py"


def test_the_marker_is_what_holds_the_committed_rate():
    """With the trTCM the assured aggregate gets at least its 4 Mb/s; the same RIO-C
    bottleneck without the edge (every packet unmarked, so green) gives it under 60 % of
    it, as a FIFO would: the test fails with the marker switched off."""
    with_marker = _assured(qoslab.run(mod.SCENARIO))
    without = _assured(qoslab.run(mod.SCENARIO, {"conditioner": []}))
    assert with_marker >= 4e6
    assert without < 0.6 * 4e6
    fq = qoslab.run(mod.SCENARIO, {"conditioner": [], "link.2.queue": {"kind": "fq_codel"}})
    flows = [f["goodput_bps"] for f in fq.flows.to_dicts()]
    # FQ-CoDel: about one tenth of the link per flow, so 2 flows of 10 get about 2 Mb/s.
    assert mod.jain(flows) > 0.95
    assert math.isclose(_assured(fq), 2e6, rel_tol=0.2)

"""Quick mode may judge less, never differently (issue 59): a comparison or ablation that
declares what it ``needs`` is ``not-judged`` in quick mode, neither within nor outside,
and the console's summary line, the report and docgen say so."""

from __future__ import annotations

import json

import pytest

from conftest import report_text
from qoslab import docgen, reproduce
from qoslab.cli import summary_line
from qoslab.report import write_report
from qoslab.reproduce import (
    Ablation,
    Bound,
    Comparison,
    Outcome,
    count_verdicts,
    register,
    run_experiments,
    stored_verdict,
)


@pytest.fixture
def registry():
    saved = dict(reproduce.REGISTRY)
    yield reproduce.REGISTRY
    reproduce.REGISTRY.clear()
    reproduce.REGISTRY.update(saved)


def test_a_comparison_that_needs_full_mode_is_not_judged_in_quick_mode():
    c = Comparison("ratio at 750 kb/s", 0.0, ref=Bound(at_least=0.5), needs="the 750 kb/s point")
    assert c.verdict == "outside"  # full mode (quick is false by default): judged
    c.quick = True
    assert c.verdict == "not-judged" and not c.judged
    assert "not judged in quick mode (needs the 750 kb/s point)" in c.reference
    d = c.to_dict()
    assert d["judged"] is False and d["needs"] == "the 750 kb/s point"
    assert stored_verdict(d) == "not-judged" and count_verdicts([d])["not-judged"] == 1
    # a claim that declares nothing is judged in quick mode as in full mode
    plain = Comparison("ratio", 0.0, ref=Bound(at_least=0.5), quick=True)
    assert plain.verdict == "outside"
    # info rows stay info; orders and ablations can be not judged too
    assert Comparison("x", 1.0, needs="seeds", quick=True).verdict == "info"
    o = Comparison.order("o", [1, 2, 3], [2, 3, 4], needs="seeds 1–10")
    assert o.verdict == "within"
    o.quick = True
    assert o.verdict == "not-judged" and "not judged in quick mode" in o.reference
    a = Ablation("c", "m", "t", "q", 1.0, 0.9, needs="seeds 1–3")
    assert a.verdict == "outside"
    a.quick = True
    assert a.verdict == "not-judged" and a.to_dict()["judged"] is False


def _flipper(ctx):
    """A claim whose value crosses its bound between modes (quick: 0.7, full: 0.9) and
    one that does not."""
    v = 0.7 if ctx.quick else 0.9
    return Outcome(
        comparisons=[
            Comparison("flips", v, ref=Bound(at_least=0.8), needs="seeds 1–3", source="§1"),
            Comparison("steady", 1.0, ref=Bound(at_least=0.8), source="§1"),
        ],
        ablations=[
            Ablation(
                "claim",
                "m",
                "t",
                "q",
                1.0,
                0.9 if ctx.quick else 0.1,
                needs="seeds 1–3",
                twin_changes={"m": (1, 0)},
                mechanism_off={"m": (1, 0)},
            )
        ],
        readings=[
            reproduce.ReadingResult(
                reproduce.Reading("k", "a", headline=True, argued='"a"'),
                [Comparison("r", v, ref=Bound(at_least=0.8), needs="300 s", source="§1")],
            ),
            reproduce.ReadingResult(reproduce.Reading("k", "b"), [Comparison("r", 1.0)]),
        ],
        calibrations=[
            reproduce.Calibration(
                "p",
                1,
                "not given",
                [0, 1, 2, 3],
                [
                    [Comparison("c", v, ref=Bound(at_least=0.8), needs="300 s", source="§1")]
                    for _ in range(4)
                ],
            )
        ],
    )


def test_the_framework_marks_quick_runs_and_every_layer_shows_not_judged(registry, tmp_path):
    register("t-flip", title="flips")(_flipper)
    full = run_experiments(["t-flip"], tmp_path / "full", log=lambda s: None)
    quick = run_experiments(["t-flip"], tmp_path / "quick", quick=True, log=lambda s: None)
    ef, eq = full["experiments"][0], quick["experiments"][0]
    assert [c["verdict"] for c in ef["comparisons"]] == ["within", "within"]
    assert [c["verdict"] for c in eq["comparisons"]] == ["not-judged", "within"]
    assert eq["ablations"][0]["verdict"] == "not-judged"
    assert ef["ablations"][0]["verdict"] == "within"
    assert eq["readings"][0]["comparisons"][0]["verdict"] == "not-judged"
    assert eq["calibrations"][0]["comparisons"][1][0]["verdict"] == "not-judged"
    assert eq["verdict"] == "within"  # not judged is no miss
    s = quick["summary"]
    assert s["comparisons"]["not-judged"] == 1 and s["ablations"]["not-judged"] == 1 and s["ok"]
    line = summary_line(s)
    assert "1 not judged in quick mode" in line
    html = report_text(write_report(tmp_path / "quick"))
    assert "not judged in quick mode" in html
    out = docgen.export(tmp_path / "quick", tmp_path / "d.json")
    data = json.loads(out.read_text())
    table = docgen.RENDERERS["comparisons"](data, experiment="t-flip")
    assert "| flips |" in table and "not judged in quick mode (needs seeds 1–3)" in table
    assert "not judged in quick mode" in docgen.RENDERERS["ablations"](data, prefix="t-")
    assert "not judged in quick mode" in docgen.RENDERERS["calibrations"](data, prefix="t-")


#: Verdicts that judge: a flip between two of them is what quick mode must never show.
JUDGING = {"within", "outside", "outside-explained"}


def _judged_items(e: dict) -> dict[tuple[str, str], str]:
    out = {}
    for c in e.get("comparisons") or []:
        out["c", c["quantity"]] = c["verdict"]
    for a in e.get("ablations") or []:
        out["a", a["claim"]] = a["verdict"]
    for r in e.get("readings") or []:
        for c in r["comparisons"]:
            out[f"r {r['knob']}={r['reading']}", c["quantity"]] = c["verdict"]
    for k in e.get("calibrations") or []:
        for v, cs in zip(k["values"], k["comparisons"], strict=True):
            for c in cs:
                out[f"k {k['parameter']}={v}", c["quantity"]] = c["verdict"]
    return out


def flips(quick: dict, full: dict) -> list[str]:
    """Items judged one way in quick mode and the other in full mode (a quick ``tie``
    where full mode decides counts too: quick mode may judge less, never differently)."""
    out = []
    for key, qv in _judged_items(quick).items():
        fv = _judged_items(full).get(key)
        if fv is None or qv == "not-judged" or qv == "info":
            continue
        if qv != fv and ({qv, fv} <= JUDGING | {"tie"}):
            out.append(f"{key}: quick {qv}, full {fv}")
    return out


def test_flips_finds_a_quick_verdict_that_differs():
    q = {"comparisons": [{"quantity": "a", "verdict": "outside"},
                         {"quantity": "b", "verdict": "not-judged"}]}  # fmt: skip
    f = {"comparisons": [{"quantity": "a", "verdict": "within"},
                         {"quantity": "b", "verdict": "outside"}]}  # fmt: skip
    assert flips(q, f) == ["('c', 'a'): quick outside, full within"]


@pytest.mark.parametrize("name", ["p3-t2", "p4-f3a", "p0-f4"])
def test_cheap_experiments_judge_the_same_in_quick_and_full_mode(name, tmp_path):
    """p3-t2 (quick: 4 runs per conditioner; its 'all data' means and orders flipped
    before they declared needs=), p4-f3a (its 512 KB striping ratio read 0.761 in
    quick mode against 0.880 before quick mode ran what full mode runs) and p0-f4's
    token-loss order (a tie at three seeds where full mode's ten decide), both ways.
    p3-f5 is not here: quick mode runs exactly what full mode runs, so the two ways
    could not differ."""
    q = run_experiments([name], tmp_path / "q", quick=True, log=lambda s: None)
    f = run_experiments([name], tmp_path / "f", log=lambda s: None)
    eq, ef = q["experiments"][0], f["experiments"][0]
    assert eq["status"] == ef["status"] == "done"
    assert flips(eq, ef) == []

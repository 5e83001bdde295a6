"""The vacuous-guard rule of ``qoslab.reproduce``: a claim whose mechanism did nothing
in the runs judged is never within (issue 59: "regulators installed >= 1" passed while
the regulators policed nothing in all 80 TCP-only runs)."""

from __future__ import annotations

from qoslab.reproduce import Bound, Comparison, Explanation, count_verdicts, stored_verdict


def test_a_claim_whose_mechanism_did_nothing_is_outside_and_says_vacuous():
    acted = Comparison("extra drops", 0.0, ref=Bound(at_most=1.0), acted=("packets policed", 7))
    assert acted.verdict == "within" and not acted.vacuous
    idle = Comparison("extra drops", 0.0, ref=Bound(at_most=1.0), acted=("packets policed", 0))
    assert idle.vacuous and idle.verdict == "outside"
    assert "vacuous: packets policed = 0" in idle.reference
    nan = Comparison(
        "extra drops", 0.0, ref=Bound(at_most=1.0), acted=("packets policed", float("nan"))
    )
    assert nan.verdict == "outside"
    # an explanation cannot rescue it, and info rows stay info
    cf = Explanation("x", doc="d#a").tested("change", 0.0)
    assert (
        Comparison("q", 5.0, ref=Bound(at_most=1.0), explanation=cf, acted=("a", 0)).verdict
        == "outside"
    )
    assert Comparison("q", 5.0, acted=("a", 0)).verdict == "info"
    # without a guard nothing changes
    assert Comparison("extra drops", 0.0, ref=Bound(at_most=1.0)).verdict == "within"


def test_stored_vacuous_comparisons_are_outside_when_read_again():
    d = Comparison("q", 0.0, ref=Bound(at_most=1.0), acted=("packets policed", 0)).to_dict()
    assert d["vacuous"] is True and d["acted"] == ["packets policed", 0.0]
    assert stored_verdict({**d, "verdict": "within"}) == "outside"  # data of an older rule
    assert count_verdicts([d])["outside"] == 1
    ok = Comparison("q", 0.0, ref=Bound(at_most=1.0), acted=("packets policed", 3)).to_dict()
    assert ok["vacuous"] is False and stored_verdict(ok) == "within"

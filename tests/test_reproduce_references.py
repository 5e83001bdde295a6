"""A comparison's typed reference (Value, Interval, Bound, Order): each refuses what it
cannot mean, and ``Comparison.to_dict`` stores every kind exactly as it did before the
references were typed (``tests/data/comparison_to_dict.json``, recorded from the
keyword form), so committed reproduction data does not change."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from qoslab.reproduce import (
    Bound,
    Calibration,
    Comparison,
    Explanation,
    Interval,
    Order,
    Outcome,
    Value,
)

RECORDED = Path(__file__).parent / "data" / "comparison_to_dict.json"


def cases() -> dict[str, Comparison]:
    """One comparison of each kind, with the optional fields that change its entry."""
    ex = Explanation("why", "docs/papers/p1.md#t1", "qoslab reproduce p1")
    bound = Bound(at_most=1.0, against="§5")
    cal = [Comparison("calibrated at_most", x, ref=bound, calibrated="k")
           for x in (0.5, 2.0, 0.7, 0.9)]  # fmt: skip
    calibrated = Comparison("calibrated at_most", 0.9, ref=bound, calibrated="k")
    values = Calibration("k", 2, "chosen", [1, 2, 3, 4], [[c] for c in cal])
    Outcome(comparisons=[calibrated], calibrations=[values])
    return {
        "value": Comparison("Jain", 0.93, ref=Value(0.95), unit="", note="n", rtol=0.05),
        "value int, explained": Comparison(
            "drops", 3, ref=Value(2), unit="packets", rtol=0.1,
            explanation=ex.tested("RTO pinned", 2.1, "qoslab reproduce p1-x")),
        "value nan, untested": Comparison("delay", math.nan, ref=Value(1.5), atol=0.2,
                                          explanation=ex.untested()),
        "value against": Comparison("x", 1.2, ref=Value(1.0, against="paper: ≈ 1"), rtol=0.1),
        "interval against atol": Comparison("gap", 2.5, ref=Interval(1, 2, against="Fig. 3"),
                                            atol=0.25, unit="s", note="n"),
        "interval point": Comparison("gap", 2.0, ref=Interval(2.0, 2.0), rtol=0.01),
        "at_least quick needs": Comparison("worst / requested", 0.97, unit="×",
                                           ref=Bound(at_least=1.0, against="the request"),
                                           source="P1 §5", needs="seeds 1–10", quick=True),
        "at_least needs judged": Comparison("worst", 1.01,
                                            ref=Bound(at_least=1, against="the request"),
                                            needs="seeds 1–10", own="must act"),
        "at_most vacuous": Comparison("drops", 0, unit="packets",
                                      ref=Bound(at_most=0, against="none"),
                                      acted=("regulator drops", 0)),
        "at_most acted": Comparison("drops", 4, ref=Bound(at_most=3, against="§4.5: none"),
                                    acted=("regulator drops", 12)),
        "both": Comparison("ratio", 1.08,
                           ref=Bound(at_least=0.98, at_most=1.03, against="Fig. 7a"),
                           rtol=0.02, atol=0.01, own="the model's band",
                           explanation=ex.tested("other", 1.0, "cmd", kind="reading")),
        "order within": Comparison.order("A vs B", [1.0, 1.1, 0.9, 1.2], [2.0, 2.2, 2.1, 2.0],
                                         a_name="EF", b_name="BE", unit="ms", source="§4"),
        "order outside needs": Comparison.order("A vs B", [3.0, 3.1, 2.9], [2.0, 2.2, 2.1],
                                                claim="<", needs="10 seeds", own="check"),
        "order tie": Comparison.order("t", [1.0, 2.0], [1.5, 1.4], claim=">", note="two"),
        "order contradicted": Comparison.order("c", [1.0, 1.1, 0.9], [2.0, 2.2, 2.1],
                                               paper_ab=(3.0, 2.0), paper_source="Table I",
                                               source="§3 'A is faster'"),
        "order by hand": Comparison("one seed", 0.5, unit="s",
                                    ref=Order("<", (-math.inf, math.inf), 1, "a", "b"),
                                    source="§2"),
        "info": Comparison("share", 0.4, unit="×", note="info row"),
        "info explained": Comparison("share", 0.4, explanation=ex.untested("none")),
        "calibrated": calibrated,
    }  # fmt: skip


def test_every_kind_is_stored_as_recorded():
    recorded = json.loads(RECORDED.read_text())
    ours = cases()
    assert list(ours) == list(recorded)
    for name, c in ours.items():
        # as text: key order, ints against floats and NaN are compared too
        got = json.dumps(c.to_dict(), ensure_ascii=False)
        assert got == json.dumps(recorded[name], ensure_ascii=False), name


def test_the_kinds_and_verdicts_recorded_cover_every_reference():
    recorded = json.loads(RECORDED.read_text())
    assert {e["kind"] for e in recorded.values()} == {"value", "interval", "bound", "order",
                                                     "none"}  # fmt: skip
    verdicts = {e["verdict"] for e in recorded.values()}
    assert {"within", "outside", "outside-explained", "tie", "not-judged", "info"} <= verdicts


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: Interval(2.0, 1.0), "low end 2 lies above its high end 1"),
        (lambda: Bound(against="the request"), "needs at_least or at_most"),
        (lambda: Bound(at_least=2, at_most=1), "at_least 2 lies above its at_most 1"),
        (lambda: Value(None), "must be a number"),  # type: ignore[arg-type]
        (lambda: Bound(at_most="x"), "must be a number"),  # type: ignore[arg-type]
        (lambda: Order("<=", (-1.0, 1.0), 3), "'<' or '>'"),
        (lambda: Order("<", (1.0, -1.0), 3), "is empty"),
    ],
)
def test_a_reference_refuses_what_it_cannot_mean(build, match):
    with pytest.raises(ValueError, match=match):
        build()


def test_the_keyword_form_is_gone_so_two_references_cannot_be_written():
    for old in ({"paper": 1.0}, {"interval": (1, 2)}, {"at_least": 0.5, "against": "x"},
                {"claim": "<", "ci": (-2.0, -1.0), "n": 3}):  # fmt: skip
        with pytest.raises(TypeError, match="unexpected keyword"):
            Comparison("x", 1.0, **old)  # type: ignore[arg-type]


def test_a_comparison_refuses_a_reference_of_another_type():
    with pytest.raises(ValueError, match="ref must be a Value"):
        Comparison("x", 1.0, ref=0.95)  # type: ignore[arg-type]
    # an order built by hand must carry its own interval around its mean
    with pytest.raises(ValueError, match="its own"):
        Comparison("x", 5.0, ref=Order("<", (-2.0, -1.0), 3))


def test_references_are_frozen_and_own_their_limits():
    v, i, b = Value(2), Interval(1, 3), Bound(at_least=1.0)
    with pytest.raises(AttributeError):
        v.x = 3  # type: ignore[misc]
    assert (v.limits(), i.limits(), b.limits()) == ((2.0, 2.0), (1.0, 3.0), (1.0, None))
    assert Order(">", (0.1, 0.2), 5).limits() == (0.0, None)
    assert Comparison("x", 1.9, ref=v, rtol=0.1).accepted() == (1.8, 2.2)

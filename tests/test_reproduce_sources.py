"""The rule "a judged claim says where the paper makes it" (issue 59): a bound or order
that is not one of the paper's values gives its ``source`` (the paper's §, figure, table,
equation or quoted words, in ``source=`` or in its text) or says why it is qoslab's own
check (``own=``); :func:`require_sources` fails the experiment otherwise, naming it and
the claim. The old P0 Fig. 11 claim "logical ≥ 0.97 × common" (a bound of ours that no
sentence of the paper makes, whose slack let the reversed order through) is the case it
catches."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from qoslab import reproduce
from qoslab.reproduce import (
    SOURCE_IN_TEXT,
    Bound,
    Calibration,
    Comparison,
    Interval,
    Outcome,
    Reading,
    ReadingResult,
    Value,
    p0,
    p3,
    register,
    require_sources,
    run_experiments,
)


def old_f11() -> Comparison:
    """P0 Fig. 11's comparison before issue 59 (``git log -S"0.97 × common"``)."""
    return Comparison("compliant, logical / common", 0.984, unit="×",
                      ref=Bound(at_least=0.97,
                                against="compliant traffic highest (3 % slack)"))  # fmt: skip


def test_the_old_p0_f11_bound_is_refused_naming_the_experiment_and_the_claim():
    with pytest.raises(ValueError) as e:
        require_sources("p0-f11", Outcome(comparisons=[old_f11()]))
    msg = str(e.value)
    assert "'p0-f11'" in msg and "'compliant, logical / common'" in msg
    assert "source=" in msg and "own=" in msg


def test_a_claim_with_a_source_or_an_own_reason_is_accepted_and_shown():
    sentence = ("P0 §4.2.3: 'the total (compliant and noncompliant) and compliant throughput "
                "is higher than that with individual rate control'")  # fmt: skip
    c = Comparison("compliant, logical / partitioned", 1.2, unit="×",
                   ref=Bound(at_least=1.0,
                             against="compliant traffic highest"), source=sentence)  # fmt: skip
    require_sources("p0-f11", Outcome(comparisons=[c]))
    assert c.reference == f"≥ 1 (compliant traffic highest, {sentence})"
    assert c.to_dict()["source"] == sentence and "own" not in c.to_dict()
    own = Comparison("drops inside the network", 0.0, ref=Bound(at_most=0.0, against="none"),
                     own="the model assumes a lossless core")  # fmt: skip
    require_sources("x", Outcome(comparisons=[own]))
    assert own.reference == "≤ 0 (none, qoslab's check: the model assumes a lossless core)"
    assert own.to_dict()["own"] == "the model assumes a lossless core"
    # an order shows its source after its interval
    o = Comparison.order("a − b", [1, 2, 3], [2, 3, 4.5], source="P4 §3.2, Fig. 3(b)")
    require_sources("x", Outcome(comparisons=[o]))
    assert o.reference.endswith("; P4 §3.2, Fig. 3(b)")
    with pytest.raises(ValueError, match="not both"):
        Comparison("q", 1.0, ref=Bound(at_least=0.0), source="P0 §4", own="ours")


def test_a_source_named_in_the_claims_text_counts_and_a_bare_bound_does_not():
    for text in ["P2 §3.1", "read from Fig. 10", "Table I's values", "Eq. 5",
                 "the paper: 'almost all undelivered packets'", '"not more than one"',
                 "“nearly all”"]:  # fmt: skip
        assert SOURCE_IN_TEXT.search(text), text
        c = Comparison("q", 1.0, ref=Bound(at_least=0.0, against=text))
        require_sources("x", Outcome(comparisons=[c]))
    # an apostrophe is no quotation
    for text in ["the paper's widest interval", "the regulators' own drops", "10 % above"]:
        assert not SOURCE_IN_TEXT.search(text), text
        with pytest.raises(ValueError, match="'x'"):
            c = Comparison("q", 1.0, ref=Bound(at_most=2.0, against=text))
            require_sources("x", Outcome(comparisons=[c]))
    with pytest.raises(ValueError, match="neither where"):
        require_sources("x", Outcome(comparisons=[Comparison.order("a − b", [1, 2, 3],
                                                                   [2, 3, 4.5])]))  # fmt: skip


def test_values_intervals_info_rows_and_contradicted_orders_need_no_source():
    comps = [
        Comparison("v", 1.0, ref=Value(1.0)),
        Comparison("i", 1.0, ref=Interval(0.5, 1.5)),
        Comparison("info", 1.0),
        Comparison.order("o", [1, 2, 3], [2, 3, 4.5], paper_ab=(5.0, 4.0)),
    ]
    assert [c.needs_source for c in comps] == [False, False, False, False]
    require_sources("x", Outcome(comparisons=comps))


def test_readings_and_calibrations_are_held_to_the_rule():
    bare = Comparison("gain", 0.1, ref=Bound(at_least=0.05, against="fairer"))
    ok = Comparison("gain", 0.1, ref=Bound(at_least=0.05, against="fairer"), source="P0 §5")
    a = Reading("k", "a", headline=True, argued="§5")
    b = Reading("k", "b")
    with pytest.raises(ValueError, match="'gain'"):
        require_sources("x", Outcome(readings=[ReadingResult(a, [ok]), ReadingResult(b, [bare])]))
    cal = Calibration("p", 1, "why", [1, 2, 3, 4], [[ok], [ok], [bare], [ok]])
    with pytest.raises(ValueError, match="'gain'"):
        require_sources("x", Outcome(calibrations=[cal]))


@pytest.fixture
def registry():
    saved = dict(reproduce.REGISTRY)
    yield reproduce.REGISTRY
    reproduce.REGISTRY.clear()
    reproduce.REGISTRY.update(saved)


def test_run_experiments_fails_an_experiment_with_an_unsourced_claim(registry, tmp_path):
    register("t-old-f11", title="t")(lambda ctx: Outcome(comparisons=[old_f11()]))
    index = run_experiments(["t-old-f11"], tmp_path, log=lambda _: None)
    e = index["experiments"][0]
    assert e["status"] == "failed"
    assert "'t-old-f11'" in e["error"] and "compliant, logical / common" in e["error"]


def test_p3_order_passes_the_source_through_with_one_seed():
    c = p3.order("q", [1.0], [2.0], claim="<", source="P3 §V.C")
    assert c.source == "P3 §V.C" and c.reference.endswith("; P3 §V.C")


REPRODUCE = Path(reproduce.__file__).parent


def _texts(node: ast.AST, consts: dict[str, str]) -> list[str]:
    """The string constants in ``node`` (f-strings' literal parts included) and the
    values of the module-level string constants it names."""
    out = []
    for n in ast.walk(node):
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            out.append(n.value)
        elif isinstance(n, ast.Name) and n.id in consts:
            out.append(consts[n.id])
    return out


def _ref(kw: dict[str | None, ast.expr]) -> tuple[str, dict[str | None, ast.expr]]:
    """The reference class a call's ``ref=`` builds (``Bound``, ``Order``, …; "" when it is
    not built in the call) and that constructor's keywords."""
    ref = kw.get("ref")
    if isinstance(ref, ast.Call) and isinstance(ref.func, ast.Name):
        return ref.func.id, {k.arg: k.value for k in ref.keywords}
    return "", {}


def unsourced_calls() -> list[str]:
    """Every ``Comparison(...)`` with a bound (``ref=Bound(...)``) or an order built by hand
    (``ref=Order(...)``) and every ``Comparison.order(...)`` in the reproduction modules
    that gives neither ``source=`` nor ``own=`` and names no source in the literal text of
    its quantity, its bound's ``against`` or its ``note``, as "file:line". A call
    that forwards ``**kw`` is a wrapper: its callers' keywords reach it, and the calls of
    P3's wrapper (``p3.order``) are checked as orders."""
    bad = []
    for f in sorted(REPRODUCE.glob("*.py")):
        tree = ast.parse(f.read_text())
        consts = {}
        for st in tree.body:
            if isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Name):
                consts[st.targets[0].id] = " ".join(_texts(st.value, {}))
        for n in ast.walk(tree):
            if not isinstance(n, ast.Call):
                continue
            fn = n.func
            is_order = (
                isinstance(fn, ast.Attribute) and fn.attr == "order"
                and isinstance(fn.value, ast.Name) and fn.value.id in ("Comparison", "p3")
            ) or (f.name == "p3.py" and isinstance(fn, ast.Name) and fn.id == "order")  # fmt: skip
            if not (is_order or (isinstance(fn, ast.Name) and fn.id == "Comparison")):
                continue
            kw = {k.arg: k.value for k in n.keywords}
            if None in kw:  # **kw: a wrapper
                continue
            ref, ref_kw = _ref(kw)
            if not (is_order or ref in ("Bound", "Order")) or "source" in kw or "own" in kw:
                continue
            parts = [t for k in ("quantity", "note") if k in kw for t in _texts(kw[k], consts)]
            parts += [t for t in _texts(ref_kw["against"], consts)] if "against" in ref_kw else []
            if n.args:
                parts += _texts(n.args[0], consts)
            if not any(SOURCE_IN_TEXT.search(t) for t in parts):
                bad.append(f"{f.name}:{n.lineno}")
    return bad


def test_every_bound_and_order_in_the_reproductions_names_its_source():
    assert unsourced_calls() == []


def test_the_static_check_finds_an_unsourced_bound(tmp_path, monkeypatch):
    (tmp_path / "px.py").write_text(
        "from qoslab.reproduce import Bound, Comparison\n"
        'A = Comparison("q", 1.0, ref=Bound(at_least=0.97, against="3 % slack"))\n'
        'B = Comparison("q", 1.0, ref=Bound(at_least=0.97, against="P0 §4.2.3"))\n'
        'C = Comparison.order("q", [1], [2], own="ours")\n'
        'D = Comparison.order("q", [1], [2], note="x")\n'
    )
    monkeypatch.setattr(f"{__name__}.REPRODUCE", tmp_path)
    assert unsourced_calls() == ["px.py:2", "px.py:5"]


def test_p0_mix_claims_pass_the_rule_and_its_gain_rests_on_the_calibration():
    comps = p0._mix_comparisons(lambda q, cc, col: 1.0)
    require_sources("p0-mix", Outcome(comparisons=[c for c in comps if not c.calibrated]))
    gains = [c for c in comps if c.calibrated]
    assert [c.quantity for c in gains] == [
        "50-packet queue: Jain of the long connections, aggregate-fair − Reno"
    ]
    with pytest.raises(ValueError, match="rests on the calibrated"):
        Outcome(comparisons=gains)  # no calibration shown: refused

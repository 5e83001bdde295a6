"""The reproduction registry: experiments registered, run, compared, reported."""

from __future__ import annotations

import polars as pl
import pytest

from conftest import report_text
from qoslab import reproduce
from qoslab.report import write_report
from qoslab.reproduce import (
    Bound,
    Comparison,
    Explanation,
    Interval,
    Order,
    Outcome,
    Value,
    register,
    run_experiments,
)


@pytest.fixture
def registry():
    saved = dict(reproduce.REGISTRY)
    yield reproduce.REGISTRY
    reproduce.REGISTRY.clear()
    reproduce.REGISTRY.update(saved)


def test_registered_experiments_run_and_report(registry, small, tmp_path):
    @register("t-share", title="Proportional share", paper="test §1")
    def share(ctx):
        r = ctx.run(small, label="base")
        sw = ctx.sweep(small, seeds=2, grid={"link.2.rate": ["1Mbps", "2Mbps"]}, label="rates")
        a = r.flows.filter(pl.col("name") == "a")["goodput_bps"][0]
        assert sw.done == 4
        return Outcome(
            comparisons=[Comparison("flow a share", a / 1e6, ref=Value(2 / 3), unit="Mbit/s")],
            tables={"flows": r.flows},
        )

    @register("t-broken", title="Raises", paper="")
    def broken(ctx):
        raise RuntimeError("boom")

    idx = run_experiments(["t-share", "t-broken"], tmp_path / "rep", quick=True, log=lambda s: None)
    by = {e["name"]: e for e in idx["experiments"]}
    assert by["t-share"]["status"] == "done" and by["t-broken"]["status"] == "failed"
    assert "boom" in by["t-broken"]["error"]
    html = report_text(write_report(tmp_path / "rep"))
    assert "Ours beside the paper" in html and "flow a share" in html and "deviation [%]" in html
    assert html.count("<img") >= 2  # run throughput + sweep goodput-vs-rate at least
    assert "boom" in html


def test_an_experiments_pooled_runs_are_timed_and_its_pool_closed(registry, small, tmp_path):
    from qoslab.reproduce import RunJob

    ctxs = []

    @register("t-pooled", title="Pooled runs", paper="")
    def pooled(ctx):
        ctxs.append(ctx)
        list(
            ctx.run_many(
                [RunJob(small, seed=s, label="kept" if s == 1 else None) for s in (1, 2, 3)]
            )
        )
        return Outcome()

    idx = run_experiments(["t-pooled"], tmp_path / "rep", quick=True, workers=2, log=lambda s: None)
    (e,) = idx["experiments"]
    assert e["status"] == "done" and e["runs"] == [
        str(tmp_path / "rep" / "t-pooled" / "runs" / "kept")
    ]
    assert e["pooled"]["runs"] == 2 and 0 < e["pooled"]["longest_s"] <= e["pooled"]["call_s"]
    assert ctxs[0]._pool is None  # closed when the experiment ended


def test_full_prefix_runs_those_experiments_in_full_mode_under_quick(registry, tmp_path):
    seen = {}
    for name in ["t0-a", "t1-b"]:
        register(name, title=name)(lambda ctx, n=name: seen.__setitem__(n, ctx.quick))
    idx = run_experiments(
        ["t0-a", "t1-b"], tmp_path / "rep", quick=True, full=["t0-"], log=lambda s: None
    )
    assert seen == {"t0-a": False, "t1-b": True}
    assert {e["name"]: e["quick"] for e in idx["experiments"]} == {"t0-a": False, "t1-b": True}
    html = report_text(write_report(tmp_path / "rep"))
    assert "quick (full mode: t0-a)" in html


def test_paper_only_reaches_the_experiments_and_the_report(registry, tmp_path):
    from click.testing import CliRunner

    from qoslab.cli import cli

    seen = []
    register("t-po", title="t-po")(lambda ctx: seen.append(ctx.paper_only))
    for args in ([], ["--paper-only"]):
        out = tmp_path / f"rep{len(seen)}"
        r = CliRunner().invoke(cli, ["reproduce", "t-po", "-o", str(out), *args])
        assert r.exit_code == 0, r.output
        html = report_text(out / "report.html")
        assert ("configurations only (--paper-only)" in html) == bool(args)
    assert seen == [False, True]


def test_p1_paper_only_drops_the_eq1_reruns():
    from qoslab.reproduce import Context
    from qoslab.reproduce.p1 import _models, _variants

    ctx = Context("p1-t1", None, quick=False, workers=None, ray=None)
    assert _models(ctx) == ("fitted", "paper")
    ctx.paper_only = True
    assert _models(ctx) == ("fitted",)
    assert [v[0] for v in _variants(ctx, "t3")] == ["fitted", "fitted"]


def test_register_twice_is_an_error(registry):
    register("t-x", title="x")(lambda ctx: Outcome())
    with pytest.raises(ValueError, match="twice"):
        register("t-x", title="x")(lambda ctx: Outcome())


def test_verdicts_against_value_interval_and_bounds():
    assert Comparison("v", 1.02, ref=Value(1.0), rtol=0.03).verdict == "within"
    assert Comparison("v", 1.04, ref=Value(1.0), rtol=0.03).verdict == "outside"
    assert Comparison("v", 0.5, ref=Value(0.0), atol=0.5).verdict == "within"
    assert Comparison("i", 53.3, ref=Interval(53.2, 53.25)).verdict == "outside"
    assert Comparison("i", 53.3, ref=Interval(53.2, 53.25), rtol=0.01).verdict == "within"
    assert (
        Comparison("b", 0.99, ref=Bound(at_least=1.0, against="the request")).verdict == "outside"
    )
    assert Comparison("b", 1.5, ref=Bound(at_least=1.0)).verdict == "within"
    assert Comparison("b", 1.031, ref=Bound(at_most=1.03)).verdict == "outside"
    assert Comparison("b", 1.0, ref=Bound(at_least=0.98, at_most=1.03)).verdict == "within"
    assert Comparison("n", 1.0).verdict == "info"
    assert Comparison("nan", float("nan"), ref=Value(1.0), rtol=1).verdict == "outside"
    c = Comparison("b", 0.99, ref=Bound(at_least=1.0, against="the request"), unit="×")
    assert c.reference == "≥ 1 (the request)" and c.deviation == pytest.approx(-0.01)
    assert Comparison("i", 1, ref=Interval(2, 3), rtol=0.03).reference == "2–3 ± 3 %"


def test_an_explanation_holds_only_when_its_counterfactual_lands_in_the_band():
    ex = Explanation("RTO in slow start", doc="docs/x.md#a", script="s.py")
    landed = ex.tested("no RTO in slow start", 0.99, "qoslab run x.toml --set a=b")
    missed = ex.tested("no RTO in slow start", 0.9)
    not_run = ex.tested("no RTO in slow start", None)
    assert (
        Comparison("m", 0.67, ref=Bound(at_least=0.98), explanation=landed).verdict
        == "outside-explained"
    )
    # the cause removed, the value still misses the comparison's own band: outside
    assert Comparison("m", 0.67, ref=Bound(at_least=0.98), explanation=missed).verdict == "outside"
    assert Comparison("m", 0.67, ref=Bound(at_least=0.98), explanation=not_run).verdict == "outside"
    # no band wider than the comparison's: 0.975 lands only through the tolerance
    assert Comparison("m", 0.6, ref=Bound(at_least=0.98), atol=0.01,
                      explanation=ex.tested("x", 0.975)).verdict == "outside-explained"  # fmt: skip
    assert Comparison(
        "m", 0.6, ref=Bound(at_least=0.98), explanation=ex.tested("x", 0.975)
    ).verdict == ("outside")
    assert Comparison("m", 0.99, ref=Bound(at_least=0.98), explanation=missed).verdict == "within"
    d = Comparison("m", 0.67, ref=Bound(at_least=0.98), explanation=landed).to_dict()
    assert d["verdict"] == "outside-explained" and d["explanation"]["doc"] == "docs/x.md#a"
    assert d["explanation"]["counterfactual"]["value"] == 0.99
    assert d["explanation"]["confirmed"] is True


def test_an_explanation_without_a_counterfactual_is_refused():
    ex = Explanation("a story", doc="docs/x.md#a")
    with pytest.raises(ValueError, match="no counterfactual"):
        Comparison("m", 0.5, ref=Bound(at_least=1.0), explanation=ex)
    # saying that no run tests it is allowed, and explains nothing
    c = Comparison("m", 0.5, ref=Bound(at_least=1.0), explanation=ex.untested())
    assert c.verdict == "outside" and c.to_dict()["explanation"]["counterfactual"]["value"] is None


def test_only_a_run_that_removes_the_cause_confirms_an_explanation():
    ex = Explanation("the topology", doc="docs/x.md#a")
    for kind in ("reading", "off-paper"):
        c = Comparison(
            "m", 0.5, ref=Bound(at_least=1.0), explanation=ex.tested("other", 1.2, kind=kind)
        )
        assert c.verdict == "outside", kind
    with pytest.raises(ValueError, match="kind"):
        ex.tested("x", 1.0, kind="story")
    # a missing result is never explained, a tolerance is finite
    nan = Comparison("m", float("nan"), ref=Bound(at_least=1.0), explanation=ex.tested("x", 1.2))
    assert nan.verdict == "outside"
    with pytest.raises(ValueError, match="finite"):
        Comparison("m", 5.0, ref=Value(1.0), rtol=float("inf"))
    d = Comparison("m", 0.5, ref=Bound(at_least=1.0), explanation=ex.tested("x", 0.5)).to_dict()
    assert d["explanation"]["moved"] is False and d["verdict"] == "outside"


def test_stored_verdicts_are_judged_by_todays_rules():
    from qoslab.reproduce import stored_verdict

    old = {"quantity": "q", "verdict": "outside-explained", "explanation": {"why": "x"}}
    assert stored_verdict(old) == "outside"
    ok = {**old, "explanation": {"why": "x", "confirmed": True}}
    assert stored_verdict(ok) == "outside-explained"
    assert reproduce.count_verdicts([old, ok])["outside"] == 1


def test_paired_interval_by_hand():
    m, lo, hi, n = reproduce.paired_interval([3.0, 5.0, 4.0], [1.0, 2.0, 3.0])
    # differences 2, 3, 1: mean 2, sd 1, t(2) = 4.303 → half-width 4.303 / √3
    assert (m, n) == (2.0, 3)
    assert lo == pytest.approx(2 - 4.3027 / 3**0.5, rel=1e-4)
    assert hi == pytest.approx(2 + 4.3027 / 3**0.5, rel=1e-4)
    with pytest.raises(ValueError, match="same seeds"):
        reproduce.paired_interval([1.0, 2.0], [1.0])


def test_mean_interval_of_one_run_is_the_value_and_of_more_the_t_interval():
    assert reproduce.mean_interval([0.8]) == (0.8, 0.8, 0.8, 1)
    m, lo, hi, n = reproduce.mean_interval([1.0, 2.0, 3.0])
    # mean 2, sd 1, t(2) = 4.303 → half-width 4.303 / √3
    assert (m, n) == (2.0, 3) and hi - m == pytest.approx(4.3027 / 3**0.5, rel=1e-4)
    assert lo == pytest.approx(2 * m - hi)


def test_a_strict_order_whose_interval_straddles_zero_is_a_tie():
    a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    below = Comparison.order("A below B", a, [x + 0.5 for x in a], claim="<", unit="s")
    assert below.verdict == "within" and below.ours == pytest.approx(-0.5)
    noisy = [x + d for x, d in zip(a, [0.3, -0.4, 0.2, -0.1, 0.1, -0.2], strict=True)]
    tie = Comparison.order("A below B", a, noisy, claim="<", a_name="RTT-RTO", b_name="basic")
    assert tie.verdict == "tie"
    assert "RTT-RTO < basic" in tie.reference and "over 6 seeds" in tie.reference
    wrong = Comparison.order("A above B", a, [x + 0.5 for x in a], claim=">")
    assert wrong.verdict == "outside"
    assert tie.to_dict()["ci"][0] < 0 < tie.to_dict()["ci"][1]
    with pytest.raises(ValueError, match="claim"):
        Comparison.order("x", a, a, claim="<=")
    # fewer than three seeds decide no order; values paired by seed, not by position
    assert Comparison.order("x", [1.0, 2.0], [3.0, 4.0]).verdict == "tie"
    by_seed = Comparison.order("x", {1: 1.0, 2: 2.0, 3: 3.0}, {3: 3.5, 1: 1.5, 2: 2.5})
    assert by_seed.verdict == "within" and by_seed.ours == pytest.approx(-0.5)
    with pytest.raises(ValueError, match="same seeds"):
        Comparison.order("x", {1: 1.0, 2: 2.0, 3: 3.0}, {1: 1.0, 2: 2.0, 4: 3.0})
    # an order built by hand must carry its own interval around its mean
    with pytest.raises(ValueError, match="its own"):
        Comparison("x", 5.0, ref=Order("<", (-2.0, -1.0), 3))


def test_an_ablation_whose_effect_survives_is_outside():
    ok = reproduce.Ablation("ERUF moves drops to the edge", "regulators", "regulators off",
                            "edge share − baseline", 0.40, 0.05)  # fmt: skip
    assert ok.verdict == "within" and ok.fall == pytest.approx(0.875)
    survives = reproduce.Ablation("c", "m", "t", "q", 0.40, 0.39)
    assert survives.verdict == "outside"
    no_effect = reproduce.Ablation("c", "m", "t", "q", -0.1, -0.5)
    assert no_effect.verdict == "outside" and no_effect.fall is None
    noisy = reproduce.Ablation("c", "m", "t", "q", 0.4, 0.1, with_seeds=[0.9, 0.1, 0.2],
                               without_seeds=[0.1, 0.15, 0.05])  # fmt: skip
    assert noisy.verdict == "tie"
    assert reproduce.Ablation("c", "m", "t", "q", 0.4, 0.10333333333333333,
                              with_seeds=[0.4, 0.41, 0.39],
                              without_seeds=[0.1, 0.12, 0.09]).verdict == "within"  # fmt: skip
    assert ok.to_dict()["verdict"] == "within"
    # an effect too small to be one, and a NaN fall, are outside
    tiny = reproduce.Ablation("c", "m", "t", "q", 0.004, 0.0, min_effect=0.05)
    assert tiny.verdict == "outside"
    assert reproduce.Ablation("c", "m", "t", "q", 1.0, float("nan")).verdict == "outside"


def test_an_ablation_whose_fall_interval_straddles_its_bound_is_a_tie():
    # falls 0.5: with − without per seed 0.4, 0.5, 0.6 on an effect of 1.0 (0.25 … 0.75)
    straddles = reproduce.Ablation("c", "m", "t", "q", 1.0, 0.5, with_seeds=[1.0, 1.0, 1.0],
                                   without_seeds=[0.6, 0.5, 0.4])  # fmt: skip
    lo, hi = straddles.fall_ci
    assert lo < 0.5 < hi and lo > 0  # the interval excludes no fall, yet reaches 0.5
    assert straddles.verdict == "tie"
    # the same point fall, tight: within; a tight fall below the bound: outside
    tight = reproduce.Ablation("c", "m", "t", "q", 1.0, 0.4, with_seeds=[1.0, 1.0, 1.0],
                               without_seeds=[0.41, 0.4, 0.39])  # fmt: skip
    assert tight.verdict == "within" and tight.fall_ci[0] >= 0.5
    low = reproduce.Ablation("c", "m", "t", "q", 1.0, 0.6, with_seeds=[1.0, 1.0, 1.0],
                             without_seeds=[0.61, 0.6, 0.59])  # fmt: skip
    assert low.verdict == "outside" and low.fall_ci[1] < 0.5
    # a point fall below the bound whose interval reaches it is a tie, not outside
    near = reproduce.Ablation("c", "m", "t", "q", 1.0, 0.55, with_seeds=[1.0, 1.0, 1.0],
                              without_seeds=[0.6, 0.55, 0.5])  # fmt: skip
    assert near.fall < 0.5 and near.verdict == "tie"
    # the fall's interval is the paired interval over the effect with the mechanism
    d = straddles.to_dict()
    assert d["fall_ci"] == pytest.approx([x / 1.0 for x in d["ci"]])


def test_stored_ablations_are_judged_by_todays_tie_rule():
    from qoslab.reproduce import stored_verdict

    # stored when only an interval reaching zero made a tie: fall 0.502, interval of
    # with − without 0.0686 … 0.111 on an effect of 0.1789 → fall 0.38 … 0.62
    old = {"claim": "c", "quantity": "q", "effect_with": 0.1789, "effect_without": 0.08905,
           "falls_by": 0.5, "fall": 0.502, "ci": [0.0686, 0.111], "verdict": "within"}  # fmt: skip
    assert stored_verdict(old) == "tie"
    no_seeds = {**old, "ci": None}
    assert stored_verdict(no_seeds) == "within"
    gone = {**old, "fall": None, "ci": None, "verdict": "outside"}
    assert stored_verdict(gone) == "outside"
    assert reproduce.Ablation("c", "m", "t", "q", float("inf"), 0.0).verdict == "outside"
    with pytest.raises(ValueError, match="not the mean"):
        reproduce.Ablation("c", "m", "t", "q", 0.9, 0.1, with_seeds=[0.4, 0.41, 0.39],
                           without_seeds=[0.1, 0.12, 0.09])  # fmt: skip


def test_readings_need_two_and_one_argued_headline():
    head = reproduce.Reading("increase", "bytes", "avg bytes/s", headline=True,
                             argued='"increased by one average packet size"')  # fmt: skip
    alt = reproduce.Reading("increase", "packet", "one packet per RTT")
    c = [Comparison("gain", 34.0, ref=Value(35.0), rtol=0.2)]
    Outcome(readings=[reproduce.ReadingResult(head, c), reproduce.ReadingResult(alt, c)])
    with pytest.raises(ValueError, match="at least two"):
        Outcome(readings=[reproduce.ReadingResult(head, c)])
    alt2 = reproduce.Reading("increase", "other")
    with pytest.raises(ValueError, match="exactly one headline"):
        Outcome(readings=[reproduce.ReadingResult(alt, c), reproduce.ReadingResult(alt2, c)])
    with pytest.raises(ValueError, match="quote the paper"):
        reproduce.Reading("increase", "bytes", headline=True)


def test_a_calibration_shows_four_values_with_the_chosen_one():
    cs = [[Comparison("t", float(i), ref=Value(2.0), rtol=0.1)] for i in range(4)]
    cal = reproduce.Calibration("start window", 2, "not given", [0, 1, 2, 3], cs)
    assert cal.to_dict()["chosen"] == "2"
    with pytest.raises(ValueError, match="four or more"):
        reproduce.Calibration("w", 1, "x", [0, 1, 2], cs[:3])
    with pytest.raises(ValueError, match="chosen value"):
        reproduce.Calibration("w", 9, "x", [0, 1, 2, 3], cs)


def test_ablations_readings_and_ties_reach_the_summary_and_the_report(registry, tmp_path):
    a = [1.0, 2.0, 3.0, 4.0]

    @register("t-std", title="standard")
    def std(ctx):
        head = reproduce.Reading("k", "lit", headline=True, argued='"as written"')
        alt = reproduce.Reading("k", "alt")
        return Outcome(
            comparisons=[Comparison.order("o", a, [a[0] + 1, a[1] - 1, a[2] + 1, a[3] - 1],
                                          source="§1")],
            ablations=[reproduce.Ablation("claim A", "mech M", "M off", "effect", 1.0, 0.9,
                                          twin_changes={"m": (True, False)},
                                          mechanism_off={"m": (True, False)})],
            readings=[
                reproduce.ReadingResult(head, [Comparison("v", 1.0, ref=Value(1.0))]),
                reproduce.ReadingResult(alt, [Comparison("v", 2.0, ref=Value(1.0))]),
            ],
            calibrations=[reproduce.Calibration(
                "p", 1, "not given", [0, 1, 2, 3],
                [[Comparison("v", float(i), ref=Value(1.0))] for i in range(4)])],
        )  # fmt: skip

    idx = run_experiments(["t-std"], tmp_path / "rep", log=lambda s: None)
    e = idx["experiments"][0]
    assert e["verdicts"]["tie"] == 1 and e["ablation_verdicts"]["outside"] == 1
    assert e["verdict"] == "outside"  # the ablation that did not fall
    assert idx["summary"]["ablations"]["outside"] == 1 and idx["summary"]["comparisons"]["tie"] == 1
    html = report_text(write_report(tmp_path / "rep"))
    assert "Ablations: does the effect fall" in html and "mech M" in html
    assert "k = lit (headline)" in html and "as written" in html
    assert "p = 1 (chosen)" in html
    from qoslab import docgen

    out = docgen.export(tmp_path / "rep", tmp_path / "d.json")
    import json

    data = json.loads(out.read_text())
    table = docgen.RENDERERS["ablations"](data, prefix="t-")
    assert "| t-std | claim A | mech M | M off |" in table
    assert "k = alt" in docgen.RENDERERS["readings"](data, experiment="t-std")
    assert "p = 1 (chosen)" in docgen.RENDERERS["calibrations"](data, experiment="t-std")


def test_natural_order():
    from qoslab.docgen import natural_key

    assert sorted(["p0-f10", "p0-f3", "p0-f4b"], key=natural_key) == ["p0-f3", "p0-f4b", "p0-f10"]


def _three_verdicts(registry):
    ex = Explanation("known", doc="docs/papers/p1.md#f7a-rto").tested("cause removed", 1.0)

    @register("t-within", title="within")
    def a(ctx):
        return Outcome(comparisons=[Comparison("a", 1.0, ref=Value(1.0))])

    @register("t-explained", title="explained")
    def b(ctx):
        return Outcome(
            comparisons=[Comparison("b", 0.5, ref=Bound(at_least=1), explanation=ex, source="§1")]
        )

    @register("t-outside", title="outside")
    def c(ctx):
        return Outcome(
            comparisons=[
                Comparison("c", 1.0, ref=Value(1.0)),
                Comparison("c2", 2.0, ref=Bound(at_most=1), source="§1"),
            ]
        )


def test_status_and_summary_count_verdicts(registry, tmp_path):
    _three_verdicts(registry)
    names = ["t-within", "t-explained", "t-outside"]
    idx = run_experiments(names, tmp_path / "rep", log=lambda s: None)
    by = {e["name"]: e for e in idx["experiments"]}
    assert [by[n]["verdict"] for n in names] == ["within", "outside-explained", "outside"]
    assert by["t-outside"]["verdicts"] == {
        "within": 1,
        "outside-explained": 0,
        "tie": 0,
        "outside": 1,
        "not-judged": 0,
        "info": 0,
    }
    assert idx["summary"]["ok"] is False
    assert idx["summary"]["comparisons"]["outside"] == 1
    assert idx["summary"]["experiments"] == {
        "within": 1,
        "outside-explained": 1,
        "tie": 0,
        "outside": 1,
        "failed": 0,
        "skipped": 0,
    }
    html = report_text(write_report(tmp_path / "rep"))
    assert "outside-explained" in html and "docs/papers/p1.md#f7a-rto" in html


def test_reproduce_exits_nonzero_for_failures_and_for_outside_only_when_strict(registry, tmp_path):
    from click.testing import CliRunner

    from qoslab.cli import cli

    _three_verdicts(registry)
    r = CliRunner().invoke(cli, ["reproduce", "t-within", "t-explained", "-o", str(tmp_path / "a")])
    assert r.exit_code == 0, r.output
    assert "[outside-explained: 1 outside-explained]" in r.output
    assert "why: known (see docs/papers/p1.md#f7a-rto)" in r.output
    r = CliRunner().invoke(cli, ["reproduce", "t-outside", "-o", str(tmp_path / "b")])
    assert r.exit_code == 0, r.output  # an honest outside is a finding, not a failure
    assert "t-outside — outside [outside: 1 within, 1 outside]" in r.output
    assert "comparisons: 1 within, 0 outside-explained (counterfactual confirmed), 0 tie, " in (
        r.output
    )
    r = CliRunner().invoke(cli, ["reproduce", "--strict", "t-outside", "-o", str(tmp_path / "c")])
    assert r.exit_code == 1

    @register("t-raises", title="raises")
    def boom(ctx):
        raise RuntimeError("boom")

    r = CliRunner().invoke(cli, ["reproduce", "t-raises", "-o", str(tmp_path / "d")])
    assert r.exit_code == 1


def test_p1_comparisons_link_to_existing_docs_and_scripts():
    import re
    from pathlib import Path

    from qoslab.reproduce import p1

    root = Path(__file__).resolve().parents[1]
    exps = [v for v in vars(p1).values() if isinstance(v, Explanation)]
    assert len(exps) >= 4
    for ex in exps:
        path, _, anchor = ex.doc.partition("#")
        text = (root / path).read_text()
        assert f'<a id="{anchor}">' in text, ex.doc
        if ex.script:
            script = next(t for t in ex.script.split() if t.endswith(".py"))
            assert (root / script).is_file(), ex.script
    src = (root / "python/qoslab/reproduce/p1.py").read_text()
    assert not re.search(r"issue \d", src, re.I), "no tracker references in user-facing text"


def test_comparisons_are_printed_beside_the_papers(capsys) -> None:
    from qoslab.cli import _print_comparisons

    _print_comparisons(
        [
            {
                "name": "px-demo",
                "title": "demo",
                "status": "done",
                "comparisons": [
                    Comparison(
                        "goodput", 1.23456, ref=Value(1.2), unit="Mb/s", rtol=0.05
                    ).to_dict(),
                    Comparison("drops", 0, unit="").to_dict(),
                ],
            }
        ]
    )
    out = capsys.readouterr().out
    assert "px-demo — demo [within: 1 within, 1 info]" in out
    line = next(x for x in out.splitlines() if x.strip().startswith("goodput"))
    assert line.split()[1:] == ["1.235", "1.2", "±", "5", "%", "Mb/s", "within"]
    assert next(x for x in out.splitlines() if x.strip().startswith("drops")).split()[2:] == [
        "—",
        "-",
        "info",
    ]


def test_a_reproduction_stopped_part_way_keeps_its_finished_experiments(registry, tmp_path):
    # The second experiment stops the reproduction as a kill would (no exception handler
    # of ours runs): the index on disk still holds the first, marked unfinished.
    import json

    register("t-first", title="first")(
        lambda ctx: Outcome(
            comparisons=[Comparison("q", 1.0, ref=Bound(at_least=0.5), source="§1")]
        )
    )

    def stop(ctx):
        raise KeyboardInterrupt

    register("t-second", title="second")(stop)
    with pytest.raises(KeyboardInterrupt):
        run_experiments(["t-first", "t-second"], tmp_path / "rep")
    idx = json.loads((tmp_path / "rep" / "reproduce.json").read_text())
    assert [e["name"] for e in idx["experiments"]] == ["t-first"]
    assert idx["finished"] is False and idx["experiments"][0]["status"] == "done"
    assert not list((tmp_path / "rep").glob("reproduce.json.*"))  # no temporary left
    html = report_text(write_report(tmp_path / "rep"))
    assert "STOPPED PART-WAY: 1 of 2 experiments finished" in html
    run_experiments(["t-first"], tmp_path / "rep2")
    assert json.loads((tmp_path / "rep2" / "reproduce.json").read_text())["finished"] is True

"""The reproduction registry: experiments registered, run, compared, reported."""

from __future__ import annotations

import polars as pl
import pytest

from qoslab import reproduce
from qoslab.report import write_report
from qoslab.reproduce import Comparison, Explanation, Outcome, register, run_experiments


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
            comparisons=[Comparison("flow a share", a / 1e6, paper=2 / 3, unit="Mbit/s")],
            tables={"flows": r.flows},
        )

    @register("t-broken", title="Raises", paper="")
    def broken(ctx):
        raise RuntimeError("boom")

    idx = run_experiments(["t-share", "t-broken"], tmp_path / "rep", quick=True, log=lambda s: None)
    by = {e["name"]: e for e in idx["experiments"]}
    assert by["t-share"]["status"] == "done" and by["t-broken"]["status"] == "failed"
    assert "boom" in by["t-broken"]["error"]
    html = write_report(tmp_path / "rep").read_text()
    assert "Ours beside the paper" in html and "flow a share" in html and "deviation [%]" in html
    assert html.count("<img") >= 2  # run throughput + sweep goodput-vs-rate at least
    assert "boom" in html


def test_full_prefix_runs_those_experiments_in_full_mode_under_quick(registry, tmp_path):
    seen = {}
    for name in ["t0-a", "t1-b"]:
        register(name, title=name)(lambda ctx, n=name: seen.__setitem__(n, ctx.quick))
    idx = run_experiments(
        ["t0-a", "t1-b"], tmp_path / "rep", quick=True, full=["t0-"], log=lambda s: None
    )
    assert seen == {"t0-a": False, "t1-b": True}
    assert {e["name"]: e["quick"] for e in idx["experiments"]} == {"t0-a": False, "t1-b": True}
    html = write_report(tmp_path / "rep").read_text()
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
        html = (out / "report.html").read_text()
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
    assert Comparison("v", 1.02, paper=1.0, rtol=0.03).verdict == "within"
    assert Comparison("v", 1.04, paper=1.0, rtol=0.03).verdict == "outside"
    assert Comparison("v", 0.5, paper=0.0, atol=0.5).verdict == "within"
    assert Comparison("i", 53.3, interval=(53.2, 53.25)).verdict == "outside"
    assert Comparison("i", 53.3, interval=(53.2, 53.25), rtol=0.01).verdict == "within"
    assert Comparison("b", 0.99, at_least=1.0, against="the request").verdict == "outside"
    assert Comparison("b", 1.5, at_least=1.0).verdict == "within"
    assert Comparison("b", 1.031, at_most=1.03).verdict == "outside"
    assert Comparison("b", 1.0, at_least=0.98, at_most=1.03).verdict == "within"
    assert Comparison("n", 1.0).verdict == "info"
    assert Comparison("nan", float("nan"), paper=1.0, rtol=1).verdict == "outside"
    c = Comparison("b", 0.99, at_least=1.0, against="the request", unit="×")
    assert c.reference == "≥ 1 (the request)" and c.deviation == pytest.approx(-0.01)
    assert Comparison("i", 1, interval=(2, 3), rtol=0.03).reference == "2–3 ± 3 %"
    with pytest.raises(ValueError, match="one of"):
        Comparison("x", 1.0, paper=1.0, at_least=0.5)


def test_an_explanation_covers_only_its_values():
    ex = Explanation("RTO in slow start", doc="docs/x.md#a", script="s.py", covers=(0.6, 0.98))
    assert Comparison("m", 0.67, at_least=0.98, explanation=ex).verdict == "outside-explained"
    assert Comparison("m", 0.3, at_least=0.98, explanation=ex).verdict == "outside"
    assert Comparison("m", 0.99, at_least=0.98, explanation=ex).verdict == "within"
    d = Comparison("m", 0.67, at_least=0.98, explanation=ex).to_dict()
    assert d["verdict"] == "outside-explained" and d["explanation"]["doc"] == "docs/x.md#a"


def _three_verdicts(registry):
    ex = Explanation("known", doc="docs/papers/p1.md#f7a-rto")

    @register("t-within", title="within")
    def a(ctx):
        return Outcome(comparisons=[Comparison("a", 1.0, paper=1.0)])

    @register("t-explained", title="explained")
    def b(ctx):
        return Outcome(comparisons=[Comparison("b", 0.5, at_least=1, explanation=ex)])

    @register("t-outside", title="outside")
    def c(ctx):
        return Outcome(
            comparisons=[Comparison("c", 1.0, paper=1.0), Comparison("c2", 2.0, at_most=1)]
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
        "outside": 1,
        "info": 0,
    }
    assert idx["summary"]["ok"] is False
    assert idx["summary"]["comparisons"]["outside"] == 1
    assert idx["summary"]["experiments"] == {
        "within": 1,
        "outside-explained": 1,
        "outside": 1,
        "failed": 0,
    }
    html = write_report(tmp_path / "rep").read_text()
    assert "outside-explained" in html and "docs/papers/p1.md#f7a-rto" in html


def test_reproduce_exits_nonzero_only_for_unexplained_outside(registry, tmp_path):
    from click.testing import CliRunner

    from qoslab.cli import cli

    _three_verdicts(registry)
    r = CliRunner().invoke(cli, ["reproduce", "t-within", "t-explained", "-o", str(tmp_path / "a")])
    assert r.exit_code == 0, r.output
    assert "[outside-explained: 1 outside-explained]" in r.output
    assert "why: known (see docs/papers/p1.md#f7a-rto)" in r.output
    r = CliRunner().invoke(cli, ["reproduce", "t-outside", "-o", str(tmp_path / "b")])
    assert r.exit_code == 1
    assert "t-outside — outside [outside: 1 within, 1 outside]" in r.output
    assert "comparisons: 1 within, 0 outside-explained, 1 outside" in r.output


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
                    Comparison("goodput", 1.23456, paper=1.2, unit="Mb/s", rtol=0.05).to_dict(),
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

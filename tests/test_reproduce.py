"""The reproduction registry: experiments registered, run, compared, reported."""

from __future__ import annotations

import polars as pl
import pytest

from qoslab import reproduce
from qoslab.report import write_report
from qoslab.reproduce import Comparison, Outcome, register, run_experiments


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
    assert "Ours beside the paper" in html and "flow a share" in html and "diff_%" in html
    assert html.count("<img") >= 2  # run throughput + sweep goodput-vs-rate at least
    assert "boom" in html


def test_register_twice_is_an_error(registry):
    register("t-x", title="x")(lambda ctx: Outcome())
    with pytest.raises(ValueError, match="twice"):
        register("t-x", title="x")(lambda ctx: Outcome())


def test_comparisons_are_printed_beside_the_papers(capsys) -> None:
    from qoslab.cli import _print_comparisons

    _print_comparisons(
        [
            {
                "name": "px-demo",
                "title": "demo",
                "status": "done",
                "comparisons": [
                    {"quantity": "goodput", "ours": 1.23456, "paper": 1.2, "unit": "Mb/s"},
                    {"quantity": "drops", "ours": 0, "paper": None, "unit": ""},
                ],
            }
        ]
    )
    out = capsys.readouterr().out
    assert "px-demo — demo [done]" in out
    line = next(x for x in out.splitlines() if x.strip().startswith("goodput"))
    assert line.split()[1:] == ["1.235", "1.2", "Mb/s"]
    assert next(x for x in out.splitlines() if x.strip().startswith("drops")).split()[2] == "—"

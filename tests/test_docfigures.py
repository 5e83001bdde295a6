"""Figures in the docs come from the reproduction run their page's data came from
(qoslab.docfigures, `python -m qoslab.docgen figures`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl
import pytest

from qoslab import docfigures, docgen, reproduce
from qoslab.reproduce import Comparison, Outcome, Value, register, run_experiments

ROOT = Path(__file__).resolve().parents[1]

PAGE = """# Results

<!-- qoslab:figure data=data/x.json figs/a.png=t-fig/one figs/b.png=t-fig/two -->
![A](figs/a.png) ![B](figs/b.png)
"""


@pytest.fixture
def site(tmp_path):
    """A reproduction with two report figures, its exported data and a page showing
    both figures: ``(results, page)``."""
    saved = dict(reproduce.REGISTRY)

    @register("t-fig", title="figure source")
    def exp(ctx):
        return Outcome(
            comparisons=[Comparison("x", 1.0, ref=Value(1.0), rtol=0.1)],
            tables={"rates": pl.DataFrame({"rate": [1, 2], "ratio": [0.5, 0.25]})},
        )

    rep = tmp_path / "rep"
    run_experiments(["t-fig"], rep, log=lambda s: None)
    reproduce.REGISTRY.clear()
    reproduce.REGISTRY.update(saved)
    figs = rep / "t-fig" / "figures"
    figs.mkdir(parents=True, exist_ok=True)
    (figs / "one.png").write_bytes(b"png one")
    (figs / "two.png").write_bytes(b"png two")
    docs = tmp_path / "docs"
    docgen.export(rep, docs / "data" / "x.json")
    page = docs / "page.md"
    page.write_text(PAGE)
    return rep, page


def test_copies_from_the_run_the_data_came_from_then_nothing(site):
    rep, page = site
    figs = page.parent / "figs"
    assert docgen.figures(rep, [page.parent]) == [figs / "a.png", figs / "b.png"]
    assert (figs / "a.png").read_bytes() == b"png one"
    assert (figs / "b.png").read_bytes() == b"png two"
    assert docgen.figures(rep, [page.parent]) == []
    assert docgen.figure_problems([page.parent]) == []


def test_a_run_with_other_tables_copies_nothing(site):
    rep, page = site
    figs = page.parent / "figs"
    # Another run of the experiment: one number differs from the page's data.
    pl.DataFrame({"rate": [1, 2], "ratio": [0.5, 0.3]}).write_parquet(
        rep / "t-fig" / "table-rates.parquet"
    )
    msg = r"page\.md:3: .*t-fig is not the run x\.json .*'rates' differs from row 1"
    with pytest.raises(ValueError, match=msg):
        docgen.figures(rep, [page])
    assert not figs.exists()
    assert docgen.main(["figures", str(rep), str(page)]) == 2


def test_a_missing_figure_is_found_before_anything_is_written(site):
    rep, page = site
    (rep / "t-fig" / "figures" / "two.png").unlink()
    with pytest.raises(ValueError, match=r"two\.png does not exist"):
        docgen.figures(rep, [page])
    # a.png passed its checks, but nothing is written until every figure has.
    assert not (page.parent / "figs" / "a.png").exists()


def test_a_quick_run_is_not_a_full_pages_source(site):
    rep, page = site
    data = page.parent / "data" / "x.json"
    d = json.loads(data.read_text())
    d["quick"] = not d["quick"]
    data.write_text(json.dumps(d))
    with pytest.raises(ValueError, match=r"-mode data, .* is a .*-mode reproduction"):
        docgen.figures(rep, [page])


def test_a_page_with_quick_and_full_figures_takes_from_each_run_its_modes(site):
    rep, page = site
    data = page.parent / "data" / "x.json"
    d = json.loads(data.read_text())
    d["quick"] = not d["quick"]
    (page.parent / "data" / "other.json").write_text(json.dumps(d))
    other = "<!-- qoslab:figure data=data/other.json figs/c.png=t-fig/one -->\n![C](figs/c.png)\n"
    page.write_text(PAGE + "\n" + other)
    figs = page.parent / "figs"
    assert docgen.figures(rep, [page]) == [figs / "a.png", figs / "b.png"]
    assert not (figs / "c.png").exists()
    assert docgen.figure_problems([page]) == [f"{page}:6: {figs / 'c.png'} does not exist"]


def test_check_reports_missing_and_unshown_figures(site):
    rep, page = site
    problems = docgen.figure_problems([page])
    assert len(problems) == 2 and all("does not exist" in p for p in problems)
    docgen.figures(rep, [page])
    page.write_text(PAGE.replace(" ![B](figs/b.png)", ""))
    assert docgen.figure_problems([page]) == [f"{page}:3: the page shows no image b.png"]
    assert docgen.main(["check", str(page)]) == 1


def test_malformed_marker_names_page_and_line(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("x\n<!-- qoslab:figure data=d.json figs/a.png=nodir -->\n")
    with pytest.raises(ValueError, match=r"p\.md:2: .*expected DEST=EXPERIMENT/NAME"):
        docfigures.figures_in(page)
    page.write_text("<!-- qoslab:figure figs/a.png=e/n -->\n")
    with pytest.raises(ValueError, match=r"p\.md:1: .*no data="):
        docfigures.figures_in(page)
    # In a fenced code block it is an example, not a marker.
    page.write_text("```markdown\n<!-- qoslab:figure figs/a.png=e/n -->\n```\n")
    assert docfigures.figures_in(page) == []


def test_an_unfinished_run_or_figures_older_than_tables_are_refused(site):
    rep, page = site
    idx = json.loads((rep / "reproduce.json").read_text())
    idx["finished"] = False
    (rep / "reproduce.json").write_text(json.dumps(idx))
    with pytest.raises(ValueError, match="did not finish"):
        docgen.figures(rep, [page])
    idx["finished"] = True
    (rep / "reproduce.json").write_text(json.dumps(idx))
    # The tables rewritten (same numbers) after the figures were drawn.
    t = rep / "t-fig" / "table-rates.parquet"
    os.utime(t, (t.stat().st_atime, (rep / "t-fig" / "figures" / "one.png").stat().st_mtime + 5))
    with pytest.raises(ValueError, match=r"one\.png is older than its experiment.s tables"):
        docgen.figures(rep, [page])
    assert not (page.parent / "figs").exists()


def test_markers_that_would_write_elsewhere_or_twice_are_refused(site):
    rep, page = site
    for spec, msg in [
        ("../out.png=t-fig/one", "a figure is a .png in"),
        ("data/x.json=t-fig/one", "a figure is a .png in"),
        ("figs/a.png=t-fig/one figs/a.png=t-fig/two", "is t-fig/two here but t-fig/one"),
    ]:
        page.write_text(f"<!-- qoslab:figure data=data/x.json {spec} -->\n![A](figs/a.png)\n")
        with pytest.raises(ValueError, match=msg):
            docgen.figures(rep, [page])
    # A marker not of the one-line form is an error, not skipped.
    for bad in [
        "<!-- qoslab:figure data=data/x.json figs/a.png=t-fig/one\n-->\n",
        "<!--  qoslab:figure data=data/x.json figs/a.png=t-fig/one-->\n",
    ]:
        page.write_text(bad)
        with pytest.raises(ValueError, match="expected one"):
            docgen.figures(rep, [page])
    page.write_text("Prose may name the `<!-- qoslab:figure … -->` marker.\n")
    assert docfigures.figures_in(page) == []
    assert not (page.parent / "figs").exists() and not (page.parent.parent / "out.png").exists()


def test_an_experiment_without_tables_verifies_nothing(site):
    rep, page = site
    data = page.parent / "data" / "x.json"
    d = json.loads(data.read_text())
    d["experiments"]["t-fig"]["tables"] = {}
    data.write_text(json.dumps(d))
    with pytest.raises(ValueError, match="holds no table of 't-fig'"):
        docgen.figures(rep, [page])


def test_check_finds_an_image_no_marker_names_and_skips_code(site):
    rep, page = site
    docgen.figures(rep, [page])
    page.write_text(PAGE + '\n![C](figs/c.png "title")\n\n~~~\n![D](figs/d.png)\n~~~\n')
    assert docgen.figure_problems([page]) == [
        f"{page}:6: image c.png is named by no qoslab:figure marker"
    ]


def test_committed_pages_name_figures_they_show():
    figs = [f for p in (ROOT / "docs").rglob("*.md") for f in docfigures.figures_in(p)]
    assert len(figs) >= 20  # P2's and P4's figures
    assert docgen.figure_problems([ROOT / "docs"]) == []

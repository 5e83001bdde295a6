"""Documentation tables generated from reproduction outputs, and the staleness check."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from qoslab import docgen, reproduce
from qoslab.reproduce import Bound, Comparison, Outcome, Value, register, run_experiments

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def results(tmp_path):
    saved = dict(reproduce.REGISTRY)

    @register("t-doc", title="doc table")
    def exp(ctx):
        return Outcome(
            comparisons=[
                Comparison("share", 0.661, ref=Value(2 / 3), rtol=0.02, unit="Mb/s"),
                Comparison(
                    "worst",
                    0.99,
                    ref=Bound(at_least=1.0, against="the request"),
                    source="§5",
                    note="0/1 live runs with valid timing",
                ),
            ],
            tables={"rates": pl.DataFrame({"rate_kbps": [50, 100], "ratio": [1.061, None]})},
        )

    run_experiments(["t-doc"], tmp_path / "rep", log=lambda s: None)
    yield tmp_path / "rep"
    reproduce.REGISTRY.clear()
    reproduce.REGISTRY.update(saved)


PAGE = """# Results

<!-- qoslab:table comparisons data=data/x.json experiment=t-doc -->
stale text typed by hand
<!-- qoslab:end -->

Between blocks.

<!-- qoslab:table table data=data/x.json experiment=t-doc table=rates digits=3 -->
<!-- qoslab:end -->
"""


def test_export_update_check(results, tmp_path):
    data = docgen.export(results, tmp_path / "docs" / "data" / "x.json")
    d = json.loads(data.read_text())
    assert d["experiments"]["t-doc"]["tables"]["rates"]["rows"] == [[50, 1.061], [100, None]]
    page = tmp_path / "docs" / "page.md"
    page.write_text(PAGE)
    assert docgen.check([tmp_path / "docs"]) == [page]
    assert docgen.update([page]) == [page]
    text = page.read_text()
    assert "stale text" not in text and "Between blocks." in text
    assert "| share | 0.661 Mb/s | 0.666667 ± 2 % | within |" in text
    assert "| worst | 0.99 | ≥ 1 (the request, §5) | outside |" in text
    assert "| 100 | — |" in text  # no None cells
    assert docgen.check([tmp_path / "docs"]) == []
    # The data changes (a new reproduction): the committed page is now stale.
    d["experiments"]["t-doc"]["comparisons"][0]["ours"] = 0.5
    data.write_text(json.dumps(d))
    assert docgen.check([page]) == [page]
    assert docgen.main(["check", str(page)]) == 1


def test_bad_marker_names_page_and_block(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("<!-- qoslab:table nosuch data=x.json -->\n<!-- qoslab:end -->\n")
    with pytest.raises(ValueError, match=r"p\.md: block .*unknown renderer 'nosuch'"):
        docgen.generate(page)
    assert docgen.main(["check", str(page)]) == 2


def test_committed_docs_agree_with_their_data():
    stale = docgen.check([ROOT / "docs", ROOT / "README.md"])
    assert not stale, f"regenerate with `python -m qoslab.docgen update {stale[0]}`"


def test_export_merge_keeps_other_experiments_and_refuses_mixed_modes(results, tmp_path):
    out = tmp_path / "x.json"
    out.write_text(json.dumps({"quick": False, "experiments": {"t-old": {"verdict": "within"}}}))
    docgen.export(results, out, merge=True)
    assert set(json.loads(out.read_text())["experiments"]) == {"t-old", "t-doc"}
    # Without merge the file holds this run only.
    docgen.export(results, out)
    assert set(json.loads(out.read_text())["experiments"]) == {"t-doc"}
    out.write_text(json.dumps({"quick": True, "experiments": {"t-old": {}}}))
    with pytest.raises(Exception, match="quick-mode data"):
        docgen.export(results, out, merge=True)
    assert set(json.loads(out.read_text())["experiments"]) == {"t-old"}


def test_table_rows_gives_an_exported_table_as_dicts_and_names_a_missing_experiment():
    import pytest

    from qoslab.docgen import table_rows

    data = {"experiments": {"e": {"tables": {"t": {"columns": ["a", "b"],
                                                   "rows": [[1, "x"], [2, "y"]]}}}}}  # fmt: skip
    assert table_rows(data, "e", "t") == [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]
    with pytest.raises(KeyError, match="'f' is not in the data"):
        table_rows(data, "f", "t")


def test_comparison_notes_are_shown_on_request(results, tmp_path):
    docgen.export(results, tmp_path / "data" / "x.json")
    page = tmp_path / "p.md"
    block = (
        "<!-- qoslab:table comparisons data=data/x.json experiment=t-doc{} -->\n"
        "<!-- qoslab:end -->\n"
    )
    page.write_text(block.format(" notes=yes"))
    docgen.update([page])
    text = page.read_text()
    assert "| quantity | ours | compared with | verdict | note |" in text
    row = "| worst | 0.99 | ≥ 1 (the request, §5) | outside | 0/1 live runs with valid timing |"
    assert row in text
    assert "| share | 0.661 Mb/s | 0.666667 ± 2 % | within | — |" in text
    page.write_text(block.format(""))
    docgen.update([page])
    assert "valid timing" not in page.read_text()
    page.write_text(block.format(" notes=maybe"))
    with pytest.raises(ValueError, match="notes='maybe'"):
        docgen.update([page])


def test_ablation_notes_are_shown_on_request(tmp_path):
    a = reproduce.Ablation("c", "m", "t", "q", 1.0, 0.2, note="2/5 runs with valid timing")
    data = {"quick": False, "experiments": {"e": {"ablations": [a.to_dict()]}}}
    (tmp_path / "x.json").write_text(json.dumps(data))
    page = tmp_path / "p.md"
    page.write_text("<!-- qoslab:table ablations data=x.json experiment=e notes=yes -->\n"
                    "<!-- qoslab:end -->\n")  # fmt: skip
    docgen.update([page])
    text = page.read_text()
    assert "| fall of the effect | verdict | note |" in text
    assert "| 0.8 (≥ 0.5) | within | 2/5 runs with valid timing |" in text

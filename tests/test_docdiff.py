"""`python -m qoslab.docgen diff`: changed verdicts, moved numbers and the prose that
quotes them, between two exports."""

from __future__ import annotations

import copy
import json

from qoslab import docdiff, docgen


def _data():
    return {
        "quick": False,
        "experiments": {
            "p9-t1": {
                "comparisons": [
                    {"quantity": "delay", "ours": 0.5568, "verdict": "within"},
                    {"quantity": "delay", "ours": 2.0, "verdict": "info"},
                ],
                "ablations": [
                    {
                        "claim": "RTO term lowers delay",
                        "effect_with": 0.1613,
                        "fall": 0.443,
                        "ci": [0.199, 0.688],
                        "verdict": "tie",
                    },
                ],
                "readings": [
                    {
                        "knob": "depth",
                        "reading": "rtt",
                        "comparisons": [{"quantity": "Jain", "ours": 0.98, "verdict": "within"}],
                    },
                ],
                "tables": {"t": {"columns": ["x"], "rows": [[1.0]]}},
            },
            "p9-only-old": {"comparisons": []},
        },
    }


def test_same_data_no_change():
    assert docdiff.diff(_data(), _data()) == []


def test_verdict_and_numbers_and_siblings_with_one_label():
    old, new = _data(), _data()
    e = new["experiments"]["p9-t1"]
    e["ablations"][0].update(fall=0.52, ci=[0.31, 0.73], verdict="within")
    e["comparisons"][1]["ours"] = 2.0000001  # below rtol: not a change
    e["readings"][0]["comparisons"][0]["verdict"] = "tie"
    changes = {c.item: c for c in docdiff.diff(old, new)}
    assert set(changes) == {
        "ablations [RTO term lowers delay]",
        "readings [depth = rtt]/comparisons [Jain]",
    }
    abl = changes["ablations [RTO term lowers delay]"]
    assert (abl.old_verdict, abl.new_verdict) == ("tie", "within")
    assert set(abl.moved) == {"fall", "ci"}
    # The second "delay" comparison is told from the first by its place.
    new2 = _data()
    new2["experiments"]["p9-t1"]["comparisons"][1]["ours"] = 3.0
    (c,) = docdiff.diff(old, new2)
    assert c.item == "comparisons [delay #2]" and c.moved == {"ours": (2.0, 3.0)}


def test_prose_quoting_an_old_number_is_found_outside_generated_blocks(tmp_path):
    page = tmp_path / "p9.md"
    page.write_text(
        "The fall, 0.443 (interval 0.199 … 0.688), is a tie.\n"
        "<!-- qoslab:table ablations data=x.json experiment=p9-t1 -->\n"
        "| 0.443 | generated |\n"
        "<!-- qoslab:end -->\n"
        "A number that only looks alike: 10.443 and 0.4431.\n"
    )
    old, new = _data(), _data()
    new["experiments"]["p9-t1"]["ablations"][0]["fall"] = 0.6
    changes = docdiff.diff(old, new)
    docdiff.find_prose(changes, [page], docgen._BLOCK)
    (c,) = changes
    assert c.prose == [f"{page}:1: The fall, 0.443 (interval 0.199 … 0.688), is a tie."]


def test_cli_prints_changes_and_files_in_one_export_only(tmp_path, capsys):
    old, new = _data(), copy.deepcopy(_data())
    del new["experiments"]["p9-only-old"]
    new["experiments"]["p9-t1"]["comparisons"][0]["verdict"] = "outside"
    new["experiments"]["p9-t1"]["comparisons"].append({"quantity": "loss", "verdict": "tie"})
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(old))
    b.write_text(json.dumps(new))
    assert docgen.main(["diff", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "p9-t1: comparisons [delay]\n  verdict within -> outside" in out
    assert "p9-t1: comparisons [loss]\n  new item (tie)" in out
    assert "1 judged items differ (1 in verdict), 1 new, 0 gone" in out
    assert "experiments in one file only: p9-only-old" in out


def test_cli_corrupt_file_is_a_clear_error(tmp_path, capsys):
    a = tmp_path / "a.json"
    a.write_text(json.dumps(_data()))
    bad = tmp_path / "bad.json"
    bad.write_text('{"experiments": ')
    assert docgen.main(["diff", str(a), str(bad)]) == 2
    assert f"qoslab.docgen: {bad}: not a JSON data file" in capsys.readouterr().err
    bad.write_text("[]")
    assert docgen.main(["diff", str(bad), str(a)]) == 2
    assert f"{bad}: no experiments" in capsys.readouterr().err


def test_tables_cells_moved_and_reshaped():
    old, new = _data(), _data()
    new["experiments"]["p9-t1"]["tables"]["t"]["rows"] = [[1.25]]
    (c,) = docdiff.diff(old, new)
    assert c.item == "table t" and c.moved == {"row 0 x": (1.0, 1.25)}
    new["experiments"]["p9-t1"]["tables"]["t"]["rows"] = [[1.0], [2.0]]
    (c,) = docdiff.diff(old, new)
    assert c.note.startswith("reshaped") and not c.moved
    new["experiments"]["p9-t1"]["tables"]["u"] = {"columns": ["y"], "rows": []}
    new["experiments"]["p9-t1"]["tables"]["t"] = old["experiments"]["p9-t1"]["tables"]["t"]
    (c,) = docdiff.diff(old, new)
    assert c.item == "table u" and c.old_verdict is None

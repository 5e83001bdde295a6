"""Single-file outputs (``qoslab draw -o``, ``qoslab plot -o``, ``qoslab report -o``)
never replace a file qoslab did not write, and write the format their suffix names; a
report rewritten with fewer formats removes its own figure files of the others."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

import qoslab
from qoslab.cli import cli
from qoslab.exceptions import OutputError
from qoslab.store import prepare_file

ROOT = Path(__file__).resolve().parents[1]
TWO_CBR = ROOT / "scenarios/examples/two_cbr.toml"


def _cli(*args: str):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_draw_writes_the_suffixs_format_and_never_over_a_users_file(tmp_path):
    sc = tmp_path / "two_cbr.toml"
    shutil.copy(TWO_CBR, sc)
    text = sc.read_text()
    res = _cli("draw", sc, "-o", sc)  # the scenario itself
    assert res.exit_code == 2 and "must end in .svg, .png, .pdf" in res.output
    assert sc.read_text() == text
    for kind, magic in (("svg", b"<?xml"), ("png", b"\x89PNG"), ("pdf", b"%PDF")):
        out = tmp_path / f"t.{kind}"
        for _ in range(2):  # qoslab's own file may be drawn again
            res = _cli("draw", sc, "-o", out)
            assert res.exit_code == 0, res.output
            assert out.read_bytes()[: len(magic)] == magic
    mine = tmp_path / "mine.svg"
    mine.write_text('<?xml version="1.0"?><svg>my own figure</svg>')
    res = _cli("draw", sc, "-o", mine)
    assert res.exit_code == 2 and "was not written by qoslab" in res.output
    assert "my own figure" in mine.read_text()


def test_report_and_plot_never_write_over_a_users_file(tmp_path):
    d = qoslab.run(TWO_CBR, {"duration": "2s", "warmup": "0.5s"}).save(tmp_path / "run")
    victim = tmp_path / "notes.html"
    victim.write_text("<!doctype html><p>my notes</p>")
    res = _cli("report", d, "-o", victim)
    assert res.exit_code == 2 and "was not written by qoslab" in res.output
    assert "my notes" in victim.read_text()
    res = _cli("report", d, "-o", tmp_path / "scenario.toml")
    assert res.exit_code == 2 and "must end in .html" in res.output
    ok = tmp_path / "page.html"
    assert _cli("report", d, "-o", ok).exit_code == 0
    assert _cli("report", d, "-o", ok).exit_code == 0  # its own page again
    png = tmp_path / "photo.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n a photo")
    res = _cli("plot", d, "--x", "name", "--y", "goodput_bps", "-o", png)
    assert res.exit_code != 0 and "was not written by qoslab" in res.output
    assert png.read_bytes().endswith(b"a photo")
    (tmp_path / "dir.svg").mkdir()
    with pytest.raises(OutputError, match="is a folder"):
        prepare_file(tmp_path / "dir.svg", ("svg",))


def test_report_with_fewer_formats_removes_its_own_other_files_only(tmp_path):
    d = qoslab.run(TWO_CBR, {"duration": "2s", "warmup": "0.5s"}).save(tmp_path / "run")
    assert _cli("report", d, "--formats", "svg,png,pdf").exit_code == 0
    figs = d / "figures"
    assert (figs / "goodput.png").is_file() and (figs / "goodput.pdf").is_file()
    user = figs / "annotated.png"
    user.write_bytes(b"\x89PNG\r\n\x1a\n the user's")
    assert _cli("report", d).exit_code == 0  # SVG alone
    assert (figs / "goodput.svg").is_file()
    assert not (figs / "goodput.png").exists() and not (figs / "goodput.pdf").exists()
    assert user.is_file()

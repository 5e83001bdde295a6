"""scripts/live_runs_archive.py: only complete runs whose timing held are packed, and
the README's table is rewritten from the archives."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

from conftest import load_script

ROOT = Path(__file__).resolve().parent.parent


def _module():
    return load_script(ROOT / "scripts" / "live_runs_archive.py")


def _run(runs: Path, name: str, summary: dict, complete: bool = True) -> None:
    d = runs / name
    d.mkdir(parents=True)
    (d / "summary.json").write_text(json.dumps(summary))
    if complete:
        (d / "manifest.json").write_text("{}")


def test_pack_keeps_complete_runs_with_valid_timing_and_writes_the_table(tmp_path, capsys):
    m = _module()
    m.HERE = tmp_path / "live-runs"
    m.HERE.mkdir()
    m.README = m.HERE / "README.md"
    m.README.write_text(f"# x\n\n{m.BEGIN}\nold\n{m.END}\n\ntail\n")
    m.ROOT = tmp_path
    runs = tmp_path / "res" / "p4-live" / "runs"
    b = "0.1.0+abc"
    _run(runs, "ptcp-w1-s1", {"live": True, "live_timing_ok": True, "engine_build": b})
    _run(runs, "ptcp-w2-s1", {"live": True, "live_timing_ok": False,
                              "live_timing_cause": "cpu-bursts", "engine_build": b})  # fmt: skip
    _run(runs, "stripe-w1-s1", {"live": True, "live_timing_ok": True, "engine_build": b},
         complete=False)  # fmt: skip
    _run(runs, "stripe-w1-s1-twin", {"live": False, "engine_build": b})
    assert m.pack(tmp_path / "res", "p4-live") == 0
    with tarfile.open(m.HERE / "p4-live-full.tar.xz") as tar:
        names = {n.split("/")[2] for n in tar.getnames() if n.count("/") >= 2}
    assert names == {"ptcp-w1-s1", "stripe-w1-s1-twin"}
    out = capsys.readouterr().out
    assert "left out ptcp-w2-s1: timing verdict failed (cpu-bursts)" in out
    assert "left out stripe-w1-s1: incomplete" in out
    text = m.README.read_text()
    assert "old" not in text and text.endswith("\n\ntail\n")
    assert f"| `p4-live-full.tar.xz` | `p4-live` | {b} | 1 | 1 |" in text


def test_pack_names_a_missing_folder(tmp_path, capsys):
    m = _module()
    assert m.pack(tmp_path, "p4-live") == 2
    assert "no such folder" in capsys.readouterr().out

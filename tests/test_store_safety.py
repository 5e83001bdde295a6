"""Output folders: qoslab writes only into folders it may write, never deletes what it did
not write, and keeps its staging inside ``.qoslab/``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tomllib

import qoslab
from conftest import cli, small_text
from qoslab.exceptions import OutputError
from qoslab.store import OWN, verify_run
from qoslab.sweep import run_sweep


@pytest.fixture(scope="module")
def result() -> qoslab.Result:
    return qoslab.run(tomllib.loads(small_text("2s")))


def _listing(d: Path) -> set[str]:
    return {p.relative_to(d).as_posix() for p in d.rglob("*")}


def test_cli_run_refuses_a_foreign_folder_and_a_file(small, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("precious")
    p = cli("run", small, "-o", mine)
    assert p.returncode == 2, p.stderr
    assert "not empty" in p.stderr and "-o" in p.stderr and "Traceback" not in p.stderr
    assert _listing(mine) == {"notes.txt"} and (mine / "notes.txt").read_text() == "precious"

    f = tmp_path / "file.txt"
    f.write_text("keep me")
    p = cli("run", small, "-o", f)
    assert p.returncode == 2 and "is a file" in p.stderr
    assert f.read_text() == "keep me"


def test_save_rules_in_the_api(result, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "data.csv").write_text("1,2")
    with pytest.raises(OutputError, match="not empty"):
        result.save(mine)
    assert _listing(mine) == {"data.csv"}
    f = tmp_path / "f"
    f.write_text("x")
    with pytest.raises(OutputError, match="is a file"):
        result.save(f)
    assert f.read_text() == "x"
    # Missing and empty folders are fine; so is an earlier run (replaced).
    (tmp_path / "empty").mkdir()
    for d in (tmp_path / "new", tmp_path / "empty"):
        assert result.save(d) == d and verify_run(d) is None
    # A sweep folder is not a run folder.
    sw = tmp_path / "sw"
    sw.mkdir()
    (sw / OWN).mkdir()
    (sw / OWN / "owner.json").write_text(json.dumps({"kind": "sweep"}))
    (sw / "x").write_text("")
    with pytest.raises(OutputError, match="holds a qoslab sweep, not a run"):
        result.save(sw)


def test_replacing_a_run_removes_only_its_own_files(result, tmp_path):
    d = result.save(tmp_path / "run")
    (d / "my-notes.txt").write_text("mine")
    (d / ".data.tmp-1").write_text("mine too")
    outside = tmp_path / "outside.txt"
    outside.write_text("not qoslab's")
    # A manifest that names a file outside the run must not make qoslab delete it.
    m = json.loads((d / "manifest.json").read_text())
    m["files"]["../outside.txt"] = {"size": 1, "sha256": "0"}
    (d / "manifest.json").write_text(json.dumps(m))
    result.save(d)
    assert outside.read_text() == "not qoslab's"
    assert (d / "my-notes.txt").read_text() == "mine" and (d / ".data.tmp-1").is_file()
    assert verify_run(d) is None
    assert not any((d / OWN / "stage").iterdir())  # no staging left behind


@pytest.mark.parametrize(
    "name, why",
    [("../victim", "contains '/'"), ("x" * 300, "at most 100"), (".hidden", "starts with a dot")],
    ids=["parent", "too-long", "dot"],
)
def test_unsafe_names_are_refused_before_anything_is_written(tmp_path, name, why):
    work = tmp_path / "work"
    work.mkdir()
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "thesis.tex").write_text("years of work")
    f = work / "s.toml"
    f.write_text(small_text("2s").replace('name = "small"', f"name = {json.dumps(name)}"))
    for command in ("check", "run", "sweep", ("run", "-o", "out")):
        args = command if isinstance(command, tuple) else (command,)
        p = cli(args[0], f, *args[1:], cwd=work)
        assert p.returncode == 2, (command, p.stderr)
        assert "`name`" in p.stderr and why in p.stderr and "one folder name" in p.stderr
        assert "Traceback" not in p.stderr
    assert _listing(victim) == {"thesis.tex"}
    assert _listing(work) == {"s.toml"}
    with pytest.raises(qoslab.ScenarioError, match="one folder name") as e:
        qoslab.check(f)
    assert e.value.key == "name"


def test_sweep_keeps_user_files_that_look_like_temporaries(tmp_path):
    sc = tmp_path / "s.toml"
    sc.write_text(small_text("2s"))
    out = tmp_path / "out"
    run_sweep(sc, out, seeds=1, workers=1, progress=False)
    user = [out / ".results.tmp-123", out / "runs" / ".draft.old-abc", out / "failed" / "x.tmp-9"]
    for u in user:
        u.write_text("user data")
    (out / "runs" / ".backup.tmp-1").mkdir()
    run_sweep(sc, out, seeds=2, workers=1, progress=False)
    for u in user:
        assert u.read_text() == "user data"
    assert (out / "runs" / ".backup.tmp-1").is_dir()
    # Everything qoslab stages lives in .qoslab/ and is gone when the sweep ends.
    assert not any((out / OWN / "stage").iterdir())


def test_sweep_refuses_foreign_folder_and_file(tmp_path):
    sc = tmp_path / "s.toml"
    sc.write_text(small_text("2s"))
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "a.txt").write_text("a")
    with pytest.raises(OutputError, match="not empty"):
        run_sweep(sc, mine, seeds=1, workers=1, progress=False)
    assert _listing(mine) == {"a.txt"}
    p = cli("sweep", sc, "-o", mine / "a.txt", "--seeds", "1", "--no-progress")
    assert p.returncode == 2 and "is a file" in p.stderr and "Traceback" not in p.stderr
    assert (mine / "a.txt").read_text() == "a"


def test_a_failed_run_leaves_the_folder_as_it_was(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(small_text("2s").replace("seed = 1", "seed = 1\nmax_events = 10"))
    empty = tmp_path / "empty"
    empty.mkdir()
    for out in (tmp_path / "new", empty):
        p = cli("run", f, "-o", out)
        assert p.returncode == 1 and "event budget" in p.stderr
    assert not (tmp_path / "new").exists()
    assert empty.is_dir() and not any(empty.iterdir())

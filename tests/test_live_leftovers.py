"""What a SIGKILLed live run leaves (qoslab.live_leftovers): its registered staging
folders are removed once its process is gone, and nothing else is, without root (the
namespaces' side is tested in test_live_signals.py)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from qoslab import live_leftovers
from qoslab.store import OWN, STAGE_OWNER, new_stage, proc_start


@pytest.fixture
def registry(tmp_path, monkeypatch):
    reg = tmp_path / "registry"
    monkeypatch.setattr(live_leftovers, "REGISTRY", reg)
    return reg


def _dead_process() -> dict:
    """The identity (pid, host, start time) of a process that has ended."""
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    info = {"pid": p.pid, "host": socket.gethostname(), "proc_start": proc_start(p.pid)}
    p.kill()
    p.wait()
    return info


def _stage_of(info: dict, root) -> object:
    stage = root / OWN / "stage" / f"run-{info['pid']}-abcd1234"
    stage.mkdir(parents=True)
    (stage / STAGE_OWNER).write_text(json.dumps(info))
    (stage / "live").mkdir()
    return stage


def test_sweep_removes_the_staging_of_dead_runs_only(registry, tmp_path, monkeypatch):
    monkeypatch.setattr(live_leftovers, "_sweep_namespaces", lambda: ["qlab1-0"])
    dead = _dead_process()
    ours = _stage_of(dead, tmp_path / "out1")
    # The same dead pid, but not a folder qoslab marked as its staging: left alone.
    foreign = tmp_path / "someone-elses"
    foreign.mkdir()
    (tmp_path / "registry").mkdir()
    (registry / f"{dead['pid']}-x.json").write_text(
        json.dumps({**dead, "folders": [str(ours), str(foreign), str(tmp_path / "gone")]})
    )
    # A running process's registered staging is left alone (this one's).
    with live_leftovers.registered([new_stage(tmp_path / "out2" / OWN, "run")]) as rec:
        mine = json.loads(rec.read_text())["folders"][0]
        swept = live_leftovers.sweep()
        assert swept == {"namespaces": ["qlab1-0"], "staging": [str(ours)]}
        assert not ours.exists() and foreign.is_dir() and os.path.isdir(mine)
        assert [p.name for p in registry.iterdir()] == [rec.name]  # the dead record is gone
    assert list(registry.iterdir()) == []  # and ours when the run ends
    text = live_leftovers.sweep_text(swept)
    assert text[0].endswith("qlab1-0") and text[1].endswith(str(ours))
    assert live_leftovers.sweep_text({"namespaces": [], "staging": []}) == []


def test_a_reused_pid_is_not_the_dead_run(registry, tmp_path, monkeypatch):
    # The record names this very pid but another start time: the run it names is gone,
    # yet the staging folder's mark is this process's, not that run's: left alone.
    monkeypatch.setattr(live_leftovers, "_sweep_namespaces", lambda: [])
    me = {"pid": os.getpid(), "host": socket.gethostname(), "proc_start": proc_start(os.getpid())}
    stage = _stage_of(me, tmp_path / "out")
    registry.mkdir()
    old = {**me, "proc_start": (me["proc_start"] or 0) - 1}
    (registry / "old.json").write_text(json.dumps({**old, "folders": [str(stage)]}))
    assert live_leftovers.sweep() == {"namespaces": [], "staging": []}
    assert stage.is_dir()

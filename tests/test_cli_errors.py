"""User and environment errors: a plain message and exit 2, never "internal error"."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from conftest import cli, small_text

ROOT = Path(__file__).resolve().parents[1]


def _plain(p: subprocess.CompletedProcess, *needles: str) -> None:
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert "internal error" not in p.stderr and "Traceback" not in p.stderr, p.stderr
    for n in needles:
        assert n in p.stderr, (n, p.stderr)


@contextlib.contextmanager
def _read_only(d: Path):
    """``d`` made unwritable, also for root (with chattr +i, which root obeys)."""
    if os.geteuid() == 0:
        if shutil.which("chattr") is None:
            pytest.skip("running as root without chattr")
        subprocess.run(["chattr", "+i", str(d)], check=True)
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", str(d)], check=True)
    else:
        d.chmod(0o555)
        try:
            yield
        finally:
            d.chmod(0o755)


def test_read_only_output_folder(small, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    with _read_only(ro):
        p = cli("run", small, "-o", ro / "out")
        _plain(p, "cannot write", str(ro / "out"))
        p = cli("sweep", small, "-o", ro / "sw", "--seeds", "1", "--no-progress")
        _plain(p, "cannot write")


def test_bad_worker_count_and_missing_ray_cluster(small, tmp_path):
    p = cli("sweep", small, "-j", "-1", "-o", tmp_path / "a", "--no-progress")
    _plain(p, "-1")
    pytest.importorskip("ray")
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    args = ["sweep", str(small), "--ray", "auto", "-o", str(tmp_path / "b"), "--seeds", "1"]
    p = subprocess.run(
        [sys.executable, "-m", "qoslab", *args, "--no-progress"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    _plain(p, "cannot reach a Ray cluster at 'auto'", "ray start --head")


def test_closed_pipe_ends_quietly(small, tmp_path):
    p = subprocess.Popen(
        [sys.executable, "-m", "qoslab", "run", str(small), "-o", str(tmp_path / "o")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    p.stdout.close()  # like `| head` that has read enough
    err = p.stderr.read().decode()
    p.stderr.close()
    rc = p.wait(timeout=120)
    assert rc == 141 and err == "", (rc, err)
    assert (tmp_path / "o" / "manifest.json").is_file()  # the results were written first


def test_ray_extra_installs_the_client_the_readme_uses():
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "ray://" in (ROOT / "README.md").read_text()
    assert any(d.startswith("ray[client]") for d in extra["optional-dependencies"]["ray"])


def test_a_node_pos_of_three_values_names_the_node_and_the_key(tmp_path):
    text = small_text().replace('name = "h2"\n', 'name = "h2"\npos = [0, 0, 1]\n', 1)
    assert "pos = [0, 0, 1]" in text
    f = tmp_path / "pos.toml"
    f.write_text(text)
    p = cli("check", f)
    # serde's own words were "trailing characters" at node[1].pos, naming no node
    _plain(p, "`node[1].pos`", 'node "h2"', "two numbers [x, y]", "found 3 values")
    assert "trailing characters" not in p.stderr


def test_a_negative_drop_events_limit_is_refused_naming_the_key(tmp_path):
    text = small_text().replace(
        'interval = "0.5s"\n', 'interval = "0.5s"\ndrop_events_limit = -1\n'
    )
    assert "drop_events_limit = -1" in text
    f = tmp_path / "limit.toml"
    f.write_text(text)
    p = cli("check", f)
    _plain(p, "`record.drop_events_limit`", "at least 1", "found -1")
    assert "18446744073709551615" not in p.stderr  # serde's "from 0 to 2^64 - 1"

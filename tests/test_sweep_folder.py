"""A sweep folder that a new user reuses or interrupts: runs of an earlier, different
plan are counted (and kept) or pruned; Ctrl-C says how many runs are kept and how to
resume; the sweep prints its summary per group as `qoslab run` prints flows."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from conftest import cli, small_text


def _runs(out):
    return sorted(p.name for p in (out / "runs").iterdir())


def test_a_second_different_sweep_counts_the_old_runs_and_prune_removes_them(small, tmp_path):
    out = tmp_path / "sw"
    cli("sweep", small, "--grid", "link.2.rate=1Mbps,2Mbps", "-o", out, "--no-progress", check=True)
    first = _runs(out)
    assert len(first) == 2
    p = cli("sweep", small, "--grid", "link.2.rate=3Mbps", "-o", out, "--no-progress", check=True)
    assert f"{out} holds 2 runs not in this plan (kept" in p.stderr, p.stderr
    assert "--prune" in p.stderr
    assert len(_runs(out)) == 3  # nothing removed without --prune
    # Rerunning the same plan says it again (the old runs are still there).
    p = cli("sweep", small, "--grid", "link.2.rate=3Mbps", "-o", out, "--no-progress", check=True)
    assert "holds 2 runs not in this plan" in p.stderr, p.stderr
    # A file the user put into an old run's folder stays, with its folder.
    (out / "runs" / first[0] / "notes.txt").write_text("mine")
    p = cli(
        "sweep",
        small,
        "--grid",
        "link.2.rate=3Mbps",
        "-o",
        out,
        "--no-progress",
        "--prune",
        check=True,
    )
    assert "pruned 1 run(s)" in p.stderr and f"runs/{first[0]}" in p.stderr, p.stderr
    left = _runs(out)
    assert len(left) == 2 and first[0] in left and first[1] not in left
    assert sorted(f.name for f in (out / "runs" / first[0]).iterdir()) == ["notes.txt"]
    p = cli("sweep", small, "--grid", "link.2.rate=3Mbps", "-o", out, "--no-progress", check=True)
    assert "not in this plan" not in p.stderr  # the folder with notes.txt is no run
    assert "1 runs: 0 done, 1 already finished" in p.stdout, p.stdout


def test_sweep_prints_goodput_by_group(tmp_path):
    p = tmp_path / "g.toml"
    text = small_text(duration="2s").replace('name = "b"\n', 'name = "b"\ncount = 3\n')
    p.write_text(text)
    r = cli("sweep", p, "--seeds", "2", "-o", tmp_path / "sw", "--no-progress", check=True)
    assert "flows: 2 flow entries (4 flows)" in r.stdout, r.stdout
    assert "goodput by group (summary_groups):" in r.stdout, r.stdout
    row = next(line for line in r.stdout.splitlines() if "│ b " in line)
    assert "2" in row, row  # two seeds


def test_sweep_without_groups_prints_goodput_by_flow(small, tmp_path):
    r = cli("sweep", small, "-o", tmp_path / "sw", "--no-progress", check=True)
    assert "flows: 2 flows" in r.stdout and "goodput by flow (summary):" in r.stdout, r.stdout


def test_ctrl_c_says_how_many_runs_are_kept_and_how_to_resume(tmp_path):
    sc = tmp_path / "long.toml"
    sc.write_text(small_text(duration="150s"))
    out = tmp_path / "sw"
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "qoslab",
            "sweep",
            str(sc),
            "--seeds",
            "40",
            "-j",
            "1",
            "-o",
            str(out),
            "--no-progress",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        runs = out / "runs"
        if runs.is_dir() and len(list(runs.glob("*/manifest.json"))) >= 2:
            break
        time.sleep(0.05)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    kept = len(list((out / "runs").glob("*/manifest.json")))
    assert 2 <= kept < 40, kept
    assert f"interrupted: {kept}/40 runs kept in {out}; rerun to resume" in err, err
    # Rerunning resumes: the kept runs are skipped.
    r = cli("sweep", sc, "--seeds", "40", "-o", out, "--no-progress", "--set", "duration=2s")
    assert r.returncode == 0, r.stderr

"""The ns-3 speed bench's records (validation/ns3_records.py) and what ns3_bench makes of
them: a run never replaces another's record, the pages show every run of their kind
side by side, the README sentence comes only from recorded whole runs, and a damaged
record or page stops the script with its name instead of being shown in part."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import load_script

ROOT = Path(__file__).resolve().parents[1]


def _module(name):
    return load_script(ROOT / "validation" / f"{name}.py")


R = _module("ns3_records")


def rec(when="2026-01-01T00:00:00Z", cpu="Old CPU", load=0, scale=1.0, tag="pgo", **cases):
    """A small valid record; `cases` maps a name (with _ for -) to its median ratio."""
    cs = {
        n.replace("_", "-"): {"wall_ratio": {"median": m, "min": m - 1, "max": m + 1},
                              "events_per_pkt": 3.0}
        for n, m in cases.items()
    }  # fmt: skip
    return {"when": when, "commit": "abc1234", "build_tag": tag, "machine": {"cpu": cpu},
            "load": load, "scale": scale, "repeat": 5, "cases": cs}  # fmt: skip


def test_a_record_is_never_replaced_and_same_second_runs_keep_their_order(tmp_path):
    first, second = rec(a=100), rec(a=200)
    p1, p2 = R.save_record(tmp_path, first), R.save_record(tmp_path, second)
    assert p1 != p2 and p2.name == "2026-01-01T000000-load0-1.json"
    assert json.loads(p1.read_text()) == first
    # "-1.json" sorts before ".json" by name: the order comes from the number.
    assert [r["cases"]["a"]["wall_ratio"]["median"] for r in R.load_records(tmp_path)] == [
        100,
        200,
    ]
    assert R.load_records(tmp_path / "none") == []


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (lambda r: r.update(cases=[]), "'cases'"),
        (lambda r: r.update(cases={}), "'cases'"),
        (lambda r: r["cases"]["a"]["wall_ratio"].pop("min"), "'wall_ratio'"),
        (lambda r: r["cases"]["a"]["wall_ratio"].update(median=None), "'wall_ratio'"),
        (lambda r: r["cases"]["a"]["wall_ratio"].update(median=500), "min ≤ median ≤ max"),
        (lambda r: r["cases"]["a"].pop("events_per_pkt"), "'events_per_pkt'"),
        (lambda r: r.update(when=5), "'when'"),
        (lambda r: r.update(load="0"), "'load'"),
        (lambda r: r.update(scale=None), "'scale'"),
        (lambda r: r.pop("repeat"), "'repeat'"),
        (lambda r: r.pop("build_tag"), "'build_tag'"),
        (lambda r: r.update(machine={}), "'machine.cpu'"),
    ],
)
def test_a_damaged_record_stops_the_history_with_its_name(tmp_path, change, why):
    R.save_record(tmp_path, rec(a=100))
    bad = rec(when="2026-01-02T00:00:00Z", a=100)
    change(bad)
    (tmp_path / "2026-01-02T000000-load0.json").write_text(json.dumps(bad))
    with pytest.raises(SystemExit, match=r"2026-01-02T000000-load0\.json: not an ns3_bench"):
        R.load_records(tmp_path)
    with pytest.raises(SystemExit, match=why):
        R.load_records(tmp_path)
    with pytest.raises(ValueError):
        R.save_record(tmp_path, bad)


def test_the_history_keeps_to_its_kind_and_shows_every_case():
    runs = [
        rec(a=90, b=80),
        rec(when="2026-01-02T00:00:00Z", cpu="New CPU", a=150, gone=70),
        rec(when="2026-01-03T00:00:00Z", load=1, a=1),
        rec(when="2026-01-04T00:00:00Z", scale=0.5, a=2),
        rec(when="2026-01-05T00:00:00Z", tag="plain", a=3),
    ]
    lines = R.history_lines(runs, 0, 1.0, "pgo", ["b", "a"], R.RECORDS)
    head = next(ln for ln in lines if ln.startswith("| case |"))
    assert head.count(" · ") == 2 * 3 and head.index("Old CPU") < head.index("New CPU")
    body = [ln for ln in lines if ln.startswith("| ") and not ln.startswith("| case")]
    # The given order first, then a case only a record names (no longer a bench case).
    assert body == ["| b | 80× (79–81) | – |", "| a | 90× (89–91) | 150× (149–151) |",
                    "| gone | – | 70× (69–71) |"]  # fmt: skip
    assert "(0 busy processes), scale (1) and build (pgo)" in lines[2]
    assert R.history_lines(runs, 1, 1.0, "pgo", ["a"], R.RECORDS)[-1] == "| a | 1× (0–2) |"
    assert R.history_lines(runs, 2, 1.0, "pgo", ["a"], R.RECORDS) == []


def test_the_summary_speaks_of_whole_runs_of_its_build_only():
    flows = {"a": 2, "b": 12, "c": 1000}
    old = rec(a=100, b=110)
    new = rec(when="2026-01-02T00:00:00Z", cpu="New CPU", a=150, b=160)
    partial = rec(when="2026-01-03T00:00:00Z", a=400)
    wider = rec(when="2026-01-04T00:00:00Z", a=1, b=2, c=10000)
    loaded = rec(when="2026-01-05T00:00:00Z", load=1, a=5, b=6)
    plain = rec(when="2026-01-06T00:00:00Z", tag="plain", a=60, b=60)
    history = [old, new, partial, wider, loaded, plain]
    assert R.whole_runs(history, ["a", "b"], "pgo") == [old, new]
    text = R.summary(new, history, flows)
    assert text.startswith("150–160× ns-3.44 by the median of paired runs on 2 dumbbells of ")
    assert "2–12 flows, measured on New CPU (2026-01-02); over the 2 whole runs" in text
    assert "on any machine, 100–160× (qoslab spends 3.00–3.00 events" in text
    assert "over the" not in R.summary(new, [partial, new, plain], flows)


def test_blocks_are_whole_marker_lines_and_a_broken_one_is_an_error():
    put = R.put_block
    page = "intro `<!-- h -->` in prose\n\n<!-- p -->\nprofile\n<!-- p end -->\n"
    once = put(page, "<!-- h -->", "<!-- h end -->", "T1", "<!-- p -->")
    assert once.index("T1") < once.index("profile") and "`<!-- h -->` in prose" in once
    twice = put(once, "<!-- h -->", "<!-- h end -->", "T2", "<!-- p -->")
    assert "T1" not in twice and twice.count("T2") == 1 and twice.endswith("<!-- p end -->\n")
    with pytest.raises(ValueError, match=re.escape("page.md: <!-- h --> without <!-- h end -->")):
        put("a\n<!-- h -->\nb\n", "<!-- h -->", "<!-- h end -->", "T", where="page.md")


def test_commit_marks_changes_of_the_engine_only(tmp_path, monkeypatch):
    def git(*a):
        return subprocess.run(["git", "-C", str(tmp_path), *a], capture_output=True,
                              text=True, check=True).stdout.strip()  # fmt: skip

    git("init", "-q")
    (tmp_path / "crates").mkdir()
    (tmp_path / "crates" / "lib.rs").write_text("fn a() {}\n")
    (tmp_path / "page.md").write_text("table\n")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    head = git("rev-parse", "--short=7", "HEAD")
    monkeypatch.setattr(R, "ROOT", tmp_path)
    assert R.source_commit() == head
    # A page the bench rewrote is no change of the binary; an engine source is.
    (tmp_path / "page.md").write_text("new table\n")
    assert R.source_commit() == head
    (tmp_path / "crates" / "lib.rs").write_text("fn b() {}\n")
    assert R.source_commit() == head + "+changes"


# ---- ns3_bench's use of them --------------------------------------------------------


@pytest.fixture
def bench(tmp_path, monkeypatch):
    """ns3_bench with fake simulators, a fixed clock, and every page and the records
    folder in tmp_path (its own docs/validation/ns3-speed.md is the default page)."""
    b = _module("ns3_bench")
    kinds = {"arrive": 300, "tx_done": 0, "tcp_timer": 5}
    calls = []

    def fake_qoslab(_text, every_hop=False):
        calls.append("q")
        return 0.1, 0.1, 300, 100, kinds

    monkeypatch.setattr(b, "run_qoslab_timed", fake_qoslab)
    monkeypatch.setattr(b, "run_ns3_timed", lambda *_a, **_k: (20.0, 20.0, 100))
    monkeypatch.setattr(b, "write_profile", lambda *_: None)
    monkeypatch.setattr(b, "QOSLAB", tmp_path / "pgo-bin" / "qoslab-run")
    monkeypatch.setattr(b, "NS3", Path(sys.executable))
    (tmp_path / "pgo-bin").mkdir()
    (tmp_path / "pgo-bin" / "qoslab-run").write_text("")
    monkeypatch.setattr(b, "ROOT", tmp_path)
    monkeypatch.setattr(b.records, "RECORDS", tmp_path / "records")
    readme = tmp_path / "README.md"
    readme.write_text(f"speed: {b.SUMMARY_BEGIN}old{b.SUMMARY_END}\n")
    monkeypatch.setattr(b, "SUMMARY_PAGES", [readme])
    clock = iter(range(1_780_000_000, 1_780_100_000, 60))
    monkeypatch.setattr(b.time, "time", lambda: next(clock))

    def run(*argv):
        monkeypatch.setattr(sys, "argv", ["ns3_bench.py", "--repeat", "1", *argv])
        return b.main()

    b.run, b.calls, b.readme = run, calls, readme
    return b


def test_a_whole_recorded_run_writes_the_sentence_and_a_trial_does_not(bench, tmp_path):
    page = tmp_path / "docs" / "validation" / "ns3-speed.md"
    assert bench.run("--records", str(tmp_path / "records")) == 0
    assert "200–200× ns-3.44" in bench.readme.read_text()
    assert f"on {len(bench.FAST)} dumbbells" in bench.readme.read_text()
    assert "## Every recorded run" in page.read_text()
    # Trials leave the sentence alone: no record, another page, or part of the cases
    # (these run at 400×).
    bench.run_ns3_timed = lambda *_a, **_k: (40.0, 40.0, 100)
    bench.readme.write_text(f"speed: {bench.SUMMARY_BEGIN}kept{bench.SUMMARY_END}\n")
    assert bench.run("--no-record") == 0
    assert bench.run("--out", str(tmp_path / "trial.md")) == 0
    assert bench.run("--only", "2-droptail-10M") == 0
    assert "kept" in bench.readme.read_text()
    # The trial without a record still shows the recorded runs, not an empty history.
    assert "## Every recorded run" in page.read_text()
    assert len(list((tmp_path / "records").glob("*.json"))) == 3
    # --summary-only takes the newest whole run of the build: the one written to
    # trial.md, recorded; the range spans both whole runs.
    assert bench.run("--summary-only") == 0
    text = bench.readme.read_text()
    assert "400–400× ns-3.44" in text and "over the 2 whole runs" in text
    assert "on any machine, 200–400×" in text


def test_a_damaged_record_stops_the_run_before_it_measures(bench, tmp_path, capsys):
    (tmp_path / "records").mkdir()
    (tmp_path / "records" / "x.json").write_text("{")
    assert bench.run("--only", "2-droptail-10M") == 2
    assert bench.calls == []
    assert "x.json: not an ns3_bench record" in capsys.readouterr().err


def test_history_only_and_summary_only_refuse_what_they_cannot_do(bench, tmp_path, capsys):
    assert bench.run("--history-only") == 2
    assert "no folder" in capsys.readouterr().err
    assert bench.run("--only", "2-droptail-10M") == 0
    page = tmp_path / "docs" / "validation" / "ns3-speed.md"
    assert bench.run("--history-only", "--load", "1", "--out", str(page)) == 2
    assert "no pgo run of load 1" in capsys.readouterr().err
    assert bench.run("--summary-only") == 2
    assert "no whole pgo run" in capsys.readouterr().err
    page.write_text(f"table\n{bench.HISTORY_BEGIN}\nold\n")
    assert bench.run("--history-only") == 2
    assert "without" in capsys.readouterr().err and page.read_text().endswith("old\n")
    page.unlink()
    assert bench.run("--history-only") == 2
    assert "no page" in capsys.readouterr().err


def test_perf_falls_back_to_the_kernel_clock_and_says_why_it_cannot(monkeypatch, tmp_path):
    b = _module("ns3_bench")
    tried = []

    def fake_run(cmd, **_kw):
        event = cmd[cmd.index("-e") + 1]
        tried.append(event)
        ok = event in works
        return subprocess.CompletedProcess(cmd, 0 if ok else 255, "", "" if ok else f"no {event}")

    monkeypatch.setattr(b.subprocess, "run", fake_run)
    works = {"cpu-clock"}
    assert b.perf_record("bin", "sc", "data") == "cpu-clock" and tried == ["cycles", "cpu-clock"]
    works = set()
    with pytest.raises(RuntimeError, match="cpu-clock: no cpu-clock"):
        b.perf_record("bin", "sc", "data")
    # On the page, a profile that cannot be taken replaces the earlier run's.
    monkeypatch.setattr(b, "profile", lambda _n: (_ for _ in ()).throw(RuntimeError("no PMU")))
    page = tmp_path / "speed.md"
    page.write_text(f"table\n\n{b.PROFILE_BEGIN}\nan earlier profile\n{b.PROFILE_END}\n")
    b.write_profile(page, "12-red-20M")
    text = page.read_text()
    assert "an earlier profile" not in text and "perf could not record here (no PMU)" in text

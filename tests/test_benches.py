"""The speed scripts: the ns-3 bench's cases are valid qoslab scenarios, the sweep
overhead bench prints its split, and the P1 timing line lands between its markers."""

from __future__ import annotations

import json
import pathlib
import random
import re
import subprocess
import sys
from pathlib import Path

import tomllib

import qoslab
from conftest import load_script

ROOT = Path(__file__).resolve().parents[1]


_module = load_script


def test_ns3_bench_cases_are_valid_scenarios():
    b = _module(ROOT / "validation" / "ns3_bench.py")
    assert {"4-droptail-10M-50ms", "12-red-20M", "256-droptail-100M"} <= set(b.CASES)
    assert b.tenfold("20Mbps") == "200Mbps" and b.tenfold("100Mbps") == "1Gbps"
    for name, (n, rtts, queue, bn, limit, _secs) in b.CASES.items():
        if n > 256:
            continue  # the 1000-flow case only takes longer to check
        starts = [round(random.Random(n).random(), 6)] * n
        text = b.qoslab_scenario(n, queue, starts, 1, 0.0, 1, bn, b.tenfold(bn), limit, rtts=rtts)
        sc = qoslab.check(tomllib.loads(text))
        assert sc.name, name


def test_ns3_bench_takes_the_median_of_alternating_pairs(tmp_path, monkeypatch):
    b = _module(ROOT / "validation" / "ns3_bench.py")
    calls = []
    q_walls, n_walls = iter([0.1, 0.2, 0.1, 0.4, 0.1]), iter([10.0, 10.0, 30.0, 10.0, 20.0])
    kinds = {"arrive": 450, "tx_done": 150, "tcp_timer": 5}

    def fake_qoslab(_text, every_hop=False):
        calls.append("e" if every_hop else "q")
        if every_hop:
            return 0.3, 0.3, 900, 100, kinds
        w = next(q_walls)
        return w, w, 600, 100, kinds

    def fake_ns3(*_a, **_kw):
        calls.append("n")
        w = next(n_walls)
        return w, w, 100

    monkeypatch.setattr(b, "run_qoslab_timed", fake_qoslab)
    monkeypatch.setattr(b, "run_ns3_timed", fake_ns3)
    monkeypatch.setattr(b, "write_profile", lambda *_: None)
    monkeypatch.setattr(b, "QOSLAB", pathlib.Path(sys.executable))
    monkeypatch.setattr(b, "NS3", pathlib.Path(sys.executable))
    out = tmp_path / "speed.md"
    argv = ["ns3_bench.py", "--only", "2-droptail-10M", "--repeat", "5", "--out", str(out),
            "--records", str(tmp_path / "records")]  # fmt: skip
    monkeypatch.setattr(sys, "argv", argv)
    assert b.main() == 0
    assert calls == list("qennqeqennqeqen")
    # Paired ratios 100, 50, 300, 25, 200: median 100, not the best pair's 300.
    row = next(ln for ln in out.read_text().splitlines() if ln.startswith("| 2-droptail"))
    assert "| 100× (25–300) |" in row
    assert "| 6.00 | 4.50 / 1.50 / 0.05 |" in row
    # Every hop: 900 events per 100 packets; 0.3 s over 0.1, 0.2, 0.1, 0.4, 0.1.
    assert row.endswith("| 9.00 | 3.00 (0.75–3.00) |"), row
    assert "--repeat" not in out.read_text()


def test_ns3_bench_names_an_unknown_case():
    r = subprocess.run(
        [sys.executable, str(ROOT / "validation" / "ns3_bench.py"), "--only", "nope"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2
    assert "unknown case 'nope'" in r.stderr and "Traceback" not in r.stderr


def test_sweep_overhead_prints_the_split():
    r = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benches" / "sweep_overhead.py"),
            "--runs",
            "2",
            "--engine-s",
            "0.01",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    line = next(x for x in r.stdout.splitlines() if x.startswith("per run:"))
    for part in ("tables from Rust", "Parquet", "summary + catalog", "pool and Python"):
        assert part in line
    # The workers' own split, the reading back and a fresh worker's start-up, as numbers.
    out = r.stdout
    assert re.search(r"in the workers, per run: -?\d+\.\d ms writing .* -?\d+\.\d ms between", out)
    assert re.search(r"reading flows, trc and drops back \(gather\): \d+\.\d\d s", out)
    assert re.search(r"worker start-up: \d+ ms of CPU", out)


def test_p1_timing_markers_exist_and_are_replaced():
    t = _module(ROOT / "benches" / "p1_full_timing.py")
    doc = (ROOT / "docs" / "papers" / "p1.md").read_text()
    assert t.BLOCK.search(doc), "docs/papers/p1.md lost its p1-full-timing markers"
    paper, ours = t.PREFIX[True], t.PREFIX[False]

    def put(text, line, prefix):
        return t.BLOCK.sub(lambda m: m.group(1) + t.merge(m, line, prefix) + m.group(2), text)

    text = "a\n<!-- p1-full-timing -->\nold line\n<!-- p1-full-timing end -->\nb\n"
    text = put(text, f"{ours}: 13 min", ours)
    assert text == f"a\n<!-- p1-full-timing -->\n{ours}: 13 min\n<!-- p1-full-timing end -->\nb\n"
    # Each mode replaces only its own line; the paper's alone comes first.
    text = put(text, f"{paper}: 9 min", paper)
    text = put(text, f"{ours}: 12 min", ours)
    block = text.split("\n")[2:4]
    assert block == [f"{paper}: 9 min", f"{ours}: 12 min"]


def test_same_tables_finds_a_changed_or_missing_table(tmp_path, monkeypatch, capsys):
    import polars as pl

    t = _module(ROOT / "benches" / "same_tables.py")
    for name, y in (("a", 1.0), ("b", 1.0), ("c", 1.5)):
        (tmp_path / name / "p1-t1").mkdir(parents=True)
        pl.DataFrame({"x": [1, 2], "y": [0.5, y]}).write_parquet(
            tmp_path / name / "p1-t1" / "table-t.parquet"
        )
    (tmp_path / "empty").mkdir()

    def run(a, b):
        monkeypatch.setattr("sys.argv", ["same_tables.py", str(tmp_path / a), str(tmp_path / b)])
        return t.main()

    assert run("a", "b") == 0
    assert run("a", "c") == 1 and "DIFFERS" in capsys.readouterr().out
    assert run("a", "empty") == 1 and "missing" in capsys.readouterr().out
    assert run("empty", "a") == 2


def test_full_reproduction_estimates_cores_by_hand_and_records_a_failed_ray():
    fr = _module(ROOT / "benches" / "full_reproduction.py")
    # 100 s of engine CPU on 2 workers, longest run 10 s, 60 s measured: 50 s of it the
    # workers' bound, 10 s serial; on 8 cores 10 + max(100/8, 10) = 22.5 s, on 1000
    # cores 10 + 10 (the longest run).
    row = {"name": "x", "wall_s": 60.0, "cpu_s": 100.0, "longest_s": 10.0, "runs": 20}
    assert fr.on_cores(row, 2, 8) == 22.5
    assert fr.on_cores(row, 2, 1000) == 20.0
    # An experiment that runs everything in its own process stays serial.
    solo = {"name": "solo", "wall_s": 120.0, "cpu_s": 0.0, "longest_s": 0.0, "runs": 0}
    assert fr.on_cores(solo, 2, 128) == 120.0
    data = {"command": "qoslab reproduce --all -j 2", "workers": 2, "wall_s": 185.0,
            "date": "2026-01-01", "machine": "2 cores", "build": "pgo",
            "experiments": [row, solo],
            "ray_check": {"experiment": "x", "workers": 2, "error": "exited 3"}}  # fmt: skip
    text = fr.page(data)
    assert "here: solo 2.0 min" in text and "x 1.0" not in text.split("here:")[1]
    assert "What dominates: solo (65%), x (32%): 97% of the whole." in text
    assert "could not be measured here: exited 3" in text
    # Runs handed to the pool unsaved (Context.run_many) are the cores' work too: the
    # same 60 s with 100 s of it pooled is no longer serial.
    pooled = {**solo, "wall_s": 60.0, "pooled_runs": 20, "pooled_cpu_s": 100.0,
              "pooled_longest_s": 10.0}  # fmt: skip
    assert fr.on_cores(pooled, 2, 8) == fr.on_cores(row, 2, 8) == 22.5
    assert "(`Context.run_many`: 20 runs, 1.7 min" in fr.page({**data, "experiments": [pooled]})


def test_full_reproduction_reads_the_pooled_runs_apart(tmp_path):
    fr = _module(ROOT / "benches" / "full_reproduction.py")
    run = tmp_path / "e" / "runs" / "a"
    run.mkdir(parents=True)
    (run / "summary.json").write_text('{"call_s": 2.0}')
    index = {"experiments": [
        {"name": "e", "status": "done", "wall_s": 9.0,
         "pooled": {"runs": 3, "call_s": 6.0, "longest_s": 2.5}},
        {"name": "f", "status": "done", "wall_s": 1.0},
    ]}  # fmt: skip
    (tmp_path / "reproduce.json").write_text(json.dumps(index))
    (tmp_path / "f").mkdir()
    e, f = fr.per_experiment(tmp_path)
    assert (e["runs"], e["cpu_s"], e["longest_s"]) == (1, 2.0, 2.0)
    assert (e["pooled_runs"], e["pooled_cpu_s"], e["pooled_longest_s"]) == (3, 6.0, 2.5)
    assert (f["runs"], f["pooled_runs"], f["pooled_cpu_s"]) == (0, 0, 0.0)


def _fake_run(path: Path, body: str) -> Path:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def test_ab_identity_ignores_only_timing_and_finds_a_changed_table(tmp_path, monkeypatch, capsys):
    ab = _module(ROOT / "benches" / "ab.py")
    out = '{{"summary": {{"wall_s": {w}, "events": {e}, "seed": 1}}, "tables": {{"t": [{v}]}}}}'

    def fake(name, result, refusal="echo 'S: key: bad' >&2; exit 2"):
        # Refuses the scenario named "bad.json", runs every other.
        return _fake_run(
            tmp_path / name, f"case \"$1\" in *bad*) {refusal};; *) echo '{result}';; esac"
        )

    base = fake("base", out.format(w=1, e=5, v=1))
    same = fake("same", out.format(w=2, e=9, v=1))
    changed = fake("changed", out.format(w=1, e=5, v=2))
    other_refusal = fake("other", out.format(w=1, e=5, v=1), "echo 'S: other' >&2; exit 2")
    panics = fake("panics", out.format(w=1, e=5, v=1), "exit 101")
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    for f in (good, bad):
        f.write_text("{}")
    monkeypatch.setattr(ab, "shipped", lambda _s, _t: [("good.toml", good), ("bad.toml", bad)])
    monkeypatch.setattr(ab.ns3_bench, "CASES", {})
    assert ab.identity(base, same, 20) == 0
    assert "skip  bad.toml: both refuse it (S: key: bad)" in capsys.readouterr().out
    assert ab.identity(base, changed, 20) == 1
    assert "DIFF  good.toml: ['t']" in capsys.readouterr().out
    # A refusal for another reason, or a crash, is a difference, not a skip.
    assert ab.identity(base, other_refusal, 20) == 1
    assert ab.identity(panics, panics, 20) == 1
    assert "DIFF  bad.toml: exit 101 vs 101" in capsys.readouterr().out
    # Nothing compared (every case refused) fails.
    monkeypatch.setattr(ab, "shipped", lambda _s, _t: [("bad.toml", bad)])
    assert ab.identity(base, base, 20) == 1
    assert "nothing was compared" in capsys.readouterr().out


def test_ab_cuts_shipped_scenarios_and_leaves_their_sweeps_out(tmp_path):
    ab = _module(ROOT / "benches" / "ab.py")
    cases = ab.shipped(5.0, tmp_path)
    assert len(cases) == len(list((ROOT / "scenarios").rglob("*.toml")))
    long = [
        rel
        for rel, _ in cases
        if ab._seconds(tomllib.loads((ROOT / "scenarios" / rel).read_text())["duration"]) > 5
    ]
    assert long, "some shipped scenario runs longer than 5 s"
    for _rel, f in cases:
        sc = json.loads(f.read_text())
        assert "sweep" not in sc and ab._seconds(sc.get("duration", 0)) <= 5.0
        assert ab._seconds(sc.get("warmup", 0)) < ab._seconds(sc.get("duration", 0))


def test_full_reproduction_keeps_every_earlier_timing_once():
    fr = _module(ROOT / "benches" / "full_reproduction.py")
    row = {"name": "x", "wall_s": 60.0, "cpu_s": 100.0, "longest_s": 10.0, "runs": 20}
    old = {"command": "c", "workers": 2, "wall_s": 60.0, "date": "2026-01-01",
           "machine": "2 cores", "build": "pgo", "experiments": [row]}  # fmt: skip
    slow = {**row, "cpu_s": 190.0, "wall_s": 110.0}
    new = {**old, "date": "2026-02-01", "wall_s": 110.0, "commit": "abc1234",
           "probe_s": {"before": 0.9, "after": 1.1}, "experiments": [slow]}  # fmt: skip
    merged = fr.with_history(new, old)
    assert [h["date"] for h in merged["history"]] == ["2026-01-01"]
    # Merging the same earlier timing again (or the timing itself) adds nothing.
    assert fr.with_history(fr.with_history(merged, old), merged)["history"] == merged["history"]
    text = fr.page(merged)
    table = text.split("## Every timing of the whole")[1]
    # Newest first, engine CPU per run telling the slower day: 190/20 against 100/20.
    assert table.index("2026-02-01") < table.index("2026-01-01")
    assert "| 2026-02-01 | abc1234 | pgo | 1.8 | 20 | 3.2 | 9.500 | 0.90–1.10 |" in table
    assert "| 2026-01-01 | – | pgo | 1.0 | 20 | 1.7 | 5.000 | – |" in table
    assert fr.probe_text(0.5) == "0.50" and fr.probe_text({"after": 1.0}) == "1.00"


def test_full_reproduction_refuses_what_is_not_a_timing():
    fr = _module(ROOT / "benches" / "full_reproduction.py")
    row = {"name": "x", "wall_s": 60.0, "cpu_s": 100.0, "longest_s": 10.0, "runs": 20}
    ok = {"wall_s": 60.0, "date": "2026-01-01", "experiments": [row]}
    for bad in ([], {"date": "2026-01-02"}, {**ok, "history": [{"date": "2025-12-01"}]}):
        try:
            fr.with_history(ok, bad)
        except fr.NotTiming:
            continue
        raise AssertionError(f"took {bad!r} for a timing")
    assert fr.with_history(ok, {**ok, "date": "2025-12-01"})["history"][0]["runs"] == 20


def test_ns3_bench_baselines_run_cubic_through_fq_codel_in_both_simulators(monkeypatch):
    b = _module(ROOT / "validation" / "ns3_bench.py")
    assert set(b.BASELINES).isdisjoint(b.FAST) and set(b.BASELINES) <= set(b.ALL)
    for name, (n, *_rest) in b.BASELINES.items():
        sc = tomllib.loads(b.case_scenario(name, 1))
        assert [f["tcp"]["cc"] for f in sc["flow"]] == ["cubic"] * n, name
        bottleneck = next(lk for lk in sc["link"] if (lk["a"], lk["b"]) == ("r1", "r2"))
        assert bottleneck["queue"]["kind"] == "fq_codel"
        assert bottleneck["queue"]["limit"] == 10240 and bottleneck["queue"]["flows"] == 1024
        assert all(lk["queue"]["kind"] == "droptail" for lk in sc["link"] if lk is not bottleneck)
        assert qoslab.check(sc).name
    # The reference cases keep their scenario, without a cc.
    ref = b.case_scenario("12-red-20M", 1)
    assert "cc =" not in ref and ref == b.qoslab_scenario(
        12, "red", b.starts_of(12), 1, 0.0, 1, "20Mbps", "200Mbps", 100,
        rtts=[10, 30, 90, 150, 270],
    )  # fmt: skip
    seen = []

    def fake_run(args, **_kw):
        seen.append(args)
        return subprocess.CompletedProcess(args, 0, "flow 0 x\nbottleneck_packets 1234\n", "")

    monkeypatch.setattr(b.subprocess, "run", fake_run)
    assert b.run_case_ns3("64-cubic-fq_codel-10M", 1)[2] == 1234
    args = seen[0]
    assert [a for a in args if a.startswith("--queue=")] == ["--queue=fq_codel"]
    # ns-3's disc gets the limit, its device queue one packet more.
    assert "--cc=cubic" in args and "--limit=10240" in args and "--flows=64" in args


def test_ab_cpu_time_alternates_the_first_binary_and_takes_the_paired_median(monkeypatch, capsys):
    ab = _module(ROOT / "benches" / "ab.py")
    order, cpu = [], {"base": iter([1.0, 1.0, 2.0]), "new": iter([1.1, 0.5, 2.2])}

    def fake(binary, _scenario):
        order.append(binary.name)
        return next(cpu[binary.name])

    monkeypatch.setattr(ab, "cpu_seconds", fake)
    ab.cpu_table(Path("base"), Path("new"), ["4-droptail-10M-50ms"], 1.0, 3)
    assert order == ["base", "new", "new", "base", "base", "new"]
    # Paired ratios 1.1, 0.5, 1.1: median 1.1, medians of the times 1.0 and 1.1.
    row = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("4-drop"))
    assert row.split()[1:5] == ["1.000", "1.100", "1.100", "(0.500–1.100)"], row

"""Context.run_many: an experiment's independent runs on the worker pool give the
Results the same runs give one after another, saved where Context.run would save them."""

from __future__ import annotations

import pytest

import qoslab
from qoslab.reproduce import Context, RunJob

SCENARIO = {
    "duration": "3s",
    "node": [{"name": "a"}, {"name": "r", "kind": "router"}, {"name": "b"}],
    "link": [
        {"a": "a", "b": "r", "rate": "10Mbps", "delay": "2ms"},
        {
            "a": "r",
            "b": "b",
            "rate": "1Mbps",
            "delay": "10ms",
            "loss": 0.01,
            "queue": {"kind": "red", "limit": 30},
        },
    ],
    "flow": [{"name": f"t{i}", "from": "a", "to": "b", "tcp": {}} for i in range(3)],
}


def _jobs() -> list[RunJob]:
    rates = ["1Mbps", "2Mbps"]
    return [
        RunJob(SCENARIO, {"link.1.rate": r}, seed, f"r{r}-s{seed}" if seed == 2 else None)
        for r in rates
        for seed in (1, 2, 3)
    ]


def _same(a, b) -> None:
    assert a.summary["events"] == b.summary["events"]
    assert set(a.tables) == set(b.tables)
    for name in a.tables:
        assert a.tables[name].equals(b.tables[name]), name


def test_pooled_runs_equal_the_same_runs_one_after_another(tmp_path):
    ctx = Context("x", tmp_path / "x", quick=True, workers=2, ray=None)
    try:
        pooled = ctx.run_many(_jobs())
        again = ctx.run_many(_jobs()[:2])  # the pool is kept between calls
    finally:
        ctx.close()
    serial = [qoslab.run(j.scenario, j.overrides, j.seed) for j in _jobs()]
    # Seeds and rates differ, so a mixed-up order would show.
    assert len({r.summary["events"] for r in serial}) == len(serial)
    for p, s in zip(pooled, serial, strict=True):
        _same(p, s)
    for p, s in zip(again, serial[:2], strict=True):
        _same(p, s)
    # Labelled jobs are saved in the jobs' order, as Context.run saves them.
    names = [p.name for p in ctx.runs]
    assert names == ["r1Mbps-s2", "r2Mbps-s2", "r1Mbps-s2"]
    # The unsaved ones are timed for the full-mode timing (their engine seconds).
    assert len(ctx.pooled_s) == 4 + 1 and all(t > 0 for t in ctx.pooled_s)
    _same(qoslab.load(ctx.runs[1]), serial[4])


def test_one_worker_runs_here_and_gives_the_same(tmp_path):
    ctx = Context("x", tmp_path / "x", quick=True, workers=1, ray=None)
    out = ctx.run_many(_jobs()[:2])
    assert ctx._pool is None
    for p, j in zip(out, _jobs()[:2], strict=True):
        _same(p, qoslab.run(j.scenario, j.overrides, j.seed))


def test_a_failing_job_raises_its_own_error_and_the_next_call_works(tmp_path):
    ctx = Context("x", tmp_path / "x", quick=True, workers=2, ray=None)
    try:
        bad = [RunJob(SCENARIO, seed=1), RunJob(SCENARIO, {"link.1.rate": "-1Mbps"}, 2)]
        with pytest.raises(qoslab.ScenarioError, match="rate"):
            ctx.run_many(bad)
        assert ctx._pool is None  # its workers were stopped
        out = ctx.run_many(_jobs()[:2])
        assert len(out) == 2
    finally:
        ctx.close()


def test_capture_files_travel_back_from_the_workers(tmp_path):
    cap = {**SCENARIO, "capture": [{"iface": "r->b", "file": "rb.pcap"}]}
    ctx = Context("x", tmp_path / "x", quick=True, workers=2, ray=None)
    try:
        out = ctx.run_many([RunJob(cap, seed=1, label="cap"), RunJob(cap, seed=2)])
    finally:
        ctx.close()
    direct = qoslab.run(cap, seed=1)
    saved = ctx.runs[0] / "pcap" / "rb.pcap"
    assert saved.read_bytes() == (direct.pcap_dir / "rb.pcap").read_bytes()
    assert out[1].pcap_files and "rb.pcap" in out[1].pcap_files

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
        pooled = list(ctx.run_many(_jobs()))
        pool = ctx._pool
        again = list(ctx.run_many(_jobs()[:2]))
        assert ctx._pool is pool  # the pool is kept between calls
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
    out = list(ctx.run_many(_jobs()[:2]))
    assert ctx._pool is None
    for p, j in zip(out, _jobs()[:2], strict=True):
        _same(p, qoslab.run(j.scenario, j.overrides, j.seed))


def test_a_failing_job_raises_its_own_error_and_the_next_call_works(tmp_path):
    ctx = Context("x", tmp_path / "x", quick=True, workers=2, ray=None)
    try:
        bad = [RunJob(SCENARIO, seed=1), RunJob(SCENARIO, {"link.1.rate": "-1Mbps"}, 2)]
        with pytest.raises(qoslab.ScenarioError, match="rate"):
            list(ctx.run_many(bad))
        _stopped(ctx)
        out = list(ctx.run_many(_jobs()[:2]))
        assert len(out) == 2 and not ctx._pool.closed  # the next call starts another
    finally:
        ctx.close()


def _stopped(ctx) -> None:
    """The pool is closed and its worker processes are gone (within 5 s)."""
    import time

    pool = ctx._pool
    assert pool is not None and pool.closed
    procs = pool.procs
    deadline = time.monotonic() + 5
    while any(p.is_alive() for p in procs) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert procs and not any(p.is_alive() for p in procs)


def test_a_reader_that_stops_early_stops_the_workers(tmp_path):
    import gc

    ctx = Context("x", tmp_path / "x", quick=True, workers=2, ray=None)
    try:
        it = ctx.run_many(_jobs())
        next(it)
        del it
        gc.collect()
        _stopped(ctx)
    finally:
        ctx.close()


def test_workers_must_be_a_whole_number_as_for_sweeps(tmp_path):
    from qoslab.sweep import run_sweep

    for w in (0, -1, 1.5, True):
        ctx = Context("x", tmp_path / "x", quick=True, workers=w, ray=None)
        with pytest.raises(qoslab.QoslabError, match="workers must be a whole number"):
            ctx.run_many(_jobs()[:2])
        # A sweep refuses the same -j with the same words, before anything is written.
        with pytest.raises(qoslab.QoslabError, match=f"whole number >= 1, found {w!r}"):
            run_sweep(SCENARIO, tmp_path / "sweep", workers=w, progress=False)
        assert not (tmp_path / "sweep").exists()


def test_capture_files_travel_back_from_the_workers(tmp_path):
    cap = {**SCENARIO, "capture": [{"iface": "r->b", "file": "rb.pcap"}]}
    ctx = Context("x", tmp_path / "x", quick=True, workers=2, ray=None)
    try:
        out = list(ctx.run_many([RunJob(cap, seed=1, label="cap"), RunJob(cap, seed=2)]))
    finally:
        ctx.close()
    direct = qoslab.run(cap, seed=1)
    saved = ctx.runs[0] / "pcap" / "rb.pcap"
    assert saved.read_bytes() == (direct.pcap_dir / "rb.pcap").read_bytes()
    assert out[1].pcap_files and "rb.pcap" in out[1].pcap_files

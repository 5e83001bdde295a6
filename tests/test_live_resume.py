"""The live experiments' runs resume (``Context.live``): a finished, intact run of the
same scenario, seed and engine build is loaded, not run again; anything else is run again
and stderr says why. Live runs are replaced by simulated ones here (the logic under test
does not depend on how the run was made), so these tests run anywhere."""

from __future__ import annotations

from pathlib import Path

import pytest

import qoslab.api
from qoslab.reproduce import Context

SC = {
    "name": "resume", "duration": "2s", "warmup": "0.5s",
    "node": [{"name": "a"}, {"name": "b"}],
    "link": [{"a": "a", "b": "b", "rate": "10Mbps", "delay": "5ms"}],
    "flow": [{"name": "f", "from": "a", "to": "b", "tcp": {}}],
}  # fmt: skip


@pytest.fixture
def calls(monkeypatch):
    """Counts 'live' runs; each one is the scenario simulated."""
    made: list[int] = []

    def fake_live(data, overrides=None, seed=None, *, work_dir=None, twin=False):
        made.append(seed)
        res = qoslab.api.run(data, overrides, seed)
        return qoslab.api.add_twin(res, dict(res.scenario), seed) if twin else res

    monkeypatch.setattr(qoslab.api, "live", fake_live)
    return made


def test_a_finished_run_is_reused_with_its_twin_and_another_seed_is_not(tmp_path, calls):
    ctx = Context("x-live", Path(tmp_path), True, None, None)
    first = ctx.live(SC, 1, "a-s1", twin=True)
    again = ctx.live(SC, 1, "a-s1", twin=True)
    assert calls == [1]
    assert again.flows["goodput_bps"].to_list() == first.flows["goodput_bps"].to_list()
    assert again.twin is not None
    assert again.twin.flows["goodput_bps"].to_list() == first.twin.flows["goodput_bps"].to_list()
    ctx.live(SC, 2, "a-s2")
    assert calls == [1, 2]


def test_a_damaged_or_different_run_is_run_again_and_says_why(tmp_path, calls, capsys):
    ctx = Context("x-live", Path(tmp_path), True, None, None)
    ctx.live(SC, 1, "a-s1")
    flows = tmp_path / "runs" / "a-s1" / "flows.parquet"
    flows.write_bytes(flows.read_bytes()[:-3])
    ctx.live(SC, 1, "a-s1")
    assert calls == [1, 1]
    assert "runs/a-s1 is run again (flows.parquet has" in capsys.readouterr().err
    # the same label, another scenario (a quick run's folder met by full mode)
    ctx.live({**SC, "duration": "3s"}, 1, "a-s1")
    assert calls == [1, 1, 1]
    assert "(another scenario or seed)" in capsys.readouterr().err
    # and now intact: reused
    ctx.live({**SC, "duration": "3s"}, 1, "a-s1")
    assert calls == [1, 1, 1]

"""P3 (RTT-RTO aware conditioner): generated scenarios, and the paper's claims at one
F2 RTT in a short run (the full experiments are ``qoslab reproduce p3-…``)."""

from __future__ import annotations

from pathlib import Path

import pytest

import qoslab
from qoslab.exceptions import ScenarioError
from qoslab.reproduce import p3, scenarios_dir
from qoslab.reproduce.p1 import to_toml

ROOT = Path(__file__).resolve().parents[1]


def test_committed_scenarios_match_the_generator():
    assert len(p3.specs()) == len(p3.MARKERS) == 7
    for rel, data in p3.specs().items():
        path = scenarios_dir() / rel
        assert path.read_text() == to_toml(data, p3.HEADER), f"regenerate {rel}"
        qoslab.check(path)


def _aggregates(stem: str) -> tuple[float, float]:
    """F1 and F2 throughput [Mb/s] at F2 RTT 100 ms, 60 s runs (20 s discarded)."""
    res = qoslab.run(scenarios_dir() / "p3" / f"{stem}.toml",
                     {"duration": "60s", "warmup": "20s"})  # fmt: skip
    fl = res.tables["flows"]
    f1 = fl.filter(fl["name"].str.starts_with("F1-"))["goodput_bps"].sum() / 1e6
    f2 = fl.filter(fl["name"].str.starts_with("F2-"))["goodput_bps"].sum() / 1e6
    return f1, f2


@pytest.mark.slow
def test_basic_rtt_aware_gives_the_long_rtt_aggregate_the_excess_rtt_rto_mitigates():
    b1, b2 = _aggregates("rtt")
    assert b2 > 3 * b1  # paper Fig. 4: 7.52 vs 2.3 Mb/s at 100 ms
    r1, r2 = _aggregates("rtt-rto")
    s1, s2 = _aggregates("rtt-sw")
    gap = lambda a, b: abs(a - b) / (a + b)  # noqa: E731
    assert gap(r1, r2) < 0.7 * gap(b1, b2)
    assert gap(s1, s2) < 0.7 * gap(b1, b2)


def test_a_bad_marker_is_a_user_error_naming_the_key():
    sc = qoslab.scenario.load(scenarios_dir() / "p3" / "standard.toml").data
    st = sc["conditioner"][0]["stages"][0]
    sc["conditioner"][0]["stages"][0] = {k: v for k, v in st.items() if k != "pir"}
    with pytest.raises(ScenarioError, match=r"conditioner\[0\]\.stages\[0\]\.pir"):
        qoslab.run(sc)

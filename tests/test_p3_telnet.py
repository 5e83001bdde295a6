"""P3 Table I (Telnet), Fig. 5 and the passive estimator: generated scenarios and the
readings they rest on, in short runs (the experiments are ``qoslab reproduce p3-…``)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

import qoslab
from qoslab.reproduce import Explanation, p3, p3_telnet, scenarios_dir
from qoslab.reproduce.p1 import to_toml

ROOT = Path(__file__).resolve().parents[1]


def test_committed_scenarios_match_the_generator():
    assert p3_telnet.specs()
    for rel, data in p3_telnet.specs().items():
        path = scenarios_dir() / rel
        assert path.read_text() == to_toml(data, p3_telnet.HEADER), f"regenerate {rel}"
        qoslab.check(path)
    # No name clashes with the scenarios of p3.py.
    assert not set(p3_telnet.specs()) & set(p3.specs())


def test_explanations_link_to_existing_doc_anchors_and_scripts():
    exps = [v for v in vars(p3_telnet).values() if isinstance(v, Explanation)]
    assert exps
    for e in exps:
        doc, anchor = e.doc.split("#")
        assert f'<a id="{anchor}"></a>' in (ROOT / doc).read_text(), e.doc
        assert (ROOT / e.script.split()[-1]).is_file(), e.script


def test_telnet_scenario_is_100_single_session_connections_per_aggregate_at_1mbps():
    sc = p3_telnet.telnet_scenario("rtt-rto")
    assert {lk["rate"] for lk in sc["link"]} == {"1Mbps"}
    assert len(sc["flow"]) == 5 * 100
    assert all(f["telnet"]["sessions"] == 1 for f in sc["flow"])
    res = qoslab.run(scenarios_dir() / "p3" / "telnet-rtt-rto.toml", seed=3)
    w, s = p3_telnet.telnet_delays(res)
    # Every session ran once, with 5–35 full-segment writes, all delivered by the end
    # (so the mean delays are over every packet, none censored).
    assert s.height == 500
    assert s["writes"].min() >= 5 and s["writes"].max() <= 35  # type: ignore[operator]
    assert (w["size"] == 1024).all()
    assert w["delay"].is_nan().sum() == 0
    # Congested: the long aggregates wait seconds, F5 (one link) far less.
    mean = {a: float(g["delay"].mean()) for (a,), g in w.group_by("aggregate")}  # type: ignore[arg-type]
    assert mean["F1"] > 1.0 and mean["F1"] > 2 * mean["F5"], mean
    assert pl.Series(list(mean.values())).is_finite().all()

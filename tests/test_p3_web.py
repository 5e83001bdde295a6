"""P3 Table II (WWW): generated scenarios, the web model's result tables, and that its
explanations point at existing docs (the experiment is ``qoslab reproduce p3-t2``)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import qoslab
from qoslab.exceptions import ScenarioError
from qoslab.reproduce import Explanation, p3_web, scenarios_dir
from qoslab.reproduce.scenario_files import to_toml

ROOT = Path(__file__).resolve().parents[1]


def test_committed_scenarios_match_the_generator():
    assert len(p3_web.specs()) == 4
    for rel, data in p3_web.specs().items():
        path = scenarios_dir() / rel
        assert path.read_text() == to_toml(data, p3_web.HEADER), f"regenerate {rel}"
        qoslab.check(path)


def test_explanations_link_to_existing_doc_anchors():
    exps = [v for v in vars(p3_web).values() if isinstance(v, Explanation)]
    assert exps
    for e in exps:
        doc, anchor = e.doc.split("#")
        assert f'<a id="{anchor}"></a>' in (ROOT / doc).read_text(), e.doc


def _objects(**web) -> pl.DataFrame:
    sc = qoslab.scenario.load(scenarios_dir() / "p3" / "www-rtt-rto.toml").data
    for f in sc["flow"]:
        f["web"] = {**f["web"], **web}
    return qoslab.run(sc, seed=5).tables["web_objects"]


def test_web_objects_are_whole_and_sizes_follow_the_ns2_pareto():
    o = _objects()
    assert o.height > 500
    assert (o["received"] == o["bytes"]).all(), "every object delivered completely"
    assert (o["syns"] >= 1).all()
    assert (o["response_all"] >= o["response_first"]).all()
    # Object sizes are ⌈Pareto II(mean 10, shape 1.2)⌉ packets of 1024 B: the share at
    # or below k packets is the (Lomax) distribution function at k; a KS distance at the
    # 0.1 % level.
    pk = (o["bytes"] // 1024).to_numpy()
    crit = 1.95 / len(pk) ** 0.5

    def ks(mean: float, shape: float) -> float:
        cdf = lambda k: 1 - (1 + k / (mean * (shape - 1))) ** -shape  # noqa: E731
        return max(abs((pk <= k).mean() - cdf(k)) for k in range(1, 200))

    assert ks(10, 1.2) < crit
    assert ks(10, 2.0) > crit, "against another shape the same sample fails"


def test_a_bad_web_value_is_a_user_error_naming_the_key():
    with pytest.raises(ScenarioError, match=r"flow\[0\]\.web\.object_size"):
        _objects(object_size={"kind": "pareto2", "mean": 10, "shape": 0.5})

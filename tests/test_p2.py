"""P2 (ERUF): generated scenarios, the doc links of the explanations, and the paper's
claims in short runs (the full experiments are ``qoslab reproduce p2-…``)."""

from __future__ import annotations

import re
from pathlib import Path

import qoslab
from qoslab.reproduce import Explanation, p2, scenarios_dir
from qoslab.reproduce.p1 import to_toml

ROOT = Path(__file__).resolve().parents[1]
SHORT = {"duration": "40s", "warmup": "10s"}


def test_committed_scenarios_match_the_generator():
    assert len(p2.specs()) == 17
    for rel, data in p2.specs().items():
        path = scenarios_dir() / rel
        assert path.read_text() == to_toml(data, p2.HEADER), f"regenerate {rel}"
        qoslab.check(path)


def test_explanations_link_to_existing_doc_anchors_and_scripts():
    exps = [v for v in vars(p2).values() if isinstance(v, Explanation)]
    assert len(exps) == 7
    for e in exps:
        doc, anchor = e.doc.split("#")
        assert f'<a id="{anchor}"></a>' in (ROOT / doc).read_text(), e.doc
        assert (ROOT / e.script.split()[-1]).is_file(), e.script
    assert not re.search(r"issue \d", (ROOT / "python/qoslab/reproduce/p2.py").read_text())


def test_with_total_shares_the_rate_equally_among_the_cbr_flows():
    d = p2.with_total(p2.cross(True), 2000)
    rates = [f["cbr"]["rate"] for f in d["flow"] if "cbr" in f]
    assert rates == ["500.0000kbps"] * 4
    assert p2.dumbbell(True)["flow"][1]["cbr"]["rate"] == "333.333kbps"


def _measure(data: dict) -> dict[str, float]:
    return p2.measure(qoslab.run(data, SHORT), {"r1", "r4"})


def test_dumbbell_eruf_moves_drops_to_the_edge_and_lifts_tcp():
    plain = _measure(p2.with_total(p2.dumbbell(False), 2000))
    eruf = _measure(p2.with_total(p2.dumbbell(True), 2000))
    share = lambda m: m["edge_drops_per_s"] / (m["edge_drops_per_s"] + m["core_drops_per_s"])  # noqa: E731
    assert share(plain) < 0.5 < 0.8 < share(eruf)
    assert eruf["tcp_kbps"] > 3.5 * plain["tcp_kbps"]
    assert eruf["quenches"] > 0 == plain["quenches"]


def test_multi_dumbbell_eruf_moves_drops_to_the_edges_and_lifts_tcp_many_fold():
    plain = _measure(p2.with_total(p2.multi_dumbbell(False), 2000))
    eruf = _measure(p2.with_total(p2.multi_dumbbell(True), 2000))
    share = lambda m: m["edge_drops_per_s"] / (m["edge_drops_per_s"] + m["core_drops_per_s"])  # noqa: E731
    assert plain["tcp_kbps"] < 400
    assert share(plain) < 0.5 < share(eruf)
    assert eruf["tcp_kbps"] > 5 * plain["tcp_kbps"]


def test_video_server_eruf_regulates_the_flows_to_the_128_kbps_link_and_frees_the_core_link():
    runs = {}
    for eruf in (False, True):
        res = qoslab.run(p2.with_total(p2.video_server(eruf), 2000), SHORT)
        runs[eruf] = (p2.measure(res, {"r1"}), p2.into_link_kbps(res, "h6", "r2->h6"))
    (plain, h6_plain), (eruf, h6_eruf) = runs[False], runs[True]
    assert eruf["quenches"] > 0 == plain["quenches"]
    assert h6_eruf < 0.95 * h6_plain
    assert eruf["udp_kbps"] > 1.1 * plain["udp_kbps"]
    # at 1 Mb/s the core link is not full: without ERUF every drop is at R2, with it some
    # move to R1 (only some: the regulators regrow fast, validation/p2_video.py)
    edge = [
        p2.measure(qoslab.run(p2.with_total(p2.video_server(e), 1000), SHORT), {"r1"})
        for e in (False, True)
    ]
    assert edge[0]["edge_drops_per_s"] == 0
    assert edge[1]["edge_drops_per_s"] > 0.1 * edge[1]["core_drops_per_s"]


def test_waist_eruf_drops_cbr_before_the_waist_and_lifts_tcp():
    plain = _measure(p2.with_total(p2.waist(False), 2000))
    eruf = _measure(p2.with_total(p2.waist(True), 2000))
    assert plain["edge_drops_per_s"] == 0 < plain["core_drops_per_s"]
    assert eruf["edge_drops_per_s"] > eruf["core_drops_per_s"]
    assert eruf["tcp_kbps"] > 2 * plain["tcp_kbps"]


def test_reverse_quenches_from_r4_regulate_the_reverse_flow_and_spare_the_others():
    runs = {}
    for q4 in (False, True):
        res = qoslab.run(p2.with_reverse(p2.reverse(q4), 2000), SHORT)
        runs[q4] = p2.measure_reverse(res)
    assert runs[False]["rev_edge_drops_per_s"] == 0 < runs[False]["rev_r4_drops_per_s"]
    assert runs[True]["rev_edge_drops_per_s"] > runs[True]["rev_r4_drops_per_s"]
    assert runs[True]["rev_kbps"] < 0.8 * runs[False]["rev_kbps"]
    assert runs[True]["tcp_kbps"] > 0.9 * runs[False]["tcp_kbps"]
    assert runs[True]["fwd_cbr_kbps"] > 0.9 * runs[False]["fwd_cbr_kbps"]


def test_aggregation_restores_the_effect_per_flow_regulation_loses_with_many_flows():
    one = _measure(p2.small_flows(1, "flow"))["tcp_kbps"]
    many = _measure(p2.small_flows(50, "flow"))["tcp_kbps"]
    agg = _measure(p2.small_flows(50, "destination"))["tcp_kbps"]
    assert many < 0.5 * one
    assert agg > 0.8 * one


def test_tcp_only_regulators_with_a_window_bucket_do_not_drop_tcp():
    for n in (2, 10):
        plain = qoslab.run(p2.tcp_only(n, False), SHORT, 2)
        eruf = qoslab.run(p2.tcp_only(n, True), SHORT, 2)
        assert int(eruf.tables["quench"]["sent"].sum()) > 0
        extra = p2.measure(eruf, {"r1"})["drops"] - p2.measure(plain, {"r1"})["drops"]
        assert extra <= 1

"""P2 (ERUF): generated scenarios, the doc links of the explanations, and the paper's
claims in short runs (the full experiments are ``qoslab reproduce p2-…``)."""

from __future__ import annotations

import re
from pathlib import Path

import qoslab
from qoslab.reproduce import Explanation, p2, scenarios_dir
from qoslab.reproduce.scenario_files import to_toml

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
    # The forward CBR is spared under the capped quench reading; a quench for every drop
    # (the headline) over-throttles it, which the reproduction reports (p2-f6).
    capped = {
        q4: p2.measure_reverse(
            qoslab.run(p2.with_reading(p2.with_reverse(p2.reverse(q4), 2000), quench="capped"),
                       SHORT)
        )
        for q4 in (False, True)
    }  # fmt: skip
    assert capped[True]["fwd_cbr_kbps"] > 0.9 * capped[False]["fwd_cbr_kbps"]
    assert runs[True]["fwd_cbr_kbps"] < capped[True]["fwd_cbr_kbps"]


def test_with_reading_sets_every_open_choice_and_nothing_else():
    base = p2.with_total(p2.cross(True), 2000)
    d = p2.with_reading(base, "bytes_per_second", "capped", "bytes", burst=3000)
    stages = [st for c in d["conditioner"] for st in c["stages"]]
    assert len(stages) == 2
    assert all(st["increase"] == "bytes_per_second" and st["burst"] == 3000 for st in stages)
    quench = [n["source_quench"] for n in d["node"] if "source_quench" in n]
    assert quench == [p2.QUENCH_CAPPED] * 2
    lqd = [lk["queue_a_to_b"] for lk in d["link"] if "queue_a_to_b" in lk]
    assert lqd == [{"kind": "lqd", "service": "fifo", "limit_bytes": 75000}] * 2
    # The headline is what the scenario files carry.
    assert p2.with_reading(base, *p2.HEADLINE) == base
    assert base["conditioner"][0]["stages"][0]["increase"] == "packet_per_rtt"
    assert base["node"][-1]["source_quench"] == {"rate": "unlimited"}


def test_twins_remove_exactly_their_mechanism():
    base = p2.dumbbell(True)
    lq = p2.lqd_only(base)
    assert "conditioner" not in lq
    assert not any("source_quench" in n for n in lq["node"])
    assert [lk.get("queue_a_to_b") for lk in lq["link"]] == [
        lk.get("queue_a_to_b") for lk in base["link"]
    ]
    rg = p2.regulators_only(base)
    assert rg["conditioner"] == base["conditioner"]
    assert not any("queue_a_to_b" in lk for lk in rg["link"])
    assert rg["node"] == base["node"]


def test_measure_splits_the_edge_drops_by_cause():
    res = qoslab.run(p2.with_total(p2.dumbbell(True), 2000), SHORT)
    m = p2.measure(res, p2.EDGES["f1"])
    d = res.tables["drops"]
    secs = float(res.summary["duration"]) - float(res.summary["warmup"])
    policed = int(d.filter(d["cause"] == "policed")["packets"].sum())
    lqd = int(d.filter(d["place"] == "r1->r2")["packets"].sum())
    assert policed > 0 and lqd > 0
    assert abs(m["edge_policed_per_s"] - policed / secs) < 1e-9
    assert abs(m["edge_drops_per_s"] - (policed + lqd) / secs) < 1e-9
    e, c = m["edge_drops_per_s"], m["core_drops_per_s"]
    assert abs(m["edge_share"] - e / (e + c)) < 1e-12


def test_edge_shares_cover_every_rate_with_cbr_at_least_four_times_the_isdn_link():
    import polars as pl

    t = pl.DataFrame([
        {"eruf": e, "cbr_kbps": r, "edge_drops_per_s": 3.0, "core_drops_per_s": 1.0}
        for e in (False, True) for r in (250, 500, 512, 1000)
    ])  # fmt: skip
    names = [c.quantity for c in p2.edge_shares(t, 0.8, "x")]
    assert names == [f"with ERUF at {r} kb/s CBR: share of drops at the edge" for r in (512, 1000)]


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


def test_ratio_and_effect_share_refuse_a_missing_or_negative_denominator():
    import math

    assert p2.ratio(3.0, 2.0) == 1.5
    assert math.isnan(p2.ratio(1.0, 0.0))
    assert math.isnan(p2.ratio(-1.0, -2.0))  # not a gain of 0.5
    assert p2.effect_share(0.3, 0.6) == 0.5
    assert math.isnan(p2.effect_share(-0.4, -0.5))  # two negative effects are not a share 0.8
    assert math.isnan(p2.effect_share(0.0, 0.0))
    assert math.isnan(p2.effect_share(float("nan"), 1.0))


def _m(share: float, tcp: float, edge: float = 10.0, policed: float = 8.0) -> dict:
    return {"edge_share": share, "tcp_kbps": tcp, "edge_drops_per_s": edge,
            "edge_policed_per_s": policed}  # fmt: skip


def test_mechanism_is_outside_when_eruf_reverses_the_effect_and_info_at_an_idle_edge():
    plain = _m(0.5, 500)
    worse = _m(0.3, 400)  # ERUF lowers both the edge share and TCP
    # the FIFO-edge twin lowers them further: the old ratio (0.2 − 0.5) / (0.3 − 0.5) = 1.5
    twins = {"lqd_only": _m(0.5, 500), "regulators_only": _m(0.2, 300)}
    abl, comps = p2.mechanism("fx", plain, worse, twins, "cmd", base=p2.dumbbell(True))
    shares = [c for c in comps if c.quantity.startswith("regulators without LQD")]
    assert len(shares) == 2 and all(c.verdict == "outside" for c in shares)
    assert [a.verdict for a in abl] == ["outside", "outside"]
    # the claimed effect: the FIFO-edge twin keeps 0.6 of the share effect and 0.25 of TCP's
    better = _m(0.9, 900)
    twins = {"lqd_only": _m(0.55, 550), "regulators_only": _m(0.74, 600)}
    abl, comps = p2.mechanism("fx", plain, better, twins, "cmd", base=p2.dumbbell(True))
    shares = {c.quantity.split(": ")[1]: c for c in comps}
    assert abs(shares["moves drops to the edge, ÷ full ERUF's"].ours - 0.6) < 1e-12
    assert shares["moves drops to the edge, ÷ full ERUF's"].verdict == "within"
    assert abs(shares["lifts TCP goodput, ÷ full ERUF's"].ours - 0.25) < 1e-12
    assert shares["lifts TCP goodput, ÷ full ERUF's"].verdict == "outside"
    assert [a.verdict for a in abl] == ["within", "within"]
    # an edge link that is never congested: the twin shares cannot fail, so they are info
    _, comps = p2.mechanism(
        "fx", plain, better, twins, "cmd", edge_congested=False, base=p2.dumbbell(True)
    )
    assert {c.verdict for c in comps} == {"info"}
    # a reduction (the H6 rate) is an effect with sign −1
    plain6, full6 = {**plain, "h6_into_r2_kbps": 800.0}, {**better, "h6_into_r2_kbps": 200.0}
    tw = {k: {**v, "h6_into_r2_kbps": 500.0} for k, v in twins.items()}
    abl, _ = p2.mechanism(
        "fx", plain6, full6, tw, "cmd", cols=("h6_into_r2_kbps",), base=p2.video_server(True)
    )
    assert (abl[0].effect_with, abl[0].effect_without) == (600.0, 300.0)
    assert abl[0].verdict == "within"


def test_seeded_runs_every_seed_but_the_first_it_is_given(monkeypatch):
    seen = []

    class Ctx:
        def run_many(self, jobs):
            seen.extend(j.seed for j in jobs)
            return [j.seed for j in jobs]

    monkeypatch.setattr(p2, "measure", lambda res, edges: {"tcp_kbps": 10.0 * res})
    out = p2.seeded(Ctx(), {}, "f1", [1, 2, 3], first={"tcp_kbps": 7.0})
    assert seen == [2, 3]
    assert [m["tcp_kbps"] for m in out] == [7.0, 20.0, 30.0]
    gain = p2.per_seed(lambda a, b: p2.ratio(a["tcp_kbps"], b["tcp_kbps"]), out, out[::-1])
    assert gain == [7 / 30, 1.0, 30 / 7]
    assert abs(p2.seed_mean(gain) - (7 / 30 + 1 + 30 / 7) / 3) < 1e-12


def test_tcp_claims_fail_when_the_core_did_not_quench_in_some_run():
    import polars as pl

    def row(quenches: float, policed: float = 2.0) -> dict:
        return {"extra_drops": 0.0, "policed": policed, "tcp_kbps_eruf": 100.0,
                "tcp_kbps_plain": 100.0, "quenches": quenches, "installed": 3.0,
                "decreased": 3.0}  # fmt: skip

    ok = {c.quantity: c for c in p2._tcp_claims(pl.DataFrame([row(5, 1), row(9, 1)]))}
    assert {c.verdict for c in ok.values()} == {"within", "info"}
    idle = {c.quantity: c for c in p2._tcp_claims(pl.DataFrame([row(5, 1), row(0, 1)]))}
    quenched = idle["the core quenched TCP: source quenches sent, fewest over the runs"]
    assert quenched.ours == 0 and quenched.verdict == "outside"


def test_tcp_only_with_a_two_packet_bucket_the_regulators_drop_tcp():
    res = qoslab.run(p2.with_reading(p2.tcp_only(10, True), burst=3000), SHORT, 2)
    c = p2.eruf_counters(res)
    assert c["installed"] >= 1 and c["decreased"] >= 1
    assert c["policed"] > 1  # the claim's "not more than one" fails at this bucket
    assert c["policed"] == float(res.tables["eruf"]["policed"].sum())

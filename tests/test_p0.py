"""P0 (rate control of TCP aggregates at a server): scenarios, doc links, and the
qualitative claims on single runs (each 200 s run takes about 0.1 s)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest

import qoslab
from conftest import cli
from qoslab import docgen
from qoslab.exceptions import ScenarioError
from qoslab.reproduce import Explanation, p0, scenarios_dir
from qoslab.reproduce.scenario_files import to_toml

ROOT = Path(__file__).resolve().parents[1]


def test_committed_scenarios_match_the_generator():
    assert len(p0.specs()) == len(p0.ROWS) == 16
    for rel, data in p0.specs().items():
        path = scenarios_dir() / rel
        assert path.read_text() == to_toml(data, p0.HEADER), f"regenerate {rel}"
        qoslab.check(path)


def test_explanations_link_to_existing_doc_anchors():
    # P0 has no explanation left: Fig. 5's, LRU's and p0-mix's were withdrawn (none
    # had a run that removes its cause and lands in the band).
    exps = [v for v in vars(p0).values() if isinstance(v, Explanation)]
    for e in exps:
        doc, anchor = e.doc.split("#")
        assert f'<a id="{anchor}"></a>' in (ROOT / doc).read_text(), e.doc
    src = (ROOT / "python/qoslab/reproduce/p0.py").read_text()
    assert "issue" not in src.lower()


def _measure(stem: str, seed: int = 1) -> tuple[float, float, list[float]]:
    """(Jain over R_i/s_i, total % of rate, per-flow compliant B/s) of one run."""
    links, qos, _ = p0.ROWS[stem]
    res = qoslab.run(scenarios_dir() / "p0" / f"{stem}.toml", seed=seed)
    thr = [g * p0.PKT / p0.MSS / 200 for g in res.tables["flows"]["goodput_bytes"]]
    shares = p0.fair_shares(links, qos is not None)
    jain = p0.jain([t / s for t, s in zip(thr, shares, strict=True)])
    q = res.tables.get("qosmgr")
    marked = [m / 200 for m in q["marked_bytes"]] if q is not None else []
    return jain, 100 * sum(thr) / p0.RATE, marked


def test_logical_partitions_are_fair_and_use_the_rate_partitioned_waste_it():
    j_log, tot_log, _ = _measure("f10-unequal")
    j_part, tot_part, _ = _measure("f5-unequal")
    assert j_log >= 0.98 and tot_log >= 97.0
    assert j_part >= 0.98 and tot_part <= 92.0
    j_eq, tot_eq, _ = _measure("f10-equal")
    assert j_eq >= 0.98 and tot_eq >= 97.0


def test_sequential_order_is_unfair_fcfs_and_lru_are_not():
    seq = _measure("f7-sequential")[0]
    fcfs = sum(_measure("f7-fcfs", s)[0] for s in (1, 2, 3)) / 3
    lru = _measure("f7-lru")[0]
    assert seq < 0.6 < 0.85 < min(fcfs, lru)


def test_police_and_mark_common_bucket_marks_more_than_partitions():
    _, tot_part, m_part = _measure("f6-unequal")
    _, _, m_common = _measure("f8-unequal")
    _, _, m_log = _measure("f11-unequal")
    assert tot_part > 110.0  # unmarked traffic goes too
    assert sum(m_part) < sum(m_log) and sum(m_part) < sum(m_common)
    assert sum(m_common) <= p0.RATE * 1.01 + 40_000 / 200


def test_a_bad_manager_is_a_user_error_naming_the_key(tmp_path):
    sc = qoslab.scenario.load(scenarios_dir() / "p0" / "f10-equal.toml").data
    sc["qosmgr"] = [{**sc["qosmgr"][0], "order": "lru"}]
    with pytest.raises(ScenarioError, match=r"qosmgr\[0\]\.order"):
        qoslab.run(sc)
    path = tmp_path / "bad.toml"
    path.write_text((scenarios_dir() / "p0" / "f10-equal.toml").read_text().replace("40KB", "4KB"))
    r = cli("run", str(path), "-o", str(tmp_path / "out"))
    assert r.returncode == 2
    out = r.stdout + r.stderr
    assert "qosmgr[0].profile.burst" in out and "Traceback" not in out


def test_doc_tables_render_from_the_committed_data():
    data = json.loads((ROOT / "docs/papers/data/p0-full.json").read_text())
    md = docgen.RENDERERS["p0-all"](data)
    assert md.count("\n") == 2 + 16
    assert "| f10-unequal |" in md


def test_mix_arrivals_are_a_seeded_poisson_stream_of_heavy_tailed_sizes():
    a = p0.mix_arrivals(1, 200.0)
    assert a == p0.mix_arrivals(1, 200.0) != p0.mix_arrivals(2, 200.0)
    starts = [s for s, _, _ in a]
    assert starts == sorted(starts) and p0.MIX_FROM < starts[0] and starts[-1] < 180.0
    assert 140 < len(a) < 210  # 175 expected at 1 per second
    sizes = [b for _, b, _ in a]
    assert min(sizes) >= 10_000 and max(sizes) <= p0.MIX_CAP
    assert {c for _, _, c in a} == {0, 1, 2, 3}


def test_aggregate_fair_increase_is_fairer_than_reno_with_a_short_queue():
    def jain_fct(cc: str) -> tuple[float, float]:
        res = qoslab.run(p0.mix_scenario(cc, 1, 100.0, queue=10), seed=1)
        thr = list(res.tables["flows"]["goodput_bytes"][:4])
        fct = res.tables["transfers"]["completion"]
        assert fct.is_nan().sum() <= 1  # every short transfer but maybe one finished
        return p0.jain(thr), float(fct.filter(~fct.is_nan()).mean())  # type: ignore[arg-type]

    j_reno, f_reno = jain_fct("reno")
    j_af, f_af = jain_fct("aggregate_fair")
    assert j_af > j_reno + 0.05
    assert f_af < 1.2 * f_reno


def test_window_closed_sends_make_up_for_a_coarse_timer():
    def total(trig: list[str]) -> tuple[float, int]:
        ov = {"qosmgr.0.triggers": trig, "qosmgr.0.period": "50ms"}
        res = qoslab.run(p0.trigger_mix_scenario(), ov, seed=1)
        q = res.tables["qosmgr"]
        wire = float(res.tables["flows"]["goodput_bytes"].sum()) * p0.PKT / p0.MSS
        return 100 * wire / p0.DURATION / p0.RATE, int(q["released_closed_send"].sum())

    timer, none = total([])
    closed, released = total(["closed_send"])
    assert none == 0 and released > 1000
    assert closed > timer + 1.0 and closed <= 100.5


def test_writes_apply_to_tcp_flows_only_and_need_a_positive_period():
    sc = qoslab.scenario.load(scenarios_dir() / "p0" / "f3-equal.toml").data
    sc["flow"][0]["writes"] = {"size": "1KB", "every": "0s"}
    with pytest.raises(ScenarioError, match=r"flow\[0\]\.writes\.every"):
        qoslab.run(sc)
    sc["flow"][0] = {"name": "u", "from": "s", "to": "c1", "cbr": {"rate": "10kbps"},
                     "writes": {"size": "1KB", "every": "10ms"}}  # fmt: skip
    with pytest.raises(ScenarioError, match=r"flow\[0\]\.writes"):
        qoslab.run(sc)


def test_bucket_depth_matters_only_where_tokens_can_be_lost():
    # Without loss the shaper keeps every connection backlogged and the two depths give
    # the same throughput but for the first burst (within 0.5 % of the share); with loss
    # on the client links the 600 ms connection (rate window ≈ 12 kB) gets less with the
    # equal depth (10 kB) than with the RTT depth (19.2 kB).
    none = {d: p0._depth_regime(d, 1, loss=0.0)["x600"] for d in ("equal", "rtt")}
    assert abs(none["equal"][0] - none["rtt"][0]) < 0.005
    lossy = {d: p0._depth_regime(d, 3)["x600"] for d in ("equal", "rtt")}
    assert lossy["equal"] != lossy["rtt"]
    assert all(0.3 < x < 1.0 for x in lossy["equal"] + lossy["rtt"])


def test_aggregate_fair_readings_and_twins_are_named_once():
    assert [r.name for r in p0.AF_RTT_READINGS] == ["srtt", "min"]
    assert [r.name for r in p0.AF_RTT_AV_READINGS] == ["srtt mean", "base mean"]
    heads = p0.AF_RTT_READINGS + p0.AF_RTT_AV_READINGS + p0.DEPTH_READINGS
    assert sum(r.headline for r in heads) == 3
    sc = p0.mix_scenario("aggregate_fair", 1, 60.0, queue=50)
    assert sc["flow"][0]["tcp"]["cc"]["rtt_av"] == "650ms"
    assert (
        p0.mix_scenario("aggregate_fair", 1, 60.0, queue=10)["flow"][0]["tcp"]["cc"]["rtt_av"]
        == "400ms"
    )
    assert (
        p0.mix_scenario("aggregate_fair_base", 1, 60.0)["flow"][0]["tcp"]["cc"]["rtt_av"]
        == "312.5ms"
    )
    sc = p0.mix_scenario("aggregate_fair_min", 1, 60.0)
    assert sc["flow"][0]["tcp"]["cc"]["rtt"] == "min"
    assert "rtt" not in p0.mix_scenario("aggregate_fair", 1, 60.0)["flow"][0]["tcp"]["cc"]
    assert 90.0 < p0.NO_SHARING_PCT < 91.0  # (3 · 20 000 + 12 500) / 80 000


# --------------------------------------------------------------------------- issue-59 rules
# Each rule below is checked on P0's committed full-mode data and, where it needs a
# counter-example, on a synthetic per-seed summary that the old comparison let through.


def _data() -> dict:
    return json.loads((ROOT / "docs/papers/data/p0-full.json").read_text())


def _band(c: dict) -> tuple[float, float]:
    lo = c.get("at_least")
    hi = c.get("at_most")
    if c.get("paper") is not None:
        tol = max(c.get("atol") or 0.0, abs(c["paper"]) * (c.get("rtol") or 0.0))
        lo, hi = c["paper"] - tol, c["paper"] + tol
    return (-math.inf if lo is None else lo, math.inf if hi is None else hi)


def _distance(x: float, band: tuple[float, float]) -> float:
    return max(band[0] - x, x - band[1], 0.0)


def test_no_explanation_whose_counterfactual_moves_away():
    # Rule: an explanation is a prediction; a counterfactual that lands further from the
    # band than our value refutes it, and the explanation must go (the old LRU one gave
    # 0.9999 against 0.95 ± 0.03 with ours at 0.992).
    for name, e in _data()["experiments"].items():
        for c in e["comparisons"]:
            cf = (c.get("explanation") or {}).get("counterfactual") or {}
            if cf.get("value") is None or c.get("ours") is None:
                continue
            band = _band(c)
            assert _distance(cf["value"], band) <= _distance(c["ours"], band), (name, c)


def _summ(rows: dict[str, dict[str, list[float]]]) -> pl.DataFrame:
    out = []
    for stem, cols in rows.items():
        n = len(next(iter(cols.values())))
        for k in range(n):
            r = {"scenario": stem, "seed": k + 1, "jain": 1.0, "total_pct": 100.0,
                 "compliant_pct": 80.0, "timer_events": 0}  # fmt: skip
            r.update({c: v[k] for c, v in cols.items()})
            out.append(r)
    return pl.DataFrame(out)


def test_logical_partitions_twin_switches_off_the_partitions_only():
    # Rule: the twin switches off the named mechanism and nothing else. The logical
    # partitions' twin is §4.2.2's common bucket in FCFS order; the sequential scan also
    # drops the fair order, and passed although a fair common bucket is as fair.
    head = next(iter(p0.F10_TWINS))
    assert head == "f7-fcfs" and p0.ROWS[head][1] == {**p0.common_policy("fcfs_first")}
    logical, twin = p0.ROWS["f10-equal"][1], p0.ROWS[head][1]
    assert {k for k in {*logical, *twin} if logical.get(k) != twin.get(k)} == {"sharing", "order"}
    abl = [a for a in _data()["experiments"]["p0-f10"]["ablations"]
           if a["mechanism"].startswith("logical partitions")]  # fmt: skip
    assert len(abl) == 1 and "FCFS" in abl[0]["twin"], abl
    # A fair common bucket without partitions (FCFS as fair as logical partitions, the
    # sequential scan unfair): the headline ablation must not find an effect there.
    ten = [0.0] * 10
    s = _summ({"f10-equal": {"jain": [0.99 + x for x in ten]},
               "f10-unequal": {"jain": [0.99 + x for x in ten]},
               "f5-unequal": {"total_pct": [89.0 + x for x in ten]},
               "f7-fcfs": {"jain": [0.985 + 0.001 * k for k in range(10)]},
               "f7-lru": {"jain": [0.985 + x for x in ten]},
               "f7-sequential": {"jain": [0.4 + 0.001 * k for k in range(10)]},
               "f3-equal": {"jain": [0.7 + 0.002 * k for k in range(10)]}})  # fmt: skip
    _, ablations = p0._f10_outcome(s)
    assert ablations[0].verdict == "outside"


def test_fig11_claim_is_the_papers_order_judged_seed_paired():
    # Rule: a claim is the paper's, quoted. §4.2.3 compares logical partitions with
    # individual rate control only; "logical >= 0.97 x common" was ours, and its slack let
    # the reversed order (logical 2 % below common in every seed) through.
    ten = range(10)
    s = _summ({"f11-unequal": {"compliant_pct": [98.0 + 0.1 * k for k in ten],
                               "total_pct": [120.0 + 0.1 * k for k in ten]},
               "f8-unequal": {"compliant_pct": [100.0 + 0.1 * k for k in ten]},
               "f6-unequal": {"compliant_pct": [80.0 + 0.2 * k for k in ten],
                              "total_pct": [140.0 + 0.1 * k for k in ten]}})  # fmt: skip
    comps = p0._f11_comparisons(s)
    judged = [c for c in comps if c.verdict != "info"]
    assert all(c.ref.claim == ">" and c.ref.n == 10 and "individual rate control" in c.quantity
               for c in judged)  # fmt: skip
    assert not any(c.verdict == "within" for c in comps if "common" in c.quantity)
    by = {c.quantity.split(" throughput")[0]: c.verdict for c in judged}
    assert by == {"total (compliant and non-compliant)": "outside", "compliant": "within"}
    stored = _data()["experiments"]["p0-f11"]["comparisons"]
    assert not any("slack" in (c.get("against") or "") for c in stored)


def test_fig5_total_has_no_explanation_and_no_link_assignment_gives_87():
    # Rule: an explanation no run confirms is withdrawn. Fig. 5's said the paper's three
    # link speeds lose 13 %; every assignment of them to the four clients misses 87 ± 2.
    e = _data()["experiments"]["p0-f5"]
    total = next(c for c in e["comparisons"] if c["quantity"] == "unequal: total")
    assert not total.get("explanation")
    t = e["tables"]["assignments"]
    totals = [dict(zip(t["columns"], r, strict=True))["total_pct"] for r in t["rows"]]
    assert len(totals) == len(p0.link_assignments()) == 36
    assert all(abs(x - 87.0) > p0.PCT_ATOL for x in totals)


def test_mix_rtt_av_is_the_mean_of_the_rtts_that_scale_the_increase():
    # Rule: the headline reading is argued from the text: §5's rtt_av is the mean of the
    # same rtt_i (smoothed RTTs) that scale the increase, not the mean base RTT (312.5 ms,
    # about half of them with the 50-packet queue).
    e = _data()["experiments"]["p0-mix"]
    t = e["tables"]["mix"]
    rows = [dict(zip(t["columns"], r, strict=True)) for r in t["rows"]]
    for r in rows:
        if r["cc"] == "aggregate_fair":
            assert abs(p0.MIX_RTT_AV[r["queue"]] / r["srtt_mean"] - 1) <= 0.1, r
    assert abs(p0.RTT_AV / next(r["srtt_mean"] for r in rows if r["queue"] == 50
                                and r["cc"] == "aggregate_fair") - 1) > 0.1  # fmt: skip
    cal = e["calibrations"]
    assert len(cal) == 1 and len(cal[0]["values"]) >= 4


def test_mix_quick_mode_runs_what_full_mode_judges():
    # Rule: quick mode may judge less, never differently. Two 60 s seeds gave the
    # 50-packet gain -0.015 (outside) where ten 200 s seeds give 0.069 (within); the
    # whole experiment takes seconds, so quick mode runs full mode's seeds and length.
    assert (p0.MIX_QUICK, p0.MIX_QUICK_SEEDS) == (p0.MIX_FULL, p0.FULL_SEEDS)

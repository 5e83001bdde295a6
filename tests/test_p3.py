"""P3 (RTT-RTO aware conditioner): generated scenarios, and the paper's claims at one
F2 RTT in a short run (the full experiments are ``qoslab reproduce p3-…``)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import qoslab
from qoslab.exceptions import ScenarioError
from qoslab.reproduce import Explanation, p3, scenarios_dir
from qoslab.reproduce.scenario_files import to_toml

ROOT = Path(__file__).resolve().parents[1]


def test_committed_scenarios_match_the_generator():
    assert len(p3.specs()) == len(p3.MARKERS) + len(p3.MD_MARKERS) + len(p3.MD_READINGS) == 16
    for rel, data in p3.specs().items():
        path = scenarios_dir() / rel
        assert path.read_text() == to_toml(data, p3.HEADER), f"regenerate {rel}"
        qoslab.check(path)


def test_explanations_link_to_existing_doc_anchors_and_scripts():
    exps = [v for v in vars(p3).values() if isinstance(v, Explanation)]
    assert exps
    for e in exps:
        doc, anchor = e.doc.split("#")
        assert f'<a id="{anchor}"></a>' in (ROOT / doc).read_text(), e.doc
        assert (ROOT / e.script.split()[-1]).is_file(), e.script


def test_multi_domain_topology_puts_one_cross_aggregate_on_each_link():
    # Every inter-domain link carries F1, F2 and exactly one cross aggregate.
    for i in range(len(p3.DOMAINS) - 1):
        on = [n for n, (_, a, _, b) in p3.MD_FLOWS.items()
              if p3.DOMAINS.index(a) <= i < p3.DOMAINS.index(b)]  # fmt: skip
        assert len(on) == 3 and {"F1", "F2"} <= set(on), (i, on)
    assert p3.md_rtt("F3") < p3.md_rtt("F4") < p3.md_rtt("F1")


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
    gap = lambda a, b: abs(a - b) / (a + b)  # noqa: E731
    assert gap(r1, r2) < 0.7 * gap(b1, b2)
    # RTT-SW mitigates only by protecting beyond the profile: as the paper words it
    # (rtt-sw: protect_bound = "none", payback only) its imbalance falls as the paper
    # shows; with DP0 held to the CIR (rtt-sw-cir) it stays the basic marker's.
    s1, s2 = _aggregates("rtt-sw")
    c1, c2 = _aggregates("rtt-sw-cir")
    assert gap(s1, s2) < 0.7 * gap(b1, b2)
    assert gap(c1, c2) > 0.9 * gap(b1, b2)


def test_a_bad_marker_is_a_user_error_naming_the_key():
    sc = qoslab.scenario.load(scenarios_dir() / "p3" / "standard.toml").data
    st = sc["conditioner"][0]["stages"][0]
    sc["conditioner"][0]["stages"][0] = {k: v for k, v in st.items() if k != "pir"}
    with pytest.raises(ScenarioError, match=r"conditioner\[0\]\.stages\[0\]\.pir"):
        qoslab.run(sc)


def _three_aggregates(rule: str, seed: int) -> float:
    """The shortest (20 ms) of three aggregates off the paper's grid (60 micro-flows each,
    RTT 20/80/200 ms, 8 Mb/s, CIR 2 Mb/s, RTT-RTO): its throughput [Mb/s] after 40 s of
    a 100 s run (under a second each)."""
    marker = {"scheme": "rtt_rto", "rto_rule": rule}
    sc = p3.aggregates([0.020, 0.080, 0.200], marker, duration=100.0, warmup=40.0)
    return p3.aggregate_mbps(qoslab.run(sc, seed=seed))["A0"]


def test_three_aggregates_are_not_bimodal_across_seeds():
    # With the literal rule (own ratio only for the aggregate holding both
    # minima) the 20 ms aggregate lands near 1.9 or near 2.6 Mb/s by seed, as its RTO
    # falls above or below the 80 ms aggregate's (seeds 7–12: 2.29, 2.60, 2.36, 1.94,
    # 1.91, 1.90). The headline rule keeps q continuous: 2.56–2.64 on the same seeds.
    seeds = range(7, 13)
    new = [_three_aggregates("min_rtt_aggregate", s) for s in seeds]
    assert max(new) - min(new) < 0.3, new
    old = [_three_aggregates("min_rtt_and_rto", s) for s in seeds]
    assert max(old) - min(old) > 0.5, old


def test_paired_ablation_takes_an_effect_within_its_own_noise_as_no_effect():
    kw = {"claim": "c", "mechanism": "m", "twin": "t", "quantity": "q"}
    # The effect's own 95 % interval reaches zero: no effect, whatever the twin shows.
    noisy = p3.paired_ablation([0.3, -0.2, 0.1], [-1.0, -1.1, -0.9], **kw)
    assert noisy.min_effect > noisy.effect_with and noisy.verdict == "outside"
    # A clear fall: the fall's own interval (0.65 … 1.15) lies above the 0.5 asked.
    clear = p3.paired_ablation([1.0, 1.1, 0.9], [0.1, 0.1, 0.1], **kw)
    assert clear.verdict == "within" and clear.ci is not None and clear.fall_ci[0] > 0.5
    # The same mean fall with more spread straddles 0.5: a tie, not within.
    loose = p3.paired_ablation([1.0, 1.1, 0.9], [0.1, 0.0, 0.2], **kw)
    assert loose.fall_ci[0] < 0.5 < loose.fall_ci[1] and loose.verdict == "tie"
    survives = p3.paired_ablation([1.0, 1.1, 0.9], [0.9, 1.0, 0.8], **kw)
    assert survives.verdict == "outside"
    # One seed (quick mode): judged by its values, no interval.
    one = p3.paired_ablation([1.0], [0.0], **kw)
    assert one.ci is None and one.min_effect == 0 and one.verdict == "within"


# --------------------------------------------------------------------------- referee pass


def _f4_raw(stems: dict[str, tuple[float, float]]) -> pl.DataFrame:
    """measure()'s rows for each stem (F1, F2 throughput at every F2 RTT ≥ 50 ms), 5 seeds."""
    rows = []
    for stem, (f1, f2) in stems.items():
        for r in (0.05, 0.1, 0.2):
            for seed in range(1, 6):
                for agg, v in (("F1", f1), ("F2", f2)):
                    rows.append({"conditioner": stem, "f2_rtt": r, "seed": seed,
                                 "aggregate": agg, "mbps": v + 0.01 * seed * (agg == "F1"),
                                 "timeouts": 0, "mean_cwnd_bytes": 1.0, "drop_ratio": 0.1,
                                 "dp0_cir": 1.0, "dp2_out": 0.5})  # fmt: skip
    return pl.DataFrame(rows)


F4_STEMS = {"rtt": (1.9, 7.5), "rtt-fig1": (1.5, 8.0), "rtt-rto": (4.5, 4.9),
            "rtt-sw": (5.2, 4.4), "rtt-rto-srtt": (4.1, 5.3), "rtt-rto-literal": (4.5, 5.0),
            "rtt-rto-capped": (4.5, 4.9), "standard": (4.7, 4.5),
            "rtt-sw-cir": (1.9, 7.6)}  # fmt: skip


def test_fig4_dp0_rule_is_a_reading_argued_from_the_text_not_chosen_by_the_numbers():
    # Rule 4: the old comparison "|ours − paper| with Fig. 1's (1 − p)² above with the
    # text's 1 − p" chose the text's rule because it lands nearer the paper's 2.3 Mb/s.
    comps, readings, _ = p3.f4_judged(_f4_raw(F4_STEMS))
    assert not any("ours − paper" in c.quantity for c in comps)
    dp0 = [r for r in readings if r.reading.knob == "dp0"]
    assert [(r.reading.name, r.reading.headline) for r in dp0] == [("text", True),
                                                                   ("figure", False)]  # fmt: skip
    assert "with probability (measuredRate − targetRate)/measuredRate" in dp0[0].reading.argued
    assert "2.3" not in dp0[0].reading.argued and "7.52" not in dp0[0].reading.argued
    # The same claims under both readings, side by side.
    tails = [[c.quantity.split(", F2 RTT")[1] for c in r.comparisons] for r in dp0]
    assert tails[0] == tails[1] and len(tails[0]) == 3
    assert [c.ref.x for c in dp0[1].comparisons[:2]] == [2.3, 7.52]


def test_fig4_rtt_rto_twin_is_rtt_rto_without_its_rto_term():
    # The old twin was the standard TSW3CM (no RTT awareness at all): with the standard
    # marker as even as RTT-RTO it said the RTO term did nothing.
    _, _, abl = p3.f4_judged(_f4_raw(F4_STEMS))
    rto = next(a for a in abl if a.claim.startswith("RTT-RTO"))
    assert rto.twin_changes == p3.RTO_TERM_OFF and rto.effect_without == 0.0
    assert rto.verdict == "within"  # RTT-RTO's imbalance is below basic's on every seed


def _f6_per(jains: dict[tuple[str, str], list[float]]) -> pl.DataFrame:
    """Per-seed rows whose five aggregates give each (topology, conditioner) about the
    share pattern ``jains`` names: [long mbps, short mbps]."""
    rows = []
    for (topo, stem), (lo, sh) in jains.items():
        for seed in range(1, 6):
            for agg in p3.MD_FLOWS:
                v = (lo if agg in ("F1", "F2") else sh) + 0.01 * seed
                rows.append({"topology": topo, "conditioner": stem, "seed": seed,
                             "aggregate": agg, "rtt_ms": 1000 * p3.md_rtt(agg), "mbps": v,
                             "timeouts": 0, "dp0_cir": 1.0})  # fmt: skip
    return pl.DataFrame(rows)


def test_fig6_counterfactual_measures_the_comparisons_own_quantity():
    # "RTT-RTO is the fairest" is decided against the basic marker in the headline
    # topology; the old counterfactual recomputed the fairest other marker in the middle
    # topology (RTT-SW there) and so measured RTT-RTO − RTT-SW, another quantity.
    shares = {"standard": (2.0, 4.0), "rtt": (1.8, 5.0), "rtt-rto": (1.3, 6.0),
              "rtt-sw": (1.7, 6.0), "rtt-sw-cir": (1.8, 5.0)}  # fmt: skip
    middle = {"standard": (3.0, 3.2), "rtt": (4.2, 1.0), "rtt-rto": (3.2, 3.1),
              "rtt-sw": (3.1, 3.3)}  # fmt: skip
    per = _f6_per({("all", s): v for s, v in shares.items()}
                  | {("middle", s): v for s, v in middle.items()})  # fmt: skip
    _, out = p3.f6_judged(per)
    fair = next(c for c in out.comparisons if c.quantity.startswith("RTT-RTO: Jain"))
    assert fair.ref.b_name == "basic RTT"

    def jain(stem: str) -> float:
        lo, sh = middle[stem]
        return p3._jain([lo, lo, sh, sh, sh])

    cf = fair.explanation.counterfactual.value
    assert abs(cf - (jain("rtt-rto") - jain("rtt"))) < 0.01
    assert abs(cf - (jain("rtt-rto") - jain("rtt-sw"))) > 0.05
    mid = next(r for r in out.readings if r.reading.name == "only the middle link congested")
    assert any(c.quantity == fair.quantity and c.ours == cf for c in mid.comparisons)
    twins = {a.claim: a.twin_changes for a in out.ablations}
    assert twins["RTT-RTO marking makes the five aggregates' shares the fairest"] == (
        p3.RTO_TERM_OFF
    )


class _Jobs(Exception):
    """Raised by :class:`_Ctx` with the jobs an experiment asked for."""


class _Ctx:
    """A context that records the runs an experiment asks for and stops it there."""

    def __init__(self, quick: bool):
        self.quick, self.paper_only = quick, False

    def scenario(self, rel: str) -> str:
        return rel

    def run_many(self, jobs):
        raise _Jobs(list(jobs))


def test_fig6_quick_mode_runs_full_modes_runs():
    # Fig. 6's claims are seed-paired orders: quick mode's one seed made them ties where
    # full mode's five decide them (a quick verdict other than full mode's).
    runs = {}
    for quick in (True, False):
        with pytest.raises(_Jobs) as e:
            p3.f6(_Ctx(quick))
        runs[quick] = [(j.scenario, j.overrides, j.seed) for j in e.value.args[0]]
    assert runs[True] == runs[False] and {s for _, _, s in runs[True]} == set(range(1, 6))

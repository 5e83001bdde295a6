"""P1 (TRC): parameters through the binding, the Fig. 4 table, scenarios, warnings,
and (slow) the reproduction's acceptance on short runs."""

from __future__ import annotations

import math

import polars as pl
import pytest

import qoslab
from conftest import cli, report_text
from qoslab.reproduce import Bound, Comparison, Value, p1, scenarios_dir
from qoslab.trc import cycle, cycle_time, fig4_table, fitted_models, model_name, parameters


def test_w_max_5_and_the_rtt_min_branch_by_hand():
    # Eq. 2: W_max = 5 → 1/p = 13.625 → p = 0.0734 (paper: 0.0735).
    assert abs(1 / (3 / 8 * 25 + 5 / 4 * 5 - 2) - 0.0735) < 2e-4
    # 10 Mb/s, MSS 1460, RTT_net 3 ms, paper model: W_max 244.5, RTT ≈ 200.69 ms.
    p = parameters(10e6, rtt_net=0.003, model="paper")
    assert p["branch"] == "rtt_min" and p["w_max"] == 244.5
    data = 3 / 8 * 244.5**2 + 5 / 4 * 244.5 - 2
    rtt = data / (2.5 + 244.5 / 2) * 1460 * 8 / 10.6e6
    assert math.isclose(p["rtt"], rtt, rel_tol=1e-12)
    assert math.isclose(p["rtt_trc"], rtt - 0.003, rel_tol=1e-12)
    assert math.isclose(p["p"], 1 / data, rel_tol=1e-12)
    assert p["buffer"] == 245
    # 100 kb/s: the delay branch, W_max 6.5.
    q = parameters(100e3, rtt_net=0.003, model="paper", mss=1000)
    assert q["branch"] == "delay" and q["w_max"] == 6.5
    assert math.isclose(q["rtt"], 21.96875 / 5.75 * 8000 / 106e3, rel_tol=1e-12)


def test_models_and_errors():
    assert cycle_time("paper") == (2.5, 0.5)
    a, b = cycle_time("fitted", tcp=p1.P1_TCP)
    assert 2.0 < a < 3.0 and 0.45 < b < 0.55
    assert cycle_time("fitted", ecn=True, tcp=p1.P1_TCP)[0] > a
    with pytest.raises(ValueError, match="model"):
        parameters(1e6, model="ns2")
    with pytest.raises(ValueError):
        parameters(0.0)


def test_the_model_is_chosen_by_the_flows_tcp():
    assert model_name() == "newreno-flight-lt-nodelack"
    assert model_name(p1.P1_TCP) == "sack-window-nolt-nodelack"
    assert model_name({"variant": "reno", "delayed_ack": True}) == "reno-flight-nolt-delack"
    # SACK's two flight rules are two models; for the other variants "pipe" is FlightSize.
    assert model_name({"variant": "sack", "halve": "pipe"}) == "sack-pipe-lt-nodelack"
    assert model_name({"halve": "pipe"}) == "newreno-flight-lt-nodelack"
    models = fitted_models()
    sack, pipe = (models[f"sack-{h}-lt-nodelack"]["drop"] for h in ("flight", "pipe"))
    assert sack != pipe and sack[3] == 8.5 and pipe[3] == 6.5  # (a, b, knots, w_first)
    ps = {}
    for tcp in (None, p1.P1_TCP, p1.SACK_DEFAULT_TCP):
        name = model_name(tcp)
        p = parameters(100e3, rtt_net=0.003, tcp=tcp)
        law = (p["a"], p["b"], p["knots"], p["w_first"])
        assert p["tcp"] == name and law == models[name]["drop"]
        assert p["w_max"] == p["w_first"]  # 100 kb/s: the delay branch at the first W_max
        ps[name] = p["rtt"]
    assert len(set(ps.values())) == 3, ps  # three TCPs, three delays for one request
    # A TCP without a fitted model: an error naming the nearest fitted configuration.
    with pytest.raises(ValueError, match=r'the nearest, "sack-window-nolt.*qoslab trc fit'):
        parameters(1e6, tcp={**p1.P1_TCP, "recovery": "prr"})
    # A named model fitted to another TCP is refused.
    with pytest.raises(ValueError, match=r"tcp\.variant = sack"):
        parameters(100e3, rtt_net=0.003, model="sack-window-nolt-nodelack")


def test_fitted_models_are_reproduced_from_their_committed_data():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "validation" / "trc_model_fit.py"
    spec = importlib.util.spec_from_file_location("trc_model_fit", path)
    fit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fit)
    models = fit.fits()
    assert {"newreno-flight-lt-nodelack", "sack-window-nolt-nodelack"} <= set(models)
    engine = fitted_models()
    assert list(engine) == [n for n, m in models.items() if "drop" in m]
    for name, m in models.items():
        for mode, f in m.items():
            a, b, knots, w_first = engine[name][mode]
            assert (a, b, [tuple(k) for k in knots]) == (f["a"], f["b"], f["knots"]), name
            assert w_first == f["w_first"], name
            # conservative: no measured cycle longer than the model's (the engine's own
            # cycle time, knots included), up to the constants' 4-decimal rounding (b's
            # rounding times W_max = 200.5 can reach 1e-4 of the cycle)
            for r in f["rows"]:
                if r["w_max"] < w_first:  # the law does not describe it; the TRC never runs it
                    continue
                tcp = {**fit.tcp_settings(name), "initial_window": 1}
                if f["by_rtt"]:
                    # a law measured per RTT is its points: the engine returns each one
                    t = cycle(r["w_max"], model=name, ecn=mode == "ecn", tcp=tcp, rtt=r["rtt"])
                    assert abs(r["cycle_rtts"] / t - 1) < 1e-9, (name, mode, r["w_max"], r["rtt"])
                    continue
                t = cycle(r["w_max"], model=name, ecn=mode == "ecn", tcp=tcp)
                ratio = r["cycle_rtts"] / t
                assert ratio <= 1 + 2e-4, (name, mode, r["w_max"], ratio)
                # and close where the law is W_max alone: not with delayed ACKs, nor for
                # Linux senders (their receivers delay ACKs; CUBIC grows in wall time),
                # whose cycles in RTTs also depend on the RTT
                if "delack" not in name and not name.startswith("linux-"):
                    assert ratio >= 1 / 1.06, (name, mode, r["w_max"], ratio)
    assert all(p.read_text() == t for p, t in fit.model_files(models).items())


def test_fig4_table_and_cli():
    t = fig4_table()  # the default TCP's model, whose first W_max is 8.5
    assert t.height == 12 and t["w_max"].min() == fitted_models()[model_name()]["drop"][3] == 8.5
    assert fig4_table(model="paper")["w_max"].min() == 6.5
    assert (t["rtt_ms"] >= 200.0 - 1e-9).all()  # RTT_min = 200 ms with RTT_net = 0
    out = cli("trc-table", "50k", "10M", "--model", "paper")
    assert out.returncode == 0, out.stderr
    assert "244.5" in out.stdout and "rtt_min" in out.stdout


def test_committed_scenarios_match_the_generator():
    for rel, data in p1.specs().items():
        path = scenarios_dir() / rel
        assert path.read_text() == p1.to_toml(data, p1.HEADER), f"regenerate {rel}"
        qoslab.check(path)


def _one_flow(rate: str, queue: int, **trc) -> dict:
    sc = qoslab.scenario.load(scenarios_dir() / "p1" / "f6b.toml").data
    sc = {**sc, "duration": "120s", "warmup": "20s"}
    sc.pop("sweep", None)
    sc["flow"] = [{**sc["flow"][0], "start_jitter": "0s"}]
    sc["conditioner"] = [
        {"at": "s", "stages": [{"kind": "trc", "flow": "f1", "rate": rate, **trc}]}
    ]
    sc["link"] = [dict(x) for x in sc["link"]]
    sc["link"][1]["queue"] = {"kind": "droptail", "limit": queue}
    return sc


def test_run_summary_warns_about_a_small_core_queue():
    res = qoslab.run(_one_flow("10Mbps", 100))
    assert any("r0->r1" in w and "172.25" in w for w in res.summary["warnings"])
    res = qoslab.run(_one_flow("1Mbps", 100))
    assert res.summary["warnings"] == []
    trc = res.table("trc")
    assert trc["buffer_full"][0] == 0 and trc["max_held"][0] <= 27


def test_admission_error_names_the_key():
    sc = _one_flow("175Mbps", 300)  # ρ·BW = 170 Mb/s
    sc["flow"][0]["tcp"] = {**sc["flow"][0]["tcp"], "max_window": 100_000}
    with pytest.raises(qoslab.ScenarioError) as e:
        qoslab.run(sc)
    assert e.value.key == "conditioner[0].stages[0].rate"
    assert "admission" in str(e.value)


def test_ecn_mode_drops_nothing_end_to_end():
    sc = _one_flow("500kbps", 300, ecn=True)
    sc["flow"][0]["tcp"] = {**sc["flow"][0]["tcp"], "ecn": True}
    res = qoslab.run(sc)
    assert res.drops.is_empty() or res.drops["packets"].sum() == 0
    assert res.table("trc")["marked"][0] > 0
    g = res.flows["goodput_bps"][0]
    assert 500e3 <= g <= 550e3


@pytest.mark.slow
def test_no_bias_by_rate_or_rtt_on_short_runs():
    # 400 s, one seed: every flow of T3 and T4 (50 kb/s … 10 Mb/s, RTT 3 … 500 ms)
    # between 1.0 and 1.1 × requested.
    for rel in ("p1/t3.toml", "p1/t4.toml"):
        sc = qoslab.scenario.load(scenarios_dir() / rel)
        res = qoslab.run(sc, {"duration": "600s"})
        req = p1.requested_rates(sc.data)
        f = res.flows.with_columns(
            (
                pl.col("goodput_bps") / pl.col("name").replace_strict(req, return_dtype=pl.Float64)
            ).alias("ratio")
        )
        assert f["ratio"].min() >= 1.0, f
        assert f["ratio"].max() <= 1.10, f


def _cells():
    for tab in (p1.PAPER_T1, p1.PAPER_T2):
        for row in tab.values():
            yield from row.values() if isinstance(row, dict) else row
    yield from p1.PAPER_T3
    yield from p1.PAPER_T4


def test_paper_tables_are_means_with_their_intervals():
    # Every mean printed above an interval is that interval's midpoint, to the printed
    # precision: the reading of the tables (29 cells), typo fixed (10492.4, not 1049.24).
    both = [p1.paper_cell(c) for c in _cells() if "|" in c]
    assert len(both) == 29
    for mean, lo, hi in both:
        # printed with 5–6 significant digits: the midpoint rounded differs by < 1e-5
        assert lo < mean < hi and abs(mean - (lo + hi) / 2) <= 1e-5 * mean, (mean, lo, hi)
    # The 124 ms row at 50 Mb/s is its own (not the 1.5 ms row's intervals).
    assert p1.paper_cell(p1.PAPER_T1[(50, 124)][10000]) == (10504.5, 10500.8, 10508.2)
    assert p1.paper_cell(p1.PAPER_T1[(50, 1.5)][10000]) == (10495.9, 10492.4, 10499.4)
    assert p1.paper_cell(p1.PAPER_T1[(50, 124)][50]) == (53.718, 53.713, 53.723)
    # Table 2's 2 Mb/s row is means with intervals; the 10 Mb/s row is a mean line only.
    assert p1.paper_cell(p1.PAPER_T2[(2, 100)][0]) == (105.231, 105.179, 105.283)
    assert p1.paper_cell(p1.PAPER_T2[(10, 100)][0]) == (107.263, None, None)
    assert p1._paper_range("107.263") == (107.263, 107.263)


def test_mean_comparison_carries_both_intervals():
    row = {"mean_kbps": 104.0, "ci95_kbps": 0.5, "runs": 10}
    c = p1._mean_comparison("x", row, "105.231|105.179-105.283", 100)
    assert c.ref.x == 105.231 and c.verdict == "within"
    assert "± 0.500 (95 % CI, n = 10)" in c.note and "[105.179–105.283]" in c.note
    assert (
        p1._mean_comparison("x", {**row, "mean_kbps": 100.0}, "105.231", 100).verdict == "outside"
    )
    # a paper cell below its target R·1.06: the explanation is attached, but no run of
    # ours removes its cause (the paper's runs), so the miss stays outside
    c = p1._mean_comparison("x", {**row, "mean_kbps": 10698.0}, "10270.3-10405.5", 10000)
    assert c.verdict == "outside"
    assert c.explanation.why == p1.LARGE_BELOW_TARGET.why
    assert c.explanation.counterfactual.value is None
    # inside its band: no explanation attached
    assert (
        p1._mean_comparison(
            "x", {**row, "mean_kbps": 10500.0}, "10270.3-10405.5", 10000
        ).explanation
        is None
    )


def test_one_trc_per_flow(tmp_path):
    sc = _one_flow("1Mbps", 300)
    # A second TRC for f1 on the router (its own chain): refused, naming the key.
    sc["conditioner"].append(
        {"at": "r0", "stages": [{"kind": "trc", "flow": "f1", "rate": "1Mbps"}]}
    )
    with pytest.raises(qoslab.ScenarioError) as e:
        qoslab.run(sc)
    assert e.value.key == "conditioner[1].stages[0].flow"
    assert "already has a TRC at conditioner[0].stages[0]" in str(e.value)
    # Two stages of one chain: the same.
    sc["conditioner"] = [
        {"at": "s", "stages": [{"kind": "trc", "flow": "f1", "rate": "1Mbps"}] * 2}
    ]
    with pytest.raises(qoslab.ScenarioError, match="one TRC"):
        qoslab.run(sc)


def test_tables_2_to_4_run_at_the_papers_load():
    # ρ = 0.85 (§5.5): the table's flows, then copies of them up to 0.85·BW.
    fl = [(100e3, d) for d in p1.T2_DELAYS]
    out = p1.loaded(fl, 2e6)
    assert out[:7] == fl and set(out) == set(fl)
    assert sum(r for r, _ in out) == pytest.approx(1.7e6)
    t3 = p1.specs()["p1/t3-rho85.toml"]
    total = sum(p1.requested_rates(t3).values())
    assert 0.85 * 50e6 - 50e3 < total <= 0.85 * 50e6  # within the smallest request
    light = p1.specs()["p1/t3.toml"]
    assert t3["flow"][:9] == light["flow"] and t3["link"][:9] == light["link"][:9]


def test_explanations_are_tested_by_their_counterfactual_runs():
    # No P1 explanation accepts a band of its own: each is judged by the run that
    # removes its cause, attached only where the comparison misses.
    from pathlib import Path

    from qoslab.reproduce import Comparison, Explanation

    exps = [v for v in vars(p1).values() if isinstance(v, Explanation)]
    assert len(exps) >= 9
    assert all(e.counterfactual is None for e in exps)
    src = Path(p1.__file__).read_text()
    assert "covers=" not in src
    calls = []

    def run(value):
        def f():
            calls.append(value)
            return ("cause removed", value, "qoslab run …")

        return f

    inside = Comparison("worst", 1.01, ref=Bound(at_least=1.0))
    assert p1._explain(inside, p1.T1_QUEUEING, run(1.02)).explanation is None
    assert calls == []  # nothing rerun for a comparison inside its band
    lands = p1._explain(
        Comparison("worst", 0.98, ref=Bound(at_least=1.0)), p1.T1_QUEUEING, run(1.001)
    )
    assert lands.verdict == "outside-explained"
    assert lands.explanation.counterfactual.change == "cause removed"
    # A counterfactual just short of the comparison's own band explains nothing …
    misses = p1._explain(
        Comparison("worst", 0.98, ref=Bound(at_least=1.0)), p1.T1_QUEUEING, run(0.999)
    )
    assert misses.verdict == "outside"
    # … and neither does one that cannot be run (the paper's own runs).
    none = Comparison("T3, 10000 kb/s: mean", 10697.8, ref=Value(10337.9), rtol=p1.PAPER_RTOL)
    assert p1._explain(none, p1.LARGE_BELOW_TARGET, run(None)).verdict == "outside"
    # The band is the comparison's tolerance, not wider: 3 % above the paper's mean.
    edge = Comparison("cell", 110.0, ref=Value(100.0), rtol=p1.PAPER_RTOL)
    assert p1._explain(edge, p1.LARGE_BELOW_TARGET, run(103.1)).verdict == "outside"
    assert p1._explain(edge, p1.LARGE_BELOW_TARGET, run(102.9)).verdict == "outside-explained"


def test_eq1_cells_are_a_reading_beside_the_fitted_headline():
    from qoslab.reproduce import Comparison

    comps = [
        Comparison("T1 2 Mb/s 1.5 ms, 50 kb/s: mean", 53.0, ref=Value(53.2), rtol=0.03),
        Comparison("T1 2 Mb/s 1.5 ms [eq. 1], 50 kb/s: mean", 50.0, ref=Value(53.2), rtol=0.03),
        Comparison("T1: worst achieved / requested", 1.01, ref=Bound(at_least=1.0)),
    ]
    keep, readings = p1._model_readings(comps)
    assert [c.quantity for c in keep] == [comps[0].quantity, comps[2].quantity]
    head, alt = readings
    assert head.reading.headline and head.reading.name == "fitted"
    assert "derived our own model" in head.reading.argued
    assert [c.ours for c in head.comparisons] == [53.0]
    assert [(c.ours, c.verdict) for c in alt.comparisons] == [(50.0, "outside")]
    assert p1._model_readings(keep[:1]) == (keep[:1], [])  # --paper-only: no readings


def test_trc_twins_keep_one_half_of_the_trc():
    data = p1.no_delay_twin()
    stages = [st for c in data["conditioner"] for st in c["stages"]]
    assert len(stages) == len(p1.RATES)
    assert {st["rtt_trc"] for st in stages} == {"0s"}
    # The parameters the flows' own TCP gets (the table's runs), not qoslab's default TCP's.
    tcp = data["flow"][0]["tcp"]
    w = [parameters(r, rtt_net=p1.F7B_RTT_NET, tcp=tcp)["w_max"] for r in p1.RATES]
    assert [st["w_max"] for st in stages] == w
    assert w[:2] == [6.5, 6.5]  # 8.5 for qoslab's default TCP
    qoslab.check(data)
    delay = [st for c in p1.trc_twin("delay")["conditioner"] for st in c["stages"]]
    rtt = [parameters(r, rtt_net=p1.F7B_RTT_NET, tcp=tcp)["rtt_trc"] for r in p1.RATES]
    assert [float(st["rtt_trc"].removesuffix("ms")) / 1e3 for st in delay] == pytest.approx(
        rtt, rel=1e-5
    )
    assert {st["w_max"] for st in delay} == {1999.5}
    qoslab.check(p1.trc_twin("delay"))
    with pytest.raises(ValueError, match="keep"):
        p1.trc_twin("neither")


def test_claims_of_section_4_3_and_fig_5(tmp_path):
    # Cheap experiments (a few seconds): W_max = even + 0.5 vs others, Fig. 5 vs none,
    # ρ and the core-queue rule violated.
    from qoslab.reproduce import run_experiments

    names = ["p1-wmax", "p1-slow-start", "p1-violations"]
    idx = run_experiments(names, tmp_path, quick=True, log=lambda s: None)
    for e in idx["experiments"]:
        assert e["status"] == "done", e.get("error")
        assert {c["verdict"] for c in e["comparisons"]} == {"within"}, e["comparisons"]
        # Each mechanism claim has its ablation twin, and the effect falls without it.
        assert e.get("ablations"), e.get("name")
        assert {a["verdict"] for a in e["ablations"]} == {"within"}, e["ablations"]
    ss = pl.read_parquet(tmp_path / "p1-slow-start" / "table-slow-start.parquet")
    assert ss.filter(~pl.col("control"))["buffer_full"].sum() > 0  # none overflows
    # The paper-form figures: measured ÷ model over W_max, a cwnd sawtooth, Fig. 4.
    from qoslab.report import write_report

    html = report_text(write_report(tmp_path))
    assert "could not be drawn" not in html
    assert len(list((tmp_path / "p1-wmax" / "figures").glob("paper-figure-*.png"))) == 3


def test_counterfactual_reruns_use_the_runs_seed_and_can_miss(tmp_path):
    # ECN_BUFFER's counterfactual reruns each run whose delay buffer overflowed, with its
    # seed and every buffer one packet larger. Without Fig. 5's control the slow start
    # overshoots by far more than one packet, so this counterfactual misses (≠ 0).
    from qoslab.scenario import load

    sc = load(scenarios_dir() / "p1" / "f6b.toml").data
    sc.pop("sweep", None)
    sc = {**sc, "duration": 20.0, "warmup": 0}
    sc["flow"] = [{**sc["flow"][0], "start_jitter": "0s"}]
    stage = {"kind": "trc", "flow": "f1", "rate": "1000kbps", "slow_start": False}
    sc["conditioner"] = [{"at": "s", "stages": [stage]}]
    (tmp_path / "p1").mkdir()
    (tmp_path / "p1" / "ss.toml").write_text(p1.to_toml(sc))

    class Ctx:
        quick = True

        def scenario(self, rel):
            return tmp_path / rel

        def run_many(self, jobs):
            return [qoslab.run(j.scenario, j.overrides, j.seed) for j in jobs]

    trc = qoslab.run(sc, seed=3).tables["trc"]
    assert trc["buffer_full"][0] > 0
    row = {"rel": "p1/ss.toml", "ecn": False, "run": "r3", "seed": 3, "name": "f1",
           "buffer": trc["buffer"][0], "buffer_full": trc["buffer_full"][0]}  # fmt: skip
    # Another sweep's run with the same key but no overflow is not rerun.
    other = {**row, "rel": "p1/other.toml", "buffer_full": 0}
    change, value, _ = p1._buffer_cf(Ctx(), pl.DataFrame([row, other]))
    bigger = qoslab.run(sc, {"conditioner.0.stages.0.buffer": int(trc["buffer"][0]) + 1}, seed=3)
    assert value == bigger.tables["trc"]["buffer_full"][0] > 0
    assert "1 runs" in change
    c = p1._explain(Comparison("ECN buffer-full", 5, ref=Bound(at_most=0)), p1.ECN_BUFFER, lambda: (
        change, value, ""))  # fmt: skip
    assert c.verdict == "outside"
    # No run overflowed: nothing is rerun and nothing overflows.
    change, value, _ = p1._buffer_cf(Ctx(), pl.DataFrame([{**row, "buffer_full": 0}]))
    assert value == 0 and "0 runs" in change


def test_network_drops_count_only_drops_outside_the_trcs():
    class Res:
        def table(self, name):
            return pl.DataFrame({
                "place": ["s", "s", "r0->r1"],
                "cause": ["controlled", "cond_buffer_full", "overflow"],
                "packets": [4, 36, 7],
            })  # fmt: skip

    assert p1._network_drops(Res()) == 7
    data = p1.dumbbell("x", [(1e6, 0.001), (2e6, 0.002)], bottleneck=10e6, access=100e6)
    assert p1.core_index(data) == 2 and data["link"][2]["queue"]["limit"] > 50


def test_f7b_band_is_the_approximation_error_plus_the_papers_3_percent():
    # The exact error at RTT_dev 20 ms is 0.02 / 0.22 = 0.0909, 9.1 % under §5.4's
    # approximation 0.1: the old ±10 % band left 0.9 % for the simulation and judged
    # a value 2 % under the exact one outside.
    near_exact = 0.02 / 0.22 * 0.98
    assert p1.f7b_error_comparison("drop", 0.02, near_exact).verdict == "within"
    assert Comparison("x", near_exact, ref=Value(0.1), rtol=0.10).verdict == "outside"
    # More than 3 % beyond the exact value or the approximation is outside.
    assert p1.f7b_error_comparison("drop", 0.02, 0.02 / 0.22 * 0.96).verdict == "outside"
    assert p1.f7b_error_comparison("drop", 0.02, 0.1 * 1.04).verdict == "outside"
    assert p1.f7b_error_comparison("ecn", 0.005, 0.025).verdict == "within"


def test_f7a_ecn_excess_is_a_fixed_few_packets_that_a_longer_run_spreads():
    # The explanation of F7a's ECN maximum predicts: run to the 12th mark, every rate
    # within 1.03 of its target; to the 2nd mark (the paper's window) it is not.
    two = pl.DataFrame(p1.f7a_rows(True))
    twelve = pl.DataFrame(p1.f7a_rows(True, marks=p1.F7A_MARKS_CF))
    assert two["vs_target"].max() > 1.03
    assert twelve["vs_target"].max() <= 1.03

    # The excess in packets is about the same at both lengths (a fixed number).
    def excess(d: pl.DataFrame) -> float:
        r = d.row(int(d["vs_target"].arg_max()), named=True)
        target = r["goodput_bps"] / r["vs_target"]
        return (r["goodput_bps"] - target) * r["duration_s"] / (1460 * 8)

    assert 2 < excess(two) < 5 and 2 < excess(twelve) < 5
    assert "12th mark" in p1.F7A_ECN.why


def test_ecn_vs_drops_says_how_far_the_two_fitted_models_alone_set_the_modes_apart():
    # Table 1's 250 kb/s flow at 124 ms runs at W_max 10.5 in both modes, where the drop
    # law is 1.7-1.8 % slower than its fitting runs and the ECN law 0.6 %: with no load
    # the models alone put ECN about 1.1 % below drops. The comparison says so.
    rows = {(r["scenario"], r["link.0.delay"]): r for r in p1.model_gap_rows().to_dicts()}
    r = rows[("t1-10mbps", "124ms")]
    assert -1.5 < r["gap_pct"] < -1.0 and "W_max 10.5 with drops, 10.5 with ECN" in r["where"]
    assert all(abs(x["gap_pct"]) < 1.5 for x in rows.values())
    t = pl.DataFrame({"requested": [1.0], "mean_kbps": [100.0]})
    comps: list = []
    p1._ecn_vs_drop(comps, "T1", t, t.with_columns(pl.col("mean_kbps") * 0.988), ["requested"],
                    model_gap=(r["gap_pct"] / 100, r["where"]))  # fmt: skip
    assert "two fitted models" in comps[0].reference and "1.1 % apart" in comps[0].reference
    assert p1.gap_text(None) == ""


def test_models_table_shows_every_built_in_model_by_its_own_law():
    """The table of the fitted models (p1-heldout's trc-models) evaluates each model's
    own law: asking for a SACK model's cycle with qoslab's default TCP (NewReno) is
    refused by the engine, which made p1-heldout fail in quick mode."""
    from qoslab.reproduce.p1 import models_table
    from qoslab.trc import fitted_models, model_cycle

    t = models_table()
    names = set(t["model"].to_list())
    assert names == {"paper", *fitted_models()}
    sack = next(n for n in fitted_models() if n.startswith("sack-"))
    row = t.filter((pl.col("model") == sack) & (pl.col("mode") == "drop")).row(0, named=True)
    w = 10.5
    want = (0.375 * w * w + 1.25 * w - 2) / model_cycle(sack, w) / w
    assert row[f"w_avg/w_max at {w:g}"] == pytest.approx(want, rel=1e-12)
    with pytest.raises(ValueError, match="no built-in TRC model"):
        model_cycle("no-such-model", w)


def test_t1_2mbps_ecn_gap_is_the_slow_bottlenecks_queueing():
    """p1-t1's "T1 2 Mb/s: largest |ECN ÷ drops − 1|" misses (0.028 over 100 seeds, band
    0.01) and RTT_dev = 30 ms did not decide it (0.022). ECN_SLOW_CORE names the cause,
    the ECN flows' longer wait at the 2 Mb/s bottleneck, and its run keeps the load
    fraction on a bottleneck 10 × faster (`p1.fast_core`): on one seed of the 1.5 ms row
    the gap is there at 2 Mb/s and gone at 20 Mb/s. The run changes the bottleneck Table 1
    states, so it is an off-paper counterfactual: it cannot confirm, the verdict stays
    outside (validation/p1_ecn_cause.py → docs/validation/p1-ecn-cause.md)."""
    import tomllib

    data = tomllib.loads((scenarios_dir() / "p1" / "t1-2mbps.toml").read_text())
    fast = p1.fast_core(data, 10)
    core = p1.core_index(data)
    assert fast["link"][core]["rate"] == 10 * data["link"][core]["rate"]
    req, req_fast = p1.requested_rates(data), p1.requested_rates(fast)
    assert len(req_fast) == 10 * len(req) and sorted(set(req_fast.values())) == sorted(req.values())
    load = sum(req.values()) / data["link"][core]["rate"]
    assert sum(req_fast.values()) / fast["link"][core]["rate"] == pytest.approx(load)
    assert fast["sweep"] == data["sweep"] and fast["flow"][4]["name"] == "f1c1"
    qoslab.check(fast)

    def runs(d: dict) -> list[tuple[bool, pl.DataFrame]]:
        out = []
        for ecn in (False, True):
            ov = (p1._ecn_overrides(d) if ecn else {}) | {"duration": "500s"}
            f = qoslab.run({k: v for k, v in d.items() if k != "sweep"}, ov, seed=1)
            f = f.table("flows").select("name", "goodput_bps", pl.lit(1).alias("seed"),
                                        pl.lit("1.5ms").alias("link.0.delay"))  # fmt: skip
            r = p1.requested_rates(d)
            f = f.with_columns(pl.col("name").replace_strict(r, return_dtype=pl.Float64)
                               .alias("requested"))  # fmt: skip
            out.append((ecn, f.with_columns((pl.col("goodput_bps") / pl.col("requested"))
                                            .alias("ratio"))))  # fmt: skip
        return out

    keys = ["link.0.delay", "requested"]
    slow = p1._fast_core_cf(runs(data), keys)[1]
    change, value, command, kind = p1._fast_core_cf(runs(fast), keys)
    assert slow > 0.015 and value < 0.01, (slow, value)
    assert kind == "off-paper" and "10 × faster" in change
    c = Comparison("T1 2 Mb/s: largest |ECN ÷ drops − 1| of the cell means", 0.028, unit="×",
                   ref=Bound(at_most=0.01))  # fmt: skip
    p1._explain(c, p1.ECN_SLOW_CORE, lambda: (change, value, command, kind))
    assert c.explanation.counterfactual.kind == "off-paper" and c.verdict == "outside"
    # The same value from a run that removed the cause and nothing the paper states would
    # confirm: the verdict is held outside by the kind alone.
    ok = Comparison("T1 2 Mb/s: largest |ECN ÷ drops − 1| of the cell means", 0.028, unit="×",
                    ref=Bound(at_most=0.01))  # fmt: skip
    p1._explain(ok, p1.ECN_SLOW_CORE, lambda: (change, value, command))
    assert ok.verdict == "outside-explained"


def test_f7a_ecn_run_to_the_12th_mark_cannot_confirm_its_cause(tmp_path):
    # §5.3 states the run length ("until the second drop"): the run to the 12th mark
    # changes it, so it shows where the claim holds (off-paper) and the ECN maximum
    # stays outside; it used to read outside-explained.
    from qoslab.reproduce import run_experiments

    out = run_experiments(["p1-f7a"], tmp_path, quick=True, log=lambda s: None)
    comps = {c["quantity"]: c for c in out["experiments"][0]["comparisons"]}
    c = comps["F7a ecn: max goodput / target"]
    assert c["explanation"]["counterfactual"]["kind"] == "off-paper"
    assert c["verdict"] == "outside"

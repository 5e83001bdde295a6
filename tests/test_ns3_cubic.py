"""docs/validation/ns3-cubic.md is what validation/ns3_cubic.py makes of its recorded
data (no ns-3 needed), its verdicts follow the bands stated in the script, and the
qoslab side of every case is a CUBIC dumbbell that qoslab accepts."""

from __future__ import annotations

import json
from pathlib import Path

import tomllib

import qoslab
from conftest import load_script

ROOT = Path(__file__).resolve().parents[1]
MOD = load_script(ROOT / "validation" / "ns3_cubic.py")


def test_the_page_is_generated_from_the_data():
    data = json.loads(MOD.DATA.read_text())
    assert MOD.PAGE.read_text() == MOD.page(data)
    assert set(data["cases"]) == set(MOD.CASES)
    for name, runs in data["cases"].items():
        n = MOD.CASES[name][0]
        assert len(runs["qoslab"]) == len(runs["ns3"]) == data["meta"]["seeds"]
        assert all(len(g) == n for side in runs.values() for g in side)


def test_verdicts_follow_the_bands():
    runs = {"qoslab": [[4e6, 2e6]], "ns3": [[4.1e6, 2.0e6]]}
    s = MOD.summarize("2-flows-40-80ms-10M", runs)
    assert s["ok"] == {"total": True, "jain": True, "ranking": True}
    # 10 % less in total misses the 3 % band; swapped classes miss the ranking.
    s = MOD.summarize("2-flows-40-80ms-10M", {"qoslab": [[2e6, 3.4e6]], "ns3": runs["ns3"]})
    assert not s["ok"]["total"] and not s["ok"]["ranking"]
    assert s["qoslab"]["ranking"] == [80, 40]


def test_the_qoslab_side_runs_cubic_with_window_halving():
    text = MOD.qoslab_text("4-flows-20-200ms-50M", 1, 2.0, 1.0)
    sc = tomllib.loads(text)
    tcp = sc["flow"][0]["tcp"]
    assert tcp["cc"] == "cubic" and tcp["halve"] == "window"
    qoslab.check(sc)


def test_every_counterfactual_is_one_change_qoslab_accepts():
    base = tomllib.loads(MOD.qoslab_text("4-flows-20-200ms-50M", 1, 2.0, 1.0))["flow"][0]["tcp"]
    for cf in MOD.COUNTERFACTUALS:
        sc = tomllib.loads(MOD.counterfactual_text("4-flows-20-200ms-50M", 1, 2.0, 1.0, cf))
        tcp = sc["flow"][0]["tcp"]
        changed = {k for k in base.keys() | tcp.keys() if base.get(k) != tcp.get(k)}
        assert len(changed) == 1, (cf, changed)
        cc = tcp["cc"] if isinstance(tcp["cc"], dict) else {"kind": tcp["cc"]}
        assert cc["kind"] == "cubic"
        assert len({k for k in cc if k != "kind"} | (changed - {"cc"})) == 1, cf
        qoslab.check(sc)


def test_ns3_counterfactuals_are_recorded_per_seed_and_flow():
    data = json.loads(MOD.DATA.read_text())
    assert set(data["ns3_counterfactuals"]) == set(MOD.NS3_COUNTERFACTUALS)
    src = (ROOT / "validation" / "ns3" / "dumbbell.cc").read_text()
    for cf, per_case in data["ns3_counterfactuals"].items():
        for arg in MOD.NS3_COUNTERFACTUALS[cf][0]:
            assert f'"{arg[2:].split("=")[0]}"' in src, arg  # the peer takes the flag
        for name, r in per_case.items():
            n = MOD.CASES[name][0]
            assert len(r["ns3"]) == len(r["timeouts"]) == data["meta"]["seeds"]
            assert all(len(g) == n for g in r["ns3"])

"""The mechanisms' promises over random configurations (``qoslab.invariants``): a
CI-sized draw per invariant, shrunk by hypothesis to a small failing scenario when a
promise breaks; the long draw is ``validation/invariants.py`` (its output is
``docs/validation/invariants.md``)."""

from __future__ import annotations

import json
import random
from types import SimpleNamespace

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qoslab.invariants import INVARIANTS, by_name, check_draw

#: Draws per invariant in CI (the slow ones run 60 s scenarios or several seeds).
FAST, SLOW = 40, 12


@pytest.mark.parametrize("inv", INVARIANTS, ids=[i.name for i in INVARIANTS])
def test_promise_holds_over_random_configurations(inv):
    @settings(
        max_examples=inv.ci_draws or (SLOW if inv.slow else FAST),
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(st.randoms(use_true_random=False))
    def prop(rng: random.Random) -> None:
        o = check_draw(inv, rng)
        assert o.status != "violated", (
            f"{inv.name}: {inv.promise} — {o.detail}\nscenario: {json.dumps(o.scenario)}"
        )

    prop()


def _fake(colours: dict[str, int], warnings: list[str] | None = None) -> SimpleNamespace:
    t = pl.DataFrame({"stage": [0], **{f"{c}_bytes": [b] for c, b in colours.items()}})
    return SimpleNamespace(tables={"colours": t}, summary={"warnings": warnings or []})


def test_the_checks_can_fail():
    # A hand-made result one byte over each bound is a violation; on the bound it is not.
    inv = by_name("srtcm-green")
    sc = inv.draw(random.Random(3))
    stg = sc["conditioner"][0]["stages"][0]
    t = float(sc["duration"].removesuffix("s"))
    bound = float(stg["cir"].removesuffix("bps")) / 8 * t + stg["cbs"]
    assert inv.check(sc, [_fake({"green": int(bound), "yellow": 0, "red": 0})]) == []
    assert inv.check(sc, [_fake({"green": int(bound) + 1, "yellow": 0, "red": 0})])
    inv = by_name("trtcm-green-yellow")
    sc = inv.draw(random.Random(4))
    stg = sc["conditioner"][0]["stages"][0]
    t = float(sc["duration"].removesuffix("s"))
    pbound = float(stg["pir"].removesuffix("bps")) / 8 * t + stg["pbs"]
    v = inv.check(sc, [_fake({"green": 0, "yellow": int(pbound) + 1, "red": 0})])
    assert v and "yellow" in v[0]
    # ERUF: no packet policed is a violation unless the run warned.
    inv = by_name("eruf-binds")
    sc = inv.draw(random.Random(5))
    n_cbr = sum(1 for f in sc["flow"] if "cbr" in f)
    eruf = pl.DataFrame({"installed": [n_cbr], "policed": [0]})
    quiet = SimpleNamespace(tables={"eruf": eruf}, summary={"warnings": []})
    warned = SimpleNamespace(tables={"eruf": eruf}, summary={"warnings": ["eruf at r1->r2: …"]})
    assert inv.check(sc, [quiet]) and inv.check(sc, [warned]) == []
    assert inv.warned(sc, [warned]) and not inv.warned(sc, [quiet])


def test_the_warnings_that_replace_a_promise():
    # MulTCP over Reno: the engine warns (the invariant draws NewReno and SACK only).
    import qoslab

    sc = by_name("multcp-monotone").draw(random.Random(1))
    sc["flow"][1]["tcp"]["variant"] = "reno"
    w = qoslab.run(sc).summary["warnings"]
    assert any("MulTCP (w = " in x and "Reno" in x for x in w), w
    sc["flow"][1]["tcp"]["variant"] = "sack"
    assert not any("MulTCP" in x for x in qoslab.run(sc).summary["warnings"])
    # ERUF on a link far faster than the bottleneck: the regulators never act, and
    # the run says so; with link_rate and rtt set as the warning advises, they police.
    inv = by_name("eruf-binds")
    sc = inv.draw(random.Random(9))
    o = check_draw(inv, random.Random(9))
    assert o.status == "warned" and "set `link_rate`" in o.detail
    stg = sc["conditioner"][0]["stages"][0]
    stg["link_rate"] = sc["link"][2]["rate"]
    stg["rtt"] = "15ms"
    r = qoslab.run(sc)
    assert int(r.tables["eruf"]["policed"].sum()) > 0
    assert not any(x.startswith("eruf at ") for x in r.summary["warnings"])


def test_the_trc_check_and_its_refusal_rule_can_fail():
    # The claim's band on a hand-made result: 1.0 and 1.0918 pass, just outside fails.
    inv = by_name("trc-request")
    sc = inv.draw(random.Random(0))
    rate = float(sc["conditioner"][0]["stages"][0]["rate"].removesuffix("bps"))
    trc = pl.DataFrame({"w_max": [6.5], "rtt": [0.2], "model": ["m"]})

    def res(ratio: float) -> SimpleNamespace:
        return SimpleNamespace(flows=pl.DataFrame({"goodput_bps": [ratio * rate]}),
                               tables={"trc": trc}, summary={"warnings": warnings})  # fmt: skip

    warnings: list[str] = []
    assert inv.check(sc, [res(1.0)]) == [] and inv.check(sc, [res(1.03 * 1.06)]) == []
    assert inv.check(sc, [res(0.999)]) and inv.check(sc, [res(1.093)])
    # Outside the band with the run's warning that the model cannot promise it: warned.
    warnings = ['TRC for flow "f": …']
    assert inv.check(sc, [res(1.093)]) == [] and inv.warned(sc, [res(1.093)])
    # A TCP with no built-in model is refused naming `qoslab trc fit`; a refusal that
    # names no way on is a violation.
    reno = {"variant": "reno", "max_window": 2000}
    from qoslab.invariants import Invariant, trc_scenario

    def draw(rng):
        return trc_scenario(reno, 300e3, 5.0)

    o = check_draw(Invariant("t", "trc", "", "", draw, inv.check, refusal_names="qoslab trc fit"),
                   random.Random(0))  # fmt: skip
    assert o.status == "refused", o.detail
    o = check_draw(Invariant("t", "trc", "", "", draw, inv.check, refusal_names="no such hint"),
                   random.Random(0))  # fmt: skip
    assert o.status == "violated" and "refused without naming" in o.detail

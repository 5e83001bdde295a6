"""P2's repetition with other TCP variants (P2 §3, footnote 5 and the TCP-only claim):
"We repeated the entire core set of experiments with TCP Tahoe, Reno and Vegas but saw
no significant difference", and ERUF "did not cause more than one additional packet drop
in any experiment" with Reno/Tahoe/Vegas/SACK.

qoslab runs the dumbbell of Fig. 1 at the sweep's top rate (2 Mb/s of CBR) and the
TCP-only topology with every loss-recovery variant it has (Tahoe, Reno, NewReno, SACK;
Vegas is not built, so it is absent). The scenarios are those of :mod:`qoslab.reproduce.p2`
with only ``tcp.variant`` changed.
"""

from __future__ import annotations

import copy
from typing import Any

import polars as pl

from qoslab.api import run
from qoslab.reproduce import Bound, Comparison, Context, Outcome, Value, register
from qoslab.reproduce.p2 import (
    ACTED,
    EDGES,
    _short,
    dumbbell,
    eruf_counters,
    measure,
    tcp_only,
    with_total,
)

#: qoslab's loss-recovery variants (Vegas, which the paper also ran, is not built).
VARIANTS = ["tahoe", "reno", "newreno", "sack"]
#: The dumbbell's total CBR rate [kb/s]: the top of the paper's sweep.
TOP_KBPS = 2000.0
#: TCP-only runs: flows and seeds per variant.
TCP_ONLY_N = 5
SEEDS, QUICK_SEEDS = 5, 2
#: Why the dumbbell's gain is an info row.
COLLAPSED = (
    "info: the no-ERUF baseline collapses (TCP ≈ 10 kb/s at 2 Mb/s of CBR for every "
    "variant, see p2-f1's baseline), so any ERUF that lets TCP through passes '≥ 2'; "
    "the variants are compared with ERUF instead (÷ SACK's)"
)
#: "No significant difference": each variant's TCP goodput with ERUF within this share of
#: SACK's (qoslab's tolerance; the paper gives no number).
SAME_RTOL = 0.25


def with_variant(data: dict[str, Any], variant: str) -> dict[str, Any]:
    """``data`` with every TCP flow's loss recovery set to ``variant``."""
    d = copy.deepcopy(data)
    for f in d["flow"]:
        if "tcp" in f:
            f["tcp"]["variant"] = variant
    return d


def _dumbbell_rows(ctx: Context) -> list[dict[str, Any]]:
    rows = []
    for v in VARIANTS:
        m = {}
        for eruf in (False, True):
            d = with_variant(with_total(_short(dumbbell(eruf), ctx), TOP_KBPS), v)
            m[eruf] = measure(run(d), EDGES["f1"])
        rows.append({
            "variant": v,
            "tcp_kbps_plain": m[False]["tcp_kbps"],
            "tcp_kbps_eruf": m[True]["tcp_kbps"],
            "gain": m[True]["tcp_kbps"] / max(m[False]["tcp_kbps"], 1e-9),
            "edge_drops_per_s": m[True]["edge_drops_per_s"],
            "core_drops_per_s": m[True]["core_drops_per_s"],
        })  # fmt: skip
    return rows


def _tcp_only_rows(ctx: Context) -> list[dict[str, Any]]:
    rows = []
    for v in VARIANTS:
        for seed in range(1, (QUICK_SEEDS if ctx.quick else SEEDS) + 1):
            res = {
                eruf: run(with_variant(_short(tcp_only(TCP_ONLY_N, eruf), ctx), v), seed=seed)
                for eruf in (False, True)
            }
            m = {eruf: measure(r, EDGES["tcp"]) for eruf, r in res.items()}
            rows.append({"variant": v, "seed": seed,
                         "extra_drops": m[True]["drops"] - m[False]["drops"],
                         "ratio": m[True]["tcp_kbps"] / m[False]["tcp_kbps"],
                         "policed": eruf_counters(res[True])["policed"]})  # fmt: skip
    return rows


@register("p2-variants", title="ERUF with TCP Tahoe, Reno, NewReno and SACK",
          paper="P2 §3, footnote 5")  # fmt: skip
def variants(ctx: Context) -> Outcome:
    db = pl.DataFrame(_dumbbell_rows(ctx))
    to = pl.DataFrame(_tcp_only_rows(ctx))
    sack = float(db.filter(pl.col("variant") == "sack")["tcp_kbps_eruf"][0])
    comps = []
    for r in db.iter_rows(named=True):
        v = r["variant"]
        share = r["edge_drops_per_s"] / (r["edge_drops_per_s"] + r["core_drops_per_s"])
        worst = to.filter(pl.col("variant") == v)
        acted = worst.filter(pl.col("policed") >= 1)
        judged = acted if acted.height else worst
        comps += [
            Comparison(f"{v}: TCP gain with ERUF, dumbbell at 2 Mb/s CBR", r["gain"],
                       unit="×", note=COLLAPSED),
            Comparison(f"{v}: share of drops at the edge with ERUF", share,
                       ref=Bound(at_least=0.8, against="drops move to the edge (Fig. 1)")),
            Comparison(f"{v}: extra drops with ERUF, TCP only, worst seed in which the "
                       "regulators dropped a packet",
                       float(judged["extra_drops"].max()), unit="packets",  # type: ignore[arg-type]
                       ref=Bound(at_most=1.0, against="the paper: 'not more than one'"),
                       note=f"{acted.height} of {worst.height} seeds had a regulator drop",
                       acted=(ACTED, float(acted.height))),
        ]  # fmt: skip
        if v != "sack":
            same = Comparison(f"{v}: TCP with ERUF ÷ SACK's", r["tcp_kbps_eruf"] / sack,
                              ref=Value(1.0), unit="×", rtol=SAME_RTOL,
                              note="'no significant difference' between variants")  # fmt: skip
            comps.append(same)
    return Outcome(comparisons=comps, tables={"dumbbell": db, "tcp_only": to})

"""P0 on real TCP: the server's aggregate policies applied to Linux TCP connections.

P0's prototype rate-controlled real TCP connections at a server (P0 §6). Here the four
connections of P0's experiments (base RTTs 50, 300, 300 and 600 ms, client links of 500
kb/s each: the "equal" scenarios of ``scenarios/p0/``) are Linux connections between
network namespaces, Reno (the paper's era) and CUBIC (Linux's default) in turn (live
mode, ``docs/live.md``), and the aggregate policy (640 kb/s, 40 KB) runs in qoslab's
datapath at the server's edge: every data segment the server's TCP releases passes
through the aggregate's QoS manager (the ``send`` trigger), every ACK written to the
server is the ``ack`` trigger, and the 15 ms shaping timer is the datapath's. Each
policy runs ``RUNS`` times live beside its simulated twin (``qoslab live --twin``:
qoslab's TCP set as close to Linux's as it goes, its Reno or its CUBIC as the hosts run)
and the comparisons put the live mean against the twin's; an ablation twin (no aggregate
control, P0 Fig. 3) must make the fairness and the total held to the rate vanish.

Not run: the aggregate-fair increase (``tcp.cc``, P0 §5) changes the sender's window
rule, which Linux's TCP does not have; the ``idle_ack`` and ``closed_send`` triggers
(P0 §6.3) are events inside the sender's stack that the datapath cannot see (live mode
refuses them, naming the key). ``qoslab reproduce p0-live`` needs root and
``/dev/net/tun``; elsewhere it is skipped with the reason. It is not part of
``reproduce --all`` (it runs in real time: about 16 minutes in quick mode).
"""

from __future__ import annotations

import copy
import itertools
import math
from typing import Any

import polars as pl

from qoslab.reproduce import (
    LIVE_SPIN,
    Ablation,
    Bound,
    Comparison,
    Context,
    Outcome,
    Value,
    mean_interval,
    p0,
    register,
    require_live,
)
from qoslab.twin import jain

#: The aggregate's rate r_m (the P0 scenarios' profile).
RATE = 640e3
#: The server's access link (the bottleneck without aggregate control).
LINK = 1e6
#: Linux's payload per 1500-byte packet with timestamps: goodput × 1500/1448 is the
#: rate at the IP level, where the tokens are counted.
IP_PER_PAYLOAD = 1500 / 1448

#: The hosts' congestion controls, each run through every policy: Linux Reno (as P0's
#: TCP) and CUBIC (Linux's default, which a server's TCP runs today).
CCS = ("reno", "cubic")

#: label → (P0 scenario, paper figure, the paper's Jain index for the policy or None).
POLICIES: dict[str, tuple[str, str, float | None]] = {
    "off": ("f3-equal.toml", "F3", None),
    "partitioned-shape": ("f4-rtt-depth.toml", "F4", 0.996),
    "common-lru-shape": ("f7-lru.toml", "F7", 0.95),
    "logical-shape": ("f10-equal.toml", "F10", 0.996),
    "partitioned-police": ("f6-equal.toml", "F6", None),
}
#: The shaping policies → the mechanism each ablation twin switches off.
SHAPING = {
    "partitioned-shape": "partitioned shaping (P0 §4.2.1)",
    "common-lru-shape": "the common bucket served LRU (P0 §4.2.2)",
    "logical-shape": "logical partitions (P0 §4.2.3)",
}


def label_of(policy: str, cc: str) -> str:
    """A policy's label for hosts running ``cc``: the policy's own for Reno (the labels of
    the data before CUBIC ran), ``"<policy> (cubic)"`` otherwise."""
    return policy if cc == "reno" else f"{policy} ({cc})"


def scenario_data(
    ctx: Context, file: str, duration: str, warmup: str, cc: str = "reno"
) -> dict[str, Any]:
    """A P0 scenario made live: Linux ``cc`` (Reno or CUBIC) at the hosts, a shorter run
    with a warm-up, the datapath spinning before its events (``LIVE_SPIN``)."""
    from qoslab.scenario import load

    data = copy.deepcopy(dict(load(ctx.scenario(f"p0/{file}")).data))
    data["name"] = f"p0-live-{file.removesuffix('.toml')}" + ("" if cc == "reno" else f"-{cc}")
    data["duration"] = duration
    data["warmup"] = warmup
    data["live"] = {"cc": cc, "spin": LIVE_SPIN}
    return data


def _metrics(res: Any, sim: bool) -> dict[str, float]:
    """Jain's index over the four clients' goodputs, total and compliant ÷ rate."""
    twin = res.tables["twin"]
    rows = twin.filter(pl.col("flow") != "(total)")
    g = rows["sim_bps" if sim else "live_bps"].to_list()
    r = res.twin if sim else res
    dur = float(r.summary.get("duration") or math.nan)
    q = r.tables.get("qosmgr")
    # Compliant throughput (P0 §4.1): marked bytes delivered; only a policer marks.
    marking = q is not None and int(q["marked_bytes"].sum()) > 0
    compliant = float(q["marked_delivered_bytes"].sum()) * 8 / dur / RATE if marking else math.nan
    return {
        "jain": jain(g),
        "minmax": min(g) / max(g) if max(g) > 0 else math.nan,
        "total": sum(g) * IP_PER_PAYLOAD / RATE,
        "compliant": compliant,
    }


@register(
    "p0-live",
    title="P0 on real TCP: aggregate policies on Linux Reno and CUBIC",
    paper="P0 §6",
    in_all=False,
)
def p0_live(ctx: Context) -> Outcome:
    """Every policy RUNS times live with its twin; live vs twin, ablation by policy off."""

    require_live()
    runs = 3 if ctx.quick else 5
    duration, warmup = ("30s", "8s") if ctx.quick else ("120s", "20s")
    per_run: list[dict[str, Any]] = []
    vals: dict[str, dict[str, list[float]]] = {}
    for cc, (policy, (file, _fig, _)) in itertools.product(CCS, POLICIES.items()):
        label = label_of(policy, cc)
        data = scenario_data(ctx, file, duration, warmup, cc)
        for seed in range(1, runs + 1):
            run_name = f"{policy}-s{seed}" if cc == "reno" else f"{policy}-{cc}-s{seed}"
            res = ctx.live(data, seed, run_name, twin=True)
            lv, tw = _metrics(res, False), _metrics(res, True)
            p99 = float(res.summary.get("live_lateness_p99_us", math.nan))
            per_run.append({
                "policy": label, "cc": cc, "seed": seed,
                "jain_live": lv["jain"], "jain_twin": tw["jain"],
                "total_live": lv["total"], "total_twin": tw["total"],
                "compliant_live": lv["compliant"], "compliant_twin": tw["compliant"],
                "minmax_live": lv["minmax"], "minmax_twin": tw["minmax"],
                "timing_ok": bool(res.summary.get("live_timing_ok")), "p99_us": p99,
            })  # fmt: skip
            v = vals.setdefault(label, {})
            for k, x in per_run[-1].items():
                if isinstance(x, float):
                    v.setdefault(k, []).append(x)
    runs_df = pl.DataFrame(per_run)
    summary_rows, comps = [], []
    for cc, (policy, (_file, fig, paper_jain)) in itertools.product(CCS, POLICIES.items()):
        label = label_of(policy, cc)
        v = vals[label]
        valid = int(runs_df.filter(pl.col("policy") == label)["timing_ok"].sum())
        row: dict[str, Any] = {"policy": label, "cc": cc, "paper": fig, "runs": runs,
                               "timing_valid": valid}  # fmt: skip
        for k in ("jain", "total", "compliant"):
            for side in ("live", "twin"):
                xs = v[f"{k}_{side}"]
                if any(math.isnan(x) for x in xs):
                    row[f"{k}_{side}"] = row[f"{k}_{side}_lo"] = row[f"{k}_{side}_hi"] = None
                    continue
                m, lo, hi, _ = mean_interval(xs)
                row[f"{k}_{side}"], row[f"{k}_{side}_lo"], row[f"{k}_{side}_hi"] = m, lo, hi
        summary_rows.append(row)
        note = f"{valid}/{runs} live runs with valid timing"
        comps.append(Comparison(
            f"{label}: Jain, live vs twin", row["jain_live"],
            ref=Value(row["jain_twin"]), atol=0.05,
            note=f"reference: the simulated twin's mean; {note}",
        ))  # fmt: skip
        comps.append(Comparison(
            f"{label}: total ÷ rate, live vs twin", row["total_live"], ref=Value(row["total_twin"]),
            rtol=0.05, unit="× r_m", note=f"IP level; reference: the twin's mean; {note}",
        ))  # fmt: skip
        if policy == "partitioned-police":
            off_total = _mean(vals[label_of("off", cc)]["total_live"])
            comps.append(Comparison(
                f"{label}: compliant ÷ rate, live vs twin", row["compliant_live"],
                ref=Value(row["compliant_twin"]), rtol=0.10, unit="× r_m",
                note=f"marked bytes delivered; reference: the twin's mean; {note}",
            ))  # fmt: skip
            comps.append(Comparison(
                f"{label}: total ÷ rate, live (P0 Fig. 6: total ≫ rate)", row["total_live"],
                ref=Bound(at_least=1.0, against="the total exceeds the rate"), unit="× r_m",
                note=f"what policing does not do (hold the total): it holds without any "
                     f"policy too (policy off: {off_total:.3g} × the "
                     f"rate), so no ablation can test it; {note}",
            ))  # fmt: skip
            comps.append(Comparison(
                f"{label}: compliant ÷ rate, live (P0 Fig. 6: compliant < rate)",
                row["compliant_live"],
                ref=Bound(at_most=1.0, against="compliant traffic below the rate"), unit="× r_m",
            ))  # fmt: skip
        if paper_jain is not None:
            comps.append(Comparison(
                f"{label}: Jain, live vs paper (P0 Fig. {fig[1:]})", row["jain_live"],
                ref=Value(paper_jain), atol=0.03,
            ))  # fmt: skip
        if policy in SHAPING:
            comps.append(Comparison(
                f"{label}: total ÷ rate, live vs paper (99.5 % of the rate)", row["total_live"],
                ref=Value(0.995), atol=0.03, unit="× r_m", note="IP level",
            ))  # fmt: skip
    cmd = "qoslab reproduce p0-live  (policy off: scenarios/p0/f3-equal.toml live)"
    twin = "policy off (P0 Fig. 3, no aggregate control)"
    ablations = []
    # Every shaping policy against the same policy-off runs (of the same hosts' TCP): the
    # rate held and the shares made equal must both vanish without aggregate control.
    for cc, (policy, what) in itertools.product(CCS, SHAPING.items()):
        label = label_of(policy, cc)
        off = vals[label_of("off", cc)]
        unused = [1 - x * RATE / LINK for x in off["total_live"]]
        off_data = scenario_data(ctx, POLICIES["off"][0], duration, warmup, cc)
        on = vals[label]
        left = [1 - x * RATE / LINK for x in on["total_live"]]
        # The policy-off twin removes the QoS manager and nothing else (the scenarios'
        # names aside).
        declared = p0.twin_declaration(
            scenario_data(ctx, POLICIES[policy][0], duration, warmup, cc), off_data, p0.POLICY_OFF
        )
        ablations += [
            Ablation(
                f"{label}: the aggregate shaper holds the total to the rate, below the access "
                "link", what, twin,
                "link capacity left unused, 1 − total/1 Mb/s (IP level, live)",
                _mean(left), _mean(unused), with_seeds=left, without_seeds=unused,
                falls_by=0.5, command=cmd, **declared,
            ),
            Ablation(
                f"{label}: the aggregate shaper shares the rate equally across RTTs 50–600 ms",
                what, twin, "min/max of the four clients' goodputs (live)",
                _mean(on["minmax_live"]), _mean(off["minmax_live"]),
                with_seeds=on["minmax_live"], without_seeds=off["minmax_live"],
                falls_by=0.5, command=cmd, **declared,
            ),
        ]  # fmt: skip
    invalid = runs_df.filter(~pl.col("timing_ok")).height
    return Outcome(
        comparisons=comps,
        ablations=ablations,
        tables={"policies": pl.DataFrame(summary_rows), "runs": runs_df},
        notes=(
            f"Linux Reno and CUBIC at the hosts, {runs} live runs per policy of {duration} "
            f"(warm-up {warmup}), each beside its simulated twin; {invalid} of "
            f"{runs_df.height} live runs had out-of-bounds timing (p99 > 100 µs or "
            "p99.9 > 2 ms: the box was loaded)."
        ),
    )


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)

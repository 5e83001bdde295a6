"""P1 on real TCP: the TCP Rate Controller in front of Linux Reno and CUBIC senders.

P1's future work is the TRC on real TCP stacks (§6). Here the TRC runs in qoslab's
datapath at the senders' edge (live mode, ``docs/live.md``) and controls Linux TCP
connections between network namespaces. Linux TCP is not the TCP any of qoslab's
simulated fits describe, so each TRC uses a model fitted to the Linux sender it controls,
measured live by the same per-configuration fit as qoslab's TCPs
(``python3 validation/trc_model_fit.py --measure linux-reno linux-cubic``: the cycle
measured at each W_max of the grid, at 50 and 200 ms, on the TRC's own drop pattern; the
model is a law in W_max alone, its cycle the longest over the RTTs measured;
``linux-reno`` / ``linux-cubic`` in ``docs/validation/trc-models.md``).

Cases: Table 1's 10 Mb/s scenario (seven requests 50 kb/s … 5 Mb/s from one host, the
shared access delay 1.5 ms or 124 ms; Σ requested 0.765 of the link, admitted under
P1's ρ = 0.85) and Fig. 6b's (nine requests up to 10 Mb/s on 200 Mb/s, Σ requested
0.10 of it). The loaded variants (Σ requested = 0.85 of the link, ``p1.md``'s reading
of P1 §5.5) are not run live. Per case and congestion control the flows' achieved ÷ requested,
over ``runs`` live runs with 95 % intervals, are compared with the paper's claim (every
flow at least its request, §5.2; at most 3 % above the model's target R·1.06, §4.3),
beside the same case simulated with qoslab's default TCP under its own fitted model.
The ablation twin runs the case live without the TRC (Linux Reno): the flows no longer
land on their requests.

Not part of ``reproduce --all`` (it runs in real time; about 13 minutes in quick mode);
needs root and ``/dev/net/tun``, elsewhere it is skipped with the reason.
"""

from __future__ import annotations

import copy
from typing import Any

import polars as pl

from qoslab.reproduce import (
    LIVE_SPIN,
    Ablation,
    Comparison,
    Context,
    Outcome,
    config_changes,
    mean_interval,
    register,
    require_live,
    switched_off,
)
from qoslab.reproduce.p1 import _claim, _claim_ok, requested_rates, set_trc

#: Linux's payload per segment with timestamps (1500-byte packets): the TRC counts the
#: controlled flow's segments of this size, and the sinks report this payload.
LINUX_MSS = 1448
#: Linux congestion control → the TRC model fitted to it live.
CCS = {"reno": "linux-reno", "cubic": "linux-cubic"}
#: case → (P1 scenario, overrides, what it is).
CASES: dict[str, tuple[str, dict[str, Any], str]] = {
    "t1-1.5ms": ("p1/t1-10mbps.toml", {"link.0.delay": "1.5ms"},
                 "Table 1, 10 Mb/s, access 1.5 ms"),
    "t1-124ms": ("p1/t1-10mbps.toml", {"link.0.delay": "124ms"},
                 "Table 1, 10 Mb/s, access 124 ms"),
    "f6b": ("p1/f6b.toml", {}, "Fig. 6b, 200 Mb/s, requests up to 10 Mb/s"),
}  # fmt: skip
#: The model's target is R·1.06 (P1 §4.3).
TARGET = 1.06


def case_data(ctx: Context, case: str, duration: str, warmup: str, cc: str | None) -> dict:
    """A P1 case made live: every flow a Linux sender with congestion control ``cc`` under
    a TRC using the live fit of that sender (``cc=None``: qoslab's default TCP, simulated,
    its own fitted model)."""
    from qoslab.scenario import load

    file, over, _ = CASES[case]
    sc = load(ctx.scenario(file)).with_overrides(over)
    data = copy.deepcopy(dict(sc.data))
    data.pop("sweep", None)
    data["name"] = f"p1-live-{case}" + (f"-{cc}" if cc else "-sim")
    data["duration"], data["warmup"] = duration, warmup
    data["record"] = {"interval": duration}
    for f in data["flow"]:
        f["tcp"] = {"max_window": 2000} | ({"mss": LINUX_MSS} if cc else {})
    if cc:
        data["live"] = {"cc": cc, "spin": LIVE_SPIN}
        set_trc(data, model=CCS[cc])
    return data


def _ratios(res: Any, req: dict[str, float]) -> dict[str, float]:
    """Achieved ÷ requested per flow."""
    fl = res.tables["flows"]
    return {n: g / req[n] for n, g in zip(fl["name"], fl["goodput_bps"], strict=True)}


def no_trc(data: dict[str, Any]) -> dict[str, Any]:
    """The ablation twin of a live case: the same flows without their TRCs."""
    twin = {k: v for k, v in data.items() if k != "conditioner"}
    twin["name"] = f"{data['name']}-no-trc"
    return twin


#: Switching the TRC off: no conditioner.
TRC_OFF = {"conditioner": None}


@register(
    "p1-live",
    title="P1 on real TCP: the TRC in front of Linux Reno and CUBIC",
    paper="P1 §6 (future work), Table 1, Fig. 6b",
    in_all=False,
)
def p1_live(ctx: Context) -> Outcome:
    """Each case live with Reno and CUBIC (models fitted live), simulated with qoslab's TCP,
    and live without the TRC (the ablation twin)."""
    from qoslab.api import run

    require_live()
    runs = 1 if ctx.quick else 5
    duration, warmup = ("80s", "20s") if ctx.quick else ("300s", "60s")
    per_flow: list[dict[str, Any]] = []
    timing: list[dict[str, Any]] = []
    for case in CASES:
        for side in [*CCS, "sim", "off"]:
            cc = side if side in CCS else ("reno" if side == "off" else None)
            data = case_data(ctx, case, duration, warmup, cc)
            req = requested_rates(data)
            if side == "off":
                data = no_trc(data)
            for seed in range(1, runs + 1):
                label = f"{case}-{side}-s{seed}"
                if side == "sim":
                    res = run(data, seed=seed)
                    res.save(ctx.out / "runs" / label)
                    timing_ok = True
                else:
                    res = ctx.live(data, seed, label)
                    timing_ok = bool(res.summary.get("live_timing_ok"))
                d = res.drops
                timing.append({
                    "case": case, "tcp": side, "seed": seed, "timing_ok": timing_ok,
                    "delivered_mbps": float(res.flows["goodput_bps"].sum()) / 1e6,
                    # lost to a link's queue (the bottleneck), not dropped by a TRC
                    "queue_drops": int(d.filter(pl.col("place_kind") == "iface")["packets"].sum()),
                })  # fmt: skip
                for n, r in _ratios(res, req).items():
                    per_flow.append({"case": case, "tcp": side, "seed": seed, "flow": n,
                                     "requested": req[n], "ratio": r})  # fmt: skip
    flows_df = pl.DataFrame(per_flow)
    keys = ["case", "tcp", "seed"]
    runs_df = (
        pl.DataFrame(timing)
        .join(flows_df.group_by(keys).agg(
            pl.col("ratio").min().alias("worst"),
            (pl.col("ratio").max() / TARGET).alias("best_vs_target"),
            _claim_ok().mean().alias("within"),
        ), on=keys, maintain_order="left")
    )  # fmt: skip

    def within(case: str, side: str) -> list[float]:
        """Per run of the case and side: the share of flows within the paper's claim."""
        d = runs_df.filter((pl.col("case") == case) & (pl.col("tcp") == side))
        return d["within"].to_list()

    def off_run(case: str) -> str:
        """The no-TRC twin's worst and best (mean over its runs), for the notes: the
        claim's first half alone passes without the TRC where the flows get more."""
        d = runs_df.filter((pl.col("case") == case) & (pl.col("tcp") == "off"))
        return (f"without the TRC (live Reno, {int(d['timing_ok'].sum())}/{d.height} runs "
                f"with valid timing): worst {d['worst'].mean():.3g}, max ÷ target "
                f"{d['best_vs_target'].mean():.3g}")  # fmt: skip

    summary = []
    comps: list[Comparison] = []
    for case, (_f, _o, what) in CASES.items():
        for side in [*CCS, "sim"]:
            d = flows_df.filter((pl.col("case") == case) & (pl.col("tcp") == side))
            rows = []
            for (flow,), g in d.group_by(["flow"], maintain_order=True):
                xs = g["ratio"].to_list()
                m, lo, hi, n = mean_interval(xs)
                rows.append({"case": case, "tcp": side, "flow": flow,
                             "requested": g["requested"][0], "ratio": m, "lo": lo, "hi": hi,
                             "runs": n})  # fmt: skip
            summary += rows
            worst = min(rows, key=lambda r: r["ratio"])
            valid = int(runs_df.filter((pl.col("case") == case) & (pl.col("tcp") == side))
                        ["timing_ok"].sum())  # fmt: skip
            label = f"{what}, " + (f"Linux {side} (live, model {CCS[side]})" if side in CCS
                                   else "qoslab's default TCP (simulated)")  # fmt: skip
            note = (f"worst flow {worst['flow']}, mean of {worst['runs']} run(s), 95 % interval "
                    f"{worst['lo']:.3f} … {worst['hi']:.3f}")  # fmt: skip
            if side in CCS:
                note += f"; {valid}/{runs} live runs with valid timing"
            note += f"; {off_run(case)}"
            _claim(comps, label, pl.DataFrame(rows), note=note)
    ablations = []
    for case, (_f, _o, what) in CASES.items():
        on, off = within(case, "reno"), within(case, "off")
        with_trc = case_data(ctx, case, duration, warmup, "reno")
        # Per-run values carry an interval from two runs on (full mode).
        seeds = {"with_seeds": on, "without_seeds": off} if len(on) > 1 else {}
        valid = {side: runs_df.filter((pl.col("case") == case) & (pl.col("tcp") == side))
                 ["timing_ok"] for side in ("reno", "off")}  # fmt: skip
        ablations.append(Ablation(
            f"{what}: the TRC sets each Linux Reno flow's rate (live)",
            "the TRC (P1 §4, model fitted live)", "no TRC (the same flows, live)",
            "share of flows within the paper's claim (≥ R, ≤ 1.03·R·1.06)",
            sum(on) / len(on), sum(off) / len(off), **seeds,
            falls_by=0.5, command="sudo qoslab reproduce p1-live",
            note=f"live runs with valid timing: {int(valid['reno'].sum())}/{len(on)} with "
                 f"the TRC, {int(valid['off'].sum())}/{len(off)} without",
            twin_changes=config_changes(with_trc, no_trc(with_trc), ignore=("name",)),
            mechanism_off=switched_off(with_trc, TRC_OFF),
        ))  # fmt: skip
    invalid = runs_df.filter(~pl.col("timing_ok")).height
    return Outcome(
        comparisons=comps,
        ablations=ablations,
        tables={"flows": pl.DataFrame(summary), "runs": runs_df},
        notes=(
            f"{runs} run(s) of {duration} (warm-up {warmup}) per case and TCP; Linux senders "
            f"live under the model fitted to them live, qoslab's default TCP simulated; "
            f"{invalid} of {runs_df.height} runs had out-of-bounds timing."
        ),
    )

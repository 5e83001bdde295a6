#!/usr/bin/env python3
"""Live mode against the simulator: real Linux TCP through qoslab's datapath
vs the same scenario simulated with Linux-like TCP settings (``qoslab live --twin``).

Cases (each run RUNS times live, each live run paired with its simulated twin):

1. ``scenarios/live/reno-10m-40ms.toml``: one Linux Reno flow, 10 Mb/s, 40 ms RTT, a
   25-packet DropTail queue. Claim: goodput within 2 % of the twin.
2. ``scenarios/examples/tcp_dumbbell.toml`` (four flows, RTT 20/40/80/160 ms, one
   10 Mb/s DropTail bottleneck) with Linux Reno, shortened to DURATION. Claims: total
   within 5 %, the per-flow order by RTT the same, Jain's index within 0.1.

Each comparison also shows the simulator with qoslab's default TCP (the scenario as
written: NewReno, IW 2, no delayed ACKs) to show what the Linux-like settings change.
Every live run's timing verdict (p99 / p99.9 lateness against 100 µs / 2 ms) and the
machine's load average are recorded beside it.

Usage (root, /dev/net/tun): .venv/bin/python validation/live_vs_sim.py [--runs 5]
  writes validation/data/live_vs_sim.json and docs/validation/live.md;
  ``--from-json`` rebuilds the page from the JSON without running anything.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import pathlib
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "validation" / "data" / "live_vs_sim.json"
PAGE = ROOT / "docs" / "validation" / "live.md"
RENO = ROOT / "scenarios" / "live" / "reno-10m-40ms.toml"
DUMBBELL = ROOT / "scenarios" / "examples" / "tcp_dumbbell.toml"
DUMBBELL_SET = {"duration": "30s", "warmup": "5s", "live": {"cc": "reno"}}
RTT_ORDER = ["rtt20", "rtt40", "rtt80", "rtt160"]

# Student t 97.5 % quantiles by degrees of freedom.
_T = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}


def ci(xs: list[float]) -> tuple[float, float, float]:
    """Mean and its 95 % t-interval."""
    m = statistics.fmean(xs)
    if len(xs) < 2:
        return m, float("nan"), float("nan")
    h = _T.get(len(xs) - 1, 1.96) * statistics.stdev(xs) / math.sqrt(len(xs))
    return m, m - h, m + h


def ci_sign(c: tuple[float, float, float]) -> int:
    """+1 / −1 when a (mean, lo, hi) interval lies above / below zero, 0 when it straddles
    zero (a tie); the sign of the mean when there is no interval."""
    m, lo, hi = c
    if math.isnan(lo):
        return (m > 0) - (m < 0)
    return 1 if lo > 0 else (-1 if hi < 0 else 0)


def band_verdict(lo: float, hi: float, tol: float) -> str:
    """within: the whole interval inside ±tol; outside: wholly outside; else undecided."""
    if -tol <= lo and hi <= tol:
        return "within"
    if hi < -tol or lo > tol:
        return "outside"
    return "undecided (the interval straddles the band's edge)"


def _secs(v: str) -> float:
    """A scenario duration ("25s", "500ms") in seconds."""
    v = str(v).strip()
    return float(v[:-2]) / 1e3 if v.endswith("ms") else float(v.rstrip("s"))


def loss_events(t: list[float], hit: list[bool], start: float) -> list[float]:
    """Times of loss events after ``start``: samples where ``hit`` is true, those less
    than 0.3 s (several RTTs) after the previous one merged into one event."""
    out: list[float] = []
    last = -1e9
    for x, h in zip(t, hit, strict=True):
        if h and x >= start and x - last > 0.3:
            out.append(x)
        if h:
            last = x
    return out


def sim_loss_events(traces, start: float) -> list[float]:
    """Loss events of a simulated flow's trace: its entries into recovery or loss."""
    tr = traces.sort("t")
    states = tr["state"].to_list()
    return loss_events(
        tr["t"].to_list(),
        [False] + [b in ("recovery", "loss") and a != b for a, b in itertools.pairwise(states)],
        start,
    )


def sawtooth(r, start: float) -> dict | None:
    """Loss events after the warm-up of the first flow, live (a rise of TCP_INFO's total
    retransmits between 10 ms samples) and twin (entering recovery or loss)."""
    lt = r.table("traces") if "traces" in r.tables else None
    st = r.twin.table("traces") if r.twin is not None and "traces" in r.twin.tables else None
    if lt is None or st is None or not lt.height or not st.height:
        return None
    lt = lt.sort("t")
    rt = lt["retransmits"].to_list()
    live_ev = loss_events(
        lt["t"].to_list(), [False] + [b > a for a, b in itertools.pairwise(rt)], start
    )
    return {"live": live_ev, "sim": sim_loss_events(st, start)}


def one(path: pathlib.Path, overrides: dict, seed: int) -> dict:
    from qoslab.api import live, run

    load0 = os.getloadavg()
    t0 = time.time()
    # The datapath's pcap: goodput counted on the wire (bytes made in order at the
    # receiver's TUN after the warm-up), beside the sinks' (bytes their application read).
    extra = {"live.pcap": True}
    if path == RENO:
        # TCP_INFO (live) and the twin's state every 10 ms: the sawtooth's loss events.
        extra.update({"record.interval": "10ms", "record.traces": ["reno"]})
    r = live(path, {**overrides, **extra}, seed, twin=True)
    load1 = os.getloadavg()
    from qoslab.scenario import load as load_scenario
    from qoslab.twin import pcap_goodput

    sc = load_scenario(path).with_overrides(overrides).data
    specs = sc["flow"]
    end, start = _secs(sc["duration"]), _secs(sc.get("warmup", "0s"))
    wire = pcap_goodput(r.pcap_dir / "datapath.pcap", start, end) if r.pcap_dir else {}
    wire_bps = {
        f["name"]: wire.get((f.get("src_port", 1024 + i), f.get("dst_port", 5001)))
        for i, f in enumerate(specs)
    }
    s = r.summary
    timing = r.table("live_timing").filter(__import__("polars").col("place") == "(all events)")
    row = timing.row(0, named=True) if timing.height else {}
    base = run(path, overrides, seed)  # the scenario's own TCP (qoslab defaults)
    base_scale = 1448 / 1460  # counted at Linux's payload per packet like the twin
    return {
        "seed": seed,
        "started": time.strftime("%H:%M:%S", time.gmtime(t0)),
        "load_before": load0[0],
        "load_after": load1[0],
        "timing_ok": bool(s.get("live_timing_ok")),
        "p99_us": s.get("live_lateness_p99_us"),
        "p999_us": s.get("live_lateness_p999_us"),
        "max_us": row.get("max_us"),
        "late_2ms": row.get("late_2ms"),
        "ring_lost": s.get("live_ring_lost"),
        "tun_tx_dropped": int(r.table("live_hosts")["tun_tx_dropped"].sum())
        if "tun_tx_dropped" in r.table("live_hosts").columns
        else None,
        "flows": {
            x["flow"]: {"live": x["live_bps"], "sim": x["sim_bps"]}
            for x in r.table("twin").iter_rows(named=True)
            if x["flow"] != "(total)"
        },
        "live_drops": {x["flow"]: x["live_drops"] for x in r.table("twin").iter_rows(named=True)},
        "sim_drops": {x["flow"]: x["sim_drops"] for x in r.table("twin").iter_rows(named=True)},
        "live_retransmits": {
            x["flow"]: x["live_retransmits"] for x in r.table("twin").iter_rows(named=True)
        },
        "sim_retransmits": {
            x["flow"]: x["sim_retransmits"] for x in r.table("twin").iter_rows(named=True)
        },
        "default_sim": {
            x["name"]: x["goodput_bps"] * base_scale for x in base.flows.iter_rows(named=True)
        },
        "wire": wire_bps,
        "loss_events": sawtooth(r, start) if path == RENO else None,
        "jain_live": s["twin_jain_live"],
        "jain_sim": s["twin_jain_sim"],
    }


#: Twin variants of the Reno case: one Linux-like setting changed at a time.
RENO_VARIANTS = {
    "per-ACK window growth (no byte counting)": {"byte_counting": False},
    "no delayed ACKs": {"delayed_ack": False},
    "RFC 6675 recovery instead of PRR": {"recovery": "rfc6675"},
    "ssthresh = flight / 2": {"halve": "flight"},
}


def sim_extras(runs: int) -> dict:
    """Simulator-only runs beside the live ones (deterministic, cheap): the Reno twin's
    variants, and the dumbbell's twin with every flow's start jittered over 1 s (the
    simulated counterpart of the live runs' run-to-run noise), seeds 1..runs."""
    import copy

    from qoslab.api import run
    from qoslab.scenario import load
    from qoslab.twin import twin_data

    scale = 1448 / 1460
    base, _ = twin_data(load(RENO).data)
    variants = {}
    drops_per_ack = None
    events_per_ack = None
    for name, change in RENO_VARIANTS.items():
        d = copy.deepcopy(base)
        d["flow"][0]["tcp"].update(change)
        d["record"] = {"interval": "10ms", "traces": ["reno"]}
        res = run(d, seed=1)
        fl = res.flows
        variants[name] = fl["goodput_bps"][0] * scale
        if change == {"byte_counting": False}:
            drops_per_ack = int(fl["drops"][0])
            ev = sim_loss_events(res.table("traces"), 5.0)
            events_per_ack = f"{len(ev)} events, one every {(ev[-1] - ev[0]) / (len(ev) - 1):.2f} s"
    # Counterfactual: the twin with a longer RTT (a → r one way), as host delays would
    # lengthen the live loop: goodput and drops.
    rtt_plus = {}
    for ms in (1, 2, 3):
        d = copy.deepcopy(base)
        d["link"][0]["delay"] = f"{1000 + ms * 500}us"
        fl = run(d, seed=1).flows
        rtt_plus[str(ms)] = {"goodput": fl["goodput_bps"][0] * scale, "drops": int(fl["drops"][0])}
    dj, _ = twin_data(load(DUMBBELL).with_overrides(DUMBBELL_SET).data)
    for f in dj["flow"]:
        f["start_jitter"] = "1s"
    jit = []
    for seed in range(1, runs + 1):
        fl = run(dj, seed=seed).flows
        jit.append(dict(zip(fl["name"], [g * scale for g in fl["goodput_bps"]], strict=True)))
    return {
        "reno_variants": variants,
        "reno_drops_per_ack": drops_per_ack,
        "reno_events_per_ack": events_per_ack,
        "reno_rtt_plus": rtt_plus,
        "dumbbell_jitter": jit,
    }


def measure(runs: int) -> dict:
    out = {"runs": runs, "cases": {}}
    for name, path, ov in (("reno", RENO, {}), ("dumbbell", DUMBBELL, DUMBBELL_SET)):
        rows = []
        for seed in range(1, runs + 1):
            rows.append(one(path, ov, seed))
            f = rows[-1]
            print(
                f"{name} seed {seed}: "
                + ", ".join(
                    f"{k} {v['live'] / 1e6:.3f}/{v['sim'] / 1e6:.3f}" for k, v in f["flows"].items()
                )
                + f" Mb/s live/sim; p99 {f['p99_us']:.0f} µs p99.9 {f['p999_us']:.0f} µs;"
                f" load {f['load_before']:.2f}",
                flush=True,
            )
        out["cases"][name] = rows
    return out


def fmt_ci(m: float, lo: float, hi: float, scale: float = 1.0, digits: int = 3) -> str:
    if math.isnan(lo):
        return f"{m * scale:.{digits}f}"
    return f"{m * scale:.{digits}f} [{lo * scale:.{digits}f}, {hi * scale:.{digits}f}]"


def page(d: dict) -> str:
    L: list[str] = []
    add = L.append
    runs = d["runs"]
    add("# Live mode against the simulator")
    add("")
    add(
        "Generated by `.venv/bin/python validation/live_vs_sim.py` (root; "
        f"{runs} live runs per case, run one after another, each paired with its "
        "simulated twin): do not edit by hand. Each live run is real Linux TCP in "
        "network namespaces through qoslab's datapath (`qoslab live`); its twin is the "
        "same scenario in the simulator with qoslab's TCP set as close to Linux's as it "
        "goes (`qoslab live --twin`, [qoslab.twin](../../python/qoslab/twin.py): SACK + "
        "PRR, IW 10, 40 ms delayed ACKs with Linux's quick-ACK mode and adaptive "
        "timeout, RTO floor 200 ms, ssthresh = cwnd/2, a window "
        "grown by the bytes each ACK acknowledges as Linux does, handshake, "
        "1500-byte packets). Goodput is counted at Linux's 1448 payload bytes per "
        "1500-byte packet on both sides (live: the bytes the sink application read after "
        "the warm-up; *on the wire*: the bytes made in order at the receiver's TUN "
        "between the warm-up and the end by the datapath's pcap stamps, what the "
        "simulator counts). Intervals are 95 % t-intervals over the runs; a "
        "claim is *within* when the whole interval of the relative difference lies in its "
        "band. The column *qoslab default TCP* is the simulator with the scenario's own "
        "TCP (NewReno, IW 2, no delayed ACKs, 1500-byte packets): the comparison with the "
        "Linux-like settings switched off."
    )
    add("")
    add(
        f"Measured {d.get('date', '?')} on the project's shared 2-vCPU VM (kernel "
        f"{d.get('kernel', '?')}); the load average beside each run says how busy the "
        "machine was (2.0 would be both cores busy). "
        + (
            f"The script ran at nice {d['nice']} (the live datapath thread runs SCHED_FIFO "
            "when permitted, which nice does not touch)."
            if "nice" in d
            else "Live runs were not `nice`d."
        )
    )
    add("")
    verdicts = []
    # ---- case 1
    rows = d["cases"]["reno"]
    live = [r["flows"]["reno"]["live"] for r in rows]
    sim = [r["flows"]["reno"]["sim"] for r in rows]
    dflt = [r["default_sim"]["reno"] for r in rows]
    rel = [s / x - 1 for s, x in zip(sim, live, strict=True)]
    rel_d = [s / x - 1 for s, x in zip(dflt, live, strict=True)]
    m, lo, hi = ci(rel)
    v1 = band_verdict(lo, hi, 0.02)
    md, lod, hid = ci(rel_d)
    add("## One Linux Reno flow, 10 Mb/s, 40 ms RTT")
    add("")
    add(
        "`scenarios/live/reno-10m-40ms.toml`: a → r (100 Mb/s, 1 ms) → b (10 Mb/s, 19 ms, "
        "DropTail 25 packets, about ¾ of the BDP), 25 s, warm-up 5 s. "
        "Claim: live goodput within 2 % of the simulated twin."
    )
    add("")
    add("| | goodput [Mb/s] | (twin − live) / live |")
    add("|---|---|---|")
    add(f"| live, Linux Reno | {fmt_ci(*ci(live), 1e-6)} | |")
    if all(r.get("wire", {}).get("reno") for r in rows):
        wl = [r["wire"]["reno"] for r in rows]
        rw = [s / x - 1 for s, x in zip(sim, wl, strict=True)]
        add(
            f"| live, counted on the wire (datapath pcap) | {fmt_ci(*ci(wl), 1e-6)} | "
            f"{fmt_ci(*ci(rw), 100, 2)} % |"
        )
    twin_rel = fmt_ci(m, lo, hi, 100, 2)
    add(f"| simulated twin (Linux-like) | {fmt_ci(*ci(sim), 1e-6)} | {twin_rel} % |")
    add(
        f"| simulated, qoslab default TCP | {fmt_ci(*ci(dflt), 1e-6)} | "
        f"{fmt_ci(md, lod, hid, 100, 2)} % |"
    )
    for name, g in d["extras"]["reno_variants"].items():
        rv = [g / x - 1 for x in live]
        add(f"| twin with {name} | {g / 1e6:.3f} | {fmt_ci(*ci(rv), 100, 2)} % |")
    if "live_drops" in rows[0]:
        ld = [r["live_drops"]["reno"] for r in rows]
        sd = [r["sim_drops"]["reno"] for r in rows]
        add(
            f"\nDrops after the warm-up (20 s): live "
            f"{fmt_ci(*ci([float(x) for x in ld]), 1, 1)} per run, twin {sd[0]}"
            + (
                f", twin with per-ACK window growth {d['extras']['reno_drops_per_ack']}"
                if "reno_drops_per_ack" in d["extras"]
                else ""
            )
            + "."
        )
    if all(r.get("loss_events") for r in rows):

        def period(ev: list[float]) -> float:
            return (ev[-1] - ev[0]) / (len(ev) - 1) if len(ev) > 1 else float("nan")

        le = [float(len(r["loss_events"]["live"])) for r in rows]
        se = [float(len(r["loss_events"]["sim"])) for r in rows]
        lp = [period(r["loss_events"]["live"]) for r in rows]
        sp = [period(r["loss_events"]["sim"]) for r in rows]
        add(
            "\nThe sawtooth (loss events after the warm-up, from `TCP_INFO`'s retransmit "
            "count live and the twin's entries into recovery, both sampled every 10 ms): "
            f"live {fmt_ci(*ci(le), 1, 1)} events per run, one every "
            f"{fmt_ci(*ci(lp), 1, 2)} s; twin {fmt_ci(*ci(se), 1, 1)}, one every "
            f"{fmt_ci(*ci(sp), 1, 2)} s"
            + (
                f"; the twin with per-ACK window growth {d['extras']['reno_events_per_ack']}"
                if "reno_events_per_ack" in d["extras"]
                else ""
            )
            + ". Linux's congestion avoidance grows one segment per RTT under delayed "
            "ACKs because it counts the segments an ACK acknowledges; growing once per "
            "ACK doubles the period."
        )
        if "live_drops" in rows[0]:
            dpe_l = [r["live_drops"]["reno"] / max(len(r["loss_events"]["live"]), 1) for r in rows]
            dpe_s = [r["sim_drops"]["reno"] / max(len(r["loss_events"]["sim"]), 1) for r in rows]
            add(
                f"\nDrops per loss event: live {fmt_ci(*ci(dpe_l), 1, 2)}, twin "
                f"{fmt_ci(*ci(dpe_s), 1, 2)}: the sawtooths have the same period, but a "
                "live loss event often loses two packets where the twin's loses one, and "
                "the live runs with more drops have the lower goodput (the timing table's "
                "drops column). Across this page's measurements the live goodput falls as "
                "the machine's load rises (the table of earlier measurements below)."
            )
        rp = d["extras"].get("reno_rtt_plus")
        if rp:
            add(
                "\nA reading, not a proven cause: the window grows one segment per window "
                "of ACKs, and whether its next increment comes before the first loss is "
                "detected (one RTT after it) decides one drop or two per event; host "
                "delays under load lengthen the live loop. The twin with a longer RTT "
                "(counterfactual): "
                + "; ".join(
                    f"+{ms} ms: {v['goodput'] / 1e6:.3f} Mb/s, {v['drops']} drops"
                    for ms, v in rp.items()
                )
                + ". Live `TCP_INFO` does not isolate the hosts' share of the RTT, so this "
                "stays a reading."
            )
    add("")
    inside = [
        name
        for name, g in [
            ("qoslab default TCP", statistics.fmean(dflt)),
            *list(d["extras"]["reno_variants"].items()),
        ]
        if band_verdict(*ci([g / x - 1 for x in live])[1:], 0.02) == "within"
    ]
    add(
        f"**Verdict: {v1}** (band ±2 %). "
        + (
            f"Rows whose interval lies within the band: {', '.join(inside)}. "
            if inside
            else "No row's interval lies wholly within the band. "
        )
        + (
            "The scenario's own qoslab TCP lands nearer the live goodput than the twin: "
            "on this case the Linux-like settings do not bring the simulator closer."
            if abs(md) < abs(m)
            else "The Linux-like settings bring the simulator closer than qoslab's default TCP."
        )
    )
    verdicts.append(
        (
            "reno 10 Mb/s / 40 ms within 2 %",
            v1,
            f"{m * 100:+.2f} % [{lo * 100:+.2f}, {hi * 100:+.2f}]",
        )
    )
    add("")
    add(timing_table(rows))
    if d.get("history"):
        add(
            "Earlier measurements of this case beside this one, each with the load "
            "averages its live runs started at and the twin of its day (a twin of "
            f"{d['history'][0]['runs'][0]['sim'] / 1e6:.3f} Mb/s is qoslab's TCP before "
            "byte counting, the row *per-ACK window growth* above)."
        )
        add("")
        add(history_table(d))
    # ---- case 2
    rows = d["cases"]["dumbbell"]
    add("## TCP dumbbell")
    add("")
    add(
        "`scenarios/examples/tcp_dumbbell.toml` with "
        f"`{json.dumps(DUMBBELL_SET)}` (Linux Reno live; 30 s, warm-up 5 s): four flows "
        "with base RTTs 20/40/80/160 ms through one 10 Mb/s DropTail bottleneck of 100 "
        "packets. Claims: total within 5 %, the per-flow order by RTT the "
        "same, Jain's index within 0.1."
    )
    add("")
    add("| flow | live [Mb/s] | twin [Mb/s] | qoslab default TCP [Mb/s] |")
    add("|---|---|---|---|")
    for f in RTT_ORDER:
        add(
            f"| {f} | {fmt_ci(*ci([r['flows'][f]['live'] for r in rows]), 1e-6)} | "
            f"{fmt_ci(*ci([r['flows'][f]['sim'] for r in rows]), 1e-6)} | "
            f"{fmt_ci(*ci([r['default_sim'][f] for r in rows]), 1e-6)} |"
        )
    tl = [sum(v["live"] for v in r["flows"].values()) for r in rows]
    ts = [sum(v["sim"] for v in r["flows"].values()) for r in rows]
    td = [sum(r["default_sim"].values()) for r in rows]
    add(
        f"| **total** | {fmt_ci(*ci(tl), 1e-6)} | {fmt_ci(*ci(ts), 1e-6)} | "
        f"{fmt_ci(*ci(td), 1e-6)} |"
    )
    if all(r.get("wire") and all(r["wire"].values()) for r in rows):
        tw = [sum(r["wire"].values()) for r in rows]
        add(f"| total, live counted on the wire (pcap) | {fmt_ci(*ci(tw), 1e-6)} | | |")
    jl = [r["jain_live"] for r in rows]
    js = [r["jain_sim"] for r in rows]
    from qoslab.twin import jain

    jd = [jain(list(r["default_sim"].values())) for r in rows]
    add(f"| Jain | {fmt_ci(*ci(jl))} | {fmt_ci(*ci(js))} | {fmt_ci(*ci(jd))} |")
    if statistics.fmean(td) > 10e6 * 1448 / 1500:
        add(
            "\nNote: the *qoslab default TCP* total exceeds what a 10 Mb/s link can carry "
            f"at 1448 payload bytes per 1500-byte packet ({10 * 1448 / 1500:.3f} Mb/s): "
            "goodput counts the bytes that became in-order at the receiver after the "
            "warm-up, and NewReno with a 1000-segment window recovers one hole per RTT, so "
            "at the warm-up its receivers hold up to a window of data received out of order "
            "that later counts (with `warmup = 0` the same runs stay below the packets "
            "delivered). The twin's totals stay at or below the link's."
        )
    add("")
    jit = d["extras"]["dumbbell_jitter"]
    add(
        "The twin has no randomness here (DropTail, fixed starts): its runs are all one "
        "run, a single draw of the flows' phases. The same twin with every start jittered "
        f"over 1 s, seeds 1–{len(jit)} (the simulated counterpart of the live runs' "
        "run-to-run noise):"
    )
    add("")
    add("| flow | twin, starts jittered [Mb/s] |")
    add("|---|---|")
    for f in RTT_ORDER:
        add(f"| {f} | {fmt_ci(*ci([j[f] for j in jit]), 1e-6)} |")
    add(f"| Jain | {fmt_ci(*ci([jain(list(j.values())) for j in jit]))} |")
    add("")
    rel = [s / x - 1 for s, x in zip(ts, tl, strict=True)]
    m, lo, hi = ci(rel)
    v_total = band_verdict(lo, hi, 0.05)
    dj = [s - x for s, x in zip(js, jl, strict=True)]
    mj, loj, hij = ci(dj)
    v_jain = band_verdict(loj, hij, 0.1)

    def order(g: dict) -> list[str]:
        return sorted(g, key=lambda k: -g[k])

    sim_orders = [order({k: v["sim"] for k, v in r["flows"].items()}) for r in rows]
    live_orders = [order({k: v["live"] for k, v in r["flows"].items()}) for r in rows]
    same = sum(a == b for a, b in zip(live_orders, sim_orders, strict=True))
    mean_live = order({f: statistics.fmean(r["flows"][f]["live"] for r in rows) for f in RTT_ORDER})
    mean_sim = order({f: statistics.fmean(r["flows"][f]["sim"] for r in rows) for f in RTT_ORDER})
    # Seed-paired: for each pair of flows adjacent in RTT, the interval of live's
    # difference within a run, and the twin's; straddling zero is a tie.
    pair_rows = []
    signs = []
    for a_, b_ in itertools.pairwise(RTT_ORDER):
        dl = ci([r["flows"][a_]["live"] - r["flows"][b_]["live"] for r in rows])
        dsim = ci([r["flows"][a_]["sim"] - r["flows"][b_]["sim"] for r in rows])
        djit = ci([j[a_] - j[b_] for j in jit])

        sl, ss = ci_sign(dl), ci_sign(dsim)
        verdict = (
            "tie" if sl == 0 or ss == 0 else ("same order" if sl == ss else "**opposite order**")
        )
        signs.append(verdict)
        pair_rows.append(
            f"| {a_} − {b_} | {fmt_ci(*dl, 1e-6)} | {fmt_ci(*dsim, 1e-6)} | "
            f"{fmt_ci(*djit, 1e-6)} | {verdict} |"
        )
    v_order = (
        "outside"
        if "**opposite order**" in signs
        else ("within" if all(x == "same order" for x in signs) else "undecided (ties)")
    )
    add(f"- Total: (twin − live) / live = {fmt_ci(m, lo, hi, 100, 2)} %, band ±5 %: **{v_total}**.")
    add(
        f"- Order by goodput: live {' > '.join(mean_live)} (means), twin "
        f"{' > '.join(mean_sim)}; the same in {same} of {len(rows)} paired runs. "
        "By pairs of flows adjacent in RTT, seed-paired (the difference within each "
        "run, 95 % interval; straddling zero is a tie, and the fixed-start twin, the "
        "same in every run, has no interval): "
        f"**{v_order}**."
    )
    add("")
    add(
        "  | pair | live difference [Mb/s] | twin difference [Mb/s] | "
        "twin, starts jittered [Mb/s] | verdict |"
    )
    add("  |---|---|---|---|---|")
    for pr in pair_rows:
        add("  " + pr)
    add("")
    add(f"- Jain: twin − live = {fmt_ci(mj, loj, hij, 1, 3)}, band ±0.1: **{v_jain}**.")
    jit_order = order({f: statistics.fmean(j[f] for j in jit) for f in RTT_ORDER})
    add(
        f"- With jittered starts the twin's mean order is {' > '.join(jit_order)}: "
        + (
            "the live order; the fixed-start twin's order is a phase effect."
            if jit_order == mean_live
            else "still not the live order, so the miss is not only the fixed starts' "
            "phase effect; qoslab's TCP splits this bottleneck differently from Linux's."
        )
    )
    add("")
    for r, lo_, so_ in zip(rows, live_orders, sim_orders, strict=True):
        if lo_ != so_:
            add(f"  - seed {r['seed']}: live {' > '.join(lo_)}, twin {' > '.join(so_)}")
    add("")
    verdicts += [
        (
            "dumbbell total within 5 %",
            v_total,
            f"{m * 100:+.2f} % [{lo * 100:+.2f}, {hi * 100:+.2f}]",
        ),
        (
            "dumbbell order by RTT the same",
            v_order,
            f"adjacent pairs: {', '.join(signs)}; whole order the same in {same}/{len(rows)} runs",
        ),
        ("dumbbell Jain within 0.1", v_jain, f"{mj:+.3f} [{loj:+.3f}, {hij:+.3f}]"),
    ]
    add(timing_table(rows))
    # ---- summary at the top
    bad = sum(not r["timing_ok"] for c in d["cases"].values() for r in c)
    head = ["## Verdicts", "", "| claim | verdict | twin − live (95 % interval) |", "|---|---|---|"]
    head += [f"| {a} | {b} | {c} |" for a, b, c in verdicts]
    head.append("")
    n = sum(len(c) for c in d["cases"].values())
    head.append(
        f"Timing validity: {n - bad} of {n} live runs within the bounds (p99 lateness ≤ "
        "100 µs and p99.9 ≤ 2 ms)."
        + (
            " The others ran on a loaded machine (see the load averages): their datapath "
            "released packets late, so their rates and delays are not to be trusted as "
            "quiet-machine figures; they are kept in the means, and flagged in the tables."
            if bad
            else ""
        )
    )
    head.append("")
    i = L.index("## One Linux Reno flow, 10 Mb/s, 40 ms RTT")
    return "\n".join(L[:i] + head + L[i:]).rstrip() + "\n"


def timing_table(rows: list[dict]) -> str:
    out = [
        "| seed | start (UTC) | load avg before / after | p99 [µs] | p99.9 [µs] | max [µs] | "
        "events > 2 ms | timing | live total [Mb/s] | twin total [Mb/s] | drops live / twin |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        tl = sum(v["live"] for v in r["flows"].values())
        ts = sum(v["sim"] for v in r["flows"].values())
        out.append(
            f"| {r['seed']} | {r['started']} | {r['load_before']:.2f} / {r['load_after']:.2f} | "
            f"{r['p99_us']:.1f} | {r['p999_us']:.1f} | "
            f"{(r['max_us'] or float('nan')):.0f} | {r['late_2ms']} | "
            f"{'valid' if r['timing_ok'] else '**out of bounds**'} | {tl / 1e6:.3f} | "
            f"{ts / 1e6:.3f} | "
            + (
                f"{r['live_drops']['(total)']} / {r['sim_drops']['(total)']} |"
                if "live_drops" in r
                else "|"
            )
        )
    return "\n".join(out) + "\n"


def previous_runs() -> list[dict]:
    """The Reno case of the data file being replaced, kept in short (date, per run: load,
    live and twin goodput) with its own history: how the live figure moves with the
    machine's load and the twin with qoslab's TCP."""
    if not DATA.exists():
        return []
    old = json.loads(DATA.read_text())
    rows = old.get("cases", {}).get("reno", [])
    entry = {
        "date": old.get("date", "?"),
        "runs": [
            {
                "load": r["load_before"],
                "live": r["flows"]["reno"]["live"],
                "sim": r["flows"]["reno"]["sim"],
            }
            for r in rows
        ],
    }
    return [*old.get("history", []), entry] if rows else old.get("history", [])


def history_table(d: dict) -> str:
    """Earlier measurements of the Reno case beside this one."""
    out = [
        "| measured | load avg (runs) | live [Mb/s] | twin [Mb/s] | (twin − live) / live |",
        "|---|---|---|---|---|",
    ]
    now = [
        {
            "load": r["load_before"],
            "live": r["flows"]["reno"]["live"],
            "sim": r["flows"]["reno"]["sim"],
        }
        for r in d["cases"]["reno"]
    ]
    for e in [*d.get("history", []), {"date": d.get("date", "?") + " (this page)", "runs": now}]:
        rs = e["runs"]
        loads = [r["load"] for r in rs]
        rel = [r["sim"] / r["live"] - 1 for r in rs]
        out.append(
            f"| {e['date']} | {min(loads):.1f}–{max(loads):.1f} | "
            f"{fmt_ci(*ci([r['live'] for r in rs]), 1e-6)} | "
            f"{fmt_ci(*ci([r['sim'] for r in rs]), 1e-6)} | {fmt_ci(*ci(rel), 100, 2)} % |"
        )
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--from-json", action="store_true", help="rebuild the page only")
    ap.add_argument(
        "--extras",
        action="store_true",
        help="with --from-json: recompute the simulator-only rows (no live run)",
    )
    a = ap.parse_args()
    if a.from_json:
        d = json.loads(DATA.read_text())
        if "extras" not in d or a.extras:
            d["extras"] = sim_extras(d["runs"])
            DATA.write_text(json.dumps(d, indent=1) + "\n")
    else:
        from qoslab.api import live_unavailable

        problem = live_unavailable()
        if problem:
            sys.exit(f"error: {problem}")
        d = measure(a.runs)
        d["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        d["kernel"] = os.uname().release
        d["nice"] = os.nice(0)
        d["extras"] = sim_extras(a.runs)
        d["history"] = previous_runs()
        DATA.parent.mkdir(parents=True, exist_ok=True)
        DATA.write_text(json.dumps(d, indent=1) + "\n")
    PAGE.write_text(page(d))
    print(f"wrote {PAGE}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""P3 Fig. 6 (multi-domain topology, five aggregates) in a second simulator: each
aggregate's goodput and the long − short difference under the standard TSW3CM and the
basic RTT-aware marker, and the Jain index of RTT-RTO against the basic marker's, ns-3.44
beside qoslab.

The paper says the basic RTT-aware marker gives the long aggregates (F1, F2) more than
the short ones (F3–F5); qoslab finds the opposite, with every link congested and with only
the middle link congested (``p3-f6``, docs/papers/p3.md). ns-3, whose TCP nobody here
wrote, runs the same scenario (validation/ns3/p3_f6.cc: the topology, links, queues, TCP,
200 micro-flows per aggregate and durations of ``qoslab.reproduce.p3.multi_domain``),
with the markers and the three-colour RED written as small ns-3 components from P3's text
and RFC 2859, not from qoslab's code. qoslab runs the committed scenarios
(scenarios/p3/md-*.toml) through its Python API.

Writes validation/data/ns3-p3-f6.json and docs/validation/ns3-p3-f6.md (from the data;
``--page-only`` rewrites the page without running anything).

    python validation/ns3_p3_f6.py [--ns3-venv .ns3-venv] [--seeds 3] [--seconds 150]
        [-j 1] [--page-only]

Needs the ns3 wheel in a separate venv (``validation/ns3/build.sh`` creates ./.ns3-venv
and compiles the peers into validation/ns3/build/; this script runs build.sh when the
binary is missing or older than its source).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ns3_build import build

from qoslab.reproduce.p0 import jain

ROOT = pathlib.Path(__file__).resolve().parent.parent
SRC = ROOT / "validation" / "ns3" / "p3_f6.cc"
BIN = ROOT / "validation" / "ns3" / "build" / "p3_f6"
DATA = ROOT / "validation" / "data" / "ns3-p3-f6.json"
PAGE = ROOT / "docs" / "validation" / "ns3-p3-f6.md"
AGGS = ["F1", "F2", "F3", "F4", "F5"]
LONG, SHORT = AGGS[:2], AGGS[2:]
#: The runs: (topology, marker) — the headline topology under the three markers, and
#: the basic marker with only the middle link congested (qoslab's counterfactual).
CELLS = [("all", "standard"), ("all", "rtt"), ("all", "rtt-rto"), ("middle", "rtt")]
TOPOLOGY = {
    "all": "every link 10 Mb/s (headline)",
    "middle": "only the middle link congested (R1–R2, R3–R4 at 100 Mb/s)",
}
LABEL = {"standard": "standard (TSW3CM)", "rtt": "basic RTT-aware", "rtt-rto": "RTT-RTO"}
CIR_BPS = 1e6

#: What the ns-3 program cannot match, for the page.
MISMATCHES = [
    "The markers and the three-colour RED are this project's own ns-3 components "
    "(`validation/ns3/p3_f6.cc`), written from P3's text and RFC 2859: the TSW rate "
    "estimator (1 s window, started at the CIR), TSW3CM, the basic marker's "
    "q = (minRTT/RTT)² and RTT-RTO's q = (minRTT/RTT)²·(minRTO/RTO) with the "
    "minimum-RTT aggregate marked by its own RTT/RTO (qoslab's headline `rto_rule`), DP0 "
    "with probability 1 − p above the CIR (P3's text), and coupled RIO with per-colour "
    "RED counts. Only the TCP, the links and the queues' plumbing are ns-3's.",
    "The colour rides on the packet as an ns-3 tag set where the first domain router "
    "receives it from the source host (where qoslab's marker sits, `iface_in`). ns-3's "
    "RIO takes a packet without a colour (the ACKs) as DP0; the peer counts data packets "
    "that reached a RIO queue uncoloured (0 in every run).",
    "RTT-RTO reads each connection's RTO as ns-3's estimator last set it (its RTO trace "
    "without the doublings of a timeout), the mean over the aggregate's connections "
    "exchanged every second, as qoslab's `rto = 'oracle'` reads its senders. The two "
    "simulators' TCPs estimate different RTOs for these connections, which live on "
    "timeouts (the RTO columns below: each aggregate's RTO as its marker last used it), so "
    "RTT-RTO's RTO term is not the same in both; why ns-3's means run to seconds is not "
    "decided here.",
    "ns-3's TCP opens with a SYN handshake (qoslab's flows start without one) and frames "
    "packets with a 2-byte PPP header; each queue of N packets is an (N − 1)-packet queue "
    "disc in front of a 1-packet device queue, and the RIO averages count the disc's "
    "packets.",
    "Start times are uniform in [0, 5) s in both, drawn by each simulator's own "
    "generator from the seed: the same distribution, not the same draws.",
]


def long_short(g: list[float]) -> float:
    """Mean of F1, F2 minus mean of F3–F5 [Mb/s] from the goodputs in F1..F5 order."""
    return statistics.mean(g[:2]) - statistics.mean(g[2:])


def qoslab_run(topo: str, marker: str, seed: int, seconds: float) -> dict[str, Any]:
    """One qoslab run of the committed scenario: per aggregate goodput [Mb/s], timeouts
    and DP0 rate ÷ CIR after the warm-up."""
    import polars as pl

    import qoslab
    from qoslab.reproduce import p3, scenarios_dir

    over = dict(p3.MD_TOPOLOGIES[topo])
    if seconds != p3.DURATION:
        over["duration"] = f"{seconds:g}s"
    t0 = time.time()
    res = qoslab.run(scenarios_dir() / "p3" / f"md-{marker}.toml", over, seed=seed)
    fl = res.tables["flows"].with_columns(
        pl.col("name").str.split("-").list.first().alias("aggregate")
    )
    marks = p3.colours(res, seconds - p3.WARMUP, CIR_BPS)
    g = {a: fl.filter(pl.col("aggregate") == a) for a in AGGS}
    # The RTO each marker last used for its aggregate (the marker sits on "<src>->...").
    rm = res.tables["rtt_markers"]
    src = {a: p3.MD_FLOWS[a][0] for a in AGGS}
    rto = {a: [v for at, v in zip(rm["at"], rm["rto_ms"], strict=True) if f"{src[a]}->" in at]
           for a in AGGS}  # fmt: skip
    return {
        "rto_s": [rto[a][0] / 1e3 for a in AGGS],
        "goodputs": [float(g[a]["goodput_bps"].sum()) / 1e6 for a in AGGS],
        "timeouts": [int(g[a]["timeouts"].sum()) for a in AGGS],
        "dp0_cir": [marks[a]["dp0_cir"] for a in AGGS],
        "wall_s": time.time() - t0,
    }


def ns3_run(topo: str, marker: str, seed: int, seconds: float) -> dict[str, Any]:
    """One run of the ns-3 peer: per aggregate goodput [Mb/s], timeouts, DP0 rate ÷ CIR
    and published RTO, per RIO queue its drops per colour after the warm-up."""
    from qoslab.reproduce import p3

    args = [str(BIN), f"--marker={marker}", f"--duration={seconds:g}",
            f"--warmup={p3.WARMUP:g}", f"--middle={int(topo == 'middle')}",
            f"--run={seed}"]  # fmt: skip
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    measured = seconds - p3.WARMUP
    aggs: dict[str, dict[str, float]] = {}
    links: dict[str, list[int]] = {}
    untagged, wall = -1, 0.0
    for line in out.splitlines():
        p = line.split()
        if p[0] == "agg":
            aggs[p[1]] = dict(zip(p[2::2], map(float, p[3::2]), strict=True))
        elif p[0] == "link":
            links[p[1]] = [int(x) for x in p[3:]]
        elif p[0] == "untagged":
            untagged = int(p[1])
        elif p[0] == "wall_s":
            wall = float(p[1])
    return {
        "goodputs": [8 * aggs[a]["rx_bytes"] / measured / 1e6 for a in AGGS],
        "timeouts": [int(aggs[a]["timeouts"]) for a in AGGS],
        "dp0_cir": [8 * aggs[a]["dp0"] / measured / CIR_BPS for a in AGGS],
        "rto_s": [aggs[a]["rto"] for a in AGGS],
        "drops": links,
        "untagged": untagged,
        "wall_s": wall,
    }


def measure_qoslab(a: argparse.Namespace) -> list[dict[str, Any]]:
    """qoslab's rows: (topology, marker) × seed."""
    jobs = [(t, m, s) for t, m in CELLS for s in range(1, a.seeds + 1)]
    rows = []
    t0 = time.time()
    for t, m, s in jobs:
        rows.append({"sim": "qoslab", "topology": t, "marker": m, "seed": s,
                     **qoslab_run(t, m, s, a.seconds)})  # fmt: skip
    print(f"qoslab: {len(jobs)} runs, {time.time() - t0:.0f} s", flush=True)
    return rows


def measure(a: argparse.Namespace) -> dict[str, Any]:
    """Every cell: (topology, marker) × seed × simulator."""
    jobs = [(t, m, s) for t, m in CELLS for s in range(1, a.seeds + 1)]
    rows = measure_qoslab(a)

    def one(job: tuple[str, str, int]) -> dict[str, Any]:
        t, m, s = job
        return {"sim": "ns-3.44", "topology": t, "marker": m, "seed": s,
                **ns3_run(t, m, s, a.seconds)}  # fmt: skip

    t0 = time.time()
    with ThreadPoolExecutor(max_workers=a.jobs) as ex:
        for k, r in enumerate(ex.map(one, jobs), 1):
            rows.append(r)
            print(f"ns-3: {k}/{len(jobs)} runs, {time.time() - t0:.0f} s", flush=True)
    from qoslab.reproduce import p3

    return {
        "what": "P3 Fig. 6's per-aggregate goodput, ns-3.44 and qoslab, per marker",
        "command": f"python validation/ns3_p3_f6.py --seeds {a.seeds} --seconds {a.seconds:g}",
        "duration": a.seconds,
        "warmup": p3.WARMUP,
        "rows": rows,
    }


def _sel(rows: list[dict[str, Any]], sim: str, topo: str, marker: str) -> list[dict[str, Any]]:
    return sorted(
        (r for r in rows if r["sim"] == sim and r["topology"] == topo and r["marker"] == marker),
        key=lambda r: r["seed"],
    )


def _rng(xs: list[float], digits: int = 2) -> str:
    m = statistics.mean(xs)
    if len(xs) == 1:
        return f"{m:+.{digits}f}"
    return f"{m:+.{digits}f} ({min(xs):+.{digits}f} … {max(xs):+.{digits}f})"


def verdicts(data: dict[str, Any]) -> dict[str, str]:
    """The decided orders, per simulator: does every seed give long < short under the
    basic marker (each topology), and RTT-RTO's Jain above the basic marker's?"""
    rows = data["rows"]
    out = {}
    for sim in ("qoslab", "ns-3.44"):
        for topo in ("all", "middle"):
            d = [long_short(r["goodputs"]) for r in _sel(rows, sim, topo, "rtt")]
            if d:
                out[f"{sim} {topo} rtt"] = (
                    "long < short in every seed" if max(d) < 0
                    else "long > short in every seed" if min(d) > 0
                    else "mixed across seeds")  # fmt: skip
        pairs = zip(_sel(rows, sim, "all", "rtt-rto"), _sel(rows, sim, "all", "rtt"), strict=True)
        j = [jain(a["goodputs"]) - jain(b["goodputs"]) for a, b in pairs]
        if j:
            out[f"{sim} jain"] = (
                "RTT-RTO below basic in every seed" if max(j) < 0
                else "RTT-RTO above basic in every seed" if min(j) > 0
                else "mixed across seeds")  # fmt: skip
    return out


def page(data: dict[str, Any]) -> str:
    """The markdown page: the set-up and its mismatches, per-aggregate goodput and the
    long − short difference per marker in both simulators, Jain, and the decided orders."""
    rows = data["rows"]
    seeds = sorted({r["seed"] for r in rows})
    sims = ["qoslab", "ns-3.44"]
    v = verdicts(data)
    out = [
        "# P3 Fig. 6 in ns-3.44 beside qoslab",
        "",
        f"Made by `{data['command']}` (then `--page-only`). The multi-domain topology of "
        "P3's Fig. 6 as qoslab reads it (`scenarios/p3/md-*.toml`: R1 – R2 – R3 – R4 at "
        "20, 2 and 20 ms, F1 and F2 across every domain (RTT 88 ms), F3 across R2–R3 "
        "(8 ms), F4 across R1–R2 and F5 across R3–R4 (44 ms); 200 NewReno micro-flows "
        "per aggregate, CIR 1 Mb/s, three-colour RED between the domains), "
        f"{data['duration']:g} s runs with the first "
        f"{data['warmup']:g} s discarded, seeds {seeds[0]}–{seeds[-1]} in each simulator. "
        "Goodput is the payload each aggregate's receiver got after the warm-up. "
        "long − short is the mean of F1, F2 minus the mean of F3–F5 (P3: positive under the "
        "basic RTT-aware marker), mean over seeds with the lowest and highest seed in "
        "brackets. [p3.md](../papers/p3.md#f6-ns3) discusses this page.",
        "",
        "What the ns-3 program (`validation/ns3/p3_f6.cc`) cannot match or had to write:",
        "",
        *[f"- {m}" for m in MISMATCHES],
        "",
        "## Goodput per aggregate",
        "",
        "Mb/s, mean over seeds.",
        "",
        "| topology | marker | simulator | F1 | F2 | F3 | F4 | F5 | long − short (Mb/s) | Jain |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for topo, marker in CELLS:
        for sim in sims:
            rs = _sel(rows, sim, topo, marker)
            if not rs:
                continue
            g = [statistics.mean(r["goodputs"][i] for r in rs) for i in range(len(AGGS))]
            ls = [long_short(r["goodputs"]) for r in rs]
            jn = statistics.mean(jain(r["goodputs"]) for r in rs)
            out.append(
                f"| {topo} | {LABEL[marker]} | {sim} | "
                + " | ".join(f"{x:.2f}" for x in g)
                + f" | {_rng(ls)} | {jn:.3f} |"
            )
    out += [
        "",
        "## The orders P3's claims are about",
        "",
        "| claim (P3 §V.C) | topology | qoslab | ns-3.44 |",
        "|---|---|---|---|",
    ]
    for topo in ("all", "middle"):
        q, n = v.get(f"qoslab {topo} rtt"), v.get(f"ns-3.44 {topo} rtt")
        if q or n:
            out.append(
                f"| basic RTT-aware: long (F1, F2) above short (F3–F5) | {TOPOLOGY[topo]} | "
                f"{q or ''} | {n or ''} |"
            )
    q, n = v.get("qoslab jain"), v.get("ns-3.44 jain")
    if q or n:
        out.append(
            f"| RTT-RTO's Jain index above the basic marker's | {TOPOLOGY['all']} | "
            f"{q or ''} | {n or ''} |"
        )
    out += [
        "",
        "## Timeouts, DP0 and RTO",
        "",
        "Per aggregate after the warm-up, mean over seeds: timeouts (qoslab's counter; "
        "ns-3: entries into CA_LOSS) and DP0 rate ÷ CIR (the profile: 1 when the marker "
        "holds DP0 to the CIR); under RTT-RTO also the RTO each aggregate's marker last used "
        "[s].",
        "",
        "| topology | marker | simulator | timeouts F1–F5 | DP0 ÷ CIR F1–F5 | RTO F1–F5 (s) |",
        "|---|---|---|---|---|---|",
    ]
    for topo, marker in CELLS:
        for sim in sims:
            rs = _sel(rows, sim, topo, marker)
            if not rs:
                continue

            def m(key: str, i: int, rs: list[dict[str, Any]] = rs) -> float:
                return statistics.mean(r[key][i] for r in rs)

            to = " / ".join(f"{m('timeouts', i):.0f}" for i in range(len(AGGS)))
            dp = " / ".join(f"{m('dp0_cir', i):.2f}" for i in range(len(AGGS)))
            rto = (" / ".join(f"{m('rto_s', i):.2f}" for i in range(len(AGGS)))
                   if marker == "rtt-rto" and "rto_s" in rs[0] else "")  # fmt: skip
            out.append(f"| {topo} | {LABEL[marker]} | {sim} | {to} | {dp} | {rto} |")
    ns = [r for r in rows if r["sim"] == "ns-3.44"]
    wall = sum(r["wall_s"] for r in ns)
    untagged = sum(r["untagged"] for r in ns)
    out += [
        "",
        f"Uncoloured data packets at the ns-3 RIO queues over all runs: {untagged}. "
        f"ns-3's {len(ns)} runs took {wall:.0f} s of wall time in all, qoslab's "
        f"{sum(r['wall_s'] for r in rows if r['sim'] == 'qoslab'):.0f} s.",
        "",
    ]
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ns3-venv", type=pathlib.Path, default=ROOT / ".ns3-venv")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=150.0, help="run length (both)")
    ap.add_argument("-j", "--jobs", type=int, default=1, help="ns-3 runs at once")
    ap.add_argument(
        "--page-only", action="store_true", help="rewrite the page from the committed data"
    )
    ap.add_argument(
        "--qoslab-only",
        action="store_true",
        help="run qoslab's side again and keep the committed data's ns-3 rows",
    )
    a = ap.parse_args()
    if a.qoslab_only:
        data = json.loads(DATA.read_text())
        ns3 = [r for r in data["rows"] if r["sim"] != "qoslab"]
        data["rows"] = measure_qoslab(a) + ns3
        DATA.write_text(json.dumps(data, indent=1) + "\n")
    elif not a.page_only:
        build(a.ns3_venv, BIN, SRC, ROOT / "validation" / "ns3" / "peer_tcp.h")
        DATA.parent.mkdir(parents=True, exist_ok=True)
        DATA.write_text(json.dumps(measure(a), indent=1) + "\n")
    text = page(json.loads(DATA.read_text()))
    PAGE.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

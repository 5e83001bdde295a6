#!/usr/bin/env python3
"""P4 Fig. 2(a)'s WAIMD at small weights in a second simulator: f0's throughput ratio to
a unit flow, ns-3.44 beside qoslab, on the single link.

qoslab's MulTCP overshoots the ideal at w = 2, 5 and 10 (ratio ÷ w 1.24, 1.55 and 1.52
in full mode, outside the ideal's 20 % band that the paper's curve implies). ns-3, which
nobody here wrote, runs the same dumbbell (validation/ns3/p4_waimd.cc: the topology, RED,
TCP SACK settings and start jitter of ``qoslab.reproduce.p4.single_link("waimd")``) with
f0 a small TcpCongestionOps subclass implementing P4 §3.1's weighted AIMD as qoslab does
(``crates/qoslab/src/tcp/cc/multcp.rs``): w segments per RTT in congestion avoidance,
ssthresh (1 − 1/(2w)) of the data in flight on a loss. qoslab runs as the reproduction
does (ssthresh from FlightSize) and with ``halve = "pipe"`` on every flow (RFC 6675's
pipe, the figure ns-3 hands its congestion control with SACK on).

Writes validation/data/ns3-p4-waimd.json and docs/validation/ns3-p4-waimd.md (from the
data; ``--page-only`` rewrites the page without running anything).

    python validation/ns3_p4_waimd.py [--ns3-venv .ns3-venv] [--seeds 3] [--seconds 300]
        [--weights 1,2,5,10] [-j 1] [--page-only]

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

ROOT = pathlib.Path(__file__).resolve().parent.parent
NS3 = ROOT / "validation" / "ns3"
#: Figure → (ns-3 peer, qoslab scenario builder's name in ``qoslab.reproduce.p4``, file
#: suffix, title).
FIGURES = {
    "2a": ("p4_waimd", "single_link", "", "Fig. 2(a), single link"),
    "6a": ("p4_multilink", "multi_link", "-f6a", "Fig. 6(a), multiple links"),
}
SRC = NS3 / "p4_waimd.cc"
BIN = NS3 / "build" / "p4_waimd"
DATA = ROOT / "validation" / "data" / "ns3-p4-waimd.json"
PAGE = ROOT / "docs" / "validation" / "ns3-p4-waimd.md"


def use_figure(fig: str) -> None:
    """Points :data:`SRC`, :data:`BIN`, :data:`DATA` and :data:`PAGE` at figure ``fig``'s
    peer, data and page."""
    global SRC, BIN, DATA, PAGE
    prog, _, suffix, _ = FIGURES[fig]
    SRC, BIN = NS3 / f"{prog}.cc", NS3 / "build" / prog
    DATA = ROOT / "validation" / "data" / f"ns3-p4-waimd{suffix}.json"
    PAGE = ROOT / "docs" / "validation" / f"ns3-p4-waimd{suffix}.md"


WARMUP_S = 20.0
#: The ideal's band the reproduction judges ratio ÷ w against (1 ± 0.2).
BAND = (0.8, 1.2)
#: Simulator columns of the page: (row key, label).
SIMS = [
    ("qoslab", "qoslab (FlightSize, the reproduction)"),
    ("qoslab-pipe", 'qoslab, halve = "pipe"'),
    ("ns-3.44", "ns-3.44"),
]

#: What the ns-3 program cannot match, for the page.
MISMATCHES = [
    "ns-3's TCP opens with a SYN handshake (qoslab's P4 flows start without one) and "
    "frames every packet with a 2-byte PPP header on the links (qoslab sends 1040-byte "
    "packets, no framing).",
    "With SACK on, ns-3 hands a congestion control RFC 6675's pipe as the data in flight "
    "when a loss is detected; qoslab's reproduction halves FlightSize (`halve = "
    '"flight"`), so qoslab is also run with `halve = "pipe"`.',
    "ns-3's unit flows f1..f9 are its own TcpNewReno (ssthresh max(2, flight/2) in bytes); "
    "qoslab's Reno and both simulators' MulTCP round ssthresh down to whole segments.",
    "The start times are uniform in [0, 5) s in both, drawn by each simulator's own "
    "generator from the seed: the same distribution, not the same draws.",
    "A DropTail queue of 1000 packets is, in ns-3, a 999-packet FifoQueueDisc in front of "
    "a 1-packet device queue; the RED disc gets 320 000 − 1040 bytes for the same reason.",
]


#: What the multiple-link peer cannot match besides :data:`MISMATCHES`.
MISMATCHES_6A = [
    "The Pareto on/off sources are ns-3's OnOffApplication with Pareto on and off "
    "periods in seconds (the same means and shape, 1000-byte packets); qoslab's follow "
    "ns-2's Application/Traffic/Pareto. The CBR's rates (one per second, uniform in "
    "0.5–3.5 Mb/s) and the sources' start times come from each simulator's own generator.",
    "The ns-3 peer does not count the bottleneck's drops (the drops column shows qoslab's only).",
]
#: Figure → (page title, set-up sentence) of the page.
PAGE_TEXT = {
    "2a": ("# P4 Fig. 2(a): WAIMD at small weights in ns-3.44 beside qoslab",
           "Single link (10 Mb/s, 240 ms base RTT, RED in byte mode with 320 KB), ten TCP SACK "
           "flows, f0 weighted AIMD of weight w; {secs} s runs, measured after {warm} s, seeds "
           "{s0}–{s1}. The reproduction's full mode runs 300 s with 3 seeds and judges f0's "
           "ratio to a unit flow, divided by w, against 1 ± 0.2."),
    "6a": ("# P4 Fig. 6(a): WAIMD at small weights on multiple links in ns-3.44 beside qoslab",
           "Multiple links (five routers, bottleneck r1 → r2 at 10 Mb/s, RED in byte mode on "
           "every backbone link, ten long TCP SACK flows of 240 ms and four short ones, 60 "
           "Pareto on/off UDP sources and a CBR whose rate changes every second), f0 weighted "
           "AIMD of weight w; {secs} s runs, measured after {warm} s, seeds {s0}–{s1}. The "
           "reproduction's full mode runs 600 s with 3 seeds and judges f0's ratio to a unit "
           "long flow, divided by w, against 1 ± 0.2."),
}  # fmt: skip


def qoslab_run(fig: str, w: int, seed: int, seconds: float, pipe: bool) -> dict[str, Any]:
    """One qoslab run of figure ``fig``'s WAIMD scenario with f0 at weight ``w``: the
    goodputs of f0..f9, their timeouts after the warm-up, the drops on r1 -> r2 (the
    bottleneck of both figures)."""
    import polars as pl

    import qoslab
    from qoslab.reproduce import p4

    sc = getattr(p4, FIGURES[fig][1])("waimd")
    sc["duration"] = f"{seconds:g}s"
    for f in sc["flow"]:
        if pipe and "tcp" in f:
            f["tcp"]["halve"] = "pipe"
    sc["flow"][0]["tcp"]["cc"]["w"] = w
    res = qoslab.run(sc, seed=seed)
    fl = res.tables["flows"]
    by = {n: (float(g), int(t)) for n, g, t in zip(fl["name"], fl["goodput_bps"],
                                                    fl["timeouts"], strict=True)}  # fmt: skip
    g, to = zip(*(by[f"f{i}"] for i in range(p4.N_FLOWS)), strict=True)
    q = res.tables["queues"].filter(pl.col("iface") == "r1->r2")
    return {"goodputs": list(g), "f0_timeouts": to[0], "unit_timeouts": list(to[1:]),
            "bottleneck_drops": int(q["dropped"][0])}  # fmt: skip


def ns3_run(w: int, seed: int, seconds: float) -> dict[str, Any]:
    """One ns-3 run of the peer: the same measures as :func:`qoslab_run`."""
    out = subprocess.run(
        [str(BIN), f"--w={w}", f"--run={seed}", f"--duration={seconds:g}",
         f"--warmup={WARMUP_S:g}"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    g, to, drops, wall = [], [], None, 0.0
    for line in out.splitlines():
        p = line.split()
        if p[0] == "flow" and int(p[1]) < 10:
            g.append(float(p[3]))
            to.append(int(p[5]))
        elif p[0] == "bottleneck_drops":
            drops = int(p[1])
        elif p[0] == "wall_s":
            wall = float(p[1])
    return {"goodputs": g, "f0_timeouts": to[0], "unit_timeouts": to[1:],
            "bottleneck_drops": drops, "wall_s": wall}  # fmt: skip


def measure(a: argparse.Namespace) -> dict[str, Any]:
    """Every cell: weight × seed × simulator."""
    weights = [int(x) for x in a.weights.split(",")]
    seeds = list(range(1, a.seeds + 1))
    rows = []
    for w in weights:
        for s in seeds:
            for sim, pipe in (("qoslab", False), ("qoslab-pipe", True)):
                q = qoslab_run(a.figure, w, s, a.seconds, pipe)
                rows.append({"sim": sim, "w": w, "seed": s, **q})
    cells = [(w, s) for w in weights for s in seeds]
    t0 = time.time()
    with ThreadPoolExecutor(max_workers=a.jobs) as ex:
        for k, ((w, s), r) in enumerate(
            zip(cells, ex.map(lambda c: ns3_run(c[0], c[1], a.seconds), cells), strict=True), 1
        ):
            rows.append({"sim": "ns-3.44", "w": w, "seed": s, **r})
            print(f"ns-3: {k}/{len(cells)} runs, {time.time() - t0:.0f} s", flush=True)
    return {
        "what": f"P4 {FIGURES[a.figure][3]}, WAIMD: f0 ÷ mean(f1..f9), ns-3.44 and qoslab",
        "figure": a.figure,
        "command": f"python validation/ns3_p4_waimd.py --figure {a.figure} --seeds {a.seeds} "
        f"--seconds {a.seconds:g} --weights {a.weights}" + (f" -j {a.jobs}" if a.jobs > 1 else ""),
        "seconds": a.seconds,
        "warmup": WARMUP_S,
        "rows": rows,
    }


def ratio(r: dict[str, Any]) -> float:
    """f0's goodput over the mean of f1..f9's."""
    g = r["goodputs"]
    return g[0] / statistics.mean(g[1:])


def page(data: dict[str, Any]) -> str:
    """The markdown page: set-up, mismatches, ratio ÷ w per simulator and weight (mean
    and range over seeds, in or out of the band), f0's timeouts and the drops."""
    rows = data["rows"]
    fig = data.get("figure", "2a")
    title, setup = PAGE_TEXT[fig]
    mismatches = MISMATCHES + (MISMATCHES_6A if fig == "6a" else [])
    weights = sorted({r["w"] for r in rows})
    seeds = sorted({r["seed"] for r in rows})
    measured = data["seconds"] - data["warmup"]

    def sel(sim: str, w: int) -> list[dict[str, Any]]:
        return [r for r in rows if r["sim"] == sim and r["w"] == w]

    def rw(sim: str, w: int) -> list[float]:
        return [ratio(r) / w for r in sel(sim, w)]

    out = [
        title,
        "",
        f"Made by `{data['command']}` (then `--page-only`). "
        + setup.format(
            secs=f"{data['seconds']:g}", warm=f"{data['warmup']:g}", s0=seeds[0], s1=seeds[-1]
        ),
        "",
        f"What the ns-3 program (`validation/ns3/{FIGURES[fig][0]}.cc`) cannot match:",
        "",
        *[f"- {m}" for m in mismatches],
        "",
        "## f0's ratio ÷ w",
        "",
        "Mean over seeds (lowest–highest seed); in or out of the band "
        f"{BAND[0]:g}–{BAND[1]:g} by the mean.",
        "",
        "| w | " + " | ".join(lab for _, lab in SIMS) + " |",
        "|---|" + "---|" * len(SIMS),
    ]
    for w in weights:
        cells = []
        for sim, _ in SIMS:
            v = rw(sim, w)
            if not v:
                cells.append("")
                continue
            m = statistics.mean(v)
            tag = "in" if BAND[0] <= m <= BAND[1] else "out"
            cells.append(f"{m:.2f} ({min(v):.2f}–{max(v):.2f}) {tag}")
        out.append(f"| {w} | " + " | ".join(cells) + " |")
    out += [
        "",
        "## Timeouts and drops",
        "",
        f"Per 100 s of the {measured:g} s measured, mean over seeds: f0's timeouts, a unit "
        "flow's (mean of f1..f9) and the bottleneck's drops.",
        "",
        "| w | " + " | ".join(f"{lab}: f0 / unit / drops" for _, lab in SIMS) + " |",
        "|---|" + "---|" * len(SIMS),
    ]
    for w in weights:
        cells = []
        for sim, _ in SIMS:
            rs = sel(sim, w)
            if not rs:
                cells.append("")
                continue
            k = 100 / measured
            f0 = statistics.mean(r["f0_timeouts"] for r in rs) * k
            unit = statistics.mean(statistics.mean(r["unit_timeouts"]) for r in rs) * k
            drops = [r["bottleneck_drops"] for r in rs if r["bottleneck_drops"] is not None]
            dr = f"{statistics.mean(drops) * k:.0f}" if drops else "–"
            cells.append(f"{f0:.1f} / {unit:.1f} / {dr}")
        out.append(f"| {w} | " + " | ".join(cells) + " |")
    tot = [
        (sim, statistics.mean(sum(r["goodputs"]) for r in rows if r["sim"] == sim) / 1e6)
        for sim, _ in SIMS
    ]
    wall = [r["wall_s"] for r in rows if r["sim"] == "ns-3.44"]
    out += [
        "",
        "Total goodput of the ten flows, mean over all runs: "
        + ", ".join(f"{s} {t:.2f} Mb/s" for s, t in tot)
        + f". ns-3's {len(wall)} runs took {sum(wall):.0f} s of wall time in all.",
        "",
    ]
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ns3-venv", type=pathlib.Path, default=ROOT / ".ns3-venv")
    ap.add_argument("--figure", choices=sorted(FIGURES), default="2a")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=300.0)
    ap.add_argument("--weights", default="1,2,5,10")
    ap.add_argument("-j", "--jobs", type=int, default=1, help="ns-3 runs at once")
    ap.add_argument("--page-only", action="store_true", help="rewrite the page from the data")
    a = ap.parse_args()
    use_figure(a.figure)
    if not a.page_only:
        build(a.ns3_venv, BIN, SRC, NS3 / "multcp.h")
        DATA.parent.mkdir(parents=True, exist_ok=True)
        DATA.write_text(json.dumps(measure(a), indent=1) + "\n")
    text = page(json.loads(DATA.read_text()))
    PAGE.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""P0 Fig. 5 (partitioned token buckets, unequal links) in a second simulator: the
aggregate's total in % of its rate, ns-3.44 beside qoslab, for every assignment of the
paper's three client link speeds that ``p0-f5`` runs.

qoslab gives 89.7 % where the paper gives 87 %, and no assignment of the paper's speeds
(1000, 500, 100 kb/s) to the four clients lands within 87 ± 2 % in qoslab. ns-3, which
nobody here wrote, runs the same scenario (validation/ns3/p0_f5.cc: the topology, TCP,
DropTail queues and per-connection token buckets of ``qoslab.reproduce.p0.scenario`` with
``SHAPE_PART_RTT``; each bucket's depth is the one qoslab's run reports). Both simulators
run the paper's TCP (NewReno without SACK, the reproduction's) and SACK, whose loss
recovery does not depend on how a sender without SACK repairs a window after a timeout.

Writes validation/data/ns3-p0-f5.json and docs/validation/ns3-p0-f5.md (from the data;
``--page-only`` rewrites the page without running anything).

    python validation/ns3_p0_f5.py [--ns3-venv .ns3-venv] [--seeds 3]
        [--assignments all|base] [-j 1] [--page-only]

Needs the ns3 wheel in a separate venv (``validation/ns3/build.sh`` creates ./.ns3-venv
and compiles the peer into validation/ns3/build/; this script runs build.sh when the
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
SRC = ROOT / "validation" / "ns3" / "p0_f5.cc"
BIN = ROOT / "validation" / "ns3" / "build" / "p0_f5"
DATA = ROOT / "validation" / "data" / "ns3-p0-f5.json"
PAGE = ROOT / "docs" / "validation" / "ns3-p0-f5.md"
#: The reproduction's client links (``p0-f5``'s headline scenario, f5-unequal).
BASE = [1000e3, 500e3, 500e3, 100e3]
#: TCP variants run in both simulators: label → qoslab ``tcp.variant``, ns-3 ``--sack``.
VARIANTS = {"NewReno": ("newreno", 0), "SACK": ("sack", 1)}
PAPER_PCT = 87.0

#: What the ns-3 program cannot match, for the page.
MISMATCHES = [
    "ns-3's TbfQueueDisc works only as a root queue disc (as a child it wakes itself, not "
    "its parent), so each connection's partition of the bucket is the root disc of its "
    "own sender host, one 1 Gb/s, zero-delay hop (8 µs per 1040-byte packet) before the "
    "server; in qoslab the four connections leave one host through its QoS manager.",
    "ns-3's token bucket releases a packet the moment its tokens suffice; qoslab's "
    "manager releases waiting packets on its 15 ms shaping timer and on the send and "
    "ACK triggers.",
    "ns-3's TCP opens with a SYN handshake (qoslab's P0 flows start without one) and "
    "frames every packet with a 2-byte PPP header on the links (qoslab counts 1040-byte "
    "packets); the token buckets count the 1040-byte IP packet in both.",
    "The start times are uniform in [0, 1) s in both, drawn by each simulator's own "
    "generator from the seed: the same distribution, not the same draws.",
    "A DropTail queue of 50 packets is, in ns-3, a 49-packet FifoQueueDisc in front of a "
    "1-packet device queue (the server's access-link queue likewise, behind the buckets).",
]


def assignments(which: str) -> list[list[float]]:
    """The client link assignments to run: ``all`` (every one ``p0-f5`` runs, the
    reproduction's own first) or ``base`` (the reproduction's only)."""
    from qoslab.reproduce import p0

    rest = [a for a in p0.link_assignments() if a != BASE]
    return [BASE] if which == "base" else [BASE, *rest]


def label(links: list[float]) -> str:
    """``1000/500/500/100``: the client links in kb/s, clients 1–4 (RTT 50, 300, 300,
    600 ms)."""
    return "/".join(f"{b / 1e3:g}" for b in links)


def qoslab_run(links: list[float], variant: str, seed: int) -> dict[str, Any]:
    """One qoslab run of ``p0-f5``'s scenario with ``links`` and TCP ``variant``: the
    total in % of the rate, per flow the throughput [B/s, headers counted] and counters,
    and the bucket depths and link delays the ns-3 peer is given."""
    import qoslab
    from qoslab.reproduce import p0

    sc = p0.scenario("f5-ns3", links, p0.SHAPE_PART_RTT)
    for f in sc["flow"]:
        f["tcp"]["variant"] = variant
    res = qoslab.run(sc, seed=seed)
    fl = res.tables["flows"]
    thr = [g * p0.PKT / p0.MSS / p0.DURATION for g in fl["goodput_bytes"]]
    flows = [
        {"throughput": t, "drops": int(d), "retransmitted": int(r), "recoveries": int(fr),
         "timeouts": int(o)}
        for t, d, r, fr, o in zip(thr, fl["drops"], fl["retransmits"], fl["fast_retransmits"],
                                  fl["timeouts"], strict=True)
    ]  # fmt: skip
    return {
        "total_pct": 100 * sum(thr) / p0.RATE,
        "flows": flows,
        "depths": [float(x) for x in res.tables["qosmgr"]["depth"]],
        "delays_ms": [float(lk["delay"].removesuffix("ms")) for lk in sc["link"][1:]],
    }


def ns3_run(links: list[float], delays_ms: list[float], depths: list[float], sack: int,
            seed: int, duration: float) -> dict[str, Any]:  # fmt: skip
    """One ns-3 run of the peer: the total in % of the rate and per flow the throughput
    [B/s, 1040-byte packets counted] and counters."""
    from qoslab.reproduce import p0

    args = [
        str(BIN),
        "--links=" + ",".join(f"{b:.0f}" for b in links),
        "--delays=" + ",".join(f"{d:g}" for d in delays_ms),
        "--depths=" + ",".join(str(round(d)) for d in depths),
        f"--share={p0.RATE * 8 / len(links):.0f}",
        f"--duration={duration:g}",
        f"--sack={sack}",
        f"--run={seed}",
    ]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    flows, wall = [], 0.0
    for line in out.splitlines():
        p = line.split()
        if p[0] == "flow":
            kv = dict(zip(p[2::2], map(float, p[3::2]), strict=True))
            flows.append(
                {"throughput": kv["rx_bytes"] * p0.PKT / p0.MSS / duration,
                 "drops": int(kv["drops"]), "retransmitted": int(kv["retransmitted"]),
                 "recoveries": int(kv["recoveries"]), "timeouts": int(kv["timeouts"])}
            )  # fmt: skip
        elif p[0] == "wall_s":
            wall = float(p[1])
    total = 100 * sum(f["throughput"] for f in flows) / p0.RATE
    return {"total_pct": total, "flows": flows, "wall_s": wall}


def measure(a: argparse.Namespace) -> dict[str, Any]:
    """Every cell: assignment × TCP variant × seed × simulator."""
    rows = []
    jobs = []
    for links in assignments(a.assignments):
        for name, (variant, _) in VARIANTS.items():
            for seed in range(1, a.seeds + 1):
                q = qoslab_run(links, variant, seed)
                rows.append({"sim": "qoslab", "links": label(links), "tcp": name, "seed": seed,
                             **{k: q[k] for k in ("total_pct", "flows")}})  # fmt: skip
                jobs.append((links, name, seed, q))
    from qoslab.reproduce import p0

    def one(job: tuple[list[float], str, int, dict[str, Any]]) -> dict[str, Any]:
        links, name, seed, q = job
        n = ns3_run(links, q["delays_ms"], q["depths"], VARIANTS[name][1], seed, p0.DURATION)
        return {"sim": "ns-3.44", "links": label(links), "tcp": name, "seed": seed, **n}

    t0 = time.time()
    with ThreadPoolExecutor(max_workers=a.jobs) as ex:
        for k, r in enumerate(ex.map(one, jobs), 1):
            rows.append(r)
            if k % 10 == 0 or k == len(jobs):
                print(f"ns-3: {k}/{len(jobs)} runs, {time.time() - t0:.0f} s", flush=True)
    return {
        "what": "P0 Fig. 5's total in % of the rate, ns-3.44 and qoslab, per link assignment",
        "command": f"python validation/ns3_p0_f5.py --seeds {a.seeds} "
        f"--assignments {a.assignments}",
        "duration": p0.DURATION,
        "rows": rows,
    }


def _cell(xs: list[float], digits: int = 1) -> str:
    if not xs:
        return ""
    m = statistics.mean(xs)
    return f"{m:.{digits}f}" if len(xs) == 1 or max(xs) - min(xs) < 0.05 else (
        f"{m:.{digits}f} ({min(xs):.{digits}f}–{max(xs):.{digits}f})")  # fmt: skip


def _others(rows: list[dict[str, Any]]) -> str:
    """What the three connections beside the 100 kb/s one get in the reproduction's
    assignment, over every run of both simulators."""
    fl = [f for r in rows if r["links"] == label(BASE) for f in r["flows"][:3]]
    lo, hi = min(f["throughput"] for f in fl), max(f["throughput"] for f in fl)
    drops = sum(f["drops"] for f in fl)
    return (f"The three other connections get {lo:,.0f}–{hi:,.0f} B/s of their 20 000 B/s "
            f"share in every run of both simulators and lose {drops} packets in all.")  # fmt: skip


def page(data: dict[str, Any]) -> str:
    """The markdown page: the set-up and its mismatches, the 100 kb/s connection of the
    reproduction's assignment in detail, and the total per assignment and simulator."""
    rows = data["rows"]
    sims = [("qoslab", "NewReno"), ("ns-3.44", "NewReno"), ("qoslab", "SACK"), ("ns-3.44", "SACK")]
    seeds = sorted({r["seed"] for r in rows})
    order = list(dict.fromkeys(r["links"] for r in rows))

    def totals(sim: str, tcp: str, links: str | None = None, slow: int | None = None) -> list:
        return [r["total_pct"] for r in rows if r["sim"] == sim and r["tcp"] == tcp
                and (links is None or r["links"] == links)
                and (slow is None or r["links"].split("/").count("100") == slow)]  # fmt: skip

    out = [
        "# P0 Fig. 5 in ns-3.44 beside qoslab",
        "",
        f"Made by `{data['command']}` (then `--page-only`). The total of the four "
        "connections' throughput (1040-byte packets delivered, over the whole "
        f"{data['duration']:g}-s run) in % of the aggregate's 640 kb/s, partitioned token "
        "buckets with RTT-proportional depths shaping at the server (`p0-f5`'s scheme); "
        f"the paper's total is {PAPER_PCT:g} %. Means over seeds {seeds[0]}–{seeds[-1]} "
        "(range in brackets where the seeds differ by 0.05 points or more). "
        "NewReno without SACK is the reproduction's TCP; SACK is run in both simulators "
        "beside it.",
        "",
        "What the ns-3 program (`validation/ns3/p0_f5.cc`) cannot match:",
        "",
        *[f"- {m}" for m in MISMATCHES],
        "",
        f"## The 100 kb/s connection with links {label(BASE)} kb/s",
        "",
        "Per flow over the run, mean over seeds: throughput in B/s (the 100 kb/s link "
        "carries at most 12 500 B/s), drops at the router's queue towards its client, "
        "segments sent again, entries into fast recovery (qoslab: fast retransmits) and "
        "timeouts. " + _others(rows),
        "",
        "| simulator | TCP | throughput (B/s) | % of link | drops | sent again | recoveries | "
        "timeouts | total (% of rate) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for sim, tcp in sims:
        rs = [r for r in rows if r["sim"] == sim and r["tcp"] == tcp and r["links"] == label(BASE)]
        if not rs:
            continue
        slow = [r["flows"][3] for r in rs]

        def m(k: str, fl: list[dict[str, Any]] = slow) -> float:
            return statistics.mean(f[k] for f in fl)

        out.append(
            f"| {sim} | {tcp} | {m('throughput'):,.0f} | {100 * m('throughput') / 12500:.1f} | "
            f"{m('drops'):.0f} | {m('retransmitted'):.0f} | {m('recoveries'):.0f} | "
            f"{m('timeouts'):.1f} | {_cell([r['total_pct'] for r in rs])} |"
        )
    out += [
        "",
        "## Total per number of 100 kb/s clients",
        "",
        "Lowest and highest per-assignment mean.",
        "",
        "| 100 kb/s clients | assignments | " + " | ".join(f"{s} {t}" for s, t in sims) + " |",
        "|---|---|" + "---|" * len(sims),
    ]
    for k in sorted({lk.split("/").count("100") for lk in order}):
        ls = [lk for lk in order if lk.split("/").count("100") == k]
        cells = []
        for sim, tcp in sims:
            means = [statistics.mean(totals(sim, tcp, lk)) for lk in ls if totals(sim, tcp, lk)]
            cells.append(f"{min(means):.1f}–{max(means):.1f}" if means else "")
        out.append(f"| {k} | {len(ls)} | " + " | ".join(cells) + " |")
    out += [
        "",
        "## Total per assignment",
        "",
        "Client links in kb/s for the clients at 50, 300, 300 and 600 ms base RTT.",
        "",
        "| links | " + " | ".join(f"{s} {t}" for s, t in sims) + " | ns-3 − qoslab, NewReno |",
        "|---|" + "---|" * (len(sims) + 1),
    ]
    for lk in order:
        cells = [_cell(totals(s, t, lk)) for s, t in sims]
        qn, nn = totals("qoslab", "NewReno", lk), totals("ns-3.44", "NewReno", lk)
        d = f"{statistics.mean(nn) - statistics.mean(qn):+.1f}" if qn and nn else ""
        out.append(f"| {lk} | " + " | ".join(cells) + f" | {d} |")
    wall = [r["wall_s"] for r in rows if r["sim"] == "ns-3.44"]
    out += ["", f"ns-3's {len(wall)} runs took {sum(wall):.0f} s of wall time in all.", ""]
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ns3-venv", type=pathlib.Path, default=ROOT / ".ns3-venv")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--assignments", choices=["all", "base"], default="all")
    ap.add_argument("-j", "--jobs", type=int, default=1, help="ns-3 runs at once")
    ap.add_argument(
        "--page-only", action="store_true", help="rewrite the page from the committed data"
    )
    a = ap.parse_args()
    if not a.page_only:
        build(a.ns3_venv, BIN, SRC)
        DATA.parent.mkdir(parents=True, exist_ok=True)
        DATA.write_text(json.dumps(measure(a), indent=1) + "\n")
    text = page(json.loads(DATA.read_text()))
    PAGE.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

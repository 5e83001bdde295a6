#!/usr/bin/env python3
"""P3 Table I (Telnet delay per packet on the multi-domain topology) in a second
simulator: the mean write-to-delivery delay of the long (F1, F2, F4) and short (F3, F5)
aggregates under the standard TSW3CM, the basic RTT-aware, the RTT-RTO and the RTT-SW
markers, ns-3.44 beside qoslab for the same seeds.

Table I puts RTT-SW's short-group delay below RTT-RTO's (1.84 s against 1.98 s); qoslab
finds it above (``p3-t1``, docs/papers/p3.md), an open finding. ns-3, whose TCP nobody
here wrote, runs the same workload (validation/ns3/p3_f6.cc with ``--telnet=1``: the
topology of ``qoslab.reproduce.p3.multi_domain`` with every link at 1 Mb/s, 100 Telnet
sessions per aggregate as ``qoslab.reproduce.p3_telnet.telnet_scenario`` defines them,
CIR/PIR 100/200 kb/s, 200 s runs), with the markers, small-window protection and the
three-colour RED written as small ns-3 components from P3's text and RFC 2859, not from
qoslab's code. qoslab runs the committed scenarios (scenarios/p3/telnet-*.toml, or the
same scenario at another start window) through its Python API.

Writes validation/data/ns3-p3-t1.json and docs/validation/ns3-p3-t1.md (from the data;
``--page-only`` rewrites the page without running anything).

    python validation/ns3_p3_t1.py [--ns3-venv .ns3-venv] [--seeds 10] [--windows 50]
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

ROOT = pathlib.Path(__file__).resolve().parent.parent
SRC = ROOT / "validation" / "ns3" / "p3_f6.cc"
BIN = ROOT / "validation" / "ns3" / "build" / "p3_f6"
DATA = ROOT / "validation" / "data" / "ns3-p3-t1.json"
PAGE = ROOT / "docs" / "validation" / "ns3-p3-t1.md"
AGGS = ["F1", "F2", "F3", "F4", "F5"]
#: Table I's groups as the paper prints them.
GROUPS = {"long": ["F1", "F2", "F4"], "short": ["F3", "F5"], "overall": AGGS}
MARKERS = ["standard", "rtt", "rtt-rto", "rtt-sw"]
LABEL = {"standard": "standard (TSW3CM)", "rtt": "basic RTT-aware", "rtt-rto": "RTT-RTO",
         "rtt-sw": "RTT-SW"}  # fmt: skip
#: Table I: marker → (F1, F2, F4 delay; F3, F5 delay; overall) [s] (as p3_telnet.PAPER_T1).
PAPER = {
    "standard": (5.36, 2.32, 3.62),
    "rtt": (5.23, 2.18, 3.48),
    "rtt-rto": (5.32, 1.98, 3.19),
    "rtt-sw": (5.12, 1.84, 2.89),
}
DURATION = 200.0

#: What the ns-3 program cannot match or had to write, for the page.
MISMATCHES = [
    "The markers, small-window protection and the three-colour RED are this project's own "
    "ns-3 components (`validation/ns3/p3_f6.cc`, the Fig. 6 peer with `--telnet=1`), "
    "written from P3's text and RFC 2859 ([ns3-p3-f6.md](ns3-p3-f6.md) lists them). "
    "RTT-SW is the basic marker with every packet of a connection whose cwnd is below "
    "3 segments DP0 and the protected bytes paid back by later DP0 packets (DP2 debt "
    "first), qoslab's headline reading (`protect_bound = \"none\"`). The cwnd is ns-3's "
    "own (its CongestionWindow trace, in whole segments); qoslab's marker reads the cwnd "
    "its sender stamps on the segment.",
    "Each session is one connection of 5–35 writes (uniform), then exponential gaps of "
    "mean 100 ms, each write one 1024-byte segment (Nagle off), the connection closed "
    "after its last write. ns-3's connections open with a SYN handshake, which qoslab's "
    "do not have: a session opens its connection at its start and makes its first write "
    "when the handshake completes, so the handshake is not in the writes' delay (a lost "
    "SYN is sent again after 1 s, RFC 6298's initial RTO, instead of ns-3's 3 s). The "
    "handshake also gives ns-3's estimator its first RTT sample (qoslab's first RTO is "
    "1 s until a data segment is acknowledged). Opening every connection at t ≈ 0 "
    "instead was tried and dropped: the sample from an empty network set the RTO to "
    "275 ms, below the loaded RTT, and the first writes of every session timed out "
    "again and again (Karn's rule keeps the RTO there).",
    "ns-3 gives a connection up after 6 retransmissions of one segment; qoslab's TCP "
    "retries for ever, and so does the peer here (`DataRetries` raised): with the default, "
    "in the version that opened every connection at t ≈ 0, six F1 sessions of seed 1 "
    "under the standard marker stalled and never delivered their last writes.",
    "Start times, session lengths and gaps are drawn by each simulator's own generator "
    "from the seed: the same distributions, not the same draws. Packets carry a 2-byte "
    "PPP header in ns-3 (1066 bytes on the wire against qoslab's 1064).",
]


def qoslab_run(marker: str, seed: int, window: float) -> dict[str, Any]:
    """One qoslab run: per aggregate the writes, the delivered ones, the sum of their
    delays and of the sessions' completion times [s], and its timeouts."""
    import polars as pl

    import qoslab
    from qoslab.reproduce import p3_telnet, scenarios_dir

    t0 = time.time()
    if window == p3_telnet.START_WINDOW:
        sc: Any = scenarios_dir() / "p3" / f"telnet-{marker}.toml"
    else:
        sc = p3_telnet.telnet_scenario(marker, window)
    res = qoslab.run(sc, seed=seed)
    w, s = p3_telnet.telnet_delays(res)
    fl = res.tables["flows"].with_columns(
        pl.col("name").str.split("-").list.first().alias("aggregate")
    )
    aggs = {}
    for a in AGGS:
        wa = w.filter(pl.col("aggregate") == a)
        ok = wa.filter(pl.col("delay").is_not_nan())
        sa = s.filter(pl.col("aggregate") == a)
        aggs[a] = {
            "writes": wa.height,
            "delivered": ok.height,
            "delay_sum": float(ok["delay"].sum()),
            "completion_sum": float(sa["completion"].fill_nan(None).sum()),
            "sessions": sa.height,
            "timeouts": int(fl.filter(pl.col("aggregate") == a)["timeouts"].sum()),
        }
    return {"aggs": aggs, "wall_s": time.time() - t0}


def ns3_run(marker: str, seed: int, window: float) -> dict[str, Any]:
    """One run of the ns-3 peer with the Telnet workload: the same per-aggregate sums,
    its DP0/DP1/DP2 counts and protected packets, per RIO queue its drops per colour."""
    args = [str(BIN), "--telnet=1", f"--marker={marker}", f"--duration={DURATION:g}",
            "--warmup=0", f"--window={window:g}", f"--run={seed}"]  # fmt: skip
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    aggs: dict[str, dict[str, float]] = {}
    links: dict[str, list[int]] = {}
    untagged, wall = -1, 0.0
    for line in out.splitlines():
        p = line.split()
        if p[0] == "tel":
            aggs[p[1]] = dict(zip(p[2::2], map(float, p[3::2]), strict=True))
        elif p[0] == "link":
            links[p[1]] = [int(x) for x in p[3:]]
        elif p[0] == "untagged":
            untagged = int(p[1])
        elif p[0] == "wall_s":
            wall = float(p[1])
    ints = ("writes", "delivered", "sessions", "timeouts", "dp1", "dp2", "protected")
    return {
        "aggs": {a: {k: int(v) if k in ints else v for k, v in aggs[a].items()} for a in AGGS},
        "drops": links,
        "untagged": untagged,
        "wall_s": wall,
    }


def measure(a: argparse.Namespace) -> dict[str, Any]:
    """Every cell: window × marker × seed × simulator."""
    jobs = [(w, m, s) for w in a.windows for m in MARKERS for s in range(1, a.seeds + 1)]
    rows = []
    t0 = time.time()
    for w, m, s in jobs:
        rows.append({"sim": "qoslab", "window": w, "marker": m, "seed": s,
                     **qoslab_run(m, s, w)})  # fmt: skip
    print(f"qoslab: {len(jobs)} runs, {time.time() - t0:.0f} s", flush=True)

    def one(job: tuple[float, str, int]) -> dict[str, Any]:
        w, m, s = job
        return {"sim": "ns-3.44", "window": w, "marker": m, "seed": s, **ns3_run(m, s, w)}

    t0 = time.time()
    with ThreadPoolExecutor(max_workers=a.jobs) as ex:
        for k, r in enumerate(ex.map(one, jobs), 1):
            rows.append(r)
            print(f"ns-3: {k}/{len(jobs)} runs, {time.time() - t0:.0f} s", flush=True)
    windows = " ".join(f"{w:g}" for w in a.windows)
    return {
        "what": "P3 Table I's Telnet delay per packet, ns-3.44 and qoslab, per marker",
        "command": f"python validation/ns3_p3_t1.py --seeds {a.seeds} --windows {windows}",
        "duration": DURATION,
        "rows": rows,
    }


def delay(r: dict[str, Any], aggs: list[str]) -> float:
    """Mean delay per delivered write over ``aggs`` in one run [s]."""
    d = sum(r["aggs"][a]["delivered"] for a in aggs)
    return sum(r["aggs"][a]["delay_sum"] for a in aggs) / d if d else float("nan")


def _sel(rows: list[dict[str, Any]], sim: str, window: float, marker: str) -> list[dict[str, Any]]:
    return sorted(
        (r for r in rows
         if r["sim"] == sim and r["window"] == window and r["marker"] == marker),
        key=lambda r: r["seed"],
    )  # fmt: skip


#: Student's t at 97.5 % by degrees of freedom (the paired intervals of the page).
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
        9: 2.262, 10: 2.228, 14: 2.145, 19: 2.093, 29: 2.045}  # fmt: skip


def paired(xs: list[float], ys: list[float]) -> tuple[float, float, float]:
    """Mean of x − y over seeds and its 95 % Student interval."""
    d = [x - y for x, y in zip(xs, ys, strict=True)]
    m = statistics.mean(d)
    if len(d) < 2:
        return m, m, m
    t = T975.get(len(d) - 1) or T975[max(k for k in T975 if k <= len(d) - 1)]
    h = t * statistics.stdev(d) / len(d) ** 0.5
    return m, m - h, m + h


#: The orders the page decides, per simulator: (group, a, b) — is a's delay below b's?
ORDERS = [("short", "rtt-sw", "rtt-rto"), ("short", "rtt-sw", "rtt"),
          ("short", "rtt-rto", "standard"), ("long", "rtt-rto", "standard"),
          ("overall", "rtt-sw", "rtt-rto")]  # fmt: skip
#: What Table I says of each order.
GROUP_COL = {"long": 0, "short": 1, "overall": 2}


def verdicts(data: dict[str, Any]) -> dict[str, str]:
    """Per (simulator, window, order): "a < b", "a > b" (the seed-paired 95 % interval of
    a − b below or above 0) or "tie", keyed "<sim> <window> <group> <a> <b>"."""
    rows = data["rows"]
    out = {}
    for sim in ("qoslab", "ns-3.44"):
        for w in sorted({r["window"] for r in rows}):
            for g, x, y in ORDERS:
                xs = [delay(r, GROUPS[g]) for r in _sel(rows, sim, w, x)]
                ys = [delay(r, GROUPS[g]) for r in _sel(rows, sim, w, y)]
                if not xs or len(xs) != len(ys):
                    continue
                _, lo, hi = paired(xs, ys)
                lx, ly = LABEL[x], LABEL[y]
                out[f"{sim} {w:g} {g} {x} {y}"] = (
                    f"{lx} < {ly}" if hi < 0 else f"{lx} > {ly}" if lo > 0 else "tie"
                )
    return out


def page(data: dict[str, Any]) -> str:
    """The markdown page: the set-up and its mismatches, per marker the groups' and the
    aggregates' mean delay in both simulators beside Table I, and the decided orders."""
    rows = data["rows"]
    seeds = sorted({r["seed"] for r in rows})
    windows = sorted({r["window"] for r in rows})
    sims = ["qoslab", "ns-3.44"]
    v = verdicts(data)
    out = [
        "# P3 Table I in ns-3.44 beside qoslab",
        "",
        f"Made by `{data['command']}` (then `--page-only`). P3 Table I's Telnet workload as "
        "qoslab reads it (`scenarios/p3/telnet-*.toml`, `python/qoslab/reproduce/"
        "p3_telnet.py`): the multi-domain topology of Fig. 6 (R1 – R2 – R3 – R4 at 20, 2 "
        "and 20 ms; F1, F2 across every domain, RTT 88 ms; F3 across R2–R3, 8 ms; F4 across "
        "R1–R2 and F5 across R3–R4, 44 ms) with every link at 1 Mb/s, three-colour RED "
        "between the domains, CIR (PIR) 100 (200) kb/s, and 100 Telnet sessions per "
        "aggregate starting uniformly within the start window (qoslab's calibrated 50 s; "
        "the paper gives none), each on its own NewReno connection. "
        f"{data['duration']:g} s runs (every write is delivered within them in both "
        f"simulators unless the undelivered column says otherwise), seeds {seeds[0]}–"
        f"{seeds[-1]} in each simulator, the full length: nothing is shortened. "
        "The delay of a write runs from the write to the in-order delivery of its last "
        "byte; a group's delay is the mean over its delivered writes, then over seeds. "
        "[p3.md](../papers/p3.md#t1-ns3) discusses this page.",
        "",
        "What the ns-3 program cannot match or had to write:",
        "",
        *[f"- {m}" for m in MISMATCHES],
        "",
        "## Delay per packet",
        "",
        "Seconds, mean over seeds; Table I's value in brackets. F3 and F5 are the short "
        "group's two aggregates (F3 the minimum-RTT one). Session completion runs from a "
        "session's first write to its last delivery (mean over sessions); timeouts are "
        "qoslab's counter and, in ns-3, entries into CA_LOSS, summed over the five "
        "aggregates (mean over seeds).",
        "",
        "| window (s) | marker | simulator | F1, F2, F4 | F3, F5 | overall | F3 | F5 | "
        "session completion | undelivered writes | timeouts |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for w in windows:
        for m in MARKERS:
            for sim in sims:
                rs = _sel(rows, sim, w, m)
                if not rs:
                    continue
                g = {k: statistics.mean(delay(r, a) for r in rs) for k, a in GROUPS.items()}
                f3 = statistics.mean(delay(r, ["F3"]) for r in rs)
                f5 = statistics.mean(delay(r, ["F5"]) for r in rs)
                comp = statistics.mean(
                    sum(r["aggs"][a]["completion_sum"] for a in AGGS)
                    / sum(r["aggs"][a]["sessions"] for a in AGGS) for r in rs)  # fmt: skip
                und = sum(r["aggs"][a]["writes"] - r["aggs"][a]["delivered"]
                          for r in rs for a in AGGS)  # fmt: skip
                to = statistics.mean(sum(r["aggs"][a]["timeouts"] for a in AGGS) for r in rs)
                p = PAPER[m]
                out.append(
                    f"| {w:g} | {LABEL[m]} | {sim} | {g['long']:.2f} ({p[0]}) | "
                    f"{g['short']:.2f} ({p[1]}) | {g['overall']:.2f} ({p[2]}) | {f3:.2f} | "
                    f"{f5:.2f} | {comp:.1f} | {und} | {to:.0f} |"
                )
    out += [
        "",
        "## The orders",
        "",
        "Each order is decided by the seed-paired 95 % interval of the difference "
        "(Student's t over the seeds): below 0 or above 0, else a tie. Table I's order "
        "is the one its values give; the first row of each window is the open finding of "
        "`p3-t1` (Table I: RTT-SW 1.84 s below RTT-RTO 1.98 s; qoslab: above). The "
        "difference column is the first marker's delay minus the second's.",
        "",
        "| window (s) | delay of | Table I | qoslab | ns-3.44 | "
        "agree? | difference qoslab / ns-3.44 (s) |",
        "|---|---|---|---|---|---|---|",
    ]
    for w in windows:
        for g, x, y in ORDERS:
            px, py = PAPER[x][GROUP_COL[g]], PAPER[y][GROUP_COL[g]]
            paper = f"{LABEL[x]} {'<' if px < py else '>'} {LABEL[y]}"
            q, n = v.get(f"qoslab {w:g} {g} {x} {y}"), v.get(f"ns-3.44 {w:g} {g} {x} {y}")
            if not (q or n):
                continue
            diffs = []
            for sim in sims:
                xs = [delay(r, GROUPS[g]) for r in _sel(rows, sim, w, x)]
                ys = [delay(r, GROUPS[g]) for r in _sel(rows, sim, w, y)]
                m, lo, hi = paired(xs, ys)
                diffs.append(f"{m:+.2f} ({lo:+.2f} … {hi:+.2f})")
            names = {"long": "F1, F2, F4", "short": "F3, F5", "overall": "all"}
            out.append(
                f"| {w:g} | {names[g]} | {paper} | {q} | {n} | "
                f"{'yes' if q == n else 'no'} | {' / '.join(diffs)} |"
            )
    ns = [r for r in rows if r["sim"] == "ns-3.44"]
    prot = {m: statistics.mean(sum(r["aggs"][a].get("protected", 0) for a in AGGS)
                               for r in ns if r["marker"] == m) for m in ("rtt-sw",)
            if any(r["marker"] == m for r in ns)}  # fmt: skip
    out += [
        "",
        f"Uncoloured data packets at the ns-3 RIO queues over all runs: "
        f"{sum(r['untagged'] for r in ns)}. "
        + (
            f"ns-3's RTT-SW marker protected {prot['rtt-sw']:.0f} packets per run on "
            "average (packets that would have been DP1/DP2). "
            if prot
            else ""
        )
        + f"ns-3's {len(ns)} runs took {sum(r['wall_s'] for r in ns):.0f} s of wall time "
        f"in all, qoslab's {sum(r['wall_s'] for r in rows if r['sim'] == 'qoslab'):.0f} s.",
        "",
    ]
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ns3-venv", type=pathlib.Path, default=ROOT / ".ns3-venv")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--windows", type=float, nargs="+", default=[50.0],
                    help="session start windows [s] (both simulators)")  # fmt: skip
    ap.add_argument("-j", "--jobs", type=int, default=1, help="ns-3 runs at once")
    ap.add_argument(
        "--page-only", action="store_true", help="rewrite the page from the committed data"
    )
    a = ap.parse_args()
    if not a.page_only:
        build(a.ns3_venv, BIN, SRC, ROOT / "validation" / "ns3" / "peer_tcp.h")
        DATA.parent.mkdir(parents=True, exist_ok=True)
        DATA.write_text(json.dumps(measure(a), indent=1) + "\n")
    text = page(json.loads(DATA.read_text()))
    PAGE.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

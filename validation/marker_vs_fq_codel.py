#!/usr/bin/env python3
"""A DiffServ marker against an FQ-CoDel baseline: the numbers of
docs/marker-vs-fq-codel.md.

Runs the sweep of scenarios/examples/marker_vs_fq_codel.toml (an assured aggregate of 2
Reno flows at 100 ms RTT with a committed rate, a best-effort aggregate of 2 or 8 Reno
flows at 20 ms RTT, one 10 Mb/s bottleneck that is a DropTail FIFO, FQ-CoDel, or a trTCM
edge with a RIO-C queue, and here also that edge with 2- and 3-packet buckets; five
seeds each), keeps per run every flow's goodput and each aggregate's one-way delay
percentiles in validation/data/marker-vs-fq-codel.json, and rewrites the page's
generated block from that file: per configuration the aggregates' goodput, the assured
aggregate's goodput against its committed rate, Jain's index over all flows and each
aggregate's queueing delay (its data packets' one-way delay p50 / p95 less the path's
propagation and transmission time), and what they show.

Usage: python validation/marker_vs_fq_codel.py          (runs the sweep, a few seconds)
       python validation/marker_vs_fq_codel.py --page   (rewrites the page from the data)
       python validation/marker_vs_fq_codel.py --check  (exit 1 if the page is stale)
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import pathlib
import re
import statistics
import sys
import tempfile
from typing import Any

import tomllib

from qoslab.twin import jain  # Jain's index (Σx)² / (n·Σx²)

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "scenarios" / "examples" / "marker_vs_fq_codel.toml"
DATA = ROOT / "validation" / "data" / "marker-vs-fq-codel.json"
PAGE = ROOT / "docs" / "marker-vs-fq-codel.md"
BEGIN = "<!-- marker-vs-fq-codel:begin (validation/marker_vs_fq_codel.py writes this block) -->"
END = "<!-- marker-vs-fq-codel:end -->"
COUNT_KEY = "flow.1.count"  # the sweep's grid: how many best-effort flows
CASES = {  # case name → what the page calls it
    "droptail": "DropTail FIFO (100 packets)",
    "fq_codel": "FQ-CoDel (RFC 8290 defaults)",
    "diffserv": "trTCM (CBS 30 kB) + RIO-C",
    "small_buckets": "trTCM (CBS 3 kB) + RIO-C",
}
#: A case this script adds to the example's three: the marker's buckets cut from 20 and
#: 30 packets (CBS 30 000 B, PBS 45 000 B) to 2 and 3, TCP's bursts then run past them.
EXTRA_CASES = {
    "small_buckets": {"conditioner.0.stages.0.cbs": 3000, "conditioner.0.stages.0.pbs": 4500}
}
GROUPS = ("assured", "best-effort")
WIRE_BYTES = 1500  # a full segment on the wire: MSS 1460 + 40 bytes of headers
_UNITS = {"ms": 1e-3, "us": 1e-6, "s": 1.0, "Mbps": 1e6, "kbps": 1e3, "Gbps": 1e9}


def scenario_digest(path: pathlib.Path = SCENARIO) -> str:
    """SHA-256 of the scenario's parsed contents (comments and layout do not count)."""
    data = tomllib.loads(path.read_text())
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def _quantity(text: str) -> float:
    m = re.fullmatch(r"([0-9.]+)\s*([A-Za-z]+)", text)
    if not m or m.group(2) not in _UNITS:
        raise ValueError(f"cannot read {text!r} (units: {', '.join(_UNITS)})")
    return float(m.group(1)) * _UNITS[m.group(2)]


def path_delays(sc: dict[str, Any]) -> dict[str, float]:
    """Each aggregate's one-way delay with empty queues [s]: the propagation delay and a
    full segment's transmission time on every link from its sender to its receiver (the
    dumbbell's links are found by their end nodes)."""
    links = {frozenset((lk["a"], lk["b"])): lk for lk in sc["link"]}
    out = {}
    for f in sc["flow"]:
        hops = [f["from"], "r1", "r2", f["to"]]
        total = 0.0
        for x, y in itertools.pairwise(hops):
            lk = links[frozenset((x, y))]
            total += _quantity(lk["delay"]) + WIRE_BYTES * 8 / _quantity(lk["rate"])
        out[f["group"]] = total
    return out


def measure(out: pathlib.Path) -> dict[str, Any]:
    """Runs the scenario's sweep into ``out`` and returns the data file's contents."""
    import qoslab
    from qoslab.sweep import load_tasks, run_sweep

    run_sweep(SCENARIO, out, workers=1, progress=False, cases=EXTRA_CASES)
    sc = tomllib.loads(SCENARIO.read_text())
    runs = []
    for t in load_tasks(out):
        r = qoslab.load(out / "runs" / t.key)
        flows = r.flows.select("name", "group", "goodput_bps").to_dicts()
        groups = {
            g["group"]: {"delay_p50": g["delay_p50"], "delay_p95": g["delay_p95"]}
            for g in r.by_group().to_dicts()
        }
        runs.append(
            {
                "case": t.labels["case"],
                "best_effort_flows": t.params[COUNT_KEY],
                "seed": t.seed,
                "flows": flows,
                "groups": groups,
            }
        )
    return {
        "scenario": str(SCENARIO.relative_to(ROOT)),
        "scenario_sha256": scenario_digest(),
        "command": "python validation/marker_vs_fq_codel.py",
        "qoslab_version": qoslab.__version__,
        "committed_bps": _quantity(sc["conditioner"][0]["stages"][0]["cir"]),
        "bottleneck_bps": _quantity(sc["link"][2]["rate"]),
        "path_delay_s": path_delays(sc),
        "runs": runs,
    }


def summarise(data: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per (best-effort flow count, case): means over seeds, and the range over
    seeds of the assured aggregate's goodput / committed rate."""
    cir = data["committed_bps"]
    base = data["path_delay_s"]
    rows = []
    counts = sorted({r["best_effort_flows"] for r in data["runs"]}, reverse=True)
    for n in counts:
        for case in CASES:
            runs = [r for r in data["runs"] if r["case"] == case and r["best_effort_flows"] == n]
            if not runs:
                continue
            row: dict[str, Any] = {"case": case, "best_effort_flows": n, "seeds": len(runs)}
            for g in GROUPS:
                per_run = [
                    sum(f["goodput_bps"] for f in r["flows"] if f["group"] == g) for r in runs
                ]
                row[f"{g} goodput"] = statistics.fmean(per_run)
                if g == "assured":
                    shares = [x / cir for x in per_run]
                    row["share"] = statistics.fmean(shares)
                    row["share_min"], row["share_max"] = min(shares), max(shares)
                for p in ("p50", "p95"):
                    row[f"{g} {p}"] = statistics.fmean(
                        r["groups"][g][f"delay_{p}"] - base[g] for r in runs
                    )
            row["jain"] = statistics.fmean(
                jain([f["goodput_bps"] for f in r["flows"]]) for r in runs
            )
            flows = {g: sum(1 for f in runs[0]["flows"] if f["group"] == g) for g in GROUPS}
            row["assured_flows"] = flows["assured"]
            row["per_flow"] = {g: row[f"{g} goodput"] / flows[g] for g in GROUPS}
            rows.append(row)
    return rows


def _mb(x: float) -> str:
    return f"{x / 1e6:.2f}"


def _ms(x: float) -> str:
    return f"{x * 1e3:.1f}"


def _pct(x: float) -> str:
    return f"{100 * x:.0f} %"


def table(rows: list[dict[str, Any]], cir: float) -> str:
    head = [
        "bottleneck (r1 → r2)",
        "best-effort flows",
        "assured goodput [Mb/s]",
        "best-effort goodput [Mb/s]",
        f"assured / committed {_mb(cir)} Mb/s (seeds' range)",
        "Jain, all flows",
        "assured queueing p50 / p95 [ms]",
        "best-effort queueing p50 / p95 [ms]",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [
            CASES[r["case"]],
            str(r["best_effort_flows"]),
            _mb(r["assured goodput"]),
            _mb(r["best-effort goodput"]),
            f"{_pct(r['share'])} ({_pct(r['share_min'])}–{_pct(r['share_max'])})",
            f"{r['jain']:.3f}",
            f"{_ms(r['assured p50'])} / {_ms(r['assured p95'])}",
            f"{_ms(r['best-effort p50'])} / {_ms(r['best-effort p95'])}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _holds(r: dict[str, Any]) -> bool:
    """The committed rate held in every seed."""
    return r["share_min"] >= 1.0


def _names(cases: list[str]) -> str:
    names = [CASES[c] for c in cases]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def findings(data: dict[str, Any], rows: list[dict[str, Any]]) -> list[str]:
    """What the table shows, in sentences computed from it."""
    cir = data["committed_bps"]
    out = []
    by = {(r["case"], r["best_effort_flows"]): r for r in rows}
    for n in sorted({r["best_effort_flows"] for r in rows}, reverse=True):
        dt, fq, ds, sb = (by.get((c, n)) for c in CASES)
        if not (dt and fq and ds):
            continue
        total = fq["assured_flows"] + n
        held = [c for c in CASES if _holds(by[(c, n)])]
        if not held:
            held_text = "no configuration holds it in every seed"
        elif len(held) == 1:
            held_text = f"only the {_names(held)} holds it in every seed"
        else:
            held_text = f"the {_names(held)} hold it in every seed"
        fair = (
            f"at the cost of per-flow fairness (Jain {ds['jain']:.3f} against FQ-CoDel's "
            f"{fq['jain']:.3f})"
            if ds["jain"] < fq["jain"] - 0.05
            else f"with per-flow fairness near FQ-CoDel's (Jain {ds['jain']:.3f} against "
            f"{fq['jain']:.3f})"
        )
        out.append(
            f"- **{n} best-effort flows** (the assured aggregate has {fq['assured_flows']} "
            f"of {total} flows; committed {_mb(cir)} Mb/s): {held_text}. FQ-CoDel, which "
            f"knows no contract, shares by flow (Jain {fq['jain']:.3f}): the assured "
            f"aggregate gets {_mb(fq['assured goodput'])} Mb/s ({_pct(fq['share'])} of "
            f"committed), {_mb(fq['per_flow']['assured'])} Mb/s per assured flow against "
            f"{_mb(fq['per_flow']['best-effort'])} per best-effort flow. The marker gets it "
            f"{_mb(ds['assured goodput'])} Mb/s ({_pct(ds['share_min'])}–"
            f"{_pct(ds['share_max'])} of committed over the seeds) and leaves best effort "
            f"{_mb(ds['best-effort goodput'])} Mb/s, {fair}. DropTail gives the assured "
            f"aggregate {_mb(dt['assured goodput'])} Mb/s, {_pct(dt['share_min'])}–"
            f"{_pct(dt['share_max'])} of committed over the seeds."
            + (
                f" With its buckets cut to 3000 and 4500 bytes (CBS, PBS: 2 and 3 packets) the "
                f"marker gets it {_pct(sb['share_min'])}–"
                f"{_pct(sb['share_max'])} of committed over the seeds"
                + ("." if _holds(sb) else ": short of it in some seeds.")
                if sb
                else ""
            )
        )
    dts = [r for r in rows if r["case"] == "droptail"]
    fqs = [r for r in rows if r["case"] == "fq_codel"]
    dss = [r for r in rows if r["case"] == "diffserv"]
    if dts and fqs and dss:

        def span(rs: list[dict[str, Any]], key: str) -> str:
            lo, hi = min(r[key] for r in rs), max(r[key] for r in rs)
            return _ms(lo) if _ms(lo) == _ms(hi) else f"{_ms(lo)}–{_ms(hi)}"

        rate = data["bottleneck_bps"]
        share = [(r["assured_flows"] + r["best_effort_flows"], r["best-effort p50"]) for r in fqs]
        times = " and ".join(
            f"{_ms(WIRE_BYTES * 8 * k / rate)} ms with {k} flows (the best-effort median is "
            f"{p / (WIRE_BYTES * 8 * k / rate):.1f} such times)"
            for k, p in share
        )
        out.append(
            "- **Delay.** Median queueing delay of the best-effort aggregate: "
            f"{span(dts, 'best-effort p50')} ms behind DropTail's 100 packets, "
            f"{span(dss, 'best-effort p50')} ms in RIO-C, {span(fqs, 'best-effort p50')} ms "
            f"under FQ-CoDel; of the assured aggregate: {span(dts, 'assured p50')}, "
            f"{span(dss, 'assured p50')} and {span(fqs, 'assured p50')} ms. RIO-C is one "
            "FIFO, so both aggregates wait about alike there. Under FQ-CoDel a packet of a "
            "backlogged flow waits for the other flows' turns: at one flow's share of the "
            f"bottleneck one 1500-byte packet takes {times}."
        )
    return out


def block(data: dict[str, Any]) -> str:
    """The page's generated block (between the markers, markers excluded)."""
    rows = summarise(data)
    cir = data["committed_bps"]
    seeds = sorted({r["seed"] for r in data["runs"]})
    base = data["path_delay_s"]
    parts = [
        table(rows, cir),
        "",
        f"Means over seeds {seeds[0]}–{seeds[-1]} ({len(seeds)} runs per row) of "
        f"`{data['command']}` (qoslab {data['qoslab_version']}, scenario "
        f"`{data['scenario']}`). Goodput counts payload delivered in order after the "
        "warm-up; queueing delay is each aggregate's data packets' one-way delay less its "
        f"path's propagation and transmission time ({_ms(base['assured'])} ms assured, "
        f"{_ms(base['best-effort'])} ms best effort).",
        "",
        *findings(data, rows),
    ]
    return "\n".join(parts) + "\n"


def page(data: dict[str, Any], text: str) -> str:
    """``text`` (the page) with its generated block rewritten from ``data``."""
    i, j = text.find(BEGIN), text.find(END)
    if i < 0 or j < i:
        raise ValueError(f"{PAGE}: no {BEGIN} … {END} block")
    return text[: i + len(BEGIN)] + "\n" + block(data) + text[j:]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--page", action="store_true", help="rewrite the page from the data")
    mode.add_argument("--check", action="store_true", help="exit 1 if the page is stale")
    a = ap.parse_args(argv)
    if not (a.page or a.check):
        with tempfile.TemporaryDirectory() as tmp:
            data = measure(pathlib.Path(tmp) / "sweep")
        DATA.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {DATA.relative_to(ROOT)}")
    data = json.loads(DATA.read_text())
    if data["scenario_sha256"] != scenario_digest():
        print(f"{SCENARIO.relative_to(ROOT)} changed since the data were taken; rerun")
        if a.check:
            return 1
    text = PAGE.read_text()
    new = page(data, text)
    if a.check:
        stale = new != text
        print(f"{PAGE.relative_to(ROOT)}: {'stale' if stale else 'current'}")
        return int(stale)
    if new != text:
        PAGE.write_text(new)
        print(f"rewrote {PAGE.relative_to(ROOT)}")
    for line in block(data).splitlines()[: len(summarise(data)) + 2]:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())

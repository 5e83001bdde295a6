#!/usr/bin/env python3
"""P1 Table 1: is the ECN runs' shortfall against the drop runs the bottleneck's queueing?

Runs a Table 1 row (`scenarios/p1/t1-<rate>mbps.toml`, 1100 s, a few seeds), with drops
and in ECN mode, with the TRC operator setting RTT_dev = 10 ms (the paper's default,
Fig. 3) and 30 ms, sampling the bottleneck queue. It prints achieved ÷ requested per
flow and the mean queue per run, then per request the mean ECN ÷ drops at each RTT_dev.
At 2 Mb/s one 1500-byte packet is 6 ms on the wire, at 10 Mb/s 1.2 ms, so a mean queue
of a few packets is already a good part of RTT_dev; at 50 Mb/s it is 0.24 ms.

With `--bottleneck 100000000` the row's flows run with the same requests over a bottleneck
as fast as the access links, so nothing queues: what ECN ÷ drops is then is the two
models' own difference (the fitted cycle-time laws), not the load's.

`--doc` runs the rows where Table 1's ECN and drop means differ most (2 Mb/s at 1.5 ms,
10 and 50 Mb/s at 124 ms), each under its load and with no load, and writes the table
into docs/validation/p1-ecn-load.md.

Usage: python3 validation/p1_t1_rtt_dev.py [--rate 2|10|50] [--delay 1.5ms|124ms] [--seeds N]
                                         [--bottleneck BPS]
       python3 validation/p1_t1_rtt_dev.py --doc
(needs cargo build --release --bin qoslab-run)
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
BIN = ROOT / "target" / "release" / "qoslab-run"
DEVS = ("10ms", "30ms")
DOC = ROOT / "docs" / "validation" / "p1-ecn-load.md"
DOC_ROWS = ((2, "1.5ms"), (10, "124ms"), (50, "124ms"))
NO_LOAD = 100_000_000  # the access links' rate


def scenario(rate: int, delay: str, bottleneck: int | None) -> tuple[str, list[str]]:
    """The row's scenario text (no sweep tables) with queue sampling, and its requests;
    ``bottleneck`` [bit/s] replaces the r0–r1 rate (the TRCs' requests stay)."""
    text = (ROOT / "scenarios" / "p1" / f"t1-{rate}mbps.toml").read_text()
    text = text[: text.index("[sweep]")]  # the engine does not read sweep tables
    text = text.replace(
        '[record]\ninterval = "10s"\n',
        '[record]\ninterval = "10s"\nqueues = ["r0->r1"]\nqueue_interval = "100ms"\n',
    )
    # The access link s–r0 is the first link; its delay is the swept parameter.
    text = text.replace('delay = "1.5ms"', f'delay = "{delay}"', 1)
    if bottleneck is not None:
        link = f'a = "r0"\nb = "r1"\nrate = {rate * 1_000_000}\n'
        assert link in text, "the bottleneck link r0–r1 is not where it was"
        text = text.replace(link, f'a = "r0"\nb = "r1"\nrate = {bottleneck}\n')
    return text, re.findall(r'kind = "trc", flow = "[^"]+", rate = "([0-9]+kbps)" }', text)


def run(text: str, requests: list[str], mode: str, dev: str, seed: int) -> tuple[list, float]:
    """Achieved ÷ requested per flow, and the mean bottleneck queue [packets]."""
    ecn = ", ecn = true" if mode == "ecn" else ""
    sc = text.replace('halve = "window" }', f'halve = "window"{ecn} }}')
    for r in requests:
        sc = sc.replace(f'rate = "{r}" }}', f'rate = "{r}", rtt_dev = "{dev}"{ecn} }}')
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write(sc)
    out = subprocess.run(
        [str(BIN), f.name, "--seed", str(seed)], check=True, capture_output=True, text=True
    ).stdout
    pathlib.Path(f.name).unlink()
    r = json.loads(out)
    tab = r["tables"]
    fl = dict(zip(tab["flows"]["names"], tab["flows"]["columns"], strict=True))
    qs = dict(zip(tab["queue_samples"]["names"], tab["queue_samples"]["columns"], strict=True))
    req = [float(x.removesuffix("kbps")) * 1e3 for x in requests]
    return [g / q for g, q in zip(fl["goodput_bps"], req, strict=True)], statistics.mean(
        qs["packets"]
    )


def sweep(rate: int, delay: str, bottleneck: int | None, seeds: int, show: bool) -> dict:
    """{(mode, dev): ([ratios per request] per seed, [mean queue] per seed)}, requests."""
    text, requests = scenario(rate, delay, bottleneck)
    got: dict[tuple[str, str], tuple[list[list[float]], list[float]]] = {}
    for mode in ("drop", "ecn"):
        for dev in DEVS:
            for seed in range(1, seeds + 1):
                ratios, q = run(text, requests, mode, dev, seed)
                cell = got.setdefault((mode, dev), ([], []))
                cell[0].append(ratios)
                cell[1].append(q)
                if show:
                    each = ", ".join(f"{x:.3f}" for x in ratios)
                    print(f"{mode:>4}  {dev:>7}  {seed:>4}  {each:<40} {q:.2f} packets")
    return {"got": got, "requests": requests}


def ecn_over_drop(res: dict, request: str, dev: str) -> float:
    """Mean over seeds (and over the flows with this request) of ECN ÷ drops."""
    idx = [i for i, r in enumerate(res["requests"]) if r == request]
    e = statistics.mean(x[i] for x in res["got"][("ecn", dev)][0] for i in idx)
    d = statistics.mean(x[i] for x in res["got"][("drop", dev)][0] for i in idx)
    return e / d


def mean_queue(res: dict, mode: str) -> float:
    """Mean bottleneck queue [packets] over seeds, RTT_dev = 10 ms."""
    return statistics.mean(res["got"][(mode, DEVS[0])][1])


def write_doc(seeds: int) -> None:
    """The ECN ÷ drops table for DOC_ROWS, loaded and unloaded, into DOC."""
    lines = [
        "# P1 Table 1: ECN against drops, under load and with no load",
        "",
        f"Made by `python3 validation/p1_t1_rtt_dev.py --doc` (seeds 1–{seeds}, 1100 s, "
        "the first 100 s discarded). Each Table 1 row runs twice: as in the table (its "
        "bottleneck at ρ = 0.85) and with the bottleneck raised to the access links' "
        "100 Mb/s, so that nothing queues and the flows meet only their TRCs. Cells: the "
        "mean achieved ÷ requested with ECN divided by the same with drops (flows with the "
        "same request pooled), at the "
        "operator's RTT_dev = 10 ms (default) and 30 ms; last rows: the mean bottleneck "
        "queue (RTT_dev = 10 ms).",
        "",
    ]
    for rate, delay in DOC_ROWS:
        loaded = sweep(rate, delay, None, seeds, False)
        free = sweep(rate, delay, NO_LOAD, seeds, False)
        lines += [
            f"## {rate} Mb/s, access delay {delay}",
            "",
            "| request | loaded, RTT_dev 10 ms | loaded, 30 ms | no load, 10 ms | no load, 30 ms |",
            "|---|---|---|---|---|",
        ]
        for r in dict.fromkeys(loaded["requests"]):
            cells = [ecn_over_drop(loaded, r, d) for d in DEVS]
            cells += [ecn_over_drop(free, r, d) for d in DEVS]
            lines.append(f"| {r} | " + " | ".join(f"{c:.4f}" for c in cells) + " |")
        lines += [
            f"| mean queue, drops [packets] | {mean_queue(loaded, 'drop'):.2f} | | "
            f"{mean_queue(free, 'drop'):.2f} | |",
            f"| mean queue, ECN [packets] | {mean_queue(loaded, 'ecn'):.2f} | | "
            f"{mean_queue(free, 'ecn'):.2f} | |",
            "",
        ]
        print(f"{rate} Mb/s {delay}: done", file=sys.stderr)
    DOC.write_text("\n".join(lines))
    print(f"wrote {DOC}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", type=int, default=2, choices=(2, 10, 50))
    ap.add_argument("--delay", default="1.5ms", help="access delay (Table 1: 1.5ms, 124ms)")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument(
        "--bottleneck", type=int, help="bottleneck rate [bit/s] instead of the row's (no load)"
    )
    ap.add_argument("--doc", action="store_true", help=f"write {DOC.name} (fixed rows)")
    a = ap.parse_args()
    if a.doc:
        write_doc(a.seeds)
        return 0
    where = f", bottleneck {a.bottleneck:,} bit/s" if a.bottleneck else ""
    print(f"{a.rate} Mb/s row{where}, access delay {a.delay}")
    print("mode  RTT_dev  seed  achieved/requested per request          mean queue")
    res = sweep(a.rate, a.delay, a.bottleneck, a.seeds, True)
    print("\nECN ÷ drops per request (mean over seeds)")
    print(f"  {'request':>9} " + " ".join(f"{'RTT_dev ' + d:>14}" for d in DEVS))
    for r in dict.fromkeys(res["requests"]):
        print(f"  {r:>9} " + " ".join(f"{ecn_over_drop(res, r, d):14.4f}" for d in DEVS))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Validate qoslab's TCP against the Padhye et al. (1998) throughput model.

For each variant (NewReno, SACK), random loss p and round-trip time, one bulk TCP flow
runs over a single 1 Gb/s link whose data direction drops each packet with probability
p (ACKs are not lost), for long enough to see a few hundred loss events. Its long-run
goodput is compared with the Padhye "full" formula:

    B(p) = min( Wm/RTT, 1 / ( RTT·sqrt(2bp/3) + T0·min(1, 3·sqrt(3bp/8))·p·(1+32p²) ) )

in segments per second, with b = 1 (no delayed ACKs), RTT the mean measured RTT (the
propagation RTT here: nothing queues), T0 the flow's RTO as the sender last computed it,
and Wm the maximum window. Writes docs/validation/tcp-model.md.

Usage: python3 validation/tcp_model.py [--quick] [--out FILE]
Needs the release binary: cargo build --release --bin qoslab-run
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
BIN = ROOT / "target" / "release" / "qoslab-run"
MSS = 1460
MAX_WINDOW = 10_000


def padhye(p: float, rtt: float, t0: float, wm: float = MAX_WINDOW, b: float = 1.0) -> float:
    """Padhye et al. 1998, eq. (33): send rate in segments per second."""
    denom = rtt * math.sqrt(2 * b * p / 3) + t0 * min(1.0, 3 * math.sqrt(3 * b * p / 8)) * p * (
        1 + 32 * p * p
    )
    return min(wm / rtt, 1.0 / denom)


def timeout_share(p: float, b: float = 1.0) -> float:
    """Padhye et al. 1998: Q̂(E[W]), the share of loss indications that are timeouts,
    derived under their assumption that once a packet is lost every later packet of
    the same round is lost too."""
    a = (2 + b) / (3 * b)
    w = a + math.sqrt(8 * (1 - p) / (3 * b * p) + a * a)
    q = 1 - p
    num = (1 - q**3) * (1 + q**3 * (1 - q ** max(w - 3, 0.0)))
    return min(1.0, num / (1 - q**w))


def scenario(variant: str, p: float, rtt: float, duration: float, seed: int) -> str:
    return f"""
name = "padhye-{variant}-{p}-{rtt}"
duration = {duration}
warmup = {duration * 0.1}
seed = {seed}
[[node]]
name = "s"
[[node]]
name = "d"
[[link]]
a = "s"
b = "d"
rate = "1Gbps"
delay = {rtt / 2}
loss_a_to_b = {p}
queue = {{ kind = "droptail", limit = 10000 }}
[[flow]]
name = "tcp"
from = "s"
to = "d"
tcp = {{ variant = "{variant}", mss = {MSS}, max_window = {MAX_WINDOW} }}
"""


def run(text: str) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write(text)
    out = subprocess.run([str(BIN), f.name], check=True, capture_output=True, text=True).stdout
    r = json.loads(out)
    t = r["tables"]["flows"]
    return {n: c[0] for n, c in zip(t["names"], t["columns"], strict=True)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer loss events per cell")
    ap.add_argument("--out", default=str(ROOT / "docs" / "validation" / "tcp-model.md"))
    args = ap.parse_args()
    if not BIN.exists():
        print(f"missing {BIN}: run cargo build --release --bin qoslab-run", file=sys.stderr)
        return 2
    events = 100 if args.quick else 400
    losses = [0.001, 0.005, 0.01, 0.02, 0.05]
    rtts = [0.02, 0.1, 0.3]
    rows = []
    for variant in ["newreno", "sack"]:
        for p in losses:
            for rtt in rtts:
                rate = padhye(p, rtt, max(0.2, 2 * rtt))
                duration = min(5000.0, max(100.0, events / (rate * p)))
                f = run(scenario(variant, p, rtt, duration, seed=1))
                t0 = f["rto"] if f["rto"] == f["rto"] else max(0.2, 2 * rtt)
                model = padhye(p, rtt, t0) * MSS * 8
                ratio = f["goodput_bps"] / model
                rows.append(
                    (
                        variant,
                        p,
                        rtt,
                        duration,
                        f["goodput_bps"],
                        model,
                        ratio,
                        f["timeouts"],
                        f["fast_retransmits"],
                        f["timeouts"] / max(1, f["timeouts"] + f["fast_retransmits"]),
                        timeout_share(p),
                    )
                )
                print(
                    f"{variant:8} p={p:<6} rtt={rtt:<5} goodput={f['goodput_bps'] / 1e3:9.1f} kb/s "
                    f"model={model / 1e3:9.1f} kb/s ratio={ratio:5.2f}",
                    flush=True,
                )
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        "# qoslab TCP against the Padhye model",
        "",
        "Made by `python3 validation/tcp_model.py" + (" --quick" if args.quick else "") + "` "
        "(one bulk flow, Bernoulli loss p on the data direction of a 1 Gb/s link, "
        f"MSS {MSS} B, no delayed ACKs, max window {MAX_WINDOW}; "
        f"about {events} loss events per cell, first 10 % discarded).",
        "",
        "| variant | p | RTT (s) | run (s) | goodput (kb/s) | Padhye (kb/s) | ratio | timeouts "
        "| fast retransmits | timeout share | model's timeout share |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for v, p, rtt, d, g, m, r, to, fr, ts, mts in rows:
        lines.append(
            f"| {v} | {p} | {rtt} | {d:.0f} | {g / 1e3:.1f} | {m / 1e3:.1f} | {r:.2f} "
            f"| {to} | {fr} | {ts:.2f} | {mts:.2f} |"
        )
    outside = [r for r in rows if abs(r[6] - 1) > 0.25]
    lines += [
        "",
        f"{len(rows) - len(outside)} of {len(rows)} cells are within ±25 % of the model.",
        "",
        "Why the cells that differ do: the model's timeout term assumes that once a packet "
        "is lost, every later packet of the same round is lost too (Padhye et al. §2.1), so "
        "it predicts a timeout share Q̂ (last column) well above what independent "
        "(Bernoulli) losses give: the packets after a loss still arrive and bring the three "
        "duplicate ACKs a fast retransmit needs (compare the two share columns). A timeout "
        "costs T0 ≥ 200 ms (the minimum RTO), ten round trips at 20 ms: that is where "
        "over-counting timeouts costs the model most, and where qoslab is faster than the "
        "model (p ≥ 2 %, RTT 20 ms). At long RTTs and high loss the other side shows: "
        "back-to-back timeouts double the RTO (the model's (1 + 32p²) factor is an "
        "approximation of that backoff) and T0 is the sender's last RTO, not the mean.",
    ]
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

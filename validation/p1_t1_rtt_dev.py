#!/usr/bin/env python3
"""P1 Table 1, 2 Mb/s row: is the shortfall the bottleneck's queueing delay?

Runs `scenarios/p1/t1-2mbps.toml` (1100 s, 3 seeds), with drops and in ECN mode, with
the TRC operator setting RTT_dev = 10 ms (the paper's default, Fig. 3) and 30 ms,
sampling the bottleneck queue, and prints achieved ÷ requested per flow and the mean
queue. At 2 Mb/s one 1500-byte
packet is 6 ms on the wire, so a mean queue of 1.6 packets is already ≈ RTT_dev.

Usage: python3 validation/p1_t1_rtt_dev.py   (needs cargo build --release --bin qoslab-run)
"""

from __future__ import annotations

import json
import pathlib
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
BIN = ROOT / "target" / "release" / "qoslab-run"
REQUESTED = [50e3, 100e3, 500e3, 1000e3]


def main() -> int:
    text = (ROOT / "scenarios" / "p1" / "t1-2mbps.toml").read_text()
    text = text[: text.index("[sweep]")]  # the engine does not read sweep tables
    text = text.replace(
        '[record]\ninterval = "10s"\n',
        '[record]\ninterval = "10s"\nqueues = ["r0->r1"]\nqueue_interval = "100ms"\n',
    )
    print("mode  RTT_dev  seed  achieved/requested (50k, 100k, 500k, 1M)   mean queue")
    for mode, dev in [(m, d) for m in ("drop", "ecn") for d in ("10ms", "30ms")]:
        for seed in (1, 2, 3):
            sc = text
            ecn = ", ecn = true" if mode == "ecn" else ""
            sc = sc.replace('rto_estimator = "ns2" }', f'rto_estimator = "ns2"{ecn} }}')
            for r in ("50kbps", "100kbps", "500kbps", "1000kbps"):
                sc = sc.replace(f'rate = "{r}" }}', f'rate = "{r}", rtt_dev = "{dev}"{ecn} }}')
            with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
                f.write(sc)
            out = subprocess.run(
                [str(BIN), f.name, "--seed", str(seed)], check=True, capture_output=True, text=True
            ).stdout
            r = json.loads(out)
            fl = dict(
                zip(r["tables"]["flows"]["names"], r["tables"]["flows"]["columns"], strict=True)
            )
            qs = dict(
                zip(
                    r["tables"]["queue_samples"]["names"],
                    r["tables"]["queue_samples"]["columns"],
                    strict=True,
                )
            )
            ratios = [g / q for g, q in zip(fl["goodput_bps"], REQUESTED, strict=True)]
            print(
                f"{mode:>4}  {dev:>7}  {seed:>4}  {', '.join(f'{x:.3f}' for x in ratios):<40} "
                f"{statistics.mean(qs['packets']):.2f} packets"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Report time against run time for the DiffServ study
(``scenarios/examples/diffserv_classes_study.toml``): how long ``qoslab sweep --report``
spends writing the report, beside how long it spent on the runs.

    python benches/report_speed.py [--scenario S] [--workers 2] [--repeat 3]

Each repeat runs the sweep into a fresh folder (``--workers`` processes), then writes
its report two ways, timing each: as ``qoslab sweep --report`` does (SVG only) and with
every figure also as PNG (what every report wrote before ``--formats``). It prints the
wall seconds of each and their ratio to the runs' wall time, measured in the same
repeat (the machines are noisy; ratios from one repeat are what compare), and the load
average at the start. Target: report / runs <= 1.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from qoslab import report
from qoslab.sweep import run_sweep

ROOT = Path(__file__).resolve().parents[1]


def _report(d: Path, formats: tuple[str, ...]) -> float:
    """Wall seconds of one report of ``d`` (its figures removed first)."""
    shutil.rmtree(d / "figures", ignore_errors=True)
    t = time.perf_counter()
    report.write_report(d, formats=formats)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--scenario", default=str(ROOT / "scenarios/examples/diffserv_classes_study.toml")
    )
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    ways = {"svg (default)": ("svg",), "svg+png (before)": ("svg", "png")}
    ratios: dict[str, list[float]] = {w: [] for w in ways}
    for i in range(a.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "sw"
            t = time.perf_counter()
            run_sweep(a.scenario, out, workers=a.workers, progress=False)
            runs = time.perf_counter() - t
            line = [f"repeat {i + 1}: runs {runs:.2f} s"]
            for w, fmts in ways.items():
                s = _report(out, fmts)
                ratios[w].append(s / runs)
                line.append(f"{w} {s:.2f} s ({s / runs:.2f} x)")
            print("; ".join(line), flush=True)
    for w, r in ratios.items():
        print(
            f"report / runs, {w}: median {statistics.median(r):.2f} "
            f"(min {min(r):.2f}, max {max(r):.2f})"
        )


if __name__ == "__main__":
    main()

"""Report time against run time for the DiffServ studies: how long
``qoslab sweep --report`` spends writing the report, beside how long it spent on the
runs.

    python benches/report_speed.py [--scenario S ...] [--workers 2] [--repeat 3]

Each repeat runs, in a fresh Python process as ``qoslab sweep S --report`` does, the
sweep into a fresh folder (``--workers`` processes), then imports the report layer
(matplotlib, Jinja2: the command imports them only after the runs, so their import is
the report's time) and writes the report (SVG only, the default), timing the runs and
the report, then the report again with every figure also as PNG (matplotlib imported
and warm by then); and in a second fresh process (the two in turns) the same with the
report written as before (its figures one after another in the report's process, with
matplotlib's default settings instead of ``report.FIGURE_RC``, and constrained layout
with matplotlib's tick locator instead of margins fitted once and at most five gaps
between ticks: ``plot.new_figure``'s ``layout="fixed"``). It prints the wall
seconds of each and their ratio to the runs' wall time of the same process (the
machines are noisy; ratios from one process are what compare), the load average at
the start and end, and the report's figure processes (the report forks children that
write figures while it draws the next). Default scenarios:
``scenarios/examples/diffserv_study.toml`` (45 runs of 16 flows) and
``scenarios/examples/diffserv_classes_study.toml`` (30 runs of 41 flows). Target:
report / runs <= 1.

``--cpu`` measures CPU seconds instead (the runs in one process, the report's own and
its figure writers'; the report as written now and as before, in turns), which a loaded
machine changes less than wall time: where every login session gets an equal share of
the cores (Linux's autogroup), neither the sweep's workers nor the report's figure
writers get more than one session's share.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCENARIOS = (
    "scenarios/examples/diffserv_study.toml",
    "scenarios/examples/diffserv_classes_study.toml",
)

#: The report as it was written before: its figures one after another in the report's
#: process, matplotlib's defaults instead of ``report.FIGURE_RC``, and constrained
#: layout with matplotlib's tick locator instead of margins fitted once and fewer ticks
#: (``plot.new_figure``'s ``layout="fixed"``).
BEFORE = """
def before(report):
    from qoslab import plot
    new = plot.new_figure
    def constrained(*a, layout="constrained", **kw):
        return new(*a, layout="constrained", **kw)
    plot.new_figure = constrained
    report._cores, report.FIGURE_RC = (lambda: 1), {}
"""

#: One repeat, in a fresh process: the runs, then the report as the command writes it
#: (its imports included); with "before", as it was written before (figures one after
#: another in this process, matplotlib's defaults); else then the report with PNG too.
REPEAT = """
import json, shutil, sys, tempfile, time
from pathlib import Path
import qoslab.sweep  # the command has it imported before the runs
scenario, workers, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with tempfile.TemporaryDirectory() as tmp:
    out = Path(tmp) / "sw"
    t = time.perf_counter()
    qoslab.sweep.run_sweep(scenario, out, workers=workers, progress=False)
    runs = time.perf_counter() - t
    t = time.perf_counter()
    from qoslab import report
    if mode == "before":
        before(report)
    report.write_report(out)
    svg = time.perf_counter() - t
    r = {"runs": runs, mode: svg, "jobs": min(report._cores(), report.MAX_FIGURE_JOBS)}
    if mode != "before":
        shutil.rmtree(out / "figures")
        t = time.perf_counter()
        report.write_report(out, formats=("svg", "png"))
        r["png"] = time.perf_counter() - t
print(json.dumps(r))
"""

#: ``--cpu``: CPU seconds instead of wall, in a fresh process: the runs in it (one
#: worker: the engine runs here), then the report as the command writes it, this
#: process's and its children's (the figure writers).
CPU = """
import json, resource, sys, tempfile, time
from pathlib import Path
import qoslab.sweep
def children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime
with tempfile.TemporaryDirectory() as tmp:
    out = Path(tmp) / "sw"
    c = time.process_time()
    qoslab.sweep.run_sweep(sys.argv[1], out, workers=1, progress=False)
    runs = time.process_time() - c
    c, k = time.process_time(), children()
    from qoslab import report
    if sys.argv[2] == "before":
        before(report)
    report.write_report(out)
    own, kids = time.process_time() - c, children() - k
print(json.dumps({"runs": runs, "report": own + kids, "own": own, "children": kids}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", action="append", help="repeatable; default both studies")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cpu", action="store_true", help="CPU seconds (runs in one process)")
    a = ap.parse_args()
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if a.cpu:
        return cpu(a)
    ways = {
        "svg": "svg (default)",
        "png": "svg+png (warm)",
        "before": "svg as before (one after another, matplotlib's defaults, constrained layout)",
    }
    for sc in a.scenario or SCENARIOS:
        print(f"{sc} (workers {a.workers}):")
        ratios: dict[str, list[float]] = {w: [] for w in ways}
        for i in range(a.repeat):
            line = [f"  repeat {i + 1}:"]
            for mode in ("svg", "before") if i % 2 == 0 else ("before", "svg"):
                p = subprocess.run(
                    [sys.executable, "-c", BEFORE + REPEAT, str(ROOT / sc), str(a.workers), mode],
                    capture_output=True, text=True, check=True,
                )  # fmt: skip
                r = json.loads(p.stdout.strip().splitlines()[-1])
                part = [f"runs {r['runs']:.2f} s"]
                for w in [w for w in ways if w in r]:
                    ratios[w].append(r[w] / r["runs"])
                    part.append(f"{ways[w]} {r[w]:.2f} s ({r[w] / r['runs']:.2f} x)")
                if mode == "svg":
                    part.append(f"figure processes {r['jobs']}")
                line.append(", ".join(part))
            print(" ".join(line[:1]) + " " + "; ".join(line[1:]), flush=True)
        for w, label in ways.items():
            rs = ratios[w]
            print(
                f"  report / runs, {label}: median {statistics.median(rs):.2f} "
                f"(min {min(rs):.2f}, max {max(rs):.2f})"
            )
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def cpu(a: argparse.Namespace) -> None:
    for sc in a.scenario or SCENARIOS:
        ratios: dict[str, list[float]] = {"now": [], "before": []}
        report: dict[str, list[float]] = {"now": [], "before": []}
        for i in range(a.repeat):
            for mode in ("now", "before") if i % 2 == 0 else ("before", "now"):
                p = subprocess.run(
                    [sys.executable, "-c", BEFORE + CPU, str(ROOT / sc), mode],
                    capture_output=True, text=True, check=True,
                )  # fmt: skip
                r = json.loads(p.stdout.strip().splitlines()[-1])
                ratios[mode].append(r["report"] / r["runs"])
                report[mode].append(r["report"])
                print(
                    f"{sc} repeat {i + 1} ({mode}): CPU of the runs {r['runs']:.2f} s, of the "
                    f"report {r['report']:.2f} s ({r['own']:.2f} s in its process, "
                    f"{r['children']:.2f} s in the figure writers): {ratios[mode][-1]:.2f} x",
                    flush=True,
                )
        for mode, label in (("now", "as written now"), ("before", "as before")):
            print(
                f"  report / runs, CPU, {label}: median {statistics.median(ratios[mode]):.2f}; "
                f"report CPU median {statistics.median(report[mode]):.2f} s"
            )
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()

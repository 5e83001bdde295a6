"""Times P1's Table 1 in full mode end to end (``qoslab reproduce p1-t1``, no ``--quick``)
and writes the result as one line into ``docs/papers/p1.md``, between the markers
``<!-- p1-full-timing -->`` and ``<!-- p1-full-timing end -->``.

    nice python benches/p1_full_timing.py [--workers 2] [--no-doc] [--out RESULTS]

``--out`` keeps the results in a new folder (cached runs would spoil the timing, so an
existing non-empty folder is refused) so that its tables can be exported into the docs;
by default they go to a temporary folder.

The line gives the wall time of the whole command (Python start-up, every sweep,
Parquet, catalog and report), the number of runs, and the date; the machine is shared,
so the figure is an upper bound for it. Table 1 runs each cell with drops and with ECN
under qoslab's fitted model, and once more under the paper's eq. 1 (sweeps ``…-eq1``);
the line also gives the time of the first two alone, summed over their sweeps from the
run manifests (first run started → last run written).
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "papers" / "p1.md"
BLOCK = re.compile(r"(<!-- p1-full-timing -->\n).*?(<!-- p1-full-timing end -->)", re.S)


def count_runs(out: Path) -> int:
    """Runs done: the run folders of every sweep."""
    return sum(1 for sweep in out.rglob("sweep.json") for _ in (sweep.parent / "runs").iterdir())


def sweep_spans(out: Path) -> dict[str, tuple[int, float]]:
    """Per sweep label: (runs, seconds from its first run's start to its last run's end),
    from each run's manifest (``written_at``) and summary (``call_s``)."""
    spans = {}
    for sweep in out.rglob("sweep.json"):
        starts, ends = [], []
        for run in (sweep.parent / "runs").iterdir():
            end = json.loads((run / "manifest.json").read_text())["written_at"]
            call = json.loads((run / "summary.json").read_text())["call_s"]
            starts.append(end - call)
            ends.append(end)
        if ends:
            spans[sweep.parent.name] = (len(ends), max(ends) - min(starts))
    return spans


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--no-doc", action="store_true", help="print only; leave p1.md alone")
    ap.add_argument("--out", type=Path, help="keep the results in this folder")
    a = ap.parse_args()
    if a.out is not None and a.out.exists() and any(a.out.iterdir()):
        print(f"{a.out}: not empty; the timing needs a new folder", file=sys.stderr)
        return 2
    qoslab = Path(sys.executable).with_name("qoslab")
    with tempfile.TemporaryDirectory() as tmp:
        out = a.out if a.out is not None else Path(tmp) / "p1-full"
        cmd = [str(qoslab), "reproduce", "p1-t1", "-o", str(out), "-j", str(a.workers)]
        t0 = time.perf_counter()
        done = subprocess.run(cmd, check=False)
        wall = time.perf_counter() - t0
        index = json.loads((out / "reproduce.json").read_text())
        runs = count_runs(out)
        spans = sweep_spans(out)
    status = index["experiments"][0]["status"]
    fitted = [v for k, v in spans.items() if not k.endswith("-eq1")]
    line = (
        f"Full-mode Table 1 (`qoslab reproduce p1-t1 -j {a.workers}`, {runs} runs): "
        f"{wall / 60:.1f} min wall end to end on this project's 2-core machine; "
        f"the {sum(n for n, _ in fitted)} runs with drops and ECN under the fitted model "
        f"alone {sum(t for _, t in fitted) / 60:.1f} min of it "
        f"({datetime.date.today().isoformat()}, {status}; measured by "
        "`benches/p1_full_timing.py`)."
    )
    print(line)
    if done.returncode not in (0, 1) or status != "done":
        print("p1-t1 did not complete: the document is left unchanged", file=sys.stderr)
        return 1
    if not a.no_doc:
        text = DOC.read_text()
        if not BLOCK.search(text):
            print(f"{DOC}: no <!-- p1-full-timing --> markers", file=sys.stderr)
            return 2
        DOC.write_text(BLOCK.sub(lambda m: m.group(1) + line + "\n" + m.group(2), text))
        print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Times P1's Table 1 in full mode end to end (``qoslab reproduce p1-t1``, no ``--quick``)
and writes the result as one line into ``docs/papers/p1.md``, between the markers
``<!-- p1-full-timing -->`` and ``<!-- p1-full-timing end -->`` (one line per mode: with
``--paper-only`` the paper's own 1,200 runs, without it qoslab's 1,800 with the eq. 1
reruns; a run replaces its own mode's line and keeps the other).

    nice python benches/p1_full_timing.py [--paper-only] [--workers 2] [--no-doc] [--out RESULTS]

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


#: How each mode's line starts (by ``--paper-only``): a run replaces only its own line.
PREFIX = {True: "The paper's Table 1 alone", False: "Full-mode Table 1 with the eq. 1 reruns"}


def merge(m: re.Match, line: str, prefix: str) -> str:
    """The block's lines with this mode's line replaced (paper-only first)."""
    old = [ln for ln in m.group(0).splitlines()[1:-1] if ln.strip()]
    keep = [ln for ln in old if ln.startswith(PREFIX[True]) or ln.startswith(PREFIX[False])]
    lines = [ln for ln in keep if not ln.startswith(prefix)] + [line]
    lines.sort(key=lambda ln: not ln.startswith(PREFIX[True]))
    return "".join(f"{ln}\n" for ln in lines)


def build_kind() -> str:
    """How setup built the installed extension (``scripts/pgo_build.py`` notes it)."""
    kind = ROOT / ".venv" / ".qoslab-build-kind"
    text = kind.read_text().strip() if kind.is_file() else "unknown"
    if text == "pgo":
        return "extension built profile-guided (`scripts/pgo_build.py`)"
    return f"extension built without PGO ({text})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--no-doc", action="store_true", help="print only; leave p1.md alone")
    ap.add_argument("--out", type=Path, help="keep the results in this folder")
    ap.add_argument(
        "--paper-only",
        action="store_true",
        help="time `reproduce --paper-only p1-t1` (the paper's 1,200 runs)",
    )
    a = ap.parse_args()
    if a.out is not None and a.out.exists() and any(a.out.iterdir()):
        print(f"{a.out}: not empty; the timing needs a new folder", file=sys.stderr)
        return 2
    qoslab = Path(sys.executable).with_name("qoslab")
    with tempfile.TemporaryDirectory() as tmp:
        out = a.out if a.out is not None else Path(tmp) / "p1-full"
        flags = ["--paper-only"] if a.paper_only else []
        cmd = [str(qoslab), "reproduce", *flags, "p1-t1", "-o", str(out), "-j", str(a.workers)]
        t0 = time.perf_counter()
        done = subprocess.run(cmd, check=False)
        wall = time.perf_counter() - t0
        index = json.loads((out / "reproduce.json").read_text())
        runs = count_runs(out)
        spans = sweep_spans(out)
    status = index["experiments"][0]["status"]
    fitted = [v for k, v in spans.items() if not k.endswith("-eq1")]
    prefix = PREFIX[a.paper_only]
    built = build_kind()
    if a.paper_only:
        line = (
            f"{prefix} (`qoslab reproduce --paper-only p1-t1 -j {a.workers}`, {runs} runs): "
            f"{wall / 60:.1f} min wall end to end on this project's 2-core machine, "
            f"{built} ({datetime.date.today().isoformat()}, {status}; measured by "
            "`benches/p1_full_timing.py --paper-only`)."
        )
    else:
        line = (
            f"{prefix} (`qoslab reproduce p1-t1 -j {a.workers}`, {runs} runs): "
            f"{wall / 60:.1f} min wall end to end on this project's 2-core machine, "
            f"{built}; the {sum(n for n, _ in fitted)} runs with drops and ECN under the "
            f"fitted model alone {sum(t for _, t in fitted) / 60:.1f} min of it "
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
        DOC.write_text(BLOCK.sub(lambda m: m.group(1) + merge(m, line, prefix) + m.group(2), text))
        print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

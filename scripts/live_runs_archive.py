"""Carries the finished runs of a live full mode from one machine to the next: packs the
runs of ``FOLDER/EXP/runs/`` whose timing verdict held into
``validation/data/live-runs/EXP-full.tar.xz`` and rewrites the table of that folder's
README from the archives there.

    python scripts/live_runs_archive.py pack results/p4live-full p4-live
    python scripts/live_runs_archive.py table       # the README's table only

A live run is packed when it is complete (its ``manifest.json`` written) and its
``summary.json`` says ``live_timing_ok``; a run of the simulator alone (a twin's own
folder, ``…-twin``) when it is complete. The rest stays out, so that the resumed
``qoslab reproduce`` runs it again. Unpack with ``tar -C FOLDER -xJf ARCHIVE``.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "validation" / "data" / "live-runs"
README = HERE / "README.md"
BEGIN = "<!-- live-runs table begin -->"
END = "<!-- live-runs table end -->"


def packable(run: Path) -> tuple[bool, str]:
    """Whether a run folder goes into the archive, and why not."""
    if not (run / "manifest.json").is_file():
        return False, "incomplete (no manifest.json)"
    try:
        s = json.loads((run / "summary.json").read_text())
    except (OSError, ValueError) as e:
        return False, f"summary.json unreadable ({e})"
    if s.get("live") and not s.get("live_timing_ok"):
        return False, f"timing verdict failed ({s.get('live_timing_cause')})"
    return True, ""


def pack(folder: Path, exp: str) -> int:
    """Packs ``folder/exp/runs`` (see the module docstring); returns an exit code."""
    runs = folder / exp / "runs"
    if not runs.is_dir():
        print(f"{runs}: no such folder (run `qoslab reproduce {exp} -o {folder}` first)")
        return 2
    keep, left = [], []
    for r in sorted(p for p in runs.iterdir() if p.is_dir()):
        ok, why = packable(r)
        (keep if ok else left).append((r, why))
    if not keep:
        print(f"{runs}: no finished run to pack")
        return 1
    HERE.mkdir(parents=True, exist_ok=True)
    dest = HERE / f"{exp}-full.tar.xz"
    tmp = dest.with_suffix(".tmp")
    with tarfile.open(tmp, "w:xz") as tar:
        for r, _ in keep:
            tar.add(r, arcname=f"{exp}/runs/{r.name}")
    tmp.replace(dest)
    print(f"{dest.relative_to(ROOT)}: {len(keep)} runs packed, {len(left)} left out")
    for r, why in left:
        print(f"  left out {r.name}: {why}")
    table()
    return 0


def describe(archive: Path) -> dict[str, object]:
    """The archive's experiment, engine builds, live runs and runs of the simulator."""
    live = sim = 0
    builds: set[str] = set()
    with tarfile.open(archive, "r:xz") as tar:
        for m in tar.getmembers():
            if not m.name.endswith("/summary.json"):
                continue
            f = tar.extractfile(m)
            s = json.load(io.TextIOWrapper(f)) if f else {}
            builds.add(str(s.get("engine_build")))
            live += bool(s.get("live"))
            sim += not s.get("live")
    exp = re.sub(r"-full\.tar\.xz$", "", archive.name)
    return {"exp": exp, "builds": sorted(builds), "live": live, "sim": sim}


def table() -> None:
    """Rewrites the README's table from the archives in its folder."""
    rows = ["| archive | experiment | engine build | live runs | runs of the simulator |",
            "|---|---|---|---|---|"]  # fmt: skip
    for a in sorted(HERE.glob("*-full.tar.xz")):
        d = describe(a)
        rows.append(f"| `{a.name}` | `{d['exp']}` | {', '.join(map(str, d['builds']))} "
                    f"| {d['live']} | {d['sim']} |")  # fmt: skip
    text = README.read_text()
    i, j = text.index(BEGIN) + len(BEGIN), text.index(END)
    README.write_text(text[:i] + "\n" + "\n".join(rows) + "\n" + text[j:])
    print(f"{README.relative_to(ROOT)}: table rewritten ({len(rows) - 2} archives)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pack", help="pack a results folder's finished runs of one experiment")
    p.add_argument("folder", type=Path, help="the reproduce -o folder")
    p.add_argument("exp", help="the experiment (e.g. p4-live)")
    sub.add_parser("table", help="rewrite the README's table from the archives")
    a = ap.parse_args(argv)
    if a.cmd == "pack":
        return pack(a.folder, a.exp)
    table()
    return 0


if __name__ == "__main__":
    sys.exit(main())

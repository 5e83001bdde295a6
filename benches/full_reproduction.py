"""Times the whole of the five papers' reproduction in full mode (``qoslab reproduce
--all``: every experiment, the papers' seeds and durations), per experiment, and says
what a Ray cluster of N cores would take.

    python benches/full_reproduction.py [--workers 2] [--out RESULTS]
    python benches/full_reproduction.py --ray-check EXP   # adds Ray's cost to the data
    python benches/full_reproduction.py --page      # regenerate the page from the data
    python benches/full_reproduction.py --quick --no-doc p0-f3 p2-f1   # a try-out

One ``qoslab reproduce --all -j W -o OUT`` runs as a subprocess (the user's command,
Python start-up and report included); ``OUT`` must be new or empty, since finished runs
found there would be reused and spoil the timing. Per experiment the script reads from
``OUT``: the wall time (``reproduce.json``), the runs, their CPU time in the engine
(``call_s`` of every run's ``summary.json``) and the longest run; and apart from them
the runs the experiment handed to the pool without saving them (``Context.run_many``,
``pooled`` in ``reproduce.json``; ``pooled_*`` in the data), which the N-core estimate
counts as work for the cores and the table of timings leaves out, so that its runs and
CPU per run compare with timings made before the pool ran them.

**N cores, on paper.** Experiments run one after another; inside one, runs spread over
the workers. An experiment on N cores takes at least max(CPU ÷ N, its longest run),
plus what no worker does (building sweeps, analysis, tables, the report): its measured
wall time minus the same bound for W workers. The sum over experiments is the estimate.
``--ray-check EXP`` measures Ray's own cost on this machine: EXP with ``--ray local``
and with the local pool, the same number of cores, one after the other; it runs on its
own, after the whole reproduction, and adds its result to the data file (a Ray that
fails is recorded as such, the timing already written is kept).

**The machine's speed.** This machine is a virtual one on a shared host, and its speed
changes from day to day (the same runs have taken nearly twice the CPU on one day as
on another: the page's table of timings shows it). Before and after the reproduction,
and with the Ray check, the script times a probe that is no part of qoslab and the same
work on any day (:func:`probe`), and the data file keeps every earlier timing in
``history`` (the previous file's timing moves there when a new one is written;
``--history-from FILE`` adds one from an earlier data file, e.g. ``git show
REV:validation/data/full-reproduction.json``): the page compares them by engine CPU
per run and by the probe, not by wall time alone.

Writes ``validation/data/full-reproduction.json`` (with ``--no-doc``, nothing) and the
page ``docs/validation/full-reproduction.md`` generated from it.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "validation" / "data" / "full-reproduction.json"
PAGE = ROOT / "docs" / "validation" / "full-reproduction.md"
QOSLAB = [sys.executable, "-m", "qoslab"]
#: Cluster sizes the page extrapolates to.
CORES = (2, 8, 32, 128)
#: The probe hashes this many MiB (about 0.5 s on this machine).
PROBE_MIB = 256


class ReproduceFailed(RuntimeError):
    """``qoslab reproduce`` exited with a code other than 0 or 1."""


def reproduce(args: list[str], out: Path) -> float:
    """Runs ``qoslab reproduce ARGS -o OUT`` (output passed through) and returns its wall
    time in seconds; raises :class:`ReproduceFailed` if the command failed."""
    t0 = time.perf_counter()
    p = subprocess.run([*QOSLAB, "reproduce", *args, "-o", str(out)], check=False)
    wall = time.perf_counter() - t0
    if p.returncode not in (0, 1):  # 1: an experiment failed, still timed and reported
        raise ReproduceFailed(f"qoslab reproduce {' '.join(args)} exited {p.returncode}")
    return wall


def per_experiment(out: Path) -> list[dict]:
    """Per experiment of ``OUT/reproduce.json``: wall time, runs, engine CPU, longest run."""
    index = json.loads((out / "reproduce.json").read_text())
    rows = []
    for e in index["experiments"]:
        calls = [
            float(json.loads(s.read_text()).get("call_s", 0.0))
            for s in (out / e["name"]).rglob("summary.json")
        ]
        pooled = e.get("pooled") or {"runs": 0, "call_s": 0.0, "longest_s": 0.0}
        rows.append({
            "name": e["name"], "status": e["status"], "quick": e.get("quick", False),
            "wall_s": round(e["wall_s"], 2), "runs": len(calls),
            "cpu_s": round(sum(calls), 2), "longest_s": round(max(calls, default=0.0), 2),
            "pooled_runs": pooled["runs"], "pooled_cpu_s": round(pooled["call_s"], 2),
            "pooled_longest_s": round(pooled["longest_s"], 2),
        })  # fmt: skip
    return rows


def probe(times: int = 3) -> float:
    """Seconds for SHA-256 over :data:`PROBE_MIB` MiB (Python's ``hashlib``, C code that
    is no part of qoslab), best of ``times``: the machine's speed at the moment."""
    block = bytes(1 << 20)
    best = float("inf")
    for _ in range(times):
        t0 = time.perf_counter()
        h = hashlib.sha256()
        for _ in range(PROBE_MIB):
            h.update(block)
        best = min(best, time.perf_counter() - t0)
    return round(best, 3)


def git_commit() -> str | None:
    """The checkout's commit (``-dirty`` with uncommitted changes), if git knows it."""
    try:
        p = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
                           capture_output=True, text=True, check=False)  # fmt: skip
    except OSError:  # no git on this machine
        return None
    return p.stdout.strip() or None


def history_entry(data: dict) -> dict:
    """One timing of the whole, as the page's table of timings shows it."""
    rows = data["experiments"]
    return {
        "date": data["date"], "commit": data.get("commit"), "build": data.get("build"),
        "wall_s": data["wall_s"], "runs": sum(r["runs"] for r in rows),
        "cpu_s": round(sum(r["cpu_s"] for r in rows), 1), "probe_s": data.get("probe_s"),
        "ray_probe_s": (data.get("ray_check") or {}).get("probe_s"),
    }  # fmt: skip


class NotTiming(ValueError):
    """A data file, or an entry of its history, that is not a timing of the whole."""


def checked_timing(data: object) -> dict:
    """``data`` if it is a timing of the whole whose history entries all have what the
    page reads; raises :class:`NotTiming` naming what is missing otherwise."""
    if not isinstance(data, dict):
        raise NotTiming(f"expected a JSON object, found {type(data).__name__}")
    try:
        history_entry(data)
    except (KeyError, TypeError) as e:
        raise NotTiming(f"not a timing of the whole (no {e})") from None
    for i, h in enumerate(data.get("history", [])):
        ok = isinstance(h, dict) and isinstance(h.get("date"), str)
        if not ok or not all(
            isinstance(h.get(k), (int, float)) for k in ("wall_s", "runs", "cpu_s")
        ):
            raise NotTiming(f"history[{i}]: expected date, wall_s, runs and cpu_s")
    return data


def with_history(data: dict, earlier: dict) -> dict:
    """``data`` with ``earlier``'s timing and its own history in its history (once each,
    oldest first; both checked by :func:`checked_timing`)."""
    checked_timing(data)
    checked_timing(earlier)
    seen = {(h["date"], h["wall_s"]) for h in data.get("history", [])}
    seen.add((data["date"], data["wall_s"]))
    hist = list(data.get("history", []))
    for h in [*earlier.get("history", []), history_entry(earlier)]:
        if (h["date"], h["wall_s"]) not in seen:
            seen.add((h["date"], h["wall_s"]))
            hist.append(h)
    return {**data, "history": sorted(hist, key=lambda h: h["date"])}


def probe_text(p: dict | float | None) -> str:
    """A timing's probe seconds for the table: before–after, or the one taken."""
    if isinstance(p, dict):
        return "–".join(f"{p[k]:.2f}" for k in ("before", "after") if k in p)
    return f"{p:.2f}" if isinstance(p, (int, float)) else "–"


def timings(data: dict) -> list[str]:
    """The table of this timing and the earlier ones (from ``history``)."""
    now = history_entry(data)
    lines = [
        "",
        "## Every timing of the whole",
        "",
        "The machine is a virtual one on a shared host, and its speed changes from day to "
        "day. Engine CPU per run (the same experiments and runs in each row, unless the "
        "runs column says otherwise) and the probe (SHA-256 of "
        f"{PROBE_MIB} MiB in Python's hashlib, best of 3: no part of qoslab, the same work "
        "on any day) tell a slower day from a slower qoslab.",
        "",
        "| date | commit | build | wall [min] | runs | engine CPU [min] | "
        "engine CPU per run [s] | probe [s] |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for h in [now, *reversed(data.get("history", []))]:
        p = h.get("probe_s") or h.get("ray_probe_s")
        where = " (with the Ray check)" if not h.get("probe_s") and h.get("ray_probe_s") else ""
        lines.append(
            f"| {h['date']} | {h.get('commit') or '–'} | {h.get('build') or '–'} | "
            f"{fmt_min(h['wall_s'])} | {h['runs']} | {fmt_min(h['cpu_s'])} | "
            f"{h['cpu_s'] / max(h['runs'], 1):.3f} | {probe_text(p)}{where} |"
        )
    return lines


def on_cores(row: dict, workers: int, n: int) -> float:
    """The experiment's time on ``n`` cores (module docstring): its bound for n plus the
    part of its measured wall time no worker explains."""
    cpu = row["cpu_s"] + row.get("pooled_cpu_s", 0.0)
    longest = max(row["longest_s"], row.get("pooled_longest_s", 0.0))
    bound = max(cpu / workers, longest)
    serial = max(0.0, row["wall_s"] - bound)
    return serial + max(cpu / n, longest)


def ray_check(exp: str, workers: int) -> dict:
    """EXP in full mode with the local pool and with ``--ray local`` (fresh folders); a
    failing run is recorded under ``error``."""
    res: dict = {"experiment": exp, "workers": workers, "probe_s": probe()}
    for label, extra in (("local_s", ["-j", str(workers)]), ("ray_local_s", ["--ray", "local"])):
        with tempfile.TemporaryDirectory() as tmp:
            try:
                res[label] = round(reproduce([exp, *extra], Path(tmp) / "out"), 1)
            except ReproduceFailed as e:
                res["error"] = str(e)
                return res
    res["ray_over_local"] = round(res["ray_local_s"] / res["local_s"], 3)
    return res


def fmt_min(s: float) -> str:
    """Seconds as minutes with one decimal."""
    return f"{s / 60:.1f}"


def serial_ones(rows: list[dict], workers: int) -> str:
    """The experiments of at least 30 s whose measured time is 90 % or more outside the
    workers' runs, with that time."""
    out = [
        f"{r['name']} {fmt_min(r['wall_s'])} min"
        for r in sorted(rows, key=lambda r: -r["wall_s"])
        if r["wall_s"] >= 30 and on_cores(r, workers, 10**9) >= 0.9 * r["wall_s"]
    ]
    return "here: " + ", ".join(out) if out else "none here"


def dominant(rows: list[dict], wall: float) -> str:
    """The experiments that make up 3/4 of the wall time, with their share."""
    out, acc = [], 0.0
    for r in sorted(rows, key=lambda r: -r["wall_s"]):
        if acc >= 0.75 * wall:
            break
        acc += r["wall_s"]
        out.append(f"{r['name']} ({r['wall_s'] / wall:.0%})")
    return ", ".join(out) + f": {acc / wall:.0%} of the whole."


def page(data: dict) -> str:
    """The Markdown page, from the data file's contents."""
    rows, w = data["experiments"], data["workers"]
    total_cpu = sum(r["cpu_s"] for r in rows)
    lines = [
        "# The whole reproduction in full mode: how long it takes",
        "",
        "<!-- Generated by `python benches/full_reproduction.py --page` from",
        "     validation/data/full-reproduction.json; do not edit by hand. -->",
        "",
        f"`{data['command']}` on {data['machine']}, {data['date']}: "
        f"**{fmt_min(data['wall_s'])} min** end to end ({len(rows)} experiments, "
        f"{sum(r['runs'] for r in rows)} runs, {fmt_min(total_cpu)} min of engine CPU; "
        f"build: {data['build']}). Measured by `python benches/full_reproduction.py`.",
        "",
        "| experiment | wall [min] | share | runs | engine CPU [min] | longest run [s] |"
        + "".join(f" {n} cores [min] |" for n in CORES),
        "|---|---|---|---|---|---|" + "---|" * len(CORES),
    ]
    for r in sorted(rows, key=lambda r: -r["wall_s"]):
        lines.append(
            f"| {r['name']} | {fmt_min(r['wall_s'])} | {r['wall_s'] / data['wall_s']:.0%} | "
            f"{r['runs']} | {fmt_min(r['cpu_s'])} | {r['longest_s']:.0f} |"
            + "".join(f" {fmt_min(on_cores(r, w, n))} |" for n in CORES)
        )
    est = {n: sum(on_cores(r, w, n) for r in rows) for n in CORES}
    lines += [
        "| **all** | **" + fmt_min(sum(r["wall_s"] for r in rows)) + "** | | "
        f"{sum(r['runs'] for r in rows)} | {fmt_min(total_cpu)} | |"
        + "".join(f" **{fmt_min(est[n])}** |" for n in CORES),
        "",
        "The N-core columns are an estimate on paper (the script's docstring): each "
        "experiment takes at least its engine CPU ÷ N or its longest run, whichever is "
        "longer, plus the part of its measured time no worker spends on runs. Runs and "
        "engine CPU count the runs an experiment keeps (its sweeps' runs and the runs it "
        "saves); the runs it hands to the pool without keeping them (`Context.run_many`: "
        f"{sum(r.get('pooled_runs', 0) for r in rows)} runs, "
        f"{fmt_min(sum(r.get('pooled_cpu_s', 0.0) for r in rows))} min of engine CPU here) "
        "count in the estimate as the cores' work too. What an experiment runs in its own "
        "process (direct `qoslab.run` calls, its analysis, tables and figures) is part of "
        "the time no worker spends, and the estimate keeps it serial on any number of "
        f"cores: an experiment with few runs and a long wall time is that kind "
        f"({serial_ones(rows, w)}).",
        "",
        f"What dominates: {dominant(rows, data['wall_s'])}",
    ]
    rc = data.get("ray_check")
    if rc and "error" in rc:
        lines += ["", f"Ray's own cost could not be measured here: {rc['error']}."]
    elif rc:
        lines += [
            "",
            f"Ray's own cost, measured here: `{rc['experiment']}` in full mode took "
            f"{rc['local_s']} s with the local pool (`-j {rc['workers']}`) and "
            f"{rc['ray_local_s']} s with `--ray local` ({rc['ray_over_local']}×). On a "
            "cluster the N-core columns stretch by about that factor.",
        ]
    lines += timings(data)
    return "\n".join(lines) + "\n"


def build_kind() -> str:
    """What the installed extension is (PGO or plain), as ``scripts/pgo_build.py`` wrote."""
    f = ROOT / ".venv" / ".qoslab-build-kind"
    return f.read_text().strip() if f.is_file() else "unknown"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="only these experiments (a try-out)")
    ap.add_argument("--workers", "-j", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--out", type=Path, default=None, help="results folder (new or empty)")
    ap.add_argument("--quick", action="store_true", help="quick mode (a try-out)")
    ap.add_argument("--ray-check", metavar="EXP", default=None)
    ap.add_argument("--no-doc", action="store_true", help="write neither data nor page")
    ap.add_argument("--page", action="store_true", help="only regenerate the page")
    ap.add_argument("--history-from", type=Path, metavar="FILE", default=None,
                    help="add the timing in an earlier data file to the history")  # fmt: skip
    a = ap.parse_args()
    if a.history_from:
        if not DATA.is_file():
            ap.error(f"--history-from adds to {DATA.relative_to(ROOT)}: run the reproduction first")
        try:
            earlier = checked_timing(json.loads(a.history_from.read_text()))
        except (OSError, ValueError) as e:
            ap.error(f"--history-from {a.history_from}: not a timing data file ({e})")
        try:
            data = with_history(json.loads(DATA.read_text()), earlier)
        except (OSError, ValueError) as e:
            ap.error(f"{DATA.relative_to(ROOT)}: not a timing data file ({e})")
        text = page(data)  # before anything is written
        DATA.write_text(json.dumps(data, indent=1) + "\n")
        PAGE.write_text(text)
        print(f"wrote {DATA.relative_to(ROOT)} and {PAGE.relative_to(ROOT)}")
        return 0
    if a.page:
        PAGE.write_text(page(json.loads(DATA.read_text())))
        print(f"wrote {PAGE.relative_to(ROOT)}")
        return 0
    if a.ray_check:
        if not DATA.is_file():
            ap.error(f"--ray-check adds to {DATA.relative_to(ROOT)}: run the reproduction first")
        data = json.loads(DATA.read_text())
        data["ray_check"] = ray_check(a.ray_check, data["workers"])
        DATA.write_text(json.dumps(data, indent=1) + "\n")
        PAGE.write_text(page(data))
        print(f"wrote {DATA.relative_to(ROOT)} and {PAGE.relative_to(ROOT)}")
        return 0
    if (a.quick or a.names) and not a.no_doc:
        ap.error(
            "--quick and named experiments are try-outs: pass --no-doc (the page is "
            "for the whole full-mode reproduction)"
        )
    tmp = None
    out = a.out
    if out is None:
        tmp = tempfile.TemporaryDirectory()
        out = Path(tmp.name) / "out"
    elif out.exists() and any(out.iterdir()):
        ap.error(f"{out} is not empty: its finished runs would be reused")
    args = [*(a.names or ["--all"]), "-j", str(a.workers), *(["--quick"] if a.quick else [])]
    before = probe()
    try:
        wall = reproduce(args, out)
    except ReproduceFailed as e:
        sys.exit(str(e))
    data = {
        "command": "qoslab reproduce " + " ".join(args),
        "workers": a.workers,
        "wall_s": round(wall, 1),
        "date": datetime.date.today().isoformat(),
        "machine": f"{os.cpu_count()} cores",
        "build": build_kind(),
        "commit": git_commit(),
        "probe_s": {"before": before, "after": probe()},
        "experiments": per_experiment(out),
    }
    if not a.no_doc and DATA.is_file():
        try:
            data = with_history(data, json.loads(DATA.read_text()))
        except (OSError, ValueError) as e:
            aside = DATA.with_name(DATA.name + ".unreadable")
            n = 1
            while aside.exists():  # an earlier one set aside stays too
                aside = DATA.with_name(f"{DATA.name}.unreadable.{n}")
                n += 1
            DATA.rename(aside)
            print(f"{DATA.relative_to(ROOT)}: the earlier timing is unreadable ({e}); kept as "
                  f"{aside.relative_to(ROOT)}, the history starts anew")  # fmt: skip
    if not a.no_doc:  # the hour's timing first, whatever the page does
        DATA.parent.mkdir(parents=True, exist_ok=True)
        DATA.write_text(json.dumps(data, indent=1) + "\n")
    text = page(data)
    print(text)
    if not a.no_doc:
        PAGE.write_text(text)
        print(f"wrote {DATA.relative_to(ROOT)} and {PAGE.relative_to(ROOT)}")
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The records `validation/ns3_bench.py` keeps of its runs, and what is made from them.

The ratio of qoslab's speed to ns-3's belongs to code and machine together (the same
engine has measured markedly faster against ns-3 on one day's machine than on the day
before's: the pages' tables of recorded runs show by how much), so a run does not replace the
last one's figures: it leaves a record (one JSON file, never
overwritten) and the pages show every recorded run of the same kind side by side.

A record holds when the run started (UTC), the commit of the checkout (`+changes`
when the engine's sources differ from it: the binary may then hold code no commit
has), the build (`build_tag`: `pgo` or `plain`, and `build` in words), the machine
(CPU model, cores, kernel, 1-minute load at the start), the load and scale of the run,
the pairs per case, and per case its definition, the median wall times, every paired
ratio of wall and CPU time with their median, least and greatest, events per
bottleneck packet and the bottleneck packets of each simulator. Records made before
the script kept them were imported from their pages; their `source` says what they
lack.
"""

from __future__ import annotations

import json
import os
import platform
import re
import statistics
import subprocess
import time
from numbers import Real
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Where each measurement leaves its record (`ns3_bench.py --records`).
RECORDS = ROOT / "validation" / "data" / "ns3-speed"


def machine():
    """The machine measured on: CPU model, cores, kernel, 1-minute load now."""
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")),
                       cpu)  # fmt: skip
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "kernel": platform.release(),
            "load": round(os.getloadavg()[0], 2)}  # fmt: skip


#: The paths whose changes the measured binary holds (a page the script rewrote is
#: not one of them).
ENGINE_PATHS = ("crates", "Cargo.toml", "Cargo.lock")


def source_commit():
    """The checkout's commit, with `+changes` when the engine's tracked sources differ
    from it."""

    def git(*a):
        r = subprocess.run(["git", "-C", str(ROOT), *a], capture_output=True, text=True)
        return r.stdout.strip() if r.returncode == 0 else ""

    head = git("rev-parse", "--short=7", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", *ENGINE_PATHS)
    return head + ("+changes" if dirty else "")


def ratio_summary(ratios):
    """Median, least and greatest of paired ratios."""
    return {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios)}


def stamp(t):
    """A record's time: UTC, to the second."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _num(x):
    return isinstance(x, Real) and not isinstance(x, bool)


def check_record(rec):
    """Raises ValueError naming the first field of `rec` that a record cannot have."""

    def need(ok, what):
        if not ok:
            raise ValueError(what)

    need(isinstance(rec, dict), "not a JSON object")
    need(isinstance(rec.get("when"), str) and re.fullmatch(
        r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", rec["when"]), "'when' is not a UTC time")  # fmt: skip
    need(isinstance(rec.get("commit"), str), "'commit' is not a string")
    need(rec.get("build_tag") in ("pgo", "plain"), "'build_tag' is neither pgo nor plain")
    need(isinstance(rec.get("machine"), dict) and isinstance(rec["machine"].get("cpu"), str),
         "'machine.cpu' is not a string")  # fmt: skip
    need(type(rec.get("load")) is int and rec["load"] >= 0, "'load' is not a count")
    need(_num(rec.get("scale")) and rec["scale"] > 0, "'scale' is not a positive number")
    need(type(rec.get("repeat")) is int and rec["repeat"] > 0, "'repeat' is not a count")
    cases = rec.get("cases")
    need(isinstance(cases, dict) and cases, "'cases' is not a non-empty object")
    for name, c in cases.items():
        need(isinstance(c, dict), f"case {name!r} is not an object")
        w = c.get("wall_ratio")
        need(isinstance(w, dict) and all(_num(w.get(k)) for k in ("median", "min", "max")),
             f"case {name!r}: 'wall_ratio' lacks a number of median, min, max")  # fmt: skip
        need(w["min"] <= w["median"] <= w["max"], f"case {name!r}: min ≤ median ≤ max fails")
        need(_num(c.get("events_per_pkt")), f"case {name!r}: 'events_per_pkt' is no number")


def save_record(folder, rec):
    """Writes `rec` as a new file in `folder`, named by its time and load; an existing
    file is never replaced: a second run in the same second gets the next number."""
    check_record(rec)
    folder.mkdir(parents=True, exist_ok=True)
    base = rec["when"].replace(":", "").removesuffix("Z") + f"-load{rec['load']}"
    for k in range(100):
        path = folder / (base + (f"-{k}" if k else "") + ".json")
        try:
            with open(path, "x") as f:
                json.dump(rec, f, indent=1)
                f.write("\n")
            return path
        except FileExistsError:
            continue
    raise RuntimeError(f"{folder}: 100 records named {base}* already")


def _order(path, rec):
    """Sort key: the time, then the number a same-second name carries."""
    m = re.search(r"-load\d+-(\d+)$", path.stem)
    return (rec["when"], int(m.group(1)) if m else 0)


def load_records(folder):
    """Every record in `folder` (none if it does not exist), oldest first; a file that
    is not a record stops the run with its name: a damaged history is not shown in
    part."""
    keyed = []
    for path in sorted(Path(folder).glob("*.json")):
        try:
            rec = json.loads(path.read_text())
            check_record(rec)
        except (OSError, ValueError) as e:
            raise SystemExit(f"{path}: not an ns3_bench record ({e})") from None
        keyed.append((_order(path, rec), rec))
    return [rec for _, rec in sorted(keyed, key=lambda kr: kr[0])]


def same_kind(history, load, scale, build_tag):
    """The records of runs of this load, scale and build, oldest first."""
    kind = (load, scale, build_tag)
    return [r for r in history if (r["load"], r["scale"], r["build_tag"]) == kind]


def is_whole(rec, fast):
    """True if `rec` is of an unloaded full-length run of exactly the cases `fast` (a
    run the summary sentence speaks of)."""
    return (rec["load"], rec["scale"]) == (0, 1.0) and set(rec["cases"]) == set(fast)


def whole_runs(history, fast, build_tag):
    """The whole runs (`is_whole`) of this build in `history`, oldest first."""
    return [r for r in history if r["build_tag"] == build_tag and is_whole(r, fast)]


def history_lines(history, load, scale, build_tag, order, folder):
    """Markdown: the median wall ratio (least–greatest) of every recorded run of this
    load, scale and build, a column a run, a row a case (cases in `order` first, then any
    that only records name)."""
    runs = same_kind(history, load, scale, build_tag)
    if not runs:
        return []
    seen = {c for r in runs for c in r["cases"]}
    names = [c for c in order if c in seen] + sorted(seen - set(order))
    head = [f"{r['when'][:19].replace('T', ' ')} · {r['commit']} · {r['machine']['cpu']} · "
            f"{r['repeat']} pairs" for r in runs]  # fmt: skip
    lines = [
        "## Every recorded run",
        "",
        f"The median wall ratio (least–greatest pair) of each run recorded in "
        f"`{os.path.relpath(Path(folder).resolve(), ROOT)}` with this page's load "
        f"({load} busy process{'' if load == 1 else 'es'}), scale ({scale:g}) and build "
        f"({build_tag}), oldest "
        "first (UTC; commit of the checkout measured, the CPU as the record gives it, "
        "`unknown` where it does not say). qoslab's speed over ns-3's belongs to code and "
        "machine together, so each run adds a column and replaces none.",
        "",
        "| case | " + " | ".join(head) + " |",
        "|---|" + "---|" * len(runs),
    ]
    for name in names:
        cells = []
        for r in runs:
            w = r["cases"].get(name, {}).get("wall_ratio")
            cells.append(f"{w['median']:.0f}× ({w['min']:.0f}–{w['max']:.0f})" if w else "–")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def summary(rec, history, flows):
    """One sentence from run record `rec`: the least and greatest median wall ratio and
    events per packet, the CPU, and the range over the whole runs of its build in
    `history` when there are more than one; `flows` maps a case to its flow count."""
    cases = rec["cases"]
    meds = [c["wall_ratio"]["median"] for c in cases.values()]
    per = [c["events_per_pkt"] for c in cases.values()]
    n = [flows[name] for name in cases]
    runs = whole_runs(history, cases, rec["build_tag"])
    all_meds = [c["wall_ratio"]["median"] for r in runs for c in r["cases"].values()]
    over = (f"; over the {len(runs)} whole runs recorded with this build, on any machine, "
            f"{min(all_meds):.0f}–{max(all_meds):.0f}×" if len(runs) > 1 else "")  # fmt: skip
    return (f"{min(meds):.0f}–{max(meds):.0f}× ns-3.44 by the median of paired runs on "
            f"{len(cases)} dumbbells of {min(n)}–{max(n)} flows, measured on "
            f"{rec['machine']['cpu']} ({rec['when'][:10]}){over} (qoslab spends "
            f"{min(per):.2f}–{max(per):.2f} events per bottleneck packet)")  # fmt: skip


def put_block(text, begin, end, block, before=None, where="the page"):
    """`text` with the block between marker lines `begin` and `end` (each a line of its
    own) replaced by `block`; where there is none, the block goes in front of the line
    `before` (if present) or at the end. A begin marker without its end is an error
    (ValueError naming `where`): the text after it is not thrown away."""
    new = f"{begin}\n{block}\n{end}"
    b = re.search(rf"^{re.escape(begin)}$", text, flags=re.M)
    if b:
        e = re.compile(rf"^{re.escape(end)}$", flags=re.M).search(text, b.end())
        if not e:
            raise ValueError(f"{where}: {begin} without {end}")
        return text[: b.start()] + new + text[e.end() :]
    m = before and re.search(rf"^{re.escape(before)}$", text, flags=re.M)
    if m:
        return text[: m.start()] + new + "\n\n" + text[m.start() :]
    return text.rstrip("\n") + "\n\n" + new + "\n"

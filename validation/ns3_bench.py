#!/usr/bin/env python3
"""Speed of qoslab against ns-3.44 on TCP dumbbells, measured in the same run.

Cases: small dumbbells of 2–12 flows with mixed RTTs under DropTail and RED at 10 and
20 Mb/s; 8 and 64 flows at 10 Mb/s, 16 and 256 flows at 100 Mb/s, 1000 flows at 1 Gb/s
(RTTs 20/40/80/160 ms cycling); and, only when named in `--only`, the baselines
of issue 61: CUBIC senders through an FQ-CoDel bottleneck (8 flows at 20 Mb/s, 64 at
10 Mb/s, 16 at 100 Mb/s; `BASELINES`). Access links are 10× the bottleneck; SACK, delayed
ACKs, IW 10. Per case both simulators run the same scenario (same start times) in
`--repeat` pairs of whole processes (start-up, scenario reading and result output
included), alternately (qoslab first in even pairs, ns-3 first in odd ones); the table
gives the median of each simulator's wall times, the median of the paired ratios of
wall time and of CPU time (user + system, less disturbed by other work on a shared
machine) with their least and greatest, qoslab's events per bottleneck packet (all, and
by kind), and bottleneck packets per wall second of each (at the median wall times).

Usage: python3 validation/ns3_bench.py [--repeat N] [--scale K] [--only NAME,...]
                                      [--qoslab PATH] [--load N] [--records DIR | --no-record]
       python3 validation/ns3_bench.py --profile-only [--profile NAME]
       python3 validation/ns3_bench.py --history-only | --summary-only [--qoslab PATH] [--load N]
Needs: cargo build --release --bin qoslab-run (or `python scripts/pgo_build.py bin` for the
binary built with the profile `scripts/setup.sh` made for the extension, which is what
users' runs go through: `--qoslab target/pgo-bin/release/qoslab-run`);
validation/ns3/build.sh. `--load N` runs N busy processes (one CPU-bound loop each) beside
both simulators for the whole measurement, for the speed on a machine shared with other
work; it writes `ns3-speed-loaded.md` unless `--out` says otherwise.
Each run leaves a record in validation/data/ns3-speed/ (see ns3_records.py: never
overwritten), and the page shows every recorded run of its load, scale and build beside
this one; the sentence in docs/validation/README.md comes from recorded whole runs only.
Writes docs/validation/ns3-speed.md. With `perf` (Debian: linux-perf) installed it also
profiles qoslab on one case (`--profile`, 10× its simulated time) and writes where the
time goes, by function, into the same page; `--profile-only` redoes just that part.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import ns3_peer
import ns3_records as records
from ns3_peer import NS3, ROOT, qoslab_scenario, run_ns3

#: The qoslab-run binary measured (``--qoslab``; ns3_peer's default otherwise).
QOSLAB = ns3_peer.QOSLAB

# name → flows, RTTs cycled [ms], queue (ns3_peer.QUEUES), bottleneck, queue limit
# [packets], simulated seconds. Access links run at 10× the bottleneck.
CASES = {
    "2-droptail-10M": (2, [40, 80], "droptail", "10Mbps", 100, 60),
    "4-droptail-10M-50ms": (4, [50], "droptail", "10Mbps", 100, 60),
    "4-red-10M": (4, [20, 200], "red", "10Mbps", 100, 60),
    "6-red-10M": (6, [10, 30, 90, 150, 270], "red", "10Mbps", 100, 60),
    "8-droptail-20M": (8, [10, 270], "droptail", "20Mbps", 100, 60),
    "12-red-20M": (12, [10, 30, 90, 150, 270], "red", "20Mbps", 100, 60),
    "12-droptail-20M": (12, [10, 30, 90, 150, 270], "droptail", "20Mbps", 100, 60),
    "8-droptail-10M": (8, [20, 40, 80, 160], "droptail", "10Mbps", 100, 60),
    "64-droptail-10M": (64, [20, 40, 80, 160], "droptail", "10Mbps", 200, 60),
    "16-droptail-100M": (16, [20, 40, 80, 160], "droptail", "100Mbps", 500, 20),
    "256-droptail-100M": (256, [20, 40, 80, 160], "droptail", "100Mbps", 500, 20),
    "1000-droptail-1G": (1000, [20, 40, 80, 160], "droptail", "1Gbps", 2000, 10),
}
# ns-3 needs about 12 minutes for the last one: it runs only when named in --only.
SLOW = {"1000-droptail-1G"}
# The baselines of issue 61, in the same form: CUBIC senders (RFC 9438's constants,
# HyStart off on both sides) through an FQ-CoDel bottleneck with RFC 8290's defaults
# (limit 10240 packets, 1024 flow queues, quantum 1514, target 5 ms, interval 100 ms, as
# validation/ns3_aqm.py runs them; ns-3's disc holds the limit, its device one packet more).
# They run only when named in --only, so the whole runs the summary speaks of keep their
# cases, and benches/ab.py's identity check (whose base binary may predate them) too.
BASELINES = {
    "8-cubic-fq_codel-20M": (8, [10, 270], "fq_codel", "20Mbps", 10240, 60),
    "64-cubic-fq_codel-10M": (64, [20, 40, 80, 160], "fq_codel", "10Mbps", 10240, 60),
    "16-cubic-fq_codel-100M": (16, [20, 40, 80, 160], "fq_codel", "100Mbps", 10240, 20),
}
#: Every case by name: the reference dumbbells and the baselines.
ALL = {**CASES, **BASELINES}
#: The baselines' bottleneck queue in qoslab (ns-3's peer: `--queue=fq_codel`).
FQ_CODEL = ('{ kind = "fq_codel", limit = 10240, flows = 1024, quantum = 1514, '
            'target = "5ms", interval = "100ms" }')  # fmt: skip


def tenfold(rate):
    num = rate.removesuffix("bps")
    unit = num[-1] if num[-1] in "kMG" else ""
    v = float(num.removesuffix(unit)) * 10
    if unit == "M" and v >= 1000:
        return f"{v / 1000:g}Gbps"
    if unit == "G":
        return f"{v:g}Gbps"
    return f"{v:g}{unit}bps"


def starts_of(n):
    """The flows' start times of a case of `n` flows (the same in both simulators)."""
    rnd = random.Random(n)
    return [round(rnd.random(), 6) for _ in range(n)]


def case_scenario(name, duration):
    """qoslab's scenario of case `name` run for `duration` simulated seconds."""
    n, rtts, queue, bn, limit, _ = ALL[name]
    starts, acc = starts_of(n), tenfold(bn)
    if name not in BASELINES:
        return qoslab_scenario(n, queue, starts, duration, 0.0, 1, bn, acc, limit, rtts=rtts)
    text = qoslab_scenario(n, "droptail", starts, duration, 0.0, 1, bn, acc, limit, rtts=rtts)
    # The bottleneck is the last link, its queue the text's last line.
    head, sep, _ = text.rpartition("queue = ")
    text = head + sep + FQ_CODEL + "\n"
    tcp_end = 'granularity = "1ms" }'
    if text.count(tcp_end) != n:
        raise RuntimeError(f"{name}: expected {n} flows' tcp tables in ns3_peer's scenario")
    return text.replace(tcp_end, 'granularity = "1ms", cc = "cubic" }')


def run_case_ns3(name, duration):
    """(wall, cpu, bottleneck packets) of one ns-3 process running case `name`."""
    n, rtts, queue, bn, limit, _ = ALL[name]
    starts, acc = starts_of(n), tenfold(bn)
    if name not in BASELINES:
        return run_ns3_timed(n, queue, starts, duration, 0.0, 1, limit, bn, acc, rtts=rtts)
    # ns3_args gives the disc one packet less than `limit` (the device holds one more).
    args = ns3_peer.ns3_args(n, "droptail", starts, duration, 0.0, 1, limit + 1, bn, acc,
                             rtts=rtts)  # fmt: skip
    args = [a for a in args if not a.startswith("--queue=")]
    args += ["--queue=fq_codel", "--cc=cubic", "--hystart=0"]
    c0, t0 = child_cpu(), time.perf_counter()
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    wall, cpu = time.perf_counter() - t0, child_cpu() - c0
    hops = [int(line.split()[1]) for line in out.splitlines()
            if line.startswith("bottleneck_packets ")]  # fmt: skip
    if len(hops) != 1:
        raise RuntimeError(f"{name}: ns-3's peer printed no bottleneck_packets line")
    return wall, cpu, hops[0]


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_qoslab_timed(text, every_hop=False):
    """(wall, cpu, events, bottleneck packets, events by kind) of one qoslab-run process;
    `every_hop`: with every router hop and transmission end an event of its own (no
    cut-through, no transmissions committed ahead: the same results, more events)."""
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write(text)
    try:
        c0, t0 = child_cpu(), time.perf_counter()
        cmd = [str(QOSLAB), f.name] + (["--every-hop"] if every_hop else [])
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        wall, cpu = time.perf_counter() - t0, child_cpu() - c0
    finally:
        os.unlink(f.name)
    r = json.loads(out)
    q = dict(zip(r["tables"]["queues"]["names"], r["tables"]["queues"]["columns"], strict=True))
    hops = q["departed"][q["iface"].index("r1->r2")]
    return wall, cpu, r["summary"]["events"], hops, r["summary"].get("events_by_kind", {})


def run_ns3_timed(*args, **kw):
    """(wall, cpu, bottleneck packets) of one whole ns-3 process."""
    c0 = child_cpu()
    _, wall, hops = run_ns3(*args, **kw)
    return wall, child_cpu() - c0, hops


def spread(ratios, unit="x"):
    """`median (least–greatest)` of paired ratios."""
    med, lo, hi = statistics.median(ratios), min(ratios), max(ratios)
    return f"{med:.0f}{unit} ({lo:.0f}–{hi:.0f})"


def by_kind(kinds, packets, sep=", "):
    """Arrivals, transmission ends and TCP timers per bottleneck packet."""
    names = ("arrive", "tx_done", "tcp_timer")
    if not all(k in kinds for k in names):
        return "–"
    return sep.join(f"{kinds[k] / packets:.2f}" for k in names)


PROFILE_BEGIN = "<!-- ns3_bench profile -->"
PROFILE_END = "<!-- ns3_bench profile end -->"
HISTORY_BEGIN = "<!-- ns3_bench history -->"
HISTORY_END = "<!-- ns3_bench history end -->"


def perf_record(binary, scenario, data):
    """Samples `binary` on `scenario` into `data` with perf: on the CPU's cycle counter,
    or, where the machine has none (virtual machines without a PMU), on the kernel's
    `cpu-clock` timer. Returns the event used; raises RuntimeError with perf's last
    words when neither works."""
    last = ""
    for event in ("cycles", "cpu-clock"):
        cmd = ["perf", "record", "-q", "-e", event, "-F", "4999", "-o", str(data),
               str(binary), str(scenario)]  # fmt: skip
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode == 0:
            return event
        words = r.stderr.strip().splitlines()
        last = f"{event}: {words[-1] if words else f'exit status {r.returncode}'}"
    raise RuntimeError(last)


def profile(name, top=12):
    """Markdown: qoslab's self time by function on case `name` (perf, 10× its length).
    Empty without perf; raises RuntimeError when perf cannot record here."""
    if shutil.which("perf") is None:
        return ""
    # The plain build: a profile-guided one inlines nearly everything into the loop.
    binary = ns3_peer.QOSLAB
    if not binary.exists():
        raise RuntimeError(f"missing {binary} (cargo build --release --bin qoslab-run)")
    secs = ALL[name][5]
    text = case_scenario(name, secs * 10)
    with tempfile.TemporaryDirectory() as tmp:
        sc, data = pathlib.Path(tmp) / "case.toml", pathlib.Path(tmp) / "perf.data"
        sc.write_text(text)
        event = perf_record(binary, sc, data)
        rep = ["perf", "report", "-i", str(data), "--stdio", "--no-children", "--sort", "symbol"]
        r = subprocess.run(rep, capture_output=True, text=True)
        if r.returncode != 0:
            words = r.stderr.strip().splitlines()
            raise RuntimeError(f"perf report: {words[-1] if words else r.returncode}")
        out = r.stdout
    rows = []
    for line in out.splitlines():
        m = re.match(r"\s+([\d.]+)%\s+\[[.k]\]\s+(.*)$", line)
        if m and len(rows) < top:
            rows.append((float(m.group(1)), re.sub(r"(\s+-)+\s*$", "", m.group(2)).strip()))
    lines = [
        f"Where qoslab's time goes on `{name}` ({secs * 10:g} simulated s, the plain "
        "`cargo build --release` of qoslab-run, whose functions a profile-guided build "
        f"would inline into one; `perf record -e {event} -F 4999` + `perf report "
        "--no-children --sort symbol`; self time):",
        "",
        "| share | function |",
        "|---|---|",
    ]
    lines += [f"| {pct:.1f} % | `{sym.replace('|', '∣')}` |" for pct, sym in rows]
    lines += [
        "",
        "`run_with` holds the event loop (`World::resume`) with the dispatch of the "
        "packet events and their handlers inlined into it (the other events run in "
        "`World::handle_rare`); `enqueue` puts a packet on a link (its queue, the "
        "transmitter, the event scheduling, all inlined), `enqueue_ahead` on a "
        "DropTail or RED link whose transmitter is busy (committing it ahead), "
        "`try_cut` straight through an idle router; `Heap::…` are the event "
        "heaps (one entry per busy link; held packets' releases and timers in heaps "
        "of their own); `red::…` is the RED queue; packets (128 bytes) stay in a pool "
        "and move by slot, so copying them no longer shows; the rest is per-packet "
        "work of routing, TCP and the conditioner hooks.",
    ]
    return "\n".join(lines)


def write_profile(out, name):
    """Writes the profile of case `name` between its markers in page `out`; where perf
    cannot record, the page says so in its place (a profile of another run is not
    left standing beside this run's table)."""
    try:
        block = profile(name)
    except RuntimeError as e:
        print(f"perf could not profile {name}: {e}", file=sys.stderr)
        block = f"No profile of `{name}` with this run: perf could not record here ({e})."
    if not block:
        print("perf not found: no profile written", file=sys.stderr)
        return
    text = out.read_text() if out.exists() else ""
    try:
        out.write_text(records.put_block(text, PROFILE_BEGIN, PROFILE_END, block, where=str(out)))
    except ValueError as e:
        print(f"no profile written: {e}", file=sys.stderr)
        return
    print(f"wrote the profile of {name} into {out}")


def write_history(out, history, load, scale, tag, folder):
    """Writes the table of every recorded run of this load, scale and build into page
    `out` (between its markers, before the profile); returns False, writing nothing,
    when there is no such run."""
    lines = records.history_lines(history, load, scale, tag, list(ALL), folder)
    if not lines:
        return False
    text = out.read_text() if out.exists() else ""
    block = "\n".join(lines)
    out.write_text(
        records.put_block(text, HISTORY_BEGIN, HISTORY_END, block, PROFILE_BEGIN, str(out))
    )
    print(f"wrote the table of every recorded run into {out}")
    return True


def build_tag(path):
    """`pgo` for the binary `scripts/pgo_build.py bin` builds, `plain` otherwise."""
    return "pgo" if "pgo-bin" in path.parts else "plain"


#: The cases the summary sentence speaks of: every one but the slow ones.
FAST = [c for c in CASES if c not in SLOW]


def make_record(rows, args, started, box, commit):
    """The record of one measurement (see `ns3_records`)."""
    cases = {}
    for name, n, rtts, queue, bn, d, qw, nw, walls, cpus, ev, qh, _k, nh, _g, _e in rows:
        limit = ALL[name][4]
        cases[name] = {"flows": n, "rtts_ms": rtts, "queue": queue, "bottleneck": bn,
                       "limit_pkts": limit, "seconds": d, "qoslab_wall_s": qw,
                       "ns3_wall_s": nw, "wall_ratios": walls, "cpu_ratios": cpus,
                       "wall_ratio": records.ratio_summary(walls),
                       "cpu_ratio": records.ratio_summary(cpus), "events_per_pkt": ev / qh,
                       "qoslab_bottleneck_pkts": qh, "ns3_bottleneck_pkts": nh}  # fmt: skip
    return {"when": records.stamp(started), "commit": commit, "build_tag": build_tag(QOSLAB),
            "build": build_kind(QOSLAB), "machine": box, "load": args.load,
            "repeat": args.repeat, "scale": args.scale, "cases": cases}  # fmt: skip


def read_records(folder):
    """The records in `folder`, or None with the reason on stderr."""
    try:
        return records.load_records(folder)
    except SystemExit as e:
        print(e, file=sys.stderr)
        return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every case's simulated time")
    ap.add_argument("--repeat", type=int, default=5, help="pairs of runs; the median counts")
    ap.add_argument("--only", default="", help="comma-separated case names (default: all fast)")
    ap.add_argument("--out", default=None, help="the page to write (default: by --load)")
    ap.add_argument("--profile", default="12-red-20M", help="case to profile with perf")
    ap.add_argument("--profile-only", action="store_true", help="only redo the profile")
    ap.add_argument("--history-only", action="store_true",
                    help="only rewrite the page's table of recorded runs (give the "
                         "--qoslab and --load of the run that made the page)")  # fmt: skip
    ap.add_argument("--summary-only", action="store_true",
                    help="only rewrite the summary sentence, from the newest whole run "
                         "of the --qoslab binary's build")  # fmt: skip
    ap.add_argument("--qoslab", default=None, help="the qoslab-run binary to measure")
    ap.add_argument("--records", default=str(records.RECORDS),
                    help="folder of the runs' records (one JSON file a run)")  # fmt: skip
    ap.add_argument("--no-record", action="store_true",
                    help="keep no record of this run (a trial)")  # fmt: skip
    ap.add_argument("--load", type=int, default=0,
                    help="busy processes running beside the simulators")  # fmt: skip
    args = ap.parse_args()
    global QOSLAB
    if args.qoslab:
        QOSLAB = pathlib.Path(args.qoslab).resolve()
    if args.out is None:
        name = "ns3-speed-loaded.md" if args.load else "ns3-speed.md"
        args.out = str(ROOT / "docs" / "validation" / name)
    if args.load < 0:
        print("--load: expected a number of processes, 0 or more", file=sys.stderr)
        return 2
    if args.profile not in ALL:
        print(f"--profile: unknown case {args.profile!r}", file=sys.stderr)
        return 2
    folder = pathlib.Path(args.records)
    tag = build_tag(QOSLAB)
    if args.history_only or args.summary_only:
        if not folder.is_dir():
            print(f"--records: no folder {folder}", file=sys.stderr)
            return 2
        history = read_records(folder)
        if history is None:
            return 2
    if args.history_only:
        out = pathlib.Path(args.out)
        if not out.exists():
            print(f"--history-only: no page {out} (a run writes it)", file=sys.stderr)
            return 2
        try:
            done = write_history(out, history, args.load, args.scale, tag, folder)
        except ValueError as e:
            print(f"--history-only: {e}", file=sys.stderr)
            return 2
        if not done:
            print(f"--history-only: no {tag} run of load {args.load} and scale "
                  f"{args.scale:g} in {folder}", file=sys.stderr)  # fmt: skip
            return 2
        return 0
    if args.summary_only:
        whole = records.whole_runs(history, FAST, tag)
        if not whole:
            print(f"--summary-only: no whole {tag} run (unloaded, full length, every "
                  f"case but {', '.join(sorted(SLOW))}) in {folder}", file=sys.stderr)  # fmt: skip
            return 2
        for page in SUMMARY_PAGES:
            write_summary(whole[-1], page, history)
        return 0
    if args.profile_only:
        if not ns3_peer.QOSLAB.exists():
            print(f"missing {ns3_peer.QOSLAB}: see the usage line", file=sys.stderr)
            return 2
        write_profile(pathlib.Path(args.out), args.profile)
        return 0
    only = [x for x in args.only.split(",") if x]
    unknown = [x for x in only if x not in ALL]
    if unknown:
        print(f"--only: unknown case {unknown[0]!r} (cases: {', '.join(ALL)})", file=sys.stderr)
        return 2
    for b in (QOSLAB, NS3):
        if not b.exists():
            print(f"missing {b}: see the usage line", file=sys.stderr)
            return 2
    names = only or FAST
    # A damaged history stops the run before the measurement, not after it.
    history = read_records(folder)
    if history is None:
        return 2
    started, box, commit = time.time(), records.machine(), records.source_commit()
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(args.load)]  # fmt: skip
    try:
        rows = measure(names, args)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    rec = make_record(rows, args, started, box, commit)
    if not args.no_record:
        path = records.save_record(folder, rec)
        print(f"recorded the run in {path}")
        history = records.load_records(folder)
    write_page(rows, args, only, rec, history)
    return 0


def build_kind(path):
    """How the measured binary was built, in words for the page."""
    if "pgo-bin" in path.parts:
        return ("built by `python scripts/pgo_build.py bin` with the profile-guided "
                "optimisation profile `scripts/setup.sh` made for the extension (what "
                "users' runs get)")  # fmt: skip
    return "a plain `cargo build --release` (no profile-guided optimisation)"


def measure(names, args):
    """Per case, the paired runs of both simulators: the page's rows."""
    rows = []
    for name in names:
        n, rtts, queue, bn, _limit, secs = ALL[name]
        duration = secs * args.scale
        text = case_scenario(name, duration)
        q_runs, n_runs, e_runs = [], [], []
        for i in range(args.repeat):
            if i % 2:
                n_runs.append(run_case_ns3(name, duration))
            q_runs.append(run_qoslab_timed(text))
            e_runs.append(run_qoslab_timed(text, every_hop=True))
            if not i % 2:
                n_runs.append(run_case_ns3(name, duration))
        walls = [nr[0] / qr[0] for qr, nr in zip(q_runs, n_runs, strict=True)]
        cpus = [nr[1] / qr[1] for qr, nr in zip(q_runs, n_runs, strict=True)]
        gains = [er[0] / qr[0] for qr, er in zip(q_runs, e_runs, strict=True)]
        e_ev = e_runs[0][2]
        qw = statistics.median(r[0] for r in q_runs)
        nw = statistics.median(r[0] for r in n_runs)
        _, _, ev, qh, kinds = q_runs[0]
        nh = n_runs[0][2]
        row = (name, n, rtts, queue, bn, duration, qw, nw, walls, cpus, ev, qh, kinds, nh,
               gains, e_ev)  # fmt: skip
        rows.append(row)
        print(
            f"{name:>20}: qoslab {qw:6.3f} s  ns-3 {nw:7.2f} s (medians)  wall ratio "
            f"{spread(walls)}  cpu ratio {spread(cpus)}  ({ev / qh:4.2f} events/pkt: "
            f"{by_kind(kinds, qh)}; every hop {e_ev / qh:4.2f} events/pkt, "
            f"{statistics.median(gains):.2f}× the wall time)",
            flush=True,
        )
    return rows


#: Markers of the summary sentence that other pages carry, rewritten by each run.
SUMMARY_BEGIN = "<!-- ns3_bench summary -->"
SUMMARY_END = "<!-- ns3_bench summary end -->"
#: Pages that carry the summary of the unloaded run.
SUMMARY_PAGES = [ROOT / "docs" / "validation" / "README.md"]


def write_summary(rec, page, history=()):
    """Rewrites the summary sentence of `page` from record `rec` and the records
    `history` (a page without the sentence is left alone)."""
    text = page.read_text()
    if SUMMARY_BEGIN not in text:
        return
    flows = {c: v[0] for c, v in ALL.items()}
    new = f"{SUMMARY_BEGIN}{records.summary(rec, history, flows)}{SUMMARY_END}"
    pat = re.escape(SUMMARY_BEGIN) + ".*?" + re.escape(SUMMARY_END)
    page.write_text(re.sub(pat, lambda _: new, text, flags=re.S))
    print(f"updated the summary in {page}")


#: What the page says of the baseline cases when it has any.
BASELINE_NOTE = (
    "Cases named `cubic-fq_codel`: CUBIC senders (RFC 9438: C 0.4, β 0.7, fast "
    'convergence; HyStart off; qoslab `cc = "cubic"`, ns-3 `TcpCubic`) through an '
    "FQ-CoDel bottleneck with RFC 8290's defaults (limit 10240 packets, 1024 flow "
    "queues, quantum 1514 bytes, target 5 ms, interval 100 ms; qoslab `kind = "
    '"fq_codel"`, ns-3 `FqCoDelQueueDisc` with one packet more in its device queue), '
    "the rest as in the other cases."
)


def write_page(rows, args, only, rec, history=()):
    """The page: the table of `rows`, the command that made it, the machine, every
    recorded run of the same kind, and the profile."""
    box = rec["machine"]
    cmd = "python3 validation/ns3_bench.py"
    if args.qoslab:
        cmd += f" --qoslab {os.path.relpath(QOSLAB, ROOT)}"
    if args.load:
        cmd += f" --load {args.load}"
    if args.repeat != 5:
        cmd += f" --repeat {args.repeat}"
    if args.scale != 1.0:
        cmd += f" --scale {args.scale:g}"
    if only:
        cmd += f" --only {','.join(only)}"
    page = "ns3-speed-loaded.md" if args.load else "ns3-speed.md"
    if pathlib.Path(args.out).resolve() != (ROOT / "docs" / "validation" / page).resolve():
        cmd += f" --out {os.path.relpath(pathlib.Path(args.out).resolve(), ROOT)}"
    if args.profile != "12-red-20M" and not args.load:
        cmd += f" --profile {args.profile}"
    loaded = (f" with {args.load} busy process{'es' if args.load > 1 else ''} beside them"
              if args.load else "")  # fmt: skip
    lines = [
        "# qoslab against ns-3.44: speed on TCP dumbbells" + loaded,
        "",
        f"Made by `{cmd}` on this project's machine ({box['cores']} cores, "
        f"{box['cpu']}, Linux {box['kernel']}, load {box['load']:g} at the start; qoslab-run "
        f"{build_kind(QOSLAB)}{';' + loaded if loaded else ''}; both "
        "simulators single-threaded, run alternately in the same invocation, "
        f"in {args.repeat} pairs of runs, qoslab first in every other pair). Both run the "
        "same scenario (same start times; SACK, delayed ACKs, IW 10; access links 10× the "
        "bottleneck). Wall times are whole processes (start-up, scenario reading and "
        "result output included), the median of the runs; a ratio is ns-3's time over "
        "qoslab's in the same pair, given as the median of the pairs (least–greatest in "
        "brackets); CPU is user + system time of the process, less disturbed than wall "
        "time by other work on the machine. Events per packet: qoslab's events per packet "
        "through the bottleneck, and of them: arrivals at the far end of a link, ends of "
        "a transmission with a packet waiting, TCP timers. Every hop: qoslab run again "
        "in each pair with every router hop and every end of a transmission an event of "
        "its own (`qoslab-run --every-hop`: no cut-through, no transmissions committed "
        "ahead; the same results), its events per bottleneck packet and its wall time "
        "over the default's (median of the pairs, least–greatest).",
        *(["", BASELINE_NOTE] if any(r[0] in BASELINES for r in rows) else []),
        "",
        "| case | flows | RTTs (ms) | queue | bottleneck | simulated (s) | qoslab wall (s) "
        "| ns-3 wall (s) | wall ratio | CPU ratio | qoslab events / bottleneck pkt "
        "| arrive / tx done / TCP timer "
        "| qoslab bottleneck pkt/s | ns-3 bottleneck pkt/s "
        "| every hop: events / pkt | every hop: wall ÷ default |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, n, rtts, queue, bn, d, qw, nw, walls, cpus, ev, qh, kinds, nh, gains, e_ev in rows:
        gain = statistics.median(gains)
        lines.append(
            f"| {name} | {n} | {'/'.join(map(str, rtts))} | {queue} | {bn} | {d:g} | {qw:.3f} "
            f"| {nw:.2f} | {spread(walls, '×')} | {spread(cpus, '×')} | {ev / qh:.2f} "
            f"| {by_kind(kinds, qh, ' / ')} | {qh / qw:,.0f} | {nh / nw:,.0f} "
            f"| {e_ev / qh:.2f} | {gain:.2f} ({min(gains):.2f}–{max(gains):.2f}) |"
        )
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")
    write_history(out, history, args.load, args.scale, rec["build_tag"],
                  pathlib.Path(args.records))  # fmt: skip
    # The sentence other pages carry speaks of the recorded whole runs of the default
    # page: a trial (no record, another page or records folder) leaves it alone.
    default = (pathlib.Path(args.out).resolve() == (ROOT / "docs/validation/ns3-speed.md")
               and pathlib.Path(args.records).resolve() == records.RECORDS.resolve())  # fmt: skip
    if records.is_whole(rec, FAST) and not args.no_record and default:
        for page in SUMMARY_PAGES:
            write_summary(rec, page, history)
    if not args.load:
        write_profile(out, args.profile)


if __name__ == "__main__":
    sys.exit(main())

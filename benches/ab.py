"""A/B of two qoslab-run binaries: the same results, and how many instructions each
spends per bottleneck packet.

    python benches/ab.py BASE NEW                  # identity, then instructions
    python benches/ab.py BASE NEW --no-identity --cases 12-red-20M --sim-seconds 300
    python benches/ab.py BASE NEW --no-instructions --seconds 5
    python benches/ab.py BASE NEW --no-identity --no-instructions --pairs 9   # CPU time
    python benches/ab.py BASE NEW --no-identity --no-instructions --misses    # cache, branches

**Identity.** Every scenario the project ships (``scenarios/**/*.toml``: sweeps left
out, runs longer than ``--seconds`` cut to it) and every dumbbell of
``validation/ns3_bench.py`` run with both binaries must give the same JSON, all but the
wall time and the event counts (a change of the engine's bookkeeping may change those
and nothing else). A scenario the base binary refuses (exit 2: a live-only one, a start
after the cut) counts as skipped when the new one refuses it with the same message; any
other failure is a difference, and so is a comparison in which no case ran.

**Instructions.** Wall time on a shared 2-core machine spreads by tens of percent from
run to run; the instruction count of a deterministic run does not. Each case of
``--cases`` runs under ``valgrind --tool=callgrind`` with each binary, and the table
gives instructions per bottleneck packet (``r1->r2`` departures) and NEW ÷ BASE. It
needs valgrind (Debian: ``valgrind``); without it this part is skipped with a message.

**Cache misses and mispredicted branches** (``--misses``). Two binaries can run the same
instructions and still differ in time: one's hot code spans more instruction-cache
lines, its working set is larger, or its branches are laid out worse. Each case runs
under ``valgrind --tool=cachegrind --cache-sim=yes --branch-sim=yes`` (a simulated cache
and predictor, so the counts are as deterministic as the instructions), and the table
gives I1 misses, D1 misses (reads and writes) and mispredicted branches per bottleneck
packet, each with NEW ÷ BASE.

**CPU time** (``--pairs N``). Each case of ``--cases`` runs as ``N`` pairs of whole
processes, one of each binary, which one first alternating from pair to pair; the table
gives each binary's median CPU time (user + system, less disturbed than wall time by
other work on a shared machine) and the median of the pairs' NEW ÷ BASE with their least
and greatest, and the load average before and after each case.

Exits 1 if a result differs, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "validation"))
import ns3_bench  # noqa: E402
from ns3_peer import qoslab_scenario  # noqa: E402

from qoslab.scenario import _delay_seconds, expand_flow_groups, load, to_json  # noqa: E402

#: Cases measured for instructions unless --cases names others (a small and a mid one).
DEFAULT_CASES = ("4-droptail-10M-50ms", "12-red-20M")
#: Summary fields a change of bookkeeping may change without changing a result.
VOLATILE = ("wall_s", "events", "events_by_kind")
#: qoslab-run's exit code for a scenario it refuses (1 is a failed run; a panic is 101).
REFUSED = 2


def dumbbell(name: str, seconds: float) -> str:
    """The TOML of ns3_bench's case ``name``, run for ``seconds`` (as the bench builds it)."""
    n, rtts, queue, bn, limit, _ = ns3_bench.CASES[name]
    rnd = random.Random(n)
    starts = [round(rnd.random(), 6) for _ in range(n)]
    acc = ns3_bench.tenfold(bn)
    return qoslab_scenario(n, queue, starts, seconds, 0.0, 1, bn, acc, limit, rtts=rtts)


def case_files(cases: list[str], sim_seconds: float) -> Iterator[tuple[str, Path]]:
    """Each case of ``cases`` as (name, its scenario file run for ``sim_seconds``), in a
    temporary folder that lives while the caller iterates."""
    with tempfile.TemporaryDirectory() as t:
        for name in cases:
            f = Path(t) / f"{name}.toml"
            f.write_text(dumbbell(name, sim_seconds))
            yield name, f


def shipped(seconds: float, tmp: Path) -> list[tuple[str, Path]]:
    """Every shipped scenario as the engine gets it from ``qoslab.run`` (no sweep, flow
    groups expanded), as a JSON file in ``tmp``, at most ``seconds`` long (a warm-up as
    long or longer cut to half of that)."""
    out = []
    for src in sorted((ROOT / "scenarios").rglob("*.toml")):
        rel = src.relative_to(ROOT / "scenarios").as_posix()
        sc, _ = expand_flow_groups(load(src).data, str(src))
        if _seconds(sc.get("duration", 0)) > seconds:
            sc["duration"] = seconds
            if _seconds(sc.get("warmup", 0)) >= seconds:
                sc["warmup"] = seconds / 2
        f = tmp / (rel.replace("/", "__").removesuffix(".toml") + ".json")
        f.write_text(to_json(sc))
        out.append((rel, f))
    return out


def _seconds(v: float | str) -> float:
    """A scenario's duration (a number of seconds, or a string like ``"150s"``) [s], as
    the package reads it."""
    return _delay_seconds(v, None, "duration")


def run(binary: Path, scenario: Path) -> tuple[int, dict | str]:
    """Exit code and, on success, the result without its volatile fields (else stderr)."""
    p = subprocess.run([str(binary), str(scenario)], capture_output=True, text=True)
    if p.returncode != 0:
        return p.returncode, p.stderr.strip()
    r = json.loads(p.stdout)
    for k in VOLATILE:
        r["summary"].pop(k, None)
    return 0, r


def identity(base: Path, new: Path, seconds: float) -> int:
    """Runs every case with both binaries; prints one line per case, returns the count of
    differing ones."""
    bad = skipped = same = 0
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        cases = shipped(seconds, tmp)
        for name in ns3_bench.CASES:
            if name in ns3_bench.SLOW:
                continue
            f = tmp / f"bench__{name}.toml"
            f.write_text(dumbbell(name, min(seconds, ns3_bench.CASES[name][5])))
            cases.append((f"ns3_bench {name}", f))
        for label, f in cases:
            (ca, a), (cb, b) = run(base, f), run(new, f)
            if ca == cb == REFUSED and a == b:
                # Both refuse it with the same message: nothing to compare.
                skipped += 1
                print(f"  skip  {label}: both refuse it ({(str(a).splitlines() or [''])[0][:90]})")
            elif ca == cb == 0 and a == b:
                same += 1
            else:
                bad += 1
                if isinstance(a, dict) and isinstance(b, dict):
                    what = [k for k in a["tables"] if a["tables"][k] != b["tables"].get(k)]
                else:
                    what = f"exit {ca} vs {cb}"
                print(f"  DIFF  {label}: {what or 'summary'}")
    print(f"identity: {same} same, {bad} different, {skipped} skipped (both refuse)")
    if same == 0:
        print("identity: no case ran with both binaries: nothing was compared")
        return max(bad, 1)
    return bad


def instructions(binary: Path, scenario: Path) -> tuple[int, int]:
    """(instructions, bottleneck packets) of one run under callgrind; raises
    RuntimeError if the run failed or counted no bottleneck packet."""
    with tempfile.NamedTemporaryFile(suffix=".cg") as cg:
        p = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={cg.name}",
             str(binary), str(scenario)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
    m = re.search(r"Collected\s*:\s*(\d+)", p.stderr)
    if p.returncode != 0 or not m:
        raise RuntimeError(f"{binary} under callgrind exited {p.returncode}:\n{p.stderr[-500:]}")
    return int(m.group(1)), _bottleneck_packets(binary, p.stdout)


def cache_counts(binary: Path, scenario: Path) -> tuple[dict[str, int], int]:
    """(simulated counts, bottleneck packets) of one run under cachegrind's cache and
    branch simulation: ``I1`` instruction-cache misses, ``D1`` data-cache misses (reads
    and writes), ``mispredicts`` (conditional and indirect branches); raises
    RuntimeError if the run failed or counted no bottleneck packet."""
    with tempfile.NamedTemporaryFile(suffix=".cg") as cg:
        p = subprocess.run(
            ["valgrind", "--tool=cachegrind", "--cache-sim=yes", "--branch-sim=yes",
             f"--cachegrind-out-file={cg.name}", str(binary), str(scenario)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
    pats = {"I1": r"I1\s+misses:\s*([\d,]+)", "D1": r"D1\s+misses:\s*([\d,]+)",
            "mispredicts": r"Mispredicts:\s*([\d,]+)"}  # fmt: skip
    found = {k: re.search(v, p.stderr) for k, v in pats.items()}
    if p.returncode != 0 or not all(found.values()):
        raise RuntimeError(f"{binary} under cachegrind exited {p.returncode}:\n{p.stderr[-500:]}")
    counts = {k: int(m.group(1).replace(",", "")) for k, m in found.items() if m}
    return counts, _bottleneck_packets(binary, p.stdout)


def misses_table(base: Path, new: Path, cases: list[str], sim_seconds: float) -> None:
    """Prints cachegrind's simulated I1 misses, D1 misses and mispredicted branches per
    bottleneck packet of both binaries on each case, with NEW ÷ BASE (one run each)."""
    keys = ("I1", "D1", "mispredicts")
    print(f"\nsimulated misses per bottleneck packet ({sim_seconds:g} simulated s, cachegrind)")
    print(f"{'case':<22}" + "".join(f" {k + ' base':>15} {'new':>8} {'new/base':>9}" for k in keys))
    for name, f in case_files(cases, sim_seconds):
        (ca, pa), (cb, pb) = cache_counts(base, f), cache_counts(new, f)
        cols = "".join(f" {ca[k] / pa:>15.3f} {cb[k] / pb:>8.3f} {cb[k] / ca[k]:>9.4f}"
                       for k in keys)  # fmt: skip
        print(f"{name:<22}{cols}", flush=True)


def _bottleneck_packets(binary: Path, stdout: str) -> int:
    """Departures of ``r1->r2`` in a run's JSON; RuntimeError if none."""
    r = json.loads(stdout)
    q = dict(zip(r["tables"]["queues"]["names"], r["tables"]["queues"]["columns"], strict=True))
    packets = q["departed"][q["iface"].index("r1->r2")]
    if packets == 0:
        raise RuntimeError(f"{binary}: no packet crossed the bottleneck r1->r2")
    return packets


def instruction_table(base: Path, new: Path, cases: list[str], sim_seconds: float) -> None:
    """Prints instructions per bottleneck packet of both binaries on each case, with
    NEW ÷ BASE."""
    print(f"\ninstructions per bottleneck packet ({sim_seconds:g} simulated s, callgrind)")
    print(f"{'case':<22} {'base':>8} {'new':>8} {'new/base':>9}")
    for name, f in case_files(cases, sim_seconds):
        (ia, pa), (ib, pb) = instructions(base, f), instructions(new, f)
        print(f"{name:<22} {ia / pa:>8.0f} {ib / pb:>8.0f} {ib / ia:>9.4f}", flush=True)


def cpu_seconds(binary: Path, scenario: Path) -> float:
    """CPU time (user + system) of one whole run of ``binary`` on ``scenario`` [s]."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([str(binary), str(scenario)], check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def cpu_table(base: Path, new: Path, cases: list[str], sim_seconds: float, pairs: int) -> None:
    """Prints both binaries' median CPU time on each case over ``pairs`` alternating
    pairs, the median NEW ÷ BASE of the pairs (least–greatest) and the load average."""
    print(f"\nCPU time per run ({sim_seconds:g} simulated s, {pairs} pairs, alternating)")
    print(f"{'case':<22} {'base (s)':>9} {'new (s)':>9} {'new/base':>9} {'(least–greatest)':>17}"
          "  load before, after")  # fmt: skip
    for name, f in case_files(cases, sim_seconds):
        load0 = os.getloadavg()[0]
        a, b = [], []
        for i in range(pairs):
            if i % 2:
                b.append(cpu_seconds(new, f))
                a.append(cpu_seconds(base, f))
            else:
                a.append(cpu_seconds(base, f))
                b.append(cpu_seconds(new, f))
        r = [y / x for x, y in zip(a, b, strict=True)]
        spread = f"({min(r):.3f}–{max(r):.3f})"
        print(f"{name:<22} {statistics.median(a):>9.3f} {statistics.median(b):>9.3f} "
              f"{statistics.median(r):>9.3f} {spread:>17}  "
              f"{load0:.2f}, {os.getloadavg()[0]:.2f}", flush=True)  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("base", type=Path, help="the qoslab-run binary before the change")
    ap.add_argument("new", type=Path, help="the qoslab-run binary after it")
    ap.add_argument("--seconds", type=float, default=20.0,
                    help="identity: cut longer runs to this many simulated seconds")  # fmt: skip
    ap.add_argument("--cases", default=",".join(DEFAULT_CASES),
                    help="instructions and CPU time: ns3_bench cases, comma-separated")  # fmt: skip
    ap.add_argument("--sim-seconds", type=float, default=60.0,
                    help="instructions and CPU time: simulated seconds per case")  # fmt: skip
    ap.add_argument("--pairs", type=int, default=0,
                    help="CPU time: pairs of runs per case of --cases (0: none)")  # fmt: skip
    ap.add_argument("--no-identity", action="store_true")
    ap.add_argument("--no-instructions", action="store_true")
    ap.add_argument("--misses", action="store_true",
                    help="cache misses, mispredicts per bottleneck packet")  # fmt: skip
    a = ap.parse_args()
    for b in (a.base, a.new):
        if not b.is_file():
            ap.error(f"{b}: no such binary (cargo build --release --bin qoslab-run)")
        if not os.access(b, os.X_OK):
            ap.error(f"{b}: not executable (a qoslab-run binary is)")
    if a.pairs < 0:
        ap.error("--pairs: expected 0 or more")
    cases = [c for c in a.cases.split(",") if c]
    if not cases and (a.pairs or a.misses or not a.no_instructions):
        ap.error("--cases: name at least one case (or pass --no-instructions)")
    unknown = [c for c in cases if c not in ns3_bench.CASES]
    if unknown:
        ap.error(f"--cases: unknown {unknown}; known: {', '.join(ns3_bench.CASES)}")
    bad = 0 if a.no_identity else identity(a.base, a.new, a.seconds)
    tables = [(what, table) for what, table, on in (
        ("instructions", instruction_table, not a.no_instructions),
        ("misses", misses_table, a.misses),
    ) if on]  # fmt: skip
    for what, table in tables:
        if shutil.which("valgrind") is None:
            print(f"{what}: skipped, valgrind is not installed (Debian: valgrind)")
            continue
        try:
            table(a.base, a.new, cases, a.sim_seconds)
        except RuntimeError as e:
            print(f"{what}: {e}", file=sys.stderr)
            return 1
    if a.pairs:
        cpu_table(a.base, a.new, cases, a.sim_seconds, a.pairs)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

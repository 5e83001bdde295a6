#!/usr/bin/env python3
"""P1 Table 1: why do ECN flows hold a longer bottleneck queue than drop flows?

Runs the Table 1 row with the largest difference (10 Mb/s bottleneck, access delay
124 ms, seven TRC flows at ρ = 0.85) and variants of it that change one thing at a
time, and prints the mean bottleneck queue (sampled every 100 ms after the 100 s
warm-up) and, from a capture of the packets arriving at the bottleneck (`s->r0`, after
the TRCs), the pattern that explains it:

1. The row as in Table 1 with drops and with ECN; then each mode with the other mode's
   W_max and RTT_TRC fixed (`w_max` + `rtt_trc`: the TRC parameters alone), and the
   drop senders halving FlightSize as the ECN senders do (`halve = "flight"`); beside
   each, the seven flows' goodput (the bottleneck's load).
2. Each flow alone on the bottleneck, and two pairs, with the drop runs' W_max and
   RTT_TRC in both modes, so that only drop against mark differs: goodput, mean queue,
   holes per 100 packets (gaps of 2.5–50 ms, i.e. 2–40 bottleneck packet times, between
   two of the flow's packets), the mean wait the flow's arrivals alone would have in an
   empty FIFO of the bottleneck's rate, and how many arrivals in a row wait there once
   one has to; then where in its window's train each signal (drop or mark) falls.
3. The 500 kb/s flow alone, drawn round by round around one signal.
4. The whole row with the drop runs' W_max and RTT_TRC: the mean queue when only one
   flow uses ECN, and per flow the shape of its rounds (packets closer than 50 ms) with
   all flows in one mode. The 5 Mb/s flow never pauses 50 ms, so its "rounds" last
   several round trips; only its mean gap means anything.
5. W_max against where the signals fall: the 500 kb/s flow alone with W_max from 14.5
   to 20.5 in half steps, and the whole row with every W_max shifted by −1, +0.5, +1.
6. A side check of RFC 3168 §6.1.5 (retransmitted segments must not be ECT).

With `--doc` the same output goes into docs/validation/p1-ecn-queue.md.

Usage: python3 validation/p1_ecn_queue.py [--seeds N] [--duration 600s] [--doc]
(needs cargo build --release --bin qoslab-run; takes about half a minute)
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import itertools
import json
import pathlib
import statistics
import struct
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
BIN = ROOT / "target" / "release" / "qoslab-run"
SCENARIO = ROOT / "scenarios" / "p1" / "t1-10mbps.toml"
REQUESTS = ["50kbps", "100kbps", "250kbps", "500kbps", "750kbps", "1000kbps", "5000kbps"]
TCP = (
    'variant = "sack", max_window = 2000, initial_window = 1, granularity = "100ms", '
    'rto_estimator = "ns2", limited_transmit = false'
)
MSS = 1460
SERVICE = 1500 * 8 / 10e6  # one full packet on the 10 Mb/s bottleneck [s]
WARMUP = 100.0
DOC = ROOT / "docs" / "validation" / "p1-ecn-queue.md"
CAPTURE = '[[capture]]\niface = "s->r0"\ndirection = "rx"\nsnaplen = 64\n'


def scenario(flows: list[dict], duration: str, capture: bool = False) -> str:
    """The Table 1 topology at 10 Mb/s / 124 ms with the given flows; each flow is a dict
    with `idx` (1–7, its destination), `rate`, and optionally `ecn` (sender and TRC),
    `halve` (default "window", as in Table 1), `w_max` and `rtt_trc` [s] (fixed)."""
    base = SCENARIO.read_text()
    text = base[: base.index("[[flow]]")]
    text = text.replace('delay = "1.5ms"', 'delay = "124ms"', 1)  # the access link s–r0
    text = text.replace('duration = "1100s"', f'duration = "{duration}"')
    stages = []
    for f in flows:
        i, ecn = f["idx"], ", ecn = true" if f.get("ecn") else ""
        text += (
            f'[[flow]]\nname = "f{i}"\nfrom = "s"\nto = "d{i}"\nstart_jitter = "10s"\n'
            f'tcp = {{ {TCP}, halve = "{f.get("halve", "window")}"{ecn} }}\n\n'
        )
        fixed = f', w_max = {f["w_max"]}, rtt_trc = "{f["rtt_trc"]}s"' if "w_max" in f else ""
        stages.append(f'  {{ kind = "trc", flow = "f{i}", rate = "{f["rate"]}"{ecn}{fixed} }}')
    text += '[[conditioner]]\nat = "s"\nstages = [\n' + ",\n".join(stages) + ",\n]\n\n"
    text += '[record]\ninterval = "10s"\nqueues = ["r0->r1"]\nqueue_interval = "100ms"\n'
    return text + (CAPTURE if capture else "")


def run(text: str, seed: int, pcap: bool = False) -> tuple[dict, list]:
    """Result tables as {table: {column: values}}, and the packets arriving at r0
    (captured on s->r0) as [(time, flow's source port, seq, payload, flags, ECN bits)]
    if `pcap`."""
    with tempfile.TemporaryDirectory() as d:
        sc = pathlib.Path(d) / "s.toml"
        sc.write_text(text)
        args = [str(BIN), str(sc), "--seed", str(seed)]
        if pcap:
            args += ["--pcap-dir", d]
        r = subprocess.run(args, capture_output=True, text=True)
        if r.returncode:
            sys.exit(f"qoslab-run failed: {r.stderr.strip()}")
        tables = {
            k: dict(zip(v["names"], v["columns"], strict=True))
            for k, v in json.loads(r.stdout)["tables"].items()
        }
        packets = read_pcap(next(pathlib.Path(d).glob("*.pcap"))) if pcap else []
    return tables, packets


def read_pcap(path: pathlib.Path) -> list[tuple]:
    """Data segments of a nanosecond libpcap file of Ethernet/IPv4/TCP packets."""
    b = path.read_bytes()
    assert struct.unpack("<I", b[:4])[0] == 0xA1B23C4D, "not a nanosecond pcap"
    off, out = 24, []
    while off < len(b):
        sec, ns, incl, _ = struct.unpack_from("<IIII", b, off)
        ip = off + 16 + 14
        off += 16 + incl
        ihl, tos, total = (b[ip] & 15) * 4, b[ip + 1], struct.unpack_from(">H", b, ip + 2)[0]
        sport, _, seq = struct.unpack_from(">HHI", b, ip + ihl)
        doff, flags = (b[ip + ihl + 12] >> 4) * 4, b[ip + ihl + 13]
        if total - ihl - doff > 0:
            out.append((sec + ns * 1e-9, sport, seq, total - ihl - doff, flags, tos & 3))
    return out


def mean_queue(tables: dict) -> float:
    """Mean of the bottleneck queue samples [packets]."""
    return statistics.mean(tables["queue_samples"]["packets"])


def params(mode_ecn: bool) -> tuple[list[float], list[float]]:
    """The TRCs' W_max and RTT_TRC [s] in Table 1 for drops or ECN."""
    t, _ = run(scenario(row(mode_ecn), "101s"), 1)
    return t["trc"]["w_max"], t["trc"]["rtt_trc"]


def row(ecn: bool, fixed: tuple | None = None, **kw) -> list[dict]:
    """The seven flows of the row; `fixed` = (W_max list, RTT_TRC list)."""
    out = []
    for i, r in enumerate(REQUESTS):
        f = dict(idx=i + 1, rate=r, ecn=ecn, **kw)
        if fixed:
            f.update(w_max=fixed[0][i], rtt_trc=fixed[1][i])
        out.append(f)
    return out


def flows_of(packets: list[tuple]) -> dict[int, list[tuple]]:
    """Packets after the warm-up per flow (by source port)."""
    per: dict[int, list[tuple]] = {}
    for p in packets:
        if p[0] >= WARMUP:
            per.setdefault(p[1], []).append(p)
    return per


def holes_per_100(pk: list[tuple]) -> float:
    """Gaps of 2.5–50 ms between consecutive packets, per 100 packets."""
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(pk)]
    return 100 * sum(2.5e-3 <= g < 0.05 for g in gaps) / max(len(pk), 1)


def self_wait_ms(pk: list[tuple]) -> float:
    """Mean wait [ms] of these arrivals alone in an empty FIFO of the bottleneck's rate
    (Lindley's recursion, one full packet each)."""
    w, total = 0.0, 0.0
    for a, b in itertools.pairwise(pk):
        w = max(0.0, w + SERVICE - (b[0] - a[0]))
        total += w
    return 1e3 * total / max(len(pk), 1)


def waiting_run(pk: list[tuple]) -> float:
    """In the same empty FIFO: the mean number of consecutive arrivals that wait (a run
    starts when a packet arrives before the one ahead has left and ends at the first
    arrival that finds the FIFO empty)."""
    w, waited, runs = 0.0, 0, 0
    for a, b in itertools.pairwise(pk):
        before, w = w, max(0.0, w + SERVICE - (b[0] - a[0]))
        if w > 1e-9:
            waited += 1
            runs += before <= 1e-9
    return waited / max(runs, 1)


def rounds_shape(pk: list[tuple]) -> tuple[float, float, float]:
    """Rounds of one flow's arrivals (packets closer than 50 ms): mean packets per round,
    mean span of a round [ms], mean gap between packets inside a round [ms]."""
    rounds: list[list[float]] = [[pk[0][0]]]
    for a, b in itertools.pairwise(pk):
        if b[0] - a[0] > 0.05:
            rounds.append([])
        rounds[-1].append(b[0])
    spans = [r[-1] - r[0] for r in rounds]
    inner = sum(len(r) - 1 for r in rounds)
    return (
        statistics.mean(len(r) for r in rounds),
        1e3 * statistics.mean(spans),
        1e3 * sum(spans) / max(inner, 1),
    )


def signal_places(pk: list[tuple], ecn: bool) -> collections.Counter:
    """(position, length) of each signalled packet in its train (1-based): the CE-marked
    packet, or the dropped one (never captured: the gap its retransmission fills)."""
    trains: list[list[tuple]] = [[pk[0]]]
    for a, b in itertools.pairwise(pk):
        if b[0] - a[0] > 0.05:
            trains.append([])
        trains[-1].append(b)
    out: collections.Counter = collections.Counter()
    if ecn:
        for t in trains:
            out.update((k + 1, len(t)) for k, p in enumerate(t) if p[5] == 3)
        return out
    where = {}  # first transmissions: seq -> (train, position)
    for j, t in enumerate(trains):
        for k, p in enumerate(t):
            where.setdefault(p[2], (j, k))
    top = -1
    for p in pk:
        if p[2] < top and p[2] - MSS in where:  # a retransmission; its predecessor's place
            j, k = where[p[2] - MSS]
            out[(k + 2, len(trains[j]) + 1)] += 1
        top = max(top, p[2])
    return out


def signals(pk: list[tuple], ecn: bool) -> list[int]:
    """Indices of the signalled packets: CE-marked ones (ECN), or retransmissions (the
    dropped packet never reaches the bottleneck; its retransmission does)."""
    out, top = [], -1
    for k, p in enumerate(pk):
        if (ecn and p[5] == 3) or (not ecn and p[2] < top):
            out.append(k)
        top = max(top, p[2])
    return out


def draw_rounds(pk: list[tuple], ecn: bool) -> None:
    """One line per round (packets closer than 50 ms), from two rounds before the fourth
    signal after the warm-up to five rounds after it. Each gap: '.' back-to-back
    (< 0.6 ms), '-' about one bottleneck packet time, '_' two, ' ' a hole (more)."""
    sig = signals(pk, ecn)
    k0 = sig[3]
    rounds: list[list[int]] = [[]]
    for k in range(len(pk)):
        if rounds[-1] and pk[k][0] - pk[rounds[-1][-1]][0] > 0.05:
            rounds.append([])
        rounds[-1].append(k)
    at = next(j for j, r in enumerate(rounds) if k0 in r)
    for r in rounds[max(at - 2, 0) : at + 6]:
        gaps = [pk[b][0] - pk[a][0] for a, b in itertools.pairwise(r)]
        s = "".join(
            "." if g < 6e-4 else "-" if g < 1.8e-3 else "_" if g < 3e-3 else " " for g in gaps
        )
        what = "signal" if k0 in r else ""
        print(f"    {pk[r[0]][0]:8.3f} s  {len(r):3d} packets {what:6s} |{s}|")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--duration", default="600s", help="per run, the first 100 s discarded")
    ap.add_argument("--doc", action="store_true", help=f"write the output into {DOC.name}")
    a = ap.parse_args()
    if not a.doc:
        return report(a)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        report(a)
    args = f" --seeds {a.seeds}" if a.seeds != 3 else ""
    args += f" --duration {a.duration}" if a.duration != "600s" else ""
    DOC.write_text(
        "# P1 Table 1: why the ECN flows queue longer at the bottleneck\n\n"
        f"Output of `python3 validation/p1_ecn_queue.py{args} --doc` (what each part"
        " measures is in the script's docstring).\n\n```text\n" + buf.getvalue() + "```\n"
    )
    print(f"wrote {DOC}")
    return 0


def report(a: argparse.Namespace) -> int:
    """Runs everything and prints it."""
    seeds = range(1, a.seeds + 1)
    dur = a.duration

    def q(flows: list[dict]) -> tuple[float, float]:
        """Mean queue [packets] and total goodput [Mb/s] over the seeds."""
        got = [run(scenario(flows, dur), s)[0] for s in seeds]
        return (
            statistics.mean(mean_queue(t) for t in got),
            statistics.mean(sum(t["flows"]["goodput_bps"]) / 1e6 for t in got),
        )

    p_drop, p_ecn = params(False), params(True)
    print("TRC parameters in Table 1 (10 Mb/s, 124 ms), drops | ECN:")
    for i, r in enumerate(REQUESTS):
        print(
            f"  {r:>9}: W_max {p_drop[0][i]:6.1f} | {p_ecn[0][i]:6.1f}   "
            f"RTT_TRC {1e3 * p_drop[1][i]:7.2f} | {1e3 * p_ecn[1][i]:7.2f} ms"
        )

    print(
        f"\n1. Table 1 row, seeds 1–{a.seeds}, {dur}: mean bottleneck queue [packets] and"
        " the seven flows' goodput [Mb/s]"
    )
    cases = [
        ("drops, as in Table 1", row(False)),
        ("ECN, as in Table 1", row(True)),
        ("drops with ECN's W_max and RTT_TRC", row(False, p_ecn)),
        ("ECN with drops' W_max and RTT_TRC", row(True, p_drop)),
        ('drops, halve = "flight" (ECN\'s rule)', row(False, halve="flight")),
    ]
    for name, flows in cases:
        queue, goodput = q(flows)
        print(f"  {name:40s} {queue:6.2f} {goodput:8.3f}")

    print(
        "\n2. Alone or in pairs on the 10 Mb/s bottleneck, drops' W_max and RTT_TRC in both"
        " modes (seed 1,\n   300 s); each cell drops / ECN. Holes per 100 packets; own wait:"
        " the mean wait of the\n   flows' arrivals in an empty 10 Mb/s FIFO [ms]; waiting run:"
        " how many arrivals in a row\n   wait once one has to [packets]"
    )
    cols = ("goodput [kb/s]", "mean queue", "holes", "own wait", "waiting run")
    print(f"  {'flows':>19}" + "".join(f" {c:>15}" for c in cols))
    kept: dict[tuple[int, bool], list] = {}
    for idx in [(1,), (2,), (3,), (4,), (5,), (6,), (7,), (4, 6), (6, 7)]:
        got = {}
        for ecn in (False, True):
            flows = [f for f in row(ecn, p_drop) if f["idx"] in idx]
            t, pk = run(scenario(flows, "300s", capture=True), 1, pcap=True)
            per = flows_of(pk).values()
            got[ecn] = (
                sum(t["flows"]["goodput_bps"]) / 1e3,
                mean_queue(t),
                statistics.mean(holes_per_100(x) for x in per),
                statistics.mean(self_wait_ms(x) for x in per),
                statistics.mean(waiting_run(x) for x in per),
            )
            if len(idx) == 1:
                kept[(idx[0], ecn)] = pk
        name = " + ".join(REQUESTS[i - 1] for i in idx)
        fmt = (".0f", ".3f", ".1f", ".3f", ".1f")
        cells = [f"{d:{f}} / {e:{f}}" for d, e, f in zip(got[False], got[True], fmt, strict=True)]
        print(f"  {name:>19}" + "".join(f" {c:>15}" for c in cells))

    print(
        "\n   Where the signal falls in its window's train (packets closer than 50 ms), the three"
        "\n   most common places as position/train length × count (drops: where the dropped"
        "\n   packet was; at a train's end it may also have been the first of the next one)"
    )
    for i in (3, 4, 5, 6):
        for ecn in (False, True):
            pos = signal_places([p for p in kept[(i, ecn)] if p[0] >= WARMUP], ecn)
            top = ", ".join(f"{k}/{n} ×{c}" for (k, n), c in pos.most_common(3))
            print(f"  {REQUESTS[i - 1]:>9} {'ECN' if ecn else 'drops':>5}: {top}")

    print("\n3. The 500 kb/s flow alone: its arrivals at the bottleneck, round by round")
    for ecn in (False, True):
        pk = [p for p in kept[(4, ecn)] if p[0] >= WARMUP]
        print(f"  {'ECN (mark = CE-marked packet)' if ecn else 'drops (signal = retransmission)'}")
        draw_rounds(pk, ecn)

    print(
        "\n4. The row with drops' W_max and RTT_TRC for every flow: which flows' mode matters,"
        f"\n   and how their packets arrive at the bottleneck. Queue: seeds 1–{a.seeds}, {dur},"
        " only this flow\n   in ECN mode (all drops "
        f"{q(row(False, p_drop))[0]:.2f}, all ECN {q(row(True, p_drop))[0]:.2f}). Rounds"
        " (seed 1, 300 s, all flows in\n   one mode; packets closer than 50 ms): packets per"
        " round, span [ms], mean gap inside [ms],\n   each cell drops / ECN"
    )
    shape = {}
    for ecn in (False, True):
        _, pk = run(scenario(row(ecn, p_drop), "300s", capture=True), 1, pcap=True)
        per = flows_of(pk)
        shape[ecn] = [rounds_shape(per[port]) for port in sorted(per)]
    cols = ("queue", "packets", "span", "gap")
    print(f"  {'ECN flow':>9}" + "".join(f" {c:>15}" for c in cols))
    for i, r in enumerate(REQUESTS):
        flows = row(False, p_drop)
        flows[i]["ecn"] = True
        cells = [f"{q(flows)[0]:.2f}"] + [
            f"{d:.{n}f} / {e:.{n}f}"
            for d, e, n in zip(shape[False][i], shape[True][i], (1, 0, 1), strict=True)
        ]
        print(f"  {r:>9}" + "".join(f" {c:>15}" for c in cells))

    print(
        "\n5. W_max decides where the signals fall. The 500 kb/s flow alone (seed 1, 300 s,"
        " RTT_TRC 31.2 ms)\n   with fixed W_max; each cell drops / ECN; first half: the share"
        " of signals that fall in\n   the first half of a train but not on its first packet"
        " (there the halving pause splits\n   the train). Fig. 2 only picks W_max = even + 0.5."
    )
    cols = ("mean queue", "holes", "first half")
    print(f"  {'W_max':>6}" + "".join(f" {c:>15}" for c in cols))
    for w in (14.5, 15.0, 15.5, 16.0, 16.5, 17.0, 17.5, 18.0, 18.5, 19.0, 19.5, 20.0, 20.5):
        got = {}
        for ecn in (False, True):
            flows = [dict(idx=4, rate="500kbps", ecn=ecn, w_max=w, rtt_trc=p_drop[1][3])]
            t, pk = run(scenario(flows, "300s", capture=True), 1, pcap=True)
            x = [p for p in pk if p[0] >= WARMUP]
            places = signal_places(x, ecn)
            early = sum(c for (k, n), c in places.items() if 1 < k <= n / 2)
            got[ecn] = (mean_queue(t), holes_per_100(x), early / max(places.total(), 1))
        fmt = (".3f", ".1f", ".2f")
        cells = [f"{d:{f}} / {e:{f}}" for d, e, f in zip(got[False], got[True], fmt, strict=True)]
        print(f"  {w:6.2f}" + "".join(f" {c:>15}" for c in cells))
    print(
        f"   The row (seeds 1–{a.seeds}, {dur}) with the drop runs' RTT_TRC and their W_max"
        " shifted for every\n   flow: mean queue and goodput [Mb/s], drops / ECN"
    )
    for shift, what in ((0.0, "even + 0.5"), (1.0, "odd + 0.5"), (-1.0, "odd + 0.5"),
                        (0.5, "whole numbers")):  # fmt: skip
        w = [x + shift for x in p_drop[0]]
        (qd, gd), (qe, ge) = q(row(False, (w, p_drop[1]))), q(row(True, (w, p_drop[1])))
        print(f"  W_max {shift:+.1f} ({what:>13}): queue {qd:.2f} / {qe:.2f}, goodput "
              f"{gd:.3f} / {ge:.3f}")  # fmt: skip

    # 6. RFC 3168 §6.1.5: "the TCP data sender MUST NOT set either an ECT codepoint or
    # the CE codepoint on retransmitted data packets". The 5 Mb/s ECN flow alone with
    # the bottleneck's DropTail queue cut from 112 to 4 packets overflows now and then.
    text = scenario([dict(idx=7, rate="5000kbps", ecn=True)], "300s", capture=True)
    text = text.replace("limit = 112 }", "limit = 4 }")
    t, pk = run(text, 1, pcap=True)
    top, rtx, ect = -1, 0, 0
    for p in pk:
        if p[2] < top:
            rtx += 1
            ect += p[5] != 0
        top = max(top, p[2])
    print(
        f"\n6. RFC 3168 §6.1.5 check (5 Mb/s ECN flow alone, 4-packet bottleneck queue): "
        f"{rtx} retransmitted segments, {ect} of them ECT or CE (RFC: 0)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

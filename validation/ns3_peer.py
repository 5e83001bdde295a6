#!/usr/bin/env python3
"""Peer check of qoslab's TCP against ns-3.44 on the same dumbbell.

n flows (base RTTs 20/40/80/160 ms, cycling) share a 10 Mb/s bottleneck behind
100 Mb/s access links; DropTail 100 packets or RED; 60 s with the first 10 s discarded;
NewReno with SACK, delayed ACKs, initial window 10, min RTO 200 ms, segment 1460 B.
Both simulators get the same start times (uniform in [0, 1) s, drawn from the seed).

ns-3 is set up to measure the same thing: socket buffers of 4× a flow's share of
BDP + queue, at least 256 KiB (its 128 KiB default caps the window), timestamps off
(so packets are 1500 B in both), and the device queue behind the queue disc cut to 1
packet; the disc gets limit − 1 packets so the total buffer is the same.

Prints, per queue kind: total goodput of both (mean over seeds), per-RTT share, and
the fitted RTT-bias exponent k (goodput ∝ RTT^−k, least squares on logs); plus the
wall time of each simulator and bottleneck packets per wall second. Writes
docs/validation/ns3-peer.md.

Usage: python3 validation/ns3_peer.py [--seeds N] [--flows N] [--duration S]
Needs: cargo build --release --bin qoslab-run; validation/ns3/build.sh
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import random
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
QOSLAB = ROOT / "target" / "release" / "qoslab-run"
NS3 = ROOT / "validation" / "ns3" / "build" / "dumbbell"
RTTS = [20, 40, 80, 160]

# name → (qoslab queue, ns-3 queue disc). ns-3's RED spaces early drops with `Wait`
# (on by default, as ns-2's wait_): qoslab's `wait = true` is the same rule; "red-fj" runs
# qoslab with Floyd & Jacobson's spacing against the same ns-3 RED, to show what it does.
_RED = (
    '{ kind = "red", limit = 100, min_th = 5, max_th = 15, max_p = 0.1, w_q = 0.002, '
    "gentle = true, mean_pkt_size = 1500, wait = WAIT }"
)
QUEUES = {
    "droptail": ('{ kind = "droptail", limit = 100 }', "droptail"),
    "red": (_RED.replace("WAIT", "true"), "red"),
    "red-fj": (_RED.replace("WAIT", "false"), "red"),
}


def qoslab_scenario(
    n,
    queue,
    starts,
    duration,
    warmup,
    seed,
    bottleneck="10Mbps",
    access="100Mbps",
    limit=100,
    delack=True,
    rtts=RTTS,
    sack=True,
    framing=2,
    delack_ms=200,
):
    # framing = 2: ns-3's point-to-point devices add a 2-byte PPP header to every packet.
    # halve = "pipe": ns-3 halves BytesInFlight, RFC 6675's pipe, when SACK is on.
    s = [f'name = "peer-{queue}"', f"duration = {duration}", f"warmup = {warmup}", f"seed = {seed}"]
    s += ['[[node]]\nname = "r1"\nkind = "router"', '[[node]]\nname = "r2"\nkind = "router"']
    tcp = (
        f'{{ variant = "{"sack" if sack else "newreno"}", mss = 1460,'
        + (' halve = "pipe",' if sack else "")
        + " max_window = 100000, initial_window = 10, "
        f'delayed_ack = {str(delack).lower()}, delack_timeout = "{delack_ms}ms", '
        'min_rto = "200ms", granularity = "1ms" }'
    )
    for i in range(n):
        rtt = rtts[i % len(rtts)]
        s.append(f'[[node]]\nname = "s{i}"\n[[node]]\nname = "d{i}"')
        s.append(
            f'[[link]]\na = "s{i}"\nb = "r1"\nrate = "{access}"\ndelay = "{rtt / 2 - 3}ms"\n'
            f'framing = {framing}\nqueue = {{ kind = "droptail", limit = 1000 }}'
        )
        s.append(
            f'[[link]]\na = "r2"\nb = "d{i}"\nrate = "{access}"\ndelay = "1ms"\n'
            f'framing = {framing}\nqueue = {{ kind = "droptail", limit = 1000 }}'
        )
        s.append(
            f'[[flow]]\nname = "f{i}"\nfrom = "s{i}"\nto = "d{i}"\nstart = {starts[i]}\ntcp = {tcp}'
        )
    q = QUEUES[queue][0].replace("limit = 100", f"limit = {limit}")
    s.append(
        f'[[link]]\na = "r1"\nb = "r2"\nrate = "{bottleneck}"\ndelay = "2ms"\n'
        f"framing = {framing}\nqueue = {q}"
    )
    return "\n".join(s) + "\n"


def run_qoslab(text, drops=False):
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write(text)
    t0 = time.perf_counter()
    out = subprocess.run([str(QOSLAB), f.name], check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - t0
    r = json.loads(out)
    t = r["tables"]["flows"]
    flows = dict(zip(t["names"], t["columns"], strict=True))
    q = dict(zip(r["tables"]["queues"]["names"], r["tables"]["queues"]["columns"], strict=True))
    hops = q["departed"][q["iface"].index("r1->r2")]
    if drops:
        return flows["goodput_bps"], wall, hops, q["dropped"][q["iface"].index("r1->r2")]
    return flows["goodput_bps"], wall, hops


def ns3_args(
    n,
    queue,
    starts,
    duration,
    warmup,
    seed,
    limit=100,
    bottleneck="10Mbps",
    access="100Mbps",
    delack=True,
    rtts=RTTS,
    sack=True,
    delack_ms=200,
):
    """The ns-3 peer's command line for one dumbbell run."""
    disc_limit = limit - 1  # the device queue behind the disc holds the last packet
    # Socket buffers: 4× a flow's fair share of (bottleneck BDP at 200 ms + the queue),
    # at least 256 KiB, so no window is capped, without BulkSend filling gigabytes.
    bps = float(bottleneck.removesuffix("bps").replace("G", "e9").replace("M", "e6"))
    sockbuf = max(1 << 18, int(4 * (bps / 8 * 0.2 + limit * 1500) / n))
    return [
        str(NS3),
        f"--queue={QUEUES[queue][1]}",
        f"--flows={n}",
        f"--limit={disc_limit}",
        f"--bottleneck={bottleneck}",
        f"--access={access}",
        f"--sockbuf={sockbuf}",
        f"--delack={2 if delack else 1}",
        f"--rtts={','.join(map(str, rtts))}",
        f"--sack={int(sack)}",
        f"--delack-timeout={delack_ms}",
        f"--starts={','.join(map(str, starts))}",
        f"--duration={duration}",
        f"--warmup={warmup}",
        f"--run={seed}",
    ]


def run_ns3(*args, drops=False, stats=False, **kw):
    """Runs the ns-3 peer (arguments as :func:`ns3_args`): goodputs with (wall, hops[,
    drops]), or with ``stats`` the goodputs and every "name value" line the peer prints
    after the warm-up counters."""
    args = ns3_args(*args, **kw)
    t0 = time.perf_counter()
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - t0
    good, hops, dropped, counts = [], 0, 0, {}
    for line in out.splitlines():
        p = line.split()
        if p[0] != "trace" and len(p) == 2:
            counts[p[0]] = float(p[1])
        if p[0] == "flow":
            good.append(float(p[5]))
        elif p[0] == "bottleneck_packets":
            hops = int(p[1])
        elif p[0] == "bottleneck_drops":
            dropped = int(p[1])
    if stats:
        return good, counts
    if drops:
        return good, wall, hops, dropped
    return good, wall, hops


def rtt_exponent(rtts, goodputs):
    xs = [math.log(r) for r in rtts]
    ys = [math.log(max(g, 1.0)) for g in goodputs]
    mx, my = statistics.mean(xs), statistics.mean(ys)
    cov = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    slope = cov / sum((x - mx) ** 2 for x in xs)
    return -slope


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--flows", type=int, default=8)
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--warmup", type=float, default=10.0)
    ap.add_argument("--no-delack", action="store_true", help="ACK every segment in both simulators")
    ap.add_argument("--queues", default=",".join(QUEUES), help="comma-separated subset")
    ap.add_argument("--out", default=str(ROOT / "docs" / "validation" / "ns3-peer.md"))
    args = ap.parse_args()
    for b in (QOSLAB, NS3):
        if not b.exists():
            print(f"missing {b}: see the usage line", file=sys.stderr)
            return 2
    n = args.flows
    rtts = [RTTS[i % len(RTTS)] for i in range(n)]
    lines = [
        "# qoslab against ns-3.44: TCP dumbbell",
        "",
        f"Made by `python3 validation/ns3_peer.py --seeds {args.seeds} --flows {n} "
        f"{'--no-delack ' if args.no_delack else ''}"
        f"--duration {args.duration:g}` ({n} flows, RTTs {'/'.join(map(str, RTTS))} ms cycling, "
        "10 Mb/s bottleneck, 100 Mb/s access, SACK + NewReno-style recovery, "
        f"{'no delayed ACKs' if args.no_delack else 'delayed ACKs'}, IW 10, "
        f"{args.duration:g} s with {args.warmup:g} s warm-up; means over seeds).",
        "",
    ]
    for queue in args.queues.split(","):
        per_q, per_n = [], []
        wq = wn = 0.0
        hq = hn = 0
        for seed in range(1, args.seeds + 1):
            rnd = random.Random(seed)
            starts = [round(rnd.random(), 6) for _ in range(n)]
            gq, w1, h1 = run_qoslab(
                qoslab_scenario(
                    n, queue, starts, args.duration, args.warmup, seed, delack=not args.no_delack
                )
            )
            gn, w2, h2 = run_ns3(
                n, queue, starts, args.duration, args.warmup, seed, delack=not args.no_delack
            )
            per_q.append(gq)
            per_n.append(gn)
            wq, wn, hq, hn = wq + w1, wn + w2, hq + h1, hn + h2
            print(
                f"{queue} seed {seed}: qoslab {sum(gq) / 1e6:.3f} Mb/s  "
                f"ns-3 {sum(gn) / 1e6:.3f} Mb/s",
                flush=True,
            )
        tot_q = statistics.mean(sum(g) for g in per_q)
        tot_n = statistics.mean(sum(g) for g in per_n)
        share_q = [statistics.mean(g[i] / sum(g) for g in per_q) for i in range(n)]
        share_n = [statistics.mean(g[i] / sum(g) for g in per_n) for i in range(n)]
        mean_q = [statistics.mean(g[i] for g in per_q) for i in range(n)]
        mean_n = [statistics.mean(g[i] for g in per_n) for i in range(n)]
        kq, kn = rtt_exponent(rtts, mean_q), rtt_exponent(rtts, mean_n)
        lines += [
            f"## {queue}",
            "",
            "| | qoslab | ns-3 | qoslab / ns-3 |",
            "|---|---|---|---|",
            f"| total goodput (Mb/s) | {tot_q / 1e6:.3f} | {tot_n / 1e6:.3f} "
            f"| {tot_q / tot_n:.3f} |",
            f"| RTT-bias exponent k (goodput ∝ RTT^−k) | {kq:.2f} | {kn:.2f} | |",
            f"| wall time, all seeds (s) | {wq:.2f} | {wn:.2f} | {wn / wq:.0f}× faster |",
            f"| bottleneck packets per wall second | {hq / wq:,.0f} | {hn / wn:,.0f} | |",
            "",
            "| flow | RTT (ms) | qoslab share | ns-3 share |",
            "|---|---|---|---|",
        ]
        for i in range(n):
            lines.append(f"| f{i} | {rtts[i]} | {share_q[i]:.3f} | {share_n[i]:.3f} |")
        lines.append("")
        print(
            f"{queue}: total {tot_q / 1e6:.3f} vs {tot_n / 1e6:.3f} Mb/s "
            f"(ratio {tot_q / tot_n:.3f}); "
            f"k {kq:.2f} vs {kn:.2f}; speed ratio {wn / wq:.0f}x"
        )
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

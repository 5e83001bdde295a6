"""Throughput of live mode's datapath (not a pass/fail test). Needs root and
/dev/net/tun.

    sudo .venv/bin/python benches/live_datapath.py [--seconds 10] [--only forward|shaped]

1. ``forward``: one Linux TCP flow a → r → b over two 100 Gb/s links with no delay, so
   the datapath (TUN reads, the engine's queues and events on the wall clock, TUN
   writes) is the bottleneck. Packets are 1500 bytes (the TUN devices have no
   offloads). Prints the goodput, the IP-level rate through the datapath, packets per
   second, and CPU per Gb/s: of this process (the datapath thread; the Python around
   it is idle during the run) and of the agents (senders and sinks, whose system time
   is the kernel's TCP). Target: ≥ 1.5 Gb/s on the 2-core machine when quiet.
2. ``shaped``: one Linux CUBIC flow over a 1 Gb/s bottleneck with a 40 ms RTT and a
   DropTail queue of one BDP (3,400 packets), 32 MB socket buffers. Prints its goodput
   against the TCP ceiling (1 Gb/s × 1448/1500 payload bytes per packet). Target:
   ≥ 95 % of the ceiling.

3. ``--budget``: one Linux CUBIC flow a → r → b with a bottleneck of 100, 250, 500 and
   1000 Mb/s (10 ms RTT, a one-BDP queue) for a few seconds each: packets per second
   read from the hosts and the run's timing verdict at each rate. The highest rate whose
   verdict holds is this machine's budget: set ``[live] max_pps`` to its packets/s
   (qoslab's default, 31 250 /s, is 250 Mb/s of 1500-byte packets and their ACKs, what
   this measured on the 2-core development machine).

4. ``--rate MBPS [--rate …] [--flows N] [--rtt MS] [--repeat K] [--base PYTHONPATH]``:
   N CUBIC flows a → b over a bottleneck of MBPS (access link 10 × as fast, RTT MS,
   default 1 ms, a one-BDP DropTail queue of at least 100 packets), each run in a fresh
   process. Per run: goodput, packets/s read from the hosts, the datapath thread's CPU
   per packet read (``live_cpu`` × the run's length ÷ packets read) and its wall time
   working per packet (``live_busy`` × length ÷ packets: not asleep or polling; the
   thread runs SCHED_FIFO, so other processes do not stretch it), the TUN writer
   thread's CPU per packet when the writes ran on one (``live_writer_cpu``), how often
   it slept, p99 and p99.9 lateness (and of the TUN writes), the verdict and its cause,
   and the load average before and after. With ``--base``, each repeat also runs the
   qoslab found on that PYTHONPATH (a copy of an earlier ``python/qoslab`` with its
   ``_core`` module), in turns with this one, so that both see the same machine: the
   CPU per packet of the two is the load-robust comparison. ``--out FILE`` appends the
   command, ``uptime`` before and after, and every line printed.

The scenarios here set ``[live] max_pps`` high: they are meant to exceed the datapath.
The load average is printed with the numbers: on the shared development box other jobs
take CPU from the datapath and the endpoints, so figures measured there are lower
bounds, not the quiet-machine figures.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def chain(name: str, access: str, bottleneck: str, live: str = "") -> str:
    """The benches' scenario: a → r → b, one CUBIC bulk flow; ``access`` and
    ``bottleneck`` are each link's ``rate``/``delay``/``queue`` lines, ``live`` more
    ``[live]`` keys. Braces are doubled: the text is a template for ``{dur}``,
    ``{warm}`` (and the budget's ``{rate}``, ``{limit}``)."""
    return f"""
name = "{name}"
duration = "{{dur}}s"
warmup = "{{warm}}s"
[[node]]
name = "a"
[[node]]
name = "r"
kind = "router"
[[node]]
name = "b"
[[link]]
a = "a"
b = "r"
{access}
[[link]]
a = "r"
b = "b"
{bottleneck}
[[flow]]
name = "bulk"
from = "a"
to = "b"
tcp = {{{{}}}}
[live]
cc = "cubic"
{live}txqueuelen = 20000
max_pps = 1e8
"""


def _link(rate: str, delay: str, limit: str) -> str:
    return (
        f'rate = "{rate}"\ndelay = "{delay}"\nqueue = {{{{ kind = "droptail", limit = {limit} }}}}'
    )


FORWARD = chain(
    "bench-forward", _link("100Gbps", "0ms", "100000"), _link("100Gbps", "0ms", "100000")
)
SHAPED = chain(
    "bench-shaped",
    _link("10Gbps", "1ms", "100000"),
    _link("1Gbps", "19ms", "3400"),
    'rmem = "32MB"\nwmem = "32MB"\n',
)
BUDGET = chain(
    "bench-budget", _link("10Gbps", "1ms", "100000"), _link("{rate}Mbps", "4ms", "{limit}")
)


def rate_scenario(mbps: float, flows: int, rtt_ms: float, dur: float, warm: float) -> str:
    """``--rate`` mode's scenario: ``flows`` CUBIC flows a → r → b, the bottleneck r → b
    at ``mbps``, the access link 10 × as fast, each link a quarter of the RTT one way, a
    one-BDP DropTail queue (at least 100 packets) at the bottleneck."""
    bdp = max(100, int(mbps * 1e6 * rtt_ms / 1e3 / 12_000))
    quarter = f"{rtt_ms * 250:g}us"
    text = chain(
        "bench-rate",
        _link(f"{mbps * 10:g}Mbps", quarter, "100000"),
        _link(f"{mbps:g}Mbps", quarter, str(bdp)),
    ).format(dur=dur, warm=warm)
    extra = "".join(
        f'[[flow]]\nname = "bulk{i}"\nfrom = "a"\nto = "b"\ntcp = {{}}\n' for i in range(1, flows)
    )
    # The [live] table must stay last: the extra flows go before it.
    head, live = text.split("[live]")
    return head + extra + "[live]" + live


def rate_child(spec: dict) -> dict:
    """One ``--rate`` run in this process (the qoslab on its path): the figures as JSON."""
    from qoslab.api import live

    text = rate_scenario(spec["mbps"], spec["flows"], spec["rtt"], spec["dur"], spec["warm"])
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "s.toml"
        p.write_text(text)
        load0 = os.getloadavg()[0]
        r = live(p)
        load1 = os.getloadavg()[0]
    s = r.summary
    hosts = r.table("live_hosts")
    read = int(hosts["tun_read"].sum())
    dur = spec["dur"]
    timing = r.table("live_timing")
    writes = timing.filter(timing["place"] == "(tun writes)")
    write_p99 = float(writes["p99_us"][0]) if writes.height else None
    return {
        "goodput_bps": float(r.flows["goodput_bps"].sum()),
        "pps": s.get("live_pps"),
        "cpu_us": s["live_cpu"] * dur / max(read, 1) * 1e6,
        "work_us": s["live_busy"] * dur / max(read, 1) * 1e6,
        # The TUN writer thread's CPU per packet (None: the loop wrote itself).
        "writer_us": (
            s["live_writer_cpu"] * dur / max(read, 1) * 1e6 if s.get("live_tun_writer") else None
        ),
        "write_p99_us": write_p99,
        "sleeps_per_pkt": (s["live_sleeps"] / max(read, 1)) if "live_sleeps" in s else None,
        "p99_us": s.get("live_lateness_p99_us"),
        "p999_us": s.get("live_lateness_p999_us"),
        "ok": bool(s.get("live_timing_ok")),
        "cause": s.get("live_timing_cause"),
        "machine_busy": s.get("live_machine_busy"),
        "load": (load0, load1),
    }


def rate_mode(a: argparse.Namespace, say) -> None:
    """``--rate``: each rate, ``--repeat`` times, in turns with ``--base`` if given."""
    warm = min(2.0, a.seconds / 3)
    variants = [("now", None)] + ([("base", a.base)] if a.base else [])
    for mbps in a.rate:
        got: dict[str, list[dict]] = {v: [] for v, _ in variants}
        for k in range(a.repeat):
            # Alternate which goes first, so neither always follows the other.
            order = variants if k % 2 == 0 else variants[::-1]
            for name, path in order:
                spec = {
                    "mbps": mbps,
                    "flows": a.flows,
                    "rtt": a.rtt,
                    "dur": a.seconds,
                    "warm": warm,
                }
                env = dict(os.environ)
                if path:
                    env["PYTHONPATH"] = path
                out = subprocess.run(
                    [sys.executable, __file__, "--child", json.dumps(spec)],
                    env=env,
                    capture_output=True,
                    text=True,
                    check=False,
                )
                if out.returncode != 0:
                    say(f"{name} failed: {out.stderr.strip()[-500:]}")
                    continue
                m = json.loads(out.stdout.strip().splitlines()[-1])
                got[name].append(m)
                sl = m["sleeps_per_pkt"]
                wr = m.get("writer_us")
                say(
                    f"{mbps:g} Mb/s × {a.flows} flow(s), RTT {a.rtt:g} ms, {name}: goodput "
                    f"{m['goodput_bps'] / 1e6:7.1f} Mb/s, {m['pps']:7.0f} packets/s read; "
                    f"datapath CPU {m['cpu_us']:5.2f} µs/packet"
                    + (f" + TUN writer {wr:5.2f}" if wr is not None else "")
                    + f", working {m['work_us']:5.2f} µs/packet"
                    + (f", {sl:.3f} sleeps/packet" if sl is not None else "")
                    + f"; p99 {m['p99_us']:6.1f} µs, p99.9 {m['p999_us']:7.1f} µs"
                    + (
                        f" (TUN writes p99 {m['write_p99_us']:.1f} µs)"
                        if m.get("write_p99_us") is not None
                        else ""
                    )
                    + ": "
                    f"{'valid' if m['ok'] else 'OUT OF BOUNDS'} ({m['cause']}); machine "
                    f"{100 * (m['machine_busy'] or 0):.0f} % busy, load average "
                    f"{m['load'][0]:.2f} → {m['load'][1]:.2f}"
                )
        for name, _ in variants:
            ms = got[name]
            if not ms:
                continue
            med = {
                k: statistics.median(m[k] for m in ms)
                for k in ("goodput_bps", "pps", "cpu_us", "work_us", "p99_us")
            }
            say(
                f"  {mbps:g} Mb/s × {a.flows}, {name}: median of {len(ms)}: goodput "
                f"{med['goodput_bps'] / 1e6:.1f} Mb/s, {med['pps']:.0f} packets/s, CPU "
                f"{med['cpu_us']:.2f} µs/packet, working {med['work_us']:.2f} µs/packet, "
                f"p99 {med['p99_us']:.1f} µs; valid {sum(m['ok'] for m in ms)} of {len(ms)}"
            )


#: Bottleneck rates [Mb/s] the budget mode tries.
BUDGET_RATES = (100, 250, 500, 1000)


def run(text: str, dur: float, warm: float, **fmt) -> dict:
    from qoslab.api import live

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "s.toml"
        p.write_text(text.format(dur=dur, warm=warm, **fmt))
        load0 = os.getloadavg()
        s0 = resource.getrusage(resource.RUSAGE_SELF)
        c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        r = live(p)
        wall = time.perf_counter() - t0
        s1 = resource.getrusage(resource.RUSAGE_SELF)
        c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        load1 = os.getloadavg()
    f = r.flows.row(0, named=True)
    hosts = r.table("live_hosts")
    return {
        "goodput_bps": f["goodput_bps"],
        "pkts_delivered": f["pkts_delivered"],
        "retransmits": f.get("retransmits"),
        "drops": f["drops"],
        "measured_s": dur - warm,
        "wall_s": wall,
        "self_cpu_s": (s1.ru_utime - s0.ru_utime) + (s1.ru_stime - s0.ru_stime),
        "self_sys_s": s1.ru_stime - s0.ru_stime,
        "agents_cpu_s": (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime),
        "tun_tx_dropped": int(hosts["tun_tx_dropped"].sum()),
        "ring_lost": r.summary.get("live_ring_lost"),
        "timing_ok": r.summary.get("live_timing_ok"),
        "p99_us": r.summary.get("live_lateness_p99_us"),
        "p999_us": r.summary.get("live_lateness_p999_us"),
        "cause": r.summary.get("live_timing_cause"),
        "pps": r.summary.get("live_pps"),
        "load": (load0[0], load1[0]),
        "cores": os.cpu_count(),
    }


def show(name: str, m: dict) -> None:
    gp = m["goodput_bps"] / 1e9
    ip = gp * 1500 / 1448  # 1448 payload bytes per 1500-byte packet (timestamps on)
    pps = m["pkts_delivered"] / m["measured_s"]
    # CPU per Gb/s: cores busy (CPU seconds per wall second of the run) per Gb/s of IP
    # traffic; the CPU is counted over the whole run (set-up, warm-up and all).
    self_cores = m["self_cpu_s"] / m["wall_s"]
    agent_cores = m["agents_cpu_s"] / m["wall_s"]
    print(f"{name}:")
    print(
        f"  goodput {gp:.3f} Gb/s, {ip:.3f} Gb/s of 1500-byte IP packets, "
        f"{pps / 1e3:.1f} k data packets/s; drops {m['drops']}, retransmits "
        f"{m['retransmits']}, TUN tx drops {m['tun_tx_dropped']}, ring lost {m['ring_lost']}"
    )
    print(
        f"  CPU: datapath process {self_cores:.2f} cores ({m['self_sys_s'] / m['wall_s']:.2f} "
        f"in the kernel) = {self_cores / ip if ip else float('nan'):.2f} cores per Gb/s; "
        f"agents (senders, sinks: the kernel's TCP) {agent_cores:.2f} cores; "
        f"{m['cores']} cores in all"
    )
    print(
        f"  timing: p99 {m['p99_us']:.1f} µs, p99.9 {m['p999_us']:.1f} µs "
        f"({'valid' if m['timing_ok'] else 'OUT OF BOUNDS'}); load average "
        f"{m['load'][0]:.2f} before, {m['load'][1]:.2f} after"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0, help="run length (default 10)")
    ap.add_argument("--only", choices=["forward", "shaped"], default=None)
    ap.add_argument(
        "--budget",
        action="store_true",
        help="only the budget sweep: the timing verdict at 100-1000 Mb/s",
    )
    ap.add_argument("--rate", type=float, action="append", help="--rate mode: Mb/s")
    ap.add_argument("--flows", type=int, default=1, help="--rate mode: flows (default 1)")
    ap.add_argument("--rtt", type=float, default=1.0, help="--rate mode: RTT [ms]")
    ap.add_argument("--repeat", type=int, default=1, help="--rate mode: runs of each")
    ap.add_argument("--base", help="--rate mode: PYTHONPATH of the qoslab to compare with")
    ap.add_argument("--out", help="append the command, uptime and output to this file")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(rate_child(json.loads(a.child))))
        return
    from qoslab.api import live_unavailable

    problem = live_unavailable()
    if problem:
        sys.exit(f"error: {problem}")
    out = open(a.out, "a", encoding="utf-8") if a.out else None

    def say(line: str) -> None:
        print(line, flush=True)
        if out:
            out.write(line + "\n")
            out.flush()

    def uptime() -> str:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()

    if out:
        out.write(f"# python benches/live_datapath.py {' '.join(sys.argv[1:])}\n")
        head = subprocess.run(
            ["git", "-C", str(Path(__file__).parent), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        out.write(f"# now: qoslab as on this path, at commit {head or '?'}")
        out.write(f"; base: {a.base}\n" if a.base else "\n")
        out.write(f"# uptime before: {uptime()}\n")
    if a.rate:
        say(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
        rate_mode(a, say)
        if out:
            out.write(f"# uptime after: {uptime()}\n\n")
        return
    warm = min(3.0, a.seconds / 3)
    print(
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; figures under "
        "load are lower bounds, not the quiet-machine figures"
    )
    if a.budget:
        for mbps in BUDGET_RATES:
            bdp = max(100, int(mbps * 1e6 * 0.010 / 12_000))
            m = run(BUDGET, a.seconds, warm, rate=mbps, limit=bdp)
            say(
                f"{mbps:5d} Mb/s: goodput {m['goodput_bps'] / 1e6:7.1f} Mb/s, "
                f"{m['pps']:8.0f} packets/s read; p99 {m['p99_us']:7.1f} µs, p99.9 "
                f"{m['p999_us']:7.1f} µs: {'valid' if m['timing_ok'] else 'OUT OF BOUNDS'} "
                f"({m['cause']}); load average {m['load'][0]:.2f} → {m['load'][1]:.2f}"
            )
        if out:
            out.write(f"# uptime after: {uptime()}\n\n")
        return
    if a.only in (None, "forward"):
        m = run(FORWARD, a.seconds, warm)
        show("forwarding, 2 × 100 Gb/s links, no delay (target ≥ 1.5 Gb/s when quiet)", m)
    if a.only in (None, "shaped"):
        m = run(SHAPED, a.seconds, warm)
        ceiling = 1e9 * 1448 / 1500
        show("shaped: 1 Gb/s bottleneck, 40 ms RTT, CUBIC, 32 MB buffers", m)
        print(
            f"  {m['goodput_bps'] / 1e6:.1f} Mb/s = {m['goodput_bps'] / ceiling:.1%} of the "
            f"TCP ceiling {ceiling / 1e6:.1f} Mb/s (target ≥ 95 %)"
        )


if __name__ == "__main__":
    main()

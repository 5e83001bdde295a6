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

The scenarios here set ``[live] max_pps`` high: they are meant to exceed the datapath.
The load average is printed with the numbers: on the shared development box other jobs
take CPU from the datapath and the endpoints, so figures measured there are lower
bounds, not the quiet-machine figures.
"""

from __future__ import annotations

import argparse
import os
import resource
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
    a = ap.parse_args()
    from qoslab.api import live_unavailable

    problem = live_unavailable()
    if problem:
        sys.exit(f"error: {problem}")
    warm = min(3.0, a.seconds / 3)
    print(
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; figures under "
        "load are lower bounds, not the quiet-machine figures"
    )
    if a.budget:
        for mbps in BUDGET_RATES:
            bdp = max(100, int(mbps * 1e6 * 0.010 / 12_000))
            m = run(BUDGET, a.seconds, warm, rate=mbps, limit=bdp)
            print(
                f"{mbps:5d} Mb/s: goodput {m['goodput_bps'] / 1e6:7.1f} Mb/s, "
                f"{m['pps']:8.0f} packets/s read; p99 {m['p99_us']:7.1f} µs, p99.9 "
                f"{m['p999_us']:7.1f} µs: {'valid' if m['timing_ok'] else 'OUT OF BOUNDS'} "
                f"({m['cause']}); load average {m['load'][0]:.2f} → {m['load'][1]:.2f}"
            )
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

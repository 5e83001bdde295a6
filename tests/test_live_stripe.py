"""Application striping over Linux TCP sockets (`python -m qoslab.live_stripe`, P4 §2):
the receiver's reassembly (blocks out of order are delivered in order, the stall and the
held bytes measured) without a network; both sides over the loopback without root; and
a live run of w = 3 sockets over a lossy link, every byte in order (needs root and
/dev/net/tun)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from conftest import needs_live
from qoslab import live_stripe as ls


def test_blocks_out_of_order_are_delivered_in_order_and_the_stall_is_measured():
    r = ls.Reassembly(3)
    # Blocks 1 and 2 (offsets 1000, 2000) arrive on sockets 1 and 2 at t = 0.1 s; block 0
    # comes on socket 0 only at 0.4 s: nothing is delivered before, all 3000 bytes then.
    r.header(1, 1000, 1000, 0.1)
    r.data(1, ls.payload(1000, 1000), 0.1)
    r.header(2, 2000, 1000, 0.1)
    r.data(2, ls.payload(2000, 600), 0.1)
    r.data(2, ls.payload(2600, 400), 0.12)
    assert r.delivered == 0 and r.held_bytes == 2000
    r.header(0, 0, 1000, 0.35)
    r.data(0, ls.payload(0, 400), 0.4)
    assert r.delivered == 400  # the head block is delivered as it arrives
    r.data(0, ls.payload(400, 600), 0.45)
    assert r.delivered == 3000 and r.delivered_blocks == 3 and r.held_bytes == 0
    assert r.crc == zlib.crc32(ls.payload(0, 3000)) and r.mismatched == 0
    assert (r.peak_bytes, r.peak_blocks) == (2000, 2)
    assert r.sock_bytes == [1000, 1000, 1000] and r.sock_blocks == [1, 1, 1]
    rep = r.report(0.5)
    # The in-order point stood still from 0.1 s (data waiting) to 0.4 s.
    assert rep["hol_stall_max_s"] == pytest.approx(0.3)
    assert rep["hol_stalls_over_200ms"] == 1


def test_a_partly_held_block_that_becomes_next_is_delivered_as_far_as_it_came():
    r = ls.Reassembly(2)
    r.header(1, 500, 500, 0.0)
    r.data(1, ls.payload(500, 200), 0.0)
    r.header(0, 0, 500, 0.0)
    r.data(0, ls.payload(0, 500), 0.05)
    assert r.delivered == 700 and r.held_bytes == 0 and r.head == 500
    r.data(1, ls.payload(700, 300), 0.06)
    assert r.delivered == 1000 and r.delivered_blocks == 2 and not r.held
    assert r.report(0.1)["hol_stalls_over_200ms"] == 0


def test_the_hold_limit_leaves_other_sockets_unread_and_wrong_bytes_are_counted():
    r = ls.Reassembly(2, hold=0)
    r.header(0, 0, 1000, 0.0)
    r.header(1, 1000, 1000, 0.0)
    # Only the socket carrying the next block may be read; no header: read the header.
    assert (r.want(0), r.want(1)) == (1000, 0)
    r.data(0, bytes(1000), 0.1)  # zeros, not the pattern
    assert r.mismatched > 0 and r.delivered == 1000
    assert r.want(1) == 1000  # its block is next now
    with pytest.raises(ValueError):
        r.data(1, bytes(1001), 0.2)
    r2 = ls.Reassembly(2, hold=300)
    r2.header(1, 1000, 1000, 0.0)
    assert r2.want(1) == 300


def test_the_in_order_goodput_leaves_the_warm_up_out():
    rep = {"series": {"t": [0.0, 1.0, 2.0, 3.0], "delivered": [[0], [100], [200], [400]]}}
    assert ls.in_order_bps(rep, after=1.0) == pytest.approx((400 - 100) * 8 / 2)
    assert ls.in_order_bps(rep) == pytest.approx(400 * 8 / 3)
    assert ls.in_order_bps(rep, after=3.0) != ls.in_order_bps(rep, after=3.0)  # NaN


def test_sizes_parse_as_in_scenario_files():
    assert [ls.parse_size(x) for x in ("8KB", "64KiB", "1000", "1.5MB")] == [
        8000,
        65536,
        1000,
        1_500_000,
    ]
    with pytest.raises(Exception, match="not a size"):
        ls.parse_size("8 parsecs")


def _pair(w: int, port: int, send_args: list[str], recv_args: list[str] = ()) -> tuple:
    """Runs a receiver and a sender over the loopback; their JSON reports."""
    cmd = [sys.executable, "-m", "qoslab.live_stripe"]
    common = ["--port", str(port), "--connections", str(w)]
    rx = subprocess.Popen(
        [*cmd, "recv", "--bind", "127.0.0.1", *common, *recv_args], stdout=subprocess.PIPE
    )
    tx = subprocess.run(
        [*cmd, "send", "--to", "127.0.0.1", *common, *send_args],
        stdout=subprocess.PIPE,
        timeout=30,
        check=True,
    )
    out, _ = rx.communicate(timeout=30)
    assert rx.returncode == 0
    return json.loads(out), json.loads(tx.stdout)


@pytest.mark.parametrize("policy", ["round_robin", "write_until_block"])
def test_both_sides_over_the_loopback_deliver_every_byte_in_order(policy):
    port = 6200 + ls.POLICIES.index(policy)
    r, s = _pair(3, port, ["--bytes", "2MB", "--block", "8KB", "--policy", policy], ["--hold", "0"])
    assert r["complete"] and r["ended"] == "eof" and s["ended"] == "done"
    assert r["delivered_bytes"] == s["written_bytes"] == 2_000_000
    assert r["crc32"] == s["crc32"] == zlib.crc32(ls.payload(0, 2_000_000))
    assert r["mismatched_bytes"] == 0 and r["held_peak_bytes"] == 0  # hold 0: none held
    assert [x["blocks"] for x in r["per_socket"]] == [x["blocks"] for x in s["per_socket"]]
    assert sum(x["blocks"] for x in s["per_socket"]) == 250
    if policy == "round_robin":
        assert [x["blocks"] for x in s["per_socket"]] == [84, 83, 83]
    # The series is cumulative and ends at the total.
    d = [v[0] for v in r["series"]["delivered"]]
    assert d == sorted(d) and d[-1] == 2_000_000
    # Linux 6.7 and later count each socket's retransmission timeouts (none on the
    # loopback); older kernels leave the key out.
    if _kernel() >= (6, 7):
        assert [x["timeouts"] for x in s["per_socket"]] == [0, 0, 0]
    else:
        assert all("timeouts" not in x for x in s["per_socket"])


def _kernel() -> tuple[int, int]:
    """The running kernel's major and minor version."""
    import os

    major, minor = os.uname().release.split(".")[:2]
    return int(major), int("".join(c for c in minor if c.isdigit()) or 0)


def _wait_for(port: int, state: str, timeout: float = 20.0) -> None:
    """Waits until a TCP socket on the loopback in ``state`` (/proc/net/tcp: ``0A``
    listening, ``01`` established) has ``port`` as its local or remote port: the
    program is past installing its signal handlers."""
    end = time.monotonic() + timeout
    hexport = f"{port:04X}"
    while time.monotonic() < end:
        for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
            f = line.split()
            if f[3] == state and hexport in (f[1].split(":")[1], f[2].split(":")[1]):
                return
        time.sleep(0.05)
    raise AssertionError(f"no socket of port {port} in state {state}")


def test_a_stopped_sender_ends_both_sides_with_their_report():
    cmd = [sys.executable, str(Path(ls.__file__))]  # as a script: no package import
    common = ["--port", "6210", "--connections", "2"]
    rx = subprocess.Popen([*cmd, "recv", "--bind", "127.0.0.1", *common], stdout=subprocess.PIPE)
    tx = subprocess.Popen(
        [*cmd, "send", "--to", "127.0.0.1", *common, "--send-buffer", "16KB"],
        stdout=subprocess.PIPE,
    )
    _wait_for(6210, "01")
    time.sleep(1.0)  # unlimited: it writes until stopped, as live mode stops programs
    tx.send_signal(signal.SIGTERM)
    s = json.loads(tx.communicate(timeout=10)[0])
    r = json.loads(rx.communicate(timeout=10)[0])
    assert (tx.returncode, rx.returncode) == (0, 0)
    assert s["ended"] == "signal" and s["written_bytes"] > 0
    # The receiver saw both sockets close; what it delivered is the stream's start.
    assert r["ended"] == "eof" and r["mismatched_bytes"] == 0
    assert 0 < r["delivered_bytes"] <= s["written_bytes"]
    assert r["complete"] == (r["delivered_bytes"] == s["written_bytes"])
    # A receiver stopped before anyone connected still reports.
    rx = subprocess.Popen([*cmd, "recv", "--bind", "127.0.0.1", *common], stdout=subprocess.PIPE)
    _wait_for(6210, "0A")
    rx.send_signal(signal.SIGTERM)
    r = json.loads(rx.communicate(timeout=10)[0])
    assert (r["ended"], r["connected"], r["delivered_bytes"]) == ("signal", 0, 0)


LOSSY = """
name = "stripe"
duration = "8s"
warmup = "0s"
[[node]]
name = "a"
[[node]]
name = "b"
[[link]]
a = "a"
b = "b"
rate = "4Mbps"
delay = "10ms"
loss = 0.02
queue = {{ kind = "droptail", limit = 15 }}
[[live.program]]
name = "recv"
host = "b"
argv = {recv}
[[live.program]]
name = "send"
host = "a"
start = "0.2s"
argv = {send}
"""


@needs_live
def test_live_striping_over_three_sockets_delivers_every_byte_in_order(tmp_path):
    from qoslab.api import live

    cmd = [sys.executable, "-m", "qoslab.live_stripe"]
    common = ["--port", "6000", "--connections", "3"]
    recv = [*cmd, "recv", *common]
    send = [*cmd, "send", "--to", "b", *common, "--bytes", "600KB", "--block", "8KB"]
    p = tmp_path / "s.toml"
    p.write_text(LOSSY.format(recv=json.dumps(recv), send=json.dumps(send)))
    res = live(p)
    progs = {x["name"]: x for x in res.table("live_programs").iter_rows(named=True)}
    assert all(x["exit_code"] == 0 for x in progs.values()), progs
    r = json.loads(progs["recv"]["stdout"])
    s = json.loads(progs["send"]["stdout"])
    # Every byte arrived, in order (the pattern and the CRC), over all three sockets.
    assert r["complete"] and r["ended"] == "eof" and r["error"] is None, r
    assert r["delivered_bytes"] == s["written_bytes"] == 600_000
    assert r["crc32"] == s["crc32"] and r["mismatched_bytes"] == 0
    assert sum(x["bytes"] for x in r["per_socket"]) == 600_000
    assert [x["blocks"] for x in r["per_socket"]] == [x["blocks"] for x in s["per_socket"]]
    assert [x["blocks"] for x in s["per_socket"]] == [25, 25, 25]  # round-robin
    # The 2 % loss made the sockets retransmit, and the datapath dropped packets.
    assert sum(x["retransmits"] for x in s["per_socket"]) > 0
    assert int(res.drops["packets"].sum()) > 0
    # The striped connections' data is in live_conns: three 5-tuples to port 6000.
    conns = res.table("live_conns").to_dicts()
    data = [c for c in conns if c["dport"] == 6000]
    assert len(data) == 3 and sum(c["payload_delivered"] for c in data) >= 600_000

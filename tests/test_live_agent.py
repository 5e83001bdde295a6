"""The live agent's reading of the kernel's ``struct tcp_info`` (no live mode needed):
a hand-built struct with known fields, as a kernel with and without ``tcpi_min_rtt``
returns it."""

from __future__ import annotations

import struct

import pytest

from qoslab.live_agent import TCP_INFO_ASK, TCP_INFO_LEN, TCP_INFO_MIN_RTT, parse_tcp_info


def _struct(length: int) -> bytes:
    """A ``struct tcp_info`` of ``length`` bytes: rto 204 ms, rtt 31.5 ms, snd_ssthresh
    7, snd_cwnd 12, total_retrans 3 and, at byte 148, min_rtt 20.25 ms."""
    u32 = [0] * 24
    u32[0], u32[15], u32[17], u32[18], u32[23] = 204_000, 31_500, 7, 12, 3
    b = bytearray(struct.pack("=8B24I", *([0] * 8), *u32))
    b += bytes(max(0, 160 - len(b)))
    struct.pack_into("=I", b, 148, 20_250)
    return bytes(b[:length])


def test_tcp_info_fields_where_linux_puts_them():
    assert (TCP_INFO_LEN, TCP_INFO_MIN_RTT, TCP_INFO_ASK) == (104, 148, 152)
    i = parse_tcp_info(_struct(TCP_INFO_ASK))
    assert i == {
        "rto": pytest.approx(0.204),
        "srtt": pytest.approx(0.0315),
        "ssthresh": 7,
        "cwnd": 12,
        "total_retrans": 3,
        "min_rtt": pytest.approx(0.02025),
    }


def test_an_older_kernels_shorter_struct_leaves_min_rtt_out():
    i = parse_tcp_info(_struct(TCP_INFO_LEN))
    assert i is not None and "min_rtt" not in i and i["cwnd"] == 12
    assert "min_rtt" not in parse_tcp_info(_struct(TCP_INFO_ASK - 1))
    # Shorter than the fields every kernel has: nothing is guessed.
    assert parse_tcp_info(_struct(TCP_INFO_LEN - 1)) is None


def _sink_pair(arrivals: bool):
    """A bulk sink of the agent on one end of a loopback TCP connection (no live mode
    needed): the agent, the sink's socket, the sending socket and the sink's thread."""
    import socket
    import threading

    from qoslab.live_agent import Agent

    srv = socket.create_server(("127.0.0.1", 0))
    cli = socket.create_connection(srv.getsockname())
    conn, _ = srv.accept()
    srv.close()
    agent = Agent({"listen": []})
    agent.received[0] = 0
    if arrivals:
        agent.arrivals[0] = []
    th = threading.Thread(target=agent.tcp_sink, args=(conn, 0), daemon=True)
    th.start()
    return agent, conn, cli, th


def _send_for(cli, seconds: float, chunk: int, gap: float) -> int:
    import time

    sent, end = 0, time.monotonic() + seconds
    while time.monotonic() < end:
        cli.sendall(b"x" * chunk)
        sent += chunk
        if gap:
            time.sleep(gap)
    return sent


def test_a_bulk_sink_reads_in_chunks_of_about_a_millisecond_of_its_rate():
    import socket

    from qoslab.live_agent import LOWAT_MAX

    agent, conn, cli, th = _sink_pair(arrivals=False)
    cap = min(LOWAT_MAX, conn.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) // 4)
    lowat = lambda: conn.getsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT)  # noqa: E731
    assert lowat() == 1
    # Fast (loopback, as fast as it goes): far more than the cap per millisecond.
    sent = _send_for(cli, 0.2, 1 << 16, 0)
    assert lowat() == cap
    # Slow (1000 bytes every 2 ms or more: at most 500 kB/s): the chunk shrinks to
    # what a millisecond brings, after waiting at most for one full chunk.
    sent += _send_for(cli, 0.4, 1000, 0.002)
    assert 1 < lowat() <= 1000
    cli.close()
    th.join(timeout=5)
    conn.close()
    assert not th.is_alive() and agent.received[0] == sent


def test_a_sink_that_keeps_read_times_reads_every_segment():
    import socket

    agent, conn, cli, th = _sink_pair(arrivals=True)
    sent = _send_for(cli, 0.2, 1 << 16, 0)
    assert conn.getsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT) == 1
    cli.close()
    th.join(timeout=5)
    conn.close()
    assert agent.received[0] == sent and agent.arrivals[0][-1][1] == sent

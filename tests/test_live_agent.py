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

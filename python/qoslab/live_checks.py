"""What a live run does not take from its scenario, said as warnings.

In a live run the hosts' own Linux TCP carries the TCP flows: of a flow's ``tcp`` table
only ``ecn`` reaches the hosts (``net.ipv4.tcp_ecn``, unless ``[live] ecn`` sets it for
every host), and ``cc`` must be Reno (other increase rules are refused). Every other key
configures qoslab's simulated TCP, which does not run. :func:`ignored_tcp_warnings` names
each such key with what Linux does instead and, where there is one, the sysctl or
``[live]`` key that sets it. Flows named in ``[live] simulated`` run on qoslab's own
TCP inside the datapath: every key of theirs is used.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["LINUX_INSTEAD", "ignored_tcp_warnings"]

#: For each ``tcp`` key: what the live hosts' Linux TCP does instead, and how to set it.
LINUX_INSTEAD: dict[str, str] = {
    "variant": "Linux recovers with SACK when `[live] sack` is on (net.ipv4.tcp_sack), "
    "NewReno-style when it is off",
    "mss": "Linux takes its MSS from the TUN's 1500-byte MTU: 1448 payload bytes with "
    "timestamps, 1460 without (`[live] timestamps`, net.ipv4.tcp_timestamps)",
    "max_window": "Linux's window is bounded by the socket buffers: `[live] rmem` / `wmem` "
    "(net.ipv4.tcp_rmem / net.ipv4.tcp_wmem)",
    "rcv_buffer": "the receiver's buffer is its socket's: `[live] rmem` (net.ipv4.tcp_rmem)",
    "initial_window": "Linux starts with 10 segments (the route's initcwnd; no sysctl, "
    "live mode leaves it)",
    "delayed_ack": "Linux delays ACKs by its own rules (quick-ACK mode, then every second "
    "segment; no sysctl)",
    "delack_timeout": "Linux's delayed-ACK timer is 40 ms to 200 ms (TCP_DELACK_MIN/MAX; no "
    "sysctl)",
    "min_rto": "Linux's minimum RTO is 200 ms (TCP_RTO_MIN; the route's rto_min, which "
    "live mode leaves)",
    "initial_rto": "Linux's initial RTO is 1 s (TCP_TIMEOUT_INIT; no sysctl)",
    "max_rto": "Linux's largest RTO is 120 s (TCP_RTO_MAX; no sysctl)",
    "granularity": "Linux computes its RTO as SRTT + max(200 ms, 4·RTTVAR) (tcp_set_rto; "
    "no sysctl)",
    "rto_estimator": "Linux computes its RTO as SRTT + max(200 ms, 4·RTTVAR) (tcp_set_rto; "
    "no sysctl)",
    "sack_blocks": "Linux sends as many SACK blocks as fit in the options: 3 with "
    "timestamps, 4 without (`[live] sack`, `[live] timestamps`)",
    "handshake": "Linux always opens with a SYN handshake and closes with FIN",
    "cc": "every host runs `[live] cc` (net.ipv4.tcp_congestion_control, or TCP_CONGESTION "
    "on each socket; reno when not set)",
    "limited_transmit": "Linux always uses limited transmit (RFC 3042; no sysctl)",
    "recovery": "Linux paces fast recovery with PRR (RFC 6937; no sysctl); "
    "`[live] rack_tlp` sets its loss detection (net.ipv4.tcp_recovery)",
    "halve": "Linux Reno sets ssthresh to half the congestion window (tcp_reno_ssthresh; "
    "no sysctl)",
    "on_quench": "Linux ignores ICMP source quench",
    "byte_counting": "Linux always grows its window by the segments each ACK acknowledges "
    "(RFC 3465-style; no sysctl)",
    "quickack": "Linux's receivers always use quick-ACK mode (no sysctl; TCP_QUICKACK per socket)",
    "adaptive_delack": "Linux's delayed-ACK timer always adapts between 40 ms and 200 ms "
    "(TCP_ATO_MIN, TCP_DELACK_MAX; no sysctl)",
    "rto_keeps_ssthresh": "Linux keeps ssthresh on a timeout within a window of the last "
    "reduction (tcp_enter_loss; no sysctl)",
    "fast_retransmit_keeps_timer": "Linux restarts the retransmission timer for the fast "
    "retransmission (tcp_xmit_retransmit_queue; no sysctl)",
    "rto_lost_retransmit": "Linux finds a retransmission lost after a timeout by RACK and "
    "starts fast recovery (tcp_fastretrans_alert; no sysctl)",
    "rtt_samples": "Linux takes an RTT sample from every ACK, and from the timestamp echo "
    "when retransmitted data is acknowledged (tcp_ack_update_rtt; no sysctl)",
}

#: The ``tcp`` keys a live run uses (``ecn``; see the module doc).
_USED = {"ecn"}


def _flows_text(flows: list[str]) -> str:
    if len(flows) <= 3:
        return ", ".join(flows)
    return f"{', '.join(flows[:3])} and {len(flows) - 3} more"


def ignored_tcp_warnings(data: Mapping[str, Any]) -> list[str]:
    """One warning per ``tcp`` key that scenario ``data`` sets on its flows and a live run
    ignores, naming the key, the flows that set it (``flow[i]``), that the hosts run Linux
    TCP, and what Linux does instead (:data:`LINUX_INSTEAD`). ``tcp.ecn`` is ignored only
    when ``[live] ecn`` is set (it then decides for every host)."""
    live = data.get("live") if isinstance(data.get("live"), Mapping) else {}
    # qoslab's own TCP runs the flows `[live] simulated` names: it takes all their keys.
    simulated = set(live.get("simulated") or [])
    by_key: dict[str, list[str]] = {}
    web: set[str] = set()
    for i, f in enumerate(data.get("flow") or []):
        if not isinstance(f, Mapping) or not isinstance(f.get("tcp"), Mapping):
            continue
        if f.get("name") in simulated:
            continue
        if "web" in f:
            web.add(f"flow[{i}]")
        for key in f["tcp"]:
            if key in _USED and not (key == "ecn" and "ecn" in live):
                continue
            by_key.setdefault(str(key), []).append(f"flow[{i}]")
    out = []
    for key, flows in by_key.items():
        if key == "ecn":
            why = "`[live] ecn` sets net.ipv4.tcp_ecn on every host"
        else:
            why = LINUX_INSTEAD.get(key, "it configures qoslab's simulated TCP")
        if key == "mss" and web & set(flows):
            why += "; a web flow's object and request sizes still count in packets of its `mss`"
        out.append(
            f"live: tcp.{key} ({_flows_text(flows)}) is ignored: the hosts run Linux TCP, "
            f"not qoslab's; {why}"
        )
    return out

"""The simulated twin of a live run (``qoslab live --twin``): the same scenario
in the simulator with qoslab's TCP set as close to the live hosts' Linux TCP as it goes,
and a side-by-side ``twin`` table of the two runs.

What the twin's TCP takes from Linux (each a ``tcp`` key of docs/tcp.md):

- SACK recovery paced by PRR (RFC 6937, Linux's default since 3.2): ``variant = "sack"``,
  ``recovery = "prr"``; ``[live] sack = false`` gives ``newreno`` (Linux without SACK
  recovers NewReno-style);
- initial window 10 segments (RFC 6928, Linux's ``TCP_INIT_CWND``);
- delayed ACKs every second segment with Linux's 40 ms minimum delayed-ACK timer
  (``TCP_DELACK_MIN``), Linux's quick-ACK mode (``quickack = true``: every segment ACKed
  at once for the first 16, after a stall longer than the RTO, after a duplicate, and for
  2 after a CE mark that starts the echo or a retransmission without ECT; over seeds 1–8
  of the srTCM example with Reno hosts it raises the twin from 8.20 to 8.25 Mb/s on
  average, against one set of 5 live runs from −1.6 % to −0.9 % of live) and its
  adaptive timeout (``adaptive_delack = true``: ``ato`` follows the gaps between segments
  and doubles when the timer fires, bounded by the handshake's RTT; at RTTs up to 40 ms
  it stays 40 ms, so it changed neither case);
- RTO = SRTT + max(200 ms, 4·RTTVAR): Linux floors its variance term at ``tcp_rto_min``
  (``tcp_set_rto``), which is ``granularity = "200ms"`` in qoslab's RFC 6298 estimator;
- ssthresh = cwnd / 2 (``tcp_reno_ssthresh``): ``halve = "window"``;
- a window that grows by the segments each ACK acknowledges (``tcp_slow_start``,
  ``tcp_cong_avoid_ai``; RFC 3465 byte counting): ``byte_counting = true``. Without it
  a delayed ACK of two segments grows the window by one increment, so congestion
  avoidance adds half a segment per RTT and the sawtooth lasts twice as long as Linux's
  (1 loss every 3.4 s against live's 1.8 s at 10 Mb/s, 40 ms, 25 packets);
- Linux's answer to a lost retransmission (``rto_lost_retransmit = true``, SACK only):
  a timeout marks every unSACKed segment lost, and a retransmission is lost again once a
  segment sent after it is SACKed (RACK with no reordering window in Loss and Recovery,
  ``tcp_rack_reo_wnd``); after a timeout Linux then leaves its go-back for fast recovery
  at ssthresh = cwnd / 2 (``tcp_fastretrans_alert``, ``tcp_enter_recovery``), which PRR
  holds until everything the timeout found lost is repaired. Without it the twin found
  such a loss only by its next timeout. Over seeds 1–100 of the srTCM example with Reno
  hosts it moves the twin from 8.281 to 8.216 Mb/s on average, its lowest seeds from
  7.69 to 7.13 Mb/s (live's seed 29 ran 6.25–7.40 Mb/s this way;
  docs/validation/live-burst.md); behind the policer it moves the twin from 3.627 to
  3.625 Mb/s;
- the SYN handshake (``handshake = true``), ECN as the live hosts have it, 3 SACK blocks
  with timestamps (4 without);
- the same packets on the wire: Linux's 1500-byte MTU carries 1448 payload bytes with
  timestamps (52 bytes of headers), 1460 without; qoslab's TCP puts 40 bytes of headers
  on a segment, so the twin uses ``mss = 1460`` (1500-byte packets, the same
  serialisation times and queue occupancy as live) and its goodput is compared at Linux's
  payload per packet (× 1448/1460 with timestamps);
- a window that the buffers, not a segment cap, bound: ``max_window`` is half the live
  hosts' largest socket buffer (Linux keeps about half of it for overhead) in segments.

Congestion control: Linux Reno → qoslab's Reno; Linux CUBIC → qoslab's CUBIC (RFC 9438
with Linux's constants: C = 0.4, β = 0.7 (Linux 717/1024), fast convergence and the
Reno-friendly region on, and Linux's departures from the RFC (:data:`TWIN_CUBIC_LINUX`:
the target in whole segments, the least RTT as look-ahead, α_cubic kept);
:data:`TWIN_HYSTART` says whether the twin's slow start exits by HyStart++ where Linux
runs its own HyStart). Any other (BBR, …) has no twin of its own: the twin runs Reno
and says so.

Not reproduced: BBR, TSO/pacing, the rest of RACK-TLP (RACK's timer for segments not
yet overtaken, its reordering window outside recovery, tail-loss probes; ``[live]
rack_tlp = false`` turns off the probes, but RACK is Linux's only SACK loss detection
since 6.17, where ``net.ipv4.tcp_recovery = 0`` no longer turns it off), SACK
compression of ACKs while data is out of order, F-RTO, Linux's per-ACK RTT samples (``rtt_samples
= "every_ack_ts"``: qoslab has them, the twin leaves them off and times one segment per
RTT; with them the twin's SRTT and RTO follow the queue as Linux's do through the srTCM
example's slow-start burst, but over the srTCM example's 32 repeats of
docs/validation/live-burst.md it moves the twin from +2.6 % to +4.4 % of live, and the
TCP dumbbell's 20 ms flow falls below its 40 ms one, where live has it first), and
Linux's rule that a timeout within a window of an earlier reduction keeps its ssthresh
(``rto_keeps_ssthresh``: qoslab has it, the twin leaves it off, as it moved the srTCM
example's twin from −0.9 % to −2.1 % of the same live runs). A TCP flow whose live
sender ran another congestion control than the twin's Reno is not comparable: its
``diff`` (and the total's) is left empty, ``comparable`` is false, and :func:`twin_text`
shows "not comparable".

A flow named in ``[live] simulated`` ran on qoslab's own endpoints in the live run too:
the twin keeps its scenario as written, both sides count its goodput in the same bytes,
and its congestion control is ``qoslab`` on both (comparable).
"""

from __future__ import annotations

import copy
import math
import re
import struct
from collections.abc import Mapping
from typing import Any

import numpy as np
import polars as pl

__all__ = [
    "TWIN_CC",
    "TWIN_HYSTART",
    "TWIN_OF",
    "jain",
    "pcap_goodput",
    "twin_cc",
    "twin_data",
    "twin_figure",
    "twin_series",
    "twin_table",
    "twin_tcp",
    "twin_text",
]

#: Linux's payload bytes per 1500-byte packet, with and without TCP timestamps.
LINUX_PAYLOAD = {True: 1448, False: 1460}
#: The twin's MSS: qoslab puts 40 bytes of headers on it, so its packets are 1500 bytes.
TWIN_MSS = 1460
#: The congestion control the twin's TCP runs when the live hosts' has no twin of its own.
TWIN_CC = "reno"
#: Linux's congestion control (``[live] cc``) → the twin's (qoslab's ``tcp.cc``).
TWIN_OF = {"reno": "reno", "cubic": "cubic"}
#: Whether the twin's CUBIC exits slow start by HyStart++ (RFC 9406). Linux's CUBIC
#: runs its own HyStart (ACK trains and delay increase, ``tcp_cubic.c``), which qoslab
#: does not have; see docs/validation/live-cubic.md for both readings against live.
TWIN_HYSTART = True
#: Where Linux's ``tcp_cubic.c`` departs from RFC 9438, the twin's CUBIC follows Linux
#: (docs/tcp.md, CUBIC): ``bictcp_update`` computes the target in whole segments
#: (``target``), looks ahead by the least RTT seen (``delay_min``: ``rtt``), and its
#: Reno-friendly estimate grows at α_cubic for good (``tcp_friendliness``: ``w_est``).
TWIN_CUBIC_LINUX = {"target": "linux", "rtt": "min", "w_est": "linux"}


def twin_cc(live_cc: str) -> str:
    """The congestion control the twin runs for a live sender running ``live_cc``."""
    return TWIN_OF.get(live_cc, TWIN_CC)


_BYTES = re.compile(r"^\s*([0-9.]+)\s*([kKMG]?i?B?)\s*$")
_UNIT = {"": 1, "B": 1, "kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9}
_UNIT.update({"KiB": 1024, "MiB": 1024**2, "GiB": 1024**3})


def _bytes(v: Any, default: float) -> float:
    """A ``[live]`` buffer size (``32MB``, ``"4MiB"``, 1000000) in bytes."""
    if v is None:
        return default
    if isinstance(v, (int, float)):
        return float(v)
    m = _BYTES.match(str(v))
    if not m or m.group(2) not in _UNIT:
        return default
    return float(m.group(1)) * _UNIT[m.group(2)]


def twin_tcp(flow_tcp: Mapping[str, Any] | None, live: Mapping[str, Any]) -> dict[str, Any]:
    """The ``tcp`` table of a flow's simulated twin (see the module doc)."""
    sack = bool(live.get("sack", True))
    ts = bool(live.get("timestamps", True))
    ecn = live.get("ecn")
    if ecn is None:
        ecn = bool((flow_tcp or {}).get("ecn", False))
    buf = min(_bytes(live.get("rmem"), 32 << 20), _bytes(live.get("wmem"), 32 << 20))
    cc = twin_cc(str(live.get("cc", "reno")))
    tcp: dict[str, Any] = {
        "variant": "sack" if sack else "newreno",
        "mss": TWIN_MSS,
        "initial_window": 10,
        "delayed_ack": True,
        "delack_timeout": "40ms",
        "quickack": True,
        "adaptive_delack": True,
        "granularity": "200ms",
        "min_rto": "200ms",
        "halve": "window",
        "byte_counting": True,
        "handshake": True,
        "ecn": bool(ecn),
        "max_window": max(64, int(buf / 2 // TWIN_MSS)),
    }
    if cc == "cubic":
        tcp["cc"] = {"kind": "cubic", "hystart": TWIN_HYSTART, **TWIN_CUBIC_LINUX}
    if sack:
        tcp["recovery"] = "prr"
        tcp["sack_blocks"] = 3 if ts else 4
        tcp["rto_lost_retransmit"] = True
    return tcp


def twin_data(data: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The scenario ``data`` of a live run's simulated twin, and notes on what differs.

    Every TCP flow's ``tcp`` table is replaced by :func:`twin_tcp` (a live run ignores
    qoslab's TCP keys: the kernel's TCP runs), except in the flows ``[live] simulated``
    names (qoslab's TCP ran them live too); everything else (topology, queues,
    conditioners, flows' timing and sizes, ``[record]``) is kept.
    """
    out = copy.deepcopy(dict(data))
    live = dict(out.get("live") or {})
    notes = []
    cc = str(live.get("cc", "reno"))
    if cc not in TWIN_OF:
        notes.append(f"live ran Linux {cc}; qoslab has no {cc}: the twin runs Reno")
    simulated = set(live.get("simulated") or [])
    for f in out.get("flow") or []:
        if isinstance(f, dict) and f.get("name") in simulated:
            continue  # qoslab's own endpoints ran it live: the twin runs it as written
        if isinstance(f, dict) and not any(k in f for k in ("cbr", "pareto")):
            tcp = twin_tcp(f.get("tcp"), live)
            if "web" in f and "mss" in (f.get("tcp") or {}):
                # A web flow's object and request sizes count in packets of its `mss`
                # bytes: the twin keeps it and fetches the live run's bytes.
                tcp["mss"] = f["tcp"]["mss"]
            f["tcp"] = tcp
    return out, notes


def _tcp_scale(spec: Mapping[str, Any], payload: int) -> float:
    """The factor from a TCP flow's twin goodput to the live run's application bytes:
    Linux's payload per packet over the twin's, except for a web flow, whose goodput is
    its objects' bytes in both."""
    return 1.0 if "web" in spec else payload / TWIN_MSS


def jain(xs: list[float]) -> float:
    """Jain's fairness index (Σx)² / (n·Σx²); NaN for no flows or all zero."""
    from qoslab.fairness import jain as jain_index

    return jain_index([x for x in xs if x is not None and not math.isnan(x)])


def _udp_payload_share(size: Any) -> float:
    # The live sink reads the UDP payload (size − 28); the simulator counts packets.
    return (float(size) - 28.0) / float(size)


def twin_table(
    data: Mapping[str, Any], live_flows: pl.DataFrame, sim_flows: pl.DataFrame
) -> tuple[pl.DataFrame, dict[str, Any]]:
    """The side-by-side ``twin`` table (one row per flow and a ``(total)`` row) and the
    summary entries (``twin_*``) of a live run and its simulated twin.

    ``live_bps`` is the live sink's goodput; ``sim_bps`` the twin's, at the live run's
    application payload per packet (TCP: × 1448/1460 with timestamps; UDP, CBR or Pareto
    on/off: the datagram less 28 bytes of headers), so the two count the same bytes;
    ``diff`` = sim / live − 1, only where the two ran the same congestion control
    (``comparable``: UDP flows, and TCP flows whose live sender ran a congestion control
    the twin has, Reno or CUBIC (:data:`TWIN_OF`); ``live_cc`` is the live socket's,
    ``twin_cc`` the twin's); elsewhere it is
    null, and so is the total's unless every flow is comparable.
    Drops count after the warm-up (the datapath's and the simulator's queues);
    retransmits over the whole run (the live sender's ``TCP_INFO`` total).
    """
    live_cfg = dict(data.get("live") or {})
    default_cc = str(live_cfg.get("cc", "reno"))
    payload = LINUX_PAYLOAD[bool(live_cfg.get("timestamps", True))]
    specs = {f.get("name"): f for f in data.get("flow") or [] if isinstance(f, dict)}
    simulated = set(live_cfg.get("simulated") or [])
    sim = {r["name"]: r for r in sim_flows.iter_rows(named=True)}
    rows = []
    for r in live_flows.iter_rows(named=True):
        name = r["name"]
        s = sim.get(name)
        spec = specs.get(name, {})
        udp = spec.get("cbr") or spec.get("pareto")
        if name in simulated:
            # qoslab's own endpoints on both sides: the same bytes, the same transport.
            scale = 1.0
            kind = "simulated"
        elif udp is not None:
            scale = _udp_payload_share(udp.get("size", 1000))
            kind = "udp"
        else:
            scale = _tcp_scale(spec, payload)
            kind = "tcp"
        live_bps = float(r.get("goodput_bps") or 0.0)
        sim_bps = float(s["goodput_bps"]) * scale if s is not None else float("nan")
        live_cc = "" if kind == "udp" else str(r.get("linux_cc") or default_cc)
        tw_cc = "" if kind == "udp" else twin_cc(default_cc)
        if kind == "simulated":
            live_cc = tw_cc = "qoslab"
        comparable = live_cc == tw_cc
        rows.append(
            {
                "flow": name,
                "kind": kind,
                "live_cc": live_cc,
                "twin_cc": tw_cc,
                "comparable": comparable,
                "live_bps": live_bps,
                "sim_bps": sim_bps,
                "diff": _diff(sim_bps, live_bps) if comparable else None,
                "live_drops": int(r.get("drops") or 0),
                "sim_drops": int(s["drops"]) if s is not None else None,
                "live_retransmits": r.get("retransmits"),
                # TCP_INFO's total_retrans counts the whole connection: so does this.
                "sim_retransmits": (
                    s.get("retransmits_whole_run", s.get("retransmits")) if s is not None else None
                ),
            }
        )
    lt = sum(x["live_bps"] for x in rows)
    st = sum(x["sim_bps"] for x in rows)
    all_comparable = all(x["comparable"] for x in rows)
    rows.append(
        {
            "flow": "(total)",
            "kind": "",
            "live_cc": "",
            "twin_cc": "",
            "comparable": all_comparable,
            "live_bps": lt,
            "sim_bps": st,
            "diff": _diff(st, lt) if all_comparable else None,
            "live_drops": sum(x["live_drops"] for x in rows),
            "sim_drops": sum(x["sim_drops"] or 0 for x in rows),
            "live_retransmits": None,
            "sim_retransmits": None,
        }
    )
    for x in rows:
        for k in ("live_retransmits", "sim_retransmits"):
            x[k] = None if x[k] is None else int(x[k])
    table = pl.DataFrame(
        rows,
        schema={
            "flow": pl.String,
            "kind": pl.String,
            "live_cc": pl.String,
            "twin_cc": pl.String,
            "comparable": pl.Boolean,
            "live_bps": pl.Float64,
            "sim_bps": pl.Float64,
            "diff": pl.Float64,
            "live_drops": pl.Int64,
            "sim_drops": pl.Int64,
            "live_retransmits": pl.Int64,
            "sim_retransmits": pl.Int64,
        },
    )
    per = rows[:-1]
    summary = {
        "twin_total_live_bps": lt,
        "twin_total_sim_bps": st,
        "twin_total_diff": _diff(st, lt) if all_comparable else None,
        "twin_comparable": all_comparable,
        "twin_jain_live": jain([x["live_bps"] for x in per]),
        "twin_jain_sim": jain([x["sim_bps"] for x in per]),
    }
    return table, summary


def _diff(sim: float, live: float) -> float:
    return sim / live - 1 if live > 0 else float("nan")


def _diff_text(v: Any) -> str:
    if v is None:
        return "not comparable"
    return "nan" if math.isnan(v) else f"{v:+.1%}"


def twin_text(table: pl.DataFrame, width: int = 80) -> str:
    """The ``twin`` table as text no wider than ``width`` columns, the difference next to
    the two goodputs: ``diff`` as a percentage, or "not comparable" where the live and
    simulated senders ran different congestion controls."""
    head = ("flow", "live Mb/s", "twin Mb/s", "diff", "drops live/twin", "retx live/twin")
    fixed = 9 + 9 + 14 + 15 + 14 + 5  # the other columns and the spaces between
    name_w = max(4, min(max((len(f) for f in table["flow"]), default=4), width - fixed))

    def cut(name: str) -> str:
        return name if len(name) <= name_w else name[: name_w - 1] + "…"

    def pair(a: Any, b: Any) -> str:
        return f"{'-' if a is None else a}/{'-' if b is None else b}"

    lines = [
        f"{head[0]:<{name_w}} {head[1]:>9} {head[2]:>9} {head[3]:>14} {head[4]:>15} {head[5]:>14}"
    ]
    for r in table.iter_rows(named=True):
        lines.append(
            f"{cut(r['flow']):<{name_w}} {r['live_bps'] / 1e6:>9.3f} {r['sim_bps'] / 1e6:>9.3f} "
            f"{_diff_text(r['diff']):>14} {pair(r['live_drops'], r['sim_drops']):>15} "
            f"{pair(r['live_retransmits'], r['sim_retransmits']):>14}"
        )
    return "\n".join(lines)


def _interval_rates(series: pl.DataFrame, names: dict[int, str], scale: dict[str, float]):
    """(flow name, t, b/s over the interval ending at t) from a cumulative series."""
    cum = "cum_bytes" if "cum_bytes" in series.columns else "goodput_bytes"
    out = []
    for (f,), g in series.sort("t").group_by("flow", maintain_order=True):
        name = names.get(f, str(f)) if not isinstance(f, str) else f
        prev_t, prev_b = None, None
        for t, b in zip(g["t"].to_list(), g[cum].to_list(), strict=True):
            if prev_t is not None and t > prev_t:
                out.append((name, t, (b - prev_b) * 8 / (t - prev_t) * scale.get(name, 1.0)))
            prev_t, prev_b = t, b
    return out


def twin_series(
    data: Mapping[str, Any],
    live_flows: pl.DataFrame,
    live_series: pl.DataFrame,
    sim_flows: pl.DataFrame,
    sim_series: pl.DataFrame,
) -> pl.DataFrame:
    """Goodput per flow and recording interval of a live run and its twin side by side
    (the ``twin_series`` table): ``flow`` (name), ``t`` (end of the interval [s]),
    ``live_bps`` and ``sim_bps`` (the twin's at the live run's payload per packet, as in
    :func:`twin_table`), null where one of the two has no sample at ``t``."""
    payload = LINUX_PAYLOAD[bool(dict(data.get("live") or {}).get("timestamps", True))]
    specs = {f.get("name"): f for f in data.get("flow") or [] if isinstance(f, dict)}

    def names(flows: pl.DataFrame) -> dict[int, str]:
        if {"flow", "name"} <= set(flows.columns):
            return dict(zip(flows["flow"].to_list(), flows["name"].to_list(), strict=True))
        return {}

    simulated = set(dict(data.get("live") or {}).get("simulated") or [])
    sim_scale = {}
    for name, spec in specs.items():
        udp = spec.get("cbr") or spec.get("pareto")
        sim_scale[name] = (
            1.0
            if name in simulated
            else _udp_payload_share(udp.get("size", 1000))
            if udp is not None
            else _tcp_scale(spec, payload)
        )
    schema = {"flow": pl.String, "t": pl.Float64}
    live = pl.DataFrame(
        _interval_rates(live_series, names(live_flows), {}),
        schema={**schema, "live_bps": pl.Float64},
        orient="row",
    )
    sim = pl.DataFrame(
        _interval_rates(sim_series, names(sim_flows), sim_scale),
        schema={**schema, "sim_bps": pl.Float64},
        orient="row",
    )
    # Both sample at record.interval from 0: round the times so they meet.
    live = live.with_columns(pl.col("t").round(6))
    sim = sim.with_columns(pl.col("t").round(6))
    return live.join(sim, on=["flow", "t"], how="full", coalesce=True).sort(["flow", "t"])


def twin_figure(series: pl.DataFrame, title: str = "") -> Any:
    """Goodput per flow over time, live (solid) against its twin (dashed), one panel per
    flow (at most 8: the busiest live flows); ``None`` without samples."""
    if series.is_empty():
        return None
    from qoslab.plot import new_figure

    totals = (
        series.group_by("flow")
        .agg(pl.col("live_bps").fill_null(0).sum())
        .sort(["live_bps", "flow"], descending=[True, False])
    )
    flows = totals["flow"].to_list()[:8]
    fig, axes = new_figure(7.0, 1.8 + 1.6 * len(flows), len(flows), 1, sharex=True)
    axes = list(np.atleast_1d(axes))
    for ax, name in zip(axes, sorted(flows), strict=True):
        g = series.filter(pl.col("flow") == name).sort("t")
        ax.step(g["t"], g["live_bps"] / 1e6, where="pre", label="live")
        ax.step(g["t"], g["sim_bps"] / 1e6, where="pre", ls="--", label="twin")
        ax.set_ylabel(f"{name}\n[Mb/s]")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    axes[0].legend(loc="lower right")
    axes[-1].set_xlabel("time [s] (end of interval)")
    shown = "" if len(flows) == series["flow"].n_unique() else f" (the {len(flows)} busiest)"
    fig.suptitle((title or "Goodput per flow: live against its simulated twin") + shown)
    return fig


def _pcap_records(path: Any) -> Any:
    """(time [s], bytes) of each record of a raw-IP pcap (µs or ns stamps)."""
    with open(path, "rb") as f:
        head = f.read(24)
        ns = struct.unpack("<I", head[:4])[0] == 0xA1B23C4D
        while True:
            h = f.read(16)
            if len(h) < 16:
                return
            sec, frac, incl, _ = struct.unpack("<IIII", h)
            yield sec + frac * (1e-9 if ns else 1e-6), f.read(incl)


def pcap_goodput(path: Any, start: float, end: float) -> dict[tuple[int, int], float]:
    """Goodput [b/s] of each TCP connection in a live run's ``datapath.pcap``, keyed by
    (source port, destination port): the payload bytes that became in order at the
    receiver's TUN between the stamps ``start`` and ``end`` (the datapath's scheduled
    delivery times, run time), over ``end − start``.

    This is what the simulator counts (bytes made in order at the receiver after the
    warm-up), measured on the wire, so it does not depend on when the live sink's
    application read them or when its agent took the warm-up snapshot.
    """
    conns: dict[tuple[int, int], dict[str, Any]] = {}
    for t, d in _pcap_records(path):
        if len(d) < 20 or d[0] >> 4 != 4 or d[9] != 6:
            continue
        ihl = (d[0] & 15) * 4
        if len(d) < ihl + 14:
            continue
        total = struct.unpack("!H", d[2:4])[0]
        sport, dport, seq = struct.unpack("!HHI", d[ihl : ihl + 8])
        syn = bool(d[ihl + 13] & 2)
        payload = total - ihl - (d[ihl + 12] >> 4) * 4
        c = conns.get((sport, dport))
        if c is None:
            if payload <= 0 and not syn:
                continue  # a pure ACK: not a data direction
            c = conns[(sport, dport)] = {
                "isn": seq + (1 if syn else 0),
                "nxt": 0,
                "ooo": {},
                "at_start": 0,
                "at_end": 0,
                "data": False,
            }
        if payload > 0:
            c["data"] = True
            lo = (seq - c["isn"]) % 2**32
            hi = lo + payload
            if lo <= c["nxt"] < hi:
                c["nxt"] = hi
                ooo = c["ooo"]
                while True:
                    joined = [k for k in ooo if k <= c["nxt"]]
                    if not joined:
                        break
                    c["nxt"] = max(c["nxt"], *(ooo.pop(k) for k in joined))
            elif lo > c["nxt"]:
                c["ooo"][lo] = max(hi, c["ooo"].get(lo, 0))
        if t <= start:
            c["at_start"] = c["nxt"]
        if t <= end:
            c["at_end"] = c["nxt"]
    return {
        k: (c["at_end"] - c["at_start"]) * 8 / (end - start) for k, c in conns.items() if c["data"]
    }

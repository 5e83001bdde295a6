"""Live mode: real Linux TCP/UDP in network namespaces through qoslab's own
links, queues and conditioners. Needs root and /dev/net/tun (CI has both); skipped with
the reason elsewhere. Each run is a few seconds at 10 Mb/s; one datapath at a time."""

from __future__ import annotations

import itertools
import math
import os
import signal
import subprocess
import sys
import time

import polars as pl
import pytest

from conftest import needs_live
from qoslab import _core
from qoslab.api import live

pytestmark = needs_live


def _path(tmp_path, text: str):
    p = tmp_path / "s.toml"
    p.write_text(text)
    return p


def chain(bottleneck: str, queue: str, flows: str, *, duration="4s", warmup="1s", extra=""):
    """a → r (100 Mb/s, 1 ms) → b (`bottleneck`, 4 ms, `queue`): 10 ms base RTT."""
    return f"""
name = "live-test"
duration = "{duration}"
warmup = "{warmup}"
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
rate = "100Mbps"
delay = "1ms"
[[link]]
a = "r"
b = "b"
rate = "{bottleneck}"
delay = "4ms"
queue = {queue}
{flows}
{extra}
"""


UDP = """
[[flow]]
name = "u"
from = "a"
to = "b"
cbr = {{ rate = "{rate}", size = 1000 }}
{stop}
"""


def _ours() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [ln.split()[0] for ln in out.splitlines() if ln.startswith("qlab")]


def test_udp_overload_is_served_at_the_link_rate(tmp_path):
    r = live(
        _path(
            tmp_path,
            chain(
                "10Mbps", '{ kind = "droptail", limit = 50 }', UDP.format(rate="12Mbps", stop="")
            ),
        )
    )
    f = r.flows.row(0, named=True)
    # The sink counts UDP payload (972 of every 1000 bytes on the wire): back to IP level.
    served = f["goodput_bps"] * 1000 / 972
    assert abs(served - 10e6) / 10e6 < 0.002, served
    # Offered 12 Mb/s: a sixth is dropped at the bottleneck queue, nowhere else.
    drops = r.drops
    assert drops["place"].to_list() == ["r->b"] and drops["cause"].to_list() == ["overflow"]
    assert r.summary["live_ring_lost"] == 0
    assert r.table("live_hosts")["rejected"].sum() == 0
    t = r.table("live_timing")
    assert "(all events)" in t["place"].to_list()
    assert isinstance(r.summary["live_timing_ok"], bool)


def test_drop_tail_drops_are_offered_minus_served(tmp_path):
    # The sender stops at 2.5 s and the queue drains before the end: every packet the
    # datapath took in was delivered or dropped, and the real receiver got the delivered.
    stop = 'stop = "2.5s"'
    r = live(
        _path(
            tmp_path,
            chain(
                "10Mbps",
                '{ kind = "droptail", limit = 20 }',
                UDP.format(rate="14Mbps", stop=stop),
                duration="3s",
                warmup="0s",
            ),
        )
    )
    f = r.flows.row(0, named=True)
    assert f["drops"] > 100
    assert f["pkts_sent"] - f["pkts_delivered"] == f["drops"]
    q = r.drops.filter(pl.col("place") == "r->b")
    assert q["packets"].sum() == f["drops"]
    # The kernel's socket saw exactly the delivered datagrams (972 payload bytes each).
    assert f["goodput_bytes"] == 972 * f["pkts_delivered"]


def test_ping_min_rtt_is_the_configured_rtt(tmp_path):
    extra = '[live]\nping = [{ from = "a", to = "b", count = 30, interval = "20ms" }]'
    r = live(
        _path(
            tmp_path,
            chain(
                "10Mbps",
                '{ kind = "droptail", limit = 50 }',
                "",
                duration="1s",
                warmup="0s",
                extra=extra,
            ),
        )
    )
    rtt = r.table("live_ping")["rtt"].drop_nulls().drop_nans()
    assert len(rtt) >= 28
    # 2 × (1 + 4) ms of propagation; 44-byte packets add ~80 µs of serialisation. Each
    # way is one datapath event and one TUN write, each as late as the run measured
    # (live_timing, p99): a loaded machine delays the pings by its own measured amount.
    t = r.table("live_timing")
    late = {p: v for p, v in zip(t["place"], t["p99_us"], strict=True)}
    ways = [late[p] for p in ("(all events)", "(tun writes)")]
    slack = 2e-6 * sum(v for v in ways if not math.isnan(v))  # NaN: no TUN writer
    assert 0.010 <= rtt.min() <= 0.0105 + slack, (rtt.min(), late)


RED_TCP = """
[[flow]]
name = "t"
from = "a"
to = "b"
tcp = {{ ecn = {ecn} }}
"""


def test_red_with_ecn_marks_ce_and_the_linux_receiver_echoes_ece(tmp_path):
    red = '{ kind = "red", limit = 60, min_th = 3, max_th = 15, max_p = 0.1, ecn = true }'
    r = live(
        _path(
            tmp_path, chain("10Mbps", red, RED_TCP.format(ecn="true"), duration="3s", warmup="0.5s")
        )
    )
    f = r.flows.row(0, named=True)
    assert f["ce_delivered"] > 0 and f["ece_acks"] > 0, f
    # The kernel's minimum RTT (tcpi_min_rtt) is the 10 ms of propagation plus at most a
    # packet's serialisation; its smoothed RTT holds the RED queue on top.
    assert 0.010 <= f["min_rtt"] <= 0.0115 and f["min_rtt"] < f["srtt"], f
    sysctl = r.table("live_sysctl").filter(pl.col("key") == "net.ipv4.tcp_ecn")
    assert set(sysctl["value"]) == {"1"}
    assert f["goodput_bps"] > 5e6  # small RED thresholds at a 10 ms RTT leave some idle
    # Without ECN on the hosts the same queue drops instead, and nothing is echoed.
    r2 = live(
        _path(
            tmp_path,
            chain("10Mbps", red, RED_TCP.format(ecn="false"), duration="3s", warmup="0.5s"),
        )
    )
    g = r2.flows.row(0, named=True)
    assert g["ce_delivered"] == 0 and g["ece_acks"] == 0
    assert g["drops"] > 0


def test_srtcm_colours_stay_within_the_token_bucket_bounds(tmp_path):
    cir, cbs, ebs = 2e6, 10_000, 20_000
    extra = f"""
[[conditioner]]
at = "r"
stages = [ {{ kind = "srtcm", cir = "2Mbps", cbs = {cbs}, ebs = {ebs} }} ]
[live]
cc = "cubic"
"""
    r = live(
        _path(
            tmp_path,
            chain(
                "10Mbps",
                '{ kind = "droptail", limit = 100 }',
                RED_TCP.format(ecn="false"),
                duration="3s",
                warmup="0s",
                extra=extra,
            ),
        )
    )
    c = r.colours
    assert not c.is_empty()
    row = c.filter(pl.col("flow") == "t") if c["flow"].dtype == pl.String else c
    green = int(row["green_bytes"].sum())
    yellow = int(row["yellow_bytes"].sum())
    red = int(row["red_bytes"].sum())
    elapsed = 3.0
    # RFC 2697: green ≤ CBS + CIR·T; green + yellow ≤ CBS + EBS + CIR·T; TCP at ~10 Mb/s
    # overruns 2 Mb/s, so red is most of it and green is near its bound.
    assert green <= cbs + cir / 8 * elapsed
    assert green + yellow <= cbs + ebs + cir / 8 * elapsed
    assert green > 0.5 * cir / 8 * elapsed
    assert red > green
    # The sender ran the congestion control asked for (a socket option where the
    # namespace may not default to it), and the table says how it was set.
    assert r.flows["linux_cc"].to_list() == ["cubic"]
    cc = r.table("live_sysctl").filter(pl.col("key") == "net.ipv4.tcp_congestion_control")
    assert all("cubic" in v for v in cc["value"])


def test_cleanup_after_sigkill_and_sigterm(tmp_path):
    scen = _path(
        tmp_path,
        chain(
            "10Mbps",
            '{ kind = "droptail", limit = 50 }',
            UDP.format(rate="2Mbps", stop=""),
            duration="30s",
            warmup="0s",
        ),
    )
    # Namespaces that are not ours (another name; our pattern with a live owner).
    foreign = ["qoslab-foreign-test", "qlab1-0"]
    for ns in foreign:
        subprocess.run(["ip", "netns", "add", ns], check=True)
    try:

        def start(out):
            p = subprocess.Popen(
                [sys.executable, "-m", "qoslab", "live", str(scen), "-o", str(out)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            prefix = f"qlab{p.pid}-"
            for _ in range(200):
                if len([n for n in _ours() if n.startswith(prefix)]) == 2:
                    break
                time.sleep(0.1)
            time.sleep(1.0)  # agents running
            return p, prefix

        p, prefix = start(tmp_path / "o1")
        p.send_signal(signal.SIGKILL)
        p.wait()
        left = [n for n in _ours() if n.startswith(prefix)]
        assert len(left) == 2  # one per host (a, b); a SIGKILLed run cannot clean up …
        removed = _core.live_sweep()  # … the next start does
        assert sorted(removed) == sorted(left)
        assert not [n for n in _ours() if n.startswith(prefix)]
        # SIGTERM: the run removes what it made itself.
        p, prefix = start(tmp_path / "o2")
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=20)
        assert not [n for n in _ours() if n.startswith(prefix)]
        # No agent survives either run.
        ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
        assert str(scen) not in ps and "agent-" not in ps
        assert set(foreign) <= set(_ours()) | {"qoslab-foreign-test"}
        listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        for ns in foreign:
            assert ns in listed
    finally:
        for ns in foreign:
            subprocess.run(["ip", "netns", "del", ns])


def test_refuses_what_cannot_be_live(tmp_path):
    flows = (
        '[[flow]]\nname = "m"\nfrom = "a"\nto = "b"\ntcp = { cc = { kind = "multcp", w = 4 } }\n'
    )
    from qoslab import ScenarioError

    with pytest.raises(ScenarioError, match=r"flow\[0\]\.tcp\.cc.*cannot run live.*MulTCP"):
        live(_path(tmp_path, chain("10Mbps", '{ kind = "droptail" }', flows)))


def test_cli_without_root_exits_2(tmp_path, monkeypatch, capsys):
    # As a user without privileges, `qoslab live` says what is missing and exits 2
    # before touching anything.
    from qoslab.cli import main

    scen = _path(tmp_path, chain("10Mbps", '{ kind = "droptail" }', ""))
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    before = _ours()
    with pytest.raises(SystemExit) as e:
        main(["live", str(scen)])
    assert e.value.code == 2
    assert "live mode needs root" in capsys.readouterr().err
    assert _ours() == before


def test_twin_runs_the_scenario_in_the_simulator_side_by_side(tmp_path):
    # 10 Mb/s, 10 ms RTT, a queue above the BDP: Linux Reno and its twin both fill the link.
    scen = chain("10Mbps", '{ kind = "droptail", limit = 30 }', RED_TCP.format(ecn="false"))
    r = live(_path(tmp_path, scen), twin=True)
    t = r.table("twin")
    assert t["flow"].to_list() == ["t", "(total)"]
    row = t.row(0, named=True)
    assert row["live_bps"] == r.flows["goodput_bps"][0]
    # The twin ran qoslab's Linux-like TCP, and its goodput is counted at Linux's 1448
    # payload bytes per 1500-byte packet.
    tcp = r.twin.scenario["flow"][0]["tcp"]
    assert (tcp["variant"], tcp["recovery"], tcp["initial_window"], tcp["mss"]) == (
        "sack",
        "prr",
        10,
        1460,
    )
    assert row["sim_bps"] == pytest.approx(r.twin.flows["goodput_bps"][0] * 1448 / 1460)
    assert abs(row["diff"]) < 0.05, row
    assert r.summary["twin_total_diff"] == pytest.approx(row["diff"])
    assert r.summary["twin_jain_live"] == pytest.approx(1.0)


def _pcap_records(path):
    import struct

    data = path.read_bytes()
    magic, _, _, _, _, snaplen, linktype = struct.unpack("<IHHiIII", data[:24])
    recs, off = [], 24
    while off < len(data):
        _, _, incl, orig = struct.unpack("<IIII", data[off : off + 16])
        recs.append((data[off + 16 : off + 16 + incl], orig))
        off += 16 + incl
    return magic, snaplen, linktype, recs


def _ip_checksum_ok(h: bytes) -> bool:
    ihl = (h[0] & 0x0F) * 4
    s = sum(int.from_bytes(h[i : i + 2], "big") for i in range(0, ihl, 2))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s == 0xFFFF


def test_pcap_from_the_datapath_holds_the_delivered_bytes(tmp_path):
    # RED with ECN marks CE in the datapath: the capture shows the marks as delivered,
    # with the IPv4 header checksum fixed, one record per packet written to a TUN.
    red = '{ kind = "red", limit = 60, min_th = 3, max_th = 15, max_p = 0.1, ecn = true }'
    r = live(
        _path(
            tmp_path,
            chain(
                "10Mbps",
                red,
                RED_TCP.format(ecn="true"),
                duration="2s",
                warmup="0s",
                extra="[live]\npcap = true\npcap_snaplen = 100",
            ),
        )
    )
    f = r.flows.row(0, named=True)
    pcap = r.pcap_dir / "datapath.pcap"
    magic, snaplen, linktype, recs = _pcap_records(pcap)
    assert (magic, snaplen, linktype) == (0xA1B23C4D, 100, 101)  # ns stamps, raw IP
    written = int(r.table("live_hosts")["tun_written"].sum())
    assert len(recs) == written == r.summary["live_pcap_packets"]
    assert all(len(b) <= 100 and b[0] == 0x45 for b, _ in recs)
    assert max(orig for _, orig in recs) == 1500  # full-size segments, cut to the snaplen
    ce = [b for b, _ in recs if b[1] & 3 == 3]
    assert len(ce) == f["ce_delivered"] > 0
    assert all(_ip_checksum_ok(b[:20]) for b, _ in recs)
    # Goodput counted on the wire (bytes made in order at the receiver's TUN) is what the
    # sink read, give or take what it had not read yet when the run stopped.
    from qoslab.twin import pcap_goodput

    wire = pcap_goodput(pcap, 0.0, 2.0)
    assert list(wire) == [(1024, 5001)]  # the data direction only
    assert wire[(1024, 5001)] == pytest.approx(f["goodput_bps"], rel=0.03)
    saved = r.save(tmp_path / "run")
    assert (saved / "pcap" / "datapath.pcap").stat().st_size == pcap.stat().st_size


def test_pareto_on_off_udp_sends_in_bursts_at_its_rate(tmp_path):
    # 8 Mb/s while on, Pareto on and off periods of mean 0.3 s: the sink sees bursts at
    # the rate and silences, nothing is dropped (8 < 10 Mb/s), and the duty cycle is
    # neither 0 nor 1.
    flows = """
[[flow]]
name = "p"
from = "a"
to = "b"
pareto = { rate = "8Mbps", mean_on = "300ms", mean_off = "300ms", size = 1000 }
"""
    extra = '[record]\ninterval = "100ms"'
    r = live(
        _path(
            tmp_path,
            chain(
                "10Mbps",
                '{ kind = "droptail", limit = 50 }',
                flows,
                duration="6s",
                warmup="0s",
                extra=extra,
            ),
        )
    )
    f = r.flows.row(0, named=True)
    assert f["kind"] != "tcp"
    # Nothing dropped; at most the packets in flight at the end (5 ms, 1 ms apart) missing.
    assert f["drops"] == 0 and 0 <= f["pkts_sent"] - f["pkts_delivered"] <= 10
    assert f["pkts_delivered"] > 0
    share = f["goodput_bps"] * 1000 / 972 / 8e6
    assert 0.1 < share < 0.9, share
    # `series` holds the bytes the sink had read by each 100 ms mark.
    cum = r.series.sort("t")["goodput_bytes"].to_list()
    rates = [(b - a) * 8 / 0.1 for a, b in itertools.pairwise(cum)]
    assert min(rates) < 0.1 * 8e6 * 972 / 1000  # an off interval
    assert max(rates) > 0.8 * 8e6 * 972 / 1000  # an on interval at the rate

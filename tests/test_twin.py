"""The simulated twin of a live run (qoslab.twin): its TCP settings and the side-by-side
table, without root (the live run itself is tested in test_live.py)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from qoslab import check
from qoslab.twin import TWIN_HYSTART, jain, pcap_goodput, twin_data, twin_table, twin_tcp

SCEN = {
    "name": "twin-unit",
    "duration": "2s",
    "node": [{"name": "a"}, {"name": "r", "kind": "router"}, {"name": "b"}],
    "link": [
        {"a": "a", "b": "r", "rate": "100Mbps", "delay": "1ms"},
        {"a": "r", "b": "b", "rate": "10Mbps", "delay": "4ms"},
    ],
    "flow": [
        {"name": "t", "from": "a", "to": "b", "tcp": {"variant": "newreno", "ecn": True}},
        {"name": "u", "from": "a", "to": "b", "cbr": {"rate": "1Mbps", "size": 500}},
    ],
}


def test_twin_tcp_is_linux_like_and_valid():
    data, notes = twin_data(SCEN)
    assert notes == []
    tcp = data["flow"][0]["tcp"]
    assert tcp["variant"] == "sack" and tcp["recovery"] == "prr"
    assert tcp["initial_window"] == 10 and tcp["delayed_ack"] and tcp["delack_timeout"] == "40ms"
    assert tcp["ecn"] is True and tcp["sack_blocks"] == 3 and tcp["halve"] == "window"
    assert tcp["byte_counting"] is True
    # Linux's receiver: quick-ACK mode and the adaptive delayed-ACK timeout; the RTO
    # ssthresh rule stays off (docs/live.md says why).
    assert tcp["quickack"] is True and tcp["adaptive_delack"] is True
    assert "rto_keeps_ssthresh" not in tcp
    # Linux's fast recovery when a retransmission after a timeout is lost (SACK only).
    assert tcp["rto_lost_retransmit"] is True
    # Half of the default 32 MiB buffers in 1460-byte segments.
    assert tcp["max_window"] == (16 << 20) // 1460
    assert "tcp" not in data["flow"][1]  # the CBR flow is left alone
    assert SCEN["flow"][0]["tcp"]["variant"] == "newreno"  # the input is not modified
    check(data)  # the engine accepts every key


def _loss_period(byte_counting: bool) -> float:
    """Mean time between the twin's recoveries, one flow at 10 Mb/s, 40 ms, 25 packets."""
    from qoslab.api import run

    scen = {
        "name": "twin-sawtooth",
        "duration": "25s",
        "node": [{"name": "a"}, {"name": "r", "kind": "router"}, {"name": "b"}],
        "link": [
            {"a": "a", "b": "r", "rate": "100Mbps", "delay": "1ms"},
            {
                "a": "r",
                "b": "b",
                "rate": "10Mbps",
                "delay": "19ms",
                "queue": {"kind": "droptail", "limit": 25},
            },
        ],
        "flow": [{"name": "t", "from": "a", "to": "b", "tcp": {}}],
        "record": {"interval": "10ms", "traces": ["t"]},
    }
    data, _ = twin_data(scen)
    data["flow"][0]["tcp"]["byte_counting"] = byte_counting
    tr = run(data, seed=1).table("traces").filter(pl.col("t") >= 5)
    st = tr["state"].to_list()
    ts = tr["t"].to_list()
    starts = [t for t, a, b in zip(ts[1:], st, st[1:], strict=False) if b == "recovery" != a]
    assert len(starts) >= 3
    return (starts[-1] - starts[0]) / (len(starts) - 1)


def test_twin_sawtooth_grows_one_segment_per_rtt_like_linux():
    # Linux Reno counts the segments a delayed ACK acknowledges: +1 segment per RTT, a
    # window from ~30 to ~60 segments in about 30 RTTs of 40-60 ms (live: a loss every
    # 1.8 s). Counting one increment per ACK (byte_counting off) halves the growth and
    # doubles the period (3.4 s).
    with_abc = _loss_period(True)
    assert 1.4 < with_abc < 2.2, with_abc
    assert _loss_period(False) > 1.6 * with_abc


def test_twin_follows_the_live_table():
    t = twin_tcp({"ecn": True}, {"sack": False, "timestamps": False, "ecn": False, "rmem": "4MB"})
    assert t["variant"] == "newreno" and "recovery" not in t and t["ecn"] is False
    assert t["max_window"] == 2_000_000 // 1460
    assert twin_tcp(None, {"wmem": "1MiB"})["max_window"] == (1 << 20) // 2 // 1460
    _, notes = twin_data({**SCEN, "live": {"cc": "bbr"}})
    assert notes and "bbr" in notes[0]
    # Linux CUBIC gets qoslab's CUBIC (no note); Reno stays Reno.
    d, notes = twin_data({**SCEN, "live": {"cc": "cubic"}})
    assert not notes and all(f["tcp"]["cc"]["kind"] == "cubic" for f in d["flow"] if "tcp" in f)
    # With Linux's departures from RFC 9438 (tcp_cubic.c's bictcp_update).
    assert twin_tcp(None, {"cc": "cubic"})["cc"] == {
        "kind": "cubic",
        "hystart": TWIN_HYSTART,
        "target": "linux",
        "rtt": "min",
        "w_est": "linux",
    }
    assert "cc" not in twin_tcp(None, {"cc": "reno"}) and "cc" not in twin_tcp(None, {})


def test_twin_table_counts_the_same_bytes():
    live = pl.DataFrame(
        {
            "name": ["t", "u"],
            "goodput_bps": [8e6, 0.9e6],
            "drops": [3, 0],
            "retransmits": [5, 0],
        }
    )
    sim = pl.DataFrame(
        {
            "name": ["t", "u"],
            "goodput_bps": [8.5e6, 1e6],
            "drops": [2, 0],
            "retransmits": [1, 0],
            "retransmits_whole_run": [4, 0],
        }
    )
    table, s = twin_table(SCEN, live, sim)
    t, u, tot = table.iter_rows(named=True)
    # TCP at Linux's 1448 payload bytes (timestamps on by default) per 1460 of the twin.
    assert t["sim_bps"] == pytest.approx(8.5e6 * 1448 / 1460)
    assert t["diff"] == pytest.approx(8.5e6 * 1448 / 1460 / 8e6 - 1)
    assert t["sim_retransmits"] == 4  # whole run, like TCP_INFO's total
    # UDP: the live sink reads size − 28 bytes of each datagram.
    assert u["sim_bps"] == pytest.approx(1e6 * 472 / 500)
    assert tot["flow"] == "(total)" and tot["live_drops"] == 3 and tot["sim_drops"] == 2
    assert tot["live_bps"] == pytest.approx(8.9e6)
    assert s["twin_total_diff"] == pytest.approx(tot["sim_bps"] / 8.9e6 - 1)
    assert s["twin_jain_live"] == pytest.approx(jain([8e6, 0.9e6]))
    _, s2 = twin_table({**SCEN, "live": {"timestamps": False}}, live, sim)
    assert s2["twin_total_sim_bps"] == pytest.approx(8.5e6 + 1e6 * 472 / 500)
    # A Pareto on/off flow is UDP too.
    onoff = {"name": "u", "from": "a", "to": "b", "pareto": {"rate": "1Mbps", "size": 200}}
    t3, _ = twin_table({**SCEN, "flow": [SCEN["flow"][0], onoff]}, live, sim)
    assert t3.row(1, named=True)["sim_bps"] == pytest.approx(1e6 * 172 / 200)
    assert t3.row(1, named=True)["kind"] == "udp"


def test_a_simulated_flow_runs_as_written_in_the_twin_and_is_comparable():
    # `[live] simulated`: qoslab's pTCP ran live too; the twin keeps its tcp table and
    # counts its goodput in the same bytes.
    pt = {"name": "p", "from": "a", "to": "b", "tcp": {"variant": "sack"}, "ptcp": {"pipes": 4}}
    data = {**SCEN, "flow": [SCEN["flow"][0], pt], "live": {"simulated": ["p"]}}
    tdata, _ = twin_data(data)
    assert tdata["flow"][1] == pt and tdata["flow"][0]["tcp"] != SCEN["flow"][0].get("tcp")
    live = pl.DataFrame({"name": ["t", "p"], "goodput_bps": [4e5, 1.6e6], "drops": [1, 2]})
    sim = pl.DataFrame({"name": ["t", "p"], "goodput_bps": [3e5, 1.5e6], "drops": [1, 2]})
    table, s = twin_table(data, live, sim)
    p = table.row(1, named=True)
    assert (p["kind"], p["live_cc"], p["twin_cc"], p["comparable"]) == (
        "simulated",
        "qoslab",
        "qoslab",
        True,
    )
    assert p["sim_bps"] == 1.5e6 and p["diff"] == pytest.approx(1.5 / 1.6 - 1)
    assert s["twin_comparable"]


def test_a_web_flows_twin_fetches_the_live_runs_bytes():
    """A web flow keeps its own mss in the twin (its sizes count in it) and its goodput,
    object bytes in both runs, is compared as it is."""
    web = {
        "name": "t",
        "from": "a",
        "to": "b",
        "tcp": {"mss": 1000},
        "web": {"object_size": {"kind": "constant", "value": 4}},
    }
    data, _ = twin_data({**SCEN, "flow": [web]})
    assert data["flow"][0]["tcp"]["mss"] == 1000 and data["flow"][0]["tcp"]["initial_window"] == 10
    # Without its own mss it takes the twin's (qoslab's default is the same 1460).
    bare = {k: v for k, v in web.items() if k != "tcp"}
    assert twin_data({**SCEN, "flow": [bare]})[0]["flow"][0]["tcp"]["mss"] == 1460
    live = pl.DataFrame({"name": ["t"], "goodput_bps": [4e5], "drops": [0], "retransmits": [0]})
    sim = pl.DataFrame({"name": ["t"], "goodput_bps": [5e5], "drops": [0], "retransmits": [0]})
    t, _ = twin_table({**SCEN, "flow": [web]}, live, sim)
    assert t.row(0, named=True)["sim_bps"] == 5e5


def test_jain():
    assert jain([1.0, 1.0, 1.0]) == pytest.approx(1.0)
    assert jain([1.0, 0.0]) == pytest.approx(0.5)
    assert jain([]) != jain([])  # NaN


def _tcp_pkt(seq: int, payload: int, syn: bool = False) -> bytes:
    import struct

    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 40 + payload, 0, 0, 64, 6, 0, bytes(4), bytes(4))
    tcp = struct.pack("!HHIIBBHHH", 1024, 5001, seq, 0, 5 << 4, 2 if syn else 16, 0, 0, 0)
    return ip + tcp + bytes(payload)


def test_pcap_goodput_counts_bytes_made_in_order_in_the_window(tmp_path):
    import struct

    # SYN at 0.1 s (ISN 999: data starts at 1000), then segments of 100 bytes:
    # 0 at 1 s, 200 at 2 s (a hole at 100), 100 at 3 s (fills it: 300 in order),
    # 300 at 5 s (after the window), and a retransmission of 0 at 2.5 s (nothing new).
    pk = [(0.1, _tcp_pkt(999, 0, syn=True)), (1.0, _tcp_pkt(1000, 100))]
    pk += [(2.0, _tcp_pkt(1200, 100)), (2.5, _tcp_pkt(1000, 100)), (3.0, _tcp_pkt(1100, 100))]
    pk += [(5.0, _tcp_pkt(1300, 100))]
    path = tmp_path / "d.pcap"
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 128, 101))
        for t, b in pk:
            f.write(struct.pack("<IIII", int(t), round((t % 1) * 1e9), len(b), len(b)) + b)
    # In order by 1.5 s: 100 bytes; by 4 s: 300. The out-of-order segment at 2 s counts
    # only when the hole is filled (3 s), as the simulator's receiver counts.
    g = pcap_goodput(path, 1.5, 4.0)
    assert g == {(1024, 5001): pytest.approx(200 * 8 / 2.5)}
    assert pcap_goodput(path, 1.5, 2.9)[(1024, 5001)] == 0.0
    assert pcap_goodput(path, 0.0, 6.0)[(1024, 5001)] == pytest.approx(400 * 8 / 6.0)


def _live_and_sim():
    live = pl.DataFrame(
        {
            "name": ["t", "u"],
            "goodput_bps": [8e6, 0.9e6],
            "drops": [3, 0],
            "retransmits": [5, 0],
            "linux_cc": ["bbr", ""],
        }
    )
    sim = pl.DataFrame(
        {
            "name": ["t", "u"],
            "goodput_bps": [8.5e6, 1e6],
            "drops": [2, 0],
            "retransmits_whole_run": [4, 0],
        }
    )
    return live, sim


def test_twin_diff_only_where_both_ran_the_same_congestion_control():
    # Live ran BBR, the twin Reno: the TCP row and the total are not comparable (no
    # number); the UDP row, which no congestion control drives, still is.
    live, sim = _live_and_sim()
    table, s = twin_table({**SCEN, "live": {"cc": "bbr"}}, live, sim)
    t, u, tot = table.iter_rows(named=True)
    assert (t["live_cc"], t["twin_cc"], t["comparable"], t["diff"]) == (
        "bbr",
        "reno",
        False,
        None,
    )
    assert u["comparable"] and u["diff"] == pytest.approx(1e6 * 472 / 500 / 0.9e6 - 1)
    assert tot["comparable"] is False and tot["diff"] is None
    assert s["twin_total_diff"] is None and s["twin_comparable"] is False
    # The socket's own congestion control decides, [live] cc only when it is missing.
    table, s = twin_table(SCEN, live.with_columns(pl.lit("reno").alias("linux_cc")), sim)
    assert table["comparable"].to_list() == [True, True, True]
    assert s["twin_comparable"] and s["twin_total_diff"] == pytest.approx(table["diff"][2])
    table, _ = twin_table({**SCEN, "live": {"cc": "bbr"}}, live.drop("linux_cc"), sim)
    assert table["diff"][0] is None and table["live_cc"][0] == "bbr"
    # Hosts told CUBIC: the twin runs qoslab's CUBIC and the rows compare; a socket that
    # ran CUBIC on hosts told Reno does not (its twin ran Reno).
    cubic = live.with_columns(pl.lit("cubic").alias("linux_cc"))
    table, s = twin_table({**SCEN, "live": {"cc": "cubic"}}, cubic, sim)
    assert table["twin_cc"][0] == "cubic" and table["comparable"].to_list() == [True] * 3
    table, _ = twin_table(SCEN, cubic, sim)
    assert table["twin_cc"][0] == "reno" and table["diff"][0] is None


def test_twin_text_shows_the_difference_at_80_columns():
    from qoslab.twin import twin_text

    live, sim = _live_and_sim()
    live = live.with_columns(pl.Series("name", ["a-very-long-flow-name-of-forty-chars-x", "u"]))
    sim = sim.with_columns(pl.Series("name", ["a-very-long-flow-name-of-forty-chars-x", "u"]))
    scen = {**SCEN, "flow": [{**SCEN["flow"][0], "name": live["name"][0]}, SCEN["flow"][1]]}
    table, _ = twin_table({**scen, "live": {"cc": "bbr"}}, live, sim)
    text = twin_text(table)
    lines = text.splitlines()
    assert all(len(line) <= 80 for line in lines), text
    assert "diff" in lines[0].split() and "…" not in lines[0]
    assert "not comparable" in lines[1] and lines[1].startswith("a-very-long-f…")  # name cut
    assert f"{1e6 * 472 / 500 / 0.9e6 - 1:+.1%}" in lines[2]
    assert "not comparable" in lines[3] and lines[3].startswith("(total)")
    # Comparable rows show the difference as a percentage.
    table, _ = twin_table(scen, live.with_columns(pl.lit("reno").alias("linux_cc")), sim)
    assert f"{8.5e6 * 1448 / 1460 / 8e6 - 1:+.1%}" in twin_text(table).splitlines()[1]


def test_twin_series_pairs_live_and_twin_per_interval_and_draws_them():
    from qoslab.twin import twin_figure, twin_series

    flows = pl.DataFrame({"flow": [0, 1], "name": ["t", "u"]})
    # Live: cumulative bytes read by the sinks; the twin: its series (cum_bytes).
    live = pl.DataFrame(
        {
            "flow": [0, 0, 0, 1, 1, 1],
            "t": [0.5, 1.0, 1.5] * 2,
            "goodput_bytes": [0, 500_000, 1_000_000, 0, 50_000, 100_000],
        }
    )
    sim = pl.DataFrame(
        {
            "flow": [0, 0, 0, 1, 1, 1],
            "t": [0.5, 1.0, 1.5] * 2,
            "cum_bytes": [0, 584_000, 1_168_000, 0, 50_000, 100_000],
        }
    )
    ts = twin_series(SCEN, flows, live, flows, sim)
    assert ts.columns == ["flow", "t", "live_bps", "sim_bps"]
    t = ts.filter(pl.col("flow") == "t")
    assert t["t"].to_list() == [1.0, 1.5]
    assert t["live_bps"].to_list() == pytest.approx([8e6, 8e6])
    # The twin's TCP at Linux's payload per packet, its UDP at the datagram's payload.
    assert t["sim_bps"].to_list() == pytest.approx([584_000 * 8 / 0.5 * 1448 / 1460] * 2)
    u = ts.filter(pl.col("flow") == "u")
    assert u["sim_bps"].to_list() == pytest.approx([0.8e6 * 472 / 500] * 2)
    fig = twin_figure(ts)
    assert len(fig.axes) == 2
    labels = [ln.get_label() for ln in fig.axes[0].get_lines()]
    assert labels == ["live", "twin"]
    assert twin_figure(ts.clear()) is None


def test_quickack_acks_more_through_the_srtcm_examples_burst_loss():
    # The srTCM example's twin (Reno hosts): a slow-start burst of ~100 drops and two
    # timeouts. Quick-ACK mode ACKs the first 16 segments, the go-back after each
    # timeout and every retransmission (sent without ECT) at once: more ACKs than
    # every second segment, and the goodput the docs quote (8.43 against 8.12 Mb/s).
    from qoslab.api import run
    from qoslab.scenario import load

    path = Path(__file__).parents[1] / "scenarios/examples/live_srtcm.toml"
    data, _ = twin_data(load(path).with_overrides({"live.cc": "reno"}).data)
    on = run(data, seed=1).flows
    for f in data["flow"]:
        f["tcp"]["quickack"] = False
    off = run(data, seed=1).flows
    assert on["acks_sent"][0] > off["acks_sent"][0] + 50
    assert round(on["goodput_bps"][0] * 1448 / 1460 / 1e6, 2) == 8.43
    assert round(off["goodput_bps"][0] * 1448 / 1460 / 1e6, 2) == 8.12

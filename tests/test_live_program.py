"""`[[live.program]]`: a user's own program inside a host's namespace: its output and
exit status in `live_programs`, its traffic per 5-tuple in `live_conns`, stopped at its
stop time or the run's end, and a missing program refused naming the key. Needs root
and /dev/net/tun (one run of 3 s)."""

from __future__ import annotations

import polars as pl
import pytest

from conftest import needs_live, two_hosts
from qoslab.api import live
from qoslab.exceptions import ScenarioError

pytestmark = needs_live

BASE = two_hosts("prog")

PROGRAMS = '''
[[live.program]]
name = "server"
host = "b"
argv = ["python3", "-c", """
import os, socket
s = socket.socket()
s.bind((os.environ['QOSLAB_ADDR'], 5201))
s.listen()
c, peer = s.accept()
n = 0
while (d := c.recv(65536)):
    n += len(d)
print('received', n, 'from', peer[0], flush=True)
"""]

[[live.program]]
name = "client"
host = "a"
start = "0.5s"
argv = ["python3", "-c", """
import os, socket
c = socket.create_connection((os.environ['QOSLAB_ADDR_b'], 5201))
c.sendall(b'x' * 1_000_000)
c.close()
print('sent 1000000')
"""]

[[live.program]]
name = "sleeper"
host = "a"
argv = ["sleep", "100"]
'''


def test_a_missing_program_is_refused_naming_the_key(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(BASE + '[[live.program]]\nhost = "a"\nargv = ["qoslab-no-such-iperf3", "-s"]\n')
    with pytest.raises(ScenarioError) as e:
        live(p)
    msg = str(e.value)
    assert "live.program[0].argv" in msg and "qoslab-no-such-iperf3" in msg, msg
    assert str(p) in msg, msg


def test_user_programs_run_in_their_hosts_and_their_traffic_is_measured(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(BASE + PROGRAMS)
    r = live(p)
    progs = {x["name"]: x for x in r.table("live_programs").iter_rows(named=True)}
    hosts = {x["host"]: x for x in r.table("live_hosts").iter_rows(named=True)}
    a_addr, b_addr = hosts["a"]["addr"], hosts["b"]["addr"]
    # The server in b got every byte from a's address; both exited by themselves.
    assert progs["server"]["stdout"].strip() == f"received 1000000 from {a_addr}", progs
    assert progs["server"]["exit_code"] == 0 and progs["server"]["stopped"] == 0
    assert progs["client"]["stdout"].strip() == "sent 1000000"
    assert progs["client"]["exit_code"] == 0 and progs["client"]["started"] >= 0.5
    # The one still running at the end was stopped (SIGTERM: status 143).
    s = progs["sleeper"]
    assert (s["stopped"], s["signal"], s["exit_code"]) == (1, 15, 143), s
    assert s["ended"] >= 2.9
    assert not [w for w in r.summary["warnings"] if "program" in w], r.summary["warnings"]
    # Its traffic, per 5-tuple as the datapath saw it: the data direction to port 5201.
    c = r.table("live_conns")
    data = c.filter((pl.col("proto") == "tcp") & (pl.col("dport") == 5201)).row(0, named=True)
    assert (data["src"], data["dst"], data["src_host"], data["dst_host"]) == (
        a_addr,
        b_addr,
        "a",
        "b",
    )
    # Every byte reached b (retransmissions may add some), and what the datapath did not
    # deliver it dropped.
    assert data["payload_delivered"] >= 1_000_000, data
    lost = data["pkts_sent"] - data["pkts_delivered"]
    assert 0 <= lost <= int(r.drops["packets"].sum()), (data, r.drops)
    assert hosts["a"]["tun_read_bytes"] >= data["bytes_sent"] > 1_000_000
    acks = c.filter((pl.col("proto") == "tcp") & (pl.col("sport") == 5201))
    assert acks.height == 1 and acks["payload_delivered"][0] == 0

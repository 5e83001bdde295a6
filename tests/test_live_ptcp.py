"""qoslab's own pTCP (P4 §4) in a live run (``[live] simulated``): a Linux Reno flow
beside a pTCP connection of 4 pipes that qoslab's endpoints run inside the datapath,
both over the same 2 Mb/s, ~15 ms lossy link (scenarios/live/p4-ptcp.toml). Needs root
and /dev/net/tun."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl

from conftest import needs_live

SCENARIO = Path(__file__).resolve().parent.parent / "scenarios" / "live" / "p4-ptcp.toml"


@needs_live
def test_a_simulated_ptcp_flow_beside_a_linux_flow_gets_its_weighted_share(tmp_path):
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "qoslab", "live", str(SCENARIO), "-o", str(out)]
    cmd += ["--set", "duration=12s", "--set", "warmup=3s"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stdout, stderr = p.communicate(timeout=60)
    assert p.returncode == 0, stderr
    # The timing verdict of the datapath, which ran pTCP's endpoints too, is printed. Its
    # value is this machine's wake-up latency (a late p99 on a loaded CI box is a verdict,
    # not a defect), so either verdict passes here; the shares below are checked either way.
    verdicts = ("live-p4-ptcp (live): timing OK", "live-p4-ptcp (live): TIMING OUT OF BOUNDS")
    assert any(v in stdout for v in verdicts) and "lateness p99" in stdout, stdout
    # Of the tcp keys only the Linux flow's would be ignored: the pTCP flow uses its own.
    assert "tcp.variant" not in stderr, stderr
    flows = {r["name"]: r for r in pl.read_parquet(out / "flows.parquet").iter_rows(named=True)}
    unit, ptcp = flows["unit"], flows["ptcp"]
    assert (unit["simulated"], ptcp["simulated"]) == (0, 1)
    assert unit["linux_cc"] == "reno" and ptcp["linux_cc"] == ""
    assert unit["goodput_bps"] > 50e3 and ptcp["goodput_bps"] > 50e3, flows
    assert ptcp["goodput_bps"] / unit["goodput_bps"] > 1.5, flows
    # Both crossed the same lossy hop and its queue.
    assert unit["drops"] > 0 and ptcp["drops"] > 0, flows
    # pTCP's own tables: its 4 pipes each carried data; the application got every byte
    # the flows table counts (after the warm-up) and more.
    pt = pl.read_parquet(out / "ptcp.parquet").row(0, named=True)
    pipes = pl.read_parquet(out / "ptcp_pipes.parquet")
    assert pt["pipes"] == 4 and pipes.height == 4 and (pipes["bytes_sent"] > 0).all()
    assert pt["app_bytes"] >= ptcp["goodput_bytes"] > 0
    # Every packet read from a TUN was the Linux flow's (none of no flow: live_conns),
    # and both flows' series are recorded.
    assert pl.read_parquet(out / "live_conns.parquet").height == 0
    series = pl.read_parquet(out / "series.parquet")
    assert set(series["flow"].to_list()) == {0, 1}
    # The datapath made pTCP's packets beside those it read from the hosts.
    summary = json.loads((out / "summary.json").read_text())
    assert summary["live_simulated_packets"] >= ptcp["pkts_sent"] > 0
    # Nothing of the run is left behind.
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert f"qlab{p.pid}-" not in listed, listed

"""Stopping a live run (SIGTERM, SIGINT even when inherited as ignored), what the next
start sweeps after a SIGKILL, and what a short live run says about the scenario's
ignored ``tcp`` keys and its measured RTT. Needs root and /dev/net/tun; each run a few
seconds."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

from conftest import needs_live
from test_live import RED_TCP, UDP, _ours, _path, chain

pytestmark = needs_live

LONG = dict(duration="30s", warmup="0s")


def _long_scenario(tmp_path):
    udp = UDP.format(rate="2Mbps", stop="")
    return _path(tmp_path, chain("10Mbps", '{ kind = "droptail", limit = 50 }', udp, **LONG))


def _start(scen, out, **kw):
    """`qoslab live` in the background, once its two hosts' namespaces exist."""
    p = subprocess.Popen(
        [sys.executable, "-m", "qoslab", "live", str(scen), "-o", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )
    prefix = f"qlab{p.pid}-"
    deadline = time.monotonic() + 60
    while len([n for n in _ours() if n.startswith(prefix)]) < 2:
        assert p.poll() is None, p.communicate()
        assert time.monotonic() < deadline, "the run did not create its namespaces"
        time.sleep(0.1)
    time.sleep(0.5)
    return p, prefix


def test_sigterm_stops_the_run_saying_so(tmp_path):
    out = tmp_path / "o"
    p, prefix = _start(_long_scenario(tmp_path), out)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 128 + signal.SIGTERM, err
    assert "stopped by SIGTERM" in err and "no results were saved" in err, err
    assert not [n for n in _ours() if n.startswith(prefix)]
    assert not out.exists()  # the folder it created for its results is gone too


def test_sigint_stops_a_background_run_that_inherited_it_ignored(tmp_path):
    # A shell without job control starts `cmd &` with SIGINT ignored; the run handles
    # it all the same, so `kill -INT` stops it as Ctrl-C stops a foreground run.
    def ignore_sigint():
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    p, prefix = _start(_long_scenario(tmp_path), tmp_path / "o", preexec_fn=ignore_sigint)
    p.send_signal(signal.SIGINT)
    try:
        _, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        raise AssertionError("SIGINT was ignored: the run went on") from None
    assert p.returncode == 128 + signal.SIGINT, err
    assert "stopped by SIGINT" in err, err
    assert not [n for n in _ours() if n.startswith(prefix)]


def test_after_sigkill_the_next_run_says_what_it_swept(tmp_path):
    p, prefix = _start(_long_scenario(tmp_path), tmp_path / "killed")
    stages = list((tmp_path / "killed" / ".qoslab" / "stage").iterdir())
    assert len(stages) == 1 and (stages[0] / "live").is_dir()
    p.send_signal(signal.SIGKILL)
    p.communicate()
    left = sorted(n for n in _ours() if n.startswith(prefix))
    assert len(left) == 2 and stages[0].is_dir()  # a SIGKILLed run cannot clean up …
    # … the next start does, and says so. That run (a TCP flow on a 10 ms path with a
    # simulator-only key) also warns about the key and measures no RTT below the path's.
    flow = RED_TCP.format(ecn="false").replace("ecn = false", "ecn = false, max_window = 20")
    scen = chain("10Mbps", '{ kind = "droptail", limit = 30 }', flow, duration="2s", warmup="0s")
    out = tmp_path / "next"
    r = subprocess.run(
        [sys.executable, "-m", "qoslab", "live", str(_path(tmp_path, scen)), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert "removed the namespaces of live runs whose process is gone" in r.stderr
    assert all(n in r.stderr for n in left), r.stderr
    assert f"removed the staging folders of live runs whose process is gone: {stages[0]}" in (
        r.stderr
    )
    assert not stages[0].exists() and not [n for n in _ours() if n.startswith(prefix)]
    summary = json.loads((out / "summary.json").read_text())
    assert set(left) <= set(summary["live_swept_namespaces"])
    assert str(stages[0]) in summary["live_swept_staging"]
    warned = [w for w in summary["warnings"] if "tcp.max_window" in w]
    assert len(warned) == 1 and "net.ipv4.tcp_rmem" in warned[0], summary["warnings"]
    # The simulator's flow counters see no live socket: no "delivered nothing" warning.
    assert not any("delivered nothing" in w for w in summary["warnings"]), summary["warnings"]
    assert "warning: live: tcp.max_window (flow[0]) is ignored" in r.stderr
    import polars as pl

    f = pl.read_parquet(out / "flows.parquet").row(0, named=True)
    # Packets enter the datapath when read: the kernel's minimum RTT is never below the
    # path's 10 ms, however late the datapath ran.
    assert f["min_rtt"] >= 0.010, f["min_rtt"]

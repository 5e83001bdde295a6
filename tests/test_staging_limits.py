"""Results that cannot eat the disk or lock a user out: the catalog opens in DuckDB's
command-line client; captures have a time window and a size limit; a run ended by
SIGTERM leaves no staging behind and stale staging of dead processes is removed; ``--max-wall``."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import qoslab
from conftest import cli, small_text
from qoslab import ScenarioError, SimulationError
from qoslab.store import OWN, STAGE_OWNER, new_stage
from qoslab.sweep import query, run_sweep

LONG = small_text("100000s").replace('name = "small"', 'name = "long"')
CAPTURE = '\n[[capture]]\niface = "r1->h3"\n'


def _duckdb_cli() -> str | None:
    exe = Path(sys.executable).with_name("duckdb")
    return str(exe) if exe.is_file() else shutil.which("duckdb")


def test_catalog_opens_in_the_duckdb_command_line_client(tmp_path):
    exe = _duckdb_cli()
    if exe is None:
        pytest.skip("the duckdb command-line client is not installed (pip install duckdb-cli)")
    sc = tmp_path / "s.toml"
    sc.write_text(small_text("1s"))
    out = tmp_path / "sw"
    run_sweep(sc, out, grid={"link.2.rate": ["1Mbps", "2Mbps"]}, workers=1, progress=False)
    p = subprocess.run(
        [exe, "-readonly", "-csv", "catalog.duckdb", "-c", "SELECT count(*) AS n FROM flows"],
        cwd=out,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["n", "4"], p.stdout  # 2 runs × 2 flows, through the view
    # the same through qoslab's own helper (DuckDB 2.0 has no execute(…).pl())
    assert query(out, "SELECT count(*) AS n FROM runs")["n"][0] == 2


def test_capture_window_and_size_limit(tmp_path):
    sc = tmp_path / "s.toml"
    sc.write_text(
        small_text("4s")
        + '\n[[capture]]\niface = "r1->h3"\nfile = "w.pcap"\nstart = "1s"\nstop = "2s"\n'
        + '[[capture]]\niface = "r1->h3"\nfile = "c.pcap"\nmax_bytes = 10000\n'
    )
    r = qoslab.run(sc, pcap_dir=tmp_path / "pcap")
    assert (tmp_path / "pcap" / "c.pcap").stat().st_size <= 10000
    caps = r.tables["captures"]
    assert caps.filter(caps["file"] == "pcap/c.pcap")["skipped"].sum() > 0
    w = caps.filter(caps["file"] == "pcap/w.pcap")
    # about 1 s of a 1 Mb/s link of 1000-byte packets: ~125 packets, not 500
    assert 90 < w["packets"].sum() < 160
    bad = qoslab.scenario.load(sc).data | {"capture": [{"iface": "r1->h3", "stop": 0}]}
    with pytest.raises(ScenarioError, match=r"capture\[0\]\.stop"):
        qoslab.check(bad)


def test_stale_staging_of_dead_processes_is_removed(tmp_path):
    own = tmp_path / "out" / OWN
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = own / "stage" / f"run-{dead.pid}-deadbeef"
    (stale / "pcap").mkdir(parents=True)
    (stale / "pcap" / "big.pcap").write_bytes(b"x" * 1000)
    (stale / STAGE_OWNER).write_text(
        json.dumps({"pid": dead.pid, "host": socket.gethostname(), "proc_start": None})
    )
    other_host = own / "stage" / "run-1-cafecafe"
    other_host.mkdir()
    (other_host / STAGE_OWNER).write_text(json.dumps({"pid": 1, "host": "elsewhere"}))
    live = new_stage(own, "run")  # this process: kept
    assert not stale.exists()
    assert other_host.exists() and live.exists()
    assert json.loads((live / STAGE_OWNER).read_text())["pid"] == os.getpid()


def test_sigterm_during_a_run_leaves_no_staging(tmp_path):
    sc = tmp_path / "long.toml"
    sc.write_text(LONG + CAPTURE)
    out = tmp_path / "res"
    p = subprocess.Popen(
        [sys.executable, "-m", "qoslab", "run", str(sc), "-o", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stage = out / OWN / "stage"
    deadline = time.monotonic() + 60
    while not any(stage.glob("run-*/pcap/*.pcap")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert any(stage.glob("run-*/pcap/*.pcap")), "the run did not start its capture"
    time.sleep(0.5)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=30)
    assert p.returncode != 0
    assert not stage.exists() or not any(stage.iterdir()), list(stage.iterdir())
    assert "internal error" not in err


def test_max_wall_stops_a_run(tmp_path):
    sc = tmp_path / "long.toml"
    sc.write_text(LONG)
    t0 = time.perf_counter()
    with pytest.raises(SimulationError, match="max_wall"):
        qoslab.run(sc, max_wall=0.5)
    assert time.perf_counter() - t0 < 5
    for bad in (0, -1, float("nan"), "1s", True):
        with pytest.raises(ScenarioError, match="max_wall"):
            qoslab.run(sc, max_wall=bad)
    p = cli("run", sc, "--max-wall", "0.5", "-o", tmp_path / "r", timeout=60)
    assert p.returncode == 1 and "max_wall" in p.stderr
    assert not (tmp_path / "r").exists()
    res = run_sweep(sc, tmp_path / "sw", seeds=2, workers=1, progress=False, max_wall=0.3)
    assert res.failed == 2 and "max_wall" in res.failures[0]["error"]

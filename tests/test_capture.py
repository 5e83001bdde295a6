"""pcap capture through the Python API and CLI: files land in the results directory."""

from __future__ import annotations

import gc
import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import qoslab
from qoslab.sweep import open_catalog, run_sweep

SCENARIO = {
    "duration": "2s",
    "node": [{"name": "a"}, {"name": "b"}],
    "link": [{"a": "a", "b": "b", "rate": "1Mbps", "delay": "5ms"}],
    "flow": [{"name": "t", "from": "a", "to": "b", "bytes": 20000, "tcp": {}}],
    "capture": [{"iface": "a->b", "file": "ab.pcap"}],
}


def test_capture_files_are_saved_with_the_results(tmp_path: Path) -> None:
    r = qoslab.run(SCENARIO)
    assert r.pcap_dir is not None and (r.pcap_dir / "ab.pcap").stat().st_size > 24
    dest = r.save(tmp_path / "run")
    data = (dest / "pcap" / "ab.pcap").read_bytes()
    # Nanosecond libpcap magic, little-endian, then one record per packet sent a->b.
    assert data[:4] == bytes.fromhex("4d3cb2a1")
    sent = int(r.flows["pkts_sent"][0])
    assert sent > 10
    assert "captures" in r.tables
    assert int(r.tables["captures"]["packets"].sum()) == sent
    again = qoslab.load(dest).save(tmp_path / "copy")
    assert (again / "pcap" / "ab.pcap").read_bytes() == data


def test_no_capture_no_directory() -> None:
    data = {k: v for k, v in SCENARIO.items() if k != "capture"}
    assert qoslab.run(data).pcap_dir is None


def _umask() -> int:
    old = os.umask(0)
    os.umask(old)
    return old


def test_captures_leave_no_temporary_folders(tmp_path, monkeypatch):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    r = qoslab.run(SCENARIO)
    assert r.pcap_dir is not None and r.pcap_dir.is_relative_to(tmp)
    del r
    gc.collect()
    assert list(tmp.iterdir()) == []  # gone with the result
    with pytest.raises(qoslab.SimulationError):
        qoslab.run({**SCENARIO, "max_events": 10})
    assert list(tmp.iterdir()) == []  # and when the run fails
    run_sweep(SCENARIO, tmp_path / "sw", seeds=2, workers=1, progress=False)
    assert list(tmp.iterdir()) == []  # a sweep writes into the run's staging folder
    for run in (tmp_path / "sw" / "runs").iterdir():
        assert (run / "pcap" / "ab.pcap").stat().st_size > 24
        assert set(qoslab.load(run).tables["captures"]["file"]) == {"pcap/ab.pcap"}
    with open_catalog(tmp_path / "sw") as con:  # a view over every table, captures too
        files = con.sql("SELECT DISTINCT seed, file FROM captures ORDER BY seed").fetchall()
    assert files == [(1, "pcap/ab.pcap"), (2, "pcap/ab.pcap")]


def test_cli_capture_paths_are_relative_and_modes_normal(tmp_path):
    f = tmp_path / "cap.toml"
    f.write_text(
        'duration = "2s"\n[[node]]\nname = "a"\n[[node]]\nname = "b"\n'
        '[[link]]\na = "a"\nb = "b"\nrate = "1Mbps"\ndelay = "5ms"\n'
        '[[flow]]\nname = "t"\nfrom = "a"\nto = "b"\nbytes = 20000\ntcp = {}\n'
        '[[capture]]\niface = "a->b"\nfile = "ab.pcap"\n'
    )
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}
    tables = []
    for out in (tmp_path / "r1", tmp_path / "r2"):
        p = subprocess.run(
            [sys.executable, "-m", "qoslab", "run", str(f), "-o", str(out)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert p.returncode == 0, p.stderr
        tables.append(qoslab.load(out).tables["captures"])
        mode = stat.S_IMODE((out / "pcap").stat().st_mode)
        assert mode == 0o777 & ~_umask(), oct(mode)
    assert list(tmp.iterdir()) == []
    assert tables[0].equals(tables[1])  # identical runs, identical tables
    assert set(tables[0]["file"]) == {"pcap/ab.pcap"}

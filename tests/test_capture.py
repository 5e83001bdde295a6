"""pcap capture through the Python API and CLI: files land in the results directory."""

from __future__ import annotations

from pathlib import Path

import qoslab

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


def test_no_capture_no_directory() -> None:
    data = {k: v for k, v in SCENARIO.items() if k != "capture"}
    assert qoslab.run(data).pcap_dir is None

"""P0 (rate control of TCP aggregates at a server): scenarios, doc links, and the
qualitative claims on single runs (each 200 s run takes about 0.1 s)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import qoslab
from conftest import cli
from qoslab import docgen
from qoslab.exceptions import ScenarioError
from qoslab.reproduce import Explanation, p0, scenarios_dir
from qoslab.reproduce.p1 import to_toml

ROOT = Path(__file__).resolve().parents[1]


def test_committed_scenarios_match_the_generator():
    assert len(p0.specs()) == len(p0.ROWS) == 16
    for rel, data in p0.specs().items():
        path = scenarios_dir() / rel
        assert path.read_text() == to_toml(data, p0.HEADER), f"regenerate {rel}"
        qoslab.check(path)


def test_explanations_link_to_existing_doc_anchors():
    exps = [v for v in vars(p0).values() if isinstance(v, Explanation)]
    assert len(exps) >= 2
    for e in exps:
        doc, anchor = e.doc.split("#")
        assert f'<a id="{anchor}"></a>' in (ROOT / doc).read_text(), e.doc
    src = (ROOT / "python/qoslab/reproduce/p0.py").read_text()
    assert "issue" not in src.lower()


def _measure(stem: str, seed: int = 1) -> tuple[float, float, list[float]]:
    """(Jain over R_i/s_i, total % of rate, per-flow compliant B/s) of one run."""
    links, qos, _ = p0.ROWS[stem]
    res = qoslab.run(scenarios_dir() / "p0" / f"{stem}.toml", seed=seed)
    thr = [g * p0.PKT / p0.MSS / 200 for g in res.tables["flows"]["goodput_bytes"]]
    shares = p0.fair_shares(links, qos is not None)
    jain = p0.jain([t / s for t, s in zip(thr, shares, strict=True)])
    q = res.tables.get("qosmgr")
    marked = [m / 200 for m in q["marked_bytes"]] if q is not None else []
    return jain, 100 * sum(thr) / p0.RATE, marked


def test_logical_partitions_are_fair_and_use_the_rate_partitioned_waste_it():
    j_log, tot_log, _ = _measure("f10-unequal")
    j_part, tot_part, _ = _measure("f5-unequal")
    assert j_log >= 0.98 and tot_log >= 97.0
    assert j_part >= 0.98 and tot_part <= 92.0
    j_eq, tot_eq, _ = _measure("f10-equal")
    assert j_eq >= 0.98 and tot_eq >= 97.0


def test_sequential_order_is_unfair_fcfs_and_lru_are_not():
    seq = _measure("f7-sequential")[0]
    fcfs = sum(_measure("f7-fcfs", s)[0] for s in (1, 2, 3)) / 3
    lru = _measure("f7-lru")[0]
    assert seq < 0.6 < 0.85 < min(fcfs, lru)


def test_police_and_mark_common_bucket_marks_more_than_partitions():
    _, tot_part, m_part = _measure("f6-unequal")
    _, _, m_common = _measure("f8-unequal")
    _, _, m_log = _measure("f11-unequal")
    assert tot_part > 110.0  # unmarked traffic goes too
    assert sum(m_part) < sum(m_log) and sum(m_part) < sum(m_common)
    assert sum(m_common) <= p0.RATE * 1.01 + 40_000 / 200


def test_a_bad_manager_is_a_user_error_naming_the_key(tmp_path):
    sc = qoslab.scenario.load(scenarios_dir() / "p0" / "f10-equal.toml").data
    sc["qosmgr"] = [{**sc["qosmgr"][0], "order": "lru"}]
    with pytest.raises(ScenarioError, match=r"qosmgr\[0\]\.order"):
        qoslab.run(sc)
    path = tmp_path / "bad.toml"
    path.write_text((scenarios_dir() / "p0" / "f10-equal.toml").read_text().replace("40KB", "4KB"))
    r = cli("run", str(path), "-o", str(tmp_path / "out"))
    assert r.returncode == 2
    out = r.stdout + r.stderr
    assert "qosmgr[0].profile.burst" in out and "Traceback" not in out


def test_doc_tables_render_from_the_committed_data():
    data = json.loads((ROOT / "docs/papers/data/p0-full.json").read_text())
    md = docgen.RENDERERS["p0-all"](data)
    assert md.count("\n") == 2 + 16
    assert "| f10-unequal |" in md

"""The table of docs/queues-and-conditioners.md "Defaults that differ from a
reproduction's reading" against the code: each key's documented default is what a
scenario leaving it out gets (a run for `rtt_aware`, the Rust source for the others), the
reproduction's value is a different run (`rtt_aware`), the reproduction's scenarios set
that value, and the sentence under the table is validation/defaults_audit.py's."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import qoslab
from conftest import load_script
from qoslab.reproduce import p3, scenarios_dir

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "queues-and-conditioners.md"


def _section() -> str:
    text = DOC.read_text()
    sec = text.split("### Defaults that differ from a reproduction's reading", 1)[1]
    return sec.split("\n#", 1)[0]


def _all_rows() -> dict[str, tuple[str, str]]:
    """``table.key`` → (default, reproduction) as each row's first three cells give them."""
    out = {}
    for line in _section().splitlines():
        m = re.match(r"\| `(\w+)\.(\w+)` \| `([^`]+)` \| (.+?) \|", line)
        if m:
            out[f"{m.group(1)}.{m.group(2)}"] = (m.group(3), m.group(4))
    return out


def _rows() -> dict[str, tuple[str, str]]:
    """The `rtt_aware` rows: key → (default, reproduction)."""
    return {k.split(".", 1)[1]: v for k, v in _all_rows().items() if k.startswith("rtt_aware.")}


AUDIT = load_script(ROOT / "validation" / "defaults_audit.py")
#: The table's name of each audited key → the audit's (context, key).
AUDITED = {
    f"{c.split(':')[-1]}.{k.split('.')[-1]}": (c, k.split(".")[-1])
    for c, k in ((key.rsplit(".", 1)[0], key) for key in AUDIT.READINGS)
}


#: Per key: the marker the table's runs use (the key left out) and the value the
#: reproduction's scenarios set (None: a duration).
MARKER: dict[str, dict[str, Any]] = {
    "rto_rule": {"scheme": "rtt_rto"},
    "protect_bound": {"scheme": "rtt", "small_window": 3},
    "dp0": {"scheme": "rtt"},
    "rtt": {"scheme": "rtt_rto", "rto_rule": "min_rtt_aggregate"},
}
REPRO = {"rto_rule": "min_rtt_aggregate", "protect_bound": "none", "dp0": "text", "rtt": "20ms"}


def _goodputs(key: str, value: str | None) -> tuple[float, float]:
    """F1 and F2 goodput [Mb/s] in P3's simple topology (F2 RTT 25 ms, 40 s) with the
    marker of ``key``, the key set to ``value`` or left out (None)."""
    sc = p3.scenario("defaults", MARKER[key])
    sc["link"][1]["delay"] = p3.f2_access_delay(0.025)
    sc["duration"], sc["warmup"] = "40s", "10s"
    for a, c in enumerate(sc["conditioner"]):
        st = c["stages"][0]
        st["rtt"] = ["20ms", "25ms"][a]
        st.pop(key, None)
        if value is not None:
            # The reproduction's RTT is each aggregate's own propagation RTT.
            st[key] = ["20ms", "25ms"][a] if value == "20ms" else value
    g = p3.aggregate_mbps(qoslab.run(sc, seed=2))
    return g["F1"], g["F2"]


def test_the_table_lists_the_keys():
    assert set(_rows()) == set(MARKER)


@pytest.mark.parametrize("key", sorted(MARKER))
def test_the_documented_default_is_the_codes(key: str):
    default, repro = _rows()[key]
    left_out = _goodputs(key, None)
    assert _goodputs(key, default.strip('"')) == left_out, (key, default)
    # The reproduction's reading is another run (else the row would not belong here).
    assert _goodputs(key, REPRO[key]) != left_out, key
    if key != "rtt":
        assert f"`{REPRO[key]!r}`".replace("'", '"') in repro, repro


def test_p3s_scenarios_set_the_reproductions_values():
    seen: dict[str, set[str]] = {k: set() for k in MARKER}
    for path in sorted((scenarios_dir() / "p3").glob("*.toml")):
        for c in qoslab.scenario.load(path).data.get("conditioner", []):
            for st in c["stages"]:
                if st.get("kind") != "rtt_aware":
                    continue
                for k in MARKER:
                    if k in st:
                        seen[k].add(str(st[k]))
    assert "min_rtt_aggregate" in seen["rto_rule"]
    assert "none" in seen["protect_bound"]
    assert "text" in seen["dp0"]
    assert any(v.endswith("ms") for v in seen["rtt"])


def test_the_audited_rows_are_the_audits_readings():
    assert {k for k in _all_rows() if not k.startswith("rtt_aware.")} == set(AUDITED)


@pytest.mark.parametrize("key", sorted(AUDITED))
def test_an_audited_rows_default_is_the_codes_and_its_reading_is_set(key: str):
    context, name = AUDITED[key]
    default, repro = _all_rows()[key]
    code = AUDIT.rust_defaults(context)[name]
    assert AUDIT.same(json.loads(default), code), (key, default, code)
    value = AUDIT.READINGS[f"{context}.{name}"]
    assert f"`{json.dumps(value)}`" in repro, repro
    assert not AUDIT.same(value, code), key
    found = AUDIT.audit()[(context, name)]["values"]
    # The reproduction's scenario files (not only its alternatives) set the reading.
    assert any("~" not in p for p in found[repr(value)]), found


def test_the_sentence_under_the_table_is_the_audits():
    assert AUDIT.sentence(AUDIT.audit()) in _section()

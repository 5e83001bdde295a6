"""The warnings of a live run about the ``tcp`` keys it ignores (the hosts run Linux
TCP), without root (test_live_signals.py sees them in a real run)."""

from __future__ import annotations

from qoslab.live_checks import LINUX_INSTEAD, ignored_tcp_warnings

BASE = {
    "name": "keys",
    "duration": "1s",
    "node": [{"name": "a"}, {"name": "b"}],
    "link": [{"a": "a", "b": "b", "rate": "10Mbps", "delay": "1ms"}],
}


def _flow(i: int, tcp: dict | None = None, **kw) -> dict:
    f = {"name": f"f{i}", "from": "a", "to": "b", **kw}
    if tcp is not None:
        f["tcp"] = tcp
    return f


def test_one_warning_per_ignored_key_naming_it_and_the_linux_setting():
    data = {
        **BASE,
        "flow": [
            _flow(0, {"variant": "sack", "max_window": 20, "ecn": True}),
            _flow(1, {"max_window": 30}),
            _flow(2, cbr={"rate": "1Mbps"}),
        ],
    }
    w = ignored_tcp_warnings(data)
    assert len(w) == 2, w  # variant, max_window; ecn reaches the hosts
    variant = next(x for x in w if "tcp.variant" in x)
    window = next(x for x in w if "tcp.max_window" in x)
    assert "(flow[0])" in variant and "net.ipv4.tcp_sack" in variant
    assert "(flow[0], flow[1])" in window and "net.ipv4.tcp_rmem" in window
    assert all("the hosts run Linux TCP" in x for x in w)


def test_ecn_is_ignored_only_when_the_live_table_sets_it_and_unknown_keys_still_warn():
    flows = [_flow(0, {"ecn": True})]
    assert ignored_tcp_warnings({**BASE, "flow": flows}) == []
    w = ignored_tcp_warnings({**BASE, "flow": flows, "live": {"ecn": False}})
    assert len(w) == 1 and "tcp.ecn" in w[0] and "`[live] ecn`" in w[0]
    # A key this table does not know yet still gets its warning.
    w = ignored_tcp_warnings({**BASE, "flow": [_flow(0, {"new_knob": 1})]})
    assert len(w) == 1 and "tcp.new_knob" in w[0]


def test_many_flows_are_summed_up_and_every_engine_key_has_a_reason():
    flows = [_flow(i, {"initial_window": 4}) for i in range(10)]
    (w,) = ignored_tcp_warnings({**BASE, "flow": flows})
    assert "flow[0], flow[1], flow[2] and 7 more" in w
    # Every key of the engine's TcpConfig is explained (ecn is used, not ignored).
    import re
    from pathlib import Path

    src = (Path(__file__).parents[1] / "crates/qoslab/src/tcp/mod.rs").read_text()
    body = src[src.index("pub struct TcpConfig {") :]
    body = body[: body.index("\n}\n")]
    fields = set(re.findall(r"^\s+pub (\w+):", body, re.M))
    assert fields - {"ecn"} == set(LINUX_INSTEAD), fields ^ set(LINUX_INSTEAD)


def test_a_web_flows_mss_still_sizes_its_objects():
    w = ignored_tcp_warnings({**BASE, "flow": [_flow(0, {"mss": 1000}, web={})]})
    assert len(w) == 1 and "tcp.mss" in w[0] and "1448 payload bytes" in w[0]
    assert "object and request sizes still count in packets of its `mss`" in w[0]
    w = ignored_tcp_warnings({**BASE, "flow": [_flow(0, {"mss": 1000})]})
    assert "object" not in w[0]


def test_a_simulated_flows_tcp_keys_are_used_not_ignored():
    flows = [
        {"name": "k", "tcp": {"variant": "sack"}},
        {"name": "p", "tcp": {"variant": "sack", "mss": 1000}, "ptcp": {"pipes": 2}},
    ]
    out = ignored_tcp_warnings({"flow": flows, "live": {"simulated": ["p"]}})
    assert len(out) == 1 and "tcp.variant (flow[0])" in out[0], out
    assert len(ignored_tcp_warnings({"flow": flows})) == 2

"""``qoslab draw``: a topology SVG for every shipped scenario, with the links' rate,
delay and queue kind, the conditioners and captures where they sit, and the flows along
their routes."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from conftest import cli
from qoslab.cli import cli as qoslab_cli
from qoslab.topology import draw, routes

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted((ROOT / "scenarios").rglob("*.toml"))


def test_every_shipped_scenario_draws(tmp_path):
    assert len(SHIPPED) > 50
    runner = CliRunner()
    for sc in SHIPPED:
        out = tmp_path / f"{sc.parent.name}-{sc.stem}.svg"
        r = runner.invoke(qoslab_cli, ["draw", str(sc), "-o", str(out)])
        assert r.exit_code == 0, (sc, r.output, r.exception)
        assert r.output.strip() == str(out)
        text = out.read_text()
        assert text.startswith("<?xml") and "</svg>" in text and len(text) > 10_000, sc


def test_draw_command_names_the_file_after_the_scenario(tmp_path):
    p = cli("draw", ROOT / "scenarios/examples/two_cbr.toml", cwd=tmp_path, check=True)
    assert p.stdout.strip().splitlines()[-1] == "two-cbr-topology.svg"
    assert (tmp_path / "two-cbr-topology.svg").is_file()
    bad = cli("draw", ROOT / "scenarios/examples/two_cbr.toml", "--set", "link.9.rate=1")
    assert bad.returncode == 2  # a scenario that does not validate is refused


def test_diffserv_example_places_conditioners_and_labels_links():
    from qoslab import plot

    sc = ROOT / "scenarios/examples/diffserv_ef_af_be.toml"
    svg = plot.svg_bytes(draw(sc)).decode()
    # The bottleneck: rate, delay and the class queue with its classes.
    assert "2Mbps, 10ms" in svg and "classes/wfq(ef, af1, af2, be)" in svg
    # The two trTCMs at r1's input interfaces from af1 and af2.
    assert "trtcm (in af1-&gt;r1)" in svg and "trtcm (in af2-&gt;r1)" in svg
    assert "conditioner" in svg  # in the legend
    # Flows with the same route are one group; every group is in the legend.
    assert "af1-a … (2 flows): af1 → d" in svg and "voice: voice → d" in svg


def test_routes_follow_the_smallest_delay_then_fewest_hops():
    link = {"rate": "1Mbps"}
    sc = {
        "node": [{"name": n} for n in ("s", "a", "b", "c", "d")],
        "link": [
            {**link, "a": "s", "b": "a", "delay": "5ms"},
            {**link, "a": "a", "b": "d", "delay": "5ms"},  # s-a-d: 10 ms, 2 hops
            {**link, "a": "s", "b": "b", "delay": "1ms"},
            {**link, "a": "b", "b": "c", "delay": "1ms"},
            {**link, "a": "c", "b": "d", "delay": "1ms"},  # s-b-c-d: 3 ms, 3 hops
            {**link, "a": "b", "b": "d", "delay": "2ms"},  # s-b-d: 3 ms, 2 hops
        ],
        "flow": [{"name": "f", "from": "s", "to": "d"}, {"name": "g", "from": "a", "to": "d"}],
    }
    assert routes(sc) == {"f": ["s", "b", "d"], "g": ["a", "d"]}


def test_captures_are_drawn(tmp_path):
    from qoslab import plot

    sc = {
        "name": "cap",
        "node": [{"name": "a"}, {"name": "b"}],
        "link": [{"a": "a", "b": "b", "rate": "1Mbps", "delay": "1ms"}],
        "flow": [{"name": "f", "from": "a", "to": "b", "cbr": {"rate": "1kbps"}}],
        "capture": [{"iface": "a->b", "direction": "rx"}],
    }
    svg = plot.svg_bytes(draw(sc)).decode()
    assert "pcap a-&gt;b rx" in svg and "capture" in svg

"""DiffServ results in the Python API, the terminal summary and the report: colour
statistics per meter and flow, and goodput summed per class, on the worked example."""

from __future__ import annotations

from pathlib import Path

import qoslab
from conftest import cli

EXAMPLE = Path(__file__).resolve().parents[1] / "scenarios/examples/diffserv_ef_af_be.toml"


def test_worked_example_colours_and_goodput_per_class(tmp_path):
    out = tmp_path / "ds"
    p = cli("run", EXAMPLE, "--set", "duration=8s", "-o", out, "--report", check=True)
    r = qoslab.load(out)
    # The two trTCMs at r1's input interfaces colour the AF flows, nothing else.
    c = r.colours
    assert set(c["name"]) == {"af1-a", "af1-b", "af2-a", "af2-b"}
    assert set(c["at"]) == {"iface_in"} and set(c["kind"]) == {"trtcm"}
    colour_pkts = c["green_pkts"] + c["yellow_pkts"] + c["red_pkts"]
    assert (colour_pkts > 0).all() and (c["red_pkts"] > 0).any()
    # The AF classes' RIO-C queues at the sampled bottleneck report each colour's
    # average: RIO-C's red average counts every colour, so it is never below green's.
    cs = r.queue_colour_samples
    assert set(cs["class"]) == {"af1", "af2"}
    assert (cs["avg_red"] >= cs["avg_green"]).all() and cs["avg_red"].max() > 0
    # Goodput per class: each class's sum is the sum over its flows.
    g = r.goodput_by_class()
    assert g["class"].to_list() == ["AF1", "AF2", "BE", "EF"]
    assert g["flows"].to_list() == [2, 2, 2, 1]
    flows = r.flows
    for cls, prefix in (("AF1", "af1-"), ("BE", "bulk-"), ("EF", "voice")):
        want = flows.filter(flows["name"].str.starts_with(prefix))["goodput_bps"].sum()
        assert g.filter(g["class"] == cls)["goodput_bps"].item() == want
    # The terminal summary and the report show the per-class sums.
    assert "goodput by class:" in p.stdout and "AF2" in p.stdout
    # Drops by colour at the class-queue bottleneck (none: best effort's, no drop
    # precedence) add up to its queue drops.
    cd, q = r.colour_drops, r.queues
    row = cd.filter(cd["iface"] == "r1->r2")
    total = row["dropped_green"] + row["dropped_yellow"] + row["dropped_red"] + row["dropped_none"]
    assert total.item() == q.filter(q["iface"] == "r1->r2")["dropped"].item()
    html = (out / "report.html").read_text()
    assert ">goodput by class</h3>" in html and ">colours</h3>" in html
    assert ">colour_drops</h3>" in html
    # The report draws the topology with the trTCMs at r1's input interfaces.
    assert 'src="figures/topology.svg"' in html
    svg = (out / "figures" / "topology.svg").read_text()
    assert "trtcm (in af1-&gt;r1)" in svg and "trtcm (in af2-&gt;r1)" in svg


def test_no_class_table_without_diffserv(small):
    r = qoslab.run(small)
    assert r.flow_classes.is_empty() and r.goodput_by_class().is_empty()
    assert r.colours.is_empty() and r.colour_drops.is_empty()

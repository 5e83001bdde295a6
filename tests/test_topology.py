"""``qoslab draw``: a topology SVG for every shipped scenario, with the links' rate,
delay and queue kind, the conditioners and captures where they sit, and the flows along
their routes."""

from __future__ import annotations

import itertools
import math
import random
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import cli
from qoslab import topology
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
    # Flows with the same route and DSCP are one group with its count, class and RTT;
    # every group is in the legend.
    assert "af1-a…af1-b ×2 · BE (DSCP 0) · RTT 32 ms: af1 → d" in svg
    assert "voice ×1 · EF (DSCP 46) · RTT 32 ms: voice → d" in svg


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


# ---------------------------------------------------------------------------------------
# Geometry: the drawn flow paths against the layout (numbers, not pixels).


GEOMETRY_SCENARIOS = [
    ROOT / "scenarios/p3/md-rtt-rto.toml",
    ROOT / "scenarios/examples/diffserv_study.toml",
    ROOT / "scenarios/p2/f3-cross.toml",
]
needs_graphviz = pytest.mark.skipif(
    not topology.graphviz_available(),
    reason="Graphviz (dot, neato) is not installed: apt-get install graphviz (scripts/setup.sh)",
)
ENGINES = [pytest.param("graphviz", marks=needs_graphviz), "spring"]


def _dist_to_polyline(p, pts):
    best = math.inf
    for a, b in itertools.pairwise(pts):
        dx, dy = b[0] - a[0], b[1] - a[1]
        L2 = dx * dx + dy * dy
        t = 0.0 if L2 == 0 else max(0.0, min(1.0, ((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / L2))
        best = min(best, math.dist(p, (a[0] + t * dx, a[1] + t * dy)))
    return best


def _check_paths(d):
    """Every drawn group starts at its source's centre and ends at its destination's, and
    every point of every segment lies within its lane offset of the laid-out edge of a
    link on its route; groups sharing a link have their own lanes."""
    lay = d.layout
    links = d.scenario["link"]
    drawn = [g for g in d.groups if g.points]
    assert drawn and len(drawn) == len(d.groups)
    for g in drawn:
        assert g.points[0] == lay.pos[g.path[0]], g.label
        assert g.points[-1] == lay.pos[g.path[-1]], g.label
        route = [lay.edges[li] for li in g.links]
        assert [{links[li]["a"], links[li]["b"]} for li in g.links] == [
            {u, v} for u, v in itertools.pairwise(g.path)
        ]
        tol = max(abs(o) for o in g.offsets) + 0.5
        for a, b in itertools.pairwise(g.points):
            for k in range(11):
                p = (a[0] + k / 10 * (b[0] - a[0]), a[1] + k / 10 * (b[1] - a[1]))
                near = min(_dist_to_polyline(p, e) for e in route)
                assert near <= tol, (g.label, p, near, tol)
    # Groups sharing a link run apart: where each crosses the normal at the link's middle.
    for li, edge in lay.edges.items():
        users = [g for g in drawn if li in g.links]
        mid = topology._at_fraction(edge, 0.5)
        near = [min(_samples(g.points), key=lambda p, m=mid: math.dist(p, m)) for g in users]
        for a, b in itertools.combinations(near, 2):
            assert math.dist(a, b) >= 1.5, (li, a, b)


def _samples(pts, k=20):
    return [(a[0] + t / k * (b[0] - a[0]), a[1] + t / k * (b[1] - a[1]))
            for a, b in itertools.pairwise(pts) for t in range(k + 1)]  # fmt: skip


def _check_rendered(d, fig):
    """The figure draws exactly the geometry's paths (one line per group)."""
    ax = fig.axes[0]
    lines = {ln.get_gid(): ln for ln in ax.get_lines() if str(ln.get_gid()).startswith("flow-")}
    assert len(lines) == len([g for g in d.groups if g.points])
    for i, g in enumerate(d.groups):
        ln = lines[f"flow-{i}"]
        assert list(zip(ln.get_xdata(), ln.get_ydata(), strict=True)) == g.points


def _boxes_overlap(a, b):
    (ax_, ay, aw, ah), (bx, by, bw, bh) = a, b
    return abs(ax_ - bx) < (aw + bw) / 2 - 0.5 and abs(ay - by) < (ah + bh) / 2 - 0.5


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("path", GEOMETRY_SCENARIOS, ids=lambda p: p.stem)
def test_flow_paths_follow_the_laid_out_links(path, engine):
    d = topology.geometry(path, engine=engine)
    assert d.layout.engine == ("dot" if engine == "graphviz" else "spring")
    assert not d.listed
    _check_paths(d)
    _check_rendered(d, topology.render(d))


@needs_graphviz
@pytest.mark.parametrize("case", [*GEOMETRY_SCENARIOS, "200 flows"], ids=str)
def test_graphviz_keeps_link_labels_off_nodes_links_and_flow_paths(case):
    sc = _big(groups_wanted=8) if case == "200 flows" else case
    d = topology.geometry(sc, engine="graphviz")
    lay = d.layout
    assert set(lay.labels) == set(range(len(d.scenario["link"])))
    nodes = [(*lay.pos[n], *lay.size[n]) for n in lay.pos]
    for i, box in lay.labels.items():
        for n, nb in zip(lay.pos, nodes, strict=True):
            assert not _boxes_overlap(box, nb), (case, i, n)
        for j, other in lay.labels.items():
            assert j == i or not _boxes_overlap(box, other), (case, i, j)
        x, y, w, h = box  # no link and no flow path crosses a label's text
        lines = [*lay.edges.values(), *(g.points for g in d.groups)]
        for p in (q for line in lines for q in _samples(line, 10)):
            assert not (abs(p[0] - x) < w / 2 - 1 and abs(p[1] - y) < h / 2 - 1), (case, i, p)


@needs_graphviz
def test_dot_lays_the_network_out_left_to_right():
    d = topology.geometry(ROOT / "scenarios/p3/md-rtt-rto.toml", engine="graphviz")
    x = {n: p[0] for n, p in d.layout.pos.items()}
    # F1's route n1 → R1 → R2 → R3 → R4 → n7: every hop one rank further right.
    chain = ["n1", "R1", "R2", "R3", "R4", "n7"]
    assert all(x[a] < x[b] for a, b in itertools.pairwise(chain)), x


def _big(groups_wanted: int, seed: int = 3):
    """200 flows over 10 routers in a ring with a chord and 20 hosts, two per router;
    ``groups_wanted`` distinct (route, DSCP) pairs."""
    rng = random.Random(seed)
    routers = [f"r{i}" for i in range(10)]
    hosts = [f"h{i}" for i in range(20)]
    node = [{"name": r, "kind": "router"} for r in routers] + [{"name": h} for h in hosts]
    link = [{"a": routers[i], "b": routers[(i + 1) % 10], "rate": "10Mbps",
             "delay": f"{2 + i}ms"} for i in range(10)]  # fmt: skip
    link.append({"a": "r0", "b": "r5", "rate": "10Mbps", "delay": "3ms"})
    link += [{"a": h, "b": routers[i // 2], "rate": "100Mbps", "delay": "1ms"}
             for i, h in enumerate(hosts)]  # fmt: skip
    pairs = set()
    while len(pairs) < groups_wanted:
        a, b = rng.sample(hosts, 2)
        pairs.add((a, b, rng.choice(["EF", "AF11", "BE"])))
    pairs = sorted(pairs)
    flow = []
    for i in range(200):
        a, b, dscp = pairs[i % len(pairs)]
        flow.append({"name": f"f{i}", "from": a, "to": b, "dscp": dscp,
                     "cbr": {"rate": "1kbps"}})  # fmt: skip
    return {"name": "big", "duration": "1s", "node": node, "link": link, "flow": flow}


@pytest.mark.parametrize("engine", ENGINES)
def test_200_flows_10_routers_few_groups_are_drawn_with_counts(engine):
    sc = _big(groups_wanted=8)
    d = topology.geometry(sc, engine=engine)
    assert not d.listed and len(d.groups) == 8
    assert sum(g.count for g in d.groups) == 200
    assert sorted(g.count for g in d.groups) == [25] * 8
    _check_paths(d)
    from qoslab import plot

    fig = topology.render(d)
    _check_rendered(d, fig)
    svg = plot.svg_bytes(fig).decode()
    assert svg.count(" ×25 · ") == 8


@pytest.mark.parametrize("engine", ENGINES)
def test_200_flows_10_routers_many_groups_are_listed_with_their_hops(engine):
    from qoslab import plot

    sc = _big(groups_wanted=40)
    d = topology.geometry(sc, engine=engine)
    assert d.listed and len(d.groups) == 40 > topology.MAX_GROUPS
    assert all(g.points is None for g in d.groups)
    assert sum(g.count for g in d.groups) == 200
    fig = topology.render(d)
    assert not [ln for ln in fig.axes[0].get_lines() if str(ln.get_gid()).startswith("flow-")]
    text = "\n".join(t.get_text() for t in fig.texts)
    rts = topology.routes(sc)
    for g in d.groups:
        assert g.hops_text() in text and g.hops_text().endswith(" → ".join(g.path))
        assert g.path == rts[next(f["name"] for f in sc["flow"] if f["from"] == g.path[0]
                                  and f["to"] == g.path[-1])]  # fmt: skip
    assert "40 flow groups (200 flows;" in text
    # The links' widths tell how many flows cross them.
    crossing = {i: sum(g.count for g in d.groups if i in g.links) for i in d.layout.edges}
    lw = {int(ln.get_gid()[5:]): ln.get_linewidth() for ln in fig.axes[0].get_lines()
          if str(ln.get_gid()).startswith("link-")}  # fmt: skip
    top = max(crossing.values())
    assert 0 < min(crossing.values()) < top
    for i, n in crossing.items():
        assert lw[i] == pytest.approx(max(2.4, topology.LISTED_LINK_LW * n / top)), i
    svg = plot.svg_bytes(fig).decode()
    assert "</svg>" in svg


def _pos_scenario(pos):
    node = [{"name": "a"}, {"name": "r", "kind": "router"}, {"name": "b"}, {"name": "c"}]
    for n, p in zip(node, pos, strict=True):
        if p is not None:
            n["pos"] = p
    link = [{"a": "a", "b": "r", "rate": "1Mbps", "delay": "1ms"},
            {"a": "r", "b": "b", "rate": "1Mbps", "delay": "1ms"},
            {"a": "r", "b": "c", "rate": "1Mbps", "delay": "1ms"}]  # fmt: skip
    flow = [{"name": "f", "from": "a", "to": "b", "cbr": {"rate": "1kbps"}},
            {"name": "g", "from": "c", "to": "a", "cbr": {"rate": "1kbps"}}]  # fmt: skip
    return {"name": "pos", "duration": "1s", "node": node, "link": link, "flow": flow}


@needs_graphviz
def test_node_positions_from_the_scenario_are_kept():
    u = topology.POS_UNIT
    given = [[0, 0], [1, 1], [2, 0], [1, -1.5]]
    d = topology.geometry(_pos_scenario(given), engine="graphviz")
    assert d.layout.engine == "neato"
    p = d.layout.pos
    for n, q in zip("arbc", given, strict=True):  # where given, up to a shift
        assert p[n][0] - p["a"][0] == pytest.approx(q[0] * u, abs=1)
        assert p[n][1] - p["a"][1] == pytest.approx(q[1] * u, abs=1)
    _check_paths(d)
    # Some positions given: those nodes are pinned, the others placed around them.
    d = topology.geometry(_pos_scenario([[0, 0], None, [3, 0], None]), engine="graphviz")
    p = d.layout.pos
    assert d.layout.engine == "neato"
    assert p["b"][0] - p["a"][0] == pytest.approx(3 * u, abs=1)
    assert p["b"][1] == pytest.approx(p["a"][1], abs=1)
    _check_paths(d)


def test_pos_is_a_scenario_key_the_check_accepts_and_validates(tmp_path):
    good = tmp_path / "pos.toml"
    good.write_text(
        'name = "pos"\nduration = "1s"\n[[node]]\nname = "a"\npos = [0, 1.5]\n'
        '[[node]]\nname = "b"\npos = [2, 0]\n'
        '[[link]]\na = "a"\nb = "b"\nrate = "1Mbps"\ndelay = "1ms"\n'
    )
    assert cli("check", good).returncode == 0
    bad = tmp_path / "bad.toml"
    bad.write_text(good.read_text().replace("pos = [2, 0]", 'pos = [2, "x"]'))
    p = cli("check", bad)
    assert p.returncode == 2 and "node[1].pos" in p.stderr + p.stdout


def test_without_graphviz_the_spring_layout_is_used_with_one_warning(monkeypatch):
    monkeypatch.setattr(topology, "graphviz_available", lambda: False)
    monkeypatch.setattr(topology, "_warned", False)
    sc = ROOT / "scenarios/p2/f3-cross.toml"
    with pytest.warns(topology.LayoutWarning, match="apt-get install graphviz"):
        d = topology.geometry(sc)
    assert d.layout.engine == "spring"
    _check_paths(d)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert topology.geometry(sc).layout.engine == "spring"  # warned once only


def test_a_flow_between_unconnected_hosts_is_named_not_drawn():
    from qoslab import plot

    sc = {
        "name": "apart",
        "node": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
        "link": [{"a": "a", "b": "b", "rate": "1Mbps", "delay": "1ms"}],
        "flow": [{"name": "f", "from": "a", "to": "c"}, {"name": "g", "from": "a", "to": "b"}],
    }
    d = topology.geometry(sc, engine="spring")
    assert [g.points is None for g in d.groups] == [True, False]
    svg = plot.svg_bytes(topology.render(d)).decode()
    assert "f ×1 · BE (DSCP 0) · RTT 0 ms: a → c (no route)" in svg
    assert "g ×1 · BE (DSCP 0) · RTT 2 ms: a → b" in svg

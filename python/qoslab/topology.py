"""A picture of what a scenario simulates: nodes (hosts round, routers square), links
labelled with rate, delay and queue kind, conditioners and captures (numbered marks
where they sit, named in the legend), and flows as coloured paths along their routes.

The layout comes from Graphviz: ``dot`` lays the network out left to right (sources on
the left, links oriented the way most flows cross them) and makes room for every link
label; a scenario whose nodes carry ``pos = [x, y]`` is placed by ``neato`` instead (every
node given: exactly there; some given: those pinned, the rest placed around them).
qoslab reads the geometry back (``-Tjson0``: node centres, the edges' Bézier splines,
the label positions) and draws it with matplotlib at one point per layout point, so the
report and ``qoslab draw`` show the same picture. Without Graphviz the picture falls
back to networkx's seeded spring layout with straight links (and warns once how to
install Graphviz).

Flows that share a route and a DSCP are one group, drawn as one path with ×count. Each
group's path follows the laid-out links of its route, in its own lane beside the link
(lanes are offsets from the link's spline), and starts and ends at its endpoints'
centres. Up to :data:`MAX_GROUPS` groups are drawn; with more, the groups are listed
beside the graph with their hops instead. :func:`geometry` returns all of this as
numbers (what the tests check); :func:`draw` renders it.
"""

from __future__ import annotations

import itertools
import json
import math
import shutil
import subprocess
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "Drawing",
    "FlowGroup",
    "Layout",
    "LayoutWarning",
    "draw",
    "geometry",
    "graphviz_available",
    "layout",
    "render",
    "routes",
    "write_topology",
]

#: At most this many flow groups are drawn as paths (one tab10 colour each); with more,
#: every group is listed beside the graph with its hops instead.
MAX_GROUPS = 10
#: At most this many groups are listed beside the graph; the rest are counted.
MAX_LISTED = 60
#: Widest picture [in] with the legend beside the graph (a report's column is 1100 px,
#: 11.5 in at 96 px/in); a wider one gets its legend below the graph.
MAX_WIDTH_IN = 11.5
#: Layout points per unit of a node's ``pos`` (about one node spacing).
POS_UNIT = 110.0
#: Font sizes [pt] of node names, link labels, the legend and the flow listing.
NODE_FONT, LINK_FONT, LEGEND_FONT, LIST_FONT = 9.0, 7.5, 8.0, 7.5
#: Distance [pt] between neighbouring flow lanes along a link, at most.
LANE_GAP = 4.0
#: Width [pt] of the link most flows cross when the groups are listed, not drawn.
LISTED_LINK_LW = 10.0
#: Width [pt] of a drawn flow path.
FLOW_LW = 1.8
#: How long Graphviz may take for one layout [s].
GRAPHVIZ_TIMEOUT = 60.0

#: The flow groups' colours: tab10 with its grey (the links' colour) replaced by navy.
_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
            "#000080", "#bcbd22", "#17becf"]  # fmt: skip
_FAMILY = "DejaVu Sans"  # matplotlib's default font; Graphviz sizes labels with it too
_warned = False


class LayoutWarning(UserWarning):
    """The topology picture fell back to the simple layout (Graphviz missing or failing)."""


# ---------------------------------------------------------------------------------------
# Scenario reading


def _seconds(v: Any) -> float:
    from qoslab.tables import numeric_companions

    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    c = numeric_companions({"x": str(v)})
    return float(c.get("x_s", 0.0) or 0.0)


def _queue_kind(q: Any) -> str:
    if not isinstance(q, Mapping):
        return "droptail"
    kind = str(q.get("kind", "droptail"))
    if kind == "classes":
        names = [str(c.get("name", "?")) for c in q.get("classes") or []]
        return f"classes/{q.get('scheduler', '?')}({', '.join(names)})"
    return kind


def _graph(sc: Mapping[str, Any]):
    import networkx as nx

    g = nx.Graph()
    for n in sc.get("node") or []:
        g.add_node(n["name"], kind=n.get("kind", "host"))
    for i, link in enumerate(sc.get("link") or []):
        g.add_edge(link["a"], link["b"], delay=_seconds(link.get("delay", 0)), order=i, link=link)
    return g


def routes(sc: Mapping[str, Any]) -> dict[str, list[str]]:
    """Each flow's route (node names, source first): the shortest path by propagation
    delay, ties broken by hop count (the engine's rule, docs/scenario-format.md)."""
    import networkx as nx

    g = _graph(sc)
    hop = min((d["delay"] for *_, d in g.edges(data=True) if d["delay"] > 0), default=1.0)
    for *_, d in g.edges(data=True):  # one hop weighs far less than any delay difference
        d["w"] = d["delay"] + hop * 1e-6
    out = {}
    for f in sc.get("flow") or []:
        try:
            out[f["name"]] = nx.shortest_path(g, f["from"], f["to"], weight="w")
        except (nx.NetworkXNoPath, nx.NodeNotFound):
            out[f["name"]] = [f["from"], f["to"]]
    return out


def _link_label(link: Mapping[str, Any]) -> str:
    rate = str(link.get("rate", "?"))
    if link.get("rate_b_to_a") is not None:
        rate += f" / {link['rate_b_to_a']}"
    qa = link.get("queue_a_to_b", link.get("queue"))
    qb = link.get("queue_b_to_a", link.get("queue"))
    q = _queue_kind(qa)
    if _queue_kind(qb) != q:
        q = f"→ {q}; ← {_queue_kind(qb)}"
    return f"{rate}, {link.get('delay', '?')}\n{q}"


_PHB = {"BE": 0, "DF": 0, "EF": 46}
_PHB.update({f"AF{c}{d}": 8 * c + 2 * d for c in range(1, 5) for d in range(1, 4)})
_PHB.update({f"CS{c}": 8 * c for c in range(8)})
_PHB_NAME = {v: k for k, v in reversed(list(_PHB.items())) if k != "DF"}
_PHB_NAME[0] = "BE"


def _dscp(v: Any) -> int:
    if isinstance(v, str):
        return _PHB.get(v.strip().upper(), 0)
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0


def _dscp_text(d: int) -> str:
    name = _PHB_NAME.get(d)
    return f"{name} (DSCP {d})" if name else f"DSCP {d}"


def _ms(s: float) -> str:
    return f"{s * 1e3:.3g} ms"


@dataclass
class FlowGroup:
    """Flows that share a route and a DSCP: drawn (or listed) as one path with ×count."""

    #: The group's name in the legend: the flows' ``group`` label, or their names.
    label: str
    #: How many flows (copies of a ``count`` flow each count).
    count: int
    #: The route, node names from the source to the destination.
    path: list[str]
    #: The link (index into the scenario's ``[[link]]``) of each hop of ``path``.
    links: list[int]
    #: The DSCP the sources send with.
    dscp: int
    #: The smallest and largest round-trip propagation time of the flows [s].
    rtt: tuple[float, float]
    #: The drawn path [pt], ``None`` when the groups are listed instead of drawn.
    points: list[tuple[float, float]] | None = None
    #: The lane offset [pt] on each hop's link (sign: left of the link's a → b).
    offsets: list[float] = field(default_factory=list)

    def hops_text(self) -> str:
        """One line for the listing: label, ×count, class, RTT and every hop."""
        return f"{self.text().rsplit(': ', 1)[0]}: {' → '.join(self.path)}"

    def text(self) -> str:
        """One line: label, ×count, class, RTT and the endpoints."""
        lo, hi = self.rtt
        rtt = _ms(lo) if hi - lo < 1e-9 else f"{_ms(lo)}…{_ms(hi)}"
        return (
            f"{self.label} ×{self.count} · {_dscp_text(self.dscp)} · RTT {rtt}: "
            f"{self.path[0]} → {self.path[-1]}"
        )


def _groups(sc: Mapping[str, Any]) -> list[FlowGroup]:
    from qoslab.scenario import _extra_delays

    g = _graph(sc)
    rts = routes(sc)
    delay = {(a, b): d["delay"] for a, b, d in g.edges(data=True)}
    order = {(a, b): d["order"] for a, b, d in g.edges(data=True)}
    best: dict[tuple[str, ...], dict[str, Any]] = {}
    for i, f in enumerate(sc.get("flow") or []):
        path = rts.get(f["name"], [f["from"], f["to"]])
        dscp = _dscp(f.get("dscp", 0))
        count = f.get("count", 1)
        count = count if isinstance(count, int) and count > 0 else 1
        base = 0.0
        links = []
        for u, v in itertools.pairwise(path):
            key = (u, v) if (u, v) in delay else (v, u)
            base += 2 * delay.get(key, 0.0)
            links.append(order.get(key, -1))
        extra = [0.0]
        if f.get("extra_delay") is not None:
            try:
                extra = _extra_delays(
                    f["extra_delay"],
                    count,
                    f["name"],
                    int(sc.get("seed", 1)),
                    None,
                    f"flow[{i}].extra_delay",
                )
            except Exception:  # a scenario the check refuses; the picture still draws
                extra = [0.0]
        names = [f["name"]] if count == 1 else [f"{f['name']}-{k}" for k in (1, count)]
        e = best.setdefault(
            (*path, "\0", str(dscp)),
            {
                "path": path,
                "links": links,
                "dscp": dscp,
                "count": 0,
                "names": [],
                "groups": set(),
                "rtt": [math.inf, -math.inf],
            },
        )
        e["count"] += count
        e["names"] += names
        e["groups"].add(f.get("group"))
        e["rtt"][0] = min(e["rtt"][0], base + min(extra))
        e["rtt"][1] = max(e["rtt"][1], base + max(extra))
    out = []
    for e in best.values():
        labels = e["groups"]
        if len(labels) == 1 and None not in labels:
            label = str(next(iter(labels)))
        elif len(e["names"]) == 1:
            label = e["names"][0]
        else:
            label = f"{e['names'][0]}…{e['names'][-1]}"
        out.append(
            FlowGroup(
                label, e["count"], e["path"], e["links"], e["dscp"], (e["rtt"][0], e["rtt"][1])
            )
        )
    return out


# ---------------------------------------------------------------------------------------
# Layout


@dataclass
class Layout:
    """Where the layout engine put the scenario's nodes, links and link labels, in
    points (y up)."""

    #: ``"dot"``, ``"neato"`` (nodes with ``pos``) or ``"spring"`` (no Graphviz).
    engine: str
    #: Node centre by name.
    pos: dict[str, tuple[float, float]]
    #: Node width and height by name.
    size: dict[str, tuple[float, float]]
    #: Each link's laid-out edge (by link index) as a polyline from its ``a`` node's
    #: centre to its ``b`` node's centre.
    edges: dict[int, list[tuple[float, float]]]
    #: Each link's label centre and the label box's width and height.
    labels: dict[int, tuple[float, float, float, float]]
    #: The largest flow lane offset per link [pt] the label was kept clear of.
    lane_room: dict[int, float] = field(default_factory=dict)

    def bbox(self) -> tuple[float, float, float, float]:
        """The smallest box holding the nodes, edges and labels: x0, y0, x1, y1."""
        xs, ys = [], []
        for n, (x, y) in self.pos.items():
            w, h = self.size[n]
            xs += [x - w / 2, x + w / 2]
            ys += [y - h / 2, y + h / 2]
        for pts in self.edges.values():
            xs += [p[0] for p in pts]
            ys += [p[1] for p in pts]
        for x, y, w, h in self.labels.values():
            xs += [x - w / 2, x + w / 2]
            ys += [y - h / 2, y + h / 2]
        if not xs:
            return (0.0, 0.0, 1.0, 1.0)
        return (min(xs), min(ys), max(xs), max(ys))


def graphviz_available() -> bool:
    """True when Graphviz's ``dot`` and ``neato`` are on the PATH."""
    return shutil.which("dot") is not None and shutil.which("neato") is not None


def _text_size(text: str, size: float) -> tuple[float, float]:
    """Width and height [pt] of (multi-line) ``text`` at ``size`` in qoslab's font."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import text_to_path

    prop = FontProperties(family=_FAMILY, size=size)
    lines = text.split("\n")
    w = max(
        (text_to_path.get_text_width_height_descent(ln, prop, ismath=False)[0] for ln in lines),
        default=0.0,
    )
    return float(w), 1.25 * size * len(lines)


def _node_size(name: str, kind: str) -> tuple[float, float]:
    w, _ = _text_size(name, NODE_FONT)
    if kind == "router":
        return max(44.0, w + 14.0), 28.0
    d = max(30.0, w + 10.0)
    return d, d


def _bezier(pts: Sequence[tuple[float, float]], per: int = 8) -> list[tuple[float, float]]:
    """A cubic B-spline as Graphviz writes it (p0, then three points per piece), sampled."""
    out = [pts[0]]
    for i in range(0, len(pts) - 3, 3):
        p0, p1, p2, p3 = pts[i : i + 4]
        for k in range(1, per + 1):
            t = k / per
            a, b, c, d = (1 - t) ** 3, 3 * t * (1 - t) ** 2, 3 * t * t * (1 - t), t**3
            out.append(
                (
                    a * p0[0] + b * p1[0] + c * p2[0] + d * p3[0],
                    a * p0[1] + b * p1[1] + c * p2[1] + d * p3[1],
                )
            )
    return out


def _parse_spline(pos: str) -> list[tuple[float, float]]:
    first = pos.split(";")[0]
    pts = []
    for tok in first.split():
        if tok.startswith(("e,", "s,")):
            continue  # arrow-head end points (not drawn: links have no direction)
        x, y = tok.split(",")[:2]
        pts.append((float(x), float(y)))
    return _bezier(pts) if len(pts) >= 4 else pts


def _dedupe(pts: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for p in pts:
        if not out or math.dist(out[-1], p) > 1e-6:
            out.append((float(p[0]), float(p[1])))
    return out


def _lane_counts(sc: Mapping[str, Any], groups: Sequence[FlowGroup]) -> dict[int, int]:
    n: dict[int, int] = {}
    for g in groups[:MAX_GROUPS] if len(groups) <= MAX_GROUPS else []:
        for li in set(g.links):
            n[li] = n.get(li, 0) + 1
    return n


def _lane_room(sc: Mapping[str, Any], groups: Sequence[FlowGroup], lanes: Mapping[int, int],
               gap: float) -> dict[int, float]:  # fmt: skip
    """Per link, how far [pt] its flow lanes (or, groups listed, its width) reach out."""
    if len(groups) > MAX_GROUPS:
        return dict.fromkeys(range(len(sc.get("link") or [])), LISTED_LINK_LW / 2)
    return {li: (k - 1) / 2 * gap + FLOW_LW for li, k in lanes.items()}


def _lane_gap(size: Mapping[str, tuple[float, float]], lanes: Mapping[int, int]) -> float:
    """Lanes stay inside the smallest node, so a path's jog into its lane is hidden."""
    most = max(lanes.values(), default=1)
    inner = min((min(w, h) / 2 for w, h in size.values()), default=14.0)
    return min(LANE_GAP, 0.7 * inner / max(1.0, (most - 1) / 2))


def _orient(sc: Mapping[str, Any], groups: Sequence[FlowGroup]) -> list[bool]:
    """Per link: True when dot should rank ``a`` before ``b`` (most flows cross it from
    a to b; links no flow crosses: from the end nearer a source)."""
    import networkx as nx

    links = sc.get("link") or []
    net = [0] * len(links)
    for g in groups:
        for u, li in zip(g.path, g.links, strict=False):
            if 0 <= li < len(links):
                net[li] += g.count if links[li]["a"] == u else -g.count
    gr = _graph(sc)
    sources = {g.path[0] for g in groups if g.path and g.path[0] in gr}
    if not sources and gr.number_of_nodes():
        sources = {next(iter(gr.nodes))}
    depth = nx.multi_source_dijkstra_path_length(gr, sources, weight=None) if sources else {}
    out = []
    for i, link in enumerate(links):
        if net[i]:
            out.append(net[i] > 0)
        else:
            out.append(depth.get(link["a"], math.inf) <= depth.get(link["b"], math.inf))
    return out


def _q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _run_graphviz(prog: str, args: list[str], src: str) -> dict[str, Any]:
    # Graphviz runs as its own executable through subprocess rather than through the
    # PyPI ``graphviz`` binding: that package is a thin wrapper that runs the same
    # executables (so the Debian package is needed either way), it would add a
    # dependency to every install, and all qoslab needs is the ``-Tjson0`` text back.
    exe = shutil.which(prog)
    if exe is None:
        raise FileNotFoundError(prog)
    p = subprocess.run(
        [exe, *args, "-Tjson0"],
        input=src,
        capture_output=True,
        text=True,
        timeout=GRAPHVIZ_TIMEOUT,
        check=False,
    )
    if p.returncode != 0:
        raise RuntimeError(f"{prog} exited with {p.returncode}: {p.stderr.strip()[:300]}")
    return json.loads(p.stdout)


def _graphviz_layout(sc: Mapping[str, Any], groups: Sequence[FlowGroup]) -> Layout:
    nodes = sc.get("node") or []
    links = sc.get("link") or []
    names = [n["name"] for n in nodes]
    idx = {n: i for i, n in enumerate(names)}
    size = {n["name"]: _node_size(n["name"], n.get("kind", "host")) for n in nodes}
    given = {n["name"]: n["pos"] for n in nodes if n.get("pos") is not None}
    lanes = _lane_counts(sc, groups)
    gap = _lane_gap(size, lanes)
    room = _lane_room(sc, groups, lanes, gap)
    engine = "neato" if given else "dot"
    lines = ["graph G {", "margin=0;", 'node [label="", fixedsize=true];']
    if engine == "dot":
        lines.append("rankdir=LR; nodesep=0.3; ranksep=0.55; splines=true;")
    else:
        lines.append("splines=false; overlap=true;")
    for n in nodes:
        w, h = size[n["name"]]
        shape = "box" if n.get("kind") == "router" else "circle"
        attrs = f"shape={shape}, width={w / 72:.4f}, height={h / 72:.4f}"
        if n["name"] in given:
            x, y = (float(v) * POS_UNIT for v in given[n["name"]])
            attrs += (
                f', pos="{x:.2f},{y:.2f}"'
                if len(given) == len(nodes)
                else f', pos="{x / 72:.4f},{y / 72:.4f}!"'
            )
        lines.append(f"n{idx[n['name']]} [{attrs}];")
    fwd = _orient(sc, groups)
    label_box = {}
    for i, link in enumerate(links):
        if link["a"] not in idx or link["b"] not in idx:
            continue
        w, h = _text_size(_link_label(link), LINK_FONT)
        pad = room.get(i, 0.0) + 3.0  # the flow lanes beside the link stay clear of it
        label_box[i] = (w + 6.0, h + 2.0)
        a, b = (link["a"], link["b"]) if fwd[i] else (link["b"], link["a"])
        attrs = f'id="L{i}"'
        if engine == "dot":
            cell = (
                f'<td fixedsize="true" width="{math.ceil(w + 6 + 2 * pad)}" '
                f'height="{math.ceil(h + 2 + 2 * pad)}"></td>'
            )
            attrs += (
                ', label=<<table border="0" cellborder="0" cellspacing="0" '
                f'cellpadding="0"><tr>{cell}</tr></table>>'
            )
        lines.append(f"n{idx[a]} -- n{idx[b]} [{attrs}];")
    lines.append("}")
    src = "\n".join(lines)
    if engine == "dot":
        data = _run_graphviz("dot", [], src)
    else:
        data = _run_graphviz("neato", ["-n2"] if len(given) == len(nodes) else [], src)
    pos = {}
    for o in data.get("objects", []):
        x, y = o["pos"].split(",")[:2]
        pos[names[int(o["name"][1:])]] = (float(x), float(y))
    edges, labels = {}, {}
    for e in data.get("edges", []):
        i = int(e["id"][1:])
        a, b = links[i]["a"], links[i]["b"]
        pts = _parse_spline(e.get("pos", "")) or [pos[a], pos[b]]
        if math.dist(pts[0], pos[a]) > math.dist(pts[-1], pos[a]):
            pts = pts[::-1]
        edges[i] = _dedupe([pos[a], *pts, pos[b]])
        if engine == "dot" and "lp" in e:
            x, y = e["lp"].split(",")[:2]
            labels[i] = (float(x), float(y), *label_box[i])
    lay = Layout(engine, pos, size, edges, labels, room)
    if engine != "dot":
        _place_labels(lay, links, label_box)
    return lay


def _place_labels(
    lay: Layout, links: Sequence[Mapping[str, Any]], boxes: Mapping[int, tuple[float, float]]
) -> None:
    """Labels of straight links: beside the link's middle, clear of its flow lanes, on
    the side that overlaps fewer nodes and labels."""

    def overlaps(x: float, y: float, w: float, h: float) -> float:
        hit = 0.0
        for n, (nx_, ny_) in lay.pos.items():
            nw, nh = lay.size[n]
            dx = min(x + w / 2, nx_ + nw / 2) - max(x - w / 2, nx_ - nw / 2)
            dy = min(y + h / 2, ny_ + nh / 2) - max(y - h / 2, ny_ - nh / 2)
            hit += max(dx, 0) * max(dy, 0)
        for lx, ly, lw, lh in lay.labels.values():
            dx = min(x + w / 2, lx + lw / 2) - max(x - w / 2, lx - lw / 2)
            dy = min(y + h / 2, ly + lh / 2) - max(y - h / 2, ly - lh / 2)
            hit += max(dx, 0) * max(dy, 0)
        return hit

    for i, pts in lay.edges.items():
        if i not in boxes:
            continue
        w, h = boxes[i]
        (x0, y0), (x1, y1) = pts[0], pts[-1]
        L = math.hypot(x1 - x0, y1 - y0) or 1.0
        nx_, ny_ = -(y1 - y0) / L, (x1 - x0) / L
        reach = lay.lane_room.get(i, 0.0) + 3.0 + abs(nx_) * w / 2 + abs(ny_) * h / 2
        mx, my = (x0 + x1) / 2, (y0 + y1) / 2
        cands = [(mx + s * nx_ * reach, my + s * ny_ * reach) for s in (1, -1)]
        cands.sort(key=lambda c: (overlaps(c[0], c[1], w, h), -c[1]))
        lay.labels[i] = (*cands[0], w, h)


def _spring_layout(sc: Mapping[str, Any], groups: Sequence[FlowGroup]) -> Layout:
    import networkx as nx
    import numpy as np

    g = _graph(sc)
    nodes = sc.get("node") or []
    size = {n["name"]: _node_size(n["name"], n.get("kind", "host")) for n in nodes}
    lanes = _lane_counts(sc, groups)
    gap = _lane_gap(size, lanes)
    room = _lane_room(sc, groups, lanes, gap)
    pos: dict[str, tuple[float, float]] = {}
    if g.number_of_nodes():
        # The routers' backbone laid out by breadth from the first router, the hosts
        # around it; the spring layout then straightens it (seeded: reproducible).
        start = next((n for n, k in g.nodes(data="kind") if k == "router"), next(iter(g.nodes)))
        depth = {start: 0}
        for comp in nx.connected_components(g):
            root = start if start in comp else next(iter(comp))
            depth.update(nx.single_source_shortest_path_length(g, root))
        by: dict[int, list[str]] = {}
        for n in g.nodes:
            by.setdefault(depth.get(n, 0), []).append(n)
        init = {
            n: np.array([float(x), i - (len(ns) - 1) / 2])
            for x, ns in by.items()
            for i, n in enumerate(ns)
        }
        k = 1.5 / max(1.0, g.number_of_nodes() ** 0.5)
        raw = nx.spring_layout(g, pos=init, seed=1, k=k, iterations=100)
        given = {n["name"]: n["pos"] for n in nodes if n.get("pos") is not None}
        lens = [float(np.linalg.norm(raw[a] - raw[b])) for a, b in g.edges if a != b]
        unit = 110.0 / (float(np.median(lens)) if lens and np.median(lens) > 0 else 1.0)
        for n, p in raw.items():
            q = given.get(n)
            pos[n] = (
                (float(q[0]) * POS_UNIT, float(q[1]) * POS_UNIT)
                if q is not None
                else (float(p[0]) * unit, float(p[1]) * unit)
            )
    links = sc.get("link") or []
    edges = {
        i: _dedupe([pos[ln["a"]], pos[ln["b"]]])
        for i, ln in enumerate(links)
        if ln["a"] in pos and ln["b"] in pos
    }
    lay = Layout("spring", pos, size, edges, {}, room)
    boxes = {}
    for i in edges:
        w, h = _text_size(_link_label(links[i]), LINK_FONT)
        boxes[i] = (w + 6.0, h + 2.0)
    _place_labels(lay, links, boxes)
    return lay


def layout(scenario: Any, engine: str = "auto") -> Layout:
    """The layout of ``scenario`` (a file, a dict or a :class:`~qoslab.Scenario`):
    ``engine="auto"`` uses Graphviz when it is installed (dot, or neato for nodes with
    ``pos``) and the spring layout otherwise (warning once); ``"graphviz"`` or
    ``"spring"`` ask for one."""
    sc = _data(scenario)
    return _layout(sc, _groups(sc), engine)


def _layout(sc: Mapping[str, Any], groups: Sequence[FlowGroup], engine: str) -> Layout:
    global _warned
    if engine not in ("auto", "graphviz", "spring"):
        raise ValueError(f"layout engine: expected auto, graphviz or spring, found {engine!r}")
    if engine == "spring":
        return _spring_layout(sc, groups)
    if engine == "graphviz" or graphviz_available():
        try:
            return _graphviz_layout(sc, groups)
        except (OSError, RuntimeError, ValueError, KeyError, subprocess.TimeoutExpired) as e:
            if engine == "graphviz":
                raise
            why = f"Graphviz failed ({e})"
    else:
        why = "Graphviz's dot is not installed"
    if not _warned:
        _warned = True
        warnings.warn(
            f"topology pictures: {why}, so they use the simple spring layout; install "
            "Graphviz for the layered layout (Debian/Ubuntu: apt-get install graphviz; "
            "scripts/setup.sh does it when run as root)",
            LayoutWarning,
            stacklevel=3,
        )
    return _spring_layout(sc, groups)


# ---------------------------------------------------------------------------------------
# Flow paths


def _offset(pts: Sequence[tuple[float, float]], d: float) -> list[tuple[float, float]]:
    """``pts`` moved sideways by ``d`` (positive: to the left of the direction of travel)."""
    out = []
    n = len(pts)
    for i, (x, y) in enumerate(pts):
        (ax, ay), (bx, by) = pts[max(i - 1, 0)], pts[min(i + 1, n - 1)]
        L = math.hypot(bx - ax, by - ay) or 1.0
        out.append((x - d * (by - ay) / L, y + d * (bx - ax) / L))
    return out


def _flow_paths(sc: Mapping[str, Any], lay: Layout, groups: Sequence[FlowGroup]) -> None:
    links = sc.get("link") or []
    lanes: dict[int, list[int]] = {}
    for gi, g in enumerate(groups):
        for li in dict.fromkeys(g.links):
            lanes.setdefault(li, []).append(gi)
    gap = _lane_gap(lay.size, {li: len(v) for li, v in lanes.items()})
    for gi, g in enumerate(groups):
        if any(p not in lay.pos for p in g.path) or any(li not in lay.edges for li in g.links):
            continue
        pts = [lay.pos[g.path[0]]]
        g.offsets = []
        for u, li in zip(g.path, g.links, strict=False):
            k = lanes[li].index(gi)
            o = (k - (len(lanes[li]) - 1) / 2) * gap
            seg = _offset(lay.edges[li], o)  # from the link's a to its b
            pts += seg if links[li]["a"] == u else seg[::-1]
            g.offsets.append(o)
        pts.append(lay.pos[g.path[-1]])
        g.points = _dedupe(pts)


@dataclass
class Drawing:
    """What :func:`draw` renders: the layout, the flow groups (with their drawn paths
    when there are at most :data:`MAX_GROUPS`), and whether they are listed instead."""

    #: The scenario as a dict.
    scenario: Mapping[str, Any]
    #: Node, link and label geometry.
    layout: Layout
    #: Every flow group, in the order of the scenario's flows.
    groups: list[FlowGroup]
    #: True when the groups are listed beside the graph instead of drawn.
    listed: bool


def _data(scenario: Any) -> Mapping[str, Any]:
    from qoslab.scenario import load

    return scenario if isinstance(scenario, Mapping) else load(scenario).data


def geometry(scenario: Any, engine: str = "auto") -> Drawing:
    """The laid-out picture of ``scenario`` as numbers (see :class:`Drawing`)."""
    sc = _data(scenario)
    groups = _groups(sc)
    lay = _layout(sc, groups, engine)
    listed = len(groups) > MAX_GROUPS
    if not listed:
        _flow_paths(sc, lay, groups)
    return Drawing(sc, lay, groups, listed)


# ---------------------------------------------------------------------------------------
# Rendering


def _at_fraction(pts: Sequence[tuple[float, float]], frac: float) -> tuple[float, float]:
    """The point ``frac`` of the way along the polyline ``pts``."""
    lens = [math.dist(a, b) for a, b in itertools.pairwise(pts)]
    goal = frac * sum(lens)
    for (a, b), L in zip(itertools.pairwise(pts), lens, strict=True):
        if goal <= L and L > 0:
            t = goal / L
            return (a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1]))
        goal -= L
    return pts[-1]


def _outside(
    lay: Layout, li: int, ends: tuple[str, str], frac: float, from_a: bool
) -> tuple[float, float]:
    """A point ``frac`` of the way along link ``li``'s edge between the outlines of its
    nodes ``ends`` (a, b), from its ``a`` end or its ``b`` end."""
    pts = lay.edges[li]
    na, nb = ends
    inner = [p for p in pts if not _inside(lay, na, p) and not _inside(lay, nb, p)] or pts
    return _at_fraction(inner if from_a else inner[::-1], frac)


def _inside(lay: Layout, n: str, p: tuple[float, float]) -> bool:
    (x, y), (w, h) = lay.pos[n], lay.size[n]
    return abs(p[0] - x) <= w / 2 + 1 and abs(p[1] - y) <= h / 2 + 1


def _marks(sc: Mapping[str, Any], lay: Layout) -> list[tuple[tuple[float, float], str, str]]:
    """Conditioners and captures: (where, colour, legend text) each."""
    links = sc.get("link") or []
    ends = {}
    for i, ln in enumerate(links):
        if i in lay.edges:
            ends[(ln["a"], ln["b"])] = (i, True)
            ends[(ln["b"], ln["a"])] = (i, False)

    def on_iface(iface: str, frac: float) -> tuple[float, float] | None:
        a, _, b = str(iface).partition("->")
        if (a, b) not in ends:
            return None
        i, from_a = ends[(a, b)]
        return _outside(lay, i, (links[i]["a"], links[i]["b"]), frac, from_a)

    def corner(node: str, k: int) -> tuple[float, float]:
        (x, y), (w, h) = lay.pos[node], lay.size[node]
        return (x + w / 2 + 5 + 11 * k, y + h / 2)

    out: list[tuple[tuple[float, float], str, str]] = []
    at_node: dict[str, int] = {}
    for c in sc.get("conditioner") or []:
        kinds = ", ".join(str(s.get("kind", "?")) for s in c.get("stages") or [])
        xy: tuple[float, float] | None = None
        if c.get("at") in lay.pos:
            k = at_node[c["at"]] = at_node.get(c["at"], -1) + 1
            xy, text = corner(c["at"], k), f"{kinds} (at {c['at']})"
        elif c.get("iface"):
            xy, text = on_iface(c["iface"], 0.2), f"{kinds} (before {c['iface']})"
        elif c.get("iface_in"):
            xy, text = on_iface(c["iface_in"], 0.8), f"{kinds} (in {c['iface_in']})"
        if xy is not None:
            out.append((xy, "#c30", text))
    for q in sc.get("qosmgr") or []:
        at = q.get("at") or q.get("host")
        if at in lay.pos:
            k = at_node[at] = at_node.get(at, -1) + 1
            out.append((corner(at, k), "#c30", f"qosmgr (at {at})"))
    for cap in sc.get("capture") or []:
        xy = on_iface(cap.get("iface", ""), 0.5 if cap.get("direction") == "both" else 0.4)
        if xy is not None:
            out.append((xy, "#06c", f"pcap {cap['iface']} {cap.get('direction', 'tx')}"))
    return out


def draw(scenario: Any, title: str | None = None, engine: str = "auto"):
    """The topology figure of ``scenario`` (a file, a dict or a
    :class:`~qoslab.Scenario`); returns a matplotlib Figure (see :func:`geometry` for
    the ``engine``)."""
    return render(geometry(scenario, engine), title)


def render(d: Drawing, title: str | None = None):
    """The matplotlib Figure of a :class:`Drawing`: one point per layout point."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Circle, FancyArrowPatch, Rectangle

    from qoslab import plot

    sc, lay = d.scenario, d.layout
    fig = plot.QFigure(figsize=(4, 3))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_axis_off()
    ax.set_aspect("equal")

    # Links and their labels. Listed groups are not drawn: then a link's width tells how
    # many flows cross it (LISTED_LINK_LW at the busiest).
    crossing: dict[int, int] = {}
    for g in d.groups if d.listed else []:
        for li in set(g.links):
            crossing[li] = crossing.get(li, 0) + g.count
    busiest = max(crossing.values(), default=0)
    for i, pts in lay.edges.items():
        if d.listed:
            band = LISTED_LINK_LW * crossing.get(i, 0) / max(busiest, 1)
        else:  # a cable holding the link's flow lanes
            band = 2 * lay.lane_room.get(i, 0.0) + 1.0
        ax.plot(
            [p[0] for p in pts],
            [p[1] for p in pts],
            color="#c8c8c8",
            lw=max(2.4, band),
            zorder=1,
            solid_capstyle="round",
            gid=f"link-{i}",
        )
    links = sc.get("link") or []
    for i, (x, y, _w, _h) in lay.labels.items():
        ax.text(
            x,
            y,
            _link_label(links[i]),
            fontsize=LINK_FONT,
            family=_FAMILY,
            ha="center",
            va="center",
            color="#333",
            zorder=5,
            linespacing=1.1,
        )

    # Flow groups: each in its lane along its route, an arrow head on every hop.
    handles = []
    for gi, g in enumerate(d.groups):
        if d.listed:
            continue
        colour = _COLOURS[gi % len(_COLOURS)]
        if not g.points:  # its endpoints are not connected: named, not drawn
            handles.append(Line2D([], [], color=colour, lw=2.2, ls=":",
                                  label=f"{g.text()} (no route)"))  # fmt: skip
            continue
        xs, ys = [p[0] for p in g.points], [p[1] for p in g.points]
        ax.plot(
            xs,
            ys,
            color=colour,
            lw=FLOW_LW,
            alpha=0.95,
            zorder=2,
            solid_joinstyle="round",
            gid=f"flow-{gi}",
        )
        for li in g.links:
            mid = _at_fraction(lay.edges[li], 0.5)
            k = min(range(len(g.points) - 1), key=lambda j: math.dist(g.points[j], mid))
            a, b = g.points[k], g.points[k + 1]
            ax.add_patch(
                FancyArrowPatch(
                    a,
                    b,
                    arrowstyle="-|>",
                    mutation_scale=14,
                    lw=0,
                    color=colour,
                    zorder=2.5,
                    shrinkA=0,
                    shrinkB=0,
                )
            )
        handles.append(Line2D([], [], color=colour, lw=2.2, label=g.text()))

    # Nodes, their names inside.
    for n, (x, y) in lay.pos.items():
        w, h = lay.size[n]
        kind = next((m.get("kind", "host") for m in sc.get("node") or [] if m["name"] == n), "host")
        if kind == "router":
            patch = Rectangle((x - w / 2, y - h / 2), w, h, fc="#fdb", ec="#333", lw=1.0)
        else:
            patch = Circle((x, y), w / 2, fc="#cde", ec="#333", lw=1.0)
        patch.set_zorder(3)
        ax.add_patch(patch)
        ax.text(x, y, n, fontsize=NODE_FONT, family=_FAMILY, ha="center", va="center", zorder=4)

    # Conditioners and captures: numbered marks, named in the legend.
    marks = _marks(sc, lay)
    for k, (xy, colour, _text) in enumerate(marks, 1):
        ax.text(
            *xy,
            str(k),
            fontsize=6.5,
            color="white",
            ha="center",
            va="center",
            zorder=7,
            fontweight="bold",
            bbox={"boxstyle": "circle,pad=0.2", "fc": colour, "ec": "white", "lw": 0.6},
        )
    if busiest:
        label = f"link width: flows crossing it ({busiest} at the widest)"
        handles.append(Line2D([], [], color="#c8c8c8", lw=LISTED_LINK_LW * 0.6, label=label))
    handles += [
        Line2D([], [], ls="", marker="o", mfc="#cde", mec="#333", label="host"),
        Line2D([], [], ls="", marker="s", mfc="#fdb", mec="#333", label="router"),
    ]
    for k, (_xy, colour, text) in enumerate(marks, 1):
        kind = "capture" if colour == "#06c" else "conditioner"
        handles.append(
            Line2D([], [], ls="", marker=f"${k}$", color=colour, ms=7, label=f"{kind} {k}: {text}")
        )

    # The frame: the layout's box at one point per point, the legend (and the listing of
    # the flow groups when there are too many to draw) to its right.
    x0, y0, x1, y1 = lay.bbox()
    for g in d.groups:
        for p in g.points or []:
            x0, y0, x1, y1 = min(x0, p[0]), min(y0, p[1]), max(x1, p[0]), max(y1, p[1])
    for (mx, my), *_ in marks:
        x0, y0, x1, y1 = min(x0, mx - 8), min(y0, my - 8), max(x1, mx + 8), max(y1, my + 8)
    pad = 10.0
    gw, gh = (x1 - x0 + 2 * pad) / 72, (y1 - y0 + 2 * pad) / 72
    ax.set_xlim(x0 - pad, x1 + pad)
    ax.set_ylim(y0 - pad, y1 + pad)
    leg = fig.legend(
        handles=handles,
        fontsize=LEGEND_FONT,
        loc="upper left",
        frameon=False,
        handlelength=1.6,
        borderaxespad=0,
    )
    listing = None
    if d.listed:
        flows = sum(g.count for g in d.groups)
        rows = [
            f"{len(d.groups)} flow groups ({flows} flows; a group: the flows with the same "
            "route and DSCP), too many to draw; their hops:"
        ]
        rows += [g.hops_text() for g in d.groups[:MAX_LISTED]]
        if len(d.groups) > MAX_LISTED:
            rows.append(f"… and {len(d.groups) - MAX_LISTED} more groups (the flows table)")
        listing = fig.text(
            0,
            0,
            "\n".join(rows),
            fontsize=LIST_FONT,
            family="DejaVu Sans Mono",
            va="top",
            ha="left",
            linespacing=1.15,
        )
    tt = fig.text(
        0, 0, title or f"{sc.get('name', 'scenario')}: topology", fontsize=11, va="top", ha="left"
    )
    fig.draw_without_rendering()
    dpi = fig.dpi
    lw_, lh_ = (leg.get_window_extent().width / dpi, leg.get_window_extent().height / dpi)
    sw, sh = lw_, lh_
    if listing is not None:
        e = listing.get_window_extent()
        sw, sh = max(sw, e.width / dpi), sh + 0.15 + e.height / dpi
    th = tt.get_window_extent().height / dpi + 0.15
    m, gap = 0.15, 0.25
    beside = m + gw + gap + sw + m <= MAX_WIDTH_IN or sw > gw
    if beside:  # the legend (and listing) to the right of the graph
        W, H = m + gw + gap + sw + m, th + max(gh, sh) + 2 * m
        px, py = m + gw + gap, H - th - m
    else:  # below it, so that a report's column shows the picture at full size
        if listing is None and 2 * lw_ + 0.4 <= gw and len(handles) > 4:
            leg.remove()  # two columns fit under the graph
            leg = fig.legend(handles=handles, fontsize=LEGEND_FONT, loc="upper left",
                             frameon=False, handlelength=1.6, borderaxespad=0, ncols=2,
                             columnspacing=2.0)  # fmt: skip
            fig.draw_without_rendering()
            e = leg.get_window_extent()
            sw, sh = e.width / dpi, e.height / dpi
        W, H = 2 * m + max(gw, sw), th + gh + gap + sh + 2 * m
        px, py = m, H - th - m - gh - gap
    fig.set_size_inches(W, H)
    ax.set_position((m / W, (H - th - m - gh) / H, gw / W, gh / H))
    tr = fig.dpi_scale_trans
    tt.set_transform(tr)
    tt.set_position((m, H - m))
    leg.set_bbox_to_anchor((px, py), transform=tr)
    if listing is not None:
        listing.set_transform(tr)
        listing.set_position((px, py - lh_ - 0.15))
    return fig


def write_topology(scenario: Any, out: str | Path) -> Path:
    """Draws ``scenario`` and writes it to ``out`` in the format its suffix names (SVG,
    PNG or PDF); returns its path. Refuses (:class:`~qoslab.OutputError`) another
    suffix, or an existing file qoslab did not write."""
    from qoslab import plot
    from qoslab.store import prepare_file

    out = Path(out)
    kind = prepare_file(out, ("svg", "png", "pdf"))
    fig = draw(scenario)
    out.parent.mkdir(parents=True, exist_ok=True)
    plot.save_figure(fig, out.with_suffix(""), formats=(kind,))
    written = out.with_suffix(f".{kind}")
    if written != out:  # the suffix's case: ``.SVG``
        written.replace(out)
    return out

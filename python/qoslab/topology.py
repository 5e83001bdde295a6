"""A picture of what a scenario simulates: nodes (hosts round, routers square), links
labelled with rate, delay and queue kind, conditioners (▶ at a node, ◆ on an
interface) and captures (● on an interface) where they sit, and flows as coloured
paths along their routes (flows with the same route drawn as one group).

The layout is networkx's spring layout (seeded, so the same scenario always gives the
same picture); the drawing is matplotlib's. ``qoslab draw SCENARIO`` writes it as SVG,
and the run, sweep and reproduction reports show it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["draw", "routes", "write_topology"]

#: At most this many flow groups get a colour and a legend entry; the rest are grey.
MAX_GROUPS = 10


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


def _layout(g) -> dict[str, tuple[float, float]]:
    import networkx as nx
    import numpy as np

    if g.number_of_nodes() == 0:
        return {}
    # Start from the routers' backbone laid out by breadth from the first router, the
    # hosts around it; the spring layout then straightens it (seeded: reproducible).
    start = next((n for n, k in g.nodes(data="kind") if k == "router"), next(iter(g.nodes)))
    depth = {start: 0}
    for comp in nx.connected_components(g):
        root = start if start in comp else next(iter(comp))
        depth.update(nx.single_source_shortest_path_length(g, root))
    by = {}
    for n in g.nodes:
        by.setdefault(depth.get(n, 0), []).append(n)
    init = {}
    for x, ns in by.items():
        for i, n in enumerate(ns):
            init[n] = np.array([float(x), i - (len(ns) - 1) / 2])
    k = 1.5 / max(1.0, g.number_of_nodes() ** 0.5)
    pos = nx.spring_layout(g, pos=init, seed=1, k=k, iterations=100)
    return {n: (float(p[0]), float(p[1])) for n, p in pos.items()}


def draw(scenario: Any, title: str | None = None):
    """The topology figure of ``scenario`` (a file, a dict or a
    :class:`~qoslab.Scenario`); returns a matplotlib Figure."""
    import matplotlib
    import numpy as np
    from matplotlib.lines import Line2D

    from qoslab import plot
    from qoslab.scenario import load

    sc = scenario if isinstance(scenario, Mapping) else load(scenario).data
    g = _graph(sc)
    pos = _layout(g)
    n = g.number_of_nodes()
    size = min(16.0, 6.0 + 0.25 * n)
    fig, ax = plot.new_figure(size, size * 0.62)
    ax.set_axis_off()
    ax.set_title(title or f"{sc.get('name', 'scenario')}: topology")
    xs = np.array([p[0] for p in pos.values()] or [0.0])
    ys = np.array([p[1] for p in pos.values()] or [0.0])
    span = max(float(np.ptp(xs)), float(np.ptp(ys)), 1e-9)
    off = 0.012 * span

    # Links with their labels.
    for a, b, d in g.edges(data=True):
        (x0, y0), (x1, y1) = pos[a], pos[b]
        ax.plot([x0, x1], [y0, y1], color="#888", lw=2, zorder=1)
        box = {"boxstyle": "round,pad=0.2", "fc": "white", "ec": "#ccc", "alpha": 0.85}
        ax.text((x0 + x1) / 2, (y0 + y1) / 2, _link_label(d["link"]), fontsize=6.5,
                ha="center", va="center", color="#333", zorder=5, bbox=box)  # fmt: skip

    # Flows (grouped by route) as coloured paths, offset a little from the link.
    groups: dict[tuple[str, ...], list[str]] = {}
    for name, path in routes(sc).items():
        groups.setdefault(tuple(path), []).append(name)
    cmap = matplotlib.colormaps["tab10"]
    handles = []
    for i, (path, names) in enumerate(groups.items()):
        colour = cmap(i % 10) if i < MAX_GROUPS else "#bbb"
        shift = off * (1 + (i % MAX_GROUPS)) * (1 if i % 2 == 0 else -1) / 2
        px = [pos[p][0] + shift for p in path if p in pos]
        py = [pos[p][1] + shift for p in path if p in pos]
        ax.plot(px, py, color=colour, lw=1.6, alpha=0.9, zorder=2)
        if len(px) >= 2:
            ax.annotate("", xy=(px[-1], py[-1]), xytext=(px[-2], py[-2]), zorder=2,
                        arrowprops={"arrowstyle": "-|>", "color": colour, "lw": 1.2})  # fmt: skip
        if i < MAX_GROUPS:
            label = names[0] if len(names) == 1 else f"{names[0]} … ({len(names)} flows)"
            label = f"{label}: {path[0]} → {path[-1]}"
            handles.append(Line2D([], [], color=colour, lw=2, label=label))
    if len(groups) > MAX_GROUPS:
        rest = sum(len(v) for v in list(groups.values())[MAX_GROUPS:])
        handles.append(Line2D([], [], color="#bbb", lw=2, label=f"{rest} more flows"))

    # Nodes.
    for kind, marker, colour in (("host", "o", "#cde"), ("router", "s", "#fdb")):
        ns = [m for m, k in g.nodes(data="kind") if k == kind and m in pos]
        if ns:
            ax.scatter([pos[m][0] for m in ns], [pos[m][1] for m in ns], s=380, marker=marker,
                       c=colour, edgecolors="#333", zorder=3)  # fmt: skip
    for m, (x, y) in pos.items():
        ax.text(x, y, m, fontsize=7, ha="center", va="center", zorder=4)

    def on_iface(iface: str, frac: float) -> tuple[float, float] | None:
        a, _, b = str(iface).partition("->")
        if a not in pos or b not in pos:
            return None
        (x0, y0), (x1, y1) = pos[a], pos[b]
        return x0 + frac * (x1 - x0), y0 + frac * (y1 - y0)

    # Conditioners and captures where they sit.
    for c in sc.get("conditioner") or []:
        kinds = ", ".join(str(s.get("kind", "?")) for s in c.get("stages") or [])
        if c.get("at") in pos:
            x, y = pos[c["at"]]
            xy, label = (x, y + 3 * off), f"▶ {kinds}"
        elif c.get("iface"):
            xy, label = on_iface(c["iface"], 0.25), f"◆ {kinds} (before {c['iface']})"
        elif c.get("iface_in"):
            xy, label = on_iface(c["iface_in"], 0.75), f"◆ {kinds} (in {c['iface_in']})"
        else:
            continue
        if xy is None:
            continue
        ax.plot(*xy, marker="D", color="#c30", ms=7, zorder=6)
        ax.annotate(label, xy, xytext=(6, 8), textcoords="offset points", fontsize=6.5,
                    color="#c30", zorder=7)  # fmt: skip
    for q in sc.get("qosmgr") or []:
        at = q.get("at") or q.get("host")
        if at in pos:
            ax.annotate("▶ qosmgr", pos[at], xytext=(6, -12), textcoords="offset points",
                        fontsize=6.5, color="#c30", zorder=7)  # fmt: skip
    for cap in sc.get("capture") or []:
        xy = on_iface(cap.get("iface", ""), 0.5 if cap.get("direction") == "both" else 0.4)
        if xy is None:
            continue
        ax.plot(*xy, marker="o", color="#06c", ms=6, zorder=6)
        ax.annotate(f"● pcap {cap['iface']} {cap.get('direction', 'tx')}", xy,
                    xytext=(6, -12), textcoords="offset points", fontsize=6.5, color="#06c",
                    zorder=7)  # fmt: skip
    handles += [
        Line2D([], [], ls="", marker="o", mfc="#cde", mec="#333", label="host"),
        Line2D([], [], ls="", marker="s", mfc="#fdb", mec="#333", label="router"),
    ]
    if sc.get("conditioner") or sc.get("qosmgr"):
        handles.append(Line2D([], [], ls="", marker="D", color="#c30", label="conditioner"))
    if sc.get("capture"):
        handles.append(Line2D([], [], ls="", marker="o", color="#06c", label="capture"))
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.margins(0.12)
    return fig


def write_topology(scenario: Any, out: str | Path) -> Path:
    """Draws ``scenario`` and writes the SVG to ``out``; returns its path."""
    from qoslab import plot

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(plot.svg_bytes(draw(scenario)))
    return out

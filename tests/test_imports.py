"""The Python package's modules import each other without a circle (like the Rust
`layers` test): every ``import`` of a qoslab module, at the top or inside a function,
is an edge; the report sits above store and sweep and is reached through one entry
point (``write_report``)."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "python"

#: Circles still to be untangled (each as its sorted pair of modules), with why. None
#: today: ``check`` (which plans a sweep) sits in ``qoslab.checking``, above both
#: ``qoslab.api`` and ``qoslab.sweep``.
KNOWN: set[tuple[str, ...]] = set()


def modules(root: Path = PKG) -> dict[str, tuple[Path, bool]]:
    """``{dotted name: (file, is a package)}`` of every module under ``root/qoslab``;
    the compiled engine (``qoslab._core``, known by its stub) is a module of its own."""
    out = {}
    for f in sorted((root / "qoslab").rglob("*.py*")):
        if f.suffix not in (".py", ".pyi"):
            continue
        parts = list(f.relative_to(root).with_suffix("").parts)
        pkg = parts[-1] == "__init__"
        if pkg:
            parts = parts[:-1]
        out.setdefault(".".join(parts), (f, pkg))
    return out


def import_graph(mods: dict[str, tuple[Path, bool]]) -> dict[str, set[str]]:
    """``{module: modules it imports}`` among ``mods``; ``from a import b`` names the
    submodule ``a.b`` when there is one, else ``a``."""
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for m, (f, is_pkg) in mods.items():
        if f.suffix == ".pyi":
            continue
        here = m if is_pkg else m.rpartition(".")[0]
        for n in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(n, ast.Import):
                names = [a.name for a in n.names]
            elif isinstance(n, ast.ImportFrom):
                base = n.module or ""
                if n.level:
                    up = here.split(".")[: len(here.split(".")) - (n.level - 1)]
                    base = ".".join(up + ([n.module] if n.module else []))
                names = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in n.names
                ]
            for t in names:
                while t and t not in mods:
                    t = t.rpartition(".")[0]
                if t and t != m:
                    edges[m].add(t)
    return edges


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_no_import_circle_in_the_package():
    edges = import_graph(modules())
    # The graph is read, not empty: the edges this test exists for are seen.
    assert "qoslab.store" in edges["qoslab.sweep"]
    assert {"qoslab.store", "qoslab.sweep"} <= edges["qoslab.report"]
    assert {"qoslab.api", "qoslab.sweep"} <= edges["qoslab.checking"]
    assert "qoslab.sweep" not in edges["qoslab.api"]
    for a, b in KNOWN:
        edges[a].discard(b)
    found = circles(edges)
    assert not found, f"import circles: {found}"


def test_report_is_above_store_and_sweep():
    edges = import_graph(modules())

    def below(m: str, seen: set[str] | None = None) -> set[str]:
        seen = set() if seen is None else seen
        for t in edges[m]:
            if t not in seen:
                seen.add(t)
                below(t, seen)
        return seen

    for low in ("qoslab.store", "qoslab.sweep", "qoslab.pages", "qoslab.plot"):
        assert "qoslab.report" not in below(low), low
    # Only the command line and the package's users reach the report.
    assert {m for m, ts in edges.items() if "qoslab.report" in ts} <= {"qoslab.cli"}


def test_circle_finder_sees_a_lazy_import_circle(tmp_path):
    """A circle made of an import inside a function (as store -> report was) is found,
    and so is a ``from . import x`` one; a diamond is no circle."""
    pkg = tmp_path / "qoslab"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from qoslab.a import f\n")
    (pkg / "a.py").write_text("import qoslab.b\n\ndef f():\n    return 1\n")
    (pkg / "b.py").write_text("def g():\n    from qoslab.c import h\n    return h()\n")
    (pkg / "c.py").write_text("def h():\n    from qoslab import a\n    return a.f()\n")
    (pkg / "sub" / "__init__.py").write_text("from . import x\n")
    (pkg / "sub" / "x.py").write_text("from qoslab import sub\n")
    (pkg / "d.py").write_text("import qoslab.e\nimport qoslab.f\n")
    (pkg / "e.py").write_text("import qoslab.g\n")
    (pkg / "f.py").write_text("import qoslab.g\n")
    (pkg / "g.py").write_text("")
    found = circles(import_graph(modules(tmp_path)))
    assert found == [["qoslab.a", "qoslab.b", "qoslab.c"], ["qoslab.sub", "qoslab.sub.x"]]

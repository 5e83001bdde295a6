"""The Python package's modules import each other without a circle (like the Rust
`layers` test): every ``import`` of a qoslab module, at the top or inside a function,
is an edge; the report sits above store and sweep and is reached through one entry
point (``write_report``)."""

from __future__ import annotations

import ast
import re
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
    assert "qoslab.store" in edges["qoslab.sweep.driver"]
    assert "qoslab.sweep.driver" in edges["qoslab.sweep"]
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

    for low in ("qoslab.store", "qoslab.sweep", "qoslab.pages", "qoslab.plot",
                *(m for m in edges if m.startswith("qoslab.sweep."))):  # fmt: skip
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


PAPER = re.compile(r"^p[0-4]")


def _paper_of(module: str) -> str | None:
    """``p1`` for ``qoslab.reproduce.p1_live`` or ``p1``; None for other modules."""
    last = module.rsplit(".", 1)[-1]
    m = PAPER.match(last)
    return m.group(0) if m and module.startswith(("qoslab.reproduce.", "p")) else None


def private_uses(path: Path, own_paper: str | None) -> list[str]:
    """``name`` of every private name (``_x``) ``path`` takes from another paper's
    reproduction module: ``from qoslab.reproduce.pN import _x`` or ``pN._x`` where
    ``pN`` was imported from ``qoslab.reproduce``."""
    tree = ast.parse(path.read_text())
    aliases: dict[str, str] = {}
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module.startswith("qoslab.reproduce."):
                paper = _paper_of(node.module)
                for a in node.names:
                    if a.name.startswith("_") and paper and paper != own_paper:
                        bad.append(f"{node.module}.{a.name}")
            if node.module == "qoslab.reproduce":
                for a in node.names:
                    if _paper_of("qoslab.reproduce." + a.name):
                        aliases[a.asname or a.name] = "qoslab.reproduce." + a.name
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and _paper_of(aliases[node.value.id]) != own_paper
        ):
            bad.append(f"{aliases[node.value.id]}.{node.attr}")
    return sorted(set(bad))


def test_no_module_takes_another_papers_private_names():
    # A paper module's private helpers are its own: the framework (verdicts, registry,
    # context, runner, scenario_files) and qoslab.fairness hold what papers share, and a
    # validation script uses public names only, so a renamed helper is a visible change.
    root = PKG.parent
    bad = []
    for f in sorted((PKG / "qoslab" / "reproduce").glob("*.py")):
        own = PAPER.match(f.stem)
        bad += [f"{f.name}: {u}" for u in private_uses(f, own.group(0) if own else None)]
    for f in sorted((root / "validation").glob("*.py")):
        bad += [f"validation/{f.name}: {u}" for u in private_uses(f, None)]
    assert not bad, "\n".join(bad)


def test_the_private_name_check_can_fail(tmp_path):
    f = tmp_path / "x.py"
    f.write_text(
        "from qoslab.reproduce import p4\nfrom qoslab.reproduce.p1 import _claim, set_trc\n"
        "g = p4._goodputs(r)\nh = p4.flow_goodputs(r)\n"
    )
    assert private_uses(f, None) == ["qoslab.reproduce.p1._claim", "qoslab.reproduce.p4._goodputs"]
    assert private_uses(f, "p4") == ["qoslab.reproduce.p1._claim"]


def test_jain_is_defined_once():
    # Jain's index has one definition (qoslab.fairness); the papers' and the twin's
    # names delegate to it with their reading of "all zero".
    import math

    from qoslab import fairness, twin
    from qoslab.reproduce import p0, p3, p4

    xs = [3.0, 1.0, 0.0, 2.0]
    want = 36 / (4 * 14)
    for f in (fairness.jain, p0.jain, p3._jain, p4.jain, twin.jain):
        assert abs(f(xs) - want) < 1e-12
    assert p0.jain([0.0, 0.0]) == 1.0 and p3._jain([0.0]) == 1.0
    assert math.isnan(p4.jain([0.0, 0.0])) and math.isnan(twin.jain([0.0, math.nan]))
    assert fairness.max_min_shares(10.0, [1.0, 8.0, 8.0]) == [1.0, 4.5, 4.5]
    defs = [
        f"{f.relative_to(PKG)}:{n.lineno}"
        for f in sorted((PKG / "qoslab").rglob("*.py"))
        for n in ast.walk(ast.parse(f.read_text()))
        if isinstance(n, ast.FunctionDef)
        and n.name.lstrip("_") == "jain"
        and any(isinstance(s, ast.Return) and isinstance(s.value, ast.BinOp) for s in ast.walk(n))
    ]
    assert defs == ["qoslab/fairness.py:12"], defs

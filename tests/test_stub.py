"""The shipped `_core.pyi` stub matches the compiled module: same functions, same
parameter names, defaults and order, same exception classes."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import qoslab._core as core

STUB = Path(__file__).resolve().parents[1] / "python" / "qoslab" / "_core.pyi"


def _stub() -> tuple[dict[str, list[tuple[str, str | None]]], set[str]]:
    tree = ast.parse(STUB.read_text())
    funcs, classes = {}, set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            args = node.args.args
            defaults = [None] * (len(args) - len(node.args.defaults)) + [
                ast.unparse(d) for d in node.args.defaults
            ]
            funcs[node.name] = [(a.arg, d) for a, d in zip(args, defaults, strict=True)]
        elif isinstance(node, ast.ClassDef):
            classes.add(node.name)
    return funcs, classes


def _module() -> tuple[dict[str, list[tuple[str, str | None]]], set[str]]:
    funcs, classes = {}, set()
    for name in dir(core):
        obj = getattr(core, name)
        if name.startswith("__"):
            continue
        if isinstance(obj, type):
            classes.add(name)
        elif callable(obj):
            params = inspect.signature(obj).parameters.values()
            funcs[name] = [
                (p.name, None if p.default is inspect.Parameter.empty else repr(p.default))
                for p in params
            ]
    return funcs, classes


def test_stub_matches_the_compiled_module() -> None:
    sf, sc = _stub()
    mf, mc = _module()
    assert sorted(sf) == sorted(mf)
    assert sc == mc
    for name, params in mf.items():
        # Defaults compare as source text: repr("json") == "'json'", the stub has "json".
        norm = [(n, None if d is None else d.replace('"', "'")) for n, d in sf[name]]
        assert norm == params, name

"""Generated scenario files: the reproductions' scenario dicts written as TOML
(:func:`to_toml`) under ``scenarios/`` with a header saying where they come from
(:func:`write_specs`). Every paper module writes its scenarios with these."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from qoslab.reproduce.context import scenarios_dir


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v) if isinstance(v, float) and not v.is_integer() else str(int(v))
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(type(v))


def to_toml(data: dict[str, Any], header: str = "") -> str:
    """Our scenario dicts as TOML: scalars first, then arrays of tables, then tables."""
    lines = [f"# {h}" if h else "#" for h in header.splitlines()]
    scalars = {k: v for k, v in data.items() if not isinstance(v, (list, dict))}
    for k, v in scalars.items():
        lines.append(f"{k} = {_toml_value(v)}")
    for k, v in data.items():
        if isinstance(v, list):
            for item in v:
                lines += ["", f"[[{k}]]"]
                for kk, vv in item.items():
                    if isinstance(vv, list) and vv and isinstance(vv[0], dict):
                        lines.append(f"{kk} = [")
                        lines += [f"  {_toml_value(x)}," for x in vv]
                        lines.append("]")
                    else:
                        lines.append(f"{kk} = {_toml_value(vv)}")
    for k, v in data.items():
        if isinstance(v, dict):
            lines += ["", f"[{k}]"]
            sub = {kk: vv for kk, vv in v.items() if not isinstance(vv, dict)}
            for kk, vv in sub.items():
                lines.append(f"{kk} = {_toml_value(vv)}")
            for kk, vv in v.items():
                if isinstance(vv, dict):
                    lines += ["", f"[{k}.{kk}]"]
                    lines += [f'"{a}" = {_toml_value(b)}' for a, b in vv.items()]
    return "\n".join(lines) + "\n"


def write_specs(specs: dict[str, dict], header: str, root: Path | None = None) -> list[Path]:
    """Writes generated scenario files (``{path under root: data}``) under ``root``
    (default ``scenarios/``), each with ``header`` as its leading comment."""
    root = root or scenarios_dir()
    out = []
    for rel, data in specs.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(to_toml(data, header))
        out.append(p)
    return out

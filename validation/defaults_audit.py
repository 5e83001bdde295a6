"""Which mechanism keys the P0, P1, P2 and P4 reproductions set to a value other than
qoslab's library default.

Reads every scenario under ``scenarios/p0``, ``p1``, ``p2``, ``p4`` and the scenario
dicts their reproduction modules build (each module's ``specs()``; P2's TCP-variant
runs, P2's readings of its open choices, P4's weighted methods), and the defaults
from the Rust source: a field's ``#[serde(default = "f")]`` function, a struct's
``impl Default``, an enum's ``#[default]`` variant, or (for an ``Option`` field read as
absent) the "default N" its doc comment gives. Prints one line per (key, value) that
differs: key, default, reproduction value, the scenarios that set it, and whether
docs/queues-and-conditioners.md's "Defaults that differ from a reproduction's reading"
table lists it as a reading (``READINGS``) or it is the paper's environment.

    python validation/defaults_audit.py             # the table of differences
    python validation/defaults_audit.py --sentence  # the doc's environment sentence
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import tomllib

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "crates" / "qoslab" / "src"
PAPERS = ("p0", "p1", "p2", "p4")

#: Where a scenario table's keys are read: context → (Rust file, struct).
STRUCTS: dict[str, tuple[str, str]] = {
    "tcp": ("tcp/mod.rs", "TcpConfig"),
    "queue:droptail": ("queue/droptail.rs", "DropTailConfig"),
    "queue:red": ("queue/red.rs", "RedConfig"),
    "queue:ered": ("queue/red.rs", "RedConfig"),
    "queue:lqd": ("queue/lqd.rs", "LqdConfig"),
    "stage:eruf": ("cond/eruf/mod.rs", "ErufConfig"),
    "stage:trc": ("cond/trc/mod.rs", "TrcConfig"),
    "qosmgr": ("qosmgr/mod.rs", "QosMgrConfig"),
    "stripe": ("app/stripe.rs", "StripeConfig"),
    "ptcp": ("app/ptcp/mod.rs", "PtcpConfig"),
    "node:source_quench": ("net/quench.rs", "SourceQuenchConfig"),
}
#: Defaults the struct parser cannot see (a hand-written Deserialize, a tagged enum);
#: each names where it is stated.
EXTRA: dict[str, dict[str, Any]] = {
    "queue:ered": {"factor": 1.5},  # queue/ered.rs d_factor, P0's 1.5
    # tcp/mod.rs impl Default: CcConfig::Reno; limited transmit None = on for NewReno
    # and SACK, off for Tahoe and Reno (docs/tcp.md).
    "tcp": {
        "cc": "reno",
        "limited_transmit": lambda t: t.get("variant", "newreno") in ("newreno", "sack"),
    },
    # qosmgr/mod.rs: depth "equal" for partitioned and "rtt" for logical buckets, order
    # fcfs (Order's #[default]); P0's page says so too.
    "qosmgr": {
        "depth": lambda t: {"partitioned": "equal", "logical": "rtt"}.get(t.get("sharing")),
        "order": "fcfs",
    },
}
#: Keys that name the mechanism's object or its paper's quantity, not a setting: never
#: reported (a flow's name, a rate request, a filter, …).
IDENTITY = {
    "stage:trc": {"flow", "rate", "rtt_net"},
    "qosmgr": {"name", "at", "filter", "profile"},
    "stripe": {"connections"},
    "ptcp": {"pipes"},
    "node:source_quench": {"rate"},
}

#: Keys whose reproduction value is an argued reading of the paper (a row of the doc's
#: table), not its stated environment.
READINGS = {
    "qosmgr.order": "fcfs_first",
    "stage:eruf.burst": 96000,
    "tcp.on_quench": "ignore",
}
#: Keys set where the paper gives no value and its page does not argue the choice.
UNARGUED = {"queue:lqd.service", "queue:red.gentle"}


# ------------------------------------------------------------------ Rust defaults


class Seconds(float):
    """A duration [s]."""


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _all_source() -> str:
    return "\n".join(p.read_text() for p in sorted(SRC.rglob("*.rs")))


def _enum_default(text: str, enum: str) -> str | None:
    if f"pub enum {enum} " not in text:
        text = _all_source()
    m = re.search(
        r"((?:#\[[^\]]*\]\s*)*)pub enum " + re.escape(enum) + r"\s*\{(.*?)\n\}", text, re.S
    )
    if not m:
        return None
    rename = re.search(r'rename_all\s*=\s*"(\w+)"', m.group(1))
    v = re.search(
        r"#\[default\]\s*(?:#\[serde\(rename\s*=\s*\"([^\"]+)\"\)\]\s*)?(\w+)", m.group(2)
    )
    if not v:
        return None
    if v.group(1):
        return v.group(1)
    return v.group(2).lower() if rename and rename.group(1) == "lowercase" else _snake(v.group(2))


def _literal(expr: str, text: str) -> Any:
    """A Rust default expression as a scenario value (seconds for durations)."""
    expr = re.sub(r"\s+as\s+\w+$", "", expr.strip().rstrip(",").strip())
    const = re.fullmatch(r"[A-Z][A-Z0-9_]+", expr) and re.search(
        r"const " + expr + r":[^=]+=\s*([^;]+);", _all_source()
    )
    if const:
        return _literal(const.group(1), text)
    if expr in ("true", "false"):
        return expr == "true"
    if expr == "None":
        return None
    if re.fullmatch(r"-?[\d_]+(\.[\d_]*)?", expr):
        v = float(expr.replace("_", ""))
        return int(v) if v.is_integer() else v
    m = re.fullmatch(r"Dur::from_(secs|millis|micros)\(([\d_.]+)\)", expr)
    if m:
        scale = {"secs": 1, "millis": 1e-3, "micros": 1e-6}[m.group(1)]
        return Seconds(float(m.group(2).replace("_", "")) * scale)
    m = re.fullmatch(r"(?:Bytes|Rate)\(([\d_]+)\)", expr)
    if m:
        return int(m.group(1).replace("_", ""))
    m = re.fullmatch(r"(\w+)::(\w+)", expr)
    if m:
        src = text if f"pub enum {m.group(1)} " in text else _all_source()
        lower = re.search(
            r'rename_all\s*=\s*"lowercase"[^\n]*\n(?:[^\n]*\n)?pub enum ' + m.group(1), src
        )
        return m.group(2).lower() if lower else _snake(m.group(2))
    m = re.fullmatch(r"(\w+)\(\)", expr)
    if m:
        return _fn_value(text, m.group(1))
    return f"?{expr}"


def _fn_value(text: str, fn: str) -> Any:
    m = re.search(r"fn " + re.escape(fn) + r"\(\)\s*->\s*[^{]+\{\s*(.*?)\s*\}\n", text, re.S)
    return _literal(m.group(1), text) if m else f"?{fn}()"


def rust_defaults(context: str) -> dict[str, Any]:
    """key → default of the struct read at ``context``; required keys are left out."""
    file, struct = STRUCTS[context]
    text = (SRC / file).read_text()
    m = re.search(r"((?:#\[[^\]]*\]\s*)*)pub struct " + struct + r"\s*\{(.*?)\n\}", text, re.S)
    assert m, (file, struct)
    whole_default = "default" in re.sub(r"default\s*=", "", m.group(1)) and "serde(" in m.group(1)
    impl = re.search(
        r"impl Default for " + struct + r"\s*\{.*?" + struct + r"\s*\{(.*?)\n\s*\}", text, re.S
    )
    from_impl = dict(re.findall(r"(\w+):\s*([^\n]+?),?\n", impl.group(1))) if impl else {}
    out: dict[str, Any] = {}
    for doc, attrs, name, ty in re.findall(
        r"((?:\s*///[^\n]*)*)((?:\s*#\[[^\]]*\])*)\s*pub (\w+):\s*([^\n]+?),\n", m.group(2) + "\n"
    ):
        said = re.search(r"default (\d[\d_.]*)(?![\d_.]*\s*×)", doc)
        d = re.search(r'serde\((?:[^)]*?\b)?default\s*=\s*"(\w+)"', attrs)
        if d:
            out[name] = _fn_value(text, d.group(1))
        elif name in from_impl and (whole_default or "default" in attrs):
            out[name] = _literal(from_impl[name], text)
            if out[name] is None and said:
                out[name] = _literal(said.group(1), text)
        elif re.search(r"serde\((?:[^)]*?\b)?default\b", attrs) or whole_default:
            if ty.startswith("Option<"):
                out[name] = _literal(said.group(1), text) if said else None
            elif ty == "bool":
                out[name] = False
            elif re.fullmatch(r"u\d+|f64", ty):
                out[name] = 0
            else:
                out[name] = _enum_default(text, ty.split("::")[-1])
    out.update(EXTRA.get(context, {}))
    return out


# ------------------------------------------------------------------ scenario values

_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "min": 60.0}
_BYTES = {"B": 1, "KB": 1e3, "kB": 1e3, "MB": 1e6, "KiB": 1024, "MiB": 1024**2}


def normalise(v: Any) -> Any:
    """A scenario value as the Rust defaults are written: durations in seconds, sizes in
    bytes."""
    if isinstance(v, str):
        m = re.fullmatch(r"([\d.]+)\s*(s|ms|us|µs|min)", v)
        if m:
            return Seconds(float(m.group(1)) * _UNITS[m.group(2)])
        m = re.fullmatch(r"([\d.]+)\s*(B|KB|kB|MB|KiB|MiB)", v)
        if m:
            x = float(m.group(1)) * _BYTES[m.group(2)]
            return int(x) if x.is_integer() else x
    if isinstance(v, dict) and set(v) == {"kind"}:
        return v["kind"]
    return v


def same(a: Any, b: Any) -> bool:
    a, b = normalise(a), normalise(b)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return abs(a - b) <= 1e-12 * max(1.0, abs(a), abs(b))
    return a == b


def tables(data: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(context, table) for every mechanism table of scenario ``data``."""
    out: list[tuple[str, dict[str, Any]]] = []
    for lk in data.get("link", []):
        for q in ("queue", "queue_a_to_b", "queue_b_to_a"):
            if q in lk:
                out.append((f"queue:{lk[q].get('kind', 'droptail')}", lk[q]))
    for f in data.get("flow", []):
        for k in ("tcp", "stripe", "ptcp"):
            if k in f:
                out.append((k, f[k]))
    for c in data.get("conditioner", []):
        for st in c["stages"]:
            out.append((f"stage:{st['kind']}", st))
    out += [("qosmgr", q) for q in data.get("qosmgr", [])]
    out += [
        ("node:source_quench", n["source_quench"])
        for n in data.get("node", [])
        if "source_quench" in n
    ]
    return out


def scenarios() -> dict[str, dict[str, Any]]:
    """Name → scenario data: the files, then the dicts the reproduction modules build."""
    out = {}
    for p in PAPERS:
        for path in sorted((ROOT / "scenarios" / p).glob("*.toml")):
            out[f"{p}/{path.stem}"] = tomllib.loads(path.read_text())
    sys.path.insert(0, str(ROOT / "python"))
    from qoslab.reproduce import p0, p1, p2, p2_variants, p4
    from qoslab.scenario import apply_overrides

    for mod in (p0, p1, p2, p4):
        for name, data in mod.specs().items():
            out.setdefault(f"{mod.__name__.rsplit('.', 1)[1]}:{name}", data)
    for name, data in p2.specs().items():
        for v in p2_variants.VARIANTS:
            out[f"p2_variants:{name}[{v}]"] = p2_variants.with_variant(data, v)
        for combo in p2.COMBOS:
            out[f"p2:{name}[{','.join(combo)}]"] = p2.with_reading(data, *combo)
    for method in p4.METHODS:
        for w in p4.WEIGHTS:
            ov = p4.weight_overrides(method, w)
            out[f"p4:single_link[{method},w={w}]"] = apply_overrides(p4.single_link(method), ov)
            out[f"p4:multi_link[{method},w={w}]"] = apply_overrides(p4.multi_link(method), ov)
    return out


def audit() -> dict[tuple[str, str], dict[str, Any]]:
    """(context, key) → {"default", "values": {repr(value): set of scenario names}}."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    defaults = {c: rust_defaults(c) for c in STRUCTS}
    for name, data in scenarios().items():
        for context, table in tables(data):
            if context not in defaults:
                continue
            for key, value in table.items():
                if key == "kind" or key in IDENTITY.get(context, set()):
                    continue
                if key not in defaults[context]:
                    continue  # required: the paper's own quantity
                default = defaults[context][key]
                if callable(default):
                    default = default(table)
                if default is None or same(value, default):
                    continue
                row = found.setdefault(
                    (context, key), {"default": default, "values": defaultdict(set)}
                )
                paper = name.split(":")[0].split("/")[0][:2]
                # A value no scenario file sets is an alternative or a sweep point.
                row["values"][repr(value)].add(paper if ":" not in name else f"~{paper}")
    return found


def _part(c: str, k: str, row: dict[str, Any], files: bool) -> str | None:
    """``key values (papers; default d)`` over the values set in scenario files
    (``files``) or only in the modules' alternatives and sweeps."""
    values = {v: ps for v, ps in row["values"].items() if any("~" not in p for p in ps) == files}
    if not values:
        return None
    papers = sorted({p.strip("~").upper() for ps in values.values() for p in ps})
    vals = sorted(values, key=lambda v: (len(v), v))
    shown = ", ".join(_show(eval(v)) for v in vals) if len(vals) <= 3 else f"{len(vals)} values"
    return f"`{_label(c, k)}` {shown} ({', '.join(papers)}; default {_show(row['default'])})"


def sentence(found: dict[tuple[str, str], dict[str, Any]]) -> str:
    """The doc's sentence under the table: every other key a reproduction sets to a
    value other than the default, with its values, papers and default."""

    def parts(kinds: set[str], files: bool) -> str:
        out = [_part(c, k, r, files) for (c, k), r in sorted(found.items()) if _kind(c, k) in kinds]
        return "; ".join(p for p in out if p)

    return (
        "Every other key the P0, P1, P2 and P4 scenario files set away from its default "
        "(`python validation/defaults_audit.py`) is the paper's environment, not a "
        "reading: " + parts({"environment"}, True) + ". Set in them where the paper gives "
        "no value, with no argument on its page: " + parts({"unargued"}, True) + ". Run "
        "only as alternatives beside the headline or as sweep points by the reproduction "
        "modules: " + parts({"environment", "unargued", "reading"}, False) + "."
    )


def _kind(c: str, k: str) -> str:
    key = f"{c}.{k}"
    return "reading" if key in READINGS else "unargued" if key in UNARGUED else "environment"


def _label(context: str, key: str) -> str:
    return f"{context.split(':')[-1]}.{key}"


def _show(v: Any) -> str:
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_show(x)}" for k, x in v.items()) + " }"
    if isinstance(v, Seconds):
        return f"{v * 1e3:g} ms" if v < 1 else f"{v:g} s"
    return repr(v)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sentence", action="store_true", help="print the doc's environment sentence")
    args = ap.parse_args(argv)
    found = audit()
    if args.sentence:
        print(sentence(found))
        return
    print(f"{'key':34} {'default':>14}  {'reproduction':24} papers   kind")
    for (c, k), row in sorted(found.items()):
        kind = _kind(c, k)
        for v, ps in sorted(row["values"].items()):
            where = ",".join(sorted(ps)).replace("~", "alt:")
            print(f"{c + '.' + k:34} {_show(row['default']):>14}  {v:24} {where:12} {kind}")


if __name__ == "__main__":
    main()

"""Numbers for tables and figures: exact Student t quantiles, numeric companions of
swept parameters given with units, units of result columns, and cell formats.

Nothing here needs the engine or matplotlib, so :mod:`qoslab.sweep` can use it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "column_unit",
    "fmt_cell",
    "numeric_companions",
    "student_t_cdf",
    "t_quantile",
    "with_numeric_companions",
]


# --------------------------------------------------------------------------- Student t


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny, eps = 1e-300, 1e-15
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10_000):
        m2 = 2 * m
        for aa in (
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < eps:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(ln_front) * _betacf(a, b, x) / a
    return 1.0 - math.exp(ln_front) * _betacf(b, a, 1.0 - x) / b


def student_t_cdf(t: float, df: float) -> float:
    """P(T ≤ t) for Student's t distribution with ``df`` degrees of freedom."""
    if df <= 0:
        raise ValueError("degrees of freedom must be positive")
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom, exact to ~1e-12
    (e.g. ``t_quantile(0.975, n - 1)`` for a two-sided 95 % interval); NaN for df < 1."""
    if not 0.0 < p < 1.0:
        raise ValueError("p must be in (0, 1)")
    if df < 1 or math.isnan(df):
        return math.nan
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    if p == 0.5:
        return 0.0
    lo, hi = 0.0, 1.0
    while student_t_cdf(hi, df) < p:
        lo, hi = hi, hi * 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if student_t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-13 * hi:
            break
    return 0.5 * (lo + hi)


# --------------------------------------------------------------------------- units

_RATE = {"bps": 1.0, "kbps": 1e3, "mbps": 1e6, "gbps": 1e9}
_TIME = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
_SIZE = {"b": 1.0, "kb": 1e3, "mb": 1e6, "gb": 1e9, "kib": 1024.0, "mib": 1024.0**2}
_NUM = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-zµ/]+)\s*$")


def _split(v: str) -> tuple[float, str] | None:
    m = _NUM.match(v)
    return (float(m.group(1)), m.group(2)) if m else None


def _rate_unit(unit: str) -> float | None:
    """Bit/s per ``unit``, as the engine reads rates: a decimal prefix (k/K, m/M, g/G)
    then ``bps``, ``b/s`` or ``bit/s`` (bits) or ``Bps``, ``B/s``, ``byte/s`` (bytes,
    × 8); ``None`` if ``unit`` is no rate unit."""
    prefix, base = (unit[0], unit[1:]) if len(unit) > 1 and unit[0] in "kKmMgG" else ("", unit)
    bits = {"bps": 1.0, "b/s": 1.0, "bit/s": 1.0, "Bps": 8.0, "B/s": 8.0, "byte/s": 8.0}
    if base not in bits:
        return None
    return {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9}[prefix.lower()] * bits[base]


def numeric_companions(params: Mapping[str, Any]) -> dict[str, float]:
    """For each swept parameter given as a string with a unit, its value as a number in
    base units under a companion name: ``"link.2.rate": "2Mbps"`` →
    ``{"link.2.rate_bps": 2e6}`` (``"1.5Mb/s"``, ``"2MBps"`` = 16e6 bit/s: units as
    the engine reads them), ``"1.5ms"`` → ``…_s: 0.0015``, ``"3KB"`` →
    ``…_bytes: 3000``. Parameters that are numbers already, or not a quantity, get none."""
    out: dict[str, float] = {}
    for k, v in params.items():
        if not isinstance(v, str):
            continue
        sp = _split(v)
        if sp is None:
            continue
        x, unit = sp[0], sp[1].lower()
        if _rate_unit(sp[1]) is not None:
            out[f"{k}_bps"] = x * (_rate_unit(sp[1]) or 1.0)
        elif unit in _TIME or unit == "min":
            out[f"{k}_s"] = x * _TIME.get(unit, 60.0)
        elif unit in _SIZE and sp[1] not in ("b",):  # "b" alone is bytes in our units
            out[f"{k}_bytes"] = x * _SIZE[unit]
    return out


def _is_number(v: Any) -> bool:
    try:
        float(v)
    except (TypeError, ValueError):
        return False
    return v is not None and not isinstance(v, bool)


def with_numeric_companions(df: Any, params: list[str]) -> Any:
    """The polars DataFrame ``df`` with a numeric companion column (see
    :func:`numeric_companions`) after each column of ``params`` whose every value is a
    quantity with a unit of one kind, or a plain number beside such values (in the base
    unit); other columns are left alone."""
    import polars as pl

    cols = list(df.columns)
    for p in params:
        if p not in df.columns or df[p].dtype != pl.String:
            continue
        values = df[p].to_list()
        comps = [numeric_companions({p: v}) for v in values]
        names = {next(iter(c)) for c in comps if c}
        if len(names) != 1:
            continue
        name = names.pop()
        # A plain number among values with units is in the base unit (bit/s, s, bytes).
        for i, v in enumerate(values):
            if not comps[i] and _is_number(v):
                comps[i] = {name: float(v)}
        if any(not c for c in comps):
            continue
        if name in df.columns:
            continue
        df = df.with_columns(pl.Series(name, [c[name] for c in comps], dtype=pl.Float64))
        cols.insert(cols.index(p) + 1, name)
    return df.select(cols)


#: Column name patterns → the unit shown in table headers and axis labels.
_UNITS = [
    (re.compile(r"(^|_)(bps|rate_bps)($|_)"), "bit/s"),
    (re.compile(r"_bps_"), "bit/s"),
    (re.compile(r"(^|_)bytes($|_)"), "bytes"),
    (re.compile(r"(^|_)(packets|pkts|drops)($|_)"), "packets"),
    (re.compile(r"(^|_)(t|time|wall_s|.*_s)$"), "s"),
    (re.compile(r"_ms$"), "ms"),
    (re.compile(r"_kbps$"), "kb/s"),
]


#: Units of the engine's result columns whose names do not say it.
_NAMED = {
    "mean_delay": "s",
    "srtt": "s",
    "min_rtt": "s",
    "rto": "s",
    "rtt": "s",
    "rtt_net": "s",
    "rtt_trc": "s",
    "slow_start_end": "s",
    "cwnd": "bytes",
    "ssthresh": "bytes",
    "in_flight": "bytes",
    "arrived": "packets",
    "departed": "packets",
    "dropped": "packets",
    "ecn_marked": "packets",
    "marked": "packets",
    "queued_at_end": "packets",
    "retransmits": "packets",
    "fast_retransmits": "packets",
    "acks_sent": "packets",
    "avg": "packets",
    "buffer": "packets",
    "buffer_full": "packets",
    "max_held": "packets",
    "w_max": "packets",
    "drop_every": "packets",
    "min_kbps": "kb/s",
    "requested": "bit/s",
    "rtt_dev": "s",
    "g0": "bit/s",
    "max_kbps": "kb/s",
    # the ``delays`` table's per-flow one-way delay statistics
    "mean": "s",
    "p50": "s",
    "p95": "s",
    "p99": "s",
    "max": "s",
    "jitter": "s",
    "upper": "s",
    "extra_delay": "s",
    # fractions of a whole and indices in [0, 1]
    "share": "0–1",
    "green_fraction": "0–1",
    "utilisation": "0–1",
    "jain": "0–1",
    "n": "runs",
}


def column_unit(name: str) -> str:
    """The unit of a result column from its name (``goodput_bps_mean`` → ``bit/s``,
    ``t`` → ``s``, ``link.2.rate_bps`` → ``bit/s``, ``srtt`` → ``s``), or ``""``."""
    base = re.sub(r"_(mean|std|ci95|min|max)$", "", name)
    if base.endswith("_per_s"):  # a rate: the unit of what is counted, per second
        inner = column_unit(base.removesuffix("_per_s"))
        return f"{inner}/s" if inner else "1/s"
    if base in _NAMED:
        return _NAMED[base]
    if re.match(r"^dropped($|_)", base) and not base.endswith("_bytes"):
        return "packets"
    if re.match(r"^delay_(mean|p\d+|max|min)$", base):
        return "s"
    for rx, unit in _UNITS:
        if rx.search(name):
            return unit
    return ""


def fmt_cell(v: Any, digits: int = 4) -> str:
    """One table cell: floats to ``digits`` significant digits (thousands grouped above
    10⁴, no exponent below 10¹⁵), integers grouped, None/NaN as an em dash."""
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}".replace(",", "\u202f")
    if isinstance(v, float):
        if math.isnan(v):
            return "—"
        if math.isinf(v):
            return "∞" if v > 0 else "−∞"
        if v != 0 and (abs(v) >= 1e15 or abs(v) < 1e-4):
            return f"{v:.{digits - 1}e}"
        if abs(v) >= 1e4:
            return f"{v:,.0f}".replace(",", "\u202f")
        s = f"{v:.{digits}g}"
        return s if "e" not in s else f"{v:.{digits}f}"
    return str(v)

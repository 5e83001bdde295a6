"""P1's TCP Rate Controller: parameters per request and the paper's Fig. 4 table.

The computation is the engine's (``qoslab._core.trc_parameters``), so what this module
prints is exactly what a ``kind = "trc"`` stage in a scenario uses::

    >>> from qoslab.trc import parameters
    >>> p = parameters(1e6, rtt_net=0.003)            # 1 Mb/s, RTT_net 3 ms
    >>> p["w_max"], round(p["rtt_trc"], 4)

``python -m qoslab.trc`` (or ``qoslab trc-table``) prints the Fig. 4 table: p and
RTT_TRC for requested rates of 50–600 kb/s with RTT_net = 0, RTT_dev = 10 ms,
gput_error = 5 % (RTT_min = 200 ms), under the model fitted to qoslab's default TCP
(``--model NAME`` for another fitted TCP configuration, ``--model paper`` for eq. 1).

The model is per TCP configuration: ``model_name(tcp)`` names the
configuration of a flow's ``tcp`` settings, ``fitted_models()`` lists every fit.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from qoslab import _core

__all__ = [
    "FIG4_RATES", "cycle", "cycle_time", "fig4_table", "fit", "fitted_models", "model_name",
    "model_text", "parameters",
]  # fmt: skip


def _tcp_json(tcp: Mapping[str, Any] | None) -> str | None:
    return None if tcp is None else json.dumps(dict(tcp))


def model_name(tcp: Mapping[str, Any] | None = None) -> str:
    """The TRC model name of a flow's ``tcp`` settings (a scenario's ``tcp`` table;
    ``None``: qoslab's defaults), e.g. ``"newreno-flight-lt-nodelack"``."""
    return _core.trc_model_name(_tcp_json(tcp))


def fitted_models() -> dict[str, dict[str, tuple[float, float, list, float] | None]]:
    """Every fitted model: ``{name: {"drop": (a, b, knots, w_first), "ecn": (…) or
    None}}``, the cycle-time laws the engine uses (P1 eq. 1 per TCP): T = a + b·W_max
    [RTTs], except between the first and last ``knots`` (W_max, T), interpolated; the
    TRC picks W_max from ``w_first`` on (6.5, §4.3, unless the TCP's cycle there has no
    one length)."""
    return {n: {"drop": d, "ecn": e} for n, d, e in _core.trc_fitted_models()}


def cycle(
    w_max: float,
    model: str = "fitted",
    ecn: bool = False,
    tcp: Mapping[str, Any] | None = None,
    rtt: float | None = None,
) -> float:
    """The model's time per cycle [RTTs] at ``w_max`` (and total RTT ``rtt`` [s] for a
    law measured per RTT, ``by_rtt``) for a flow with ``tcp`` settings."""
    return _core.trc_cycle(
        model, float(w_max), bool(ecn), _tcp_json(tcp), None if rtt is None else float(rtt)
    )


def model_cycle(name: str, w_max: float, ecn: bool = False, rtt: float | None = None) -> float:
    """A built-in model's own time per cycle [RTTs] at ``w_max`` (and RTT ``rtt`` [s]),
    whatever TCP it was fitted on: :func:`cycle` refuses a model whose TCP is not the
    flow's, which a table of the models themselves has none of."""
    return _core.trc_model_cycle(name, float(w_max), bool(ecn), None if rtt is None else float(rtt))


#: Requested rates of the paper's Fig. 4 [bit/s].
FIG4_RATES = tuple(r * 1000.0 for r in range(50, 601, 50))


def parameters(
    rate: float,
    *,
    mss: int = 1460,
    rtt_net: float = 0.0,
    rtt_dev: float = 0.010,
    gput_error: float = 0.05,
    rtt_min: float | None = None,
    model: str = "fitted",
    ecn: bool = False,
    tcp: Mapping[str, Any] | None = None,
    recovery_lead: float | None = None,
) -> dict[str, Any]:
    """TRC parameters for a requested goodput ``rate`` [bit/s] (P1 Figs. 2 and 3).

    Args:
      mss: payload bytes per segment (the flow's ``tcp.mss``).
      rtt_net: the path's RTT without the TRC [s].
      rtt_dev, gput_error: the operator's settings (§4.4); RTT*_min = rtt_dev/gput_error
        unless ``rtt_min`` [s] is given; the rate is raised by gput_error + 1 %.
      model: ``"fitted"`` (the default: the model fitted to ``tcp``), ``"paper"``
        (eqs. 1–4) or a fitted model's name (:func:`fitted_models`).
      ecn: ECN mode (E = 0).
      tcp: the controlled flow's ``tcp`` settings, as in a scenario (``None``: qoslab's
        default TCP).
      recovery_lead: the TRC's ``recovery_lead`` [s] (``None``: its default for ``tcp``,
        RTT_dev when the TCP's RTO clock is at most RTT_dev fine, else 0); in drop mode
        RTT_min is at least RTT_net + the lead, as in a scenario.

    Returns a dict: ``target`` (raised rate), ``w_max``, ``p``, ``drop_every`` (1/p + E),
    ``rtt``, ``rtt_trc``, ``rtt_min``, ``predicted`` (model goodput), ``buffer``
    (⌈W_max⌉ packets), ``branch`` (``"delay"`` or ``"rtt_min"``), the law's ``a``,
    ``b``, ``knots`` and ``w_first`` (its smallest W_max), …

    Raises:
      ValueError: an input is out of range.
    """
    return _core.trc_parameters(
        float(rate), int(mss), float(rtt_net), float(rtt_dev), float(gput_error),
        None if rtt_min is None else float(rtt_min), model, bool(ecn), _tcp_json(tcp),
        None if recovery_lead is None else float(recovery_lead),
    )  # fmt: skip


def cycle_time(
    model: str = "fitted", ecn: bool = False, tcp: Mapping[str, Any] | None = None
) -> tuple[float, float]:
    """``(a, b)``: the model's time per cycle is ``a + b·W_max`` RTTs (eq. 1), with
    drops or (``ecn``) CE marks, for a flow with ``tcp`` settings (``None``: defaults)."""
    return _core.trc_cycle_time(model, bool(ecn), _tcp_json(tcp))


def fig4_table(
    rates: Sequence[float] = FIG4_RATES,
    *,
    mss: int = 1460,
    rtt_net: float = 0.0,
    model: str = "fitted",
    **kw: Any,
):
    """The Fig. 4 table as a polars DataFrame: one row per requested rate."""
    import polars as pl

    rows = []
    for r in rates:
        p = parameters(r, mss=mss, rtt_net=rtt_net, model=model, **kw)
        rows.append(
            {
                "rate_kbps": r / 1e3,
                "target_kbps": p["target"] / 1e3,
                "w_max": p["w_max"],
                "p": p["p"],
                "drop_every": p["drop_every"],
                "rtt_ms": p["rtt"] * 1e3,
                "rtt_trc_ms": p["rtt_trc"] * 1e3,
                "buffer": p["buffer"],
                "branch": p["branch"],
            }
        )
    return pl.DataFrame(rows)


def _parse_rate(s: str) -> float:
    s = s.strip().lower().replace("bps", "").replace("b/s", "")
    mult = {"k": 1e3, "m": 1e6, "g": 1e9}
    if s and s[-1] in mult:
        return float(s[:-1]) * mult[s[-1]]
    return float(s)


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m qoslab.trc [--mss N] [--rtt-net S] [--model M] [RATE …]``."""
    import argparse

    import polars as pl

    ap = argparse.ArgumentParser(prog="python -m qoslab.trc", description=__doc__.split("\n")[0])
    ap.add_argument("rates", nargs="*", help="requested rates, e.g. 50k 1M (default: Fig. 4's)")
    ap.add_argument("--mss", type=int, default=1460)
    ap.add_argument("--rtt-net", type=float, default=0.0, help="seconds")
    ap.add_argument("--rtt-dev", type=float, default=0.010, help="seconds")
    ap.add_argument("--gput-error", type=float, default=0.05)
    ap.add_argument("--model", default="fitted", help="fitted, paper or a fitted model's name")
    ap.add_argument("--ecn", action="store_true")
    a = ap.parse_args(argv)
    rates = [_parse_rate(r) for r in a.rates] or list(FIG4_RATES)
    df = fig4_table(
        rates, mss=a.mss, rtt_net=a.rtt_net, model=a.model,
        rtt_dev=a.rtt_dev, gput_error=a.gput_error, ecn=a.ecn,
    )  # fmt: skip
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_hide_dataframe_shape=True, tbl_width_chars=200):
        print(df)


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])


# --- Fitting a model (P1 §4.1: eq. 1 fitted to the TCP the TRC controls) -----------------

#: Every W_max the TRC can pick up to 20.5 (where limited transmit makes the cycle
#: uneven), then sparser: the line holds there.
FIT_W_GRID = (6.5, 8.5, 10.5, 12.5, 14.5, 16.5, 18.5, 20.5, 30.5, 50.5, 100.5, 200.5)
#: Total RTTs [s] of a fit: from RTT*_min (200 ms with the TRC's defaults, eq. 5), where
#: every TRC with default operator settings runs, up to 800 ms.
FIT_RTT_GRID = (0.2, 0.4, 0.8)
#: Total RTTs [s] added to a fit whose cycle depends on the RTT (``by_rtt``): with
#: delayed ACKs the cycle moves most while the RTT is near the ACK timer (200 ms by
#: default), and a TRC asked for a small rate runs at RTTs above 800 ms.
FIT_RTT_FINE = (0.22, 0.25, 0.3, 0.35, 0.47, 0.55, 0.65, 1.0, 1.2, 1.6)
#: W_max added to such a fit: every one the TRC picks up to 50.5 (from 6.5 in steps of
#: 2; with delayed ACKs the cycle also depends on W_max's phase against the ACK pairs).
FIT_W_FINE = tuple(6.5 + 2 * k for k in range(23))
#: W_max step of the TRC (Fig. 2 tries W_max = 6.5, 8.5, …): the spacing of the fine grid.
FIT_W_STEP = 2.0
#: A grid point becomes a knot when the line under-predicts its goodput by more than this.
KNOT_TOL = 0.02
#: The paper's model error (§4.3): a W_max whose cycles spread by more has no one law.
SPREAD_TOL = 0.03
#: RTT*_min with the TRC's default RTT_dev and gput_error (eq. 5): no TRC flow runs at a
#: shorter RTT unless its operator lowers ``rtt_min``.
RTT_OPERATING_MIN = 0.2
#: How every model file begins (a file that does not is never overwritten by a fit).
_MODEL_HEADER = "# A TRC model"
#: Version of the model file format (``format`` in a model file).
MODEL_FORMAT = 1


def data_per_cycle(w: float) -> float:
    """Packets per cycle, 1/p (eq. 2)."""
    return 0.375 * w * w + 1.25 * w - 2.0


def line_fit(rows: list[dict]) -> tuple[float, float, float]:
    """Least-squares intercept a_ls and slope b of the cycle time against W_max, and the
    conservative intercept a = max(T − b·W): with it every measured cycle is at most as
    long as the model's, so every flow gets at least the predicted goodput, the property
    the paper asked of its model ("achieves at least the rate that's estimated by the
    model", §4.3)."""
    xs = [r["w_max"] for r in rows]
    ys = [r["cycle_rtts"] for r in rows]
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )
    a = max(y - b * x for x, y in zip(xs, ys, strict=True))
    return my - b * mx, a, b


def rounded(a: float, b: float) -> tuple[float, float]:
    """The constants as stored: 4 decimals, the intercept rounded up (so the model stays
    conservative)."""
    return math.ceil(a * 1e4) / 1e4, round(b, 4)


def fit_with_knots(rows: list[dict]) -> tuple[float, float, float, list[tuple[float, float]]]:
    """(a_ls, a, b, knots): the line fitted (as :func:`line_fit`) to the grid points it
    describes within KNOT_TOL. While some W_max's longest measured cycle is more than
    KNOT_TOL shorter than the line's, the W_max whose points set the conservative intercept
    becomes a knot and the line is refitted without it. A knot's T is its longest
    measured cycle (rounded up); the knots list runs from the first knot to the grid
    point after the last one, points between them taking the line's value."""
    ws = sorted({r["w_max"] for r in rows})
    knot_ws: set[float] = set()
    while True:
        rest = [r for r in rows if r["w_max"] not in knot_ws]
        if len({r["w_max"] for r in rest}) < 2:
            # Every W_max but one became a knot: the line runs through the last two.
            knot_ws.discard(max(knot_ws))
            rest = [r for r in rows if r["w_max"] not in knot_ws]
            a_ls, a, b = line_fit(rest)
            a, b = rounded(a, b)
            break
        a_ls, a, b = line_fit(rest)
        a, b = rounded(a, b)
        # the line against each W_max's longest cycle (the RTTs' spread at one W_max is
        # no shape a knot could fix)
        longest_rest = {r["w_max"]: max(x["cycle_rtts"] for x in rest if x["w_max"] == r["w_max"])
                        for r in rest}  # fmt: skip
        if all((a + b * w) / t <= 1 + KNOT_TOL for w, t in longest_rest.items()):
            break
        top = max(rest, key=lambda r: r["cycle_rtts"] - b * r["w_max"])
        knot_ws.add(top["w_max"])
    if not knot_ws:
        return a_ls, a, b, []
    longest = {w: max(r["cycle_rtts"] for r in rows if r["w_max"] == w) for w in ws}
    first, last = ws.index(min(knot_ws)), ws.index(max(knot_ws))
    out = []
    for w in ws[first : last + 2]:
        t = longest[w] if w in knot_ws else a + b * w
        out.append((w, math.ceil(t * 1e4) / 1e4))
    return a_ls, a, b, out


def spread(rows: list[dict], w: float) -> float:
    """Longest over shortest cycle measured at ``w`` over the fit RTTs the TRC runs at
    (≥ RTT_OPERATING_MIN), minus 1."""
    ts = [r["cycle_rtts"] for r in rows
          if r["w_max"] == w and r["rtt"] >= RTT_OPERATING_MIN - 1e-9]  # fmt: skip
    return max(ts) / min(ts) - 1


def first_w(rows: list[dict]) -> float:
    """The smallest W_max the law describes: the grid's first (6.5, §4.3), or the next
    one when the cycles at the first spread by more than SPREAD_TOL and those at the
    next do not (an undetermined small-window cycle, not an RTT-dependent one)."""
    ws = sorted({r["w_max"] for r in rows})
    if len(ws) > 1 and spread(rows, ws[0]) > SPREAD_TOL >= spread(rows, ws[1]):
        return ws[1]
    return ws[0]


def rtt_spread(rows: list[dict], w_first: float) -> float:
    """The largest :func:`spread` of the cycle over the RTTs a TRC runs at, over every
    W_max from ``w_first`` on (0 with fewer than two such RTTs)."""
    ws = sorted({r["w_max"] for r in rows if r["w_max"] >= w_first})
    ops = {r["rtt"] for r in rows if r["rtt"] >= RTT_OPERATING_MIN - 1e-9}
    if len({round(x, 4) for x in ops}) < 2:
        return 0.0
    return max(spread(rows, w) for w in ws)


def w_above_fine(rows: list[dict], w_fine: Sequence[float], top: float) -> list[float]:
    """The W_max a law measured per RTT also needs measured one by one above ``w_fine``
    (up to ``top``, in the TRC's steps): all of them when the cycle at a grid W_max
    above the fine ones still moves with the RTT by more than SPREAD_TOL (:func:`spread`;
    CUBIC, whose cycle is K seconds at every window: at W_max 100.5 it moves by 25-36 %,
    and between 100.5 and the fine grid's 50.5 it is not the straight line between
    them, 47.0 RTTs measured at W_max 102.5 and 229 ms where interpolating gives 48.9),
    else none (with delayed ACKs the cycle at 100.5 and 200.5 moves by at most 3 %)."""
    last = max(w_fine)
    above = sorted({r["w_max"] for r in rows if r["w_max"] > last + 1e-9})
    if not any(spread(rows, w) > SPREAD_TOL for w in above):
        return []
    n = round((top - last) / FIT_W_STEP)
    return [last + FIT_W_STEP * k for k in range(1, n)]


def fit_law(rows: list[dict]) -> dict[str, Any]:
    """The cycle-time law of one mode's measurements: ``w_first``, ``a_ls``, ``a``,
    ``b``, ``knots`` (:func:`first_w`, :func:`fit_with_knots`) and ``by_rtt``: true
    when the cycle (in RTTs) at one W_max differs between the RTTs a TRC runs at by
    more than the paper's model error (SPREAD_TOL, §4.3; delayed ACKs, whose timer is
    a fixed time, do that): the engine then takes the law from the measured points per
    RTT (``CycleTime::cycle_at``), since no one line in W_max holds at every RTT."""
    w1 = first_w(rows)
    a_ls, a, b, k = fit_with_knots([r for r in rows if r["w_max"] >= w1])
    by_rtt = rtt_spread(rows, w1) > SPREAD_TOL
    return {"w_first": w1, "a_ls": a_ls, "a": a, "b": b, "knots": k, "by_rtt": by_rtt}


def cycle_at(law: Mapping[str, Any], w: float, rtt: float, rows: Sequence[Mapping]) -> float:
    """The engine's ``CycleTime::cycle_at`` for a fitted ``law`` (:func:`fit_law`) whose
    measurements are ``rows``: the line with knots, or with ``by_rtt`` the points per
    RTT, interpolated in W_max and in log RTT."""
    if not law.get("by_rtt"):
        k = law["knots"]
        if k and k[0][0] <= w <= k[-1][0]:
            i = min(max(next((j for j, p in enumerate(k) if p[0] > w), len(k)), 1), len(k) - 1)
            (w0, t0), (w1, t1) = k[i - 1], k[i]
            return t0 if w1 == w0 else t0 + (t1 - t0) * (w - w0) / (w1 - w0)
        return law["a"] + law["b"] * w
    by: dict[float, list[tuple[float, float]]] = {}
    for r in rows:
        key = next((x for x in by if abs(x - r["rtt"]) < 1e-4), r["rtt"])
        by.setdefault(key, []).append((r["w_max"], r["cycle_rtts"]))
    rtts = sorted(by)

    def at(pts: list[tuple[float, float]]) -> float:
        pts = sorted(pts)
        if w <= pts[0][0]:
            return pts[0][1]
        if w >= pts[-1][0]:
            return pts[-1][1] + law["b"] * (w - pts[-1][0])
        i = next(j for j, p in enumerate(pts) if p[0] > w)
        (w0, t0), (w1, t1) = pts[i - 1], pts[i]
        return t0 + (t1 - t0) * (w - w0) / (w1 - w0)

    if rtt <= rtts[0]:
        return at(by[rtts[0]])
    if rtt >= rtts[-1]:
        return at(by[rtts[-1]])
    i = next(j for j, x in enumerate(rtts) if x > rtt)
    r0, r1 = rtts[i - 1], rtts[i]
    f = (math.log(rtt) - math.log(r0)) / (math.log(r1) - math.log(r0))
    t0, t1 = at(by[r0]), at(by[r1])
    return t0 + (t1 - t0) * f


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError(f"a model file holds finite numbers only, found {v}")
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, Mapping):
        return "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"cannot write {type(v).__name__} to a model file")


def model_text(
    name: str,
    tcp: Mapping[str, Any],
    laws: Mapping[str, Mapping[str, Any]],
    *,
    recovery_lead: bool,
    command: str,
    live: str | None = None,
    points: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
) -> str:
    """A TRC model file (TOML): the TCP configuration it was fitted on (``[tcp]``, the
    settings the fit's flow had; absent keys were qoslab's defaults), whether the fit ran
    with the recovery lead, the laws (``[drop]``, optionally ``[ecn]``: ``w_first``,
    ``a``, ``b``, ``knots``) and, per mode, the measured points ``[w_max, rtt, cycle]``.
    Floats are written with ``repr``, so the engine reads back exactly these doubles."""
    lines = [
        _MODEL_HEADER + ": P1 eq. 1's cycle time fitted to one TCP configuration",
        f"# (docs/queues-and-conditioners.md#trc-models). Made by: {command}",
        f"format = {MODEL_FORMAT}",
        f"name = {_toml_value(name)}",
        f"command = {_toml_value(command)}",
        f"recovery_lead = {_toml_value(recovery_lead)}",
    ]
    if live:
        lines.append(f"live = {_toml_value(live)}")
    lines += ["", "[tcp]"] + [f"{k} = {_toml_value(v)}" for k, v in tcp.items()]
    for mode in ("drop", "ecn"):
        if mode not in laws:
            continue
        f = laws[mode]
        lines += ["", f"[{mode}]"]
        lines += [f"{k} = {_toml_value(f[k])}" for k in ("w_first", "a", "b")]
        lines.append(f"knots = {_toml_value([list(k) for k in f['knots']])}")
        if f.get("by_rtt"):
            if not (points or {}).get(mode):
                raise ValueError(f"[{mode}] a law measured per RTT needs its points")
            lines.append("# the cycle depends on the RTT: the law is the points per RTT")
            lines.append("by_rtt = true")
        pts = (points or {}).get(mode)
        if pts:
            lines.append("# measured: [W_max, RTT [s], time per cycle [RTTs]]")
            lines.append("points = [")
            lines += [f"  {_toml_value([r['w_max'], r['rtt'], r['cycle_rtts']])}," for r in pts]
            lines.append("]")
    return "\n".join(lines) + "\n"


def _fit_scenario(tcp: Mapping[str, Any], w_max: float, rtt: float, ecn: bool) -> dict:
    """One fit run: a flow with ``tcp`` (window cap 5000) over a 200 Mb/s dumbbell
    (0.5 ms links) through a TRC with fixed W_max and total RTT ``rtt`` (the TRC's own
    drop pattern), as ``validation/trc_model_fit.py`` runs the built-in models."""
    mss = int(tcp.get("mss", 1460))
    rtt_net = 0.003 + 3 * 8 * (mss + 40 + 40) / 200e6
    duration = max(120.0, 75 * (2.5 + w_max / 2) * rtt)
    q = {"kind": "droptail", "limit": 2000}
    link = [{"a": a, "b": b, "rate": "200Mbps", "delay": "0.5ms", "queue": q}
            for a, b in (("s", "r0"), ("r0", "r1"), ("r1", "d"))]  # fmt: skip
    stage = {"kind": "trc", "flow": "f", "w_max": w_max, "rtt_trc": rtt - rtt_net, "ecn": ecn}
    return {
        "name": f"trc-fit-w{w_max}-rtt{rtt:g}",
        "duration": duration,
        "warmup": duration / 5,
        "node": [
            {"name": "s"},
            {"name": "r0", "kind": "router"},
            {"name": "r1", "kind": "router"},
            {"name": "d"},
        ],
        "link": link,
        "flow": [{"name": "f", "from": "s", "to": "d", "tcp": {**tcp, "ecn": ecn}}],
        "conditioner": [{"at": "s", "stages": [stage]}],
        "record": {"interval": duration},
    }


def _measure(tcp: Mapping[str, Any], w_max: float, rtt: float, ecn: bool) -> dict:
    import qoslab

    res = qoslab.run(_fit_scenario(tcp, w_max, rtt, ecn))
    trc = res.table("trc")
    g = res.flows.row(0, named=True)["goodput_bps"]
    rtt_used = trc["rtt"][0]
    w_avg = g * rtt_used / (int(tcp.get("mss", 1460)) * 8)
    return {"w_max": w_max, "rtt": rtt_used, "goodput": g, "w_avg": w_avg,
            "cycle_rtts": data_per_cycle(w_max) / w_avg}  # fmt: skip


def fit(
    tcp: Mapping[str, Any] | None = None,
    *,
    name: str | None = None,
    out: str | Path | None = None,
    ecn: bool = False,
    w_grid: Sequence[float] = FIT_W_GRID,
    rtt_grid: Sequence[float] = FIT_RTT_GRID,
    rtt_dev: float = 0.010,
    progress: bool = True,
    command: str | None = None,
    rtt_fine: Sequence[float] = FIT_RTT_FINE,
    w_fine: Sequence[float] = FIT_W_FINE,
) -> Path:
    """Fits a TRC model (P1 eq. 1's cycle time, §4.1) for a flow with ``tcp`` settings
    (a scenario's ``tcp`` table; ``None``: qoslab's defaults), stores it as a model file
    and returns its path. A scenario names it on the TRC: ``model = "<path>"`` (or the
    name alone when it is in the model store).

    One flow with those settings (window cap 5000) through a TRC with fixed W_max and
    RTT, for every W_max of ``w_grid`` at every total RTT of ``rtt_grid`` [s]; the cycle
    is T = (1/p)/W_avg; the law T = a + b·W_max with b by least squares and a the
    largest residual (the model never promises more than the flow got), knots where the
    line misses by more than 2 % (:func:`fit_law`). With drops the fit's TRC runs the
    recovery lead when the TCP's clock granularity is at most ``rtt_dev`` (the TRC's
    default), so its model serves TRCs with that lead; with ``ecn`` the model gets the
    drop law and the ECN law (both measured). Where the cycle at one W_max moves with
    the RTT by more than 3 % (``by_rtt``, delayed ACKs), the fit also measures
    ``rtt_fine`` × ``w_fine`` and the model is the measured points per RTT; where it
    still moves by more at the grid's W_max above ``w_fine`` (CUBIC), also every W_max
    from there up to the grid's largest (:func:`w_above_fine`).

    Args:
      name: the model's name (default: its TCP's configuration name plus the keys set).
      out: the file (a ``.toml`` path) or folder; default the model store
        (``$QOSLAB_TRC_MODELS``, else ``~/.local/share/qoslab/trc-models``).
      progress: show a progress bar on stderr.

    Raises:
      ValueError: bad TCP settings.
    """
    import os
    import time

    from qoslab._core import trc_model_name

    tcp = {**(tcp or {}), "max_window": 5000}
    tcp.pop("ecn", None)
    base = trc_model_name(json.dumps(tcp))
    extra = [k for k in ("byte_counting", "delack_timeout", "initial_window", "granularity")
             if k in tcp]  # fmt: skip
    name = name or "-".join([base] + [f"{k}{tcp[k]}".replace("_", "") for k in extra])
    dest = Path(out) if out is not None else _store()
    if dest.suffix != ".toml":
        dest = dest / f"{name}.toml"
    gran = _dur_s(tcp.get("granularity", "10ms"))
    lead = gran <= rtt_dev
    modes = [False, True] if ecn else [False]
    jobs = [(m, w, r) for m in modes for r in rtt_grid for w in w_grid]
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(jobs), unit="run", desc=f"trc fit {name}", file=sys.stderr)
    rows: dict[str, list[dict]] = {"drop": [], "ecn": []}
    t0 = time.perf_counter()

    def run(todo: list[tuple[bool, float, float]]) -> None:
        for m, w, r in todo:
            rows["ecn" if m else "drop"].append(_measure(tcp, w, r, m))
            if bar is not None:
                bar.update(1)

    def fitted() -> dict[str, Any]:
        return {mode: fit_law(rs) for mode, rs in rows.items() if rs}

    def measure_more(extra: list[tuple[bool, float, float]]) -> None:
        """Runs the points of ``extra`` not measured yet (the bar grows by them)."""
        done = set(jobs)
        extra = [j for j in extra if j not in done]
        if not extra:
            return
        if bar is not None:
            bar.total += len(extra)
            bar.refresh()
        run(extra)
        jobs.extend(extra)

    run(jobs)
    laws = fitted()
    rtts = sorted(set(rtt_grid) | set(rtt_fine))
    # A cycle that depends on the RTT is measured at more RTTs, then fitted again.
    measure_more([(m, w, r) for m in modes if laws["ecn" if m else "drop"]["by_rtt"]
                  for r in rtts for w in sorted(set(w_grid) | set(w_fine))])  # fmt: skip
    laws = fitted()
    # Where the cycle still moves with the RTT above the fine W_max (CUBIC), every W_max
    # the TRC picks up to the grid's largest is measured too.
    measure_more([(m, w, r) for m in modes if laws["ecn" if m else "drop"]["by_rtt"]
                  for w in w_above_fine(rows["ecn" if m else "drop"], w_fine, max(w_grid))
                  for r in rtts])  # fmt: skip
    laws = fitted()
    if bar is not None:
        bar.close()
    cmd = command or f"qoslab.trc.fit({dict(tcp)!r}, ecn={ecn})"
    cmd += f"  ({len(jobs)} runs, {time.perf_counter() - t0:.0f} s)"
    text = model_text(name, tcp, laws, recovery_lead=lead, command=cmd,
                      points={k: v for k, v in rows.items() if v})  # fmt: skip
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(".toml.tmp")
    if dest.exists() and not dest.read_text(errors="replace").startswith(_MODEL_HEADER):
        raise FileExistsError(f"{dest} exists and is not a TRC model file: not overwritten")
    tmp.write_text(text)
    os.replace(tmp, dest)
    return dest


def _store() -> Path:
    """The model store (the engine's ``model_store``)."""
    import os

    for k, sub in (("QOSLAB_TRC_MODELS", ""), ("XDG_DATA_HOME", "qoslab/trc-models")):
        v = os.environ.get(k)
        if v:
            return Path(v) / sub if sub else Path(v)
    return Path.home() / ".local/share/qoslab/trc-models"


def _dur_s(v: Any) -> float:
    """A duration as a scenario writes it ("10ms", "1s", seconds) [s]."""
    if isinstance(v, (int, float)):
        return float(v)
    s = str(v).strip()
    for unit, f in (("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9), ("s", 1.0)):
        if s.endswith(unit):
            return float(s[: -len(unit)]) * f
    return float(s)

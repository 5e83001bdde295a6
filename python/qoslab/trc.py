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
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from qoslab import _core

__all__ = [
    "FIG4_RATES", "cycle", "cycle_time", "fig4_table", "fitted_models", "model_name", "parameters",
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
    w_max: float, model: str = "fitted", ecn: bool = False, tcp: Mapping[str, Any] | None = None
) -> float:
    """The model's time per cycle [RTTs] at ``w_max`` for a flow with ``tcp`` settings."""
    return _core.trc_cycle(model, float(w_max), bool(ecn), _tcp_json(tcp))


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

"""P4 live: why striping's simulated twin collapses where Linux's striping does not
(``docs/papers/live.md#p4-tlp``), one change to the twin at a time, simulated only.

    .venv/bin/python validation/p4_live_stripe_twin.py
    .venv/bin/python validation/p4_live_stripe_twin.py --seeds 5 --weights 2 4 8 12

Each variant is ``p4-live``'s twin of the striped transfer (``p4_live.stripe_twin``: the
unit Linux-like flow beside qoslab's ``stripe`` flow, 120 s with a 20 s warm-up) with one
thing changed:

- ``as run``: the twin as the experiment runs it (each socket's receive buffer 64 KB,
  as the live receiver's ``--rcv-buffer``; Linux doubles ``SO_RCVBUF`` and keeps about
  half of it for overhead, so about 64 KB of data fit);
- buffering: ``rcv 128KB`` (the whole doubled ``SO_RCVBUF`` for data), ``rcv
  unlimited`` (a receiver that takes every socket's data at once, as the live program
  does with ``--hold`` unlimited: no socket ever closes its window) and ``snd 128KB``
  (twice the send buffer per socket);
- ACK timing: ``ato 40ms`` (the receivers' delayed-ACK timeout fixed at Linux's
  ``TCP_ATO_MIN``, ``adaptive_delack = false``) and ``no delack`` (every segment ACKed at
  once, ``delayed_ack = false``), on the striped sockets only.

Prints per variant and w: the twin's weighted ÷ unit ratio ÷ w (mean over the seeds),
the striped sockets' timeouts and zero-window ACKs per run (``stripe`` table), and live's
ratio ÷ w from the committed quick run (``docs/papers/data/live-quick.json``, one seed,
50 s) with whether it lies within the experiment's band (live within ± 25 % of the
twin). The buffering variants leave the twin where it is; the ACK-timing ones move it.
"""

from __future__ import annotations

import argparse
import json
import pathlib
from collections.abc import Callable
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
LIVE_JSON = ROOT / "docs" / "papers" / "data" / "live-quick.json"


def _tcp(**kw: Any) -> Callable[[dict], None]:
    """A change of the striped flow's ``tcp`` table."""
    return lambda d: d["flow"][1]["tcp"].update(kw)


def _stripe(**kw: Any) -> Callable[[dict], None]:
    """A change of the striped flow's ``stripe`` table."""
    return lambda d: d["flow"][1]["stripe"].update(kw)


def _unlimited(d: dict) -> None:
    """No receive buffer: the application takes every segment's data on arrival."""
    d["flow"][1]["tcp"].pop("rcv_buffer")


#: The variants: name → change of the twin's scenario.
VARIANTS: dict[str, Callable[[dict], None]] = {
    "as run": lambda d: None,
    "rcv 128KB": _tcp(rcv_buffer="128KB"),
    "rcv unlimited": _unlimited,
    "snd 128KB": _stripe(send_buffer="128KB"),
    "ato 40ms": _tcp(adaptive_delack=False),
    "no delack": _tcp(delayed_ack=False),
}


def live_ratios() -> dict[int, float]:
    """Live striping's ratio ÷ w per w from the committed quick run (seed 1)."""
    exp = json.loads(LIVE_JSON.read_text())["experiments"]["p4-live"]
    t = exp["tables"]["runs"]
    cols = t["columns"]
    out = {}
    for row in t["rows"]:
        r = dict(zip(cols, row, strict=True))
        if r["method"] == "stripe":
            out[int(r["w"])] = float(r["ratio_over_w"])
    return out


def twin_run(w: int, seed: int, change: Callable[[dict], None], times: list[str]) -> dict:
    """One twin run with ``change``: its ratio ÷ w, timeouts and zero-window ACKs."""
    import qoslab
    from qoslab.reproduce.p4_live import stripe_twin

    d = stripe_twin(w, times[0], times[1])
    change(d)
    r = qoslab.run(d, seed=seed)
    fl = r.tables["flows"]
    g = dict(zip(fl["name"].to_list(), fl["goodput_bps"].to_list(), strict=True))
    st = r.tables["stripe"].row(0, named=True)
    return {
        "ratio_over_w": g["weighted"] / g["unit"] / w,
        "timeouts": float(st["timeouts"]),
        "zero_windows": float(st["zero_windows"]),
    }


def main() -> None:
    """Runs the variants and prints the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3, help="seeds 1..N (default 3)")
    ap.add_argument("--weights", type=int, nargs="+", default=[2, 4, 8])
    ap.add_argument("--time", nargs=2, default=["120s", "20s"], help="duration, warm-up")
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    a = ap.parse_args()
    live = live_ratios()
    print(f"{'variant':<14} {'w':>3} {'twin r/w':>9} {'timeouts':>9} {'zero_win':>9} "
          f"{'live r/w':>9}  band")  # fmt: skip
    for name in a.variants:
        for w in a.weights:
            runs = [twin_run(w, s, VARIANTS[name], a.time) for s in range(1, a.seeds + 1)]
            m = {k: sum(r[k] for r in runs) / len(runs) for k in runs[0]}
            lv = live.get(w)
            tw = m["ratio_over_w"]
            band = "" if lv is None else ("within" if abs(lv - tw) <= 0.25 * tw else "outside")
            lvs = f"{lv:9.3f}" if lv is not None else f"{'-':>9}"
            print(f"{name:<14} {w:>3} {m['ratio_over_w']:9.3f} {m['timeouts']:9.0f} "
                  f"{m['zero_windows']:9.0f} {lvs}  {band}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()

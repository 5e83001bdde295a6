"""A model `qoslab trc fit` makes, checked off its fit grid: requests and access delays
it was not fitted at, against P1's claim (at least the request, at most 3 % above the
target R·1.06). Two models: Linux-like NewReno (delayed ACKs + byte counting,
``validation/data/trc-user/``) and qoslab's CUBIC (``validation/data/trc-cubic/``).
Rewrites the table in the model's ``README.md`` (between its markers).

    python validation/trc_user_check.py                 # Linux-like NewReno
    python validation/trc_user_check.py --model cubic   # qoslab's CUBIC
    python validation/trc_user_check.py --model cubic --wide   # and above 2 Mb/s

``--wide`` also runs requests of 2.5-10 Mb/s at access delays of 2, 7 and 25 ms (W_max
above 50, where CUBIC's cycle is uneven) into a second table (its own markers).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import qoslab
from qoslab.invariants import TRC_BAND, trc_scenario

ROOT = Path(__file__).resolve().parent.parent
#: name → (folder, model file, the flows' tcp table).
MODELS = {
    "linux-newreno": (
        ROOT / "validation" / "data" / "trc-user",
        "linux-newreno.toml",
        {"variant": "newreno", "delayed_ack": True, "byte_counting": True, "max_window": 2000},
    ),
    "cubic": (
        ROOT / "validation" / "data" / "trc-cubic",
        "qoslab-cubic.toml",
        {"cc": "cubic", "max_window": 2000},
    ),
}
#: (request [bit/s], access-link delay [ms]): none on the fit's grid (a 0.5 ms dumbbell
#: at fixed W_max and RTT).
CASES = [(60e3, 3.0), (150e3, 12.0), (300e3, 0.5), (700e3, 33.0), (1.5e6, 20.0),
         (2.2e6, 45.0), (4e6, 7.0)]  # fmt: skip
#: ``--wide``: (request, access delay) above 2 Mb/s, three access delays each.
WIDE = [(r * 1e6, d) for r in (2.5, 3, 3.5, 4.5, 5, 6, 8, 10) for d in (2.0, 7.0, 25.0)]


def table(tcp: dict, model: Path, cases: list[tuple[float, float]]) -> tuple[str, int]:
    """The check's table for ``cases`` in drop and ECN mode, and how many runs missed
    the claim without the model's warning."""
    lo, hi = TRC_BAND
    lines = ["| request | access delay | ECN | W_max | RTT [ms] | achieved / requested "
             "| verdict |", "|---|---|---|---|---|---|---|"]  # fmt: skip
    bad = 0
    for ecn in (False, True):
        for rate, delay in cases:
            sc = trc_scenario(tcp, rate, delay, ecn=ecn, model=str(model))
            res = qoslab.run(sc)
            ratio = res.flows.row(0, named=True)["goodput_bps"] / rate
            trc = res.tables["trc"].row(0, named=True)
            warned = [w for w in res.summary["warnings"] if w.startswith("TRC for flow")]
            ok = lo <= ratio <= hi
            verdict = "within" if ok else ("outside, warned" if warned else "outside")
            bad += verdict == "outside"
            lines.append(
                f"| {rate / 1e3:g} kb/s | {delay:g} ms | {'yes' if ecn else 'no'} | "
                f"{trc['w_max']:g} | {trc['rtt'] * 1e3:.0f} | {ratio:.4f} | {verdict} |"
            )
    return "\n".join(lines), bad


def rewrite(readme: Path, marker: str, table: str) -> bool:
    """Puts ``table`` between ``<!-- MARKER begin -->`` and ``<!-- MARKER end -->``."""
    text = readme.read_text()
    new = re.sub(rf"(<!-- {marker} begin -->\n).*?(<!-- {marker} end -->)",
                 lambda m: m.group(1) + table + "\n" + m.group(2), text, flags=re.S)  # fmt: skip
    if new == text and table not in text:
        print(f"{readme}: no {marker} markers", file=sys.stderr)
        return False
    readme.write_text(new)
    return True


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--model", choices=sorted(MODELS), default="linux-newreno")
    ap.add_argument("--wide", action="store_true", help="also requests of 2.5-10 Mb/s")
    args = ap.parse_args()
    here, model_file, tcp = MODELS[args.model]
    model = here / model_file
    readme = here / "README.md"
    text, bad = table(tcp, model, CASES)
    if not rewrite(readme, "trc-user-check", text):
        return 2
    print(text)
    if args.wide:
        text, more = table(tcp, model, WIDE)
        if not rewrite(readme, "trc-user-check-wide", text):
            return 2
        print(text)
        bad += more
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

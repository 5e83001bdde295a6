"""P4 live: whether the 10-packet queue's window floor is what bends pTCP's ratio away
from the ideal from w = 5 on (``docs/papers/live.md#p4-queue``), tested by deepening
the queue: in the twin at several depths (simulated only) and, with ``--live``, live.

    .venv/bin/python validation/p4_live_queue.py                 # twin only, seconds
    sudo .venv/bin/python validation/p4_live_queue.py --live     # + live runs, ~10 min
    .venv/bin/python validation/p4_live_queue.py --from-json     # page from the JSON

The explanation under test: a Linux flow losing packets cannot keep less than about two
segments in flight, so beside w pipes the unit flow keeps at least
2 × 1500 B × 8 ÷ (15 ms + Q × 6 ms) — the round trip with the hop's Q-packet queue full
— and the ratio weighted ÷ unit levels off near (2 Mb/s − floor) ÷ floor: about 5.5 for
Q = 10, whatever w. The prediction: with a queue four times as deep (Q = 40, floor
0.09 Mb/s, level about 20) pTCP's ratio ÷ w lands within 10 % of the ideal at w = 8 and
w = 15, in the twin and live; nothing else of ``p4-live``'s pTCP run changes
(``p4_live.ptcp_data``, 120 s with a 20 s warm-up, 1 % loss each way).

Per queue depth Q and w: the twin's ratio ÷ w and unit goodput (mean over seeds 1–3),
the floor's arithmetic, and the verdict of the paper's band (ratio ÷ w within 10 % of
1). ``--live`` adds pTCP live at Q = 40 for w = 8 and 15 (seeds 1–2, each beside its
twin, each with its timing verdict) beside full mode's live runs at Q = 10
(``docs/papers/data/live-full.json``).
Writes ``validation/data/p4_live_queue.json`` and ``docs/validation/p4-live-queue.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import statistics
from typing import Any

from qoslab.reproduce.p4_live import FULL_TIME as TIME
from qoslab.reproduce.p4_live import IDEAL_RTOL

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "validation" / "data" / "p4_live_queue.json"
PAGE = ROOT / "docs" / "validation" / "p4-live-queue.md"
FULL_JSON = ROOT / "docs" / "papers" / "data" / "live-full.json"
#: The queue depths [packets] simulated (``p4-live`` runs 10) and the one run live.
QUEUES = [10, 20, 40]
LIVE_QUEUE = 40
WEIGHTS = [2, 4, 8, 10, 15]
LIVE_WEIGHTS = [8, 15]
SEEDS = [1, 2, 3]
LIVE_SEEDS = [1, 2]
#: Base RTT [s], one 1500-byte packet's time on the 2 Mb/s hop [s], the hop's rate [b/s].
RTT0 = 0.015
PKT_S = 1500 * 8 / 2e6
RATE = 2e6


def floor_bps(q: int) -> float:
    """Two 1500-byte packets per round trip with the Q-packet queue full [b/s]."""
    return 2 * 1500 * 8 / (RTT0 + q * PKT_S)


def level(q: int) -> float:
    """The ratio weighted ÷ unit where the unit flow sits at its floor."""
    f = floor_bps(q)
    return (RATE - f) / f


def verdict(r: float) -> str:
    """The paper's band: ratio ÷ w within 10 % of the ideal."""
    return "within" if abs(r - 1) <= IDEAL_RTOL else "outside"


def with_queue(d: dict[str, Any], q: int) -> dict[str, Any]:
    """``d`` with the 2 Mb/s hop's DropTail queue ``q`` packets deep."""
    d["link"][1]["queue"]["limit"] = q
    d["name"] += f"-q{q}"
    return d


def twin_rows() -> list[dict[str, Any]]:
    """pTCP's twin at every queue depth, weight and seed (simulated only)."""
    import qoslab
    from qoslab.reproduce.p4_live import ptcp_twin, twin_ratio

    rows = []
    for q in QUEUES:
        for w in WEIGHTS:
            for s in SEEDS:
                r = twin_ratio(qoslab.run(with_queue(ptcp_twin(w, *TIME), q), seed=s))
                rows.append({"queue": q, "w": w, "seed": s,
                             "ratio_over_w": r["twin_ratio"] / w,
                             "unit_bps": r["twin_unit_bps"]})  # fmt: skip
    return rows


def live_rows() -> list[dict[str, Any]]:
    """pTCP live at :data:`LIVE_QUEUE`, each run beside its twin."""
    from qoslab.api import live
    from qoslab.reproduce.p4_live import ptcp_data, ptcp_row, run_timing, twin_ratio

    rows = []
    for w in LIVE_WEIGHTS:
        for s in LIVE_SEEDS:
            res = live(with_queue(ptcp_data(w, *TIME), LIVE_QUEUE), seed=s, twin=True)
            row = ptcp_row(res, w, float(TIME[1].rstrip("s")))
            tw = twin_ratio(res.twin)
            t = run_timing(res)
            rows.append({"queue": LIVE_QUEUE, "w": w, "seed": s,
                         "ratio_over_w": row["ratio"] / w, "unit_bps": row["unit_bps"],
                         "twin_ratio_over_w": tw["twin_ratio"] / w,
                         "timing_ok": t["timing_ok"], "cause": t["cause"]})  # fmt: skip
            print(f"live Q={LIVE_QUEUE} w={w} seed={s}: ratio/w {row['ratio'] / w:.3f} "
                  f"twin {tw['twin_ratio'] / w:.3f} timing_ok {t['timing_ok']}",
                  flush=True)  # fmt: skip
    return rows


def full_mode_live() -> dict[str, dict[str, float]]:
    """Full mode's live pTCP at Q = 10 per w: mean ratio ÷ w and unit goodput."""
    t = json.loads(FULL_JSON.read_text())["experiments"]["p4-live"]["tables"]["runs"]
    rows = [dict(zip(t["columns"], r, strict=True)) for r in t["rows"]]
    out = {}
    for w in LIVE_WEIGHTS:
        sel = [r for r in rows if r["method"] == "ptcp" and r["w"] == w]
        out[str(w)] = {"ratio_over_w": statistics.mean(r["ratio_over_w"] for r in sel),
                       "unit_bps": statistics.mean(r["unit_bps"] for r in sel),
                       "runs": len(sel)}  # fmt: skip
    return out


def mean(rows: list[dict[str, Any]], key: str) -> float:
    """The mean of ``key`` over ``rows``."""
    return statistics.mean(float(r[key]) for r in rows)


def page(data: dict[str, Any]) -> str:
    """The Markdown page of the data."""
    out = [
        "# P4 live: the queue's window floor and pTCP's ratio",
        "",
        "Written by `validation/p4_live_queue.py` (rerun it to check; `--from-json` "
        "rebuilds this page from `validation/data/p4_live_queue.json`). The experiment is "
        "[`p4-live`](../papers/live.md#p4-queue): pTCP of w pipes beside one Linux Reno "
        "flow over a 2 Mb/s hop, 15 ms base RTT, 1 % loss each way, a 10-packet DropTail "
        "queue; its pTCP falls away from the ideal w:1 from w = 5 on.",
        "",
        "The explanation under test: a Linux flow losing packets keeps about two segments "
        "in flight at least, so beside w pipes the unit flow keeps at least two 1500-byte "
        "packets per round trip with the queue full, and the ratio weighted ÷ unit levels "
        "off where the unit flow sits at that floor, whatever w. The prediction: with the "
        "queue four times as deep (40 packets) and nothing else changed, pTCP's ratio ÷ w "
        "lands within 10 % of the ideal at w = 8 and w = 15, in the twin and live.",
        "",
        "## The twin at three queue depths",
        "",
        "pTCP's twin (qoslab's pTCP beside the Linux-like unit flow), 120 s with a 20 s "
        "warm-up, 1 % loss each way, means over seeds "
        f"{', '.join(map(str, SEEDS))}. Floor: two 1500-byte packets per round trip "
        "with the queue full; level: (2 Mb/s − floor) ÷ floor, the ratio the floor "
        "allows.",
        "",
        "| queue [pkts] | floor [Mb/s] | level | w | ratio ÷ w | ratio | unit [Mb/s] "
        "| band (± 10 % of 1) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    tw = data["twin"]
    for q in QUEUES:
        for w in WEIGHTS:
            sel = [r for r in tw if r["queue"] == q and r["w"] == w]
            r, unit = mean(sel, "ratio_over_w"), mean(sel, "unit_bps") / 1e6
            out.append(f"| {q} | {floor_bps(q) / 1e6:.3f} | {level(q):.1f} | {w} | {r:.3f} "
                       f"| {r * w:.2f} | {unit:.3f} | {verdict(r)} |")  # fmt: skip
    out += ["", "## Live at a 40-packet queue", ""]
    lv = data.get("live")
    if not lv:
        out.append("Not run yet: `sudo .venv/bin/python validation/p4_live_queue.py --live`.")
    else:
        full = data["full_mode_q10"]
        out += [
            f"pTCP live at Q = {LIVE_QUEUE}, seeds {', '.join(map(str, LIVE_SEEDS))}, each "
            "beside its twin; beside it full mode's live runs at Q = 10 (three seeds). "
            "Only runs within the live timing bounds count.",
            "",
            "| w | live ratio ÷ w (Q = 40) | per seed | twin (Q = 40) | unit [Mb/s] "
            "| band | live ratio ÷ w (Q = 10, full mode) | unit [Mb/s] (Q = 10) |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for w in LIVE_WEIGHTS:
            sel = [r for r in lv if r["w"] == w and r["timing_ok"]]
            if not sel:
                out.append(f"| {w} | no run within the timing bounds | | | | | | |")
                continue
            r = mean(sel, "ratio_over_w")
            per = ", ".join(f"{x['ratio_over_w']:.3f}" for x in sel)
            f = full[str(w)]
            out.append(f"| {w} | {r:.3f} | {per} | {mean(sel, 'twin_ratio_over_w'):.3f} "
                       f"| {mean(sel, 'unit_bps') / 1e6:.3f} | {verdict(r)} "
                       f"| {f['ratio_over_w']:.3f} | {f['unit_bps'] / 1e6:.3f} |")  # fmt: skip
        bad = [r for r in lv if not r["timing_ok"]]
        out += ["", f"Live runs outside the timing bounds: {len(bad)} of {len(lv)}."]
    return "\n".join(out) + "\n"


def main() -> None:
    """Runs the twin (and with ``--live`` the live runs) and writes the page."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--live", action="store_true", help="also run pTCP live at Q = 40")
    ap.add_argument("--from-json", action="store_true", help="rebuild the page only")
    a = ap.parse_args()
    if a.from_json:
        data = json.loads(DATA.read_text())
    else:
        data = {"twin": twin_rows(), "full_mode_q10": full_mode_live()}
        if a.live:
            data["live"] = live_rows()
        elif DATA.exists():
            data["live"] = json.loads(DATA.read_text()).get("live")
        DATA.write_text(json.dumps(data, indent=1, allow_nan=False) + "\n")
    PAGE.write_text(page(data))
    print(PAGE.read_text())
    if any(math.isnan(r["ratio_over_w"]) for r in data["twin"]):
        raise SystemExit("a twin ratio is NaN")


if __name__ == "__main__":
    main()

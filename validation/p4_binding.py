"""pTCP with and without unbinding (P4 §4.1 restriping): duplicate data and
hollow segments in Fig. 2 (one pTCP flow of weight w and nine unit flows on the single
10 Mb/s link), Fig. 9 (ten pTCP flows, 10·w TCBs) and two held-out cases of
``validation/p4_heldout.py``, each run with ``ptcp.binding = "unbind"`` (the default:
data presumed lost leaves the virtual segments it was bound to) and ``"keep"`` (it stays
bound to its first segment too, qoslab's earlier behaviour).

Per run: the duplicate share (data segments that brought the receiver nothing new,
× 1040 B, over the link's capacity), the hollow share (retransmitted virtual segments
sent without data, over all virtual segments the pipes sent), goodput of the pTCP
flow(s), pipe timeouts. Columns are means over seeds.

    .venv/bin/python validation/p4_binding.py [--seconds 100] [--seeds 1] [-j 2]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import qoslab
from qoslab.reproduce import p4

sys.path.insert(0, str(Path(__file__).parent))
import p4_heldout as ho

ROOT = Path(__file__).resolve().parent.parent
PKT = 1040
BINDINGS = ["unbind", "keep"]
F2_W = [10, 50, 100]
F9_TCBS = [50, 300, 1500]
#: Held-out cases (Mb/s, ms, flows) and pTCP weights.
HO_CASES = [(5, 120, 5), (20, 60, 10)]
HO_W = [10, 100]


def shares(res: Any, secs: float, link_bps: float) -> dict[str, float]:
    """Duplicate share of the link, hollow share of virtual segments, pipe timeouts."""
    t, p = res.tables["ptcp"], res.tables["ptcp_pipes"]
    segs = max(float(p["segments"].sum()), 1.0)
    return {
        "dup_share": float(t["duplicates"].sum()) * PKT * 8 / (secs * link_bps),
        "hollow_share": float(t["hollow"].sum()) / segs,
        "timeouts": float(t["timeouts"].sum()),
        "reassigns": float(t["reassigns"].sum()),
        "unbinds": float(t["unbinds"].sum()),
    }


def job(j: tuple) -> dict[str, Any]:
    """One run: (figure, x, binding, seed, secs)."""
    fig, x, binding, seed, secs = j
    if fig == "F2":
        path = str(ROOT / "scenarios/p4/f2-ptcp.toml")
        ov = {**p4.weight_overrides("ptcp", x), "duration": f"{secs:g}s",
              "flow.f0.ptcp.binding": binding}  # fmt: skip
        res = qoslab.run(path, ov, seed=seed)
        g = p4.flow_goodputs(res)
        out = {"ratio_over_w": g[0] / (sum(g[1:]) / 9) / x, **shares(res, secs, 10e6)}
    elif fig == "F9":
        path = str(ROOT / "scenarios/p4/f9-ptcp.toml")
        w = x // p4.N_FLOWS
        ov = {**p4.weight_overrides("ptcp", w, p4.N_FLOWS), "duration": f"{secs:g}s"}
        ov |= {f"flow.f{i}.ptcp.binding": binding for i in range(p4.N_FLOWS)}
        res = qoslab.run(path, ov, seed=seed)
        g = p4.flow_goodputs(res)
        out = {"mean_mbps": statistics.fmean(g) / 1e6, **shares(res, secs, 10e6)}
    else:
        (mbps, rtt, n), w = x
        buf = ho.tcb_buffer(mbps, rtt, n)
        flows = [{"kind": "ptcp", "w": w, "buf": buf}] + [{"kind": "unit"}] * (n - 1)
        sc = ho.scenario(mbps, rtt, flows, secs)
        sc["flow"][0]["ptcp"]["binding"] = binding
        res = qoslab.run(sc, seed=seed)
        g = res.tables["flows"]["goodput_bps"].to_list()
        out = {"ratio_over_w": g[0] / (sum(g[1:]) / (n - 1)) / w,
               **shares(res, secs, mbps * 1e6)}  # fmt: skip
    return {"fig": fig, "x": str(x), "binding": binding, "seed": seed, **out}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=100.0)
    ap.add_argument("--seeds", type=int, default=1)
    a = ap.parse_args()
    xs: list[tuple[str, Any]] = [("F2", w) for w in F2_W] + [("F9", n) for n in F9_TCBS]
    xs += [("heldout", (c, w)) for c in HO_CASES for w in HO_W]
    jobs = [(f, x, b, s, a.seconds) for f, x in xs for b in BINDINGS
            for s in range(1, a.seeds + 1)]  # fmt: skip
    t0 = time.perf_counter()
    with mp.Pool(a.jobs) as pool:
        rows = pool.map(job, jobs)
    keys = ["dup_share", "hollow_share", "timeouts", "reassigns", "unbinds"]
    print(f"| figure | x | binding | {' | '.join(keys)} | goodput measure |")
    print("|---" * (len(keys) + 4) + "|")
    for f, x in xs:
        for b in BINDINGS:
            rs = [r for r in rows if r["fig"] == f and r["x"] == str(x) and r["binding"] == b]
            m = {k: statistics.fmean(r[k] for r in rs) for k in keys}
            gk = "mean_mbps" if f == "F9" else "ratio_over_w"
            gv = statistics.fmean(r[gk] for r in rs)
            print(f"| {f} | {x} | {b} | {m['dup_share']:.4f} | {m['hollow_share']:.4f} "
                  f"| {m['timeouts']:.0f} | {m['reassigns']:.0f} | {m['unbinds']:.0f} "
                  f"| {gk} {gv:.3f} |")  # fmt: skip
    print(f"\n{len(jobs)} runs of {a.seconds:g} s, {a.seeds} seed(s), "
          f"{time.perf_counter() - t0:.0f} s wall")  # fmt: skip


if __name__ == "__main__":
    main()

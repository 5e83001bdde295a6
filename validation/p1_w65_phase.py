"""Why qoslab's default TCP has no one cycle length at W_max = 6.5 (the fit rule
``w_first`` in ``validation/trc_model_fit.py``, docs/papers/p1.md#models-per-tcp).

One flow through a TRC with fixed W_max and RTT (the fit's scenario), time per cycle
T = (1/p) / W_avg [RTTs]: alone on the fit's 200 Mb/s path (deterministic: one run per
point), and with Poisson cross traffic on a 10 Mb/s middle link at ρ = 0.85 (§4.3's
load), several seeds. A T that differs by seed under load is a flow locking into one of
two recoveries by the drop's phase.

    python3 validation/p1_w65_phase.py [TCP_NAME] [LEAD]
    python3 validation/p1_w65_phase.py newreno-flight-lt-nodelack       # lead: default
    python3 validation/p1_w65_phase.py newreno-flight-lt-nodelack 0s    # Fig. 1 as printed
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import trc_model_fit as fit

import qoslab

#: The fitted TCP's name and the TRC's recovery lead (None: the default); set by main.
NAME = "newreno-flight-lt-nodelack"
LEAD: str | None = None
WS = [6.5, 8.5]
RTTS = [0.05, 0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 1.0]
LOAD_RTTS = [0.05, 0.2, 0.8]
SEEDS = [1, 2, 3]
BOTTLENECK = 10e6


def cycle_rtts(w: float, rtt: float, load: bool, seed: int = 1) -> float:
    c = BOTTLENECK if load else 200e6
    rtt_net = 0.003 + 8 * (fit.MSS + 80) * (2 / 200e6 + 1 / c)  # as the builder computes it
    sc = fit.scenario(NAME, w, rtt - rtt_net, max(120.0, 75 * (2.5 + w / 2) * rtt), False)
    if LEAD is not None:
        sc["conditioner"][0]["stages"][0]["recovery_lead"] = LEAD
    if load:
        sc["link"][1]["rate"] = f"{c / 1e6:g}Mbps"
        sc["node"] += [{"name": "x"}, {"name": "y"}]
        sc["link"] += [{"a": "x", "b": "r0", "rate": "1Gbps", "delay": "0.5ms"},
                       {"a": "r1", "b": "y", "rate": "1Gbps", "delay": "0.5ms"}]  # fmt: skip
        own = fit.data_per_cycle(w) / 7.0 * fit.MSS * 8 / rtt * 1540 / 1460  # wire rate
        cross = {"rate": f"{(0.85 * c - own) / 1e3:.3f}kbps", "size": 1500, "poisson": True}
        sc["flow"].append({"name": "x", "from": "x", "to": "y", "cbr": cross})
    res = qoslab.run(sc, seed=seed)
    w_avg = res.flows["goodput_bps"][0] * res.table("trc")["rtt"][0] / (fit.MSS * 8)
    return fit.data_per_cycle(w) / w_avg


def main() -> None:
    global NAME, LEAD
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("name", nargs="?", default=NAME, help="the TCP's name in the fit")
    ap.add_argument("lead", nargs="?", default=None, help="the TRC's recovery lead")
    a = ap.parse_args()
    NAME, LEAD = a.name, a.lead
    print(f"{NAME}, recovery_lead = {LEAD or 'default'}: T [RTTs]")
    for w in WS:
        alone = "  ".join(f"{r * 1e3:.0f} ms {cycle_rtts(w, r, False):.3f}" for r in RTTS)
        print(f"W_max {w}, alone: {alone}")
        for r in LOAD_RTTS:
            ts = "  ".join(f"{cycle_rtts(w, r, True, s):.3f}" for s in SEEDS)
            print(f"W_max {w}, ρ = 0.85 at {BOTTLENECK / 1e6:g} Mb/s, {r * 1e3:.0f} ms, "
                  f"seeds {SEEDS}: {ts}")  # fmt: skip


if __name__ == "__main__":
    main()

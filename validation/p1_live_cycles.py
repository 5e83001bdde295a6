"""Why one law in W_max describes Linux Reno under a TRC but not CUBIC
(docs/papers/live.md#p1-trc-on-real-tcp): one Linux flow live under a TRC with fixed
W_max and RTT (``trc_model_fit.scenario``, the fit's own setting), its congestion window
sampled from TCP_INFO every RTT/20. Per congestion control and RTT: the TRC cycles
(from the window's return to ssthresh after one loss to the next), their length in
RTTs against the fitted model's, the window's peak (against W_max), what a reduction
keeps (ssthresh ÷ that peak: Reno halves, CUBIC keeps β = 0.7), and how the window
grows back over a cycle (the share of the cycle spent below the midpoint between
ssthresh and the peak: about half for a line, more for CUBIC's concave-then-convex
curve).

    sudo python3 validation/p1_live_cycles.py [W_MAX] [SECONDS]
    sudo python3 validation/p1_live_cycles.py 20.5 40 > validation/data/p1-live-cycles.md
    sudo python3 validation/p1_live_cycles.py 50.5 60 >> validation/data/p1-live-cycles.md

Needs live mode (root, /dev/net/tun); every run's timing verdict is printed.
"""

import itertools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import trc_model_fit as fit

from qoslab.api import live
from qoslab.trc import cycle as model_cycle

RTTS = [0.05, 0.2]


def cycles(t: list[float], cwnd: list[int], ssthresh: list[int]) -> list[tuple]:
    """(start time, largest window of the cycle before, ssthresh, samples) of each cycle:
    a cycle starts where the window comes down to ssthresh after a loss (PRR lowers it
    over the recovery, and the same ssthresh often recurs, so neither the window's first
    step nor a change of ssthresh marks a cycle)."""
    cuts = [i for i in range(1, len(cwnd))
            if cwnd[i] <= ssthresh[i] < cwnd[i - 1] and ssthresh[i] < 2**31 - 1]  # fmt: skip
    out = []
    for a, b in itertools.pairwise(cuts):
        prev = max(cwnd[max(0, a - 400) : a + 1])
        out.append((t[a], prev, ssthresh[a], list(zip(t[a:b], cwnd[a:b], strict=True))))
    return out


def main() -> None:
    w = float(sys.argv[1]) if len(sys.argv) > 1 else 20.5
    secs = float(sys.argv[2]) if len(sys.argv) > 2 else 40.0
    print(f"W_max {w}, {secs:g} s per run (the first fifth discarded), cwnd every RTT/20\n")
    print("| Linux | RTT [ms] | timing ok | cycles | cycle [RTTs] | model [RTTs] | "
          "window's peak [packets] | kept at a reduction | share of the cycle below the "
          "midpoint |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for cc in ("reno", "cubic"):
        name = f"linux-{cc}"
        for rtt in RTTS:
            sc = fit.scenario(name, w, rtt - fit.rtt_net(fit.LIVE_MSS), secs, False)
            sc["record"] = {"interval": f"{rtt / 20 * 1e3:.1f}ms", "traces": ["f"]}
            res = live(sc)
            tr = res.tables["traces"].filter(res.tables["traces"]["t"] >= secs / 5)
            cs = cycles(tr["t"].to_list(), tr["cwnd"].to_list(), tr["ssthresh"].to_list())
            if len(cs) < 2:
                print(f"| {cc} | {rtt * 1e3:g} | — | {len(cs)} | | | | | |")
                continue
            lens = [(b[0] - a[0]) / rtt for a, b in itertools.pairwise(cs)]
            kept = [after / before for _, before, after, _ in cs]
            below = []
            for _, before, after, samples in cs:
                mid = (before + after) / 2
                below.append(sum(1 for _, c in samples if c < mid) / len(samples))
            ok = bool(res.summary.get("live_timing_ok"))
            m = model_cycle(w, model=name)
            mean = sum(lens) / len(lens)
            peak = sum(c[1] for c in cs) / len(cs)
            print(
                f"| {cc} | {rtt * 1e3:g} | {ok} | {len(lens)} | {mean:.2f} | {m:.2f} | "
                f"{peak:.1f} | {sum(kept) / len(kept):.2f} | {sum(below) / len(below):.2f} |"
            )


if __name__ == "__main__":
    main()

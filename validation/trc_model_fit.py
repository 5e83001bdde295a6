"""Fits P1's TCP model (eq. 1, the time per cycle) to qoslab's SACK TCP, as the paper
fitted it to ns-2's, and compares the fitted and the paper's model.

One long-lived SACK flow (no delayed ACKs, initial window 1, window cap 5000) crosses
a 200 Mb/s dumbbell (0.5 ms links) through a TRC with *fixed* W_max and RTT_TRC
(``w_max`` / ``rtt_trc`` keys): drops every 1/p + 1 packets with 1/p from eq. 2. For each
(W_max, RTT) we measure the average window W_avg = goodput · RTT / MSS over ≥ 60 cycles
after a warm-up, hence the time per cycle T = (1/p) / W_avg [RTTs], and fit
T = a + b · W_max by least squares. The paper's eq. 1 is a = 5/2, b = 1/2.

    python3 validation/trc_model_fit.py            # → docs/validation/trc-model.md (+ .svg)
    python3 validation/trc_model_fit.py --ns2-timers
        # the same with the P1 experiments' TCP timers (ns-2 whole-tick RTO, 100 ms
        # tick) → docs/validation/trc-model-ns2-timers.md, to show the fit does not
        # depend on them (congestion avoidance under a TRC has no timeouts)

The constants go into ``FITTED`` in ``crates/qoslab/src/cond/trc/model.rs``.
"""

from __future__ import annotations

import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NS2_TIMERS = "--ns2-timers" in sys.argv[1:]
OUT = ROOT / "docs" / "validation" / ("trc-model-ns2-timers.md" if NS2_TIMERS else "trc-model.md")

W_GRID = [6.5, 8.5, 10.5, 12.5, 16.5, 20.5, 30.5, 50.5, 100.5, 200.5]
RTT_GRID = [0.05, 0.2, 0.8]  # total RTT [s]
MSS = 1460


def data_per_cycle(w: float) -> float:
    return 0.375 * w * w + 1.25 * w - 2.0


def scenario(w_max: float, rtt_trc: float, duration: float, ecn: bool) -> dict:
    nodes = [{"name": "s"}, {"name": "r0", "kind": "router"}, {"name": "r1", "kind": "router"}]
    nodes.append({"name": "d"})
    q = {"kind": "droptail", "limit": 2000}
    links = [
        {"a": "s", "b": "r0", "rate": "200Mbps", "delay": "0.5ms", "queue": q},
        {"a": "r0", "b": "r1", "rate": "200Mbps", "delay": "0.5ms", "queue": q},
        {"a": "r1", "b": "d", "rate": "200Mbps", "delay": "0.5ms", "queue": q},
    ]
    tcp = {
        "variant": "sack",
        "max_window": 5000,
        "initial_window": 1,
        "ecn": ecn,
        "granularity": "10ms",
        # the TCP of the P1 experiments: ns-2's SACK had no limited transmit and halved
        # the window (see python/qoslab/reproduce/p1.py)
        "limited_transmit": False,
        "halve": "window",
    }
    if NS2_TIMERS:
        tcp.update({"granularity": "100ms", "rto_estimator": "ns2"})
    stage = {"kind": "trc", "flow": "f", "w_max": w_max, "rtt_trc": rtt_trc, "ecn": ecn}
    return {
        "name": f"fit-w{w_max}-rtt{rtt_trc:.4f}",
        "duration": duration,
        "warmup": duration / 5,
        "node": nodes,
        "link": links,
        "flow": [{"name": "f", "from": "s", "to": "d", "tcp": tcp}],
        "conditioner": [{"at": "s", "stages": [stage]}],
        "record": {"interval": duration},
    }


def measure(args: tuple[float, float, bool]) -> dict:
    import qoslab

    w, rtt, ecn = args
    rtt_net = 0.003 + 3 * 8 * (MSS + 40 + 40) / 200e6  # as the builder computes it
    cycle = (2.5 + w / 2) * rtt  # paper's estimate, to size the run
    duration = max(120.0, 75 * cycle)
    t0 = time.perf_counter()
    res = qoslab.run(scenario(w, rtt - rtt_net, duration, ecn))
    trc = res.table("trc")
    g = res.flows["goodput_bps"][0]
    rtt_used = trc["rtt"][0]
    w_avg = g * rtt_used / (MSS * 8)
    return {
        "w_max": w,
        "rtt": rtt_used,
        "ecn": ecn,
        "goodput": g,
        "w_avg": w_avg,
        "cycle_rtts": data_per_cycle(w) / w_avg,
        "drops": int(trc["dropped"][0]),
        "marks": int(trc["marked"][0]),
        "other_drops": int(
            res.drops.filter(res.drops["cause"] != "controlled")["packets"].sum() or 0
        ),
        "max_held": int(trc["max_held"][0]),
        "buffer": int(trc["buffer"][0]),
        "duration": duration,
        "wall_s": time.perf_counter() - t0,
    }


def fit(rows: list[dict]) -> tuple[float, float, float]:
    """Least-squares slope b and intercept a_ls, and the conservative intercept
    a = max(T − b·W): with it every measured cycle is at most as long as the model's, so
    every flow gets at least the predicted goodput, the property the paper asked of its
    model ("achieves at least the rate that's estimated by the model", §4.3)."""
    xs = [r["w_max"] for r in rows]
    ys = [r["cycle_rtts"] for r in rows]
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )
    a = max(y - b * x for x, y in zip(xs, ys, strict=True))
    return my - b * mx, a, b


def predicted(w: float, rtt: float, a: float, b: float) -> float:
    return data_per_cycle(w) / (a + b * w) * MSS * 8 / rtt


def figure(rows: list[dict], law: dict[bool, tuple[float, float]], path: Path) -> None:
    """Measured W_avg against W_max beside both models' curves, one panel per mode."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), sharey=True)
    ws = [W_GRID[0] + (W_GRID[-1] - W_GRID[0]) * i / 200 for i in range(201)]
    for ax, ecn in zip(axes, (False, True), strict=True):
        for rtt, marker in zip(RTT_GRID, "os^", strict=True):
            pts = [r for r in rows if r["ecn"] == ecn and abs(r["rtt"] - rtt) < 0.01]
            ax.plot([r["w_max"] for r in pts], [r["w_avg"] for r in pts], marker,
                    fillstyle="none", label=f"measured, RTT {rtt * 1e3:.0f} ms")  # fmt: skip
        for (a, b), style, name in (((2.5, 0.5), "--", "paper eq. 1"), (law[ecn], "-", "fitted")):
            ax.plot(ws, [data_per_cycle(w) / (a + b * w) for w in ws], style,
                    label=f"{name}: T = {a:.3g} + {b:.3g}·W_max")  # fmt: skip
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("W_max [packets]")
        ax.set_title("ECN marks (E = 0)" if ecn else "drops (E = 1)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].set_ylabel("W_avg [packets]")
    fig.tight_layout()
    fig.savefig(path, metadata={"Date": None})
    plt.close(fig)


def main() -> None:
    jobs = [(w, r, ecn) for ecn in (False, True) for r in RTT_GRID for w in W_GRID]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=2) as ex:
        rows = list(ex.map(measure, jobs))
    wall = time.perf_counter() - t0
    a_ls, a, b = fit([r for r in rows if not r["ecn"]])
    a_ls_e, a_e, b_e = fit([r for r in rows if r["ecn"]])
    law = {False: (a, b), True: (a_e, b_e)}
    lines = [
        "# TRC model fitted to qoslab's SACK TCP",
        "",
        "Generated by `python3 validation/trc_model_fit.py"
        + (" --ns2-timers" if NS2_TIMERS else "")
        + "` "
        f"({len(rows)} runs, {wall:.0f} s wall on 2 processes). One SACK flow (no delayed "
        "ACKs, initial window 1"
        + (", ns-2 whole-tick RTO with a 100 ms tick" if NS2_TIMERS else "")
        + ") through a TRC with fixed W_max and RTT on a 200 Mb/s "
        "dumbbell; W_avg = goodput · RTT / MSS over at least 75 cycles (first fifth "
        "discarded); time per cycle T = (1/p) / W_avg with 1/p from eq. 2.",
        "",
        "## Fit of eq. 1 (time per cycle = a + b · W_max, in RTTs)",
        "",
        "| model | a (least squares) | a (conservative, used) | b |",
        "|---|---|---|---|",
        "| paper (ns-2 SACK), both modes | | 2.5 | 0.5 |",
        f"| fitted, drops (E = 1) | {a_ls:.4f} | {a:.4f} | {b:.4f} |",
        f"| fitted, ECN marks (E = 0) | {a_ls_e:.4f} | {a_e:.4f} | {b_e:.4f} |",
        "",
        "The conservative intercept is max over the measurements of T − b·W_max: the "
        "fitted model then never promises more than the flow gets, the property the "
        "paper asked of its own model (§4.3).",
        "",
        f"![W_avg against W_max, measured and both models]({OUT.with_suffix('.svg').name})",
        "",
        "## Measurements and both models' predictions",
        "",
        "Ratio = measured goodput / model goodput (≥ 1 means the flow gets at least what "
        "the model promises, which is what the TRC needs).",
        "",
        "| mode | W_max | RTT [ms] | goodput [kb/s] | W_avg | T [RTTs] | paper ratio | "
        "fitted ratio | drops | other drops | max held / buffer |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    worst = {(m, e): [math.inf, -math.inf] for m in ("paper", "fitted") for e in (False, True)}
    for r in rows:
        rp = r["goodput"] / predicted(r["w_max"], r["rtt"], 2.5, 0.5)
        rf = r["goodput"] / predicted(r["w_max"], r["rtt"], *law[r["ecn"]])
        for k, v in (("paper", rp), ("fitted", rf)):
            w = worst[(k, r["ecn"])]
            w[0], w[1] = min(w[0], v), max(w[1], v)
        lines.append(
            f"| {'ecn' if r['ecn'] else 'drop'} | {r['w_max']} | {r['rtt'] * 1e3:.1f} | "
            f"{r['goodput'] / 1e3:.2f} | {r['w_avg']:.3f} | {r['cycle_rtts']:.3f} | "
            f"{rp:.4f} | {rf:.4f} | {r['drops'] + r['marks']} | {r['other_drops']} | "
            f"{r['max_held']} / {r['buffer']} |"
        )
    lines += ["", "## Which model is better validated", ""]
    lines += ["| model | mode | measured / predicted, min | max |", "|---|---|---|---|"]
    for (m, e), (lo, hi) in worst.items():
        lines.append(f"| {m} | {'ECN' if e else 'drop'} | {lo:.4f} | {hi:.4f} |")
    lines.append("")
    print(f"FITTED drop a={a:.6f} b={b:.6f}; ecn a={a_e:.6f} b={b_e:.6f}", file=sys.stderr)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("\n".join(lines))
    figure(rows, law, OUT.with_suffix(".svg"))
    print("\n".join(lines))


if __name__ == "__main__":
    main()

"""P1's figures in the paper's form, drawn from the experiments' saved tables: Fig. 6b and
7a (goodput normalised to the model's estimate over the requested rate, log axis), Fig.
7b (per RTT_dev), and Tables 1–4 as achieved ÷ requested with the paper's min–max
overlaid. The paper's values come from :mod:`qoslab.reproduce.p1`.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from qoslab import plot
from qoslab.reproduce import Saved, figure

#: The TRC's target is the request raised by gput_error + 1 % = 6 % (P1 §4.4).
TARGET = 1.06


def _rate_axis(ax: Any, ylabel: str) -> None:
    ax.set_xscale("log")
    ax.set_xlabel("requested rate [kb/s]")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize="small")


def _ranges(ax: Any, x: Any, lo: Any, hi: Any, label: str, marker: str, shift: float) -> None:
    """Our min–max per x as a marker at the middle with a bar, shifted a little on the
    log axis so that several series stay apart."""
    mid = (lo + hi) / 2
    ax.errorbar(x * shift, mid, yerr=[mid - lo, hi - mid], fmt=marker, ms=4, capsize=2, label=label)


def _tables(saved: Saved, prefix: str) -> dict[str, pl.DataFrame]:
    return {t: saved.table(t) for t in saved.entry.get("tables", []) if t.startswith(prefix)}


@figure("p1-f6b")
def f6b(saved: Saved):
    """Fig. 6b: achieved goodput ÷ the model's estimate over the requested rate."""
    fig, ax = plot.new_figure()
    for i, (name, t) in enumerate(_tables(saved, "f6b-").items()):
        t = t.sort("requested")
        mode = name.removeprefix("f6b-")
        _ranges(ax, t["requested"] / 1e3, t["ratio_min"] / TARGET, t["ratio_max"] / TARGET,
                f"ours, {mode} (min–max)", "os"[i % 2], 1 + 0.04 * i)  # fmt: skip
    ax.axhspan(1.0, 1.03, color="0.85", zorder=0, label="paper: estimate … +3 % (§5.2)")
    ax.axhline(1 / TARGET, color="0.4", ls=":", label="the request")
    ax.set_title("P1 Fig. 6b: 200 Mb/s, RTT_net 3 ms")
    _rate_axis(ax, "achieved ÷ estimated goodput")
    return fig


@figure("p1-f7a")
def f7a(saved: Saved):
    """Fig. 7a: goodput until the second drop ÷ the model's estimate."""
    t = saved.table("f7a").sort("requested")
    fig, ax = plot.new_figure()
    for ecn, marker in ((False, "o"), (True, "s")):
        d = t.filter(pl.col("ecn") == ecn)
        if d.height:
            ax.plot(d["requested"] / 1e3, d["vs_target"], marker, ms=5, ls="none",
                    label=f"ours, {'ECN' if ecn else 'drops'}")  # fmt: skip
    ax.axhspan(0.98, 1.03, color="0.85", zorder=0, label="paper: 0.98–1.03 (few RTO outliers)")
    ax.set_title("P1 Fig. 7a: slow start, run to the second drop")
    _rate_axis(ax, "achieved ÷ estimated goodput")
    return fig


@figure("p1-f7b")
def f7b(saved: Saved):
    """Fig. 7b: normalised goodput per RTT_dev, and the error against the paper's rule
    RTT_dev / RTT_min for large requests."""
    figs = []
    for name, t in _tables(saved, "f7b-").items():
        fig, (a, b) = plot.new_figure(7, 7, 2, 1, sharex=True)
        for key, g in t.sort("requested").group_by("rtt_dev", maintain_order=True):
            dev = float(key[0])
            dev_ms = dev * 1e3
            x = g["requested"] / 1e3
            a.plot(x, g["goodput_bps"] / (g["requested"] * TARGET), "o-", ms=4,
                   label=f"RTT_dev {dev_ms:g} ms")  # fmt: skip
            if dev_ms > 0:
                line = b.plot(x, g["error"], "o-", ms=4, label=f"ours, {dev_ms:g} ms")[0]
                b.axhline(dev / 0.2, color=line.get_color(), ls="--", lw=1,
                          label=f"paper: RTT_dev / RTT_min = {dev / 0.2:.3g}")  # fmt: skip
        a.set_title(f"P1 Fig. 7b: RTT_min 200 ms, TRC told RTT_net ({name.removeprefix('f7b-')})")
        a.set_ylabel("achieved ÷ estimated goodput")
        a.grid(alpha=0.3, which="both")
        a.legend(fontsize="small")
        _rate_axis(b, "1 − goodput ÷ goodput(RTT_dev = 0)")
        figs.append(fig)
    return figs


def _paper_ratio(paper: dict[int, str], rates_kbps: list[int]) -> tuple[list, list, list]:
    from qoslab.reproduce.p1 import _paper_range

    xs, lo, hi = [], [], []
    for k in rates_kbps:
        if k in paper:
            a, b = _paper_range(paper[k])
            xs.append(k)
            lo.append(a / k)
            hi.append(b / k)
    return xs, lo, hi


def _vs_paper_panel(ax: Any, ours: dict[str, pl.DataFrame], paper: dict[int, str] | None,
                    title: str) -> None:  # fmt: skip
    for i, (mode, t) in enumerate(ours.items()):
        t = t.sort("requested")
        _ranges(ax, t["requested"] / 1e3, t["ratio_min"], t["ratio_max"],
                f"ours, {mode}", "os"[i % 2], 1 + 0.05 * i)  # fmt: skip
    if paper:
        xs, lo, hi = _paper_ratio(paper, sorted(paper))
        plot.paper_band(ax, [x * 0.93 for x in xs], lo, hi)
    ax.axhline(1.0, color="0.4", ls=":", label="the request")
    ax.set_title(title, fontsize="medium")
    _rate_axis(ax, "achieved ÷ requested")


@figure("p1-t1")
def t1(saved: Saved):
    """Table 1 as a figure: per bottleneck and access delay, achieved ÷ requested over the
    requested rate, ours (min–max, drops and ECN) beside the paper's min–max."""
    from qoslab.reproduce.p1 import PAPER_T1

    rows: dict[tuple[int, str], dict[str, pl.DataFrame]] = {}
    for name, t in _tables(saved, "t1-").items():
        if "link.0.delay" not in t.columns:
            continue
        bw, mode = name.removeprefix("t1-").split("mbps-")
        for delay in t["link.0.delay"].unique(maintain_order=True).to_list():
            rows.setdefault((int(bw), delay), {})[mode] = t.filter(pl.col("link.0.delay") == delay)
    if not rows:
        return None
    keys = sorted(rows, key=lambda k: (k[0], float(k[1].removesuffix("ms"))))
    fig, axes = plot.new_figure(10, 3.2 * ((len(keys) + 1) // 2), (len(keys) + 1) // 2, 2)
    flat = list(axes.flat)
    for ax, (bw, delay) in zip(flat, keys, strict=False):
        paper = PAPER_T1.get((bw, float(delay.removesuffix("ms"))))
        _vs_paper_panel(ax, rows[(bw, delay)], paper, f"{bw} Mb/s, access {delay}")
    for ax in flat[len(keys) :]:
        ax.set_visible(False)
    fig.suptitle("P1 Table 1: ρ = 0.85, ours beside the paper's")
    return fig


@figure("p1-t2")
def t2(saved: Saved):
    """Table 2 as a figure: achieved ÷ requested over the access delay, ours beside the
    paper's."""
    from qoslab.reproduce.p1 import PAPER_T2, T2_DELAYS, _paper_range

    groups: dict[str, dict[str, pl.DataFrame]] = {}
    for name, t in _tables(saved, "t2-").items():
        if name.startswith("t2-bias"):
            continue
        row, mode = name.removeprefix("t2-").rsplit("-", 1)
        groups.setdefault(row, {})[mode] = t
    if not groups:
        return None
    fig, axes = plot.new_figure(7, 3.2 * len(groups), len(groups), 1)
    axes = [axes] if len(groups) == 1 else list(axes)
    for ax, (row, modes) in zip(axes, groups.items(), strict=True):
        bw, req = row.split("mbps-")
        rate = float(req.removesuffix("k"))
        for i, (mode, t) in enumerate(modes.items()):
            t = t.sort("access_ms")
            _ranges(ax, t["access_ms"], t["ratio_min"], t["ratio_max"], f"ours, {mode}",
                    "os"[i % 2], 1 + 0.05 * i)  # fmt: skip
        paper = PAPER_T2.get((int(float(bw)), int(rate)))
        if paper:
            rng = [_paper_range(p) for p in paper]
            plot.paper_band(ax, [d * 1e3 * 0.93 for d in T2_DELAYS],
                            [a / rate for a, _ in rng], [b / rate for _, b in rng])  # fmt: skip
        ax.axhline(1.0, color="0.4", ls=":", label="the request")
        ax.set_xscale("log")
        ax.set_xlabel("access delay [ms]")
        ax.set_ylabel("achieved ÷ requested")
        ax.set_title(f"{bw} Mb/s, {req}b/s requested", fontsize="medium")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize="small")
    fig.suptitle("P1 Table 2: no bias by RTT, ours beside the paper's")
    return fig


@figure("p1-t3t4")
def t3t4(saved: Saved):
    """Tables 3 and 4 as a figure: achieved ÷ requested over the requested rate, ours
    beside the paper's."""
    from qoslab.reproduce.p1 import PAPER_T3, PAPER_T4, RATES

    fig, axes = plot.new_figure(10, 3.6, 1, 2, sharey=True)
    rates = [int(r / 1e3) for r in RATES]
    for ax, tab, paper in ((axes[0], "t3", PAPER_T3), (axes[1], "t4", PAPER_T4)):
        ours = {n.removeprefix(f"{tab}-"): t for n, t in _tables(saved, f"{tab}-").items()}
        _vs_paper_panel(ax, ours, dict(zip(rates, paper, strict=True)), f"Table {tab[1]}")
    fig.suptitle("P1 Tables 3 and 4: 50 Mb/s, rates and RTTs mixed")
    return fig


@figure("p1-wmax")
def wmax(saved: Saved):
    """§4.3 and Figs. 2/4: measured goodput ÷ eq. 1's estimate over W_max (the band the
    paper promises for even + 0.5), one cwnd sawtooth against W_max and W_max/2, and
    Fig. 4 (p and RTT_TRC over the requested rate, RTT_net = 0, RTT_min = 200 ms)."""
    figs = []
    t = saved.table("wmax").sort("w_max")
    fig, ax = plot.new_figure()
    even = t.filter(((pl.col("w_max") - 0.5) % 2).abs() < 1e-9)
    ax.plot(t["w_max"], t["vs_estimate"], "o", color="0.5", label="ours, any W_max")
    ax.plot(even["w_max"], even["vs_estimate"], "s", label="ours, W_max = even + 0.5")
    ax.axhspan(1.0, 1.03, color="0.85", zorder=0, label="paper: estimate … +3 % (§4.3)")
    ax.set_xlabel("W_max [packets]")
    ax.set_ylabel("measured ÷ eq. 1 estimate")
    ax.set_title("P1 §4.3: W_avg against the model, RTT 200 ms")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    figs.append(fig)
    if "sawtooth" in saved.entry.get("tables", []):
        s = saved.table("sawtooth")
        w = s["w_max"][0]
        fig, ax = plot.new_figure(7, 3)
        ax.step(s["t"], s["cwnd_pkts"], where="post", label="cwnd")
        ax.axhline(w, color="C3", ls="--", label="W_max")
        ax.axhline(w / 2, color="C2", ls=":", label="W_max / 2")
        ax.set_xlabel("time [s]")
        ax.set_ylabel("cwnd [packets]")
        ax.set_title(f"cwnd under a TRC with W_max = {w:g} (congestion avoidance)")
        ax.legend(fontsize="small")
        figs.append(fig)
    if "fig4" in saved.entry.get("tables", []):
        f = saved.table("fig4").sort("rate_kbps")
        fig, (a, b) = plot.new_figure(7, 5, 2, 1, sharex=True)
        a.plot(f["rate_kbps"], f["p"], "o-")
        a.set_ylabel("p")
        b.plot(f["rate_kbps"], f["rtt_trc_ms"], "o-")
        b.set_ylabel("RTT_TRC [ms]")
        b.set_xlabel("requested rate [kb/s]")
        a.set_title("P1 Fig. 4: TRC parameters (RTT_net 0, RTT_dev 10 ms)")
        for x in (a, b):
            x.grid(alpha=0.3)
        figs.append(fig)
    return figs

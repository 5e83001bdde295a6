"""Fits P1's TCP model (eq. 1, the time per cycle) to qoslab's TCP, one fit per TCP
configuration, as the paper fitted it to ns-2's SACK TCP (§4.1).

A TRC's drop spacing (eq. 2) is the paper's; how long a cycle between two drops lasts
depends on the TCP: its recovery (variant), what ssthresh halves (``halve``), limited
transmit and delayed ACKs. A configuration is named as
``TcpConfig::model_name`` writes it: ``{variant}-{halve}-{lt|nolt}-{delack|nodelack}``
(``newreno-flight-lt-nodelack`` is qoslab's default TCP, ``sack-window-nolt-nodelack``
the ns-2-style TCP of the P1 scenarios).

For one configuration, one long-lived flow with those settings (everything else
qoslab's defaults, window cap 5000) crosses a 200 Mb/s dumbbell (0.5 ms links) through
a TRC with *fixed* W_max and RTT_TRC (``w_max`` / ``rtt_trc`` keys), i.e. the TRC's own
drop pattern, one drop every 1/p + 1 packets (or a CE mark every 1/p). For each
(W_max, RTT) we measure W_avg = goodput · RTT / MSS over ≥ 60 cycles after a warm-up,
hence the time per cycle T = (1/p) / W_avg [RTTs], and fit T = a + b · W_max: b by
least squares, a the largest residual, so the model never promises more than the flow
got (§4.3). The paper's eq. 1 is a = 5/2, b = 1/2. Where that line is more than 2 %
too long for a W_max of the grid (qoslab's default TCPs at small windows: limited
transmit sends on the first duplicate ACKs and the window halves the flight, so the
cycle is not linear in W_max there), the model keeps the measured cycle time at that
W_max as a knot (the longest over the RTTs, rounded up), interpolated between knots, up
to the next grid point on the line.

The law starts at the paper's first W_max, 6.5 (§4.3), unless the TCP's cycle there has
no one length: where the cycles measured at 6.5 over the fit RTTs the TRC runs at
(≥ RTT*_min = RTT_dev / gput_error = 200 ms with its defaults, eq. 5) spread by more
than the paper's 3 % and those at 8.5 do not, the model starts at 8.5 (``w_first``) and
the TRC never picks 6.5 for that TCP. qoslab's default TCP (NewReno, limited transmit):
a window of 6–7 packets recovers in one of two ways, 6.6 or 7.0 RTTs per cycle, by where
in its round the drop falls; a single flow locks into one (which one moves with the
last bit of the delay) and under load each run takes one or the other by chance, so no
law at 6.5 holds both within 3 % (``validation/p1_w65_phase.py``). The delayed-ACK
configurations' cycles spread over the RTTs at every small W_max (the 200 ms ACK timer
against the RTT): no step fixes that, they keep 6.5.

    python3 validation/trc_model_fit.py --measure newreno-flight-lt-nodelack [--ecn]
        # runs the grid for that TCP → validation/data/trc-models/<name>[-ecn].csv
    python3 validation/trc_model_fit.py
        # refits every committed data file → crates/qoslab/src/cond/trc/models/*.toml and
        # docs/validation/trc-models.md (+ .svg); no simulation

Runs are niced and use one worker process unless ``--workers N`` is given.

The TRC runs with its default recovery lead (``recovery_lead`` = RTT_dev for a TCP
whose RTO clock granularity is at most RTT_dev, see docs/papers/p1.md#recovery-lead), and
``--measure`` measures with it. qoslab's default TCP (``newreno-flight-lt-nodelack``) and
every fine-clock SACK configuration (``sack-flight-*``, ``sack-pipe-*``) are fitted with
it, as the TRC runs them; the other data files were measured before the lead existed
(Fig. 1 as printed), the P1 scenarios' TCP (100 ms clock) rightly so, since the lead is
off for it. On one flow the lead shortens a cycle by a roughly fixed time (about 15 ms
with RTT_dev = 10 ms): up to 5 % at the 50 ms fit RTT, ≤ 1 % from 200 ms on.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from qoslab.trc import (
    FIT_RTT_FINE,
    RTT_OPERATING_MIN,
    cycle_at,
    data_per_cycle,
    fit_law,
    model_text,
)

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "validation" / "data" / "trc-models"
MODELS = ROOT / "crates" / "qoslab" / "src" / "cond" / "trc" / "models"
DOC = ROOT / "docs" / "validation" / "trc-models.md"

#: Every W_max the TRC can pick up to 20.5 (where limited transmit makes the cycle
#: uneven), then sparser: the line holds there.
W_GRID = [6.5, 8.5, 10.5, 12.5, 14.5, 16.5, 18.5, 20.5, 30.5, 50.5, 100.5, 200.5]
RTT_GRID = [0.05, 0.2, 0.8]  # total RTT [s]
#: The configurations measured with the TRC's recovery lead on (the others were measured
#: before it existed, Fig. 1 as printed): their model files say so, and a flow whose TRC
#: runs the lead the other way is refused the model.
LEAD_FITTED = {
    "newreno-flight-lt-nodelack", "sack-flight-lt-delack", "sack-flight-lt-nodelack",
    "sack-flight-nolt-delack", "sack-flight-nolt-nodelack", "sack-pipe-lt-delack",
    "sack-pipe-lt-nodelack", "sack-pipe-nolt-delack", "sack-pipe-nolt-nodelack",
}  # fmt: skip
MSS = 1460
#: Linux senders measured in live mode (``linux-CC``: the hosts' TCP with that congestion
#: control and Linux's defaults: SACK, delayed ACKs, timestamps, so 1448-byte segments
#: in 1500-byte packets). Real time bounds the grid: W_max up to 50.5 at 50 and 200 ms,
#: at least 20 cycles per run (a run at W_max 200.5 and 800 ms would take an hour).
LIVE_CC = {"linux-reno": "reno", "linux-cubic": "cubic"}
LIVE_MSS = 1448
LIVE_W_GRID = [6.5, 8.5, 10.5, 12.5, 14.5, 20.5, 30.5, 50.5]
LIVE_RTT_GRID = [0.05, 0.2]
LIVE_CYCLES = 20


def live_spin() -> str:
    """``[live] spin`` of the fit's live runs, the live experiments' own
    (``qoslab.reproduce.LIVE_SPIN``; measured here at W_max 10.5 and 126.5, 200 ms). Runs
    before it existed (the grid to 50.5) are valid without it."""
    from qoslab.reproduce import LIVE_SPIN

    return LIVE_SPIN


#: Further W_max measured for Linux Reno (``--w 126.5 250.5``): Fig. 6b's two largest
#: requests run there, beyond the grid's 50.5 (about 20 minutes of real time).
LIVE_W_LARGE = [126.5, 250.5]
#: qoslab's default TCP, then the ns-2-style TCP of the P1 scenarios: fitted first,
#: listed first (the nearest-model search prefers earlier entries on a tie).
ORDER = ["newreno-flight-lt-nodelack", "sack-flight-lt-nodelack", "sack-window-nolt-nodelack"]
COLUMNS = ["mode", "w_max", "rtt", "goodput", "w_avg", "cycle_rtts", "signals",
           "other_drops", "timeouts", "max_held", "buffer", "duration", "wall_s"]  # fmt: skip


def tcp_settings(name: str) -> dict:
    """The ``tcp`` table of a configuration name (the inverse of ``model_name``); for a
    live Linux sender only what the TRC reads of it (the segment size)."""
    if name in LIVE_CC:
        return {"mss": LIVE_MSS}
    parts = name.split("-")
    if len(parts) < 4:
        raise SystemExit(f"{name!r}: expected variant-halve-lt|nolt-delack|nodelack")
    variant, halve, lt, ack, *extra = parts
    tcp = {
        "variant": variant,
        "halve": halve,
        "limited_transmit": {"lt": True, "nolt": False}[lt],
        "delayed_ack": {"delack": True, "nodelack": False}[ack],
    }
    for x in extra:
        if x == "prr":
            tcp["recovery"] = "prr"
        else:
            raise SystemExit(f"{name!r}: cannot fit the extra setting {x!r}")
    return tcp


def mss_of(name: str) -> int:
    """Payload per segment of a configuration's flow: Linux's 1448 B, qoslab's 1460 B."""
    return LIVE_MSS if name in LIVE_CC else MSS


def rtt_net(mss: int) -> float:
    """RTT_net [s] of the fit's dumbbell, as the scenario builder computes it."""
    return 0.003 + 3 * 8 * (mss + 40 + 40) / 200e6


def scenario(name: str, w_max: float, rtt_trc: float, duration: float, ecn: bool) -> dict:
    nodes = [{"name": "s"}, {"name": "r0", "kind": "router"}, {"name": "r1", "kind": "router"}]
    nodes.append({"name": "d"})
    q = {"kind": "droptail", "limit": 2000}
    links = [
        {"a": "s", "b": "r0", "rate": "200Mbps", "delay": "0.5ms", "queue": q},
        {"a": "r0", "b": "r1", "rate": "200Mbps", "delay": "0.5ms", "queue": q},
        {"a": "r1", "b": "d", "rate": "200Mbps", "delay": "0.5ms", "queue": q},
    ]
    tcp = {**tcp_settings(name), "max_window": 5000, "initial_window": 1, "ecn": ecn}
    stage = {"kind": "trc", "flow": "f", "w_max": w_max, "rtt_trc": rtt_trc, "ecn": ecn}
    extra = {"live": {"cc": LIVE_CC[name], "spin": live_spin()}} if name in LIVE_CC else {}
    return {
        **extra,
        "name": f"fit-{name}-w{w_max}-rtt{rtt_trc:.4f}",
        "duration": duration,
        "warmup": duration / 5,
        "node": nodes,
        "link": links,
        "flow": [{"name": "f", "from": "s", "to": "d", "tcp": tcp}],
        "conditioner": [{"at": "s", "stages": [stage]}],
        "record": {"interval": duration},
    }


def measure(args: tuple[str, float, float, bool]) -> dict:
    import qoslab

    name, w, rtt, ecn = args
    live = name in LIVE_CC
    mss = mss_of(name)
    cycle = (2.5 + w / 2) * rtt  # paper's estimate, to size the run
    # Live runs last their duration in real time: fewer cycles (the warm-up is a fifth).
    duration = max(30.0, 1.25 * LIVE_CYCLES * cycle) if live else max(120.0, 75 * cycle)
    t0 = time.perf_counter()
    sc = scenario(name, w, rtt - rtt_net(mss), duration, ecn)
    if live:
        from qoslab.api import live as run_live

        res = run_live(sc)
    else:
        res = qoslab.run(sc)
    trc = res.table("trc")
    f = res.flows.row(0, named=True)
    g = f["goodput_bps"]
    rtt_used = trc["rtt"][0]
    w_avg = g * rtt_used / (mss * 8)
    timing = {}
    if live:
        timing = {"timing_ok": int(bool(res.summary.get("live_timing_ok"))),
                  "retransmits": int(f.get("retransmits") or 0)}  # fmt: skip
    return {
        "mode": "ecn" if ecn else "drop",
        "w_max": w,
        "rtt": rtt_used,
        "goodput": g,
        "w_avg": w_avg,
        "cycle_rtts": data_per_cycle(w) / w_avg,
        "signals": int(trc["dropped"][0]) + int(trc["marked"][0]),
        "other_drops": int(
            res.drops.filter(res.drops["cause"] != "controlled")["packets"].sum() or 0
        ),
        "timeouts": int(f.get("timeouts", 0) or 0),
        "max_held": int(trc["max_held"][0]),
        "buffer": int(trc["buffer"][0]),
        "duration": duration,
        "wall_s": time.perf_counter() - t0,
        **timing,
    }


def data_file(name: str, ecn: bool) -> Path:
    return DATA / f"{name}{'-ecn' if ecn else ''}.csv"


def measure_config(
    name: str,
    ecn: bool,
    workers: int,
    only_w: list[float] | None = None,
    only_rtt: list[float] | None = None,
) -> Path:
    """Runs the grid for one configuration and mode, writes its CSV. With ``only_w``, runs
    just those W_max (at the grid's RTTs), with ``only_rtt`` just those total RTTs (at
    the grid's W_max, or ``only_w``), and merges them into the committed file: its
    other rows and recorded commands are kept, a row at the same (W_max, RTT) replaced."""
    tcp_settings(name)  # fail early on a bad name
    live = name in LIVE_CC
    if live and workers > 1:
        raise SystemExit(f"{name}: live runs one at a time (the datapath needs the cores)")
    w_grid, rtt_grid = (LIVE_W_GRID, LIVE_RTT_GRID) if live else (W_GRID, RTT_GRID)
    path = data_file(name, ecn)
    kept: list[dict] = []
    cmds: list[str] = []
    if only_w or only_rtt:
        if not path.exists():
            raise SystemExit(f"{path.relative_to(ROOT)}: no committed grid to add points to")
        cmds, old = read_data(path)
        w_grid = only_w or w_grid
        rtt_grid = only_rtt or rtt_grid

        def replaced(r: dict) -> bool:
            return any(abs(r["w_max"] - w) < 1e-9 for w in w_grid) and any(
                abs(r["rtt"] - x) < 1e-6 for x in rtt_grid
            )

        kept = [r for r in old if not replaced(r)]
    jobs = [(name, w, r, ecn) for r in rtt_grid for w in w_grid]
    t0 = time.perf_counter()
    if workers > 1:
        with ProcessPoolExecutor(max_workers=workers) as ex:
            rows = list(ex.map(measure, jobs))
    else:
        rows = []
        for i, j in enumerate(jobs, 1):
            rows.append(measure(j))
            if live:  # real time: say where the grid is
                r = rows[-1]
                print(f"  {i}/{len(jobs)} W_max {r['w_max']} RTT {r['rtt'] * 1e3:.0f} ms: "
                      f"{r['cycle_rtts']:.3f} RTTs per cycle, timing ok {r['timing_ok']}, "
                      f"{r['wall_s']:.0f} s", file=sys.stderr, flush=True)  # fmt: skip
    wall = time.perf_counter() - t0
    path.parent.mkdir(parents=True, exist_ok=True)
    cmd = f"python3 validation/trc_model_fit.py --measure {name}" + (" --ecn" if ecn else "")
    if only_w:
        cmd += " --w " + " ".join(f"{w:g}" for w in only_w)
    if only_rtt:
        cmd += " --rtt " + " ".join(f"{x:g}" for x in only_rtt)
    spin = f", [live] spin {live_spin()}" if live else ""
    cmds.append(f"{cmd}  ({len(rows)} runs, {wall:.0f} s wall, {workers} worker(s){spin})")
    rows = sorted(kept + rows, key=lambda r: (r["mode"], r["rtt"], r["w_max"]))
    write_data(path, cmds, COLUMNS + (["timing_ok", "retransmits"] if live else []), rows)
    print(f"{path.relative_to(ROOT)}: {len(rows)} rows, {wall:.0f} s", file=sys.stderr)
    return path


def write_data(path: Path, cmds: list[str], cols: list[str], rows: list[dict]) -> None:
    """Writes ``rows`` as CSV under ``# command`` lines (floats exact, via repr), through a
    temporary file so that an interrupted run leaves the old file whole."""
    tmp = path.with_suffix(".csv.tmp")
    with tmp.open("w", newline="") as fh:
        fh.writelines(f"# {c}\n" for c in cmds)
        w = csv.DictWriter(fh, fieldnames=cols, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: (repr(v) if isinstance(v, float) else v) for k, v in r.items()})
    tmp.replace(path)


def read_data(path: Path) -> tuple[list[str], list[dict]]:
    """(the command lines recorded in the file, its rows with numbers parsed)."""
    lines = path.read_text().splitlines()
    cmds = [x.lstrip("# ").strip() for x in lines if x.startswith("#")]
    rows = []
    for r in csv.DictReader(x for x in lines if not x.startswith("#")):
        rows.append({k: (v if k == "mode" else float(v)) for k, v in r.items()})
    return cmds, rows


def cycle(w: float, a: float, b: float, k: list[tuple[float, float]]) -> float:
    """The engine's ``CycleTime::cycle``."""
    if k and k[0][0] <= w <= k[-1][0]:
        i = min(max(next((j for j, p in enumerate(k) if p[0] > w), len(k)), 1), len(k) - 1)
        (w0, t0), (w1, t1) = k[i - 1], k[i]
        return t0 if w1 == w0 else t0 + (t1 - t0) * (w - w0) / (w1 - w0)
    return a + b * w


def predicted(
    w: float, rtt: float, a: float, b: float, k: list | None = None, mss: int = MSS
) -> float:
    """The model's goodput [bit/s] at W_max ``w`` and RTT ``rtt`` for segments of ``mss``."""
    return data_per_cycle(w) / cycle(w, a, b, k or []) * mss * 8 / rtt


def law_cycle(f: dict, w: float, rtt: float) -> float:
    """The fitted law's cycle [RTTs] as the engine computes it (``CycleTime::cycle_at``:
    the line with knots, or the points per RTT for a law measured per RTT)."""
    return cycle_at(f, w, rtt, f["rows"])


def law_predicted(f: dict, w: float, rtt: float, mss: int) -> float:
    """The fitted law's goodput [bit/s] at W_max ``w`` and RTT ``rtt``."""
    return data_per_cycle(w) / law_cycle(f, w, rtt) * mss * 8 / rtt


def fits() -> dict[str, dict[str, dict]]:
    """{name: {mode: {"a_ls", "a", "b", "rows", "cmds"}}} from every committed file,
    names in ORDER first."""
    out: dict[str, dict[str, dict]] = {}
    for path in sorted(DATA.glob("*.csv")):
        cmds, rows = read_data(path)
        name = path.stem.removesuffix("-ecn")
        mode = "ecn" if path.stem.endswith("-ecn") else "drop"
        out.setdefault(name, {})[mode] = {**fit_law(rows), "rows": rows, "cmds": cmds}
    key = {n: (ORDER.index(n) if n in ORDER else len(ORDER), n) for n in out}
    return {n: out[n] for n in sorted(out, key=key.__getitem__)}


def model_files(models: dict[str, dict[str, dict]]) -> dict[Path, str]:
    """The engine's built-in model files (``MODELS/<name>.toml``, read by
    ``cond::trc::model``) of every configuration fitted with drops: the TCP settings its
    runs had, whether they ran with the recovery lead, the laws and the measured points."""
    out = {}
    for name, m in models.items():
        if "drop" not in m:
            continue
        live = LIVE_CC.get(name)
        tcp = tcp_settings(name) if live else {**tcp_settings(name), "max_window": 5000,
                                               "initial_window": 1}  # fmt: skip
        cmds = [c for mode in m.values() for c in mode["cmds"]]
        text = model_text(
            name, tcp, m, recovery_lead=name in LEAD_FITTED, live=live,
            command=" then ".join(c.split("  (")[0] for c in cmds),
            points={mode: f["rows"] for mode, f in m.items()},
        )  # fmt: skip
        out[MODELS / f"{name}.toml"] = text
    return out


def figure(models: dict[str, dict[str, dict]], path: Path) -> None:
    """W_avg against W_max: every fitted model's curve and its measurements, with drops
    and with ECN marks, beside the paper's eq. 1 (the paper's Fig.-style comparison)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # the same data gives the same file (ids in the SVG are otherwise random)
    plt.rcParams["svg.hashsalt"] = "trc-models"
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6), sharey=True)
    ws = [W_GRID[0] + (W_GRID[-1] - W_GRID[0]) * i / 400 for i in range(401)]
    for ax, mode in zip(axes, ("drop", "ecn"), strict=True):
        ax.plot(ws, [data_per_cycle(w) / (2.5 + 0.5 * w) / w for w in ws], "k--",
                label="paper eq. 1: T = 2.5 + 0.5·W_max")  # fmt: skip
        for i, (name, m) in enumerate(models.items()):
            if mode not in m:
                continue
            f, c = m[mode], f"C{i}"
            wl = [w for w in ws if w >= f["w_first"]]
            label = (f"{name}: per RTT (at {RTT_OPERATING_MIN * 1e3:g} ms)" if f.get("by_rtt")
                     else f"{name}: T = {f['a']:.3g} + {f['b']:.3g}·W_max"
                     + (f" ({len(f['knots'])} knots)" if f["knots"] else ""))  # fmt: skip
            ax.plot(wl, [data_per_cycle(w) / law_cycle(f, w, RTT_OPERATING_MIN) / w for w in wl],
                    "-", color=c, label=label)  # fmt: skip
            ax.plot([r["w_max"] for r in f["rows"]], [r["w_avg"] / r["w_max"] for r in f["rows"]],
                    "o", color=c, fillstyle="none", markersize=4)  # fmt: skip
        ax.set_xscale("log")
        ax.set_xlabel("W_max [packets]")
        ax.set_title("ECN marks (E = 0)" if mode == "ecn" else "drops (E = 1)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    axes[0].set_ylabel("W_avg / W_max")
    fig.tight_layout()
    fig.savefig(path, metadata={"Date": None})
    plt.close(fig)


def grid_verdict(name: str, f: dict) -> str:
    """Whether the law holds on its own grid within the paper's 3 % (measured goodput ÷
    the model's ≤ 1.03 on every fitted point where a TRC runs, RTT ≥
    :data:`RTT_OPERATING_MIN`; ≥ 1 holds by the fit's construction), and where it misses
    most."""
    mss = mss_of(name)
    pts = [r for r in f["rows"]
           if r["w_max"] >= f["w_first"] and r["rtt"] >= RTT_OPERATING_MIN - 1e-9]  # fmt: skip
    if not pts:
        return "—"
    ratio, worst = max(
        (r["goodput"] / law_predicted(f, r["w_max"], r["rtt"], mss), i) for i, r in enumerate(pts)
    )
    worst = pts[worst]
    if ratio <= 1.03 + 1e-12:
        return "within"
    return f"outside ({ratio:.3f} at W_max {worst['w_max']:g}, {worst['rtt'] * 1e3:g} ms)"


def invalid_timing(f: dict) -> str:
    """Live runs whose timing broke the bounds, with their points (— for simulated)."""
    if not any("timing_ok" in r for r in f["rows"]):
        return "—"
    bad = [r for r in f["rows"] if not r.get("timing_ok", 1)]
    pts = ", ".join(f"{r['w_max']:g} at {r['rtt'] * 1e3:g} ms" for r in bad)
    return f"{len(bad)} of {len(f['rows'])}" + (f" ({pts})" if bad else "")


def doc(models: dict[str, dict[str, dict]]) -> str:
    lines = [
        "# TRC models fitted to qoslab's TCP, one per TCP configuration",
        "",
        "Generated by `python3 validation/trc_model_fit.py` from the data files in "
        "`validation/data/trc-models/` (each made by the command in its first line). "
        "One flow with the configuration's TCP settings (others qoslab's defaults, "
        "initial window 1, window cap 5000) through a TRC with fixed W_max and RTT on a "
        "200 Mb/s dumbbell; W_avg = goodput · RTT / MSS over at least 75 cycles (first "
        "fifth discarded); time per cycle T = (1/p) / W_avg with 1/p from eq. 2; "
        "T = a + b · W_max fitted with b by least squares and a the largest residual "
        "(rounded up), so that measured / predicted ≥ 1 on every point; where the line "
        "is more than 2 % too long at a grid W_max, the measured T there is a knot "
        "(interpolated between knots, up to the next grid point on the line). The law "
        "starts at W_max 6.5 (§4.3) unless the cycles at 6.5 over the fit RTTs ≥ 200 ms "
        "(RTT*_min, eq. 5) spread by more than 3 % and those at 8.5 do not: then at 8.5 "
        "(`w_first`; the TRC never picks 6.5 for that TCP, and the points at 6.5 are "
        "listed but not fitted).",
        "",
        "Configurations named `linux-CC` are Linux senders with that congestion control "
        "(the hosts' defaults otherwise: SACK, delayed ACKs, timestamps, 1448-byte "
        "segments), measured in live mode (network namespaces, qoslab's datapath on the "
        "wall clock, [live.md](../live.md)) on a smaller grid, since each run lasts its "
        f"duration in real time: W_max {', '.join(f'{w:g}' for w in LIVE_W_GRID)} at RTT "
        f"{' and '.join(f'{r * 1e3:g}' for r in LIVE_RTT_GRID)} ms, at least "
        f"{LIVE_CYCLES} cycles after a warm-up of a fifth (Linux Reno also at W_max "
        f"{' and '.join(f'{w:g}' for w in LIVE_W_LARGE)}, where Fig. 6b's largest requests "
        "run: `--w`); their data files also hold each run's timing verdict (`timing_ok`) "
        "and Linux's retransmissions.",
        "",
        'A TRC uses the model of the TCP of the flow it controls (`model = "fitted"`, '
        "the default); a flow whose TCP has none is a scenario error naming the nearest "
        "fitted configuration. The names are `{variant}-{halve}-{lt|nolt}-{delack|nodelack}` "
        "(`TcpConfig::model_name`).",
        "",
        "## The models",
        "",
        "| configuration | mode | from W_max | a (least squares) | a (used) | b | "
        "knots (W_max: T) | measured / predicted, min … max | on its grid from "
        f"{RTT_OPERATING_MIN * 1e3:g} ms (≤ 1.03) | "
        "W_avg/W_max at 6.5 | runs | runs with invalid timing (live) | command |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        "| paper eq. 1 (ns-2 SACK) | both | 6.5 | | 2.5 | 0.5 | — | | | "
        f"{data_per_cycle(6.5) / (2.5 + 0.5 * 6.5) / 6.5:.3f} | | | |",
    ]
    for name, m in models.items():
        for mode, f in m.items():
            mss = mss_of(name)
            rat = [r["goodput"] / law_predicted(f, r["w_max"], r["rtt"], mss)
                   for r in f["rows"] if r["w_max"] >= f["w_first"]]  # fmt: skip
            w0 = data_per_cycle(6.5) / law_cycle(f, 6.5, RTT_OPERATING_MIN) / 6.5
            w0s = f"{w0:.3f}" if f["w_first"] <= 6.5 else "— (not picked)"
            kn = ", ".join(f"{w:g}: {t:.3f}" for w, t in f["knots"]) or "—"
            if f.get("by_rtt"):
                rtts = sorted({round(r["rtt"], 3) for r in f["rows"]})
                kn = ("per RTT: the measured points at " + ", ".join(f"{x * 1e3:g}" for x in rtts)
                      + " ms (cycles spread by more than 3 % over the RTTs)")  # fmt: skip
            lines.append(
                f"| `{name}` | {mode} | {f['w_first']:g} | {f['a_ls']:.4f} | {f['a']:.4f} | "
                f"{f['b']:.4f} | {kn} | {min(rat):.4f} … {max(rat):.4f} | "
                f"{grid_verdict(name, f)} | {w0s} | {len(f['rows'])} | {invalid_timing(f)} | "
                + " then ".join(f"`{c}`" for c in f["cmds"])
                + " |"
            )
    lines += [
        "",
        f"![W_avg / W_max against W_max, measured and fitted]({DOC.with_suffix('.svg').name})",
        "",
        "## Residuals",
        "",
        "Ratio = measured goodput / the model's goodput (≥ 1: the flow gets at least what "
        "the model promises, which the TRC needs; ≤ 1.03: within the paper's 3 %).",
    ]
    for name, m in models.items():
        for mode, f in m.items():
            lines += [
                "",
                f"### `{name}`, {mode}",
                "",
                "| W_max | RTT [ms] | goodput [kb/s] | W_avg | T [RTTs] | residual T − model "
                "| fitted ratio | paper ratio | signals | other drops | timeouts |",
                "|---|---|---|---|---|---|---|---|---|---|---|",
            ]
            for r in f["rows"]:
                mss = mss_of(name)
                rp = r["goodput"] / predicted(r["w_max"], r["rtt"], 2.5, 0.5, None, mss)
                if r["w_max"] < f["w_first"]:  # not fitted: the TRC never picks it
                    res_s, rf_s = "(below w_first)", "—"
                else:
                    rf = r["goodput"] / law_predicted(f, r["w_max"], r["rtt"], mss)
                    res = r["cycle_rtts"] - law_cycle(f, r["w_max"], r["rtt"])
                    res_s, rf_s = f"{res:+.3f}", f"{rf:.4f}"
                lines.append(
                    f"| {r['w_max']} | {r['rtt'] * 1e3:.1f} | {r['goodput'] / 1e3:.2f} | "
                    f"{r['w_avg']:.3f} | {r['cycle_rtts']:.3f} | {res_s} | {rf_s} | "
                    f"{rp:.4f} | {int(r['signals'])} | {int(r['other_drops'])} | "
                    f"{int(r['timeouts'])} |"
                )
    lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--measure", nargs="*", default=[], metavar="NAME",
                    help="configurations to run (e.g. newreno-flight-lt-nodelack)")  # fmt: skip
    ap.add_argument("--ecn", action="store_true", help="measure in ECN mode (E = 0)")
    ap.add_argument("--w", nargs="+", type=float, metavar="W_MAX",
                    help="with --measure: only these W_max, merged into the data file")  # fmt: skip
    ap.add_argument(
        "--rtt",
        nargs="+",
        type=float,
        metavar="SECONDS",
        help="with --measure: only these total RTTs, merged into the data file "
        f"(laws measured per RTT take {' '.join(map(str, FIT_RTT_FINE))})",
    )
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--check", action="store_true",
                    help="exit 1 if the model files differ from the data's fit")  # fmt: skip
    a = ap.parse_args(argv)
    if a.measure:
        try:
            os.nice(max(0, 10 - os.nice(0)))  # niced to 10, not further
        except OSError:
            pass
        for name in a.measure:
            measure_config(name, a.ecn, a.workers, a.w, a.rtt)
    models = fits()
    files = model_files(models)
    if a.check:
        same = all(p.exists() and p.read_text() == t for p, t in files.items())
        sys.exit(0 if same and set(MODELS.glob("*.toml")) == set(files) else 1)
    MODELS.mkdir(parents=True, exist_ok=True)
    for p, t in files.items():
        p.write_text(t)
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(doc(models))
    figure(models, DOC.with_suffix(".svg"))
    for name, m in models.items():
        print(name, {k: (v["a"], v["b"], v["knots"]) for k, v in m.items()}, file=sys.stderr)


if __name__ == "__main__":
    main()

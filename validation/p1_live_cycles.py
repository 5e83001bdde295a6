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

Each measured cycle is compared with the model's cycle at the same W_max, ± 3 %: a
cycle 3 % shorter than the model's gives about 3 % more than the model's target, the
band of P1's claim (§4.3). The measurements are kept in
``validation/data/p1-live-cycles.csv``; the page
``validation/data/p1-live-cycles.md`` is generated from them with the model as it is
now, so a refitted model shows up without new live runs.

    sudo python3 validation/p1_live_cycles.py --measure 20.5 40   # W_MAX SECONDS
    sudo python3 validation/p1_live_cycles.py --measure 50.5 60
    python3 validation/p1_live_cycles.py                          # the page from the data

``--measure`` needs live mode (root, /dev/net/tun) and replaces the rows of its W_max;
every run's timing verdict is kept beside it.
"""

import argparse
import csv
import itertools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import trc_model_fit as fit

from qoslab.trc import cycle as model_cycle

RTTS = [0.05, 0.2]
CCS = ("reno", "cubic")
DATA = Path(__file__).resolve().parent / "data" / "p1-live-cycles.csv"
PAGE = DATA.with_suffix(".md")
FIELDS = ["w_max", "seconds", "cc", "rtt_ms", "timing_ok", "cycles", "cycle_rtts",
          "peak", "kept", "below", "command"]  # fmt: skip
#: Measured cycle against the model's: ± this fraction (P1 §4.3's 3 % band).
RTOL = 0.03


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


def measure(w: float, secs: float) -> list[dict]:
    """One live run per congestion control and RTT at W_max ``w``: the rows of the data."""
    from qoslab.api import live

    rows = []
    command = f"sudo python3 validation/p1_live_cycles.py --measure {w:g} {secs:g}"
    for cc in CCS:
        for rtt in RTTS:
            sc = fit.scenario(f"linux-{cc}", w, rtt - fit.rtt_net(fit.LIVE_MSS), secs, False)
            sc["record"] = {"interval": f"{rtt / 20 * 1e3:.1f}ms", "traces": ["f"]}
            res = live(sc)
            tr = res.tables["traces"].filter(res.tables["traces"]["t"] >= secs / 5)
            cs = cycles(tr["t"].to_list(), tr["cwnd"].to_list(), tr["ssthresh"].to_list())
            row = {"w_max": w, "seconds": secs, "cc": cc, "rtt_ms": rtt * 1e3,
                   "timing_ok": bool(res.summary.get("live_timing_ok")),
                   "cycles": max(len(cs) - 1, 0), "command": command}  # fmt: skip
            if len(cs) >= 2:
                lens = [(b[0] - a[0]) / rtt for a, b in itertools.pairwise(cs)]
                below = []
                for _, before, after, samples in cs:
                    mid = (before + after) / 2
                    below.append(sum(1 for _, c in samples if c < mid) / len(samples))
                row |= {"cycle_rtts": sum(lens) / len(lens),
                        "peak": sum(c[1] for c in cs) / len(cs),
                        "kept": sum(after / before for _, before, after, _ in cs) / len(cs),
                        "below": sum(below) / len(below)}  # fmt: skip
            rows.append(row)
            print(f"{cc} {rtt * 1e3:g} ms: {row}", file=sys.stderr)
    return rows


def load() -> list[dict]:
    """The measured rows (strings from the CSV, typed)."""
    if not DATA.exists():
        return []
    out = []
    with DATA.open() as f:
        for r in csv.DictReader(line for line in f if not line.startswith("#")):
            row: dict = dict(r)
            for k in ("w_max", "seconds", "rtt_ms", "cycle_rtts", "peak", "kept", "below"):
                row[k] = float(r[k]) if r[k] else None
            row["cycles"] = int(r["cycles"])
            row["timing_ok"] = r["timing_ok"] == "True"
            out.append(row)
    return out


def save(rows: list[dict], header: list[str]) -> None:
    """Writes the data, its comment lines first."""
    with DATA.open("w", newline="") as f:
        for h in header:
            f.write(f"# {h}\n")
        wr = csv.DictWriter(f, fieldnames=FIELDS)
        wr.writeheader()
        for r in rows:
            wr.writerow({k: ("" if r.get(k) is None else r[k]) for k in FIELDS})


def num(x: float | None, d: int) -> str:
    """``x`` with ``d`` decimals, or a dash."""
    return "—" if x is None else f"{x:.{d}f}"


def verdict(measured: float | None, model: float) -> str:
    """``within`` when the measured cycle is the model's ± :data:`RTOL`."""
    if measured is None:
        return "no cycles"
    return "within" if abs(measured / model - 1) <= RTOL + 1e-12 else "outside"


def page(rows: list[dict]) -> str:
    """The generated page: per W_max, each run against the model as it is now."""
    out = ["# Linux Reno and CUBIC cycles under a TRC, against the fitted models", "",
           f"Generated by `python3 validation/p1_live_cycles.py` from "
           f"`validation/data/p1-live-cycles.csv` (the commands that measured it are in "
           f"its rows) with the models as they are now. Verdict: the measured cycle is "
           f"the model's ± {RTOL * 100:g} % (a cycle {RTOL * 100:g} % shorter gives about "
           f"{RTOL * 100:g} % more than the target, the band of P1's claim, §4.3).",
           ""]  # fmt: skip
    for w in sorted({r["w_max"] for r in rows}):
        sel = [r for r in rows if r["w_max"] == w]
        out += [f"W_max {w:g}, {sel[0]['seconds']:g} s per run (the first fifth discarded), "
                f"cwnd every RTT/20", "",
                "| Linux | RTT [ms] | timing ok | cycles | cycle [RTTs] | model [RTTs] | "
                "measured ÷ model | verdict | window's peak [packets] | kept at a reduction "
                "| share of the cycle below the midpoint |",
                "|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
        for r in sel:
            m = model_cycle(w, model=f"linux-{r['cc']}")
            c = r["cycle_rtts"]
            ratio = "—" if c is None else f"{c / m:.3f}"
            out.append(f"| {r['cc']} | {r['rtt_ms']:g} | {r['timing_ok']} | {r['cycles']} | "
                       f"{num(c, 2)} | {m:.2f} | {ratio} | {verdict(c, m)} | {num(r['peak'], 1)} "
                       f"| {num(r['kept'], 2)} | {num(r['below'], 2)} |")  # fmt: skip
        out.append("")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--measure", nargs=2, type=float, metavar=("W_MAX", "SECONDS"),
                    help="run live (root) at this W_max and replace its rows")  # fmt: skip
    args = ap.parse_args()
    rows = load()
    header = []
    if DATA.exists():
        header = [ln[2:].rstrip("\n") for ln in DATA.open() if ln.startswith("# ")]
    if args.measure:
        w, secs = args.measure
        rows = [r for r in rows if r["w_max"] != w] + measure(w, secs)
        rows.sort(key=lambda r: (r["w_max"], CCS.index(r["cc"]), r["rtt_ms"]))
        save(rows, header)
    PAGE.write_text(page(rows))
    print(f"wrote {PAGE.relative_to(Path.cwd()) if PAGE.is_relative_to(Path.cwd()) else PAGE}")


if __name__ == "__main__":
    main()

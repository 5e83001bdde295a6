#!/usr/bin/env python3
"""P2 Fig. 1's baseline in a second simulator: TCP without ERUF on the dumbbell, in
ns-3.44 and in qoslab, side by side.

The paper's TCP "levels off" near 400 kb/s as the CBR total grows to 2 Mb/s; qoslab's
collapses (about 13 kb/s at 2 Mb/s) in every FIFO/RED variant of
``validation/p2_collapse.py``. ns-3, which nobody here wrote, runs the same scenario
(validation/ns3/p2_dumbbell.cc: the topology, RED queues, TCP SACK settings and CBR
flows of ``qoslab.reproduce.p2.dumbbell(False)``) so that a disagreement points at
qoslab and an agreement at the paper's environment. Each simulator runs qoslab's
reading (RED after Floyd & Jacobson: no ``wait``, not gentle) and ns-2/ns-3's RED
(``wait`` and gentle on). ns-3 frames every packet with a 2-byte PPP header; qoslab runs
as the reproduction does (no framing) and with ``framing = 2``.

Writes validation/data/p2-ns3-baseline.json and prints the table on docs/papers/p2.md.
``--probe`` adds (to the data already written, without rerunning ns-3) qoslab under
F&J RED with a smaller ``mean_pkt_size`` on every RED queue: qoslab decays RED's average
over an idle queue by elapsed time only, in mean-sized packet times, where ns-2/ns-3
also take one averaging step (with a queue of 0) at each arrival, so a queue that forced
drops keep empty holds qoslab's average above ``max_th`` far longer; a smaller mean
packet size makes qoslab's idle decay faster.

    python validation/ns3_p2_baseline.py [--ns3-venv .ns3-venv] [--seconds 500]
        [--rates 1000,1500,2000] [--seeds 3] [--table-only | --probe]

Needs the ns3 wheel in a separate venv (``pip install --no-deps ns3==3.44.post0``); the
peer program is compiled into validation/ns3/build/ on first use.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import subprocess
import time
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
SRC = ROOT / "validation" / "ns3" / "p2_dumbbell.cc"
BIN = ROOT / "validation" / "ns3" / "build" / "p2_dumbbell"
OUT = ROOT / "validation" / "data" / "p2-ns3-baseline.json"
#: ``--probe``: qoslab's mean packet sizes [bytes] for RED's idle decay.
PROBE_SIZES = [100, 20]
#: RED readings: name → (ns-3 flags, qoslab overrides of every RED queue).
REDS = {
    "F&J RED (qoslab's reading)": (["--wait=0", "--gentle=0"], {}),
    "ns-2/ns-3 RED (wait, gentle)": (["--wait=1", "--gentle=1"], {"wait": True, "gentle": True}),
}


def build(venv: pathlib.Path) -> None:
    """Compiles the ns-3 peer against the wheel in ``venv`` when the binary is missing
    or older than its source."""
    if BIN.exists() and BIN.stat().st_mtime > SRC.stat().st_mtime:
        return
    py = venv / "bin" / "python"
    loc = subprocess.run(
        [str(py), "-c", "import importlib.util as u; "
         "print(list(u.find_spec('ns3').submodule_search_locations)[0])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    ns3 = pathlib.Path(loc)
    BIN.parent.mkdir(parents=True, exist_ok=True)
    libs = ["core", "network", "internet", "point-to-point", "traffic-control", "applications"]
    subprocess.run(
        ["g++", "-O2", "-std=c++20", "-o", str(BIN), str(SRC), f"-I{ns3 / 'include'}",
         f"-L{ns3 / 'lib64'}", f"-Wl,-rpath,{ns3 / 'lib64'}", *[f"-lns3.44-{x}" for x in libs]],
        check=True,
    )  # fmt: skip


def ns3_run(rate: float, seed: int, flags: list[str], seconds: float) -> dict[str, float]:
    """One ns-3 run: its printed measures."""
    out = subprocess.run(
        [str(BIN), f"--cbr={rate:g}", f"--run={seed}", f"--duration={seconds:g}", *flags],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    vals = dict(line.split() for line in out.splitlines() if line.strip())
    return {k: float(v) for k, v in vals.items()}


def qoslab_run(rate: float, seed: int, red: dict[str, Any], framing: int, seconds: float) -> dict:
    """One qoslab run of the reproduction's scenario with every RED queue's keys ``red``
    and every link's ``framing``."""
    import polars as pl

    import qoslab
    from qoslab.reproduce import p2

    d = p2.with_total(p2.dumbbell(False), rate)
    d["duration"] = f"{seconds:g}s"
    for lk in d["link"]:
        lk["queue"].update(red)
        if framing:
            lk["framing"] = framing
    res = qoslab.run(d, seed=seed)
    m = p2.measure(res, p2.EDGES["f1"])
    dr = res.tables["drops"].filter(pl.col("place") == "r1->r2")
    secs = seconds - p2.WARMUP
    return {"tcp_goodput_bps": m["tcp_kbps"] * 1e3, "cbr_goodput_bps": m["udp_kbps"] * 1e3,
            "r1_r2_drops": float(dr["packets"].sum()), "secs": secs}  # fmt: skip


def measure_all(a: argparse.Namespace) -> dict[str, Any]:
    """Every cell: simulator × RED reading × rate × seed."""
    rates = [float(r) for r in a.rates.split(",")]
    seeds = list(range(1, a.seeds + 1))
    rows = []
    for red, (flags, ov) in REDS.items():
        for rate in rates:
            for s in seeds:
                t = time.time()
                n = ns3_run(rate, s, flags, a.seconds)
                rows.append({"sim": "ns-3.44", "red": red, "cbr_kbps": rate, "seed": s,
                             "tcp_kbps": n["tcp_goodput_bps"] / 1e3,
                             "cbr_goodput_kbps": n["cbr_goodput_bps"] / 1e3,
                             "timeouts": n["timeouts"], "wall_s": time.time() - t})  # fmt: skip
                for framing in (0, 2):
                    q = qoslab_run(rate, s, ov, framing, a.seconds)
                    rows.append({"sim": "qoslab" + (" (framing 2)" if framing else ""),
                                 "red": red, "cbr_kbps": rate, "seed": s,
                                 "tcp_kbps": q["tcp_goodput_bps"] / 1e3,
                                 "cbr_goodput_kbps": q["cbr_goodput_bps"] / 1e3,
                                 "timeouts": None, "wall_s": None})  # fmt: skip
                print(f"{red} {rate:g} seed {s}: ns-3 {rows[-3]['tcp_kbps']:.1f} kb/s, "
                      f"qoslab {rows[-2]['tcp_kbps']:.1f} / {rows[-1]['tcp_kbps']:.1f}",
                      flush=True)  # fmt: skip
    return {
        "what": "TCP goodput without ERUF on P2 Fig. 1's dumbbell, ns-3.44 and qoslab",
        "command": "python validation/ns3_p2_baseline.py "
        f"--seconds {a.seconds:g} --rates {a.rates} --seeds {a.seeds}",
        "seconds": a.seconds,
        "warmup": 20.0,
        "rows": rows,
    }


def probe(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with qoslab's rows under each RED at each of :data:`PROBE_SIZES` added
    (the same rates, seeds and length as the data's runs)."""
    rates = sorted({r["cbr_kbps"] for r in data["rows"]})
    seeds = sorted({r["seed"] for r in data["rows"]})
    rows = [r for r in data["rows"] if not r["sim"].startswith("qoslab, mean_pkt_size")]
    for red, (_, ov) in REDS.items():
        for size, rate, s in ((n, r, k) for n in PROBE_SIZES for r in rates for k in seeds):
            q = qoslab_run(rate, s, {**ov, "mean_pkt_size": size}, 0, data["seconds"])
            rows.append({"sim": f"qoslab, mean_pkt_size {size}", "red": red, "cbr_kbps": rate,
                         "seed": s, "tcp_kbps": q["tcp_goodput_bps"] / 1e3,
                         "cbr_goodput_kbps": q["cbr_goodput_bps"] / 1e3,
                         "timeouts": None, "wall_s": None})  # fmt: skip
    return {**data, "rows": rows, "probe": "python validation/ns3_p2_baseline.py --probe"}


def table(data: dict[str, Any]) -> str:
    """The markdown table: TCP goodput [kb/s], mean (min–max) over seeds, per RED
    reading, simulator and CBR rate; the paper's ≈ 400 kb/s for reference."""
    rows = data["rows"]
    rates = sorted({r["cbr_kbps"] for r in rows})
    sims = ["ns-3.44", "qoslab", "qoslab (framing 2)"]
    sims += [f"qoslab, mean_pkt_size {n}" for n in PROBE_SIZES]
    head = "| RED | simulator | " + " | ".join(f"{r:g} kb/s CBR" for r in rates) + " |"
    out = [head, "|---|---|" + "---|" * len(rates)]
    for red in REDS:
        for sim in sims:
            cells = []
            for rate in rates:
                v = [r["tcp_kbps"] for r in rows
                     if r["red"] == red and r["sim"] == sim and r["cbr_kbps"] == rate]  # fmt: skip
                cells.append(f"{statistics.mean(v):.0f} ({min(v):.0f}–{max(v):.0f})" if v else "")
            if any(cells):
                out.append(f"| {red} | {sim} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--ns3-venv",
        type=pathlib.Path,
        default=pathlib.Path(__file__).resolve().parents[1] / ".ns3-venv",
    )
    ap.add_argument("--seconds", type=float, default=500.0)
    ap.add_argument("--rates", default="1000,1500,2000")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--table-only", action="store_true", help="print the committed data's table")
    ap.add_argument("--probe", action="store_true", help="add qoslab's idle-decay probe rows")
    a = ap.parse_args()
    if a.probe:
        OUT.write_text(json.dumps(probe(json.loads(OUT.read_text())), indent=1) + "\n")
    elif not a.table_only:
        build(a.ns3_venv)
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(json.dumps(measure_all(a), indent=1) + "\n")
    print(table(json.loads(OUT.read_text())))


if __name__ == "__main__":
    main()

"""Repeated live runs (``qoslab live --repeat N``): the same scenario run N times, each
in a fresh set of namespaces with seed ``seed + k`` (its twin too), summarised per flow
as a mean with a 95 % confidence interval for live, for the twin, and for their
difference paired by repeat (twin − live of the same repeat, so what the repeats share
cancels out)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import polars as pl

from qoslab.tables import t_quantile

__all__ = ["REPEATS_DIR", "mean_ci", "repeat_tables", "repeat_text", "run_repeats"]

#: Sub-folder of a repeated run's folder that holds repeat k (1-based): ``repeat-<k>``.
REPEATS_DIR = "repeat-{k}"


def mean_ci(xs: Sequence[float | None]) -> tuple[float, float, int]:
    """(mean, half-width of its two-sided 95 % Student-t interval, n) of the finite
    values of ``xs``; the half-width is NaN below two values."""
    v = [float(x) for x in xs if x is not None and math.isfinite(float(x))]
    n = len(v)
    if n == 0:
        return math.nan, math.nan, 0
    m = sum(v) / n
    if n < 2:
        return m, math.nan, n
    sd = math.sqrt(sum((x - m) ** 2 for x in v) / (n - 1))
    return m, t_quantile(0.975, n - 1) * sd / math.sqrt(n), n


def _per_repeat(results: Sequence[Any], seeds: Sequence[int]) -> pl.DataFrame:
    """One row per repeat and flow (and the total): live and twin goodput [b/s]."""
    rows = []
    for k, (r, seed) in enumerate(zip(results, seeds, strict=True), start=1):
        ok = bool(r.summary.get("live_timing_ok"))
        twin = r.tables.get("twin")
        if twin is not None:
            for t in twin.iter_rows(named=True):
                comparable = bool(t["comparable"])
                live, sim = t["live_bps"], t["sim_bps"]
                rows.append(
                    {
                        "repeat": k,
                        "seed": seed,
                        "flow": t["flow"],
                        "live_bps": live,
                        "sim_bps": sim,
                        "comparable": comparable,
                        "diff_bps": sim - live if comparable else None,
                        "diff": (sim / live - 1.0) if comparable and live else None,
                        "timing_ok": ok,
                    }
                )
            continue
        flows = r.flows
        for f in flows.iter_rows(named=True):
            rows.append(
                {
                    "repeat": k,
                    "seed": seed,
                    "flow": f["name"],
                    "live_bps": f["goodput_bps"],
                    "sim_bps": None,
                    "comparable": False,
                    "diff_bps": None,
                    "diff": None,
                    "timing_ok": ok,
                }
            )
        rows.append(
            {
                "repeat": k,
                "seed": seed,
                "flow": "(total)",
                "live_bps": float(flows["goodput_bps"].sum()),
                "sim_bps": None,
                "comparable": False,
                "diff_bps": None,
                "diff": None,
                "timing_ok": ok,
            }
        )
    schema = {
        "repeat": pl.Int64,
        "seed": pl.Int64,
        "flow": pl.String,
        "live_bps": pl.Float64,
        "sim_bps": pl.Float64,
        "comparable": pl.Boolean,
        "diff_bps": pl.Float64,
        "diff": pl.Float64,
        "timing_ok": pl.Boolean,
    }
    return pl.DataFrame(rows, schema=schema)


def repeat_tables(
    results: Sequence[Any], seeds: Sequence[int]
) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, Any]]:
    """From the repeats' results (with or without a ``twin`` table) and their seeds:
    ``repeats`` (per repeat and flow: ``live_bps``, ``sim_bps``, ``diff_bps`` = twin −
    live, ``diff`` = twin ÷ live − 1, ``timing_ok``), ``repeat_ci`` (per flow, in the
    flows' order with the total last: ``n``, and ``*_mean`` with ``*_ci95``, the 95 %
    half-width, of ``live_bps``, ``sim_bps``, ``diff_bps`` and ``diff``: the difference
    paired by repeat, null where the live and simulated senders ran different congestion
    controls in any repeat) and summary entries."""
    per = _per_repeat(results, seeds)
    out = []
    for name in dict.fromkeys(per["flow"].to_list()):
        g = per.filter(pl.col("flow") == name)
        comparable = bool(g["comparable"].all())
        row: dict[str, Any] = {"flow": name, "n": g.height, "comparable": comparable}
        for col in ("live_bps", "sim_bps", "diff_bps", "diff"):
            vals = g[col].to_list()
            if col.startswith("diff") and not comparable:
                vals = []
            m, ci, _ = mean_ci(vals)
            row[f"{col}_mean"] = None if math.isnan(m) else m
            row[f"{col}_ci95"] = None if math.isnan(ci) else ci
        out.append(row)
    ci = pl.DataFrame(
        out,
        schema={
            "flow": pl.String,
            "n": pl.Int64,
            "comparable": pl.Boolean,
            **{
                f"{c}_{s}": pl.Float64
                for c in ("live_bps", "sim_bps", "diff_bps", "diff")
                for s in ("mean", "ci95")
            },
        },
    )
    summary = {
        "repeats": len(results),
        "repeat_seeds": list(seeds),
        "repeat_timing_ok": sum(bool(r.summary.get("live_timing_ok")) for r in results),
        "repeat_dirs": [REPEATS_DIR.format(k=k) for k in range(1, len(results) + 1)],
    }
    return per, ci, summary


def _pm(mean: float | None, ci: float | None, scale: float, fmt: str) -> str:
    """``mean ± ci`` scaled, or the mean alone without an interval, or "-"."""
    if mean is None:
        return "-"
    if ci is None:
        return f"{mean * scale:{fmt}}"
    return f"{mean * scale:{fmt}} ± {ci * scale:{fmt.lstrip('+')}}"


def repeat_text(ci: pl.DataFrame, width: int = 80) -> str:
    """The ``repeat_ci`` table as text within ``width`` columns: per flow the mean ± 95 %
    half-width of live and twin goodput [Mb/s] and of their paired difference (twin −
    live, in % of live), or "not comparable"."""
    twin = ci["sim_bps_mean"].is_not_null().any()
    head = ["live Mb/s", *(["twin Mb/s", "twin - live"] if twin else [])]
    cols = [17, *([17, 16] if twin else [])]
    fixed = sum(cols) + len(cols)
    name_w = max(4, min(max((len(f) for f in ci["flow"]), default=4), width - fixed))

    def cut(name: str) -> str:
        return name if len(name) <= name_w else name[: name_w - 1] + "…"

    lines = [f"{'flow':<{name_w}}" + "".join(f" {h:>{w}}" for h, w in zip(head, cols, strict=True))]
    for r in ci.iter_rows(named=True):
        cells = [_pm(r["live_bps_mean"], r["live_bps_ci95"], 1e-6, ".3f")]
        if twin:
            cells.append(_pm(r["sim_bps_mean"], r["sim_bps_ci95"], 1e-6, ".3f"))
            cells.append(
                _pm(r["diff_mean"], r["diff_ci95"], 100.0, "+.1f") + " %"
                if r["comparable"] and r["diff_mean"] is not None
                else "not comparable"
            )
        lines.append(
            f"{cut(r['flow']):<{name_w}}"
            + "".join(f" {c:>{w}}" for c, w in zip(cells, cols, strict=True))
        )
    n = int(ci["n"].max() or 0) if ci.height else 0
    lines.append(f"(mean ± 95 % half-width over {n} repeats; the difference paired by repeat)")
    return "\n".join(lines)


def run_repeats(
    sc: Any,
    n: int,
    seed: int,
    twin: bool,
    dest: Any,
    echo: Any,
) -> Any:
    """Runs scenario ``sc`` live ``n`` times with seeds ``seed``, ``seed + 1``, …, each
    saved as a normal run in ``dest/repeat-<k>``, then saves the summary run in ``dest``
    (tables ``repeat_ci`` and ``repeats``) and returns it. ``echo`` prints a line."""
    from pathlib import Path

    from qoslab import __version__, live_leftovers
    from qoslab.api import live
    from qoslab.store import OWN, Result, new_stage, prepare_output, remove_stage, save_run

    dest = prepare_output(Path(dest), "run")
    results, seeds = [], []
    for k in range(1, n + 1):
        sub = dest / REPEATS_DIR.format(k=k)
        prepare_output(sub, "run")
        stage = new_stage(sub / OWN, "run")
        s = seed + k - 1
        try:
            with live_leftovers.registered([stage]):
                res = live(sc, None, s, work_dir=stage / "live", twin=twin)
            save_run(sub, res, stage=stage)
        finally:
            if stage.exists():
                remove_stage(stage)
        sm = res.summary
        verdict = "timing OK" if sm.get("live_timing_ok") else "TIMING OUT OF BOUNDS"
        cause = "" if sm.get("live_timing_ok") else f" ({sm.get('live_timing_cause', '')})"
        total = float(res.flows["goodput_bps"].sum())
        tw = f", twin {sm['twin_total_sim_bps'] / 1e6:.3f}" if twin else ""
        echo(
            f"repeat {k}/{n} (seed {s}): {verdict}{cause}; "
            f"total live {total / 1e6:.3f} Mb/s{tw}: {sub}"
        )
        results.append(res)
        seeds.append(s)
    per, ci, summ = repeat_tables(results, seeds)
    warnings = []
    for r in results:
        for w in r.summary.get("warnings") or []:
            if w not in warnings:
                warnings.append(w)
    summary = {
        "name": sc.name,
        "live": True,
        "seed": seed,
        **summ,
        "live_timing_ok": all(bool(r.summary.get("live_timing_ok")) for r in results),
        "live_lateness_p99_us": max(
            float(r.summary.get("live_lateness_p99_us") or 0.0) for r in results
        ),
        "live_lateness_p999_us": max(
            float(r.summary.get("live_lateness_p999_us") or 0.0) for r in results
        ),
        "warnings": warnings,
        "qoslab_version": __version__,
    }
    if sc.file:
        summary["scenario_file"] = sc.file
    out = Result(summary, {"repeat_ci": ci, "repeats": per}, dict(sc.data))
    save_run(dest, out)
    return out

"""Runs registered experiments into a results folder and writes ``reproduce.json``
after each (:func:`run_experiments`)."""

from __future__ import annotations

import json
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from qoslab.reproduce.context import Context
from qoslab.reproduce.registry import SkipExperiment, discover
from qoslab.reproduce.verdicts import (
    Ablation,
    Comparison,
    Outcome,
    count_verdicts,
    experiment_status,
    require_sources,
    require_twins,
    summarize,
)


def mark_mode(outcome: Outcome, quick: bool) -> None:
    """Tells every comparison and ablation of ``outcome`` (readings' and calibrations'
    included) whether its run was in quick mode, so that one whose claim ``needs`` what
    quick mode does not run is ``not-judged`` there."""
    items: list[Comparison | Ablation] = [*outcome.comparisons, *outcome.ablations]
    for r in outcome.readings:
        items += r.comparisons
    for cal in outcome.calibrations:
        for cs in cal.comparisons:
            items += cs
    for c in items:
        c.quick = quick


def run_experiments(
    names: list[str] | None,
    out: str | Path,
    *,
    quick: bool = False,
    workers: int | None = None,
    ray: str | None = None,
    log: Callable[[str], None] = print,
    full: Sequence[str] = (),
    paper_only: bool = False,
) -> dict[str, Any]:
    """Runs the named experiments (all if ``names`` is None) into ``out`` and writes
    ``out/reproduce.json``: per experiment its status, comparisons, directories and
    mode. With ``quick``, experiments whose name starts with one of ``full`` still run
    in full mode (e.g. ``full=["p0-"]``: P0's full mode takes about a minute). With
    ``paper_only``, experiments skip their explanatory extra runs (``ctx.paper_only``)."""
    reg = discover()
    names = [n for n, e in reg.items() if e.in_all] if names is None else names
    unknown = [n for n in names if n not in reg]
    if unknown:
        from qoslab.exceptions import QoslabError

        known = ", ".join(reg) or "none registered yet"
        raise QoslabError(f"unknown experiment {unknown[0]!r}; known: {known}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    index: dict[str, Any] = {
        "quick": quick,
        "paper_only": paper_only,
        "experiments": [],
        "requested": names,
        "started": time.time(),
    }
    for name in names:
        exp = reg[name]
        q = quick and not any(name.startswith(p) for p in full)
        ctx = Context(name, out / name, q, workers, ray, paper_only)
        ctx.out.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        entry: dict[str, Any] = {"name": name, "title": exp.title, "paper": exp.paper, "quick": q}
        if paper_only:
            entry["paper_only"] = True
        log(f"reproduce {name}: {exp.title}")
        try:
            outcome = exp.fn(ctx) or Outcome()
            require_twins(name, outcome)
            require_sources(name, outcome)
            mark_mode(outcome, q)
            for tname, df in outcome.tables.items():
                df.write_parquet(ctx.out / f"table-{tname}.parquet")
            entry.update(
                status="done",
                comparisons=[c.to_dict() for c in outcome.comparisons],
                ablations=[a.to_dict() for a in outcome.ablations],
                readings=[r.to_dict() for r in outcome.readings],
                calibrations=[c.to_dict() for c in outcome.calibrations],
                tables=list(outcome.tables),
                notes=outcome.notes,
                runs=[str(p) for p in dict.fromkeys([*ctx.runs, *outcome.runs])],
                sweeps=[str(p) for p in dict.fromkeys([*ctx.sweeps, *outcome.sweeps])],
            )
        except SkipExperiment as e:
            entry.update(status="skipped", reason=str(e))
            log(f"  skipped: {e}")
        except Exception as e:
            entry.update(
                status="failed", error=f"{type(e).__name__}: {e}", traceback=traceback.format_exc()
            )
            log(f"  failed: {type(e).__name__}: {e}")
        except BaseException:  # Ctrl-C, SIGTERM: the workers stop at once
            ctx.close(abort=True)
            raise
        ctx.close(abort=entry["status"] != "done")
        if ctx.pooled_s:  # for timings: the runs no folder of the experiment holds
            entry["pooled"] = {"runs": len(ctx.pooled_s), "call_s": sum(ctx.pooled_s),
                               "longest_s": max(ctx.pooled_s)}  # fmt: skip
        entry["wall_s"] = time.perf_counter() - t0
        entry["verdicts"] = count_verdicts(entry.get("comparisons") or [])
        entry["ablation_verdicts"] = count_verdicts(entry.get("ablations") or [])
        entry["verdict"] = experiment_status(entry)
        index["experiments"].append(entry)
        # Written after every experiment: a reproduction stopped part-way keeps (and
        # `docgen export` can use) the experiments it finished; their sweeps resume.
        _write_index(out, index, reg, finished=False)
    _write_index(out, index, reg, finished=True)
    return index


def _write_index(out: Path, index: dict[str, Any], reg: dict[str, Any], finished: bool) -> None:
    """``out/reproduce.json`` as it stands (``finished`` false while experiments remain),
    replaced atomically so that a reader never sees half a file."""
    from qoslab.store import atomic_write_text

    index["registered"] = list(reg)
    index["finished"] = finished
    index["summary"] = summarize(index)
    atomic_write_text(out / "reproduce.json", json.dumps(index, indent=2, default=str), out)

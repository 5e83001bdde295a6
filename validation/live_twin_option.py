"""How one option of the twin's TCP moves the live experiments' twins, without a live run.

Each named live experiment (``p0-live``, ``p1-live``, ``p3-live``) runs in its quick or
full mode with every live run replaced by the same scenario simulated (so no root time
and no real TCP: the experiment's own verdicts here mean nothing and are not shown),
and every twin it asks for is simulated twice, with the twin's ``tcp`` option ON and
OFF; per scenario and seed the page lists the twin's total and the largest change of
one flow's goodput. It answers "which committed live results have a twin that a change
of the twin's TCP moves, and by how much", e.g. after ``rto_lost_retransmit`` joined
the twin (issue 63): data committed before that change can be judged without
rerunning it live.

    .venv/bin/python validation/live_twin_option.py [--option rto_lost_retransmit]
        [--full] [p0-live p1-live p3-live]

Writes ``docs/validation/live-twin-option.md`` and
``validation/data/live_twin_option.json`` (``-full`` in both names with ``--full``);
``--from-json`` rebuilds the page only.
"""

from __future__ import annotations

import argparse
import copy
import json
import pathlib
import re
import sys
import tempfile
import time
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent


def paths(full: bool) -> tuple[pathlib.Path, pathlib.Path]:
    """The data file and the page of one mode."""
    tail = "-full" if full else ""
    return (
        ROOT / "validation" / "data" / f"live_twin_option{tail}.json",
        ROOT / "docs" / "validation" / f"live-twin-option{tail}.md",
    )


EXPERIMENTS = ["p0-live", "p1-live", "p3-live"]
#: Runs with more flows than this are compared by group (P3's aggregates).
GROUPED = 8


def twin_pair(data: dict, seed: int, option: str) -> dict:
    """The twin of ``data`` with ``option`` on and off: totals [b/s] and the largest
    relative change of one flow's goodput."""
    from qoslab.api import run
    from qoslab.twin import twin_data

    on, _ = twin_data(copy.deepcopy(data))
    off = copy.deepcopy(on)
    for d, v in ((on, True), (off, False)):
        for f in d["flow"]:
            if "tcp" in f:
                f["tcp"][option] = v
    from qoslab.fairness import jain

    a, b = group_goodputs(run(on, seed=seed).flows), group_goodputs(run(off, seed=seed).flows)
    # Groups under 1 % of the largest are left out of the change (one the marker starves
    # moves by a large factor of almost nothing).
    floor = 0.01 * max([*a.values(), *b.values(), 1.0])
    rel = [abs(a[g] - b[g]) / b[g] for g in b if b[g] >= floor]
    return {
        "total_on": sum(a.values()),
        "total_off": sum(b.values()),
        "max_flow_change": max(rel, default=0.0),
        "flows": len(a),
        "jain_on": jain(list(a.values())),
        "jain_off": jain(list(b.values())),
    }


def group_goodputs(flows) -> dict[str, float]:
    """Goodput [b/s] per group of flows: in a run of more than ``GROUPED`` flows, flows
    named ``<group>-<n>`` (P3's aggregates' members) count as their group; otherwise, and
    for any other name, a flow is its own group."""
    out: dict[str, float] = {}
    names = flows["name"].to_list()
    for name, g in zip(names, flows["goodput_bps"].to_list(), strict=True):
        key = re.sub(r"-\d+$", "", str(name)) if len(names) > GROUPED else str(name)
        out[key] = out.get(key, 0.0) + g
    return out


def measure(names: list[str], option: str, full: bool) -> dict:
    import qoslab.api as api
    import qoslab.reproduce.registry as registry
    from qoslab.reproduce.runner import run_experiments
    from qoslab.scenario import load

    rows: list[dict[str, Any]] = []

    def stand_in(scenario, overrides=None, seed=None, *, work_dir=None, twin=False):
        data = dict(load(dict(scenario)).with_overrides(overrides or {}).data)
        res = api.run(copy.deepcopy(data), seed=seed)
        if twin:
            api.add_twin(res, data, seed)
            rows.append(
                {"name": data.get("name", ""), "seed": seed, **twin_pair(data, seed, option)}
            )
            print(f"{data.get('name')} seed {seed}: {rows[-1]['max_flow_change']:+.3f}", flush=True)
        # What the experiments read of a live run's timing; the stand-in has none.
        res.summary.update(
            {"live_timing_ok": True, "live_timing_cause": "ok", "live_lateness_p99_us": 0.0}
        )
        return res

    api.live = stand_in
    registry.require_live = lambda: None
    with tempfile.TemporaryDirectory() as tmp:
        index = run_experiments(names, tmp, quick=not full, log=lambda s: None)
    for e in index["experiments"]:
        if e["status"] != "done":
            raise SystemExit(f"{e['name']}: {e['status']}: {e.get('error')}")
    return {
        "option": option,
        "mode": "full" if full else "quick",
        "experiments": names,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "rows": rows,
    }


def page(d: dict) -> str:
    opt, mode = d["option"], d["mode"]
    out = [
        f"# The live experiments' twins with and without `{opt}`",
        "",
        "Generated by `.venv/bin/python validation/live_twin_option.py"
        + (" --full" if mode == "full" else "")
        + "` (simulated only): do not edit by hand. Each live experiment "
        f"({', '.join(d['experiments'])}, {mode} mode) ran with every live run replaced by "
        "its scenario simulated, and every twin it asks for was simulated twice, with the "
        f"twin's `tcp.{opt}` on and off ([tcp.md](../tcp.md), "
        "[qoslab.twin](../../python/qoslab/twin.py)); the seeds are the experiments' own. "
        "*groups*: the twin's flows; in runs of more than 8 flows those named "
        "`<group>-<n>` (P3's aggregates) count as one; *largest group change*: the "
        "largest |on ÷ off − 1| of one group's goodput, over groups with at least 1 % of "
        "the largest one's. A twin the option does not move shows 0.",
        "",
        f"Measured {d['date']}.",
        "",
        "| scenario | seed | groups | twin total, on [Mb/s] | off [Mb/s] "
        "| total on ÷ off − 1 | largest group change | Jain on | Jain off |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in d["rows"]:
        tot = r["total_on"] / r["total_off"] - 1 if r["total_off"] else 0.0
        out.append(
            f"| {r['name']} | {r['seed']} | {r['flows']} | {r['total_on'] / 1e6:.3f} | "
            f"{r['total_off'] / 1e6:.3f} | {tot * 100:+.1f} % | "
            f"{r['max_flow_change'] * 100:.1f} % | {r['jain_on']:.3f} | {r['jain_off']:.3f} |"
        )
    by: dict[str, list[dict]] = {}
    for r in d["rows"]:
        by.setdefault(r["name"], []).append(r)
    out += [
        "",
        "Per scenario, the mean over its seeds:",
        "",
        "| scenario | seeds | twin total on ÷ off − 1 | Jain on | Jain off |",
        "|---|---|---|---|---|",
    ]
    for name, rs in by.items():
        n = len(rs)
        tot = sum(r["total_on"] for r in rs) / max(sum(r["total_off"] for r in rs), 1) - 1
        jon = sum(r["jain_on"] for r in rs) / n
        joff = sum(r["jain_off"] for r in rs) / n
        out.append(f"| {name} | {n} | {tot * 100:+.1f} % | {jon:.3f} | {joff:.3f} |")
    moved = sum(1 for r in d["rows"] if r["max_flow_change"] > 0)
    out += [
        "",
        f"{moved} of {len(d['rows'])} twins move. A live result recorded before the option "
        "joined the twin keeps its live side; only its twin columns and the comparisons "
        "against them would change, by the amounts above.",
        "",
    ]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*", default=EXPERIMENTS, help="live experiments")
    ap.add_argument("--option", default="rto_lost_retransmit", help="a boolean tcp key")
    ap.add_argument("--full", action="store_true", help="the experiments' full modes")
    ap.add_argument("--from-json", action="store_true", help="rebuild the page only")
    a = ap.parse_args()
    data, pg = paths(a.full)
    if a.from_json:
        d = json.loads(data.read_text())
    else:
        d = measure(a.names, a.option, a.full)
        data.write_text(json.dumps(d, indent=1) + "\n")
    pg.write_text(page(d))
    print(f"wrote {pg.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()

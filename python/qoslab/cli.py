"""``qoslab run|check|sweep|reproduce|report|draw|list``.

Bad input (a scenario that does not parse or validate, a missing or corrupt results
file) exits with status 2 and one paragraph naming the file, the key and what was
expected; ``--verbose`` adds the traceback. A failed simulation exits with 1.
"""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path
from typing import Any

import click

from qoslab.exceptions import (
    OutputError,
    QoslabError,
    ResultsError,
    ScenarioError,
    SimulationError,
)

__all__ = ["main"]


def _fail(e: BaseException, verbose: bool) -> int:
    if verbose:
        traceback.print_exc()
    if isinstance(e, ScenarioError):
        file = getattr(e, "file", None)
        key = getattr(e, "key", "")
        detail = getattr(e, "detail", str(e))
        where = f"in scenario {file}" if file else "in the scenario"
        at = f" at key `{key}`" if key else ""
        msg = f"error {where}{at}: {detail}"
        code = 2
    elif isinstance(e, OutputError):
        msg, code = f"error: {e}", 2
    elif isinstance(e, ResultsError):
        msg, code = f"error in results: {e}", 2
    elif isinstance(e, SimulationError):
        msg, code = f"the simulation failed: {e}", 1
    elif isinstance(e, QoslabError):
        msg, code = f"error: {e}", 2
    elif isinstance(e, OSError) and e.filename:
        # The environment, not qoslab: a folder without permission, a full disk, …
        msg, code = f"error: {e.filename}: {e.strerror or e}", 2
    else:
        msg = (
            f"internal error: {type(e).__name__}: {e} "
            "(a qoslab bug; rerun with --verbose for the traceback)"
        )
        code = 1
    if not msg.endswith("."):
        msg += "."
    if not verbose:
        msg += " (Use --verbose for a traceback.)"
    click.echo(f"qoslab: {msg}", err=True)
    return code


class _Group(click.Group):
    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # Every error message says "use --verbose": accept it after the subcommand too
        # (up to a "--" separator), as if it had been given before it.
        end = args.index("--") if "--" in args else len(args)
        flags = [a for a in args[:end] if a in ("--verbose", "-v")]
        rest = [a for a in args[:end] if a not in ("--verbose", "-v")] + args[end:]
        return super().parse_args(ctx, flags[:1] + rest)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except BrokenPipeError:
            _closed_pipe()
        except KeyboardInterrupt:
            click.echo("qoslab: interrupted.", err=True)
            sys.exit(130)
        except Exception as e:
            sys.exit(_fail(e, bool(ctx.obj and ctx.obj.get("verbose"))))


def _closed_pipe() -> None:
    """The reader of our output went away (``qoslab run … | head``): stop quietly."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    sys.exit(141)  # 128 + SIGPIPE, as a shell reports a process ended by a closed pipe


def _pairs(items: tuple[str, ...], what: str) -> dict[str, str]:
    out = {}
    for it in items:
        if "=" not in it:
            raise click.BadParameter(f"expected KEY=VALUE, got {it!r}", param_hint=what)
        k, v = it.split("=", 1)
        out[k.strip()] = v
    return out


def _overrides(items: tuple[str, ...]) -> dict[str, Any]:
    from qoslab.scenario import parse_value

    return {k: parse_value(v) for k, v in _pairs(items, "--set").items()}


def _grid(items: tuple[str, ...]) -> dict[str, list[Any]]:
    """``--grid KEY=V1,V2`` or ``--grid KEY=[TOML array]`` (for values holding commas)."""
    from qoslab.scenario import parse_value

    out: dict[str, list[Any]] = {}
    for k, v in _pairs(items, "--grid").items():
        if v.lstrip().startswith("["):
            parsed = parse_value(v)
            if not isinstance(parsed, list) or not parsed:
                raise click.BadParameter(
                    f"{k}={v}: not a non-empty TOML array, e.g. [1, 2] or "
                    '[{kind="droptail", limit=20}, {kind="red"}]',
                    param_hint="--grid",
                )
            out[k] = parsed
        else:
            out[k] = [parse_value(x) for x in v.split(",")]
    return out


def _take_cases(args: list[str]) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """``--case NAME KEY=VALUE …`` (repeatable) taken out of ``args``: the case's
    settings are the ``KEY=VALUE`` words after its name, up to the next option or a
    word without ``=`` (the scenario). A name given twice adds to its case. Values are
    read as ``--set`` reads them; a bad word names the case and the key."""
    from qoslab.scenario import parse_key_path, parse_value

    rest: list[str] = []
    cases: dict[str, dict[str, Any]] = {}
    i, end = 0, (args.index("--") if "--" in args else len(args))
    while i < len(args):
        a = args[i]
        if i >= end or (a != "--case" and not a.startswith("--case=")):
            rest.append(a)
            i += 1
            continue
        if a.startswith("--case="):
            name, i = a[len("--case=") :], i + 1
        elif i + 1 < end:
            name, i = args[i + 1], i + 2
        else:
            raise click.BadParameter("expected a case name after --case", param_hint="--case")
        if not name or name.startswith("-") or "=" in name:
            raise click.BadParameter(
                f"expected a case name after --case, found {name!r} (--case NAME KEY=VALUE …)",
                param_hint="--case",
            )
        settings = cases.setdefault(name, {})
        n = 0
        while i < end and not args[i].startswith("-") and "=" in args[i]:
            k, v = args[i].split("=", 1)
            k = k.strip()
            try:
                parse_key_path(k)
            except ValueError:
                raise click.BadParameter(
                    f"case {name!r}: {k!r} in {args[i]!r} is not a key path like link.0.rate",
                    param_hint="--case",
                ) from None
            if k in settings:
                raise click.BadParameter(
                    f"case {name!r} sets the key {k!r} twice", param_hint="--case"
                )
            settings[k] = parse_value(v)
            i, n = i + 1, n + 1
        if n == 0 and not settings:
            found = f", found {args[i]!r}" if i < len(args) else ""
            raise click.BadParameter(
                f"case {name!r} needs at least one KEY=VALUE after its name{found}",
                param_hint="--case",
            )
    return rest, cases


class _SweepCommand(click.Command):
    """``qoslab sweep``: takes ``--case NAME KEY=VALUE …`` (a variable number of words,
    which click's options cannot) out of the arguments before click reads the rest."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        rest, cases = _take_cases(list(args))
        ctx.meta["qoslab_cases"] = cases
        return super().parse_args(ctx, rest)


def _seeds(text: str | None) -> int | list[Any] | None:
    """``--seeds 10`` (a count), ``--seeds 1,5,9`` or ``--seeds '[1, 5, 9]'`` (a list)."""
    from qoslab.scenario import parse_value

    if text is None:
        return None
    t = text.strip()
    v = parse_value(f"[{t}]" if "," in t and not t.startswith("[") else t)
    if isinstance(v, bool) or not isinstance(v, (int, list)):
        raise click.BadParameter(
            f"{text!r}: expected a number of seeds (10) or a list (1,5,9 or [1, 5, 9])",
            param_hint="--seeds",
        )
    return v


def _warn(lines: list[str], file: str | None) -> None:
    """Each warning on standard error, naming the scenario file it is about."""
    where = f"{file}: " if file else ""
    for w in lines:
        click.echo(f"warning: {where}{w}", err=True)


def _count(f: Any) -> int:
    c = f.get("count", 1) if isinstance(f, dict) else 1
    return c if isinstance(c, int) and not isinstance(c, bool) else 1


def _flow_count(data: dict[str, Any]) -> str:
    """``4 flows``, or with flow groups ``4 flow entries (40 flows)``."""
    entries = data.get("flow", []) or []
    n = sum(_count(f) for f in entries)
    if n == len(entries):
        return f"{n} flow{'s' if n != 1 else ''}"
    return f"{len(entries)} flow entr{'ies' if len(entries) != 1 else 'y'} ({n} flows)"


#: The keys that say what a flow's source is, in the order a flow table shows them.
_FLOW_KINDS = ("cbr", "pareto", "web", "telnet", "stripe", "ptcp", "tcp")


def _flow_entries(data: dict[str, Any]):
    """The scenario's ``[[flow]]`` entries as a table: name, group, flows (copies),
    kind, src, dst, dscp."""
    import polars as pl

    rows = []
    for f in data.get("flow", []) or []:
        if not isinstance(f, dict):
            continue
        n = _count(f)
        name = str(f.get("name", ""))
        rows.append(
            {
                "name": name if n == 1 else f"{name}-1…{name}-{n}",
                "group": str(f.get("group", name if n > 1 else "")),
                "flows": n,
                "kind": next((k for k in _FLOW_KINDS if k in f), "?"),
                "src": str(f.get("from", "")),
                "dst": str(f.get("to", "")),
                "dscp": str(f.get("dscp", 0)),
            }
        )
    df = pl.DataFrame(rows) if rows else pl.DataFrame()
    if not df.is_empty() and not (df["group"] != "").any():
        df = df.drop("group")
    return df


def _echo_table(df: Any, rows: int = 50) -> None:
    """A polars table as `qoslab run` prints its flows (nothing for an empty one)."""
    import polars as pl

    if df is None or df.is_empty():
        return
    with pl.Config(tbl_rows=rows, tbl_hide_dataframe_shape=True, fmt_str_lengths=40):
        click.echo(df)


_set_opt = click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a value by key path, e.g. --set link.0.rate=5Mbps (repeatable).",
)


@click.group(cls=_Group)
@click.option(
    "--verbose", "-v", is_flag=True, help="Show tracebacks on errors (also after the command)."
)
@click.version_option(package_name="qoslab")
@click.pass_context
def cli(ctx: click.Context, verbose: bool) -> None:
    """qoslab: packet-level simulation of TCP traffic conditioning."""
    ctx.obj = {"verbose": verbose}


@cli.command()
@click.argument("scenario", type=click.Path(path_type=Path))
@_set_opt
def check(scenario: Path, sets: tuple[str, ...]) -> None:
    """Validate SCENARIO without running it; print its flows by entry and group, and the
    warnings a run would give before it starts (a rate without its unit, …)."""
    from qoslab.checking import check as check_
    from qoslab.checking import check_warnings

    sc = check_(scenario, _overrides(sets))
    d = sc.data
    click.echo(
        f"ok: {scenario} is valid ({len(d.get('node', []))} nodes, "
        f"{len(d.get('link', []))} links, {_flow_count(d)})"
    )
    _echo_table(_flow_entries(d))
    _warn(check_warnings(sc), sc.file)
    if sc.sweep is not None:
        from qoslab.sweep import SweepSpec

        spec = SweepSpec.from_scenario(sc)
        points = 1
        for v in spec.grid.values():
            points *= len(v)
        cases = f"{len(spec.cases)} case(s) × " if spec.cases else ""
        click.echo(
            f"sweep: {cases}{points} grid point(s) × {len(spec.seeds)} seed(s), every value checked"
        )


@cli.command()
@click.argument("scenario", type=click.Path(path_type=Path))
@_set_opt
@click.option("--seed", type=int, default=None, help="Override the scenario's seed.")
@click.option(
    "--out",
    "-o",
    type=click.Path(path_type=Path),
    default=None,
    help="Results directory (default results/<name>).",
)
@click.option(
    "--max-wall",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="SECONDS",
    help="Stop a run after this much wall-clock time (a failed run; default no limit).",
)
@click.option("--report", is_flag=True, help="Also write report.html there.")
def run(
    scenario: Path,
    sets: tuple[str, ...],
    seed: int | None,
    out: Path | None,
    report: bool,
    max_wall: float | None,
) -> None:
    """Run SCENARIO once and store its results.

    The results folder must be missing, empty, or hold an earlier qoslab run (which is
    replaced); qoslab never writes over other files. SIGTERM ends it as Ctrl-C does:
    nothing is left behind in the folder's staging area.
    """
    from qoslab.api import run as run_
    from qoslab.checking import check as check_
    from qoslab.store import (
        OWN,
        new_stage,
        os_error,
        prepare_output,
        remove_stage,
        safe_name,
        save_run,
        undo_prepare,
    )
    from qoslab.sweep import install_sigterm_handler

    install_sigterm_handler()
    # The whole file, [sweep] table included, as `check` does: a scenario that cannot
    # run leaves no results folder behind.
    sc = check_(scenario, _overrides(sets))
    name = safe_name(sc.name, file=sc.file)
    dest = out if out is not None else Path("results") / name
    if sc.sweep is not None:
        click.echo(
            f"note: {scenario} has a [sweep] table; `qoslab run` runs one point (the "
            f"scenario's own values, seed {seed if seed is not None else sc.seed}), not the "
            f"sweep: `qoslab sweep {scenario}` runs the grid",
            err=True,
        )
    created = not os.path.lexists(dest)
    try:
        was_empty = created or (dest.is_dir() and not any(dest.iterdir()))
    except OSError:
        was_empty = False
    prepare_output(dest, "run")
    try:
        stage = new_stage(dest / OWN, "run")
    except OSError as e:
        raise os_error(dest, e) from None
    try:
        # [[capture]] files are written straight into the run's staging folder.
        res = run_(sc, None, seed, pcap_dir=stage / "pcap", max_wall=max_wall)
        save_run(dest, res, stage=stage)
    except BaseException:
        if stage.exists():
            remove_stage(stage)
        if was_empty:
            undo_prepare(dest, remove_dest=created)
        raise
    s = res.summary
    click.echo(
        f"{sc.name}: seed {s.get('seed')}, {s.get('events', '?')} events, "
        f"{s.get('wall_s', 0):.3f}s wall"
    )
    _warn(s.get("warnings") or [], sc.file)
    flows = res.flows
    cols = [c for c in ("name", "kind", "src", "dst", "goodput_bps", "drops") if c in flows.columns]
    if cols:
        with __import__("polars").Config(tbl_rows=50, tbl_hide_dataframe_shape=True):
            click.echo(flows.select(cols))
            by_class = res.goodput_by_class()
            if not by_class.is_empty():
                click.echo("goodput by class:")
                click.echo(by_class)
    if report:
        from qoslab.report import write_report

        click.echo(f"report: {write_report(dest)}")
    click.echo(f"results: {dest}")


def _stop_on_signals() -> list[int]:
    """Makes SIGINT and SIGTERM stop a live run (its agents and namespaces removed) and
    returns the list the signal's number is put in. SIGINT is handled even when it came
    in ignored (a background job of a shell without job control), so ``kill -INT`` stops
    a background run as Ctrl-C stops a foreground one."""
    import signal

    got: list[int] = []

    def _stop(signum: int, frame: Any) -> None:
        if not got:
            got.append(signum)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    return got


@cli.command()
@click.argument("scenario", type=click.Path(path_type=Path))
@_set_opt
@click.option("--seed", type=int, default=None, help="Override the scenario's seed.")
@click.option(
    "--out",
    "-o",
    type=click.Path(path_type=Path),
    default=None,
    help="Results directory (default results/<name>-live).",
)
@click.option(
    "--twin",
    is_flag=True,
    help="Also run the scenario in the simulator with Linux-like TCP settings (SACK, PRR, "
    "IW 10, 40 ms delayed ACKs, 1500-byte packets) and compare: the `twin` table.",
)
@click.option(
    "--repeat",
    type=click.IntRange(min=2),
    default=None,
    metavar="N",
    help="Run it N times (seeds SEED, SEED+1, …; each in fresh namespaces, its twin with "
    "the same seed), each saved in OUT/repeat-<k>, and summarise per flow: mean and 95 % "
    "interval of live, twin and their difference paired by repeat (repeat_ci table).",
)
def live(
    scenario: Path,
    sets: tuple[str, ...],
    seed: int | None,
    out: Path | None,
    twin: bool,
    repeat: int | None,
) -> None:
    """Run SCENARIO live: real Linux TCP/UDP in network namespaces through qoslab's own
    links, queues and conditioners (needs root and /dev/net/tun; exit 2 without them).
    """
    import signal
    import time

    from qoslab.api import check_data, live_unavailable
    from qoslab.api import live as live_
    from qoslab.scenario import load
    from qoslab.store import (
        OWN,
        new_stage,
        os_error,
        prepare_output,
        remove_stage,
        safe_name,
        save_run,
        undo_prepare,
    )

    problem = live_unavailable()
    if problem:
        click.echo(f"error: {problem}", err=True)
        sys.exit(2)
    from qoslab import live_leftovers

    t0 = time.monotonic()
    stopped_by = _stop_on_signals()
    sc = load(scenario).with_overrides(_overrides(sets))
    name = safe_name(sc.name, file=sc.file)
    dest = out if out is not None else Path("results") / f"{name}-live"
    check_data(sc, sc.data)
    swept = live_leftovers.sweep()
    for line in live_leftovers.sweep_text(swept):
        click.echo(line, err=True)
    created = not os.path.lexists(dest)
    prepare_output(dest, "run")
    if repeat is not None:
        from qoslab.live_repeat import repeat_text, run_repeats

        base = sc.seed if seed is None else seed
        try:
            summ = run_repeats(sc, repeat, base, twin, dest, click.echo)
        except BaseException:
            if stopped_by:
                sig = signal.Signals(stopped_by[0]).name
                click.echo(
                    f"{sc.name} (live): stopped by {sig} after {time.monotonic() - t0:.1f} s; "
                    "its agents and namespaces are removed; the finished repeats are kept",
                    err=True,
                )
                sys.exit(128 + stopped_by[0])
            raise
        for w in summ.summary.get("warnings") or []:
            click.echo(f"warning: {w}", err=True)
        click.echo(repeat_text(summ.table("repeat_ci")))
        click.echo(f"results: {dest}")
        return
    try:
        stage = new_stage(dest / OWN, "run")
    except OSError as e:
        raise os_error(dest, e) from None
    try:
        with live_leftovers.registered([stage]):
            res = live_(sc, None, seed, work_dir=stage / "live", twin=twin)
        for k in ("namespaces", "staging"):
            res.summary[f"live_swept_{k}"] = swept[k] + res.summary.get(f"live_swept_{k}", [])
        res.summary["live_swept"] = len(res.summary["live_swept_namespaces"])
        save_run(dest, res, stage=stage)
    except BaseException:
        if stage.exists():
            remove_stage(stage)
        if stopped_by:
            if created:
                undo_prepare(dest, remove_dest=True)
            sig = signal.Signals(stopped_by[0]).name
            click.echo(
                f"{sc.name} (live): stopped by {sig} after {time.monotonic() - t0:.1f} s; "
                "its agents and namespaces are removed and no results were saved",
                err=True,
            )
            sys.exit(128 + stopped_by[0])
        raise
    s = res.summary
    verdict = "timing OK" if s.get("live_timing_ok") else "TIMING OUT OF BOUNDS"
    if not s.get("live_timing_ok") and s.get("live_timing_cause"):
        verdict += f" ({s['live_timing_cause']})"
    click.echo(
        f"{sc.name} (live): {verdict}: lateness p99 {s.get('live_lateness_p99_us', 0):.1f} µs, "
        f"p99.9 {s.get('live_lateness_p999_us', 0):.1f} µs (bounds 100 µs, 2 ms)"
    )
    for w in s.get("warnings") or []:
        click.echo(f"warning: {w}", err=True)
    if "live_programs" in res.tables:  # [[live.program]]: how each ended
        for p in res.table("live_programs").iter_rows(named=True):
            how = "stopped by qoslab" if p["stopped"] else "exited"
            click.echo(f"program {p['name']} (host {p['host']}): {how}, status {p['exit_code']}")
    flows = res.flows
    cols = [c for c in ("name", "kind", "src", "dst", "goodput_bps", "drops") if c in flows.columns]
    with __import__("polars").Config(tbl_rows=50, tbl_hide_dataframe_shape=True):
        click.echo(flows.select(cols))
        if twin:
            from qoslab.twin import twin_text

            s = res.summary
            d = s.get("twin_total_diff")
            diff = "not comparable: another congestion control" if d is None else f"{d:+.1%}"
            click.echo(
                "simulated twin (Linux-like TCP; goodput at Linux's payload per packet): "
                f"total {s['twin_total_sim_bps'] / 1e6:.3f} vs live "
                f"{s['twin_total_live_bps'] / 1e6:.3f} Mb/s ({diff}), "
                f"Jain {s['twin_jain_sim']:.3f} vs {s['twin_jain_live']:.3f}"
            )
            click.echo(twin_text(res.table("twin")))
            for n in s.get("twin_notes") or []:
                click.echo(f"note: {n}", err=True)
    click.echo(f"results: {dest}")


@cli.command(cls=_SweepCommand)
@click.argument("scenario", type=click.Path(path_type=Path))
@_set_opt
@click.option(
    "--case",
    "case_help",
    multiple=True,
    metavar="NAME KEY=VALUE …",
    help="A named case: the KEY=VALUE settings after NAME change together; every case "
    "is crossed with the grid and the seeds, as [sweep.cases] (repeatable; laid over it).",
)
@click.option(
    "--seeds",
    default=None,
    metavar="N|S1,S2,…",
    help="A number of seeds, or a list such as 1,5,9 or [1, 5, 9] (overrides [sweep]).",
)
@click.option(
    "--grid",
    "grids",
    multiple=True,
    metavar="KEY=V1,V2,…",
    help="Sweep a key path over values (repeatable): a comma list, or a TOML array for "
    'values holding commas, e.g. \'link.2.queue=[{kind="droptail",limit=20},{kind="red"}]\'.',
)
@click.option(
    "--workers",
    "-j",
    type=click.IntRange(min=1),
    default=None,
    help="Local processes (default: cores; 1 runs in this process).",
)
@click.option("--ray", default=None, metavar="auto|local|ADDRESS", help="Run on a Ray cluster.")
@click.option(
    "--out",
    "-o",
    type=click.Path(path_type=Path),
    default=None,
    help="Sweep folder (default results/<name>-sweep); rerun to resume.",
)
@click.option("--no-progress", is_flag=True, help="No progress bar.")
@click.option(
    "--max-wall",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="SECONDS",
    help="Stop a run after this much wall-clock time (a failed run; default no limit).",
)
@click.option("--report", is_flag=True, help="Also write report.html in the sweep directory.")
@click.option(
    "--prune",
    is_flag=True,
    help="Remove the runs in the folder that this plan does not hold (an earlier, different "
    "sweep into it; only the files qoslab wrote). Without it they are kept, and counted.",
)
def sweep(
    scenario: Path,
    sets,
    case_help,
    seeds,
    grids,
    workers,
    ray,
    out,
    no_progress,
    max_wall,
    report,
    prune,
) -> None:
    """Run SCENARIO over a grid of parameters and seeds (resumable).

    Cases: --case NAME KEY=VALUE … (repeatable) names settings that change together,
    e.g. --case fast flow.a.cbr.rate=2Mbps flow.b.cbr.rate=1Mbps --case slow …; each
    case is crossed with the grid and the seeds, its name is the case column.

    Interrupted (Ctrl-C), it says how many runs are kept: the same command resumes."""
    from qoslab.checking import check_warnings
    from qoslab.scenario import load
    from qoslab.store import safe_name
    from qoslab.sweep import install_sigterm_handler, run_sweep

    install_sigterm_handler()
    sc = load(scenario)
    name = safe_name(sc.name, file=sc.file)  # refused even with -o, as `check` does
    base = sc.with_overrides(_overrides(sets))
    res = run_sweep(
        sc,
        out if out is not None else Path("results") / f"{name}-sweep",
        seeds=_seeds(seeds),
        grid=_grid(grids),
        cases=click.get_current_context().meta.get("qoslab_cases") or None,
        overrides=_overrides(sets),
        workers=workers,
        ray=ray,
        progress=not no_progress,
        log=lambda m: click.echo(m, err=True),
        max_wall=max_wall,
        prune=prune,
    )
    click.echo(res.line())
    click.echo(f"flows: {_flow_count(base.data)}")
    _echo_summary(res.out)
    _warn(check_warnings(base), sc.file)
    for f in res.failures[:5]:
        click.echo(
            f"  failed {f['key']} seed={f['seed']} {f['params']}: {f['error_type']}: {f['error']}"
        )
    if report:
        from qoslab.report import write_report

        click.echo(f"report: {write_report(res.out)}")
    if res.failed:
        sys.exit(1)


def _echo_summary(out: Path) -> None:
    """A sweep's goodput per flow group and per DiffServ class (mean and 95 % interval
    across seeds, per grid point), as `qoslab run` prints its flows; per flow when the
    scenario has neither groups nor classes."""
    import polars as pl

    tables = [("summary_groups", "group"), ("summary_classes", "class")]
    found = [(t, k) for t, k in tables if (out / f"{t}.parquet").is_file()]
    if not found and (out / "summary.parquet").is_file():
        found = [("summary", "flow")]
    for table, key in found:
        df = pl.read_parquet(out / f"{table}.parquet")
        # The grid point, the group (class, flow) and seeds, then goodput and share.
        lead = [c for c in df.columns if c != "n" and not c.endswith(("_mean", "_std", "_ci95"))]
        metrics = ("goodput_bps_mean", "goodput_bps_ci95", "share_mean")
        cols = [*lead, *[c for c in ("n", *metrics) if c in df.columns]]
        click.echo(f"goodput by {key} ({table}):")
        _echo_table(df.select(cols))


def _sql_hint(query: str, error: str) -> str:
    """What to do about a failed catalog query, or ``""``: a column named by an SQL
    reserved word (``case``, ``group``) written bare, or a run's files missing."""
    import re

    from qoslab.sweep import SQL_ALIASES

    if "No files found" in error:
        return (
            " (a run's files are missing from the sweep folder: running the same sweep "
            "again redoes damaged runs)"
        )
    if "syntax error" not in error.lower() and "parser error" not in error.lower():
        return ""
    bare = re.sub(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"", " ", query)  # no quoted text
    words = [w.lower() for w in re.findall(r"[A-Za-z_][A-Za-z_0-9]*", bare)]
    found = []
    for i, w in enumerate(words):
        after = words[i + 1 : i + 3]
        if w not in SQL_ALIASES or w in found:
            continue
        if (w == "group" and after[:1] == ["by"]) or (w == "case" and "when" in after):
            continue  # GROUP BY, CASE … WHEN: the keywords themselves
        found.append(w)
    if not found:
        return ""
    quoted = " and ".join(f'"{w}"' for w in found)
    plain = " and ".join(SQL_ALIASES[w] for w in found)
    are = "are SQL reserved words" if len(found) > 1 else "is an SQL reserved word"
    return (
        f" (hint: {' and '.join(found)} {are}; as column names write them in double "
        f"quotes, {quoted}, or use {plain})"
    )


@cli.command()
@click.argument("directory", type=click.Path(path_type=Path))
@click.argument("query", required=False)
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV (every row), for other tools.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON lines (every row).")
@click.option("--all", "all_rows", is_flag=True, help="Print every row and column as a table.")
@click.option(
    "--shell", is_flag=True, help="Open the catalog in DuckDB's own client (as qoslab duckdb)."
)
def sql(
    directory: Path, query: str | None, as_csv: bool, as_json: bool, all_rows: bool, shell: bool
) -> None:
    """Run an SQL QUERY over the catalog of the sweep folder DIRECTORY (tables runs,
    summary and the summary_* tables; flows, series, drops, queues, queue_samples,
    traces, colours, … with run, seed and the swept parameters as columns; a swept
    value with a unit has a numeric companion, link.0.rate_bps or …_s, to sort by).

    As a table (the first 100 rows unless --all) followed by the row count, or every
    row as CSV (--csv) or JSON lines (--json). The columns case and group are SQL
    reserved words: write "case" and "group" (double quotes) or case_name and
    flow_group."""
    import duckdb
    import polars as pl

    from qoslab.sweep import open_catalog

    if shell:
        if query is not None:
            raise click.UsageError("--shell opens the client; give no QUERY with it")
        _duckdb_shell(directory)
    if query is None:
        raise click.UsageError("missing the QUERY (or --shell to open the DuckDB client)")
    if as_csv and as_json:
        raise QoslabError("give one of --csv and --json")
    con = open_catalog(directory)
    try:
        df = pl.from_arrow(con.sql(query).to_arrow_table())
    except duckdb.Error as e:
        msg = str(e).strip()
        raise QoslabError(f"the query failed: {msg}{_sql_hint(query, msg)}") from None
    finally:
        con.close()
    assert isinstance(df, pl.DataFrame)
    if as_csv:
        click.echo(df.write_csv(), nl=False)
        return
    if as_json:
        click.echo(df.write_ndjson(), nl=False)
        return
    n = -1 if all_rows else 100
    with pl.Config(
        tbl_rows=n,
        tbl_cols=-1,
        tbl_hide_dataframe_shape=True,
        fmt_str_lengths=60,
        tbl_width_chars=10_000,
        tbl_formatting="ASCII_MARKDOWN",
        tbl_hide_column_data_types=True,
    ):
        click.echo(df)
    more = "" if all_rows or df.height <= 100 else " (the first 100 shown; --all for every row)"
    click.echo(f"{df.height} row{'s' if df.height != 1 else ''}{more}")


def _duckdb_shell(directory: Path) -> None:
    """Replaces this process with DuckDB's command-line client on the catalog of the
    sweep folder ``directory``, read-only, with the runs' files found from anywhere."""
    import shutil

    from qoslab.sweep import open_catalog

    open_catalog(directory).close()  # a sweep folder, with its catalog (or the error)
    here = Path(sys.executable).parent / "duckdb"
    exe = str(here) if here.is_file() else shutil.which("duckdb")
    if exe is None:
        raise QoslabError(
            "DuckDB's command-line client (duckdb) is not installed: `pip install "
            f"duckdb-cli`, or query with `qoslab sql {directory} QUERY`"
        )
    folder = str(directory.resolve()).replace("'", "''")
    sys.stdout.flush()
    os.execv(
        exe,
        [
            exe,
            "-readonly",
            "-cmd",
            f"SET file_search_path = '{folder}'",
            str(directory / "catalog.duckdb"),
        ],
    )


@cli.command(name="duckdb")
@click.argument("directory", type=click.Path(path_type=Path))
def duckdb_(directory: Path) -> None:
    """Open the catalog of the sweep folder DIRECTORY in DuckDB's own client, read-only,
    from any folder (the catalog names the runs' files relative to the sweep folder,
    which a plain `duckdb DIR/catalog.duckdb` opened elsewhere does not find)."""
    _duckdb_shell(directory)


@cli.command()
@click.argument("names", nargs=-1)
@click.option(
    "--all",
    "all_",
    is_flag=True,
    help="Every registered experiment except the live ones (add --live, or name them).",
)
@click.option(
    "--live",
    "live_",
    is_flag=True,
    help="With --all, also the live experiments (p0-live, p1-live, p3-live, p4-live: root "
    "and /dev/net/tun, real time; about 54 minutes in quick mode). Without live mode they "
    "are reported as skipped.",
)
@click.option("--quick", is_flag=True, help="Fewer seeds, shorter runs.")
@click.option(
    "--full",
    "full",
    multiple=True,
    metavar="PREFIX",
    help="With --quick, still run experiments whose name starts with PREFIX in full mode "
    "(repeatable, e.g. --full p0-).",
)
@click.option(
    "--paper-only",
    is_flag=True,
    help="Only the papers' own configurations: skip qoslab's extra runs that explain "
    "a difference (P1: the tables rerun under the paper's eq. 1).",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Also exit with 1 when a comparison or ablation is outside or a tie.",
)
@click.option("--out", "-o", type=click.Path(path_type=Path), default=Path("results/reproduce"))
@click.option("--workers", "-j", type=int, default=None)
@click.option("--ray", default=None, metavar="auto|local|ADDRESS")
def reproduce(names, all_, live_, quick, full, paper_only, strict, out, workers, ray) -> None:
    """Reproduce paper experiments (NAMES, or --all) and write the report.

    Exits with 1 when an experiment fails (raises); a result outside the paper's
    reference is a finding, reported with its evidence, and exits with 1 only under
    --strict."""
    from qoslab.report import write_report
    from qoslab.reproduce import discover, run_experiments
    from qoslab.sweep import install_sigterm_handler

    install_sigterm_handler()  # SIGTERM stops the workers as Ctrl-C does
    if not names and not all_:
        raise click.UsageError("name experiments or pass --all (see `qoslab list`)")
    if live_ and not all_:
        raise click.UsageError("--live goes with --all (name a live experiment to run it alone)")
    reg = discover()
    chosen = list(names) if not all_ else (list(reg) if live_ else None)
    if not reg:
        click.echo(
            "no paper experiments are registered yet (they are added as "
            "python/qoslab/reproduce/p0.py … p4.py); writing an empty report."
        )
    idx = run_experiments(
        chosen,
        out,
        quick=quick,
        workers=workers,
        ray=ray,
        log=click.echo,
        full=full,
        paper_only=paper_only,
    )
    _print_comparisons(idx["experiments"])
    from qoslab.reproduce import summarize

    summ = summarize(idx)
    click.echo(summary_line(summ))
    click.echo(f"report: {write_report(out).resolve()}")
    if summ["experiments"]["failed"] or (strict and not summ["ok"]):
        sys.exit(1)


def summary_line(summ: dict) -> str:
    """One line of counts over a reproduction: experiments per status, comparisons and
    ablations per verdict (ties apart from outsides)."""
    st, cv, ab = summ["experiments"], summ["comparisons"], summ.get("ablations", {})
    line = (
        f"experiments: {st['within']} within, {st['outside-explained']} outside but explained, "
        f"{st.get('tie', 0)} tie, {st['outside']} outside, {st['failed']} failed; "
        f"comparisons: {cv['within']} within, {cv['outside-explained']} outside-explained "
        f"(counterfactual confirmed), {cv.get('tie', 0)} tie, {cv['outside']} outside, "
        f"{cv.get('not-judged', 0)} not judged in quick mode, {cv['info']} without reference"
    )
    if any(ab.values()):
        line += (
            f"; ablations: {ab.get('within', 0)} within (the effect falls without its "
            f"mechanism), {ab.get('tie', 0)} tie, {ab.get('outside', 0)} outside"
        )
        if ab.get("not-judged"):
            line += f", {ab['not-judged']} not judged in quick mode"
    return line


def _fmt(x: object) -> str:
    if isinstance(x, float):
        return f"{x:.4g}"
    return "—" if x is None else str(x)


def _print_rows(rows: list[dict]) -> None:
    """The comparison rows of one experiment, aligned, with explanations."""
    from qoslab.reproduce import counterfactual_outcome

    width = min(60, max(len(r["quantity"]) for r in rows))
    refw = min(36, max(len(r.get("reference") or _fmt(r.get("paper"))) for r in rows))
    click.echo(f"  {'quantity':<{width}}  {'ours':>10}  {'reference':<{refw}}  unit  verdict")
    for r in rows:
        q = r["quantity"] if len(r["quantity"]) <= width else r["quantity"][: width - 1] + "…"
        ref = r.get("reference") or _fmt(r.get("paper"))
        ref = ref if len(ref) <= refw else ref[: refw - 1] + "…"
        verdict = r.get("verdict", "info")
        click.echo(
            f"  {q:<{width}}  {_fmt(r['ours']):>10}  {ref:<{refw}}  "
            f"{r.get('unit', '') or '-'}  {verdict}"
        )
        ex = r.get("explanation")
        if verdict in ("outside-explained", "outside") and ex:
            click.echo(
                f"      why: {ex['why']} (see {ex['doc']}"
                + (f"; {ex['script']}" if ex.get("script") else "")
                + ")"
            )
            cf = ex.get("counterfactual")
            if cf:
                landed = counterfactual_outcome(ex)
                click.echo(f"      counterfactual: {cf['change']} → {_fmt(cf['value'])} ({landed})")


def _print_comparisons(experiments: list[dict]) -> None:
    """Our numbers beside what they are compared against, with verdicts, one block per
    experiment, on the terminal."""
    from qoslab.reproduce import count_verdicts, experiment_status

    for e in experiments:
        rows = e.get("comparisons") or []
        n = count_verdicts(rows)
        status = experiment_status(e)
        counts = ", ".join(f"{v} {k}" for k, v in n.items() if v)
        click.echo(
            f"\n{e['name']} — {e.get('title', '')} [{status}{': ' if counts else ''}{counts}]"
        )
        if e.get("status") == "failed":
            click.echo(f"  {e.get('error', '')}")
        if e.get("status") == "skipped":
            click.echo(f"  skipped: {e.get('reason', '')}")
        if rows:
            _print_rows(rows)
        for a in e.get("ablations") or []:
            click.echo(
                f"  ablation: {a['claim']} — without {a['mechanism']} ({a['twin']}): "
                f"{a['quantity']} {_fmt(a['effect_with'])} → {_fmt(a['effect_without'])} "
                f"(falls {_fmt(a['fall'])}, needs ≥ {_fmt(a['falls_by'])}) {a['verdict']}"
            )
        for rd in e.get("readings") or []:
            vs = count_verdicts(rd["comparisons"])
            counts = ", ".join(f"{v} {k}" for k, v in vs.items() if v)
            head = " (headline)" if rd["headline"] else ""
            click.echo(f"  reading {rd['knob']}={rd['reading']}{head}: {counts}")
    click.echo("")


@cli.command()
@click.argument("directory", type=click.Path(path_type=Path))
@click.option(
    "--out",
    "-o",
    type=click.Path(path_type=Path),
    default=None,
    help="HTML file (default DIRECTORY/report.html).",
)
@click.option(
    "--formats",
    default=None,
    metavar="LIST",
    help="Figure files to write, comma-separated, of svg, png, pdf (default svg; a "
    "reproduction svg,png). The page shows the SVG, else the PNG.",
)
def report(directory: Path, out: Path | None, formats: str | None) -> None:
    """Write the HTML report for a run, sweep or reproduction directory (a reproduction:
    an index page, one page per experiment); prints the (index) page's path."""
    from qoslab.report import check_formats, write_report

    fmts = None
    if formats is not None:
        try:
            fmts = check_formats([f.strip().lower() for f in formats.split(",") if f.strip()])
        except ValueError as e:
            raise click.UsageError(f"--formats: {e}") from None
    click.echo(write_report(directory, out, fmts))


@cli.command()
@click.argument("scenario", type=click.Path(path_type=Path))
@_set_opt
@click.option(
    "--out",
    "-o",
    type=click.Path(path_type=Path),
    default=None,
    help="SVG file (default <scenario name>-topology.svg in the current folder).",
)
def draw(scenario: Path, sets: tuple[str, ...], out: Path | None) -> None:
    """Draw SCENARIO's topology (SVG, or PNG or PDF by -o's suffix): nodes, links
    (rate, delay, queue kind), conditioners and captures where they sit, flows as
    coloured paths. Never over a file qoslab did not write."""
    from qoslab.checking import check as check_
    from qoslab.store import safe_name
    from qoslab.topology import write_topology

    sc = check_(scenario, _overrides(sets))
    dest = out if out is not None else Path(f"{safe_name(sc.name, file=sc.file)}-topology.svg")
    click.echo(write_topology(sc.data, dest))


@cli.command(name="plot")
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--x", "x", required=True, metavar="COL", help="Column on the x axis.")
@click.option("--y", "y", required=True, metavar="COL", help="Numeric column on the y axis.")
@click.option("--by", default=None, metavar="COL", help="One line per value of this column.")
@click.option("--table", default=None, metavar="T", help="Table to read (default flows).")
@click.option(
    "--kind",
    type=click.Choice(["auto", "line", "scatter"]),
    default="auto",
    help="auto: a line over a numeric x, points over text.",
)
@click.option(
    "--out",
    "-o",
    type=click.Path(path_type=Path),
    default=None,
    help="Image file, .png, .svg or .pdf (default <table>-<y>-vs-<x>.png here).",
)
def plot_(
    directory: Path,
    x: str,
    y: str,
    by: str | None,
    table: str | None,
    kind: str,
    out: Path | None,
) -> None:
    """Plot column Y against column X of a table of the run or sweep folder DIRECTORY,
    one line per value of --by; where several rows share an x (seeds, flows), their
    mean with a 95 % confidence bar. Prints the image's path."""
    import re

    from qoslab.quickplot import DEFAULT_TABLE, quick_plot, write_plot

    fig = quick_plot(directory, x, y, by=by, table=table, kind=kind)
    name = re.sub(r"[^A-Za-z0-9_.+-]", "_", f"{table or DEFAULT_TABLE}-{y}-vs-{x}")
    click.echo(write_plot(fig, out if out is not None else Path(f"{name}.png")))


@cli.command(name="trc-table", context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def trc_table(args: tuple[str, ...]) -> None:
    """P1's TRC parameters per requested rate (the paper's Fig. 4); see --help of
    `python -m qoslab.trc` for the options (RATES…, --mss, --rtt-net, --model, …)."""
    from qoslab.trc import main as trc_main

    trc_main(list(args))


@cli.group(name="trc")
def trc_group() -> None:
    """P1's TCP Rate Controller: fit its TCP model to any TCP settings."""


@trc_group.command(name="fit")
@click.option("--tcp", "tcp_text", default="{}", show_default=True,
              help="The flow's tcp table, inline TOML, e.g. '{ delayed_ack = true }'.")  # fmt: skip
@click.option("--name", default=None, help="Model name (default from the settings).")
@click.option("--out", "-o", type=click.Path(path_type=Path), default=None,
              help="Model file (.toml) or folder; default the model store.")  # fmt: skip
@click.option("--ecn", is_flag=True, help="Also fit the ECN-mode law.")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
@click.option("--rtt-dev", "rtt_dev_text", default="10ms", show_default=True,
              help="The TRCs' rtt_dev: with drops, the fit's TRC leads retransmissions "
                   "when the TCP's clock granularity is at most this.")  # fmt: skip
def trc_fit(
    tcp_text: str,
    name: str | None,
    out: Path | None,
    ecn: bool,
    no_progress: bool,
    rtt_dev_text: str,
) -> None:
    """Fit a TRC model for a flow with these TCP settings (seconds to a minute), store
    it and print the line that names it on a TRC stage."""
    from qoslab.trc import _dur_s

    try:
        rtt_dev = _dur_s(rtt_dev_text)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--rtt-dev") from e
    import shlex

    import tomllib

    from qoslab.trc import fit

    try:
        tcp = tomllib.loads(f"tcp = {tcp_text}")["tcp"]
    except tomllib.TOMLDecodeError as e:
        raise click.BadParameter(f"not an inline TOML table: {e}", param_hint="--tcp") from e
    cmd = "qoslab trc fit --tcp " + shlex.quote(tcp_text) + (" --ecn" if ecn else "")
    if rtt_dev_text != "10ms":
        cmd += " --rtt-dev " + shlex.quote(rtt_dev_text)
    try:
        path = fit(tcp, name=name, out=out, ecn=ecn, progress=not no_progress, command=cmd,
                   rtt_dev=rtt_dev)  # fmt: skip
    except FileExistsError as e:
        raise click.BadParameter(str(e), param_hint="--out") from e
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--tcp") from e
    click.echo(f'{path}\nname it on the TRC stage: model = "{path}"')


@cli.command(name="list")
def list_() -> None:
    """List registered paper experiments and the scenario files under scenarios/."""
    from qoslab.reproduce import discover, scenarios_dir

    reg = discover()
    click.echo(f"experiments ({len(reg)}):")
    for e in reg.values():
        click.echo(f"  {e.name:20s} {e.title}" + (f"  [{e.paper}]" if e.paper else ""))
    if not reg:
        click.echo("  (none registered yet: add python/qoslab/reproduce/p0.py … p4.py)")
    sd = scenarios_dir()
    files = sorted(sd.rglob("*.toml")) if sd.is_dir() else []
    click.echo(f"scenarios ({len(files)}) in {sd}:")
    for f in files:
        click.echo(f"  {f.relative_to(sd)}")


def main(argv: list[str] | None = None) -> None:
    """Console entry point."""
    try:
        cli.main(args=argv, prog_name="qoslab")
    except BrokenPipeError:
        _closed_pipe()


if __name__ == "__main__":  # pragma: no cover
    main()

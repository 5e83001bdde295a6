"""The Python API: ``run`` one scenario (``check`` is in :mod:`qoslab.checking`)."""

from __future__ import annotations

import math
import numbers
import os
import re
import shutil
import socket
import sys
import tempfile
import time
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from qoslab import _core
from qoslab.exceptions import ScenarioError, scenario_error
from qoslab.scenario import (
    Scenario,
    check_seed,
    expand_flow_groups,
    expand_flows,
    load,
    run_key,
    to_json,
)
from qoslab.store import Result

__all__ = ["example", "live", "live_unavailable", "run", "run_resolved"]

ScenarioLike = str | Path | Mapping[str, Any] | Scenario


# The engine reports serde positions in the JSON we sent it, which mean nothing to a
# user looking at their TOML file; the key path says where the problem is.
_JSON_POS = re.compile(r" at line \d+ column \d+$")


def _engine_error(sc: Scenario, e: ScenarioError) -> ScenarioError:
    detail = _JSON_POS.sub("", getattr(e, "detail", str(e)))
    return scenario_error(sc.file, getattr(e, "key", ""), detail)


def run(
    scenario: ScenarioLike,
    overrides: Mapping[str, Any] | None = None,
    seed: int | None = None,
    *,
    pcap_dir: str | Path | None = None,
    max_wall: float | None = None,
) -> Result:
    """Runs one scenario and returns its :class:`~qoslab.Result`.

    Args:
      scenario: a TOML file path, a dict with the same structure, or a ``Scenario``.
      overrides: ``{key path: value}``, e.g. ``{"link.0.rate": "5Mbps",
        "flow.cbr1.cbr.rate": "2Mbps"}`` (list entries by index or by name).
      seed: overrides the scenario's ``seed``.
      pcap_dir: where ``[[capture]]`` files go (default: a temporary folder that lives as
        long as the result; ``Result.save`` copies them into the run's ``pcap/``).
      max_wall: stop the run after this many seconds of wall-clock time
        (``SimulationError``); default no limit (``max_events`` in the scenario bounds
        the simulated work).

    Raises:
      ScenarioError: the scenario (or an override) is not valid; the message names the
        file and the key path.
      SimulationError: the run failed.
    """
    sc = load(scenario).with_overrides(overrides)
    if pcap_dir is not None and not isinstance(pcap_dir, (str, os.PathLike)):
        raise scenario_error(
            sc.file,
            "",
            f"the argument pcap_dir must be a folder path, found a {type(pcap_dir).__name__}",
        )
    return run_resolved(
        sc,
        sc.seed if seed is None else check_seed(seed, sc.file),
        Path(pcap_dir) if pcap_dir else None,
        max_wall=check_max_wall(max_wall),
    )


def check_max_wall(value: Any) -> float | None:
    """``value`` as a wall-clock limit in seconds (``None``: no limit); anything but a
    positive finite number raises :class:`~qoslab.ScenarioError` naming ``max_wall``."""
    if value is None:
        return None
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        v = float(value)
        if math.isfinite(v) and v > 0:
            return v
    raise scenario_error(
        None, "", f"the argument max_wall must be a positive number of seconds, found {value!r}"
    )


def run_resolved(
    sc: Scenario, seed: int, pcap_dir: Path | None = None, max_wall: float | None = None
) -> Result:
    """Runs an already-loaded scenario with an explicit seed (what sweeps call).

    A scenario with ``[[capture]]`` entries has its pcap files written to ``pcap_dir``
    (a run's staging folder), or without one to a temporary folder that lives as long as
    the result (``Result.pcap_dir``; ``Result.save`` copies it into the run as ``pcap/``).
    The ``captures`` table names the files relative to the run (``pcap/ab.pcap``).
    """
    seed = check_seed(seed, sc.file)
    data = dict(sc.data)
    data["seed"] = seed
    tmp = None
    if data.get("capture") and pcap_dir is None:
        tmp = tempfile.mkdtemp(prefix="qoslab-pcap-")
        pcap_dir = Path(tmp) / "pcap"
    engine_data, groups, extra = expand_flows(data, sc.file)
    t0 = time.perf_counter()
    try:
        raw = _core.run(
            to_json(engine_data),
            "json",
            int(seed),
            str(pcap_dir) if data.get("capture") else None,
            max_wall,
        )
    except ScenarioError as e:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        raise _engine_error(sc, e) from None
    except BaseException:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    wall = time.perf_counter() - t0
    res = Result.from_engine(raw, data)
    if groups:
        res.add_groups(groups)
    if extra:
        res.add_extra_delays(extra)
    if data.get("capture"):
        res.pcap_dir = Path(pcap_dir)
        if tmp is not None:
            # Removed when the result is (or at exit): nothing is left in /tmp.
            res.pcap_cleanup = weakref.finalize(res, shutil.rmtree, tmp, True)
        caps = res.tables.get("captures")
        if caps is not None and "file" in caps.columns:
            base = Path(pcap_dir)
            res.tables["captures"] = caps.with_columns(
                pl.col("file").map_elements(
                    lambda f: "pcap/" + Path(f).relative_to(base).as_posix(),
                    return_dtype=pl.String,
                )
            )
    res.summary.setdefault("wall_s", wall)
    res.summary["call_s"] = wall
    res.summary["scenario_hash"] = run_key(data, seed)
    res.summary["seed"] = int(seed)
    res.summary["qoslab_version"] = __import__("qoslab").__version__
    res.summary["engine_build"] = _core.build_id()
    # The machine that ran it (with Ray: which node ran what).
    res.summary["host"] = socket.gethostname()
    if sc.file:
        res.summary["scenario_file"] = sc.file
    return res


def add_twin(res: Result, data: Mapping[str, Any], seed: int) -> Result:
    """Runs the simulated twin of the live run ``res`` (scenario ``data``, ``seed``) and
    adds the ``twin`` and ``twin_series`` tables, the ``twin_*`` summary entries and
    ``res.twin``."""
    from qoslab.twin import twin_data, twin_series, twin_table

    tdata, notes = twin_data(data)
    sim = run(tdata, seed=seed)
    table, summary = twin_table(data, res.flows, sim.flows)
    res.tables["twin"] = table
    if "series" in res.tables and "series" in sim.tables:
        res.tables["twin_series"] = twin_series(data, res.flows, res.series, sim.flows, sim.series)
    res.summary.update(summary)
    res.summary["twin_wall_s"] = sim.summary.get("wall_s")
    if notes:
        res.summary["twin_notes"] = notes
    res.twin = sim
    return res


def check_data(sc: Scenario, data: Mapping[str, Any]) -> None:
    """Validates resolved scenario ``data`` (of ``sc``) with the engine, without running."""
    try:
        _core.check(to_json(expand_flow_groups(data, sc.file)[0]), "json")
    except ScenarioError as e:
        raise _engine_error(sc, e) from None


def live_unavailable() -> str | None:
    """What live mode lacks on this machine (root, ``/dev/net/tun``, Linux), or ``None``."""
    missing = []
    if not sys.platform.startswith("linux"):
        return "live mode needs Linux (network namespaces and TUN devices)"
    if os.geteuid() != 0:
        missing.append("root (namespaces and TUN devices need CAP_NET_ADMIN and CAP_SYS_ADMIN)")
    if not os.path.exists("/dev/net/tun"):
        missing.append("/dev/net/tun")
    if shutil.which("ip") is None:
        missing.append("the `ip` command (iproute2)")
    return "live mode needs " + " and ".join(missing) if missing else None


def live(
    scenario: ScenarioLike,
    overrides: Mapping[str, Any] | None = None,
    seed: int | None = None,
    *,
    work_dir: str | Path | None = None,
    twin: bool = False,
) -> Result:
    """Runs one scenario live: real Linux TCP and UDP between network namespaces, through
    qoslab's own links, queues and conditioners driven by the wall clock.

    Needs root and ``/dev/net/tun`` (``PermissionError`` saying what is missing
    otherwise). The result has the usual tables (``flows`` goodput from the sinks,
    ``drops``, ``queues``, ``colours``, …) plus ``live_timing`` (how late the datapath
    ran its events), ``live_hosts``, ``live_conns`` (traffic of none of the scenario's
    flows, per 5-tuple), ``live_sysctl`` and ``live_ping`` (and ``live_programs`` with
    ``[[live.program]]``); the summary's ``live_timing_ok`` is false when p99 lateness
    exceeds 100 µs or p99.9 exceeds 2 ms, or the datapath ran short of CPU or of a
    configured rate (``live_timing_cause`` says which). A scenario whose peak packet rate
    exceeds ``[live] max_pps`` raises ``ScenarioError`` naming the link before the run.
    With ``[live] pcap = true`` the delivered packets are in ``result.pcap_dir``
    (``datapath.pcap``; ``Result.save`` copies it into the run's ``pcap/``).

    With ``twin=True`` the same scenario then runs in the simulator with qoslab's TCP set
    as close to Linux's as it goes (SACK + PRR, IW 10, 40 ms delayed ACKs, the same
    1500-byte packets; :mod:`qoslab.twin`): the result gains a ``twin`` table (per flow
    and in total, live vs simulated goodput, drops, retransmits), ``twin_*`` summary
    entries (totals, their difference, Jain's index of each) and ``result.twin``, the
    simulated run itself.
    """
    problem = live_unavailable()
    if problem:
        raise PermissionError(problem)
    sc = load(scenario).with_overrides(overrides)
    seed = sc.seed if seed is None else check_seed(seed, sc.file)
    data = dict(sc.data)
    data["seed"] = seed
    agent = [sys.executable, "-m", "qoslab.live_agent"]
    from qoslab import live_leftovers
    from qoslab.live_checks import ignored_tcp_warnings

    swept = live_leftovers.sweep()  # what killed runs left (the engine's sweep finds none)
    tmp = None
    if work_dir is None:
        tmp = tempfile.mkdtemp(prefix=live_leftovers.TMP_PREFIX)
        live_leftovers.owner_marker(tmp)
        work_dir = tmp
    t0 = time.perf_counter()
    kept = None
    try:
        with live_leftovers.registered([tmp] if tmp is not None else []):
            raw = _core.live(to_json(data), agent, "json", int(seed), str(work_dir))
        pcap = Path(work_dir) / "pcap"
        if tmp is not None and pcap.is_dir():
            # `[live] pcap`: kept as long as the result (Result.save copies it to pcap/).
            kept = tempfile.mkdtemp(prefix="qoslab-pcap-")
            shutil.move(str(pcap), Path(kept) / "pcap")
            pcap = Path(kept) / "pcap"
    except ScenarioError as e:
        raise _engine_error(sc, e) from None
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    res = Result.from_engine(raw, data)
    if pcap.is_dir():
        res.pcap_dir = pcap
        if kept is not None:
            res.pcap_cleanup = weakref.finalize(res, shutil.rmtree, kept, True)
    res.summary["warnings"] = list(res.summary.get("warnings") or []) + ignored_tcp_warnings(data)
    res.summary["live_swept"] = len(swept["namespaces"]) + int(res.summary.get("live_swept") or 0)
    res.summary["live_swept_namespaces"] = swept["namespaces"]
    res.summary["live_swept_staging"] = swept["staging"]
    res.summary["call_s"] = time.perf_counter() - t0
    res.summary["seed"] = int(seed)
    res.summary["scenario_hash"] = run_key(data, seed)
    res.summary["qoslab_version"] = __import__("qoslab").__version__
    res.summary["engine_build"] = _core.build_id()
    # The machine that ran it (with Ray: which node ran what).
    res.summary["host"] = socket.gethostname()
    if sc.file:
        res.summary["scenario_file"] = sc.file
    if twin:
        add_twin(res, data, seed)
    return res


def example(name: str) -> Path:
    """The path of a packaged scenario, found through the installed package (so a
    script or notebook runs from any working folder): ``name`` is an example's name
    (``"tcp_dumbbell"`` or ``"tcp_dumbbell.toml"``, under ``examples/``) or a path
    under the packaged scenarios (``"p3/rtt-rto.toml"``).

    Raises:
      ScenarioError: no packaged scenario is called ``name`` (the message lists the
        examples).
    """
    from importlib.resources import files

    if not isinstance(name, str) or not name:
        raise scenario_error(None, "", f"the argument name must be a scenario name, found {name!r}")
    # As qoslab.reproduce.scenarios_dir finds them (not imported: it sits above this).
    env = os.environ.get("QOSLAB_SCENARIOS")
    res = Path(env) if env else files("qoslab") / "scenarios"
    if not isinstance(res, Path):  # imported from a zip file
        raise scenario_error(None, "", "the packaged scenarios are not files on disk here")
    root = res
    stem = name if name.endswith(".toml") else f"{name}.toml"
    for p in (root / "examples" / stem, root / stem):
        if p.is_file() and root.resolve() in p.resolve().parents:
            return p
    known = sorted(f.stem for f in (root / "examples").glob("*.toml"))
    raise scenario_error(
        None, "", f"no packaged scenario {name!r}; the examples are {', '.join(known)}"
    )

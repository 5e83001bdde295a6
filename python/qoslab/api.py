"""The Python API: ``run`` and ``check`` one scenario."""

from __future__ import annotations

import re
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from qoslab import _core
from qoslab.exceptions import ScenarioError, scenario_error
from qoslab.scenario import Scenario, load, run_key, to_json
from qoslab.store import Result

__all__ = ["check", "run", "run_resolved"]

ScenarioLike = str | Path | Mapping[str, Any] | Scenario


# The engine reports serde positions in the JSON we sent it, which mean nothing to a
# user looking at their TOML file; the key path says where the problem is.
_JSON_POS = re.compile(r" at line \d+ column \d+$")


def _engine_error(sc: Scenario, e: ScenarioError) -> ScenarioError:
    detail = _JSON_POS.sub("", getattr(e, "detail", str(e)))
    return scenario_error(sc.file, getattr(e, "key", ""), detail)


def run(
    scenario: ScenarioLike, overrides: Mapping[str, Any] | None = None, seed: int | None = None
) -> Result:
    """Runs one scenario and returns its :class:`~qoslab.Result`.

    Args:
      scenario: a TOML file path, a dict with the same structure, or a ``Scenario``.
      overrides: ``{key path: value}``, e.g. ``{"link.0.rate": "5Mbps",
        "flow.cbr1.cbr.rate": "2Mbps"}`` (list entries by index or by name).
      seed: overrides the scenario's ``seed``.

    Raises:
      ScenarioError: the scenario (or an override) is not valid; the message names the
        file and the key path.
      SimulationError: the run failed.
    """
    sc = load(scenario).with_overrides(overrides)
    return run_resolved(sc, sc.seed if seed is None else int(seed))


def run_resolved(sc: Scenario, seed: int) -> Result:
    """Runs an already-loaded scenario with an explicit seed (what sweeps call).

    A scenario with ``[[capture]]`` entries has its pcap files written to a temporary
    directory (``Result.pcap_dir``) that ``Result.save`` moves into the results as
    ``pcap/``.
    """
    data = dict(sc.data)
    data["seed"] = int(seed)
    pcap_dir = tempfile.mkdtemp(prefix="qoslab-pcap-") if data.get("capture") else None
    t0 = time.perf_counter()
    try:
        raw = _core.run(to_json(data), "json", int(seed), pcap_dir)
    except ScenarioError as e:
        raise _engine_error(sc, e) from None
    wall = time.perf_counter() - t0
    res = Result.from_engine(raw, data)
    res.pcap_dir = Path(pcap_dir) if pcap_dir else None
    res.summary.setdefault("wall_s", wall)
    res.summary["call_s"] = wall
    res.summary["scenario_hash"] = run_key(data, seed)
    res.summary["seed"] = int(seed)
    res.summary["qoslab_version"] = __import__("qoslab").__version__
    if sc.file:
        res.summary["scenario_file"] = sc.file
    return res


def check(scenario: ScenarioLike, overrides: Mapping[str, Any] | None = None) -> Scenario:
    """Validates a scenario without running it; returns the loaded ``Scenario``.

    Args:
      scenario: a TOML file path, a dict with the same structure, or a ``Scenario``.
      overrides: ``{key path: value}`` applied first, as for :func:`run`.

    Raises:
      ScenarioError: the scenario (or an override) is not valid; the message names the
        file and the key path.
    """
    sc = load(scenario).with_overrides(overrides)
    try:
        _core.check(to_json(sc.data), "json")
    except ScenarioError as e:
        raise _engine_error(sc, e) from None
    return sc

"""``check``: a scenario, its overrides and its ``[sweep]`` table validated without
running. It sits above :mod:`qoslab.api` (one run) and :mod:`qoslab.sweep` (which plans
the grid and runs through the API), so neither of those imports the other back."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from qoslab import _core
from qoslab.api import ScenarioLike, check_data
from qoslab.scenario import Scenario, check_seed, expand_flow_groups, load, to_json
from qoslab.store import safe_name
from qoslab.sweep import SweepSpec, plan

__all__ = ["check", "check_warnings"]


def check(scenario: ScenarioLike, overrides: Mapping[str, Any] | None = None) -> Scenario:
    """Validates a scenario without running it; returns the loaded ``Scenario``.

    The scenario's ``name`` (a folder name) and its ``[sweep]`` table are checked too:
    every grid point is resolved and validated.

    Args:
      scenario: a TOML file path, a dict with the same structure, or a ``Scenario``.
      overrides: ``{key path: value}`` applied first, as for :func:`run`.

    Raises:
      ScenarioError: the scenario (or an override) is not valid; the message names the
        file and the key path.
    """
    sc = load(scenario).with_overrides(overrides)
    safe_name(sc.name, file=sc.file)
    check_seed(sc.data.get("seed", 1), sc.file)  # the engine reads it as a u64 too
    check_data(sc, sc.data)
    if sc.sweep is not None:
        plan(sc, SweepSpec.from_scenario(sc))
    return sc


def check_warnings(sc: Scenario) -> list[str]:
    """The warnings the engine gives the (valid, checked) scenario ``sc`` before a run:
    a rate below 1 kb/s (a number without a unit is bit/s), a link delay as long as the
    run, …; the same lines a run puts into its summary's ``warnings``."""
    found = _core.check(to_json(expand_flow_groups(sc.data, sc.file)[0]), "json")
    return [str(w) for w in found or []]

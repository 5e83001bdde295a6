"""qoslab's exceptions.

``QoslabError`` > ``ScenarioError``, ``SimulationError`` come from the engine (raised
by Rust); ``ResultsError`` is raised by the Python side when a results file is
missing or corrupt.
"""

from __future__ import annotations

from qoslab._core import QoslabError, ScenarioError, SimulationError

__all__ = [
    "OutputError",
    "QoslabError",
    "ResultsError",
    "ScenarioError",
    "SimulationError",
    "scenario_error",
]


class ResultsError(QoslabError):
    """A results directory or file is missing, incomplete or corrupt; names the file."""


def scenario_error(file: str | None, key: str, detail: str) -> ScenarioError:
    """A :class:`ScenarioError` whose message reads ``file: key: detail``.

    ``file``, ``key`` and ``detail`` are kept as attributes so callers (the CLI) can
    format their own message.
    """
    parts = [p for p in (file, key) if p]
    err = ScenarioError(": ".join([*parts, detail]))
    err.file = file
    err.key = key
    err.detail = detail
    return err


class OutputError(ResultsError):
    """An output folder cannot be used (not empty and not qoslab's, a file, in use by
    another sweep, not writable); says why and what to do instead."""

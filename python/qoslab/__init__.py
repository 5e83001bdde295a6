"""qoslab: a packet-level network simulator for TCP traffic conditioning and service
differentiation. A Rust engine driven from Python.

>>> import qoslab
>>> r = qoslab.run("scenarios/two-cbr.toml", overrides={"link.0.rate": "5Mbps"})
>>> r.flows            # a polars DataFrame; r.to_arrow("flows") for pyarrow

Also: :func:`check`, :func:`load` (a run directory), :func:`run_sweep`,
:func:`example` (the path of a packaged scenario, from any working folder).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _dist_version

from qoslab import _core
from qoslab.api import example, run
from qoslab.checking import check
from qoslab.exceptions import (
    OutputError,
    QoslabError,
    ResultsError,
    ScenarioError,
    SimulationError,
)
from qoslab.scenario import Scenario
from qoslab.store import Result, load

try:
    __version__ = _dist_version("qoslab")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = _core.version()
from qoslab.sweep import run_sweep

__all__ = [
    "OutputError",
    "QoslabError",
    "Result",
    "ResultsError",
    "Scenario",
    "ScenarioError",
    "SimulationError",
    "__version__",
    "check",
    "example",
    "load",
    "run",
    "run_sweep",
]

"""The compiled engine (``crates/qoslab-py``): bindings only.

Users call :func:`qoslab.run`; this module is what it calls underneath.
"""

from typing import Any, Literal

__all__ = [
    "QoslabError",
    "ScenarioError",
    "SimulationError",
    "build_id",
    "check",
    "run",
    "trc_cycle",
    "trc_cycle_time",
    "trc_fitted_models",
    "trc_model_name",
    "trc_parameters",
    "version",
]

class QoslabError(Exception):
    """Base class of every error qoslab raises."""

class ScenarioError(QoslabError):
    """A scenario could not be read or is not valid.

    Attributes set by the engine (the Python side adds ``file``):
      key: the offending key path, e.g. ``"link[0].rate"``; ``""`` for whole-file errors.
      detail: what was wrong and what was expected, without the key.
    """

    key: str
    detail: str

class SimulationError(QoslabError):
    """A run failed after its scenario was accepted: an event budget exhausted, an
    internal invariant broken, or an engine panic (caught; never an abort)."""

def run(
    scenario: str,
    format: Literal["json", "toml"] = "json",
    seed: int | None = None,
    pcap_dir: str | None = None,
    max_wall: float | None = None,
) -> dict[str, Any]:
    """Parse, validate and run ``scenario`` (text in ``format``); ``seed`` overrides the
    file's; the scenario's ``[[capture]]`` pcap files are written into ``pcap_dir``
    (validated but not written when it is ``None``). The GIL is released while the
    engine runs; Ctrl-C stops the run within a few milliseconds and raises
    ``KeyboardInterrupt``.

    Returns ``{"summary": {...}, "tables": {name: {"names": [...], "columns": [...]}}}``
    where a numeric column is ``("i64" | "f64", bytes)`` (native-endian values, for
    ``numpy.frombuffer``) and a string column ``("str", distinct values, bytes)``, the
    bytes being one native-endian ``u32`` index into the distinct values per row.

    Raises:
      ScenarioError: the scenario is malformed or invalid.
      SimulationError: the run failed, or the engine panicked.
      ValueError: ``format`` is neither ``"json"`` nor ``"toml"``.
    """

def check(scenario: str, format: Literal["json", "toml"] = "json") -> list[str]:
    """Parse and validate ``scenario`` without running it; raises :class:`ScenarioError`.
    Returns the warnings known before a run (a rate without its unit, …)."""

def live(
    scenario: str,
    agent: list[str],
    format: Literal["json", "toml"] = "json",
    seed: int | None = None,
    work_dir: str | None = None,
) -> dict[str, Any]:
    """Run ``scenario`` live: hosts as network namespaces running ``agent`` (argv; its
    config file is appended), the datapath on the wall clock. Needs root and
    ``/dev/net/tun`` (``PermissionError`` saying what is missing otherwise)."""

def live_sweep() -> list[str]:
    """Remove the namespaces (and their processes) of live runs whose owner died;
    returns their names."""

def version() -> str:
    """The engine's version (the Rust crate's)."""

def build_id() -> str:
    """The engine's build id: version plus a hash of its sources, e.g. ``"0.1.0+3f…"``."""

def _panic_for_test() -> None:
    """Panic inside the run guard; always raises :class:`SimulationError`. For tests."""

def trc_parameters(
    rate: float,
    mss: int = 1460,
    rtt_net: float = 0.0,
    rtt_dev: float = 0.010,
    gput_error: float = 0.05,
    rtt_min: float | None = None,
    model: str = "fitted",
    ecn: bool = False,
    tcp: str | None = None,
    recovery_lead: float | None = None,
) -> dict[str, Any]:
    """P1's TRC parameters for a requested goodput ``rate`` [bit/s] (Figs. 2 and 3).

    Times in seconds; ``rtt_min`` is RTT*_min (default ``rtt_dev / gput_error``);
    ``recovery_lead`` ``None``: the TRC's default for ``tcp`` (RTT_min ≥ RTT_net + lead).
    Returns ``rate, target, rtt_min_star, rtt_min, w_max, p, e, drop_every, w_avg, rtt,
    rtt_trc, predicted, buffer, branch ("delay" | "rtt_min"), model, recovery_lead``.

    Raises:
      ValueError: an input is out of range, or no W_max reaches the rate.
    """

def trc_cycle_time(model: str, ecn: bool = False, tcp: str | None = None) -> tuple[float, float]:
    """``(a, b)`` of the model's eq. 1 (time per cycle = a + b·W_max [RTTs]) with drops
    or, ``ecn``, CE marks; ``model`` is ``"paper"``, ``"fitted"`` (the model fitted to
    the TCP settings ``tcp``, JSON; ``None``: qoslab's defaults) or a fitted model's name."""

def trc_cycle(
    model: str, w_max: float, ecn: bool = False, tcp: str | None = None, rtt: float | None = None
) -> float:
    """Time per cycle [RTTs] of a model at ``w_max`` (knots included) and total RTT ``rtt``
    [s] (for a law measured per RTT; ``None``: its smallest RTT), for TCP settings given
    as JSON."""

def trc_model_cycle(model: str, w_max: float, ecn: bool = False, rtt: float | None = None) -> float:
    """Time per cycle [RTTs] of a built-in model's own law at ``w_max`` (and total RTT
    ``rtt`` [s]; ``None``: its smallest RTT), matched to no flow's TCP: for tables of
    the models."""

def trc_model_name(tcp: str | None = None) -> str:
    """The name of the fitted model for TCP settings given as JSON, e.g.
    ``"newreno-flight-lt-nodelack"``."""

def trc_fitted_models() -> list[
    tuple[
        str,
        tuple[float, float, list[tuple[float, float]], float],
        tuple[float, float, list[tuple[float, float]], float] | None,
    ]
]:
    """Every fitted model: ``(name, (a, b, knots, w_first) with drops, the same with ECN
    or None)``; ``w_first`` is the smallest W_max the TRC picks with the law."""

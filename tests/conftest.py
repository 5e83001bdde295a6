"""Shared fixtures: a small scenario, a CLI runner."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SMALL = """
name = "small"
duration = "{duration}"
warmup = "0.5s"
seed = 1

[[node]]
name = "h1"
[[node]]
name = "h2"
[[node]]
name = "r1"
kind = "router"
[[node]]
name = "h3"

[[link]]
a = "h1"
b = "r1"
rate = "10Mbps"
delay = "1ms"
[[link]]
a = "h2"
b = "r1"
rate = "10Mbps"
delay = "1ms"
[[link]]
a = "r1"
b = "h3"
rate = "1Mbps"
delay = "10ms"
queue = {{ kind = "droptail", limit = 20 }}

[[flow]]
name = "a"
from = "h1"
to = "h3"
cbr = {{ rate = "800kbps", size = 1000, jitter = 0.2 }}
[[flow]]
name = "b"
from = "h2"
to = "h3"
cbr = {{ rate = "400kbps", size = 1000, jitter = 0.2 }}

[record]
interval = "0.5s"
"""


def two_hosts(
    name: str,
    *,
    rate: str = "10Mbps",
    delay: str = "5ms",
    limit: int | None = 50,
    duration: str = "3s",
    warmup: str = "0s",
) -> str:
    """The start of a small scenario's TOML text: hosts a and b over one link of
    ``rate`` and ``delay`` (a DropTail queue of ``limit`` packets; ``None``: the
    default queue). Flows and tables are appended by the caller."""
    queue = "" if limit is None else f'queue = {{ kind = "droptail", limit = {limit} }}\n'
    return (
        f'\nname = "{name}"\nduration = "{duration}"\nwarmup = "{warmup}"\n'
        '[[node]]\nname = "a"\n[[node]]\nname = "b"\n'
        f'[[link]]\na = "a"\nb = "b"\nrate = "{rate}"\ndelay = "{delay}"\n{queue}'
    )


def small_text(duration: str = "4s", extra: str = "") -> str:
    """The small two-CBR scenario as TOML text, with ``extra`` appended."""
    return SMALL.format(duration=duration) + extra


@pytest.fixture
def small(tmp_path: Path) -> Path:
    """A small, valid scenario file (two CBR flows over a 1 Mb/s bottleneck)."""
    p = tmp_path / "small.toml"
    p.write_text(small_text())
    return p


def cli(
    *args: str | os.PathLike, cwd: Path | None = None, check: bool = False, timeout: float = 300
) -> subprocess.CompletedProcess:
    """Runs ``python -m qoslab ARGS`` and returns the completed process (text output)."""
    p = subprocess.run(
        [sys.executable, "-m", "qoslab", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check and p.returncode != 0:
        raise AssertionError(f"qoslab {args} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p


def report_text(index: Path) -> str:
    """A reproduction report as one text: its index page and every experiment's page
    (``<experiment>/report.html`` beside the index), for tests that look for content."""
    pages = [index, *sorted(index.parent.glob("*/report.html"))]
    return "\n".join(p.read_text() for p in pages)


@pytest.fixture(autouse=True, scope="session")
def _experiments_registered():
    """Every experiment module imported before any test saves and later restores the
    registry: a test that saved it before discovery would restore it empty while
    discovery stays done, and a later reproduction would find no experiment."""
    from qoslab.reproduce import discover

    discover()


def _live_missing() -> str | None:
    from qoslab.api import live_unavailable

    return live_unavailable()


#: Why live mode cannot run here (root, /dev/net/tun, ip), or None when it can.
LIVE_MISSING = _live_missing()
#: Marks a test that runs real Linux TCP through the datapath: skipped, with the reason,
#: where live mode cannot run.
needs_live = pytest.mark.skipif(
    LIVE_MISSING is not None, reason=f"live mode cannot run here: {LIVE_MISSING}"
)


def assert_live_experiment_named_only_and_skipped(name: str, out: Path, monkeypatch) -> dict:
    """A live experiment is left out of ``reproduce --all`` and, without live mode, reported
    as skipped with the reason (not failed); returns the reproduction's index."""
    import qoslab.api
    from qoslab import reproduce

    assert not reproduce.discover()[name].in_all
    monkeypatch.setattr(qoslab.api, "live_unavailable", lambda: "live mode needs root")
    idx = reproduce.run_experiments([name], out, quick=True, log=lambda _: None)
    (e,) = idx["experiments"]
    assert e["status"] == "skipped" and "needs root" in e["reason"]
    return idx


def load_script(path: Path):
    """The module of script `path` (not a package member), imported with its own folder
    on `sys.path` for the imports it makes of its neighbours."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(path.parent))
    return mod

"""Results on disk: one directory per run, written atomically.

A run directory holds one Parquet file per table (``flows.parquet``, ``series.parquet``,
…), ``scenario.json`` (the resolved scenario the engine ran) and ``summary.json``
(engine summary plus scenario hash, seed, versions, wall time, events). It is written
under a temporary name beside its final place and renamed when complete, so a killed
run leaves no half-written result: a directory with ``summary.json`` is a finished run.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from qoslab.exceptions import ResultsError

__all__ = ["TABLES", "Result", "is_complete", "load", "write_run"]

#: The tables a run produces, in the engine's words (see ``stats/table.rs``).
TABLES = ("flows", "series", "drops", "queues", "queue_samples", "traces")
TMP_MARK = ".tmp-"


class Result:
    """What a run produced: ``summary`` (dict), ``tables`` (polars DataFrames) and the
    resolved ``scenario`` it ran. ``to_arrow(name)`` gives a pyarrow table,
    ``r.flows.to_pandas()`` a pandas one; in a notebook a Result shows itself as HTML.

    Args:
      summary: engine summary plus scenario hash, seed, versions and wall time.
      tables: table name → polars DataFrame (``flows``, ``series``, ``drops``, …).
      scenario: the resolved scenario (dict) the engine ran, if known.
      path: the run folder it was loaded from or saved to, if any.
    """

    def __init__(
        self,
        summary: dict[str, Any],
        tables: dict[str, pl.DataFrame],
        scenario: dict[str, Any] | None = None,
        path: Path | None = None,
    ) -> None:
        self.summary = summary
        self.tables = tables
        self.scenario = scenario
        self.path = path
        #: Directory holding the run's ``[[capture]]`` pcap files, if any.
        self.pcap_dir: Path | None = None

    @classmethod
    def from_engine(cls, raw: Mapping[str, Any], scenario: dict[str, Any] | None) -> Result:
        """From the dict ``qoslab._core.run`` returns."""
        tables = {
            name: pl.DataFrame(
                [_column(n, c) for n, c in zip(t["names"], t["columns"], strict=True)]
            )
            for name, t in raw["tables"].items()
        }
        return cls(dict(raw["summary"]), tables, scenario)

    def table(self, name: str) -> pl.DataFrame:
        """The table called ``name``; an empty frame if this run did not produce it."""
        return self.tables.get(name, pl.DataFrame())

    flows = property(lambda self: self.table("flows"), doc="One row per flow.")
    series = property(lambda self: self.table("series"), doc="Goodput per flow and interval.")
    drops = property(lambda self: self.table("drops"), doc="Drops by place and cause.")
    queues = property(lambda self: self.table("queues"), doc="Per-interface queue totals.")
    queue_samples = property(lambda self: self.table("queue_samples"), doc="Queue occupancy.")
    traces = property(lambda self: self.table("traces"), doc="cwnd, ssthresh, srtt, … traces.")

    def to_arrow(self, name: str):
        """The table ``name`` as a ``pyarrow.Table``."""
        return self.table(name).to_arrow()

    def save(self, dest: str | Path, **extra: Any) -> Path:
        """Writes this result to ``dest`` (atomically; replaces an older result there)."""
        return write_run(Path(dest), self, extra=extra, replace=True)

    def __repr__(self) -> str:
        shapes = ", ".join(f"{k}={v.height}" for k, v in self.tables.items())
        name, seed = self.summary.get("name", ""), self.summary.get("seed")
        return f"<qoslab.Result {name!r} seed={seed} {shapes}>"

    def _repr_html_(self) -> str:
        """A summary and the flows table as HTML, for notebooks."""
        from qoslab.report import result_html

        return result_html(self)


_DTYPES = {"i64": (np.int64, pl.Int64), "f64": (np.float64, pl.Float64)}


def _column(name: str, col: Any) -> pl.Series:
    """One engine column: ``(dtype, raw bytes)`` for numbers, ``("str", distinct values,
    u32 codes as bytes)`` for strings (see ``crates/qoslab-py/src/convert.rs``)."""
    if col[0] == "str":
        codes = pl.Series(np.frombuffer(col[2], dtype=np.uint32))
        return pl.Series(name, col[1], dtype=pl.String).gather(codes)
    np_type, pl_type = _DTYPES[col[0]]
    return pl.Series(name, np.frombuffer(col[1], dtype=np_type), dtype=pl_type)


def write_run(
    dest: Path, result: Result, *, extra: Mapping[str, Any] | None = None, replace: bool = False
) -> Path:
    """Writes ``result`` into the directory ``dest`` atomically and returns ``dest``.

    With ``replace=False`` an existing finished ``dest`` is an error (sweeps never
    overwrite); with ``replace=True`` it is swapped for the new one.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.parent / f".{dest.name}{TMP_MARK}{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        names = []
        for name, df in result.tables.items():
            df.write_parquet(tmp / f"{name}.parquet")
            names.append(name)
        summary = dict(result.summary)
        summary.update(extra or {})
        summary["tables"] = names
        summary.setdefault("written_at", time.time())
        if result.scenario is not None:
            (tmp / "scenario.json").write_text(json.dumps(result.scenario, indent=2, default=str))
        pcap = getattr(result, "pcap_dir", None)
        if pcap is not None and Path(pcap).is_dir():
            shutil.copytree(pcap, tmp / "pcap")
        # summary.json last: its presence is what "finished" means.
        (tmp / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
        if dest.exists():
            if not replace:
                raise FileExistsError(f"{dest} already holds a finished run")
            old = dest.parent / f".{dest.name}.old-{uuid.uuid4().hex[:8]}"
            dest.rename(old)
            tmp.rename(dest)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest


def is_complete(path: Path) -> bool:
    """True if ``path`` is a finished run directory."""
    return (Path(path) / "summary.json").is_file()


def load(results_dir: str | Path) -> Result:
    """Reads a run directory back as a :class:`Result`.

    Args:
      results_dir: a run's folder as ``Result.save`` or ``qoslab run -o`` wrote it
        (``summary.json``, ``scenario.json`` and one Parquet file per table).

    Raises:
      ResultsError: a missing or corrupt file; the message names it.
    """
    d = Path(results_dir)
    sfile = d / "summary.json"
    if not sfile.is_file():
        raise ResultsError(f"{sfile}: not found; {d} is not a finished qoslab run directory")
    try:
        summary = json.loads(sfile.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ResultsError(f"{sfile}: corrupt (not valid JSON: {e})") from None
    if not isinstance(summary, dict):
        raise ResultsError(f"{sfile}: corrupt (expected a JSON object)")
    tables = {}
    for name in summary.get("tables", []):
        f = d / f"{name}.parquet"
        try:
            tables[name] = pl.read_parquet(f)
        except FileNotFoundError:
            raise ResultsError(f"{f}: missing (listed in {sfile})") from None
        except Exception as e:  # polars raises several types for damaged files
            raise ResultsError(f"{f}: corrupt or not a Parquet file ({e})") from None
    scenario = None
    scfile = d / "scenario.json"
    if scfile.is_file():
        try:
            scenario = json.loads(scfile.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ResultsError(f"{scfile}: corrupt (not valid JSON: {e})") from None
    return Result(summary, tables, scenario, d)

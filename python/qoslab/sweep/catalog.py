"""A sweep's SQL catalogue (``catalog.duckdb``): :func:`build_catalog` writes it,
:func:`query` and :func:`open_catalog` read it."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import polars as pl

from qoslab.exceptions import ResultsError
from qoslab.store import (
    OWN,
    TABLES,
    is_complete,
)
from qoslab.sweep.spec import RunTask
from qoslab.sweep.summary import EXTRA_SUMMARIES, _param_value, load_tasks

#: The DuckDB storage format of ``catalog.duckdb``: readable by DuckDB 1.0 and later
#: (the Python library and the ``duckdb`` command-line client alike).
CATALOG_STORAGE = "v1.0.0"


def build_catalog(out: str | Path, tasks: list[RunTask] | None = None) -> Path:
    """(Re)builds ``catalog.duckdb``: a ``runs`` table (key, seed, params, status, error),
    a ``summary`` table, and one view per engine table over the runs' Parquet files, each
    with run key, seed and params as leading columns.

    The views name the files relative to the sweep folder, so a moved or copied folder
    still works (and a copy never reads the original's files): open the catalog with
    :func:`open_catalog`, or with DuckDB's own client from inside the sweep folder.
    """
    import duckdb

    from qoslab.tables import numeric_companions

    out = Path(out)
    tasks = load_tasks(out) if tasks is None else tasks
    rows = []
    names = list(TABLES)  # and any other table the runs produced (captures, …)
    complete = [t for t in tasks if is_complete(out / "runs" / t.key)]
    done = {t.key for t in complete}
    for t in tasks:
        row: dict[str, Any] = {"run": t.key, "seed": t.seed, "status": "pending", "error": None}
        row.update({k: _param_value(v) for k, v in t.labels.items()})
        row.update(numeric_companions(t.labels))  # link.2.rate_bps …: ORDER BY by value
        if t.key in done:
            s = json.loads((out / "runs" / t.key / "summary.json").read_text())
            row.update(
                status="done", events=s.get("events"), wall_s=s.get("wall_s"), host=s.get("host")
            )
            if s.get("ray_node"):
                row["ray_node"] = s["ray_node"]
            names += [n for n in s.get("tables", []) if isinstance(n, str) and n not in names]
        elif (out / "failed" / f"{t.key}.json").is_file():
            f = json.loads((out / "failed" / f"{t.key}.json").read_text())
            row.update(status="failed", error=f"{f.get('error_type')}: {f.get('error')}")
        rows.append(row)
    _number_companions(rows, tasks)
    runs = with_sql_aliases(pl.DataFrame(rows, infer_schema_length=None))
    (out / OWN).mkdir(exist_ok=True)
    tmp = out / OWN / f"catalog.duckdb.{os.getpid()}-{uuid.uuid4().hex[:8]}"
    con = duckdb.connect(":memory:")
    try:
        # An older storage version than the library's own: DuckDB 2.0 writes version
        # 69 by default, which the command-line client on PyPI (duckdb-cli 1.5) and
        # DuckDB 1.x libraries refuse to open.
        path = str(tmp).replace("'", "''")
        con.execute(f"ATTACH '{path}' AS catalog (STORAGE_VERSION '{CATALOG_STORAGE}')")
        con.execute("USE catalog")
        con.execute("SET file_search_path = ?", [str(out)])
        con.register("runs_df", runs.to_arrow())
        con.execute("CREATE TABLE runs AS SELECT * FROM runs_df")
        # The grid point (with the numeric companions and plain-named aliases).
        lead = [c for c in runs.columns if c not in ("run", "seed", *_RUN_COLUMNS)]
        params = "".join(f', r."{k}"' for k in lead)
        for name in names:
            # Views over the runs' Parquet files, not copies: a sweep of long runs with
            # queue sampling holds tens of millions of rows, and copying them all into
            # the catalog cost more than the runs themselves.
            files = [
                f"runs/{t.key}/{name}.parquet"
                for t in complete
                if os.path.isfile(os.path.join(out, "runs", t.key, f"{name}.parquet"))
            ]
            if not files:
                continue
            lst = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
            # A reserved-word column of the runs' own tables (flows.group) gets its
            # alias too, when the first file has it (then the union of all has it).
            first = pl.read_parquet_schema(out / files[0])
            aliases = "".join(
                f', t."{old}" AS {new}'
                for old, new in SQL_ALIASES.items()
                if old in first and new not in first and new not in lead
            )
            con.execute(
                f'CREATE VIEW "{name}" AS SELECT r.run, r.seed{params}, t.* EXCLUDE (filename)'
                f"{aliases} "
                f"FROM read_parquet([{lst}], union_by_name = true, filename = true) t "
                "JOIN runs r ON r.run = regexp_extract(t.filename, '(^|/)runs/([^/]+)/[^/]+$', 2)"
            )
        for table in ("summary", *EXTRA_SUMMARIES):
            if (out / f"{table}.parquet").is_file():
                df = with_sql_aliases(pl.read_parquet(out / f"{table}.parquet"))
                con.register("summary_df", df.to_arrow())
                con.execute(f'CREATE TABLE "{table}" AS SELECT * FROM summary_df')
                con.unregister("summary_df")
    finally:
        con.close()
    try:
        os.replace(tmp, out / "catalog.duckdb")
    finally:
        tmp.unlink(missing_ok=True)
        Path(f"{tmp}.wal").unlink(missing_ok=True)
    return out / "catalog.duckdb"


#: The columns of the catalog's ``runs`` table that describe a run, not its grid point.
_RUN_COLUMNS = ("status", "error", "events", "wall_s", "host", "ray_node")

#: Catalog columns named by SQL reserved words (``SELECT case, group …`` does not
#: parse), each with a plain-named copy beside it in every table and view that has it.
SQL_ALIASES = {"case": "case_name", "group": "flow_group"}


def with_sql_aliases(df: pl.DataFrame) -> pl.DataFrame:
    """``df`` with a copy of each column named by an SQL reserved word under its plain
    name (:data:`SQL_ALIASES`) right after it, unless that name is taken."""
    cols = list(df.columns)
    for old, new in SQL_ALIASES.items():
        if old in df.columns and new not in df.columns:
            df = df.with_columns(pl.col(old).alias(new))
            cols.insert(cols.index(old) + 1, new)
    return df.select(cols)


def _number_companions(rows: list[dict[str, Any]], tasks: list[RunTask]) -> None:
    """Fills the numeric companion of a swept value given as a plain number (a rate in
    bit/s, a time in seconds) where other values of the same key carry a unit, so that
    every run of the catalog has one: ``link.2.rate`` = 500000 beside ``"1Mbps"``."""
    names: dict[str, str] = {}
    for row, t in zip(rows, tasks, strict=True):
        for k in t.labels:
            for suffix in ("_bps", "_s", "_bytes"):
                if f"{k}{suffix}" in row:
                    names.setdefault(k, f"{k}{suffix}")
    for row, t in zip(rows, tasks, strict=True):
        for k, name in names.items():
            v = t.labels.get(k)
            if name not in row and isinstance(v, (int, float)) and not isinstance(v, bool):
                row[name] = float(v)


def query(out: str | Path, sql: str) -> pl.DataFrame:
    """The result of the SQL ``sql`` over the catalog of the sweep folder ``out`` as a
    polars DataFrame: ``query("results/x-sweep", "SELECT * FROM runs")`` (the same with
    DuckDB 1.x and 2.x, whose connections no longer have ``execute(…).pl()``)."""
    con = open_catalog(out)
    try:
        df = pl.from_arrow(con.sql(sql).to_arrow_table())
    finally:
        con.close()
    assert isinstance(df, pl.DataFrame)
    return df


def open_catalog(out: str | Path, read_only: bool = True):
    """A DuckDB connection to the catalog of the sweep folder ``out`` (wherever the folder
    now is): ``open_catalog("results/x-sweep").sql("SELECT * FROM flows")``."""
    import duckdb

    out = Path(out)
    f = out / "catalog.duckdb"
    if not f.is_file():
        raise ResultsError(f"{f}: not found; {out} is not a finished qoslab sweep folder")
    con = duckdb.connect(str(f), read_only=read_only)
    con.execute("SET file_search_path = ?", [str(out.resolve())])
    return con

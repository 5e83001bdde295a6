"""SQL over a sweep's catalog from the shell, with the DuckDB that qoslab installs::

    python -m qoslab.sql results/two-cbr-sweep \\
        'SELECT "link.2.rate", name, avg(goodput_bps) FROM flows GROUP BY ALL ORDER BY ALL'

The first argument is a sweep folder (or its ``catalog.duckdb``); the result is printed
as a table. The catalog is opened read-only with the sweep folder as DuckDB's file search
path, so its views find the runs' Parquet files wherever the folder now is. (A separately
installed ``duckdb`` command-line client works too when its version can read the file.)
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["connect", "main"]


def connect(sweep: str | Path, read_only: bool = True):
    """A DuckDB connection to the catalog of ``sweep`` (a sweep folder or its
    ``catalog.duckdb`` file), read-only unless ``read_only=False``."""
    import duckdb

    from qoslab.exceptions import ResultsError

    p = Path(sweep)
    if not p.exists():
        raise ResultsError(f"{p}: not found (expected a sweep folder or its catalog.duckdb)")
    d, f = (p, p / "catalog.duckdb") if p.is_dir() else (p.parent, p)
    if not f.is_file():
        raise ResultsError(f"{f}: not found; {d} is not a finished qoslab sweep folder")
    con = duckdb.connect(str(f), read_only=read_only)
    con.execute("SET file_search_path = ?", [str(d.resolve())])
    return con


def main(argv: list[str] | None = None) -> int:
    """``python -m qoslab.sql SWEEP_DIR QUERY``: prints the query's result."""
    import duckdb

    from qoslab.exceptions import ResultsError

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr if len(args) != 1 else sys.stdout)
        return 0 if args[:1] in (["-h"], ["--help"]) else 2
    try:
        con = connect(args[0])
        try:
            rel = con.sql(args[1])
            if rel is not None:
                rel.show(max_rows=200, max_width=10_000)
        finally:
            con.close()
    except (ResultsError, duckdb.Error) as e:
        print(f"qoslab.sql: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""Whether two reproduction results folders hold the same tables, value for value: for
every experiment folder of the first, each ``table-*.parquet`` against the second's.

    python benches/same_tables.py RESULTS_A RESULTS_B

Used to show that a build change (e.g. the profile-guided build) changed no result:
run the same ``qoslab reproduce`` into two folders, one per build. Exits with 1 when a
table differs or is missing from the second folder.
"""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[3].strip(), file=sys.stderr)
        return 2
    a, b = Path(sys.argv[1]), Path(sys.argv[2])
    tables = sorted(a.glob("*/table-*.parquet"))
    if not tables:
        print(f"{a}: no experiment tables (table-*.parquet) in it", file=sys.stderr)
        return 2
    bad = 0
    for t in tables:
        rel = t.relative_to(a)
        other = b / rel
        same = other.is_file() and pl.read_parquet(t).equals(pl.read_parquet(other))
        bad += not same
        print(f"{rel}: {'same' if same else 'missing' if not other.is_file() else 'DIFFERS'}")
    print(f"{len(tables) - bad} of {len(tables)} tables the same")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

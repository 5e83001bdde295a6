"""The sweep catalog as a new user queries it: columns named by SQL reserved words
(case, group) have plain aliases and a bare one gets a hint; swept values with units
sort by their numeric companions; the catalog opens from any folder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import cli, small_text
from qoslab.sweep import SQL_ALIASES, open_catalog, query, run_sweep
from qoslab.tables import numeric_companions

SWEEP = """
[sweep]
seeds = 1
[sweep.grid]
"link.2.rate" = ["1Mbps", "1.5Mbps", "500kbps"]
[sweep.cases.near]
"link.0.delay" = "2ms"
[sweep.cases.far]
"link.0.delay" = "5ms"
"""


@pytest.fixture(scope="module")
def swept(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("cat")
    sc = d / "g.toml"
    text = small_text(duration="2s").replace('name = "b"\n', 'name = "b"\ncount = 2\n')
    sc.write_text(text + SWEEP)
    run_sweep(sc, d / "sw", progress=False, log=lambda m: None, workers=1)
    return d / "sw"


def test_every_reserved_word_column_has_its_plain_alias(swept):
    con = open_catalog(swept)
    try:
        reserved = {
            r[0]
            for r in con.sql(
                "SELECT keyword_name FROM duckdb_keywords() WHERE keyword_category = 'reserved'"
            ).fetchall()
        }
        cols = con.sql("SELECT table_name, column_name FROM duckdb_columns()").fetchall()
    finally:
        con.close()
    bad = {(t, c) for t, c in cols if c.lower() in reserved}
    assert {c for _, c in bad} == {"case", "group"}, bad  # the sweep has both
    have = set(cols)
    for t, c in bad:
        assert (t, SQL_ALIASES[c]) in have, (t, c)


def test_aliases_hold_the_same_values(swept):
    df = query(swept, 'SELECT "case" = case_name AS a, "group" = flow_group AS b FROM flows')
    assert df.height == 3 * 2 * 3 and df["a"].all() and df["b"].all()


def test_bare_reserved_words_get_a_hint_naming_them(swept):
    p = cli("sql", swept, "SELECT case, group, avg(goodput_bps) FROM flows GROUP BY case, group")
    assert p.returncode == 2
    assert "case and group are SQL reserved words" in p.stderr, p.stderr
    assert '"case" and "group"' in p.stderr and "case_name and flow_group" in p.stderr
    # GROUP BY and CASE WHEN are the keywords: a syntax error elsewhere gets no hint.
    p = cli("sql", swept, "SELECT CASE WHEN seed > 0 THEN 1 END, FROM flows GROUP BY name,,")
    assert p.returncode == 2 and "syntax error" in p.stderr and "hint" not in p.stderr
    p = cli("sql", swept, 'SELECT "case", case_name, flow_group FROM flows LIMIT 1', check=True)
    assert "case_name" in p.stdout


def test_swept_rates_sort_by_value_in_every_table(swept):
    want = ["500kbps", "1Mbps", "1.5Mbps"]
    for table in ("runs", "flows", "summary", "summary_groups"):
        df = query(
            swept,
            f'SELECT DISTINCT "link.2.rate", "link.2.rate_bps" FROM {table} '
            'ORDER BY "link.2.rate_bps"',
        )
        assert df["link.2.rate"].to_list() == want, table
        assert df["link.2.rate_bps"].to_list() == [5e5, 1e6, 1.5e6], table


def test_a_plain_number_among_rates_gets_its_companion(tmp_path):
    sc = tmp_path / "s.toml"
    sc.write_text(small_text(duration="1s"))
    run_sweep(
        sc,
        tmp_path / "sw",
        grid={"link.2.rate": [500000, "1Mbps"]},
        progress=False,
        log=lambda m: None,
        workers=1,
    )
    for table in ("runs", "flows", "summary"):
        df = query(tmp_path / "sw", f'SELECT DISTINCT "link.2.rate_bps" v FROM {table} ORDER BY v')
        assert df["v"].to_list() == [5e5, 1e6], table


@pytest.mark.parametrize(
    ("text", "name", "value"),
    [
        ("2MBps", "x_bps", 16e6),  # bytes per second, as the engine reads it
        ("1.5Mb/s", "x_bps", 1.5e6),
        ("1Mbit/s", "x_bps", 1e6),
        ("128kbps", "x_bps", 128e3),
        ("2min", "x_s", 120.0),
        ("250us", "x_s", 250e-6),
        ("64KB", "x_bytes", 64e3),
    ],
)
def test_numeric_companions_read_units_as_the_engine_does(text, name, value):
    assert numeric_companions({"x": text}) == pytest.approx({name: value})


def test_the_catalog_opens_in_duckdb_from_any_folder(swept, tmp_path):
    duckdb = Path(sys.executable).parent / "duckdb"
    if not duckdb.is_file():
        pytest.skip("DuckDB's command-line client is not installed")
    q = "SELECT count(*) AS n FROM flows;\n"
    # A plain client elsewhere does not find the runs' files (relative paths) …
    plain = subprocess.run(
        [str(duckdb), "-readonly", str(swept / "catalog.duckdb")],
        input=q,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert "No files found" in plain.stderr + plain.stdout
    # … qoslab duckdb and qoslab sql --shell do.
    for args in (["duckdb", str(swept)], ["sql", str(swept), "--shell"]):
        p = subprocess.run(
            [sys.executable, "-m", "qoslab", *args],
            input=q,
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=60,
        )
        assert p.returncode == 0, p.stderr
        assert "18" in p.stdout, p.stdout


def test_duckdb_on_a_folder_without_catalog_exits_2(tmp_path):
    p = cli("duckdb", tmp_path)
    assert p.returncode == 2 and "catalog.duckdb: not found" in p.stderr, p.stderr

"""``[sweep.cases]``: named settings of several keys, crossed with grid and seeds; the
case name is a column of every table and a label."""

from __future__ import annotations

import pytest

import qoslab
from conftest import small_text
from qoslab import ScenarioError
from qoslab.sweep import query, run_sweep

CASES = """
[sweep]
seeds = 2
[sweep.grid]
"link.2.rate" = ["1Mbps", "2Mbps"]
[sweep.cases.slow]
"flow.a.cbr.rate" = "200kbps"
"flow.b.cbr.rate" = "100kbps"
[sweep.cases.fast]
"flow.a.cbr.rate" = "2Mbps"
"flow.b.cbr.rate" = "1Mbps"
"""


def test_cases_cross_grid_and_seeds(tmp_path):
    sc = tmp_path / "s.toml"
    sc.write_text(small_text("2s", CASES))
    out = tmp_path / "sw"
    res = run_sweep(sc, out, workers=1, progress=False)
    assert res.total == 2 * 2 * 2 and res.failed == 0
    runs = query(out, 'SELECT "case", "link.2.rate", count(*) AS n FROM runs GROUP BY ALL')
    assert sorted(runs.rows()) == [
        ("fast", "1Mbps", 2),
        ("fast", "2Mbps", 2),
        ("slow", "1Mbps", 2),
        ("slow", "2Mbps", 2),
    ]
    s = res.summary
    assert s is not None and "case" in s.columns
    a = {
        (r["case"], r["link.2.rate"]): r["goodput_bps_mean"]
        for r in s.filter(s["name"] == "a").iter_rows(named=True)
    }
    # slow offers 200 kb/s: all of it arrives at either rate; fast is limited by the link
    assert a[("slow", "1Mbps")] == pytest.approx(200e3, rel=0.1)
    assert a[("fast", "1Mbps")] < 0.8e6 < a[("fast", "2Mbps")]
    flows = query(out, 'SELECT DISTINCT "case" FROM flows ORDER BY 1')
    assert flows["case"].to_list() == ["fast", "slow"]
    from qoslab.report import write_report

    assert "fast" in write_report(out).read_text()


def test_case_errors_name_the_case(tmp_path):
    sc = tmp_path / "s.toml"
    sc.write_text(
        small_text(
            "1s", CASES.replace('"link.2.rate" = ["1Mbps", "2Mbps"]', '"flow.0.cbr.rate" = [1e6]')
        )
    )
    with pytest.raises(ScenarioError, match=r"case 'slow' key 'flow\.a\.cbr\.rate'.*grid key"):
        qoslab.check(sc)
    sc.write_text(small_text("1s", CASES.replace('"200kbps"', '"fast"')))
    with pytest.raises(ScenarioError, match=r"sweep\.cases\.slow"):
        qoslab.check(sc)
    plain = tmp_path / "plain.toml"
    plain.write_text(small_text("1s"))
    # a case that sets a grid key
    with pytest.raises(ScenarioError, match=r"link\.2\.rate"):
        run_sweep(
            plain,
            tmp_path / "x",
            cases={"c": {"link.2.rate": "1Mbps"}},
            grid={"link.2.rate": ["2Mbps"]},
            progress=False,
        )
    # two cases that are the same scenario
    with pytest.raises(ScenarioError, match="run the same scenario"):
        run_sweep(
            plain,
            tmp_path / "x",
            cases={"c": {"warmup": "0.1s"}, "d": {"warmup": "0.1s"}},
            progress=False,
        )


def test_sql_csv_json_all_and_row_count(tmp_path):
    import json

    from conftest import cli

    sc = tmp_path / "s.toml"
    sc.write_text(small_text("1s"))
    out = tmp_path / "sw"
    run_sweep(sc, out, seeds=2, grid={"link.2.rate": ["1Mbps", "2Mbps"]}, workers=1,
              progress=False)  # fmt: skip
    q = 'SELECT run, seed, "link.2.rate", name, goodput_bps FROM flows ORDER BY run, name'
    p = cli("sql", out, q, check=True)
    assert p.stdout.rstrip().endswith("8 rows")
    assert "link.2.rate" in p.stdout  # the whole header, not squeezed
    p = cli("sql", out, q, "--csv", check=True)
    lines = p.stdout.splitlines()
    assert lines[0] == "run,seed,link.2.rate,name,goodput_bps" and len(lines) == 9
    p = cli("sql", out, q, "--json", check=True)
    rows = [json.loads(x) for x in p.stdout.splitlines()]
    assert len(rows) == 8 and {"run", "goodput_bps"} <= set(rows[0])
    p = cli("sql", out, "SELECT * FROM range(150)", check=True)
    assert p.stdout.rstrip().endswith("150 rows (the first 100 shown; --all for every row)")
    p = cli("sql", out, "SELECT * FROM range(150)", "--all", check=True)
    assert p.stdout.rstrip().endswith("150 rows") and "| 149 " in p.stdout


def test_each_run_records_the_host_that_ran_it(tmp_path):
    import json
    import socket

    sc = tmp_path / "s.toml"
    sc.write_text(small_text("1s"))
    out = tmp_path / "sw"
    run_sweep(sc, out, seeds=2, workers=2, progress=False)
    for d in (out / "runs").iterdir():
        assert json.loads((d / "summary.json").read_text())["host"] == socket.gethostname()
    assert query(out, "SELECT DISTINCT host FROM runs")["host"].to_list() == [socket.gethostname()]


def test_cli_case_flags_cross_grid_and_seeds_like_the_table(tmp_path):
    """``--case NAME KEY=VALUE …`` on the command line: the same runs, columns and
    labels as the [sweep.cases] table, crossed with --grid and --seeds."""
    from conftest import cli

    sc = tmp_path / "s.toml"
    sc.write_text(small_text("1s"))
    out = tmp_path / "sw"
    p = cli(
        "sweep", sc, "--case", "slow", "flow.a.cbr.rate=200kbps", "flow.b.cbr.rate=100kbps",
        "--case", "fast", "flow.a.cbr.rate=2Mbps", "flow.b.cbr.rate=1Mbps",
        "--grid", "link.2.rate=1Mbps,2Mbps", "--seeds", "2", "-j", "1", "--no-progress",
        "-o", out,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert "8 runs: 8 done" in p.stdout
    runs = query(out, 'SELECT "case", "link.2.rate", count(*) AS n FROM runs GROUP BY ALL')
    assert sorted(runs.rows()) == [
        ("fast", "1Mbps", 2),
        ("fast", "2Mbps", 2),
        ("slow", "1Mbps", 2),
        ("slow", "2Mbps", 2),
    ]
    # the same runs (the same keys) as the table form
    table = tmp_path / "t.toml"
    table.write_text(small_text("1s", CASES))
    res = run_sweep(table, tmp_path / "tw", workers=1, progress=False)
    assert res.total == 8
    keys = set(query(tmp_path / "tw", "SELECT run FROM runs")["run"])
    assert keys == set(query(out, "SELECT run FROM runs")["run"])
    # slow's offered rate is what a gets at 1 Mb/s
    g = query(out, """SELECT avg(goodput_bps) AS g FROM flows WHERE "case" = 'slow'
                      AND name = 'a' AND "link.2.rate" = '1Mbps'""")["g"][0]  # fmt: skip
    assert g == pytest.approx(200e3, rel=0.1)


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        # a key that leads nowhere: named with its case
        (["--case", "fast", "flow.zz.cbr.rate=1Mbps"], ["fast", "flow.zz.cbr.rate"]),
        # a value the engine refuses
        (["--case", "fast", "flow.a.cbr.rate=fast"], ["fast", "flow.a.cbr.rate"]),
        # not a key path
        (["--case", "fast", "flow..a=1"], ["fast", "flow..a"]),
        # no settings at all
        (["--case", "fast"], ["fast", "KEY=VALUE"]),
        (["--case", "fast", "a.b=1", "a.b=2"], ["fast", "a.b", "twice"]),
    ],
)
def test_cli_case_errors_name_the_case_and_key(tmp_path, args, needles):
    from conftest import cli

    sc = tmp_path / "s.toml"
    sc.write_text(small_text("1s"))
    p = cli("sweep", sc, *args, "-j", "1", "--no-progress", "-o", tmp_path / "sw")
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert "Traceback" not in p.stderr
    for n in needles:
        assert n in p.stderr, (n, p.stderr)
    assert not (tmp_path / "sw" / "runs").exists()  # refused before any run

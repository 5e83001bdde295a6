"""The command line end to end, and its answers to bad input."""

from __future__ import annotations

import json

import pytest

import qoslab
from conftest import cli, small_text


def test_run_check_report_list(small, tmp_path):
    p = cli("check", small, check=True)
    assert "is valid" in p.stdout
    out = tmp_path / "res"
    p = cli(
        "run", small, "--seed", "3", "--set", "link.2.rate=2Mbps", "-o", out, "--report", check=True
    )
    assert f"results: {out}" in p.stdout
    r = qoslab.load(out)
    assert r.summary["seed"] == 3 and r.scenario["link"][2]["rate"] == "2Mbps"
    assert (out / "report.html").is_file()
    p = cli("list", check=True)
    assert "experiments" in p.stdout


def test_run_default_results_dir(small, tmp_path):
    cli("run", small, cwd=tmp_path, check=True)
    assert qoslab.load(tmp_path / "results" / "small").flows.height == 2


BAD = {
    # name: (how to spoil the file, what the message must name)
    "malformed": (
        lambda t: t.replace('[[node]]\nname = "h1"', '[[node]\nname = "h1"'),
        ["not valid TOML", "line"],
    ),
    "unknown key": (
        lambda t: t.replace("seed = 1", "seed = 1\nfrobnicate = 3"),
        ["frobnicate", "expected one of"],
    ),
    "negative rate": (
        lambda t: t.replace('rate = "1Mbps"', 'rate = "-1Mbps"'),
        ["`link[2].rate`", "positive"],
    ),
    "missing node": (lambda t: t.replace('to = "h3"', 'to = "h9"', 1), ["`flow[0].to`", "h9"]),
}


@pytest.mark.parametrize("case", list(BAD))
@pytest.mark.parametrize("command", ["check", "run"])
def test_bad_scenarios_exit_2_with_key_and_no_traceback(case, command, tmp_path):
    spoil, needles = BAD[case]
    f = tmp_path / "bad.toml"
    text = spoil(small_text())
    assert text != small_text()
    f.write_text(text)
    p = cli(command, f, "-o", tmp_path / "o") if command == "run" else cli(command, f)
    assert p.returncode == 2, p.stderr
    err = p.stderr
    assert "Traceback" not in err
    assert str(f) in err
    for n in needles:
        assert n in err, (n, err)
    assert len(err.strip().splitlines()) == 1  # one paragraph
    assert not (tmp_path / "o").exists()


def test_verbose_shows_traceback(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text(small_text().replace('to = "h3"', 'to = "h9"', 1))
    p = cli("--verbose", "check", f)
    assert p.returncode == 2 and "Traceback" in p.stderr


def test_missing_file_and_bad_override(small, tmp_path):
    p = cli("check", tmp_path / "nope.toml")
    assert p.returncode == 2 and "nope.toml" in p.stderr and "no such file" in p.stderr
    p = cli("check", small, "--set", "flow.zz.cbr.rate=1Mbps")
    assert p.returncode == 2 and "`flow`" in p.stderr and "'zz'" in p.stderr


def test_corrupt_results_exit_2(small, tmp_path):
    out = tmp_path / "res"
    cli("run", small, "-o", out, check=True)
    (out / "series.parquet").write_bytes(b"PAR1 garbage")
    p = cli("report", out)
    assert p.returncode == 2 and "series.parquet" in p.stderr and "Traceback" not in p.stderr


def test_reproduce_all_with_nothing_registered(tmp_path, monkeypatch):
    # In-process with an empty registry: paper modules (p1.py, …) are registered now.
    from click.testing import CliRunner

    import qoslab.reproduce as rep
    from qoslab.cli import cli as cli_group

    monkeypatch.setattr(rep, "discover", lambda: {})
    monkeypatch.setattr(rep.runner, "discover", lambda: {})
    p = CliRunner().invoke(cli_group, ["reproduce", "--all", "--quick", "-o", tmp_path / "rep"])
    assert p.exit_code == 0, p.output
    assert "no paper experiments are registered yet" in p.stdout
    report = tmp_path / "rep" / "report.html"
    assert p.stdout.strip().splitlines()[-1] == f"report: {report.resolve()}"
    assert "No experiments are registered yet" in report.read_text()
    idx = json.loads((tmp_path / "rep" / "reproduce.json").read_text())
    assert idx["experiments"] == [] and idx["quick"] is True


def test_reproduce_all_live_adds_the_live_experiments(tmp_path, monkeypatch):
    # --all leaves the live experiments out; --all --live runs every registered one.
    from click.testing import CliRunner

    import qoslab.reproduce as rep
    from qoslab.cli import cli as cli_group

    reg = {n: rep.Experiment(n, n, "", lambda ctx: rep.Outcome(), n != "x-live")
           for n in ("x-sim", "x-live")}  # fmt: skip
    asked = []

    def fake_run(names, out, **kw):
        asked.append(names)
        return {"experiments": [], "quick": True}

    monkeypatch.setattr(rep, "discover", lambda: reg)
    monkeypatch.setattr(rep, "run_experiments", fake_run)
    monkeypatch.setattr("qoslab.report.write_report", lambda out: tmp_path / "r.html")
    for args in (["--all"], ["--all", "--live"], ["x-live"]):
        p = CliRunner().invoke(cli_group, ["reproduce", *args, "-o", tmp_path / "rep"])
        assert p.exit_code == 0, p.output
    assert asked == [None, ["x-sim", "x-live"], ["x-live"]]
    p = CliRunner().invoke(cli_group, ["reproduce", "x-sim", "--live", "-o", tmp_path / "rep"])
    assert p.exit_code == 2 and "--live goes with --all" in p.output


def test_reproduce_unknown_name(tmp_path):
    p = cli("reproduce", "p9-nothing", "-o", tmp_path / "rep")
    assert p.returncode == 2 and "unknown experiment 'p9-nothing'" in p.stderr

"""Using qoslab from notebooks and the shell: the example notebook runs, results show as
HTML, pandas works, help() explains arguments, py.typed ships, --verbose goes anywhere,
and the README's SQL command works after set-up."""

from __future__ import annotations

import inspect
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import qoslab
from qoslab.cli import cli

ROOT = Path(__file__).resolve().parents[1]


def test_example_notebook_runs(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(ROOT / "examples" / "qoslab.ipynb", as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}
    )
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    kinds = [set(o.get("data", {})) for o in outputs]
    assert sum("image/png" in k for k in kinds) >= 4  # figures show without pyplot
    assert any("text/html" in k for k in kinds)  # the Result's HTML repr


def test_result_html_repr_and_pandas(small):
    r = qoslab.run(small)
    html = r._repr_html_()
    assert "<table>" in html and "goodput_bps [bit/s]" in html and ">a<" in html
    assert "None" not in html
    df = r.flows.to_pandas()
    assert list(df["name"]) == ["a", "b"]


def test_help_explains_every_argument():
    for name in qoslab.__all__:
        obj = getattr(qoslab, name)
        if not callable(obj) or (isinstance(obj, type) and issubclass(obj, BaseException)):
            continue
        doc = inspect.getdoc(obj) or ""
        params = [p for p in inspect.signature(obj).parameters if p not in ("self", "kw")]
        missing = [p for p in params if not re.search(rf"\b{p}\b", doc)]
        assert not missing, f"qoslab.{name}: help() does not explain {missing}"


def test_py_typed_ships():
    assert (Path(qoslab.__file__).parent / "py.typed").is_file()


def test_verbose_after_the_subcommand(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\nduration = "bad"\n')
    for args in (["--verbose", "run", str(bad)], ["run", str(bad), "--verbose"],
                 ["run", "-v", str(bad)]):  # fmt: skip
        r = CliRunner().invoke(cli, args)
        assert r.exit_code == 2, (args, r.output)
        assert "Traceback" in r.output and "Use --verbose" not in r.output, args
    r = CliRunner().invoke(cli, ["run", str(bad)])
    assert "Traceback" not in r.output and "Use --verbose" in r.output


def test_readme_sql_command_works_after_setup(tmp_path):
    from qoslab.sweep import run_sweep

    readme = (ROOT / "README.md").read_text()
    m = re.search(r"^(python -m qoslab\.sql [^\n]*\\\n[^\n]*)$", readme, re.M)
    assert m, "the README shows the SQL example as `python -m qoslab.sql …`"
    argv = shlex.split(m.group(1).replace("\\\n", " "))
    sweep_dir = tmp_path / "two-cbr-sweep"
    run_sweep(
        ROOT / "scenarios/examples/two_cbr.toml",
        sweep_dir,
        seeds=1,
        overrides={"duration": "3s", "warmup": "1s"},
        grid={"link.2.rate": ["1Mbps", "2Mbps"]},
        workers=1,
        progress=False,
    )
    assert argv[3] == "results/two-cbr-sweep"
    argv[3] = str(sweep_dir)
    p = subprocess.run([sys.executable, *argv[1:]], capture_output=True, text=True, check=True)
    lines = [ln for ln in p.stdout.splitlines() if "Mbps" in ln]
    assert len(lines) == 4 and "1Mbps" in lines[0] and "2Mbps" in lines[-1]
    bad = subprocess.run(
        [sys.executable, "-m", "qoslab.sql", str(tmp_path / "nope"), "SELECT 1"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "nope: not found" in bad.stderr


def test_sweep_progress_uses_tqdm_auto(monkeypatch, small, tmp_path):
    import tqdm.auto

    made = []

    class Bar:
        def __init__(self, *a, **kw):
            made.append(kw.get("total"))

        def update(self, n=1):
            pass

        def set_postfix_str(self, *a, **kw):
            pass

        def __getattr__(self, name):
            return lambda *a, **kw: None

    monkeypatch.setattr(tqdm.auto, "tqdm", Bar)
    qoslab.run_sweep(small, tmp_path / "sw", seeds=2, workers=1, progress=True)
    assert made == [2]  # the notebook-aware bar (tqdm.auto), not the terminal-only one

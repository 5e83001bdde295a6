"""Using qoslab from notebooks and the shell: the example notebook runs, results show as
HTML, pandas works, help() explains arguments, py.typed ships, --verbose goes anywhere,
sweep progress is notebook-aware."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

import qoslab
from qoslab.cli import cli

ROOT = Path(__file__).resolve().parents[1]


def test_example_notebook_runs_from_any_folder(tmp_path):
    """The notebook finds its scenarios through the package (``qoslab.example``), not a
    path relative to the repository: executed from an empty temporary folder, every
    cell runs (with nbclient when installed, else each code cell's source in turn)."""
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(ROOT / "examples" / "qoslab.ipynb", as_version=4)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    assert not [s for s in code if "scenarios/" in s], "a path relative to the repository"
    work = tmp_path / "elsewhere"
    work.mkdir()
    try:
        import nbclient
    except ImportError:
        nbclient = None
    if nbclient is None:  # the cells' source, in one fresh interpreter, in `work`
        import subprocess
        import sys

        script = "\n".join(s for s in code if not s.lstrip().startswith(("%", "!")))
        p = subprocess.run([sys.executable, "-c", script], cwd=work, capture_output=True,
                           text=True, timeout=300)  # fmt: skip
        assert p.returncode == 0, p.stderr
        return
    client = nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(work)}}
    )
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    kinds = [set(o.get("data", {})) for o in outputs]
    assert sum("image/png" in k for k in kinds) >= 4  # figures show without pyplot
    assert any("text/html" in k for k in kinds)  # the Result's HTML repr


def test_example_finds_packaged_scenarios_from_any_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    p = qoslab.example("two_cbr")
    assert p.is_file() and p.name == "two_cbr.toml" and p.is_absolute()
    assert qoslab.example("tcp_dumbbell.toml").name == "tcp_dumbbell.toml"
    assert qoslab.check(p).name
    with pytest.raises(qoslab.ScenarioError, match="two_cbr"):  # names the choices
        qoslab.example("nope")
    with pytest.raises(qoslab.ScenarioError):
        qoslab.example("../../pyproject")


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

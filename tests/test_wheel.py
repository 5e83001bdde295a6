"""qoslab as an ordinary wheel: scenarios shipped as package data, the CLI working from
an installed copy outside the source tree, and failures failing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from conftest import cli

ROOT = Path(__file__).resolve().parents[1]


def _scenario_files() -> list[str]:
    """Every file under the repository's scenarios/ folder, relative to it."""
    sd = ROOT / "scenarios"
    return sorted(str(p.relative_to(sd)) for p in sd.rglob("*") if p.is_file())


def test_packaged_scenarios_are_the_repository_folder() -> None:
    from qoslab.reproduce import scenarios_dir

    link = ROOT / "python" / "qoslab" / "scenarios"
    # One source: the package's folder is a link to scenarios/, not a copy.
    assert link.is_symlink() and link.resolve() == (ROOT / "scenarios").resolve()
    sd = scenarios_dir()
    assert sd.resolve() == (ROOT / "scenarios").resolve()
    assert "p1/f6b.toml" in _scenario_files() and (sd / "p1" / "f6b.toml").is_file()


def test_reproduce_exits_non_zero_when_an_experiment_fails(tmp_path, monkeypatch) -> None:
    # The scenario files an experiment needs are missing: it fails, and so does the command.
    empty = tmp_path / "no-scenarios"
    empty.mkdir()
    monkeypatch.setenv("QOSLAB_SCENARIOS", str(empty))
    p = cli("reproduce", "p1-f6b", "--quick", "-o", tmp_path / "rep", cwd=tmp_path)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "1 failed;" in p.stdout and "p1-f6b" in p.stdout
    assert "Traceback" not in p.stderr
    idx = json.loads((tmp_path / "rep" / "reproduce.json").read_text())
    assert [e["status"] for e in idx["experiments"]] == ["failed"]
    assert "f6b.toml" in idx["experiments"][0]["error"]
    assert (tmp_path / "rep" / "report.html").is_file()  # the report still says what failed


@pytest.mark.slow
def test_wheel_installs_and_works_outside_the_checkout(tmp_path) -> None:
    t0 = time.perf_counter()
    # 1. Build the wheel with the interpreter and the build settings (RUSTFLAGS of the
    #    PGO build, CARGO_* overrides) `maturin develop` used, so cargo reuses the release
    #    build of scripts/setup.sh (seconds, not minutes).
    venv_dir = Path(sys.executable).parent.parent
    maturin = venv_dir / "bin" / "maturin"
    settings = venv_dir / ".qoslab-build-env.json"
    build_env = dict(os.environ)
    if settings.is_file():
        build_env.update(json.loads(settings.read_text()))
    dist = tmp_path / "dist"
    subprocess.run(
        [str(maturin), "build", "--release", "-q", "-i", sys.executable, "-o", str(dist)],
        cwd=ROOT,
        env=build_env,
        check=True,
        capture_output=True,
    )
    (wheel,) = dist.glob("qoslab-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = [f for f in _scenario_files() if f"qoslab/scenarios/{f}" not in names]
    assert not missing, f"scenario files not in the wheel: {missing}"
    assert not any(n.startswith("scenarios/") for n in names)  # nothing at site-packages' top
    t_build = time.perf_counter() - t0

    # 2. A fresh virtualenv outside the checkout; dependencies from the index (pip's cache).
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    vpy = venv / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(vpy), "install", "-q", str(wheel)],
        check=True,
        capture_output=True,
    )
    t_install = time.perf_counter() - t0 - t_build

    # 3. From a folder outside the checkout, with nothing pointing back into it.
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "QOSLAB_SCENARIOS")}
    env["VIRTUAL_ENV"] = str(venv)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"

    def qoslab(*args: str) -> subprocess.CompletedProcess:
        p = subprocess.run(
            [str(venv / "bin" / "qoslab"), *args],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert p.returncode == 0, f"qoslab {args} exited {p.returncode}:\n{p.stdout}\n{p.stderr}"
        return p

    where = subprocess.run(
        [str(vpy), "-c", "import qoslab; print(qoslab.__file__)"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(where).is_relative_to(venv), where

    out = qoslab("list").stdout
    assert "p1-f6b" in out
    header = next(x for x in out.splitlines() if x.startswith("scenarios ("))
    n = len(_scenario_files())
    sd = Path(header.split(" in ", 1)[1].rstrip(":"))
    assert header.startswith(f"scenarios ({n}) in ") and sd.is_relative_to(venv), header

    example = sd / "examples" / "two_cbr.toml"
    assert "is valid" in qoslab("check", str(example)).stdout
    qoslab("run", str(example), "-o", "two")
    for f in ("flows.parquet", "series.parquet", "summary.json", "scenario.json"):
        assert (work / "two" / f).is_file(), f

    qoslab("reproduce", "p1-f6b", "--quick", "-o", "rep")
    idx = json.loads((work / "rep" / "reproduce.json").read_text())
    assert [(e["name"], e["status"]) for e in idx["experiments"]] == [("p1-f6b", "done")]
    assert (work / "rep" / "report.html").is_file()
    assert any((work / "rep" / "p1-f6b" / "sweeps").iterdir())
    t_total = time.perf_counter() - t0
    print(f"wheel: build {t_build:.1f}s, install {t_install:.1f}s, total {t_total:.1f}s")

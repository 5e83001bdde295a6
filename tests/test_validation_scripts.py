"""validation/ stays runnable and findable: every script answers ``--help`` (so a renamed
helper it imports breaks here, not silently months later), the catalogue
validation/README.md is current, no script is cited by nobody, and no file of the
repository cites a validation script that does not exist."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
VALIDATION = ROOT / "validation"


def _catalog():
    spec = importlib.util.spec_from_file_location("validation_catalog", VALIDATION / "catalog.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


CATALOG = _catalog()
COMMANDS = [p for p in CATALOG.scripts() if CATALOG.has_main(p)]
LIBRARIES = [p for p in CATALOG.scripts() if not CATALOG.has_main(p)]


def _help(path: Path) -> tuple[Path, int, str]:
    env = {**os.environ, "PYTHONPATH": str(VALIDATION)}
    try:
        p = subprocess.run(
            [sys.executable, str(path), "--help"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return path, -1, "timed out after 120 s: does it run before parsing its arguments?"
    return path, p.returncode, p.stdout + p.stderr


@pytest.mark.slow
def test_every_validation_script_answers_help():
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as ex:
        results = list(ex.map(_help, COMMANDS))
    bad = [
        f"{p.name}: exit {rc}: {out.strip()[-300:]}"
        for p, rc, out in results
        if rc != 0 or "usage:" not in out
    ]
    assert not bad, "\n".join(bad)
    assert len(results) >= 60


def test_validation_libraries_import():
    sys.path.insert(0, str(VALIDATION))
    try:
        for p in LIBRARIES:
            spec = importlib.util.spec_from_file_location(p.stem, p)
            spec.loader.exec_module(importlib.util.module_from_spec(spec))
    finally:
        sys.path.remove(str(VALIDATION))


def test_the_catalogue_is_current():
    readme = (VALIDATION / "README.md").read_text()
    assert readme == CATALOG.render(), "run python validation/catalog.py"


def test_the_catalogue_lists_kinds_that_can_differ():
    # Each kind is reached by a script, and a script nobody cites would show as "—".
    rows = [r for r in CATALOG.render().splitlines() if r.startswith("| ") and "`" in r]
    kinds = {r.split("|")[1].strip() for r in rows}
    assert kinds == set(CATALOG.KINDS), kinds
    orphans = [r.split("|")[2].strip() for r in rows if r.rstrip().endswith("| — |")]
    assert not orphans, f"scripts no page, module or script cites: {orphans}"


def test_no_file_cites_a_missing_validation_script():
    pat = re.compile(r"validation/[A-Za-z0-9_/]+\.(?:py|cc|sh)\b")
    missing = []
    for base in ("README.md", "CHANGELOG.md", "docs", "python", "tests", "benches", "scripts"):
        p = ROOT / base
        files = [p] if p.is_file() else [f for f in p.rglob("*") if f.suffix in (".md", ".py")]
        for f in files:
            for m in pat.findall(f.read_text(errors="replace")):
                if not (ROOT / m).exists():
                    missing.append(f"{f.relative_to(ROOT)}: {m}")
    assert not missing, "\n".join(sorted(set(missing)))


def test_an_orphan_would_be_caught(tmp_path, monkeypatch):
    # The orphan check must be able to fail: a script no file mentions shows as "—".
    orphan = VALIDATION / "zz_orphan_probe_for_test.py"
    orphan.write_text('"""A probe."""\nif __name__ == "__main__":\n    pass\n')
    try:
        text = CATALOG.render()
    finally:
        orphan.unlink()
    row = next(r for r in text.splitlines() if "zz_orphan_probe_for_test.py" in r)
    assert row.startswith("| investigation |") and row.rstrip().endswith("| — |")

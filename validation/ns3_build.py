"""Builds the ns-3 peer programs (validation/ns3/build.sh) when one is missing or older
than a source it is made from; shared by the ns-3 drivers of the paper reproductions."""

from __future__ import annotations

import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parent.parent


def build(venv: pathlib.Path, binary: pathlib.Path, *sources: pathlib.Path) -> None:
    """Runs validation/ns3/build.sh against the ns3 wheel in ``venv`` unless ``binary``
    is newer than every one of ``sources``."""
    newest = max(s.stat().st_mtime for s in sources)
    if binary.exists() and binary.stat().st_mtime > newest:
        return
    subprocess.run(["bash", str(ROOT / "validation" / "ns3" / "build.sh"), str(venv)], check=True)

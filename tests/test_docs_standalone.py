"""The repository stands alone: no tracked file cites design notes that are not in it
(the design, live-mode, paper and style notes of the team's workspace, or its shared
folder beside the clone). A user who clones qoslab must find every page a text refers
to; docs/architecture.md and docs/live.md hold what those notes held."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The team's notes, their shared folder, and the file names of the papers' working copies
#: (``NNN_<16 hex digits>.txt``, also shortened to ``NNN_…``); docs/bibliography.md names
#: the papers instead.
OUTSIDE = re.compile(
    r"\b(?:DESIGN|LIVE|PAPERS|STYLE)\.md\b|\.\./shared\b|\b00\d_(?:…|[0-9a-f]{16}\b)"
)


def offending(text: str) -> list[str]:
    """The lines of ``text`` that cite a note outside the repository."""
    return [line.strip() for line in text.splitlines() if OUTSIDE.search(line)]


def test_the_pattern_catches_what_it_should():
    # The names are built here so that this file does not cite them itself.
    note, shared = "DESIGN" + ".md", ".." + "/shared"
    assert offending(f"see {note} §3\nfine line\n({shared}/papers/p1.pdf)") == [
        f"see {note} §3",
        f"({shared}/papers/p1.pdf)",
    ]
    assert offending("docs/live.md and docs/architecture.md") == []
    copy = "00" + "4_" + "f17e641b6fe26cf6.txt"
    assert offending(f"P4 ({copy})\nP0 (`papers/00" + "0_…`)\n1_000_000") == [
        f"P4 ({copy})",
        "P0 (`papers/00" + "0_…`)",
    ]


def test_no_tracked_file_cites_notes_outside_the_repository():
    files = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    bad = []
    for name in files:
        if name == "tests/test_docs_standalone.py":
            continue
        path = ROOT / name
        if not path.is_file() or path.stat().st_size > 5_000_000:
            continue
        raw = path.read_bytes()
        if b"\0" in raw[:4096]:
            continue
        bad += [f"{name}: {line[:120]}" for line in offending(raw.decode(errors="replace"))]
    assert not bad, "\n".join(bad)

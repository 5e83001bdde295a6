#!/usr/bin/env python3
"""Checks a reproduction report the way a reader who was sent a copy sees it: copies the
results folder to another place (with a space in its path), opens the index, the filter
pages and one page of each paper in headless Chromium, and prints per page the images
loaded and the links that do not resolve inside the copy; exits 1 if any do not.

Usage: .venv/bin/python scripts/check_report_links.py results/reproduce
(uses the Chromium helpers of tests/test_report.py; needs chromium-headless-shell)."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import test_report as t


def main(src: Path) -> int:
    """Checks the report in ``src``; returns the exit status."""
    copy = Path(tempfile.mkdtemp()) / "shared copy" / src.name
    shutil.copytree(src, copy)
    pages = [copy / "report.html", *sorted(copy.glob("report-*.html"))]
    for paper in ("p0-", "p1-", "p2-", "p3-", "p4-"):
        pages += sorted(copy.glob(f"{paper}*/report.html"))[:1]
    sizes = {p.parent.name: p.stat().st_size for p in copy.glob("*/report.html")}
    biggest = max(sizes, key=sizes.get) if sizes else "-"
    print(f"index {(copy / 'report.html').stat().st_size} B; largest page "
          f"{sizes.get(biggest, 0)} B ({biggest}); {len(sizes)} experiment pages")  # fmt: skip
    bad_pages = 0
    for page in pages:
        total, ok, _, urls = t._probe(page)
        bad = t._unresolved(urls, copy.resolve())
        bad_pages += bool(bad) or ok != total
        print(f"{page.relative_to(copy)}: images {ok}/{total}, links {len(urls)}, "
              f"unresolved {len(bad)} {bad[:3]}")  # fmt: skip
    shutil.rmtree(copy.parent.parent)
    return 1 if bad_pages else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))

"""Screenshots of ``qoslab draw`` pictures as a browser shows them, for the docs.

Usage: ``python scripts/topology_screenshots.py OUT_DIR SCENARIO...`` writes
``OUT_DIR/topology-<scenario stem>.png`` for each scenario: ``qoslab draw`` writes the
SVG (as the reports embed it), headless Chromium (Debian's ``chromium`` package,
installed by hand: neither setup nor CI needs it) screenshots it at its own size.
docs/scenario-format.md shows the ones in docs/figures/.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def _svg_size_px(svg: Path) -> tuple[int, int]:
    """The SVG's width and height in CSS pixels (matplotlib writes them in points)."""
    head = svg.read_text()[:2000]
    m = re.search(r'width="([\d.]+)pt" height="([\d.]+)pt"', head)
    if m is None:
        raise SystemExit(f"{svg}: no width/height in points in the <svg> element")
    return round(float(m.group(1)) * 4 / 3), round(float(m.group(2)) * 4 / 3)


def main(argv: list[str]) -> int:
    """Draws and screenshots each scenario of ``argv[1:]`` into ``argv[0]``."""
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    browser = shutil.which("chromium") or shutil.which("chromium-headless-shell")
    if browser is None:
        print("topology_screenshots: needs chromium (apt-get install chromium)", file=sys.stderr)
        return 1
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for sc in map(Path, argv[1:]):
            svg = Path(tmp) / f"{sc.stem}.svg"
            subprocess.run([sys.executable, "-m", "qoslab", "draw", str(sc), "-o", str(svg)],
                           check=True, stdout=subprocess.DEVNULL)  # fmt: skip
            w, h = _svg_size_px(svg)
            png = (out / f"topology-{sc.stem}.png").resolve()
            subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                            "--hide-scrollbars", f"--window-size={w},{h}",
                            f"--screenshot={png}", svg.resolve().as_uri()],
                           check=True, capture_output=True, timeout=120)  # fmt: skip
            print(png)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""Every TOML block in the docs parses (TOML 1.0, as Python's tomllib and qoslab read
it); a block that is a whole scenario passes ``qoslab check``, and a block with links
is checked inside a minimal scenario around it (an inline table spread over
lines had slipped into docs/queues-and-conditioners.md)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import qoslab

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
FILES = [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]
BLOCKS = [
    (f"{f.relative_to(ROOT)}:{f.read_text()[: m.start()].count(chr(10)) + 1}", m.group(1))
    for f in FILES
    for m in re.finditer(r"```toml\n(.*?)```", f.read_text(), re.S)
]


def test_the_docs_have_toml_blocks():
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("text", [b[1] for b in BLOCKS], ids=[b[0] for b in BLOCKS])
def test_toml_block(text):
    data = tomllib.loads(text)
    if "duration" in data:
        qoslab.check(data)
    elif "link" in data and "node" not in data:
        names = {x for link in data["link"] for x in (link.get("a"), link.get("b"))}
        for c in data.get("conditioner", []):
            names.add(c.get("at"))
        names.discard(None)
        sc = {"duration": "1s", "node": [{"name": n, "kind": "router"} for n in sorted(names)]}
        qoslab.check({**sc, **data})

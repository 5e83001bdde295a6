"""Every relative link in the README and in docs/ resolves: the file it names exists in
the repository and, for a ``#fragment`` into a Markdown page, that page has a heading
(GitHub's anchor of it) or an ``<a id>`` of that name. A renamed page or heading then
fails here instead of leaving a reader at a dead link."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parent.parent
#: ``[text](target)`` and ``![alt](target)``; the target ends at the first space or ``)``.
LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^(```|~~~)")
EXPLICIT = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")


def pages() -> list[Path]:
    """The README and every Markdown page under docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, inline code marks and punctuation other
    than ``-`` and ``_`` dropped, each space a ``-``."""
    text = re.sub(r"<[^>]+>", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors a page offers: its headings' (``-1``, ``-2`` … for repeats) and its
    ``<a id>``s."""
    out: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if fenced:
            continue
        out.update(EXPLICIT.findall(line))
        m = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if m:
            s = slug(m.group(2))
            n = seen.get(s, 0)
            out.add(s if n == 0 else f"{s}-{n}")
            seen[s] = n + 1
    return out


def links(page: Path) -> list[tuple[int, str]]:
    """``(line number, target)`` of every link in ``page`` outside fenced code."""
    out = []
    fenced = False
    for no, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if fenced:
            continue
        # Inline code spans can hold bracket-paren text that is no link.
        line = re.sub(r"`[^`]*`", "", line)
        out += [(no, t) for t in LINK.findall(line)]
    return out


def broken(page: Path, cache: dict[Path, set[str]]) -> list[str]:
    """The links of ``page`` that do not resolve, each with the reason."""
    bad = []
    for no, target in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("//"):
            continue  # http(s), mailto: not this test's business
        path, _, frag = target.partition("#")
        dest = (page.parent / unquote(path)).resolve() if path else page
        where = f"{page.relative_to(ROOT)}:{no}: {target}"
        if not dest.exists():
            bad.append(f"{where} (no such file)")
            continue
        if not str(dest).startswith(str(ROOT)):
            bad.append(f"{where} (outside the repository)")
            continue
        if frag and dest.suffix == ".md":
            if dest not in cache:
                cache[dest] = anchors(dest)
            if unquote(frag).lower() not in cache[dest]:
                bad.append(f"{where} (no heading or anchor '{frag}' in {dest.name})")
    return bad


def test_slug_follows_github():
    assert slug("The datapath's budget") == "the-datapaths-budget"
    assert slug("Repeats (`--repeat N`)") == "repeats---repeat-n"
    assert slug("P3 — RTT-RTO aware") == "p3--rtt-rto-aware"


def test_a_broken_link_is_caught(tmp_path, monkeypatch):
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    (tmp_path / "a.md").write_text("# Top\n\n[ok](#top) [gone](b.md) [bad](#nowhere)\n")
    got = broken(tmp_path / "a.md", {})
    assert got == ["a.md:3: b.md (no such file)",
                   "a.md:3: #nowhere (no heading or anchor 'nowhere' in a.md)"]  # fmt: skip


def test_every_relative_link_resolves():
    cache: dict[Path, set[str]] = {}
    bad = [b for p in pages() for b in broken(p, cache)]
    assert not bad, f"{len(bad)} broken links:\n" + "\n".join(bad)

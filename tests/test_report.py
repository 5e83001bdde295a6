"""The HTML report: self-contained, every expected figure present (also as SVG and PNG
files), tables with units and no None/NaN cells, and pages checked in headless Chromium
(with screenshots) for a run with traces and queues, a two-parameter sweep and a
reproduction with verdict counts."""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import qoslab
from qoslab import reproduce
from qoslab.report import expected_figures, write_report
from qoslab.reproduce import (
    Bound,
    Comparison,
    Explanation,
    Outcome,
    Value,
    register,
    run_experiments,
)
from qoslab.sweep import run_sweep

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = next(
    (
        shutil.which(b)
        for b in ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome")
        if shutil.which(b)
    ),
    None,
)

PROBE = """<script>
// Lazy images are loaded now (a headless window shows only the top of a page); the
// probe waits for them, then records what loaded and every link as Chromium resolves it.
for (const i of document.images) i.loading = 'eager';
function probe(n) {
  const imgs = [...document.images];
  const ok = imgs.filter(i => i.complete && i.naturalWidth > 0).length;
  if (ok < imgs.length && n < 30) { setTimeout(() => probe(n + 1), 100); return; }
  const wide = [...document.querySelectorAll('div.scroll')]
    .filter(d => getComputedStyle(d).overflowX === 'auto').length;
  const links = [...document.querySelectorAll('a[href]')].map(a => a.href)
    .concat(imgs.map(i => i.src), imgs.map(i => i.currentSrc))
    .concat([...document.querySelectorAll('source[srcset]')]
      .map(s => new URL(s.getAttribute('srcset'), document.baseURI).href));
  document.body.setAttribute('data-links', links.join(' '));
  document.body.setAttribute('data-probe', imgs.length + '/' + ok + '/' + wide);
}
window.addEventListener('load', () => probe(0));
</script>"""


def _chromium(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _probe(html_file: Path) -> tuple[int, int, int, list[str]]:
    """(images, images loaded, scrolling table boxes, every link and image source as
    Chromium resolves it) for the page; the probe is a copy of the page beside it."""
    probe = html_file.with_name(f"probe-{html_file.name}")
    probe.write_text(html_file.read_text().replace("</body>", PROBE + "</body>"))
    try:
        p = _chromium(
            [
                "--allow-file-access-from-files",
                "--virtual-time-budget=10000",
                "--dump-dom",
                probe.as_uri(),
            ]
        )
    finally:
        probe.unlink()
    m = re.search(r'data-probe="(\d+)/(\d+)/(\d+)"', p.stdout)
    assert m, f"chromium did not report (rc={p.returncode}): {p.stderr[-2000:]}"
    links = re.search(r'data-links="([^"]*)"', p.stdout)
    urls = html.unescape(links.group(1)).split() if links else []
    urls = [u.replace(probe.name, html_file.name) for u in urls]  # links to itself
    return int(m.group(1)), int(m.group(2)), int(m.group(3)), urls


def _images_loaded(html_file: Path) -> tuple[int, int, int]:
    """(images, images loaded, scrolling table boxes) as Chromium sees the page."""
    return _probe(html_file)[:3]


def _unresolved(urls: list[str], inside: Path) -> list[str]:
    """The links that do not resolve to a file under ``inside`` (and, with a
    ``#fragment``, to an element with that id in it)."""
    from urllib.parse import unquote, urlsplit

    bad = []
    for u in urls:
        s = urlsplit(u)
        f = Path(unquote(s.path))
        if s.scheme != "file" or not f.is_file() or not f.resolve().is_relative_to(inside):
            bad.append(u)
        elif s.fragment and f'id="{s.fragment}"' not in f.read_text(errors="replace"):
            bad.append(u)
    return bad


def _screenshot(html_file: Path, name: str) -> Path:
    """A full-width screenshot of the page (kept under $QOSLAB_SCREENSHOTS if set)."""
    keep = os.environ.get("QOSLAB_SCREENSHOTS")
    out = Path(keep) / f"{name}.png" if keep else html_file.with_name(f"{name}.png")
    out.parent.mkdir(parents=True, exist_ok=True)
    p = _chromium([f"--screenshot={out}", "--window-size=1200,2400", html_file.as_uri()])
    assert out.is_file(), f"no screenshot (rc={p.returncode}): {p.stderr[-2000:]}"
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000  # a page, not a blank
    return out


def _need_chromium() -> None:
    if CHROMIUM is None:
        # scripts/test.sh installs chromium and sets this: there a missing browser fails.
        if os.environ.get("QOSLAB_REQUIRE_CHROMIUM") == "1":
            pytest.fail("chromium is required (QOSLAB_REQUIRE_CHROMIUM=1) but not found")
        pytest.skip("no chromium (scripts/test.sh installs it)")


@pytest.fixture(scope="module")
def dumbbell_run(tmp_path_factory):
    """The TCP dumbbell example (traces and a recorded queue), shortened."""
    d = tmp_path_factory.mktemp("dumbbell") / "run"
    r = qoslab.run(ROOT / "scenarios/examples/tcp_dumbbell.toml", {"duration": "20s"})
    return r.save(d)


@pytest.fixture(scope="module")
def sweep2(tmp_path_factory):
    """A two-parameter sweep (rate × delay) of the two-CBR example."""
    out = tmp_path_factory.mktemp("sweep2") / "sw"
    run_sweep(
        ROOT / "scenarios/examples/two_cbr.toml",
        out,
        seeds=2,
        overrides={"duration": "4s", "warmup": "1s"},
        grid={"link.2.rate": ["500kbps", "1Mbps", "2Mbps"], "link.2.delay": ["5ms", "50ms"]},
        workers=2,
        progress=False,
    )
    return out


@pytest.fixture(scope="module")
def dumbbell_page(dumbbell_run):
    return write_report(dumbbell_run)


@pytest.fixture(scope="module")
def sweep_page(sweep2):
    return write_report(sweep2)


@pytest.fixture
def repro(tmp_path):
    saved = dict(reproduce.REGISTRY)
    ex = Explanation("a known cause", doc="docs/papers/p1.md#t1-queueing", script="x.py").tested(
        "the cause removed", 1.0
    )

    @register("t-verdicts", title="three verdicts", paper="test §1")
    def exp(ctx):
        return Outcome(
            comparisons=[
                Comparison("within", 1.0, ref=Value(1.0), rtol=0.01, unit="Mb/s"),
                Comparison(
                    "explained",
                    0.5,
                    ref=Bound(at_least=1.0, against="request"),
                    explanation=ex,
                    source="§1",
                ),
                Comparison("outside", 2.0, ref=Bound(at_most=1.0, against="a bound"), source="§1"),
            ]
        )

    run_experiments(["t-verdicts"], tmp_path / "rep", log=lambda s: None)
    yield tmp_path / "rep"
    reproduce.REGISTRY.clear()
    reproduce.REGISTRY.update(saved)


def _cells(html: str) -> list[str]:
    return re.findall(r"<td[^>]*>(.*?)</td>", html, re.S)


def test_run_report_draws_every_expected_figure(dumbbell_run, dumbbell_page):
    r = qoslab.load(dumbbell_run)
    want = expected_figures(r)
    # goodput per interval and cumulative, the traced flow's sender state, the queue, drops
    assert want == ["topology", "goodput", "cumulative", "sender-rtt20", "queues", "drops"]
    html = dumbbell_page.read_text()
    for slug in want:
        f = dumbbell_run / "figures" / f"{slug}.svg"
        assert f.is_file() and f.stat().st_size > 5_000, f
        # PNG and PDF only on demand (qoslab report --formats): drawing each figure in
        # two formats was half of a report's time.
        assert not (dumbbell_run / "figures" / f"{slug}.png").exists()
    assert html.count("<img") == len(want)
    # Figures are files beside the page, lazily loaded; nothing inlined.
    srcs = re.findall(r'<img[^>]*src="([^"]+)"', html)
    assert srcs == [f"figures/{s}.svg" for s in want]
    assert html.count('loading="lazy"') == len(want) and "base64" not in html
    assert "<script" not in html and "http" not in html.replace("http-equiv", "")
    assert "file://" not in html
    # Tables link to their Parquet files, relative to the page.
    assert '<a href="flows.parquet">flows.parquet</a>' in html
    # Legends name the flows; the figure titles say what is drawn.
    assert "sender state of rtt20" in html and "queues" in html
    svg = (dumbbell_run / "figures" / "goodput.svg").read_text()
    assert all(f"rtt{n}" in svg for n in (20, 40, 80, 160))
    svg = (dumbbell_run / "figures" / "sender-rtt20.svg").read_text()
    assert "ssthresh" in svg and "srtt" in svg


def test_tables_have_units_and_no_empty_cells(dumbbell_run, dumbbell_page, sweep_page):
    for page in (dumbbell_page, sweep_page):
        html = page.read_text()
        cells = _cells(html)
        assert cells and not any(c.strip() in ("None", "nan", "NaN", "null") for c in cells)
        assert '<div class="scroll"><table>' in html
    html = (dumbbell_run / "report.html").read_text()
    assert 'goodput_bps <span class="unit">[bit/s]</span>' in html
    assert 'srtt <span class="unit">[s]</span>' in html
    # Autoescaped: a flow name with markup would be text, not HTML.
    assert "{{" not in html and "{%" not in html


def test_sweep_figures_one_line_per_setting_on_a_numeric_axis(sweep2, sweep_page):
    html = sweep_page.read_text()
    # axes and titles name the parameter, not its key path
    assert "goodput vs rate (link 2)" in html and "goodput vs delay (link 2)" in html
    svg = (sweep2 / "figures" / "goodput-vs-link.2.rate.svg").read_text()
    # One panel per delay, the rate in Mb/s on a numeric axis, offered rates as references.
    assert "delay (link 2) = 5ms" in svg and "delay (link 2) = 50ms" in svg
    assert "rate (link 2) [Mb/s]" in svg and "goodput [Mb/s]" in svg
    assert "offered a" in svg and "offered b" in svg
    # SQL orders the rates numerically through the companion column.
    import duckdb

    con = duckdb.connect(str(sweep2 / "catalog.duckdb"), read_only=True)
    try:
        rows = con.sql(
            'SELECT DISTINCT "link.2.rate", "link.2.rate_bps" FROM summary ORDER BY 2'
        ).fetchall()
        runs = con.sql(
            'SELECT DISTINCT "link.2.rate", "link.2.rate_bps" FROM runs ORDER BY 2 DESC'
        ).fetchall()
    finally:
        con.close()
    assert rows == [("500kbps", 5e5), ("1Mbps", 1e6), ("2Mbps", 2e6)]
    assert [r[0] for r in runs] == ["2Mbps", "1Mbps", "500kbps"]


def test_report_formats_on_demand(dumbbell_run, tmp_path):
    """``qoslab report --formats svg,png,pdf`` writes each format, the page shows the SVG
    with the PNG as its fallback and links all three; an unknown format, or none the page
    can show, is a usage error naming the option, and nothing is written."""
    from click.testing import CliRunner

    from qoslab.cli import cli

    run = tmp_path / "run"
    shutil.copytree(dumbbell_run, run, ignore=shutil.ignore_patterns("figures", "report.html"))
    res = CliRunner().invoke(cli, ["report", str(run), "--formats", "svg,png,pdf"])
    assert res.exit_code == 0, res.output
    html = (run / "report.html").read_text()
    for ext, magic in (("svg", b"<?xml"), ("png", b"\x89PNG"), ("pdf", b"%PDF")):
        f = run / "figures" / f"goodput.{ext}"
        assert f.read_bytes()[: len(magic)] == magic, f
        assert f'<a href="figures/goodput.{ext}">{ext.upper()}</a>' in html
    assert '<source srcset="figures/goodput.svg" type="image/svg+xml">' in html
    assert re.search(r'<img alt="[^"]*" src="figures/goodput.png"', html)
    for bad in ("svg,gif", "pdf"):
        fresh = tmp_path / f"fresh-{bad}"
        shutil.copytree(run, fresh, ignore=shutil.ignore_patterns("figures", "report.html"))
        res = CliRunner().invoke(cli, ["report", str(fresh), "--formats", bad])
        assert res.exit_code == 2 and "--formats" in res.output, res.output
        assert not (fresh / "report.html").exists() and not (fresh / "figures").exists()


def _text(cell: str) -> str:
    return re.sub(r"<[^>]+>", "", cell)


def test_report_reproduction_counts_verdicts(repro):
    index = write_report(repro)
    html = index.read_text()
    counts = re.search(r'<table class="verdicts" id="verdict-counts">(.*?)</table>', html, re.S)
    assert counts
    row = re.search(r"<th class=\"l\">comparisons</th>(.*?)</tr>", counts.group(1), re.S)
    assert [_text(c) for c in _cells(row.group(0))] == ["1", "1", "0", "1", "0", "—", "0"]
    # The counts are links to the list of that verdict; a zero is no link.
    assert '<a href="report-outside-explained.html">1</a>' in row.group(0)
    assert '<a href="report-outside.html">1</a>' in row.group(0)
    assert "report-tie.html" not in row.group(0)
    page = (repro / "t-verdicts" / "report.html").read_text()
    assert '<a href="t-verdicts/report.html">t-verdicts</a>' in html
    assert "[outside: 1 within, 1 outside-explained, 1 outside]" in page
    assert "a known cause" in page and "docs/papers/p1.md#t1-queueing" in page
    assert "counterfactual: the cause removed → 1 (lands in the band)" in page
    # The docs passage is rendered into the page, not linked in the checkout.
    assert "The cause is the bottleneck" in page and "queueing delay" in page
    assert "file://" not in page and "file://" not in html
    explained = (repro / "report-outside-explained.html").read_text()
    assert "explained" in explained and 'href="t-verdicts/report.html#c1"' in explained
    assert "a known cause" in explained and ">outside<" not in explained


def test_experiment_page_says_each_thing_once_and_never_blank(tmp_path):
    """Two misses explained by the same docs passage show it once (the second links to
    the first); an outside with no explanation says it is an open finding instead of a
    blank; a deviation of 0.004 % is not printed "+0.00"."""
    saved = dict(reproduce.REGISTRY)
    ex = Explanation("a known cause", doc="docs/papers/p1.md#t1-queueing").tested(
        "the cause removed", 1.0
    )

    @register("t-once", title="one passage, two misses", paper="test §1")
    def exp(ctx):
        return Outcome(
            comparisons=[
                Comparison(
                    "first miss",
                    0.5,
                    ref=Bound(at_least=1.0, against="a"),
                    explanation=ex,
                    source="§1",
                ),
                Comparison(
                    "second miss",
                    0.6,
                    ref=Bound(at_least=1.0, against="b"),
                    explanation=ex,
                    source="§1",
                ),
                Comparison(
                    "open miss", 2.0, ref=Bound(at_most=1.0, against="a bound"), source="§1"
                ),
                Comparison("tiny", 1.00004, ref=Value(1.0), rtol=0.01),
            ]
        )

    try:
        run_experiments(["t-once"], tmp_path / "rep", log=lambda s: None)
        write_report(tmp_path / "rep")
    finally:
        reproduce.REGISTRY.clear()
        reproduce.REGISTRY.update(saved)
    page = (tmp_path / "rep" / "t-once" / "report.html").read_text()
    assert page.count("The cause is the bottleneck") == 1
    assert 'shown above, under <a href="#why-c0">first miss</a>' in page
    row = re.search(r'<tr class="v-outside" id="c2">(.*?)</tr>', page, re.S)
    assert row and "no tested explanation: an open finding" in row.group(1)
    tiny = re.search(r'<tr class="v-within" id="c3">(.*?)</tr>', page, re.S)
    assert tiny and "<td>+0.004</td>" in tiny.group(1) and "+0.00<" not in page


def test_pages_in_chromium_with_screenshots(dumbbell_page, sweep_page, repro):
    _need_chromium()
    for page, name, min_imgs in (
        (dumbbell_page, "run-tcp-dumbbell", 5),
        (sweep_page, "sweep-two-parameters", 2 + 4),
        (write_report(repro), "reproduce", 0),
    ):
        total, ok, scrolling = _images_loaded(page)
        assert total >= min_imgs and ok == total, (name, total, ok)
        assert scrolling >= 1  # wide tables scroll instead of being clipped
        _screenshot(page, name)


def test_chromium_probe_can_fail(tmp_path):
    """The probe itself detects a broken image (so the test above could fail)."""
    _need_chromium()
    f = tmp_path / "broken.html"
    f.write_text('<html><body><img src="data:image/png;base64,AAAA"></body></html>')
    assert _images_loaded(f) == (1, 0, 0)


def test_paper_figure_hook_draws_and_saves(tmp_path):
    import polars as pl

    from qoslab import plot
    from qoslab.reproduce import FIGURES, discover, figure

    discover()
    saved_reg, saved_figs = dict(reproduce.REGISTRY), dict(FIGURES)

    @register("t-fig", title="with a paper figure")
    def exp(ctx):
        return Outcome(tables={"curve": pl.DataFrame({"x": [1.0, 2.0], "y": [1.0, 1.9]})})

    @figure("t-fig")
    def draw(saved):
        t = saved.table("curve")
        fig, ax = plot.new_figure()
        ax.plot(t["x"], t["y"], "o-", label="ours")
        plot.overlay_paper(ax, [1.0, 2.0], [1.0, 2.0])
        plot.paper_band(ax, [1.5], [1.2], [1.6])
        ax.legend()
        return fig

    @register("t-fig-broken", title="figure raises")
    def exp2(ctx):
        return Outcome(comparisons=[Comparison("x", 1.0, ref=Value(1.0))])

    @figure("t-fig-broken")
    def broken(saved):
        raise ValueError("no such table")

    try:
        run_experiments(["t-fig", "t-fig-broken"], tmp_path / "rep", log=lambda s: None)
        write_report(tmp_path / "rep")
        html = (tmp_path / "rep" / "t-fig" / "report.html").read_text()
        html += (tmp_path / "rep" / "t-fig-broken" / "report.html").read_text()
    finally:
        reproduce.REGISTRY.clear()
        reproduce.REGISTRY.update(saved_reg)
        FIGURES.clear()
        FIGURES.update(saved_figs)
    for ext in ("svg", "png"):
        assert (tmp_path / "rep" / "t-fig" / "figures" / f"paper-figure.{ext}").is_file()
    svg = (tmp_path / "rep" / "t-fig" / "figures" / "paper-figure.svg").read_text()
    assert "paper" in svg and "ours" in svg
    assert "figures/paper-figure.svg" in html
    assert "The paper figure could not be drawn: ValueError: no such table" in html


def test_p1_paper_figures_draw_from_tables_shaped_as_p1_writes_them(tmp_path):
    import polars as pl

    from qoslab.reproduce import Saved, p1, p1_figures

    draw = {
        "p1-f6b": p1_figures.f6b,
        "p1-f7a": p1_figures.f7a,
        "p1-f7b": p1_figures.f7b,
        "p1-t1": p1_figures.t1,
        "p1-t2": p1_figures.t2,
        "p1-t3t4": p1_figures.t3t4,
    }
    rows = []
    for run in ("r1", "r2"):
        for r in p1.RATES:
            rows.append({"run": run, "requested": r, "goodput_bps": r * 1.06, "ratio": 1.06,
                         "link.0.delay": "1.5ms", "access_ms": 1.5})  # fmt: skip
    flows = pl.DataFrame(rows)
    mm = p1.minmax(flows, ["requested"])
    mm_delay = p1.minmax(flows, ["link.0.delay", "requested"])
    mm_access = p1.minmax(flows, ["access_ms"])
    f7a = pl.DataFrame({"ecn": [False, True], "requested": [5e4, 1e6],
                        "vs_target": [0.99, 1.01]})  # fmt: skip
    f7b = pl.DataFrame({"link.0.delay": ["0.5ms", "3ms"] * 2, "requested": [5e4, 5e4, 1e7, 1e7],
                        "goodput_bps": [5.3e4, 5.2e4, 1.06e7, 9.6e6], "rtt_dev": [0.0, 0.005] * 2,
                        "error": [0.0, 0.02, 0.0, 0.024]})  # fmt: skip
    tables = {
        "p1-f6b": {"f6b-drop": mm, "f6b-ecn": mm},
        "p1-f7a": {"f7a": f7a},
        "p1-f7b": {"f7b-drop": f7b},
        "p1-t1": {"t1-2mbps-drop": mm_delay, "t1-50mbps-ecn": mm_delay},
        "p1-t2": {"t2-2mbps-100k-drop": mm_access, "t2-bias-by-rtt": mm_access},
        "p1-t3t4": {"t3-drop": mm, "t4-drop": mm, "t4-ecn": mm},
    }
    for name, ts in tables.items():
        d = tmp_path / name
        d.mkdir()
        for t, df in ts.items():
            df.write_parquet(d / f"table-{t}.parquet")
        figs = draw[name](Saved(d, {"name": name, "tables": list(ts)}, True))
        figs = figs if isinstance(figs, list) else [figs]
        assert figs and all(f is not None and f.axes for f in figs), name
        labels = [t.get_text() for f in figs for ax in f.axes if ax.get_legend()
                  for t in ax.get_legend().get_texts()]  # fmt: skip
        assert any("paper" in x for x in labels), (name, labels)


def test_reference_lines_the_scenario_implies():
    from qoslab.report import _references

    tcp = {"tcp": {"variant": "sack"}}
    links = [{"rate": "100Mbps"}, {"rate": 10_000_000}, {"rate": "100Mbps"}]
    dumbbell = {"link": links, "flow": [{"name": f"f{i}", **tcp} for i in range(4)]}
    assert _references(dumbbell) == {"fair share (slowest link / 4)": 2.5e6}
    cbr = {"link": links, "flow": [{"name": "a", "cbr": {"rate": "800kbps"}}]}
    assert _references(cbr) == {"offered a": 8e5}
    trc = {
        **dumbbell,
        "conditioner": [{"stages": [{"kind": "trc", "flow": "f1", "rate": "1Mbps"}]}],
    }
    assert _references(trc) == {"requested f1": 1e6}


def test_experiments_drawn_in_parallel_give_the_serial_page(small, tmp_path, monkeypatch):
    import concurrent.futures

    pools = []

    class Pool(concurrent.futures.ProcessPoolExecutor):
        def __init__(self, *a, **kw):
            pools.append(a)
            super().__init__(*a, **kw)

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", Pool)
    saved_reg = dict(reproduce.REGISTRY)
    for name in ("t-par-a", "t-par-b"):
        register(name, title=name)(lambda ctx, n=name: ctx.run(small, label=n) and Outcome())
    try:
        run_experiments(["t-par-a", "t-par-b"], tmp_path / "rep", quick=True, log=lambda s: None)
        pages = {}
        for cores in (1, 2):
            monkeypatch.setattr(os, "cpu_count", lambda c=cores: c)
            write_report(tmp_path / "rep", tmp_path / f"{cores}.html")
            page = "".join((tmp_path / "rep" / n / "report.html").read_text()
                           for n in ("t-par-a", "t-par-b"))  # fmt: skip
            page = page.replace(f"../../{cores}.html", "INDEX")  # the link back to the index
            pages[cores] = re.sub(r"qoslab \S+, \d{4}-\d\d-\d\d \d\d:\d\d", "", page)
    finally:
        reproduce.REGISTRY.clear()
        reproduce.REGISTRY.update(saved_reg)
    assert len(pools) == 1, "two cores: one pool; one core: none"
    assert pages[1] == pages[2]
    assert pages[1].count("t-par-") >= 2 and 'src="figures/run0-goodput.png"' in pages[1]
    # Figures drawn by a worker are written where the serial report writes them.
    for name in ("t-par-a", "t-par-b"):
        assert list((tmp_path / "rep" / name / "figures").glob("run0-*.png")), name


@pytest.fixture
def repro_pages(tmp_path, small):
    """A reproduction of experiments named as papers name them (x0-f10 registered
    before x0-f3), of every verdict, one with a run (figures, topology) and one that
    fails."""
    saved = dict(reproduce.REGISTRY)
    ex = Explanation("a known cause", doc="docs/papers/p1.md#t1-queueing").tested(
        "the cause removed", 1.0
    )

    @register("x0-f10", title="ten", paper="P0 Fig. 10")
    def f10(ctx):
        ctx.run(small, label="r")
        return Outcome(comparisons=[Comparison("ok", 1.0, ref=Value(1.0), rtol=0.01)])

    @register("x0-f3", title="three", paper="P0 Fig. 3")
    def f3(ctx):
        return Outcome(
            comparisons=[
                Comparison(
                    "explained",
                    0.5,
                    ref=Bound(at_least=1.0, against="request"),
                    explanation=ex,
                    source="§1",
                ),
                Comparison("off", 2.0, ref=Bound(at_most=1.0, against="a bound"), source="§1"),
            ]
        )

    @register("x1-t1", title="table one", paper="P1 Table 1")
    def t1(ctx):
        return Outcome(comparisons=[Comparison("explained too", 0.5,
                                               ref=Bound(at_least=1.0,
                                                         against="request"), explanation=ex,
                                               source="§1")])  # fmt: skip

    @register("x2-f1", title="broken", paper="P2 Fig. 1")
    def broken(ctx):
        raise RuntimeError("this experiment fails")

    try:
        run_experiments(["x0-f10", "x0-f3", "x1-t1", "x2-f1"], tmp_path / "rep",
                        log=lambda s: None)  # fmt: skip
        index = write_report(tmp_path / "rep")
    finally:
        reproduce.REGISTRY.clear()
        reproduce.REGISTRY.update(saved)
    return index


def test_index_natural_order_filters_and_budgets(repro_pages):
    d = repro_pages.parent
    html = repro_pages.read_text()
    rows = re.findall(r'<tr class="v-[^"]+" id="([^"]+)">', html)
    assert rows == ["x0-f3", "x0-f10", "x1-t1", "x2-f1"]  # x0-f3 before x0-f10
    # A row's counts link into its page (the first row of that verdict).
    f3 = re.search(r'<tr class="v-outside" id="x0-f3">(.*?)</tr>', html, re.S).group(1)
    assert [_text(c) for c in _cells(f3)][4:] == ["0", "1", "0", "1", "0", "0"]
    assert "P0 Fig. 3" in f3
    assert '<a href="x0-f3/report.html#c0">1</a>' in f3  # outside-explained: the 1st row
    assert '<a href="x0-f3/report.html#c1">1</a>' in f3  # outside: the 2nd
    failed = re.search(r'id="x2-f1">(.*?)</tr>', html, re.S).group(1)
    assert [_text(c) for c in _cells(failed)][-1] == "1"
    # The filters: only the explained misses, only the unexplained ones.
    only = (d / "report-outside-explained.html").read_text()
    assert re.findall(r'<a href="([^"]+)">x\d-', only) == [
        "x0-f3/report.html#c0",
        "x1-t1/report.html#c0",
    ]
    only = (d / "report-outside.html").read_text()
    assert re.findall(r'<a href="([^"]+)">x\d-', only) == ["x0-f3/report.html#c1"]
    assert 'href="report-outside.html"' in html and 'href="report-outside-explained.html"' in html
    # Budgets: the index under 2 MB, every experiment page under 5 MB; nothing inlined.
    assert repro_pages.stat().st_size < 2_000_000
    for n in rows:
        page = d / n / "report.html"
        assert page.stat().st_size < 5_000_000, n
        assert "base64" not in page.read_text()
    assert "topology" in (d / "x0-f10" / "report.html").read_text()
    assert (d / "x0-f10" / "figures" / "run0-topology.svg").is_file()


def test_moved_copy_every_link_resolves_in_chromium(repro_pages, tmp_path):
    """The results folder copied elsewhere (the original renamed away, so nothing can
    point back to it): the index and every experiment page render in Chromium, every
    image loads and every link resolves inside the copy; screenshots are kept
    (under $QOSLAB_SCREENSHOTS when set)."""
    _need_chromium()
    src = repro_pages.parent
    copy = tmp_path / "shared" / "results copy"
    shutil.copytree(src, copy)
    src.rename(src.with_name("gone"))
    index = copy / "report.html"
    pages = [index, copy / "report-outside-explained.html", copy / "report-outside.html"]
    pages += sorted(copy.glob("x*/report.html"))
    assert len(pages) == 3 + 4
    for page in pages:
        total, ok, _, urls = _probe(page)
        assert ok == total, (page, total, ok)
        assert urls, page
        bad = _unresolved(urls, copy.resolve())
        assert not bad, (page, bad)
        name = "moved-" + (page.parent.name if page.name == "report.html" else page.stem)
        _screenshot(page, name.replace(" ", "-"))
    # The run's page draws its figures from the copy, the topology among them.
    total, ok, _, urls = _probe(copy / "x0-f10" / "report.html")
    assert total >= 3 and any(u.endswith("run0-topology.svg") for u in urls)


def test_link_check_can_fail(tmp_path):
    """The link check finds a missing file, a missing anchor and a link out of the
    folder (so the test above could fail)."""
    _need_chromium()
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "b.html").write_text('<html><body><p id="here">x</p></body></html>')
    (tmp_path / "out.html").write_text("<html><body></body></html>")
    page = tmp_path / "in" / "a.html"
    page.write_text(
        '<html><body><a href="b.html#here">ok</a><a href="b.html#nowhere">anchor</a>'
        '<a href="missing.html">missing</a><a href="../out.html">outside</a></body></html>'
    )
    *_, urls = _probe(page)
    bad = _unresolved(urls, (tmp_path / "in").resolve())
    assert sorted(u.rsplit("/", 1)[-1] for u in bad) == [
        "b.html#nowhere",
        "missing.html",
        "out.html",
    ]


def test_live_runs_carry_their_timing_verdict_at_the_top():
    from qoslab.report import _live_verdict

    assert _live_verdict({"name": "sim"}) is None
    ok = _live_verdict(
        {"live_timing_ok": True, "live_lateness_p99_us": 38.2, "live_lateness_p999_us": 746.0}
    )
    assert ok["ok"] and "timing valid" in ok["text"] and "p99 38.2 µs" in ok["text"]
    late = _live_verdict(
        {"live_timing_ok": False, "live_lateness_p99_us": 250.0, "live_lateness_p999_us": 4e3}
    )
    assert not late["ok"] and "OUT OF BOUNDS" in late["text"] and "not trustworthy" in late["text"]


def test_doc_passages_carry_no_relative_images_or_links(tmp_path):
    """An explanation's docs passage rendered into a page refers to nothing in the
    checkout: relative figures become their alt text, relative links their text."""
    from qoslab.pages import doc_passage

    doc = tmp_path / "docs" / "p.md"
    doc.parent.mkdir()
    doc.write_text(
        '<a id="x"></a>\nSee ![Fig. 7 ours](p0-figures/f7.png) and [the script](../v.py), '
        "or ![web](https://example.org/a.png).\n\n## next\n"
    )
    html = doc_passage("docs/p.md#x", root=tmp_path)
    assert "<img" in html and "https://example.org/a.png" in html  # web images stay
    assert 'src="p0-figures' not in html and "[figure: Fig. 7 ours (f7.png)]" in html
    assert 'href="../v.py"' not in html and "the script" in html


#: The cheapest experiment of each paper in quick mode (a few seconds each): the real
#: figure hooks, tables, ablations and readings of the five papers, not synthetic pages.
ONE_PER_PAPER = ["p0-f8", "p1-wmax", "p2-f7", "p3-f3", "p4-f3a"]


def test_real_reproduction_one_page_per_paper_from_a_moved_copy(tmp_path):
    """A real quick reproduction of one experiment per paper, copied elsewhere: the
    index keeps the papers' order and the budgets, and in Chromium the index and each
    paper's page render, every image loads and every link resolves inside the copy
    (screenshots kept under $QOSLAB_SCREENSHOTS when set)."""
    _need_chromium()
    src = tmp_path / "rep"
    run_experiments(ONE_PER_PAPER, src, quick=True, workers=1, log=lambda s: None)
    index = write_report(src)
    rows = re.findall(r'<tr class="v-[^"]+" id="([^"]+)">', index.read_text())
    assert rows == ONE_PER_PAPER
    assert index.stat().st_size < 2_000_000
    copy = tmp_path / "moved" / "a copy"
    shutil.copytree(src, copy)
    src.rename(tmp_path / "gone")
    for page in [copy / "report.html"] + [copy / n / "report.html" for n in ONE_PER_PAPER]:
        assert page.stat().st_size < 5_000_000, page
        total, ok, _, urls = _probe(page)
        assert ok == total, (page, total, ok)
        bad = _unresolved(urls, copy.resolve())
        assert not bad, (page, bad)
        _screenshot(page, "paper-" + page.parent.name.replace(" ", "-"))
    # Each paper's page shows its figures and its comparison table.
    for n in ONE_PER_PAPER:
        text = (copy / n / "report.html").read_text()
        assert "<table" in text and 'src="figures/' in text, n

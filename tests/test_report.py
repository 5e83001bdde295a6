"""The HTML report: self-contained, every expected figure present (also as SVG and PNG
files), tables with units and no None/NaN cells, and pages checked in headless Chromium
(with screenshots) for a run with traces and queues, a two-parameter sweep and a
reproduction with verdict counts."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import qoslab
from qoslab import reproduce
from qoslab.report import expected_figures, write_report
from qoslab.reproduce import Comparison, Explanation, Outcome, register, run_experiments
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
window.addEventListener('load', () => {
  const imgs = [...document.images];
  const ok = imgs.filter(i => i.complete && i.naturalWidth > 0).length;
  const wide = [...document.querySelectorAll('div.scroll')]
    .filter(d => getComputedStyle(d).overflowX === 'auto').length;
  document.body.setAttribute('data-probe', imgs.length + '/' + ok + '/' + wide);
});
</script>"""


def _chromium(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _images_loaded(html_file: Path) -> tuple[int, int, int]:
    """(images, images loaded, scrolling table boxes) as Chromium sees the page."""
    probe = html_file.with_name("probe.html")
    probe.write_text(html_file.read_text().replace("</body>", PROBE + "</body>"))
    p = _chromium(
        [
            "--allow-file-access-from-files",
            "--virtual-time-budget=5000",
            "--dump-dom",
            probe.as_uri(),
        ]
    )
    m = re.search(r'data-probe="(\d+)/(\d+)/(\d+)"', p.stdout)
    assert m, f"chromium did not report (rc={p.returncode}): {p.stderr[-2000:]}"
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


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
                Comparison("within", 1.0, paper=1.0, rtol=0.01, unit="Mb/s"),
                Comparison("explained", 0.5, at_least=1.0, against="request", explanation=ex),
                Comparison("outside", 2.0, at_most=1.0, against="a bound"),
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
    assert want == ["goodput", "cumulative", "sender-rtt20", "queues", "drops"]
    html = dumbbell_page.read_text()
    for slug in want:
        for ext in ("svg", "png"):
            f = dumbbell_run / "figures" / f"{slug}.{ext}"
            assert f.is_file() and f.stat().st_size > 5_000, f
        assert f"figures/{slug}.svg" in html
    assert html.count("<img") == len(want)
    srcs = re.findall(r'<img[^>]*src="([^"]+)"', html)
    assert all(s.startswith("data:image/png;base64,") for s in srcs)
    assert "<script" not in html and "http" not in html.replace("http-equiv", "")
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
    assert "goodput vs link.2.rate" in html and "goodput vs link.2.delay" in html
    svg = (sweep2 / "figures" / "goodput-vs-link.2.rate.svg").read_text()
    # One panel per delay, the rate in Mb/s on a numeric axis, offered rates as references.
    assert "link.2.delay = 5ms" in svg and "link.2.delay = 50ms" in svg
    assert "link.2.rate [Mb/s]" in svg and "goodput [Mb/s]" in svg
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


def test_report_reproduction_counts_verdicts(repro):
    html = write_report(repro).read_text()
    counts = re.search(r'<table class="verdicts" id="verdict-counts">(.*?)</table>', html, re.S)
    assert counts
    row = re.search(r"<th class=\"l\">comparisons</th>(.*?)</tr>", counts.group(1), re.S)
    assert [c for c in _cells(row.group(0))] == ["1", "1", "0", "1", "—", "0"]
    assert "[outside: 1 within, 1 outside-explained, 1 outside]" in html
    assert "a known cause" in html and "docs/papers/p1.md#t1-queueing" in html
    assert "counterfactual: the cause removed → 1 (lands in the band)" in html


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
        return Outcome(comparisons=[Comparison("x", 1.0, paper=1.0)])

    @figure("t-fig-broken")
    def broken(saved):
        raise ValueError("no such table")

    try:
        run_experiments(["t-fig", "t-fig-broken"], tmp_path / "rep", log=lambda s: None)
        html = write_report(tmp_path / "rep").read_text()
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
    mm = p1._minmax(flows, ["requested"])
    mm_delay = p1._minmax(flows, ["link.0.delay", "requested"])
    mm_access = p1._minmax(flows, ["access_ms"])
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
            page = write_report(tmp_path / "rep", tmp_path / f"{cores}.html").read_text()
            pages[cores] = re.sub(r"qoslab \S+, \d{4}-\d\d-\d\d \d\d:\d\d", "", page)
    finally:
        reproduce.REGISTRY.clear()
        reproduce.REGISTRY.update(saved_reg)
    assert len(pools) == 1, "two cores: one pool; one core: none"
    assert pages[1] == pages[2]
    assert pages[1].count("t-par-") >= 2 and "data:image/png;base64," in pages[1]
    # Figures drawn by a worker are written where the serial report writes them.
    for name in ("t-par-a", "t-par-b"):
        assert list((tmp_path / "rep" / name / "figures").glob("run0-*.png")), name

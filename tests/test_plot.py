"""Figures: no backend switching, sender state in any trace form, sweep lines that never
join different settings, exact t quantiles and numeric companion columns."""

from __future__ import annotations

import subprocess
import sys

import polars as pl
import pytest

from qoslab import plot
from qoslab.tables import (
    column_unit,
    fmt_cell,
    numeric_companions,
    t_quantile,
    with_numeric_companions,
)


def test_importing_plot_keeps_the_backend_and_pyplot_out():
    code = (
        "import sys, matplotlib\n"
        "import qoslab.plot as p, qoslab.report\n"
        "import polars as pl\n"
        "f = p.cum_throughput(pl.DataFrame({'flow': [0, 0], 't': [1.0, 2.0],"
        " 'cum_bytes': [10, 20]}))\n"
        "p.png_bytes(f)\n"
        "print(matplotlib.get_backend(), 'matplotlib.pyplot' in sys.modules)\n"
    )
    env = {"MPLBACKEND": "svg", "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    ).stdout.split()
    assert out == ["svg", "False"]


def test_figures_show_themselves_in_notebooks():
    fig, ax = plot.new_figure()
    ax.plot([0, 1], [0, 1])
    assert isinstance(fig, plot.QFigure) and fig._repr_png_()[:4] == b"\x89PNG"


def _labels(fig) -> list[list[str]]:
    return [[t.get_text() for t in ax.get_legend().get_texts()] for ax in fig.axes]


def test_sender_state_draws_wide_long_and_extra_state_columns():
    flows = pl.DataFrame({"flow": [3], "name": ["bulk"]})
    wide = pl.DataFrame(
        {
            "flow": [3, 3, 3],
            "t": [0.0, 0.1, 0.2],
            "cwnd": [1460, 2920, 1460],
            "ssthresh": [10**9, 10**9, 2920],
            "srtt": [0.02, 0.021, 0.02],
            "rto": [0.2, 0.2, 0.4],
            "in_flight": [1460, 2920, 0],
            "state": ["slow_start", "slow_start", "recovery"],  # a later sender-state column
            "dupacks": [0, 0, 3],
        }
    )
    figs = plot.sender_state(wide, flows=flows)
    assert len(figs) == 1 and len(figs[0].axes) == 4
    assert "bulk" in figs[0].axes[0].get_title()
    assert _labels(figs[0]) == [
        ["cwnd", "ssthresh", "in_flight"],
        ["srtt", "rto"],
        ["state"],
        ["dupacks"],
    ]
    assert [t.get_text() for t in figs[0].axes[2].get_yticklabels()] == ["slow_start", "recovery"]
    # ssthresh's "infinite" start does not squash the window: the axis ends near max cwnd.
    assert figs[0].axes[0].get_ylim()[1] == pytest.approx(2.920 * 1.15)
    long = pl.DataFrame(
        {
            "name": ["a", "a", "b"],
            "t": [0.0, 0.1, 0.0],
            "variable": ["cwnd", "cwnd", "cwnd"],
            "value": [1.0, 2.0, 3.0],
        }
    )
    assert len(plot.sender_state(long)) == 2
    assert plot.cwnd_traces(long) is not None


def test_goodput_over_time_and_queues_name_things():
    series = pl.DataFrame(
        {"flow": [0, 1, 0, 1], "t": [1.0, 1.0, 2.0, 2.0], "goodput_bps": [1e6, 2e6, 1e6, 2e6]}
    )
    flows = pl.DataFrame({"flow": [0, 1], "name": ["web", "video"]})
    fig = plot.goodput_over_time(series, flows=flows)
    assert _labels(fig) == [["web", "video"]] and fig.axes[0].get_ylabel() == "goodput [Mb/s]"
    qs = pl.DataFrame(
        {
            "iface": ["a->b"] * 3 + ["c->d"] * 3,
            "t": [0.0, 1, 2] * 2,
            "packets": [0, 3, 1, 0, 1, 0],
            "avg": [0.0, 0.5, 0.8] + [float("nan")] * 3,  # DropTail: no RED average
        }
    )
    fig = plot.queue_over_time(qs)
    assert _labels(fig) == [["length", "RED average"], ["length"]]


def test_many_flows_draw_only_the_busiest_curves():
    # 400 micro-flows: the figure draws the 20 that delivered most (and the total), and
    # says so; flow i delivers i bytes per second.
    n, ts = 400, [1.0, 2.0]
    series = pl.DataFrame(
        {"flow": [i for i in range(n) for _ in ts], "t": ts * n,
         "goodput_bps": [8.0 * i for i in range(n) for _ in ts],
         "cum_bytes": [i * t for i in range(n) for t in ts]}
    )  # fmt: skip
    fig = plot.cum_throughput(series)
    drawn = _labels(fig)[0]
    assert len(drawn) == plot.MAX_FLOW_CURVES + 1 and drawn[-1] == "total"
    assert set(drawn[:-1]) == {f"flow {i}" for i in range(n - 20, n)}
    assert "20 of 400 flows shown" in fig.axes[0].get_title()
    fig = plot.goodput_over_time(series)
    assert len(_labels(fig)[0]) == plot.MAX_FLOW_CURVES
    few = series.filter(pl.col("flow") < 5)
    assert "shown" not in plot.goodput_over_time(few).axes[0].get_title()


def test_sweep_lines_never_join_different_settings():
    rows = []
    for rate, bps in (("500kbps", 5e5), ("1Mbps", 1e6), ("2Mbps", 2e6)):
        for delay in ("5ms", "50ms"):
            for name in ("a", "b"):
                g = bps * (0.6 if name == "a" else 0.3) * (1 if delay == "5ms" else 0.9)
                rows.append({"link.2.rate": rate, "link.2.delay": delay, "name": name,
                             "n": 3, "goodput_bps_mean": g, "goodput_bps_ci95": 1e4})  # fmt: skip
    summary = with_numeric_companions(pl.DataFrame(rows), ["link.2.rate", "link.2.delay"])
    assert summary.columns[:4] == [
        "link.2.rate",
        "link.2.rate_bps",
        "link.2.delay",
        "link.2.delay_s",
    ]
    fig = plot.goodput_vs_param(summary, "link.2.rate", references={"fair share": 4e5})
    axes = [ax for ax in fig.axes if ax.get_visible()]
    # axis and panel names, never raw key paths
    assert [ax.get_title() for ax in axes] == ["delay (link 2) = 5ms", "delay (link 2) = 50ms"]
    for ax in axes:
        data = {c.get_label(): c.lines[0] for c in ax.containers}  # errorbar per flow
        data.update({ln.get_label(): ln for ln in ax.get_lines() if ln.get_label()[0] != "_"})
        assert set(data) == {"a", "b", "fair share"}
        x = list(data["a"].get_xdata())
        # numeric axis in Mb/s, in order; the two lines side by side, 0.2 of the
        # smallest gap (0.5 Mb/s) apart, so neither hides the other
        assert x == sorted(x) == pytest.approx([0.45, 0.95, 1.95])
        assert list(data["b"].get_xdata()) == pytest.approx([0.55, 1.05, 2.05])
        assert data["a"].get_marker() != data["b"].get_marker()
        assert ax.get_xlabel() == "rate (link 2) [Mb/s]"
        assert ax.get_legend() is None  # one legend, outside the panels
    assert axes[0].get_shared_y_axes().joined(axes[0], axes[1])
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["a", "b", "fair share"]


def _boxes(fig):
    """Every visible text of ``fig`` as drawn (tick labels, axis labels, titles, legends)
    with the axes it belongs to (None: the figure's), in display pixels."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    r = canvas.get_renderer()
    out = [(None, fig._suptitle.get_window_extent(r))] if fig._suptitle else []
    out += [(None, leg.get_window_extent(r)) for leg in fig.legends]
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        texts = [ax.title, ax._left_title, ax.xaxis.label, ax.yaxis.label]
        for axis in (ax.xaxis, ax.yaxis):  # the tick labels drawn: those in the view
            lo, hi = sorted(axis.get_view_interval())
            ticks = zip(axis.get_majorticklocs(), axis.get_majorticklabels(), strict=False)
            texts += [t for x, t in ticks if lo <= x <= hi]
        for t in texts:
            if t.get_visible() and t.get_text():
                out.append((ax, t.get_window_extent(r)))
    return out


def test_fitted_margins_keep_every_label_in_the_figure_and_off_other_panels(tmp_path):
    # three panels of long wrapped titles, a long axis name, a legend outside at the
    # right: margins fitted once instead of constrained layout, nothing clipped or
    # overlapping another panel
    rows = [
        {"case": case, "conditioner.0.stages.0.cir": cir, "name": name, "n": 2,
         "goodput_bps_mean": (i + 1) * 123456.0 * (j + 1), "goodput_bps_ci95": 1e4}
        for i, cir in enumerate(("300kbps", "600kbps", "900kbps"))
        for j, name in enumerate(("EF voice", "AF1 aggregate A of five flows", "best effort"))
        for case in ("srtcm, a meter whose name wraps onto a second line", "trtcm", "tsw3cm")
    ]  # fmt: skip
    summary = with_numeric_companions(pl.DataFrame(rows), ["conditioner.0.stages.0.cir"])
    fig = plot.goodput_vs_param(summary, "conditioner.0.stages.0.cir", others=["case"])
    assert fig.get_layout_engine() is None  # no constrained layout, no second draw
    plot.save_figure(fig, tmp_path / "f", formats=("png",))
    W, H = fig.bbox.width, fig.bbox.height
    axes = [ax for ax in fig.axes if ax.get_visible()]
    boxes = _boxes(fig)
    assert len(boxes) > 20
    for _, b in boxes:
        assert b.x0 >= 0 and b.y0 >= 0 and b.x1 <= W and b.y1 <= H, b
    for owner, b in boxes:  # no text on another panel's plotting area
        for ax in axes:
            if ax is not owner:
                assert not b.overlaps(ax.bbox), (owner, ax, b)
    for i, (_, b) in enumerate(boxes):  # nor on another text
        assert not [c for _, c in boxes[i + 1 :] if b.overlaps(c)], b
    # ticks at the swept values, not 9 per axis
    assert list(axes[0].get_xticks()) == pytest.approx([0.3, 0.6, 0.9])
    assert 3 <= len(axes[0].get_yticks()) <= 7


def test_param_names_and_twenty_distinct_series():
    assert (
        plot.param_name("conditioner.0.stages.0.cir") == "committed rate (conditioner 0, stage 0)"
    )
    assert plot.param_name("link[2].queue.limit") == "queue limit (link 2)"
    assert plot.param_name("flow.af1.cbr.rate") == "rate (flow af1)"
    assert plot.param_name("conditioner.1") == "conditioner 1"
    assert plot.param_name("case") == "case"
    styles = {
        tuple(sorted((k, str(v)) for k, v in plot.series_style(i).items())) for i in range(20)
    }
    assert len(styles) == 20
    # every line of the first 13 has its own marker
    assert len({plot.series_style(i)["marker"] for i in range(13)}) == 13


def test_exact_t_quantiles_and_formats():
    # Two-sided 95 %: exact values beyond any table (R's qt(0.975, df)).
    assert t_quantile(0.975, 1) == pytest.approx(12.706204736, rel=1e-9)
    assert t_quantile(0.975, 40) == pytest.approx(2.021075390, rel=1e-9)
    assert t_quantile(0.975, 99) == pytest.approx(1.984216952, rel=1e-9)
    assert t_quantile(0.025, 5) == pytest.approx(-2.570581836, rel=1e-9)
    from qoslab.sweep import t95

    assert t95(99) == pytest.approx(1.984216952, rel=1e-9)  # was 1.96 beyond 30
    assert numeric_companions({"r": "2Mbps", "d": "1.5ms", "q": "3KB", "n": 4, "s": "x"}) == {
        "r_bps": 2e6,
        "d_s": 0.0015,
        "q_bytes": 3000.0,
    }
    assert [fmt_cell(v) for v in (None, float("nan"), 1234567, 0.5, 10523.7, True)] == [
        "—",
        "—",
        "1\u202f234\u202f567",
        "0.5",
        "10\u202f524",
        "yes",
    ]
    assert column_unit("goodput_bps_mean") == "bit/s" and column_unit("srtt") == "s"

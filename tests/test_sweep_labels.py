"""``[sweep.labels]`` names a swept key's axis in the sweep's figures (checked like the
rest of ``[sweep]``: a key that is not swept is named with the file), and the lines of
a per-case panel never hide each other: each has its own marker and is drawn a little
aside."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from conftest import cli, small_text
from qoslab import plot
from qoslab.exceptions import ScenarioError
from qoslab.scenario import load
from qoslab.sweep import SweepSpec, run_sweep

SWEEP = """
[sweep]
seeds = 2
[sweep.grid]
"link.2.rate" = ["500kbps", "1Mbps"]
[sweep.cases.near]
"link.0.delay" = "2ms"
[sweep.cases.far]
"link.0.delay" = "5ms"
[sweep.labels]
"link.2.rate" = "bottleneck rate"
case = "access delay"
"""


def _write(tmp_path: Path, sweep: str) -> Path:
    p = tmp_path / "s.toml"
    p.write_text(small_text(duration="2s") + sweep)
    return p


def test_labels_name_the_axes_of_the_sweep_report(tmp_path, monkeypatch):
    sc = _write(tmp_path, SWEEP)
    assert SweepSpec.from_scenario(load(sc)).axis_labels == {
        "link.2.rate": "bottleneck rate",
        "case": "access delay",
    }
    out = tmp_path / "sw"
    run_sweep(sc, out, progress=False, log=lambda m: None, workers=1)
    assert json.loads((out / "sweep.json").read_text())["spec"]["axis_labels"] == {
        "link.2.rate": "bottleneck rate",
        "case": "access delay",
    }
    drawn: list[tuple[str, list[str]]] = []
    real = plot.goodput_vs_param

    def spy(*a, **kw):
        fig = real(*a, **kw)
        if fig is not None:
            axes = [ax for ax in fig.axes if ax.get_visible()]
            drawn.append((axes[0].get_xlabel(), [ax.get_title() for ax in axes]))
        return fig

    monkeypatch.setattr(plot, "goodput_vs_param", spy)
    from qoslab.report import write_report

    write_report(out)
    by_rate = [d for d in drawn if d[0].startswith("bottleneck rate")]
    assert by_rate and by_rate[0][0] == "bottleneck rate [Mb/s]"
    # the panels name the case by its label too
    assert sorted(by_rate[0][1]) == ["access delay = far", "access delay = near"]
    assert not any("rate (link 2)" in x for x, _ in drawn)
    # and qoslab plot's x axis
    from qoslab.quickplot import quick_plot

    xlabel = quick_plot(out, "link.2.rate", "goodput_bps").axes[0].get_xlabel()
    assert xlabel == "bottleneck rate (link.2.rate_bps)"


@pytest.mark.parametrize(
    "labels, key, says",
    [
        ('"link.9.rate" = "x"', "sweep.labels.link.9.rate", "not a swept key; the swept keys: "
         "case, link.2.rate"),
        ('"link.2.rate" = 3', "sweep.labels.link.2.rate", "expected a non-empty text"),
        ('"link.2.rate" = " "', "sweep.labels.link.2.rate", "expected a non-empty text"),
    ],
)  # fmt: skip
def test_a_wrong_label_is_refused_naming_file_and_key(tmp_path, labels, key, says):
    sweep = SWEEP.split("[sweep.labels]")[0] + "[sweep.labels]\n" + labels + "\n"
    sc = _write(tmp_path, sweep)
    with pytest.raises(ScenarioError) as e:
        SweepSpec.from_scenario(load(sc))
    assert f"{sc}: {key}: " in str(e.value) and says in str(e.value)
    p = cli("check", sc)
    assert p.returncode != 0
    assert str(sc) in p.stderr and key in p.stderr and says in p.stderr


def test_labels_is_a_known_key_of_sweep(tmp_path):
    sc = _write(tmp_path, SWEEP.replace("[sweep.labels]", "[sweep.names]"))
    with pytest.raises(ScenarioError) as e:
        SweepSpec.from_scenario(load(sc))
    assert "sweep.names: unknown key; expected seeds, grid, cases or labels" in str(e.value)


def test_equal_lines_of_a_case_panel_keep_their_own_marker_and_place():
    rows = [
        {"case": case, "link.2.rate": rate, "link.2.rate_bps": bps, "name": g, "n": 2,
         "goodput_bps_mean": 3e5, "goodput_bps_ci95": 1e4}
        for case in ("near", "far")
        for rate, bps in (("500kbps", 5e5), ("1Mbps", 1e6))
        for g in ("g1", "g2", "g3")
    ]  # fmt: skip
    fig = plot.goodput_vs_param(pl.DataFrame(rows), "link.2.rate", others=["case"])
    for ax in [a for a in fig.axes if a.get_visible()]:
        lines = {c.get_label(): c.lines[0] for c in ax.containers}
        assert len({ln.get_marker() for ln in lines.values()}) == 3
        xs = [tuple(ln.get_xdata()) for ln in lines.values()]
        assert len(set(xs)) == 3  # drawn apart though their values are equal
        # each within a tenth of the gap between the swept values (0.5 Mb/s) of its own
        for x in xs:
            assert x == pytest.approx((0.5, 1.0), abs=0.05 + 1e-9)

"""A run or sweep report's figures written by forked children (report._Writer) while
the report draws the next: every figure written, the same files as one after another,
and a child's failure raised here with no child left behind."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import matplotlib
import pytest

from qoslab import plot
from qoslab.report import _Writer

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="figures are written in forked children on Linux"
)


class _PidFigure(plot.QFigure):
    """A figure that notes which process wrote it (beside its file)."""

    def savefig(self, fname, **kw):
        super().savefig(fname, **kw)
        self.stem.with_suffix(".pid").write_text(str(os.getpid()))


class _Broken(plot.QFigure):
    def savefig(self, fname, **kw):
        raise RuntimeError("this figure cannot be drawn")


def _figures(cls, d: Path, n: int):
    out = []
    for i in range(n):
        fig = cls(figsize=(4, 3), layout="constrained")
        ax = fig.subplots()
        ax.plot([0, 1, 2], [i, i + 1, 0], label=f"line {i}")
        ax.set_title(f"figure {i}")
        ax.legend()
        fig.stem = d / f"f{i}"
        out.append(fig)
    return out


def _svgs(d: Path) -> dict[str, str]:
    # the same drawing, whatever the date in its metadata
    return {f.name: re.sub(r"<dc:date>.*?</dc:date>", "", f.read_text()) for f in d.glob("*.svg")}


def test_children_write_every_figure_the_same_as_one_after_another(tmp_path):
    with matplotlib.rc_context({"svg.hashsalt": "qoslab"}):
        for jobs, d in ((1, tmp_path / "serial"), (3, tmp_path / "forked")):
            d.mkdir()
            w = _Writer(jobs)
            for fig in _figures(_PidFigure, d, 6):
                w.submit(fig, fig.stem, ("svg",))
            w.finish()
            assert not w.children and not w.pending
    serial, forked = _svgs(tmp_path / "serial"), _svgs(tmp_path / "forked")
    assert sorted(serial) == [f"f{i}.svg" for i in range(6)]
    assert forked == serial
    assert {p.read_text() for p in (tmp_path / "serial").glob("*.pid")} == {str(os.getpid())}
    # children wrote figures (how many depends on how busy the machine is: while every
    # child is busy this process writes the figures left when it finishes; under load
    # that was 4 of 6, so only "some" is a property, not "most")
    pids = [p.read_text() for p in (tmp_path / "forked").glob("*.pid")]
    assert len(pids) == 6 and sum(p != str(os.getpid()) for p in pids) >= 1


def test_a_failing_child_raises_its_error_here_and_leaves_no_child(tmp_path):
    w = _Writer(2)
    good = _figures(_PidFigure, tmp_path, 2)
    (bad,) = _figures(_Broken, tmp_path / "x", 1)
    with pytest.raises(RuntimeError, match="cannot be drawn"):
        w.submit(good[0], good[0].stem, ("svg",))
        w.submit(bad, tmp_path / "bad", ("svg",))
        w.submit(good[1], good[1].stem, ("svg",))
        w.finish()
    assert not w.children and not w.pending  # every child reaped or stopped
    assert not (tmp_path / "bad.svg").exists()

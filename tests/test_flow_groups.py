"""Flow groups (``count`` and ``group`` on a ``[[flow]]``) and the DiffServ summaries
of a sweep; the worked example ``scenarios/examples/diffserv_study.toml`` turned into
a report with per-group figures and a per-colour drop table."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import qoslab
from conftest import cli, small_text
from qoslab import ScenarioError
from qoslab.sweep import query, run_sweep

ROOT = Path(__file__).resolve().parents[1]
STUDY = ROOT / "scenarios" / "examples" / "diffserv_study.toml"


def _grouped(tmp_path: Path) -> Path:
    text = small_text("3s").replace(
        'name = "a"\n', 'name = "a"\ncount = 3\nstart_jitter = "0.5s"\n'
    )
    text = text.replace('name = "b"\n', 'name = "b"\ngroup = "bee"\n')
    p = tmp_path / "g.toml"
    p.write_text(text)
    return p


def test_count_makes_copies_with_a_group_column(tmp_path):
    r = qoslab.run(_grouped(tmp_path))
    f = r.flows
    assert f["name"].to_list() == ["a-1", "a-2", "a-3", "b"]
    assert f["group"].to_list() == ["a", "a", "a", "bee"]
    g = r.by_group()
    row = g.filter(pl.col("group") == "a").row(0, named=True)
    assert row["flows"] == 3
    assert row["goodput_bps"] == pytest.approx(f["goodput_bps"][:3].sum())
    assert g["share"].sum() == pytest.approx(1.0)
    # the copies start at different times (start_jitter per copy), so they differ
    assert len(set(f["goodput_bytes"][:3].to_list())) > 1
    assert "group" in r.tables["series"].columns


@pytest.mark.parametrize("bad", ["0", "-1", '"3"', "1.5", "100001"])
def test_bad_count_is_a_scenario_error(tmp_path, bad):
    p = tmp_path / "b.toml"
    p.write_text(small_text("1s").replace('name = "a"\n', f'name = "a"\ncount = {bad}\n'))
    with pytest.raises(ScenarioError, match=r"flow\[0\]\.count"):
        qoslab.check(p)


def test_sweep_summarises_per_group_with_intervals(tmp_path):
    out = tmp_path / "sw"
    res = run_sweep(_grouped(tmp_path), out, seeds=3, grid={"link.2.rate": ["1Mbps", "2Mbps"]},
                    workers=1, progress=False)  # fmt: skip
    assert res.failed == 0
    g = pl.read_parquet(out / "summary_groups.parquet")
    assert set(g["group"]) == {"a", "bee"} and set(g["n"]) == {3}
    assert {"goodput_bps_mean", "goodput_bps_ci95", "share_mean", "share_ci95"} <= set(g.columns)
    # the group's mean is the mean over seeds of the per-seed sums of its flows
    flows = query(out, "SELECT * FROM flows")
    per_seed = (
        flows.filter((pl.col("group") == "a") & (pl.col("link.2.rate") == "1Mbps"))
        .group_by("seed")
        .agg(pl.col("goodput_bps").sum())
    )
    got = g.filter((pl.col("group") == "a") & (pl.col("link.2.rate") == "1Mbps"))
    assert got["goodput_bps_mean"][0] == pytest.approx(per_seed["goodput_bps"].mean())
    assert query(out, "SELECT count(*) AS n FROM summary_groups")["n"][0] == 4


def test_diffserv_study_report_without_sql(tmp_path):
    """The worked example, shortened: per-group figures with intervals and per-colour
    tables in the report, nothing written by hand."""
    out = tmp_path / "study"
    p = cli(
        "sweep", STUDY, "--set", "duration=8s", "--set", "warmup=3s", "--seeds", "2",
        "--grid", "conditioner.0.stages.0.cir=300kbps,900kbps",
        "-j", "1", "--no-progress", "-o", out, "--report", cwd=tmp_path, timeout=600,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    g = pl.read_parquet(out / "summary_groups.parquet")
    assert set(g["group"]) == {"EF", "A", "B", "C"}
    assert set(g["case"]) == {"srtcm", "trtcm", "tsw3cm"}
    c = pl.read_parquet(out / "summary_colours.parquet")
    assert {"green_pkts_mean", "yellow_pkts_mean", "red_pkts_mean"} <= set(c.columns)
    d = pl.read_parquet(out / "summary_colour_drops.parquet")
    assert {"dropped_green_mean", "dropped_red_ci95"} <= set(d.columns)
    html = (out / "report.html").read_text()
    assert "goodput per group vs committed rate (conditioner 0, stage 0)" in html
    assert "Queue drops per colour" in html and "Packets of each colour per meter" in html
    assert "tsw3cm" in html
    # The RIO's per-colour averages and each group's p99 delay, drawn against the grid.
    assert 'src="figures/colour-averages-vs-conditioner.0.stages.0.cir.svg"' in html
    assert "p99 one-way delay per group vs committed rate" in html
    a = pl.read_parquet(out / "summary_colour_averages.parquet")
    assert {"avg_green_mean", "avg_red_ci95"} <= set(a.columns)
    assert {"delay_p99_mean", "delay_p99_ci95"} <= set(g.columns)
    # a higher committed rate gives aggregate A more green packets (srTCM)
    af1 = c.filter((pl.col("case") == "srtcm") & (pl.col("place") == "a->r1"))
    green = dict(zip(af1["conditioner.0.stages.0.cir"], af1["green_pkts_mean"], strict=True))
    assert green["900kbps"] > 1.5 * green["300kbps"]


def test_run_report_draws_the_rio_colour_averages(tmp_path):
    from qoslab.report import expected_figures, write_report

    r = qoslab.run(ROOT / "scenarios/examples/diffserv_ef_af_be.toml", {"duration": "8s"})
    qcs = r.tables["queue_colour_samples"]
    assert {"avg_green", "avg_yellow", "avg_red"} <= set(qcs.columns)
    d = r.save(tmp_path / "run")
    assert "colour-averages" in expected_figures(qoslab.load(d))
    html = write_report(d).read_text()
    assert "per-colour averages of the RIO/WRED queues" in html
    assert (d / "figures" / "colour-averages.svg").is_file()


# ----------------------------------------------------------------- per-copy RTT (extra_delay)

FAST = """
name = "fast"
duration = "{duration}"
warmup = "1s"

[[node]]
name = "h1"
[[node]]
name = "r1"
kind = "router"
[[node]]
name = "h3"

[[link]]
a = "h1"
b = "r1"
rate = "100Mbps"
delay = "1ms"
[[link]]
a = "r1"
b = "h3"
rate = "100Mbps"
delay = "10ms"

[record]
delays = true
{extra}
"""


def _fast(tmp_path: Path, flows: str, duration: str = "4s", extra: str = "") -> Path:
    p = tmp_path / "fast.toml"
    p.write_text(FAST.format(duration=duration, extra=extra) + flows)
    return p


TCP_GROUP = """
[[flow]]
name = "t"
count = 3
from = "h1"
to = "h3"
tcp = {{ variant = "newreno", max_window = 4 }}
extra_delay = {delays}
"""


def test_extra_delay_gives_each_copy_its_own_rtt(tmp_path):
    """Each copy's RTT is the path's plus its extra_delay: the final srtt of the three
    TCP copies differs by the listed delays (without them, the three are the same)."""
    r = qoslab.run(_fast(tmp_path, TCP_GROUP.format(delays='["0ms", "40ms", "80ms"]')))
    f = r.flows
    assert f["extra_delay"].to_list() == pytest.approx([0.0, 0.04, 0.08])
    srtt = f["srtt"].to_list()
    assert srtt[1] - srtt[0] == pytest.approx(0.04, abs=0.003)
    assert srtt[2] - srtt[0] == pytest.approx(0.08, abs=0.003)
    assert srtt[0] == pytest.approx(0.022, abs=0.003)  # 2 × (1 + 10) ms
    # the data's one-way delay carries the hold too
    d = r.tables["delays"]["mean"].to_list()
    assert d[2] - d[0] == pytest.approx(0.08, abs=0.002)
    # the control: without extra_delay the copies' RTTs are alike
    same = qoslab.run(_fast(tmp_path, TCP_GROUP.format(delays='"0ms"'))).flows["srtt"]
    assert same.max() - same.min() < 0.002


def test_extra_delay_spread_forms(tmp_path):
    even = qoslab.run(_fast(tmp_path, TCP_GROUP.format(delays='{ min = "10ms", max = "30ms" }'),
                            duration="2s"))  # fmt: skip
    assert even.flows["extra_delay"].to_list() == pytest.approx([0.01, 0.02, 0.03])
    uni = TCP_GROUP.format(delays='{ min = "10ms", max = "30ms", spread = "uniform" }')
    a = qoslab.run(_fast(tmp_path, uni, duration="2s"), seed=1).flows["extra_delay"].to_list()
    b = qoslab.run(_fast(tmp_path, uni, duration="2s"), seed=1).flows["extra_delay"].to_list()
    c = qoslab.run(_fast(tmp_path, uni, duration="2s"), seed=2).flows["extra_delay"].to_list()
    assert a == b != c  # drawn from the run's seed: reproducible, and anew per seed
    assert all(0.01 <= x < 0.03 for x in a + c) and len(set(a)) == 3


@pytest.mark.parametrize(
    ("delays", "needle"),
    [
        ('["0ms", "40ms"]', r"flow\[0\]\.extra_delay: expected one delay per copy: 3.*list of 2"),
        ('["0ms", "-4ms", "1ms"]', r"flow\[0\]\.extra_delay\[1\]"),
        ('["0ms", "4 parsecs", "1ms"]', r"flow\[0\]\.extra_delay\[1\]"),
        ('{ min = "10ms" }', r"flow\[0\]\.extra_delay\.max"),
        ('{ min = "10ms", max = "1ms" }', r"flow\[0\]\.extra_delay\.max: expected max >= min"),
        ('{ min = "1ms", max = "2ms", spread = "normal" }', r"extra_delay\.spread"),
        ('{ min = "1ms", max = "2ms", mean = 1 }', r"extra_delay\.mean: unknown key"),
    ],
)
def test_extra_delay_errors_name_the_key(tmp_path, delays, needle):
    with pytest.raises(ScenarioError, match=needle):
        qoslab.check(_fast(tmp_path, TCP_GROUP.format(delays=delays)))


def test_extra_delay_joins_the_senders_own_chain(tmp_path):
    """A host that has its own conditioner chain keeps it (stage 0 still meters); the
    delay is a stage after it."""
    chain = (
        '\n[[conditioner]]\nat = "h1"\n'
        'stages = [ { kind = "srtcm", cir = "1Mbps", cbs = 3000, ebs = 3000 } ]\n'
    )
    r = qoslab.run(_fast(tmp_path, TCP_GROUP.format(delays='["0ms", "0ms", "50ms"]') + chain))
    srtt = r.flows["srtt"].to_list()
    assert srtt[2] - srtt[0] == pytest.approx(0.05, abs=0.003)
    col = r.tables["colours"]
    assert set(col["stage"]) == {0} and set(col["kind"]) == {"srtcm"}
    assert col["green_pkts"].sum() > 0


# ----------------------------------------------------------------- per-group delay percentiles

CBR_GROUP = """
[[flow]]
name = "u"
count = 2
group = "U"
from = "h1"
to = "h3"
cbr = { rate = "400kbps", size = 500 }
extra_delay = ["0ms", "100ms"]
[[flow]]
name = "solo"
group = "S"
from = "h1"
to = "h3"
cbr = { rate = "200kbps", size = 500, jitter = 0.5 }
"""


def _pooled(hist: pl.DataFrame, names: list[str], q: float, cap: float) -> float:
    """By hand: the q-quantile of the flows' pooled buckets."""
    h = hist.filter(pl.col("name").is_in(names)).group_by("bucket").agg(
        pl.col("upper").first(), pl.col("packets").sum()
    ).sort("bucket")  # fmt: skip
    n = h["packets"].sum()
    rank = max(1, -(-int(q * n * 1_000_000) // 1_000_000))
    seen = 0
    for up, k in zip(h["upper"], h["packets"], strict=True):
        seen += k
        if seen >= rank:
            return min(up, cap)
    raise AssertionError


def test_group_delay_percentiles_pool_the_groups_packets(tmp_path):
    """A group's percentiles are those of all its packets: with one copy 100 ms behind
    the other and equal packet counts, the median is the near copy's and the p95 the
    far copy's (the mean of the two copies' medians, ~61 ms, would be neither)."""
    r = qoslab.run(_fast(tmp_path, CBR_GROUP))
    d = r.tables["delays"]
    hist = r.tables["delay_histogram"]
    assert set(hist.columns) >= {"flow", "name", "bucket", "upper", "packets"}
    # the buckets hold every packet the delays table counts
    per_flow = hist.group_by("name").agg(pl.col("packets").sum())
    assert dict(per_flow.iter_rows()) == dict(zip(d["name"], d["packets"], strict=True))
    g = r.by_group()
    u = g.filter(pl.col("group") == "U").row(0, named=True)
    near, far = (d.filter(pl.col("name") == n).row(0, named=True) for n in ("u-1", "u-2"))
    assert u["delay_packets"] == near["packets"] + far["packets"]
    assert u["delay_p50"] < 0.02 < 0.1 < u["delay_p95"] <= u["delay_p99"] <= far["max"]
    assert u["delay_p50"] <= near["max"] * 1.01  # its bucket's edge: within 1 %
    cap = max(near["max"], far["max"])
    for col, q in (("delay_p50", 0.5), ("delay_p95", 0.95), ("delay_p99", 0.99)):
        assert u[col] == pytest.approx(_pooled(hist, ["u-1", "u-2"], q, cap), rel=1e-12)
    assert u["delay_max"] == far["max"]
    assert u["delay_mean"] == pytest.approx(
        (near["mean"] * near["packets"] + far["mean"] * far["packets"]) / u["delay_packets"]
    )
    # a group of one flow: exactly the engine's per-flow percentiles
    s = g.filter(pl.col("group") == "S").row(0, named=True)
    solo = d.filter(pl.col("name") == "solo").row(0, named=True)
    assert (s["delay_p50"], s["delay_p95"], s["delay_p99"]) == (
        solo["p50"], solo["p95"], solo["p99"])  # fmt: skip


def test_sweep_summarises_group_delay_percentiles_over_seeds(tmp_path):
    out = tmp_path / "sw"
    res = run_sweep(_fast(tmp_path, CBR_GROUP, duration="3s"), out, seeds=3,
                    grid={"flow.solo.cbr.rate": ["100kbps", "300kbps"]},
                    workers=1, progress=False)  # fmt: skip
    assert res.failed == 0
    g = pl.read_parquet(out / "summary_groups.parquet")
    for c in ("delay_p50", "delay_p95", "delay_p99", "delay_mean", "delay_max"):
        assert {f"{c}_mean", f"{c}_ci95"} <= set(g.columns)
    # the mean over seeds of each run's pooled percentile
    runs = query(out, 'SELECT run, seed, "flow.solo.cbr.rate" AS r FROM runs')
    want = []
    for run in runs.filter(pl.col("r") == "100kbps")["run"]:
        rr = qoslab.load(out / "runs" / run)
        want.append(rr.by_group().filter(pl.col("group") == "U")["delay_p95"][0])
    got = g.filter((pl.col("group") == "U") & (pl.col("flow.solo.cbr.rate") == "100kbps"))
    assert got["n"][0] == 3
    assert got["delay_p95_mean"][0] == pytest.approx(sum(want) / 3, rel=1e-12)
    assert got["delay_p95_mean"][0] > 0.1
    assert query(out, "SELECT max(delay_p99_mean) AS m FROM summary_groups")["m"][0] > 0.1


# ----------------------------------------------------------------- per-colour RED averages


def test_sweep_summarises_the_rio_colour_averages(tmp_path):
    """``summary_colour_averages``: per grid point and sampled RIO queue, the mean over
    seeds of each run's time-mean (after the warm-up) of each colour's average; in the
    catalog too, and drawn by plot.colour_averages_vs_param."""
    from qoslab import plot

    out = tmp_path / "sw"
    sc = ROOT / "scenarios/examples/diffserv_ef_af_be.toml"
    res = run_sweep(sc, out, seeds=2, overrides={"duration": "6s", "warmup": "2s"},
                    grid={"conditioner.0.stages.0.cir": ["300kbps", "900kbps"]},
                    workers=1, progress=False)  # fmt: skip
    assert res.failed == 0
    s = pl.read_parquet(out / "summary_colour_averages.parquet")
    assert {"iface", "class", "n", "avg_green_mean", "avg_green_ci95", "avg_red_mean"} <= set(
        s.columns
    )
    assert set(s["n"]) == {2}
    # by hand from the samples: t >= warm-up, per run, then across seeds
    key = ("iface", "class", "conditioner.0.stages.0.cir")
    row = s.sort(key).row(0, named=True)
    per_run = query(
        out,
        f"""SELECT run, avg(avg_yellow) AS y FROM queue_colour_samples
            WHERE t >= 2 AND iface = '{row["iface"]}' AND class = '{row["class"]}'
            AND "conditioner.0.stages.0.cir" = '{row["conditioner.0.stages.0.cir"]}'
            GROUP BY run""",
    )
    assert per_run.height == 2
    assert row["avg_yellow_mean"] == pytest.approx(per_run["y"].mean(), rel=1e-9)
    everything = query(out, "SELECT avg(avg_yellow) AS y FROM queue_colour_samples")["y"][0]
    assert everything != pytest.approx(row["avg_yellow_mean"], rel=1e-6)  # warm-up cut
    cat = query(out, "SELECT count(*) AS n FROM summary_colour_averages")["n"][0]
    assert cat == s.height
    fig = plot.colour_averages_vs_param(s, "conditioner.0.stages.0.cir")
    assert fig is not None
    assert fig.axes[0].get_ylabel() == "average queue [packets]"
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any(lab.endswith("green") for lab in labels) and any("red" in lab for lab in labels)

"""Promises of qoslab's mechanisms, checked over randomly drawn configurations.

Each :class:`Invariant` states one promise that a mechanism's paper or RFC makes, with its
tolerance, draws a scenario from a :class:`random.Random` (so that a test framework such
as hypothesis can shrink a failing draw to a small one), and checks a run's result
against the promise. ``tests/test_invariants.py`` runs a CI-sized draw;
``validation/invariants.py`` runs thousands of draws and writes what it found to
``docs/validation/invariants.md``.

A promise holds for every configuration the mechanism accepts; where it cannot, the
scenario must be refused (a :class:`qoslab.ScenarioError`) or warned about. A draw that
the engine refuses is counted as refused, not as a violation.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["INVARIANTS", "Invariant", "Outcome", "by_name", "check_draw"]

MTU = 1500


@dataclass(frozen=True)
class Invariant:
    """One promise of one mechanism, over random configurations."""

    #: Short identifier, e.g. ``srtcm-green``.
    name: str
    #: The mechanism's scenario ``kind`` (or key) the promise is about.
    mechanism: str
    #: The promise, with where it comes from.
    promise: str
    #: The tolerance the check allows, in words (the check applies exactly this).
    tolerance: str
    #: Draws a scenario (a dict as :func:`qoslab.run` takes) from the random stream.
    draw: Callable[[random.Random], dict[str, Any]]
    #: The violations of the promise in the runs of ``scenario`` (empty: kept), one run
    #: per seed.
    check: Callable[[dict[str, Any], list[Any]], list[str]]
    #: True when a draw is expensive (long runs): the CI draw takes fewer of them.
    slow: bool = False
    #: Runs per draw (seeds 1 … n of the drawn scenario), for promises about means.
    seeds: int = 1
    #: True when the runs carry the warning that replaces the promise (the draw is then
    #: ``warned``, not ``kept``): the user was told the promise does not hold there.
    warned: Callable[[dict[str, Any], list[Any]], bool] | None = None
    #: Text a refusal must contain (what the user can do instead); a refusal without it
    #: is a violation: the user is left with no way on.
    refusal_names: str | None = None
    #: Draws in the CI-sized run when fewer than the slow default (e.g. each draw fits a
    #: model first).
    ci_draws: int | None = None


@dataclass
class Outcome:
    """What one draw of an invariant gave."""

    invariant: str
    seed: int
    #: ``kept``, ``warned`` (the run warns that the promise does not hold), ``violated``
    #: or ``refused`` (the engine refused the scenario).
    status: str
    detail: str
    scenario: dict[str, Any]


# ----------------------------------------------------------------- scenario pieces


def _bps(x: float) -> str:
    return f"{x:.0f}bps"


def _tcp(rng: random.Random) -> dict[str, Any]:
    return {
        "variant": rng.choice(["tahoe", "reno", "newreno", "sack"]),
        "delayed_ack": rng.random() < 0.5,
        "mss": rng.choice([536, 1000, 1460]),
    }


def _one_host(
    rng: random.Random, stages: list[dict[str, Any]], *, tcp_only: bool = False
) -> dict[str, Any]:
    """Host s0 sends 1–4 flows (TCP of random variants and, unless ``tcp_only``, CBR of
    random rates and sizes) to d over a random bottleneck; ``stages`` condition
    everything s0 sends."""
    n = rng.randint(1, 4)
    flows: list[dict[str, Any]] = []
    for i in range(n):
        if tcp_only or rng.random() < 0.6:
            flows.append({"name": f"t{i}", "from": "s0", "to": "d", "tcp": _tcp(rng)})
        else:
            rate = 10 ** rng.uniform(5, 7)  # 100 kb/s … 10 Mb/s
            size = rng.choice([100, 200, 576, 1000, 1500])
            flows.append(
                {
                    "name": f"u{i}",
                    "from": "s0",
                    "to": "d",
                    "cbr": {"rate": _bps(rate), "size": size},
                }
            )
    return {
        "name": "invariant",
        "duration": f"{rng.uniform(2, 15):.3f}s",
        "warmup": "0s",
        "seed": rng.randint(1, 10_000),
        "node": [{"name": "s0"}, {"name": "r1", "kind": "router"}, {"name": "d"}],
        "link": [
            {"a": "s0", "b": "r1", "rate": _bps(10 ** rng.uniform(7, 8)), "delay": "1ms"},
            {
                "a": "r1",
                "b": "d",
                "rate": _bps(10 ** rng.uniform(6, 7.3)),  # 1 … 20 Mb/s
                "delay": f"{rng.uniform(1, 100):.2f}ms",
                "queue": {"kind": "droptail", "limit": rng.randint(5, 200)},
            },
        ],
        "flow": flows,
        "conditioner": [{"at": "s0", "stages": stages}],
    }


def _seconds(s: str) -> float:
    assert s.endswith("s")
    return float(s[:-1])


def _rate(s: str) -> float:
    assert s.endswith("bps")
    return float(s[:-3])


def _colour_bytes(result: Any, stage: int = 0) -> dict[str, int]:
    t = result.tables["colours"]
    t = t.filter(t["stage"] == stage)
    return {c: int(t[f"{c}_bytes"].sum()) for c in ("green", "yellow", "red")}


def _bound(what: str, got: float, limit: float) -> list[str]:
    return [] if got <= limit else [f"{what}: {got:.0f} B > bound {limit:.0f} B"]


# ----------------------------------------------------------------- token-bucket meters


def _draw_srtcm(rng: random.Random) -> dict[str, Any]:
    cir = 0.0 if rng.random() < 0.05 else 10 ** rng.uniform(4, 7)
    st = {
        "kind": "srtcm",
        "cir": _bps(cir),
        "cbs": rng.randint(MTU, 64_000),
        "ebs": rng.randint(0, 64_000),
        "tick_model": rng.random() < 0.2,
        "colour_aware": False,
    }
    return _one_host(rng, [st])


def _check_srtcm(sc: dict[str, Any], rs: list[Any]) -> list[str]:
    r = rs[0]
    st = sc["conditioner"][0]["stages"][0]
    t = _seconds(sc["duration"])
    g = _colour_bytes(r)["green"]
    return _bound("green bytes", g, _rate(st["cir"]) / 8 * t + st["cbs"])


def _draw_trtcm(rng: random.Random) -> dict[str, Any]:
    cir = 10 ** rng.uniform(4, 7)
    pir = cir * rng.uniform(1, 4)
    st = {
        "kind": "trtcm",
        "cir": _bps(cir),
        "cbs": rng.randint(MTU, 64_000),
        "pir": _bps(pir),
        "pbs": rng.randint(MTU, 64_000),
    }
    return _one_host(rng, [st])


def _check_trtcm(sc: dict[str, Any], rs: list[Any]) -> list[str]:
    r = rs[0]
    st = sc["conditioner"][0]["stages"][0]
    t = _seconds(sc["duration"])
    c = _colour_bytes(r)
    out = _bound("green bytes", c["green"], _rate(st["cir"]) / 8 * t + st["cbs"])
    out += _bound(
        "green + yellow bytes", c["green"] + c["yellow"], _rate(st["pir"]) / 8 * t + st["pbs"]
    )
    return out


def _draw_token_bucket(rng: random.Random) -> dict[str, Any]:
    rate = 10 ** rng.uniform(4.5, 7)
    st: dict[str, Any] = {
        "kind": "token_bucket",
        "rate": _bps(rate),
        "depth": rng.randint(MTU, 64_000),
        "action": rng.choice(["mark", "police", "shape"]),
    }
    if rng.random() < 0.3:
        st["peak"] = _bps(rate * rng.uniform(1, 5))
    if st["action"] == "shape":
        st["buffer"] = rng.randint(10 * MTU, 500_000)
        if rng.random() < 0.5:
            st["timer"] = rng.choice(["exact", "periodic", "10ms"])
    return _one_host(rng, [st])


def _check_token_bucket(sc: dict[str, Any], rs: list[Any]) -> list[str]:
    r = rs[0]
    st = sc["conditioner"][0]["stages"][0]
    t = _seconds(sc["duration"])
    limit = _rate(st["rate"]) / 8 * t + st["depth"]
    if st["action"] == "mark":
        return _bound("green bytes", _colour_bytes(r)["green"], limit)
    timer = st.get("timer")
    if st["action"] == "shape" and timer not in (None, "exact"):
        # A periodic timer releases what conformed since the last tick at once: the
        # profile holds with one period of slack (docs/queues-and-conditioners.md).
        period = 0.015 if timer == "periodic" else float(timer.removesuffix("ms")) / 1e3
        limit += _rate(st["rate"]) / 8 * period
    # Police and shape: what left the bucket reached the sinks as goodput (payload,
    # after any loss downstream), so the payload delivered is at most the bound.
    got = float(r.flows["goodput_bytes"].sum())
    return _bound("bytes delivered through the bucket", got, limit)


# ----------------------------------------------------------------- rate-estimator markers


def _draw_tsw(rng: random.Random) -> dict[str, Any]:
    cir = 10 ** rng.uniform(4.5, 7)
    kind = rng.choice(["tsw2cm", "tsw3cm"])
    st: dict[str, Any] = {"kind": kind, "cir": _bps(cir), "window": f"{rng.uniform(0.1, 2):.3f}s"}
    if kind == "tsw3cm":
        st["pir"] = _bps(cir * rng.uniform(1, 4))
    sc = _one_host(rng, [st])
    sc["duration"] = f"{rng.uniform(10, 40):.3f}s"
    return sc


def _check_tsw(sc: dict[str, Any], rs: list[Any]) -> list[str]:
    r = rs[0]
    st = sc["conditioner"][0]["stages"][0]
    t = _seconds(sc["duration"])
    w = _seconds(st["window"])
    cir = _rate(st["cir"])
    # RFC 2859 / Clark & Fang: green with probability CIR/avg above CIR, so the green
    # rate is CIR once the windowed average has caught up with the arrival rate R. The
    # average starts at CIR and follows d(avg)/dt = (R − avg)/window, and while it lags
    # the green rate is R·CIR/avg > CIR: over the catch-up the excess is
    # CIR·window·ln(R/CIR) (∫ (R − avg)/avg dt). R is at most the access link's rate.
    # The average decays in an idle period, so every restart catches up again: one
    # catch-up at the start and one per TCP timeout (an upper bound: the meter idles
    # only when all its flows do). And within a window the average fluctuates with
    # window-sized bursts of TCP, so the green rate E[R·CIR/avg] ≥ CIR (Jensen): in
    # 300 draws it was at most 8 % above CIR over the run. Allowed: CIR over the run,
    # one window, the catch-ups, +10 %.
    rmax = _rate(sc["link"][0]["rate"])
    restarts = 1 + int(r.flows["timeouts_whole_run"].sum())
    catch_up = restarts * w * math.log(max(rmax / cir, 1.0))
    limit = cir / 8 * (t + w + catch_up) * 1.10 + 4 * MTU
    return _bound("green bytes", _colour_bytes(r)["green"], limit)


def _draw_rtt_aware(rng: random.Random) -> dict[str, Any]:
    cir = 10 ** rng.uniform(5, 6.7)
    scheme = rng.choice(["standard", "rtt", "rtt_rto"])
    st: dict[str, Any] = {
        "kind": "rtt_aware",
        "scheme": scheme,
        "cir": _bps(cir),
        "window": f"{rng.uniform(0.2, 2):.3f}s",
        "protect_bound": "cir",
        "small_window": rng.choice([0, 0, 2, 3, 5]),
    }
    if scheme == "standard":
        st["pir"] = _bps(cir * rng.uniform(1, 3))
    sc = _one_host(rng, [st], tcp_only=True)
    sc["duration"] = f"{rng.uniform(10, 40):.3f}s"
    return sc


def _check_rtt_aware(sc: dict[str, Any], rs: list[Any]) -> list[str]:
    return _check_tsw(sc, rs)


# ----------------------------------------------------------------- P0 QoS managers


def _draw_qosmgr(rng: random.Random) -> dict[str, Any]:
    sc = _one_host(rng, [], tcp_only=True)
    sc.pop("conditioner")
    rate = 10 ** rng.uniform(4.5, 6.5)
    burst = rng.randint(2 * MTU, 64_000)
    mgr: dict[str, Any] = {
        "name": "agg",
        "at": "s0",
        "filter": {"src": "s0"},
        "profile": {"rate": _bps(rate), "burst": burst},
        "action": rng.choice(["shape", "police_and_mark"]),
        "sharing": rng.choice(["partitioned", "common", "logical"]),
    }
    for f in sc["flow"]:
        f["tcp"]["mss"] = 1000
    sc["qosmgr"] = [mgr]
    sc["duration"] = f"{rng.uniform(10, 40):.3f}s"
    return sc


def _check_qosmgr(sc: dict[str, Any], rs: list[Any]) -> list[str]:
    r = rs[0]
    m = sc["qosmgr"][0]
    t = _seconds(sc["duration"])
    limit = _rate(m["profile"]["rate"]) / 8 * t + m["profile"]["burst"]
    q = r.tables["qosmgr"]
    if m["action"] == "shape":
        got = float(r.flows["goodput_bytes"].sum())
        return _bound("aggregate bytes delivered (shape)", got, limit)
    return _bound("aggregate bytes marked in profile", float(q["marked_bytes"].sum()), limit)


# ----------------------------------------------------------------- MulTCP (P4 §3.1)


def _draw_multcp(rng: random.Random) -> dict[str, Any]:
    # P4 §6: "WAIMD will scale to a weight of 2 easily under all conditions" (§1: only
    # "for a small range of weights (less than 10)"): a unit flow against weight 2 or 3.
    w1, w2 = 1, rng.choice([2, 3])
    # Receiver windows large enough that both flows are limited by congestion, not by
    # the window cap (a capped flow stops growing and loses nothing: no weighting).
    # NewReno or SACK: with Reno a weight-2 flow's two drops per overflow end most fast
    # recoveries in a timeout (P4 §3.1's burstiness), and it gets less than a unit flow
    # (docs/validation/invariants.md; the engine warns).
    tcp = {"variant": rng.choice(["newreno", "sack"]), "mss": 1000, "max_window": 5000}
    rtt = rng.uniform(10, 80)
    return {
        "name": "invariant-multcp",
        "duration": "60s",
        "warmup": "10s",
        "seed": rng.randint(1, 10_000),
        "node": [
            {"name": "s0"},
            {"name": "s1"},
            {"name": "r1", "kind": "router"},
            {"name": "d"},
        ],
        "link": [
            {"a": "s0", "b": "r1", "rate": "100Mbps", "delay": "1ms"},
            {"a": "s1", "b": "r1", "rate": "100Mbps", "delay": "1ms"},
            {
                "a": "r1",
                "b": "d",
                "rate": _bps(10 ** rng.uniform(6, 7)),
                "delay": f"{rtt / 2:.2f}ms",
                "queue": {"kind": rng.choice(["droptail", "red"]), "limit": rng.randint(20, 100)},
            },
        ],
        "flow": [
            {
                "name": "light",
                "from": "s0",
                "to": "d",
                "tcp": {**tcp, "cc": {"kind": "multcp", "w": w1}},
            },
            {
                "name": "heavy",
                "from": "s1",
                "to": "d",
                "tcp": {**tcp, "cc": {"kind": "multcp", "w": w2}},
            },
        ],
    }


def _check_multcp(sc: dict[str, Any], rs: list[Any]) -> list[str]:
    def mean(name: str) -> float:
        return sum(
            float(r.flows.filter(r.flows["name"] == name)["goodput_bps"][0]) for r in rs
        ) / len(rs)

    light, heavy = mean("light"), mean("heavy")
    w = [f["tcp"]["cc"]["w"] for f in sc["flow"]]
    if heavy <= light:
        return [f"w = {w[1]} got {heavy:.0f} b/s <= w = {w[0]}'s {light:.0f} b/s ({len(rs)} seeds)"]
    return []


# ----------------------------------------------------------------- ERUF (P2)


def _draw_eruf(rng: random.Random) -> dict[str, Any]:
    bottleneck = 10 ** rng.uniform(5.7, 6.7)  # 0.5 … 5 Mb/s
    n_cbr = rng.randint(1, 3)
    n_tcp = rng.randint(0, 2)
    share = bottleneck / (n_cbr + n_tcp)
    flows: list[dict[str, Any]] = []
    for i in range(n_tcp):
        flows.append({"name": f"t{i}", "from": "h1", "to": "h2", "tcp": {"variant": "sack"}})
    for i in range(n_cbr):
        # Every CBR flow sends above its fair share: 1.5 … 4 times it.
        rate = share * rng.uniform(1.5, 4)
        flows.append(
            {
                "name": f"u{i}",
                "from": "h1",
                "to": "h2",
                "start": f"{i * 0.001:.3f}s",
                "cbr": {"rate": _bps(rate), "size": rng.choice([100, 500, 1000])},
            }
        )
    red = {"kind": "red", "limit": 50, "min_th": 5, "max_th": 15}
    return {
        "name": "invariant-eruf",
        "duration": f"{rng.uniform(20, 60):.3f}s",
        "warmup": "0s",
        "seed": rng.randint(1, 10_000),
        "node": [
            {"name": "h1"},
            {"name": "r1", "kind": "router"},
            {"name": "r2", "kind": "router", "source_quench": {"rate": "unlimited"}},
            {"name": "h2"},
        ],
        "link": [
            {"a": "h1", "b": "r1", "rate": "100Mbps", "delay": "1ms", "queue": red},
            {"a": "r1", "b": "r2", "rate": "100Mbps", "delay": "2ms", "queue": red},
            {
                "a": "r2",
                "b": "h2",
                "rate": _bps(bottleneck),
                "delay": f"{rng.uniform(2, 30):.2f}ms",
                "queue": red,
            },
        ],
        "flow": flows,
        "conditioner": [
            {
                "iface": "r1->r2",
                "stages": [
                    {"kind": "eruf", "increase": rng.choice(["packet_per_rtt", "bytes_per_second"])}
                ],
            }
        ],
    }


def _check_eruf(sc: dict[str, Any], rs: list[Any]) -> list[str]:
    r = rs[0]
    e = r.tables["eruf"]
    n_cbr = sum(1 for f in sc["flow"] if "cbr" in f)
    out = []
    if int(e["installed"].sum()) < n_cbr:
        out.append(f"{int(e['installed'].sum())} regulators installed for {n_cbr} CBR flows")
    if int(e["policed"].sum()) == 0:
        # Allowed only with the run's warning that the regulators never acted.
        if not any(w.startswith("eruf at ") for w in r.summary.get("warnings", [])):
            out.append("no packet policed although every CBR flow sends above its fair share")
    return out


def _warned_eruf(sc: dict[str, Any], rs: list[Any]) -> bool:
    return any(w.startswith("eruf at ") for w in rs[0].summary.get("warnings", []))


# ----------------------------------------------------------------- TCP rate controller

#: P1's claim on a TRC flow: at least the request (§5.2), at most 3 % above the model's
#: target R·(1 + gput_error + 1 %) (§4.3), with the TRC's default gput_error of 5 %.
TRC_BAND = (1.0, 1.03 * 1.06)


def _trc_tcp(rng: random.Random) -> dict[str, Any]:
    """A TCP a user might put behind a TRC: every key that changes its cycle drawn, and
    some that do not (MSS, RTO clock)."""
    variant = rng.choice(["newreno", "newreno", "sack", "sack", "reno", "tahoe"])
    tcp: dict[str, Any] = {"variant": variant, "max_window": 2000}
    halves = ["flight", "window"] + (["pipe"] if variant == "sack" else [])
    if rng.random() < 0.5:
        tcp["halve"] = rng.choice(halves)
    if rng.random() < 0.5:
        tcp["limited_transmit"] = rng.random() < 0.5
    if rng.random() < 0.4:
        tcp["delayed_ack"] = True
        if rng.random() < 0.3:
            tcp["delack_timeout"] = rng.choice(["40ms", "100ms", "500ms"])
    if rng.random() < 0.2:
        tcp["byte_counting"] = True
    if rng.random() < 0.3:
        tcp["initial_window"] = rng.choice([1, 2, 4, 10])
    if rng.random() < 0.3:
        tcp["mss"] = rng.choice([536, 1000, 1448])
    if rng.random() < 0.2:
        tcp["granularity"] = rng.choice(["1ms", "100ms", "500ms"])
    return tcp


def trc_scenario(
    tcp: dict[str, Any],
    rate: float,
    delay_ms: float,
    *,
    ecn: bool = False,
    model: str | None = None,
) -> dict[str, Any]:
    """One TCP flow through a TRC at its sender (P1 Fig. 6's topology: 200 Mb/s links,
    the access link ``delay_ms`` one way), requesting ``rate`` [bit/s]; long enough for
    about 40 of the TRC's cycles after a 100 s warm-up."""
    mss = int(tcp.get("mss", 1460))
    # W_avg at RTT*_min = 200 ms and a cycle of about W_max/2 ≈ 0.67·W_avg RTTs.
    w_avg = max(4.0, rate * 0.2 / (mss * 8))
    measured = max(300.0, 40 * 0.67 * w_avg * 0.2)
    stage: dict[str, Any] = {"kind": "trc", "flow": "f", "rate": _bps(rate), "ecn": ecn}
    if model is not None:
        stage["model"] = model
    link = [
        {"a": "s", "b": "r0", "rate": "200Mbps", "delay": f"{delay_ms:.3f}ms",
         "queue": {"kind": "droptail", "limit": 1000}},
        {"a": "r0", "b": "r1", "rate": "200Mbps", "delay": "0.5ms",
         "queue": {"kind": "droptail", "limit": 173}},
        {"a": "r1", "b": "d", "rate": "200Mbps", "delay": "0.5ms"},
    ]  # fmt: skip
    return {
        "name": "invariant-trc",
        "duration": f"{100 + measured:.0f}s",
        "warmup": "100s",
        "seed": 1,
        "node": [
            {"name": "s"},
            {"name": "r0", "kind": "router"},
            {"name": "r1", "kind": "router"},
            {"name": "d"},
        ],
        "link": link,
        "flow": [{"name": "f", "from": "s", "to": "d", "tcp": {**tcp, "ecn": ecn}}],
        "conditioner": [{"at": "s", "stages": [stage]}],
        "record": {"interval": "10s"},
    }


def _draw_trc(rng: random.Random) -> dict[str, Any]:
    tcp = _trc_tcp(rng)
    rate = 10 ** rng.uniform(math.log10(50e3), math.log10(4e6))
    ecn = rng.random() < 0.25
    sc = trc_scenario(tcp, rate, rng.uniform(0.5, 40), ecn=ecn)
    sc["seed"] = rng.randint(1, 10_000)
    return sc


#: Models fitted by :func:`_user_model` in this process: (TCP, ECN) → model file.
_FITTED: dict[str, str] = {}


def _user_model(tcp: dict[str, Any], ecn: bool) -> str:
    """The model ``qoslab trc fit`` makes for ``tcp`` (with its ECN law when ``ecn``),
    fitted once per process into a temporary folder."""
    import json
    import tempfile

    from qoslab.trc import fit

    key = json.dumps([tcp, ecn], sort_keys=True)
    if key not in _FITTED:
        folder = tempfile.mkdtemp(prefix="qoslab-trc-models-")
        path = fit(tcp, ecn=ecn, out=f"{folder}/model.toml", progress=False)
        _FITTED[key] = str(path)
    return _FITTED[key]


def _draw_trc_user(rng: random.Random) -> dict[str, Any]:
    tcp = _trc_tcp(rng)
    rate = 10 ** rng.uniform(math.log10(50e3), math.log10(4e6))
    ecn = rng.random() < 0.25
    delay = rng.uniform(0.5, 40)
    sc = trc_scenario(tcp, rate, delay, ecn=ecn, model=_user_model(tcp, ecn))
    sc["seed"] = rng.randint(1, 10_000)
    return sc


def _warned_trc(sc: dict[str, Any], rs: list[Any]) -> bool:
    """The run warns that its TRC's model cannot promise the request there."""
    return any(w.startswith("TRC for flow") for w in rs[0].summary.get("warnings", []))


def _check_trc(sc: dict[str, Any], rs: list[Any]) -> list[str]:
    r = rs[0]
    st = sc["conditioner"][0]["stages"][0]
    ratio = r.flows.row(0, named=True)["goodput_bps"] / _rate(st["rate"])
    lo, hi = TRC_BAND
    if lo <= ratio <= hi or _warned_trc(sc, rs):
        return []
    trc = r.tables["trc"].row(0, named=True)
    return [
        f"achieved / requested {ratio:.4f} outside [{lo}, {hi:.4f}] (W_max {trc['w_max']}, "
        f"RTT {trc['rtt'] * 1e3:.0f} ms)"
    ]


# ----------------------------------------------------------------- the list

INVARIANTS: tuple[Invariant, ...] = (
    Invariant(
        "srtcm-green",
        "srtcm",
        "RFC 2697 §3: a packet is green only if the committed bucket (CIR, CBS) holds it",
        "green bytes ≤ CIR·T/8 + CBS, exactly",
        _draw_srtcm,
        _check_srtcm,
    ),
    Invariant(
        "trtcm-green-yellow",
        "trtcm",
        "RFC 2698 §3: green needs the C bucket (CIR, CBS), green or yellow the P bucket (PIR, PBS)",
        "green ≤ CIR·T/8 + CBS and green + yellow ≤ PIR·T/8 + PBS, exactly",
        _draw_trtcm,
        _check_trtcm,
    ),
    Invariant(
        "token-bucket-profile",
        "token_bucket",
        "P0 §3 (⟨b, r⟩ profile): marked in-profile, policed or shaped traffic conforms to "
        "the bucket",
        "≤ r·T/8 + b, exactly; + r·(one period) with a periodic shaping timer",
        _draw_token_bucket,
        _check_token_bucket,
    ),
    Invariant(
        "tsw-green",
        "tsw2cm/tsw3cm",
        "RFC 2859 §2 / Clark & Fang: the green rate tracks CIR (marking with probability "
        "(avg − CIR)/avg above it)",
        "green ≤ 1.10 · CIR·(T + window + n·window·ln(R/CIR))/8 + 4 MTU, R the access rate, "
        "n = 1 + TCP timeouts (the estimator's catch-up from CIR to R at every restart)",
        _draw_tsw,
        _check_tsw,
    ),
    Invariant(
        "rtt-aware-green",
        "rtt_aware (protect_bound = cir)",
        "P3 §III: the markers keep the aggregate's profile; with protect_bound = 'cir' the "
        "small-window protection stops at CIR",
        "as tsw-green: green ≤ 1.10 · CIR·(T + window + n·window·ln(R/CIR))/8 + 4 MTU",
        _draw_rtt_aware,
        _check_rtt_aware,
    ),
    Invariant(
        "qosmgr-profile",
        "qosmgr",
        "P0 §3-4: an aggregate's shaped traffic, or the part marked in profile, conforms to "
        "its ⟨b, r⟩ profile whatever the sharing (partitioned, common, logical)",
        "≤ r·T/8 + b, exactly",
        _draw_qosmgr,
        _check_qosmgr,
    ),
    Invariant(
        "multcp-monotone",
        "tcp.cc multcp",
        "P4 §3.1: a MulTCP flow of weight w gets about w times a unit flow's share, so "
        "a flow of weight ≥ 2·w1 gets more than one of weight w1 on the same path",
        "heavy > light by the mean of 3 seeds (60 s runs, 50 s measured), NewReno or SACK",
        _draw_multcp,
        _check_multcp,
        slow=True,
        seeds=3,
    ),
    Invariant(
        "eruf-binds",
        "eruf",
        "P2 §2: the edge installs a regulator for every flow the core quenches and drops "
        "its excess",
        "regulators installed ≥ CBR flows (each 1.5-4 × its fair share), policed > 0, or the "
        "run's warning that the regulators never policed",
        _draw_eruf,
        _check_eruf,
        slow=True,
        warned=_warned_eruf,
    ),
    Invariant(
        "trc-request",
        "trc",
        "P1 §4.3/§5.2: a TRC flow gets at least its request and at most 3 % above the "
        "model's target; a TCP the TRC has no model for is refused naming `qoslab trc fit`",
        "1 ≤ achieved / requested ≤ 1.03 · 1.06 over ≥ 300 s after 100 s of warm-up, or "
        "the run's warning that the model cannot promise it there",
        _draw_trc,
        _check_trc,
        slow=True,
        warned=_warned_trc,
        refusal_names="qoslab trc fit",
    ),
    Invariant(
        "trc-user-fit",
        "trc (model fitted by `qoslab trc fit`)",
        "P1 §4.1/§4.3: with the model fitted to the flow's own TCP (any settings, "
        "`qoslab.trc.fit`), a TRC flow gets at least its request and at most 3 % above "
        "the model's target",
        "1 ≤ achieved / requested ≤ 1.03 · 1.06 over ≥ 300 s after 100 s of warm-up, or "
        "the run's warning that the model cannot promise it there",
        _draw_trc_user,
        _check_trc,
        slow=True,
        warned=_warned_trc,
        ci_draws=4,
    ),
)


def by_name(name: str) -> Invariant:
    """The invariant called ``name`` (KeyError naming the known ones otherwise)."""
    for inv in INVARIANTS:
        if inv.name == name:
            return inv
    raise KeyError(f"no invariant {name!r}; known: {', '.join(i.name for i in INVARIANTS)}")


def check_draw(inv: Invariant, rng: random.Random, seed: int = 0) -> Outcome:
    """Draws one scenario of ``inv`` from ``rng``, runs it (``inv.seeds`` times) and checks
    the promise; ``seed`` is recorded in the outcome (the draw's identity)."""
    from qoslab import run
    from qoslab.exceptions import ScenarioError

    sc = inv.draw(rng)
    try:
        rs = [run(sc, seed=k + 1) if inv.seeds > 1 else run(sc) for k in range(inv.seeds)]
    except ScenarioError as e:
        msg = str(e).splitlines()[0]
        if inv.refusal_names is not None and inv.refusal_names not in str(e):
            return Outcome(inv.name, seed, "violated",
                           f"refused without naming {inv.refusal_names!r}: {msg}", sc)  # fmt: skip
        return Outcome(inv.name, seed, "refused", msg, sc)
    v = inv.check(sc, rs)
    if v:
        return Outcome(inv.name, seed, "violated", "; ".join(v), sc)
    if inv.warned is not None and inv.warned(sc, rs):
        return Outcome(inv.name, seed, "warned", rs[0].summary["warnings"][0], sc)
    return Outcome(inv.name, seed, "kept", "", sc)

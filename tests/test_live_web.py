"""P3's WWW workload (`web = {…}`) live: the client's agent runs the simulator's web model
(sessions of pages of objects, one Linux TCP connection per object) with the simulator's
own stream, and the run has the simulator's `web_objects` and `web_pages` tables.

The first two tests need no root: the agent's generator and model against the
simulator's. The others need root and /dev/net/tun (three live runs of 3 s)."""

from __future__ import annotations

import math

import polars as pl

from conftest import needs_live, two_hosts
from qoslab.api import live, run
from qoslab.live_agent import MASK64, WebModel, Xoshiro

# A 20 ms link both ways: RTT 40 ms.
RTT = 0.040

# Pages of three 8000-byte objects (8 packets of 1000 bytes) requested 20 ms apart: each
# object is alone on the 10 Mb/s link (8312 bytes on the wire with Linux's 1448-byte
# segments take 6.65 ms) and fits in Linux's initial window of 10 segments.
CONSTANT = """
[[flow]]
name = "www"
from = "a"
to = "b"
tcp = { mss = 1000 }
[flow.web]
sessions = 2
inter_session = { kind = "constant", value = 1.4 }
pages = { kind = "constant", value = 4 }
inter_page = { kind = "constant", value = 0.1 }
objects = { kind = "constant", value = 3 }
inter_object = { kind = "constant", value = 0.02 }
object_size = { kind = "constant", value = 8 }
"""

# One session of random pages (1-4 objects each) and heavy-tailed object sizes.
DRAWN = """
[[flow]]
name = "www"
from = "a"
to = "b"
tcp = { mss = 1000 }
[flow.web]
sessions = 1
pages = { kind = "constant", value = 8 }
inter_page = { kind = "exponential", mean = 0.1 }
objects = { kind = "uniform", min = 0, max = 4 }
inter_object = { kind = "exponential", mean = 0.01 }
object_size = { kind = "pareto2", mean = 10, shape = 1.2 }
"""


def _scenario(tmp_path, name: str, flows: str, duration: str = "3s", seed: int = 1):
    p = tmp_path / f"{name}.toml"
    head = f"seed = {seed}\n" + two_hosts(name, delay="20ms", limit=None, duration=duration)
    p.write_text(head + flows)
    return p


def _splitmix(state: int) -> tuple[int, int]:
    state = (state + 0x9E3779B97F4A7C15) & MASK64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return state, z ^ (z >> 31)


def _from_seed(seed: int) -> list[int]:
    out, st = [], seed
    for _ in range(4):
        st, z = _splitmix(st)
        out.append(z)
    return out


def _derive(seed: int, path: str) -> list[int]:
    """rng.rs's RngStream::derive(seed, path), written out for the test (live runs get
    the state from the runner)."""
    h = 0xCBF29CE484222325
    for b in path.encode():
        h = ((h ^ b) * 0x100000001B3) & MASK64
    h = ((h << 17) | (h >> 47)) & MASK64
    _, z = _splitmix(seed ^ h)
    return _from_seed(z)


def test_the_agents_generator_is_the_simulators():
    # rng.rs's pinned value (`stream_is_pinned`).
    assert Xoshiro(_from_seed(1)).next_u64() == 14_971_601_782_005_023_387


def test_the_agents_model_draws_the_simulators_workload(tmp_path):
    """The agent's model, driven without a network, draws the object sizes and counts
    the simulator's run drew for the same seed (one session: its draws do not depend
    on when objects complete, only on their order)."""
    p = _scenario(tmp_path, "drawn", DRAWN, duration="20s", seed=11)
    sim = run(p)
    cfg = {
        "start": 0.0,
        "mss": 1000,
        "sessions": 1,
        "pages": {"kind": "constant", "value": 8},
        "inter_page": {"kind": "exponential", "mean": 0.1},
        "objects": {"kind": "uniform", "min": 0, "max": 4},
        "inter_object": {"kind": "exponential", "mean": 0.01},
        "object_size": {"kind": "pareto2", "mean": 10, "shape": 1.2},
        "state": _derive(11, "web/www"),
    }
    m = WebModel(cfg)
    now = 0.0
    requested: dict[int, float] = {}
    for _ in range(1000):
        if m.timers:
            now = max(now, m.next_timer())
            requested.update((k, now) for k in m.on_timer(now))
            continue
        open_ = [k for k, o in enumerate(m.objects) if o["done"] is None]
        if not open_:
            break
        now += 0.1
        for k in open_:
            m.objects[k]["done"] = now
            m.on_done(k, now)
    so, sp = sim.table("web_objects"), sim.table("web_pages")
    assert sp.height == 8 and so["done"].is_not_nan().all()  # the whole session ran
    assert [o["bytes"] for o in m.objects] == so["bytes"].to_list()
    assert [p["objects"] for p in m.pages] == sp["objects"].to_list()
    # The gaps are the simulator's draws too: the second object of the first page with
    # more than one was launched an inter-object time after the first, in both.
    page = next(i for i, p in enumerate(m.pages) if p["objects"] > 1)
    first = sum(p["objects"] for p in m.pages[:page])
    sim_gap = so["requested"][first + 1] - so["requested"][first]
    agent_gap = requested[first + 1] - requested[first]
    assert math.isclose(sim_gap, agent_gap, abs_tol=1e-9), (sim_gap, agent_gap)


@needs_live
def test_web_objects_and_pages_live(tmp_path):
    r = live(_scenario(tmp_path, "webc", CONSTANT))
    o, p = r.table("web_objects"), r.table("web_pages")
    # The configured constants: 2 sessions of 4 pages of 3 objects of 8000 bytes.
    assert p.group_by("session").len().sort("session")["len"].to_list() == [4, 4], p
    assert p["objects"].to_list() == [3] * 8 and p["bytes"].to_list() == [24_000] * 8
    assert o.height == 24 and o["bytes"].unique().to_list() == [8000]
    assert o.group_by("page").len()["len"].unique().to_list() == [3]
    assert o["object"].to_list() == list(range(24)) and o["syns"].unique().to_list() == [1]
    # Session 1 starts 1.4 s after session 0 (which starts with the run).
    s1 = p.filter(pl.col("session") == 1)["start"].min()
    assert 1.4 <= s1 < 1.45, p
    # Every object complete: no object can arrive before the SYN's round trip and the
    # request's (2 RTT), plus its own 8312 bytes at 10 Mb/s (6.65 ms).
    assert o["done"].is_not_nan().all() and o["received"].to_list() == o["bytes"].to_list()
    tx = 8312 * 8 / 10e6
    assert o["response_all"].min() >= 2 * RTT + tx, o["response_all"].describe()
    # Idle path, each object alone on the link, within Linux's initial window: the
    # median is the two round trips, the transmission, the request's (1052 bytes:
    # 0.84 ms) and a few ms of agents and datapath.
    assert o["response_all"].median() < 2 * RTT + tx + 0.00084 + 0.006, o["response_all"]
    # The first byte needs the two round trips too, but not the whole object.
    assert (o["response_first"] >= 2 * RTT).all()
    assert (o["response_first"] <= o["response_all"]).all()
    # A page takes at least as long as its first object (its start is that object's
    # request; the agent may launch an object late, never early).
    assert (p["response"] >= 2 * RTT + tx).all(), p
    # Its objects were requested 20 ms apart (the median gap: a busy machine may delay
    # a thread).
    gaps = o.select(pl.col("requested").diff().over("page").alias("gap"))["gap"].drop_nulls()
    assert gaps.len() == 16 and abs(gaps.median() - 0.020) < 0.002, gaps
    # Goodput: the object bytes the client read.
    assert r.flows["goodput_bytes"][0] == 24 * 8000


@needs_live
def test_same_seed_same_workload_live_and_simulated(tmp_path):
    """Two live runs with one seed draw one workload, the simulator's for that seed;
    another seed draws another."""
    a = live(_scenario(tmp_path, "d1", DRAWN, seed=5))
    b = live(_scenario(tmp_path, "d2", DRAWN, seed=5))
    sim = run(_scenario(tmp_path, "d3", DRAWN, duration="20s", seed=5))
    other = run(_scenario(tmp_path, "d4", DRAWN, duration="20s", seed=6))

    def drawn(r):
        o, p = r.table("web_objects"), r.table("web_pages")
        return o["bytes"].to_list(), p["objects"].to_list()

    (ab, ap), (bb, bp), (sb, sp) = drawn(a), drawn(b), drawn(sim)
    assert len(ap) >= 3 and len(ab) >= 3, (ab, ap)
    # The live runs may end at different pages: the common part is one workload.
    n, k = min(len(ab), len(bb)), min(len(ap), len(bp))
    assert ab[:n] == bb[:n] and ap[:k] == bp[:k]
    assert ab == sb[: len(ab)] and ap == sp[: len(ap)], (ab, sb)
    assert drawn(other)[0][: len(ab)] != ab

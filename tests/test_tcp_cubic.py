"""CUBIC (RFC 9438) in a small dumbbell: more goodput than Reno on a long, fat path with
random loss, and its scenario keys' errors exit 2 naming the key."""

from __future__ import annotations

import tomllib

import qoslab
from conftest import cli

#: Two bulk flows through a 100 Mb/s bottleneck with 200 ms RTT and random loss 3e-4:
#: the loss, not the capacity, limits them. Reno's window then averages about
#: 1.22/sqrt(p) = 70 segments (≈ 4.1 Mb/s a flow); CUBIC's response function (RFC 9438
#: §5.1) gives (C(3+β)/(4(1−β)))^(1/4)·RTT^(3/4)/p^(3/4) ≈ 138 segments (≈ 8 Mb/s).
DUMBBELL = """
name = "cubic-dumbbell"
duration = "60s"
warmup = "10s"
seed = 3

[[node]]
name = "s1"
[[node]]
name = "s2"
[[node]]
name = "r1"
kind = "router"
[[node]]
name = "r2"
kind = "router"
[[node]]
name = "d1"
[[node]]
name = "d2"

[[link]]
a = "s1"
b = "r1"
rate = "1Gbps"
delay = "1ms"
[[link]]
a = "s2"
b = "r1"
rate = "1Gbps"
delay = "1ms"
[[link]]
a = "r1"
b = "r2"
rate = "100Mbps"
delay = "98ms"
loss_a_to_b = 3e-4
queue = {{ kind = "droptail", limit = 2000 }}
[[link]]
a = "r2"
b = "d1"
rate = "1Gbps"
delay = "1ms"
[[link]]
a = "r2"
b = "d2"
rate = "1Gbps"
delay = "1ms"

[[flow]]
name = "f1"
from = "s1"
to = "d1"
tcp = {{ variant = "sack", max_window = 3000, cc = {cc} }}
[[flow]]
name = "f2"
from = "s2"
to = "d2"
start = "0.1s"
tcp = {{ variant = "sack", max_window = 3000, cc = {cc} }}
"""


def _goodput(cc: str) -> float:
    r = qoslab.run(tomllib.loads(DUMBBELL.format(cc=cc)))
    return float(r.flows["goodput_bps"].sum())


def test_cubic_beats_reno_on_a_long_fat_path_with_random_loss():
    reno = _goodput('"reno"')
    cubic = _goodput('"cubic"')
    # Hand estimate above: CUBIC ≈ 2 × Reno. Require a clear 1.3 ×.
    assert cubic > 1.3 * reno, (cubic, reno)
    # Both far below the 100 Mb/s bottleneck: the loss limits them, not the link.
    assert cubic < 50e6


def test_bad_cubic_keys_exit_2_naming_the_key(tmp_path):
    for cc, key in [
        ('{ kind = "cubic", beta = 1.2 }', "cc.beta"),
        ('{ kind = "cubic", c = 0 }', "cc.c"),
    ]:
        p = tmp_path / "bad.toml"
        p.write_text(DUMBBELL.format(cc=cc))
        r = cli("run", p, "-o", tmp_path / "out")
        assert r.returncode == 2, (r.returncode, r.stderr)
        assert key in r.stderr and "internal error" not in r.stderr, r.stderr
    p.write_text(DUMBBELL.format(cc='{ kind = "reno", hystart = true }'))
    r = cli("run", p, "-o", tmp_path / "out")
    assert r.returncode == 2 and "hystart" in r.stderr, r.stderr

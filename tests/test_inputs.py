"""Bad input is caught before running, named at its exact key, and never crashes.

A corpus of malformed scenarios (each a small spoilt copy of the test scenario) must
exit 2 from ``qoslab check`` and ``qoslab run`` naming the key, without a traceback;
the valid entries must run. The Python API raises ``ScenarioError`` naming the key for
seeds and override values a scenario cannot hold.
"""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

import qoslab
from conftest import cli, small_text
from qoslab.cli import cli as qoslab_cli

QUEUE = 'queue = { kind = "droptail", limit = 20 }'
CBR_A = 'cbr = { rate = "800kbps", size = 1000, jitter = 0.2 }'
CBR_B = 'cbr = { rate = "400kbps", size = 1000, jitter = 0.2 }'


def _cond(stages: str) -> str:
    return f'\n[[conditioner]]\nat = "h1"\nstages = [{stages}]\n'


# name: (replacements [(old, new)] or appended text, the key named ("" = whole file),
#        a phrase the message must contain)
MALFORMED: dict[str, tuple[list[tuple[str, str]] | str, str, str]] = {
    "seed string": ([("seed = 1", 'seed = "one"')], "seed", "whole number"),
    "seed negative": ([("seed = 1", "seed = -3")], "seed", "whole number"),
    "seed fraction": ([("seed = 1", "seed = 1.5")], "seed", "found 1.5"),
    "seed above 2^64-1": ([("seed = 1", "seed = 18446744073709551616")], "seed", "whole"),
    "seed boolean": ([("seed = 1", "seed = true")], "seed", "whole number"),
    "seed date": ([("seed = 1", "seed = 1979-05-27")], "seed", "whole number"),
    "deep nesting": (
        [("seed = 1", "seed = 1\nx = " + "[" * 300 + "]" * 300)],
        "x" + "[0]" * 32,
        "nest more than 32 levels",
    ),
    "too deep for the parser": ("x = " + "[" * 3000 + "]" * 3000 + "\n", "", "nest too deeply"),
    "nan jitter": ([("jitter = 0.2 }", "jitter = nan }")], "flow[0].cbr.jitter", "finite"),
    "inf delay": ([('delay = "10ms"', "delay = inf")], "link[2].delay", "finite"),
    "-inf loss": ([(QUEUE, QUEUE + "\nloss = -inf")], "link[2].loss", "finite"),
    "red max_p string": (
        [(QUEUE, 'queue = { kind = "red", limit = 20, max_p = "high" }')],
        "link[2].queue.max_p",
        'expected a number, found the string "high"',
    ),
    "queue kind unknown": (
        [(QUEUE, 'queue = { kind = "codl" }')],
        "link[2].queue.kind",
        "one of droptail",
    ),
    "queue not a table": ([(QUEUE, "queue = 5")], "link[2].queue", "queue table"),
    "queue without kind": ([(QUEUE, "queue = { limit = 20 }")], "link[2].queue", "`kind`"),
    "rio curve field": (
        [(QUEUE, 'queue = { kind = "rio_c", dp1 = { min_th = 1, max_th = 2, max_p = "x" } }')],
        "link[2].queue.dp1.max_p",
        "expected a number",
    ),
    "queue limit negative": (
        [(QUEUE, 'queue = { kind = "droptail", limit = -5 }')],
        "link[2].queue.limit",
        "whole number from 0 to 4294967295, found -5",
    ),
    "red unknown key": (
        [(QUEUE, 'queue = { kind = "red", min_thresh = 5 }')],
        "link[2].queue.min_thresh",
        "unknown field",
    ),
    "ered factor type": (
        [(QUEUE, 'queue = { kind = "ered", factor = [1] }')],
        "link[2].queue.factor",
        "expected a number, found a list",
    ),
    "stage size word": (
        _cond('{ kind = "token_bucket", rate = "1Mbps", depth = "fast" }'),
        "conditioner[0].stages[0].depth",
        "size",
    ),
    "stage kind unknown": (
        _cond('{ kind = "leaky_bucket" }'),
        "conditioner[0].stages[0].kind",
        "one of token_bucket",
    ),
    "stage missing key": (
        _cond('{ kind = "trtcm", cir = "1Mbps", cbs = 100, pir = "2Mbps" }'),
        "conditioner[0].stages[0]",
        "pbs",
    ),
    "policy inner stage": (
        _cond(
            '{ kind = "policy", rules = [{ conditioner = { kind = "trtcm", cir = "1Mbps", '
            'cbs = 100, pir = "2Mbps", pbs = true } }] }'
        ),
        "conditioner[0].stages[0].rules[0].conditioner.pbs",
        "size",
    ),
    "stage boolean type": (
        _cond('{ kind = "srtcm", cir = "1Mbps", cbs = 10, ebs = 10, colour_aware = "yes" }'),
        "conditioner[0].stages[0].colour_aware",
        "true or false",
    ),
    "record interval 0": ([('interval = "0.5s"', "interval = 0")], "record.interval", "positive"),
    "queue interval 0": (
        [('interval = "0.5s"', 'interval = "0.5s"\nqueue_interval = "0ms"')],
        "record.queue_interval",
        "positive",
    ),
    "record interval 1ns": (
        [('interval = "0.5s"', 'interval = "1ns"')],
        "record.interval",
        "at most 10000000 samples",
    ),
    "max_events 0": ([("seed = 1", "seed = 1\nmax_events = 0")], "max_events", "positive"),
    "udp size number": (
        [(CBR_A, 'cbr = { rate = "800kbps", size = 70000 }')],
        "flow[0].cbr.size",
        "65535",
    ),
    "udp size unit": (
        [(CBR_A, 'cbr = { rate = "800kbps", size = "100KB" }')],
        "flow[0].cbr.size",
        "65535",
    ),
    "pareto size": (
        [(CBR_B, 'pareto = { rate = "400kbps", mean_on = 0.5, mean_off = 0.5, size = "64KiB" }')],
        "flow[1].pareto.size",
        "65535",
    ),
    "size in bits": (
        [(CBR_A, 'cbr = { rate = "800kbps", size = "8Kb" }')],
        "flow[0].cbr.size",
        "unit",
    ),
    "start after the end": ([(CBR_A, 'start = "10s"\n' + CBR_A)], "flow[0].start", "end"),
    "stop before start": (
        [(CBR_A, 'start = "2s"\nstop = "1s"\n' + CBR_A)],
        "flow[0].stop",
        "after the start",
    ),
    "rate unit shouted": ([('rate = "1Mbps"', 'rate = "1MBPS"')], "link[2].rate", "MBps"),
    "rate word": ([('rate = "1Mbps"', 'rate = "fast"')], "link[2].rate", "rate"),
    "duration negative": ([('duration = "4s"', 'duration = "-1s"')], "duration", "duration"),
    "duration unit": ([('duration = "4s"', 'duration = "4 parsecs"')], "duration", "unit"),
    "warmup too long": ([('warmup = "0.5s"', 'warmup = "5s"')], "warmup", "shorter"),
    "loss above 1": ([(QUEUE, QUEUE + "\nloss = 1.5")], "link[2].loss", "probability"),
    "unknown top key": ([("seed = 1", "seed = 1\nfrobnicate = 3")], "frobnicate", "unknown"),
    "node name number": ([('name = "h1"', "name = 5")], "node[0].name", "string"),
    "record interval bool": ([('interval = "0.5s"', "interval = true")], "record.interval", ""),
    "cbr not a table": ([(CBR_A, 'cbr = "fast"')], "flow[0].cbr", "table"),
    "queues not a list": (
        [('interval = "0.5s"', 'interval = "0.5s"\nqueues = "r1->h3"')],
        "record.queues",
        "list",
    ),
    "capture snaplen": (
        '\n[[capture]]\niface = "r1->h3"\nsnaplen = -1\n',
        "capture[0].snaplen",
        "",
    ),
    "two applications": ([(CBR_A, "tcp = {}\n" + CBR_A)], "flow[0].tcp", "exactly one"),
    "jitter word": ([(CBR_A, 'start_jitter = "abc"\n' + CBR_A)], "flow[0].start_jitter", ""),
    "conditioner at nowhere": (
        '\n[[conditioner]]\nat = "h9"\nstages = [{ kind = "delay", delay = "1ms" }]\n',
        "conditioner[0].at",
        "h9",
    ),
    "number with 5000 digits": ([("seed = 1", "seed = " + "9" * 5000)], "", "thousands of digits"),
    "duplicate key": ([("seed = 1", "seed = 1\nseed = 2")], "", "not valid TOML"),
}

# Valid entries that exercise the same rules: they must run.
VALID: dict[str, list[tuple[str, str]]] = {
    "byte-order mark": [],  # written with a BOM below
    "cbr size with a unit": [(CBR_A, 'cbr = { rate = "800kbps", size = "1KB", jitter = 0.2 }')],
    "rate in bytes per second": [('rate = "1Mbps"', 'rate = "125kBps"')],
    "integral seed": [("seed = 1", "seed = 18446744073709551615")],
}


def _spoil(spoil: list[tuple[str, str]] | str) -> str:
    text = small_text()
    if isinstance(spoil, str):
        return text + spoil
    for old, new in spoil:
        assert old in text, old
        text = text.replace(old, new, 1)
    return text


def _invoke(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(qoslab_cli, list(args))
    out = res.output + (res.stderr if res.stderr_bytes is not None else "")
    return res.exit_code, out


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_scenarios_exit_2_naming_the_key(case, tmp_path):
    spoil, key, phrase = MALFORMED[case]
    f = tmp_path / "bad.toml"
    f.write_text(_spoil(spoil), encoding="utf-8")
    for command in ("check", "run"):
        args = [command, str(f)] + (["-o", str(tmp_path / "out")] if command == "run" else [])
        code, out = _invoke(*args)
        assert code == 2, f"{command}: {out}"
        assert "Traceback" not in out and "internal error" not in out, out
        if key:
            assert f"at key `{key}`:" in out, out
        else:
            assert "at key" not in out, out
        assert phrase in out, out
        assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("case", list(VALID))
def test_valid_entries_run(case, tmp_path):
    f = tmp_path / "ok.toml"
    text = _spoil(VALID[case])
    f.write_bytes(("\ufeff" if case == "byte-order mark" else "").encode() + text.encode())
    code, out = _invoke("run", str(f), "-o", str(tmp_path / "out"))
    assert code == 0, out
    assert qoslab.load(tmp_path / "out").flows.height == 2


def test_a_sample_exits_2_through_the_real_command(tmp_path):
    for case in ("seed negative", "red max_p string", "deep nesting"):
        f = tmp_path / "bad.toml"
        f.write_text(_spoil(MALFORMED[case][0]))
        p = cli("run", f, "-o", tmp_path / "out")
        assert p.returncode == 2, p.stderr
        assert "Traceback" not in p.stderr


def test_bytes_per_second_mean_bytes(tmp_path):
    """125 kB/s is 1 Mbit/s: the run is the same as with "1Mbps" (it once read 125 kbit/s)."""
    a = qoslab.run(small_text_file(tmp_path, "a", small_text()))
    b = qoslab.run(
        small_text_file(tmp_path, "b", small_text().replace('rate = "1Mbps"', 'rate = "125kBps"'))
    )
    assert a.flows.equals(b.flows)
    assert 0.85e6 < b.flows["goodput_bps"].sum() <= 1.0e6


def small_text_file(tmp_path, name: str, text: str):
    p = tmp_path / f"{name}.toml"
    p.write_text(text)
    return p


@pytest.mark.parametrize(
    "seed", [-1, 1.5, 2**64, "3", True, None.__class__], ids=lambda s: repr(s)[:20]
)
def test_api_seed_errors_name_the_key(small, seed):
    with pytest.raises(qoslab.ScenarioError) as e:
        qoslab.run(small, seed=seed)
    assert e.value.key == "seed" and "whole number" in e.value.detail


@pytest.mark.parametrize("seed", [-1, 1.5, 2**64, "x"])
def test_seed_overrides_and_files_name_the_key(small, seed):
    with pytest.raises(qoslab.ScenarioError) as e:
        qoslab.run(small, overrides={"seed": seed})
    assert e.value.key == "seed"
    with pytest.raises(qoslab.ScenarioError) as e:
        qoslab.check(small, overrides={"seed": seed})
    assert e.value.key == "seed"


def test_the_largest_seed_runs(small):
    r = qoslab.run(small, seed=2**64 - 1, overrides={"duration": "1s"})
    assert r.summary["seed"] == 2**64 - 1


class _Opaque:
    """A value JSON cannot hold; its name (not its address) is the test id."""

    def __str__(self) -> str:
        return "_Opaque()"


@pytest.mark.parametrize(
    ("path", "value", "key", "phrase"),
    [
        ("link.2.rate", {1, 2}, "link[2].rate", "cannot be a scenario value"),
        ("link.2.rate", b"1Mbps", "link[2].rate", "cannot be a scenario value"),
        ("link[2].rate", _Opaque(), "link[2].rate", "cannot be a scenario value"),
        ("link.2.queue.limit", 2**70, "link[2].queue.limit", "expected a number from"),
        ("link.2.queue.limit", -(2**64), "link[2].queue.limit", "expected a number from"),
        ("link.2.queue.limit", math.nan, "link[2].queue.limit", "finite"),
        ("link.2.queue.limit", math.inf, "link[2].queue.limit", "finite"),
        ("link.2.queue", {1: 2}, "link[2].queue", "keys must be strings"),
        ("flow.a.cbr", {"rate": [complex(1, 1)]}, "flow[0].cbr.rate[0]", "complex"),
    ],
    ids=str,
)
def test_override_values_json_cannot_hold(small, path, value, key, phrase):
    for fn in (qoslab.check, qoslab.run):
        with pytest.raises(qoslab.ScenarioError) as e:
            fn(small, overrides={path: value})
        assert e.value.key == key, e.value
        assert phrase in e.value.detail, e.value


def test_override_with_numpy_numbers_is_accepted(small):
    import numpy as np

    sc = qoslab.check(
        small, overrides={"link.2.queue.limit": np.int64(30), "flow.a.cbr.jitter": np.float32(0.5)}
    )
    assert sc.data["link"][2]["queue"]["limit"] == 30
    assert type(sc.data["link"][2]["queue"]["limit"]) is int
    with pytest.raises(qoslab.ScenarioError) as e:
        qoslab.check(small, overrides={"flow.a.cbr.jitter": np.float64("nan")})
    assert e.value.key == "flow[0].cbr.jitter"


def test_dict_scenarios_too_deep_or_cyclic(small):
    import tomllib

    data = tomllib.loads(small_text())
    deep: list = []
    cur = deep
    for _ in range(5000):
        cur.append([])
        cur = cur[0]
    with pytest.raises(qoslab.ScenarioError) as e:
        qoslab.check({**data, "x": deep})
    assert "nest" in e.value.detail and e.value.key.startswith("x[0]")
    cyclic = dict(data)
    cyclic["record"] = {"self": cyclic}
    with pytest.raises(qoslab.ScenarioError):
        qoslab.check(cyclic)
    bad_key = {**data, 5: 1}
    with pytest.raises(qoslab.ScenarioError) as e:
        qoslab.check(bad_key)
    assert "keys must be strings" in e.value.detail


def test_json_scenarios_with_nan_or_deep_nesting(tmp_path):
    import tomllib

    data = tomllib.loads(small_text())
    text = json.dumps(data).replace('"seed": 1', '"seed": 1, "x": NaN')
    f = tmp_path / "nan.json"
    f.write_text(text)
    with pytest.raises(qoslab.ScenarioError) as e:
        qoslab.check(f)
    assert "NaN" in e.value.detail
    f.write_text('{"duration": 1, "x": ' + "[" * 5000 + "]" * 5000 + "}")
    with pytest.raises(qoslab.ScenarioError) as e:
        qoslab.check(f)
    assert "nest" in e.value.detail
    f.write_text('{"duration": ' + "9" * 5000 + "}")
    with pytest.raises(qoslab.ScenarioError) as e:
        qoslab.check(f)
    assert "thousands of digits" in e.value.detail
    f.write_bytes(b"\xef\xbb\xbf" + json.dumps(data).encode())
    assert qoslab.check(f).data["name"] == "small"

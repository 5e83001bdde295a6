"""scripts/pgo_build.py: the pieces that decide what the PGO training runs."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def pgo():
    spec = importlib.util.spec_from_file_location("pgo_build", ROOT / "scripts" / "pgo_build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_durations_parse_like_scenarios(pgo):
    assert pgo.seconds("1100s") == 1100
    assert pgo.seconds("500ms") == pytest.approx(0.5)
    assert pgo.seconds("2min") == 120
    assert pgo.seconds("20") == 20
    assert pgo.seconds("soon") is None


def test_full_length_training_scenarios_exist(pgo):
    # A renamed scenario would silently shrink the profile to the short runs.
    for rel in pgo.FULL_LENGTH:
        assert (ROOT / "scenarios" / rel).is_file(), rel


def test_every_packaged_scenario_has_a_duration_the_training_can_cut(pgo):
    from qoslab.scenario import load

    for f in sorted((ROOT / "scenarios").rglob("*.toml")):
        d = load(f).data
        assert pgo.seconds(d.get("duration", "0s")) is not None, f
        assert pgo.seconds(d.get("warmup", "0s")) is not None, f

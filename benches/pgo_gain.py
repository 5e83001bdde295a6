"""What profile-guided optimisation buys: the engine's CPU time on reference scenarios,
built plainly and with setup's profile, measured side by side, and whether the results
are the same bit for bit.

    python benches/pgo_gain.py [--rounds 3] [SCENARIO ...]

Builds ``qoslab-run`` twice (``target/pgo-bench/plain`` and ``…/pgo``, about 1.5 min
each; the second as setup's extension is built: ``-Cprofile-use`` on
``target/pgo/merged.profdata``, the profile ``scripts/pgo_build.py`` merged for the
extension, with its ``USE_FLAGS``), then runs each scenario with both
builds alternately, ``--rounds`` times, and prints the best user CPU time of each and
their ratio. The default scenario is P1's Table 1 cell at 50 Mb/s (1,100 s, 18 TRC
flows), the heaviest cell of the papers' full runs. The results must be identical
(the JSON outputs compared without their wall-clock field): the script exits with 1
if they are not.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import pgo_build  # noqa: E402  (the shipped build's flags)

PROFILE = ROOT / "target" / "pgo" / "merged.profdata"
OUT = ROOT / "target" / "pgo-bench"


def build(kind: str) -> Path:
    """``qoslab-run`` built plainly or with the profile; returns the binary."""
    env = dict(os.environ, CARGO_TARGET_DIR=str(OUT / kind))
    if kind == "pgo":
        flags = f"-Cprofile-use={PROFILE} {pgo_build.USE_FLAGS}"
        env["RUSTFLAGS"] = f"{env.get('RUSTFLAGS', '')} {flags}".strip()
    subprocess.run(["cargo", "build", "--release", "-q", "--bin", "qoslab-run"],
                   cwd=ROOT, env=env, check=True)  # fmt: skip
    return OUT / kind / "release" / "qoslab-run"


def cpu_run(binary: Path, scenario: Path, out: Path) -> float:
    """User CPU seconds of one whole ``qoslab-run`` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    subprocess.run([str(binary), str(scenario), "--out", str(out)], check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - before


def without_sweep(scenario: Path, tmp: Path) -> Path:
    """``scenario`` as JSON without its ``[sweep]`` table (``qoslab-run`` runs one
    scenario: each swept key keeps the file's own value), as qoslab's loader reads it."""
    from qoslab.scenario import load, to_json

    out = tmp / f"{scenario.stem}.json"
    out.write_text(to_json(load(scenario).data))
    return out


def results(path: Path) -> dict:
    """A run's JSON output without its wall-clock time."""
    data = json.loads(path.read_text())
    data.get("summary", {}).pop("wall_s", None)
    return data


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenarios", nargs="*", type=Path,
                    default=[ROOT / "scenarios" / "p1" / "t1-50mbps.toml"])  # fmt: skip
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    if not PROFILE.is_file():
        print(f"{PROFILE}: missing; run `bash scripts/setup.sh` (with PGO) first",
              file=sys.stderr)  # fmt: skip
        return 2
    bins = {k: build(k) for k in ("plain", "pgo")}
    same = True
    with tempfile.TemporaryDirectory() as tmp:
        for sc in a.scenarios:
            one = without_sweep(sc, Path(tmp))
            best = {k: float("inf") for k in bins}
            for _ in range(a.rounds):
                for k, b in bins.items():
                    best[k] = min(best[k], cpu_run(b, one, Path(tmp) / f"{k}.json"))
            ok = results(Path(tmp) / "plain.json") == results(Path(tmp) / "pgo.json")
            same &= ok
            print(f"{sc.relative_to(ROOT) if sc.is_relative_to(ROOT) else sc}: "
                  f"plain {best['plain']:.2f} s, PGO {best['pgo']:.2f} s of CPU "
                  f"(PGO/plain {best['pgo'] / best['plain']:.3f}); results "
                  f"{'identical' if ok else 'DIFFER'}")  # fmt: skip
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())

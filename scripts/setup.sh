#!/usr/bin/env bash
# Sets up a clone for use: a .venv with qoslab's Python dependencies (and the test and
# Ray extras) and the Rust extension built in release mode (profile-guided where
# possible: scripts/pgo_build.py) and installed editable.
# Idempotent: a second run checks two stamps and returns in about a second.
# Needs: Rust (cargo), Python >= 3.10 with venv and pip. maturin comes from PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."

PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  for c in python3.11 python3.12 python3.13 python3.10 python3; do
    if command -v "$c" >/dev/null 2>&1; then PY="$c"; break; fi
  done
fi
[ -n "$PY" ] || { echo "setup: no python3 found" >&2; exit 1; }

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $PY"
  "$PY" -m venv .venv
fi
VPY=.venv/bin/python

# 1. Python dependencies, from pyproject.toml (runtime + test + ray extras).
deps_hash=$(cat pyproject.toml | sha256sum | cut -c1-16)
if [ "$(cat .venv/.qoslab-deps 2>/dev/null || true)" != "$deps_hash" ]; then
  echo "setup: installing Python dependencies"
  "$VPY" -m pip install -q --upgrade pip
  mapfile -t deps < <("$VPY" - <<'PYEOF'
import tomllib
p = tomllib.load(open("pyproject.toml", "rb"))
deps = list(p["project"]["dependencies"])
for extra in ("test", "ray"):
    deps += p["project"]["optional-dependencies"][extra]
deps += p["build-system"]["requires"]
print("\n".join(deps))
PYEOF
)
  "$VPY" -m pip install -q "${deps[@]}"
  echo "$deps_hash" > .venv/.qoslab-deps
fi

# 2. The extension, rebuilt only when Rust sources, manifests, pyproject or the build's
# flags (scripts/pgo_build.py, .cargo/config.toml) changed.
src_hash=$(find crates -type f \( -name '*.rs' -o -name Cargo.toml \) -print0 | sort -z \
  | xargs -0 cat Cargo.toml Cargo.lock pyproject.toml scripts/pgo_build.py .cargo/config.toml \
  | sha256sum | cut -c1-16)
if [ "$(cat .venv/.qoslab-build 2>/dev/null || true)" != "$src_hash" ] \
   || ! "$VPY" -c "import qoslab._core" >/dev/null 2>&1; then
  # Profile-guided when the machine allows it (scripts/pgo_build.py says why not);
  # QOSLAB_PGO=0 builds plainly. Results are the same either way, only the speed differs.
  "$VPY" scripts/pgo_build.py
  echo "$src_hash" > .venv/.qoslab-build
fi
# 3. Graphviz (dot, neato): the layout of the topology pictures (qoslab draw, reports).
# Without it they fall back to a simpler layout and say so; installed when missing and
# the machine has apt-get and root (or sudo), otherwise a note says how.
if ! command -v dot >/dev/null 2>&1 || ! command -v neato >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  if command -v apt-get >/dev/null 2>&1 && { [ -z "$SUDO" ] || command -v sudo >/dev/null 2>&1; }; then
    echo "setup: installing Graphviz (the topology pictures' layout)"
    $SUDO apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends graphviz >/dev/null
  else
    echo "setup: Graphviz's dot is missing (install the graphviz package for the topology pictures' layout)" >&2
  fi
fi
"$VPY" -c "import qoslab; print('setup: qoslab', qoslab.__version__, 'ready in .venv')"

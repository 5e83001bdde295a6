#!/usr/bin/env bash
# All tests: set up (if needed) with Rust format/lint/tests beside it, then ruff, and
# pytest with the slow tests included. Installs headless Chromium (for the report test) if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
START=$SECONDS
# A stage's header, with the minutes and seconds since the start (where the time goes).
stage() { printf '== %s  [%dm%02ds]\n' "$1" $(((SECONDS - START) / 60)) $(((SECONDS - START) % 60)); }
# The Rust checks (debug builds in target/debug) run beside the set-up, whose release
# builds spend most of their time in single-threaded LTO: the second core is theirs.
# Their output is shown when they end; a failure stops the run there.
RUST_OUT=$(mktemp)
(
  stage "cargo fmt";    cargo fmt --all --check
  stage "cargo clippy"; cargo clippy --workspace --all-targets -q -- -D warnings
  stage "cargo test";   cargo test --workspace -q
  stage "cargo checks done"
) >"$RUST_OUT" 2>&1 &
RUST_JOB=$!
trap 'kill $RUST_JOB 2>/dev/null || true; rm -f "$RUST_OUT"' EXIT
stage "set-up (the Rust checks run beside it)"
bash scripts/setup.sh
stage "set-up done; the Rust checks:"
rust_ok=0; wait $RUST_JOB || rust_ok=$?
cat "$RUST_OUT"
[ "$rust_ok" = 0 ] || { echo "test: the Rust checks failed (exit $rust_ok)" >&2; exit 1; }

if ! command -v chromium-headless-shell >/dev/null 2>&1 && ! command -v chromium >/dev/null 2>&1; then
  echo "test: installing chromium-headless-shell (for the HTML report test)"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends \
    chromium-headless-shell >/dev/null
fi

if ! command -v tshark >/dev/null 2>&1; then
  echo "test: installing tshark (the pcap capture test reads qoslab's files with it)"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends tshark >/dev/null
fi

# Two lines, not `a && b`: under `set -e` a failing `a` in an && list would not stop us.
stage "ruff";         .venv/bin/ruff check python tests benches validation scripts
.venv/bin/ruff format --check python tests benches validation scripts
# The report tests' Chromium screenshots are kept as artefacts (results/ is not tracked).
export QOSLAB_SCREENSHOTS="${QOSLAB_SCREENSHOTS:-results/test-screenshots}"
export QOSLAB_REQUIRE_CHROMIUM=1
# Two workers, a test file per worker at a time (module fixtures are built once); the
# live datapath tests then run alone, since their timing checks want a quiet machine.
# --durations lists the slowest tests of each, so where CI's minutes go is in its log.
WORKERS="${QOSLAB_TEST_WORKERS:-$(( $(nproc) < 2 ? 1 : 2 ))}"
stage "pytest ($WORKERS workers)"
.venv/bin/python -m pytest -m "slow or not slow" -q -n "$WORKERS" --dist loadfile --durations=15 \
  --ignore-glob 'tests/test_live*.py'
stage "pytest (live datapath, alone: tests/test_live*.py)"
.venv/bin/python -m pytest -m "slow or not slow" -q --durations=10 tests/test_live*.py
stage "done"

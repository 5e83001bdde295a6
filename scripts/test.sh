#!/usr/bin/env bash
# All tests: set up (if needed), then Rust format/lint/tests, ruff, and pytest with the
# slow tests included. Installs headless Chromium (for the report test) if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

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

echo "== cargo fmt";    cargo fmt --all --check
echo "== cargo clippy"; cargo clippy --workspace --all-targets -q -- -D warnings
echo "== cargo test";   cargo test --workspace -q
# Two lines, not `a && b`: under `set -e` a failing `a` in an && list would not stop us.
echo "== ruff";         .venv/bin/ruff check python tests benches validation scripts
.venv/bin/ruff format --check python tests benches validation scripts
echo "== pytest"
# The report tests' Chromium screenshots are kept as artefacts (results/ is not tracked).
export QOSLAB_SCREENSHOTS="${QOSLAB_SCREENSHOTS:-results/test-screenshots}"
QOSLAB_REQUIRE_CHROMIUM=1 .venv/bin/python -m pytest -m "slow or not slow" -q

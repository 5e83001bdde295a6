#!/usr/bin/env bash
# The main job: set up (if needed), then reproduce every registered paper experiment in
# quick mode (P0 in full mode: a minute) and print the report's path (the last line).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/qoslab reproduce --all --quick --full p0- --out results/reproduce "$@"

#!/usr/bin/env bash
# qoslab's speed benchmarks: prints events/s and packet-hops/s for the reference
# scenarios, and ns per packet for each queue discipline and conditioner.
# Usage: benches/run.sh [bench-name ...]   (default: every bench target)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then
  set -- $(ls crates/qoslab/benches/*.rs | xargs -n1 basename | sed 's/\.rs$//')
fi
for b in "$@"; do
  cargo bench -q -p qoslab --bench "$b"
done

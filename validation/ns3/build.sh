#!/usr/bin/env bash
# Builds the ns-3 peer programs against the ns3 PyPI wheel (headers and shared
# libraries only; its Python bindings are not needed). Kept out of CI: it needs a
# separate virtual environment with `pip install --no-deps ns3==3.44.post0`.
# Usage: validation/ns3/build.sh [VENV]   (default: ./.ns3-venv)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${1:-$here/../../.ns3-venv}"
if [ ! -d "$venv" ]; then
  python3 -m venv "$venv"
  # --no-deps: the wheel's Python bindings pull cppyy, which builds from source for
  # a long time; the C++ headers and libraries are all the peer needs.
  "$venv/bin/pip" install -q --no-deps ns3==3.44.post0
fi
ns3="$("$venv/bin/python" -c 'import os, importlib.util as u; print(os.path.dirname(u.find_spec("ns3").submodule_search_locations[0]) + "/ns3")')"
out="$here/build"
mkdir -p "$out"
for prog in dumbbell p0_f5 p0_f7 p4_waimd p4_multilink p3_f6; do
  g++ -O2 -std=c++20 -o "$out/$prog" "$here/$prog.cc" \
    -I"$ns3/include" -L"$ns3/lib64" -Wl,-rpath,"$ns3/lib64" \
    -lns3.44-core -lns3.44-network -lns3.44-internet -lns3.44-point-to-point \
    -lns3.44-traffic-control -lns3.44-applications
  echo "$out/$prog"
done

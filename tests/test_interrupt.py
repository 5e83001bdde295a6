"""Ctrl-C during one long run stops it promptly with KeyboardInterrupt."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

PROGRAM = r"""
import qoslab
sc = {
    "duration": "100000s",
    "node": [{"name": "a"}, {"name": "b"}],
    "link": [{"a": "a", "b": "b", "rate": "100Mbps", "delay": "1ms"}],
    "flow": [{"name": "c", "from": "a", "to": "b", "cbr": {"rate": "50Mbps"}}],
}
print("started", flush=True)
try:
    qoslab.run(sc)
except KeyboardInterrupt as e:
    print("interrupted:", e, flush=True)
    raise SystemExit(130)
print("finished", flush=True)
"""


def test_sigint_stops_a_long_run_within_a_second() -> None:
    p = subprocess.Popen(
        [sys.executable, "-c", PROGRAM], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert p.stdout is not None
    assert p.stdout.readline().strip() == "started"
    time.sleep(1.0)  # well inside the run (it would take minutes)
    t0 = time.perf_counter()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    took = time.perf_counter() - t0
    assert p.returncode == 130, (out, err)
    # The signal's own exception (KeyboardInterrupt) is raised once the engine stopped.
    assert out.splitlines()[-1].startswith("interrupted:"), out
    assert "finished" not in out
    assert took < 1.0, took

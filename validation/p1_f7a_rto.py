"""P1 F7a: per requested rate, does the slow-start drop's fast retransmission beat the RTO?

    python validation/p1_f7a_rto.py                      # P1's TCP (scenarios/p1)
    python validation/p1_f7a_rto.py '{"rto_estimator": "rfc6298", "granularity": "10ms"}'

Columns: RTT_TRC; time of the fast retransmission (FR); SRTT and RTO just before it;
what the retransmission needs (RTT_TRC + RTT_net: it waits RTT_TRC in the TRC); when the
RTO fired after the FR (- = never); goodput / model target until the 2nd drop (F7a's run).
"""

import argparse
import json
import math

import polars as pl

from qoslab.api import run
from qoslab.reproduce.p1 import F7B_RTT_NET, MSS, P1_TCP
from qoslab.scenario import load
from qoslab.trc import parameters


def main() -> None:
    """Prints the table for P1's TCP, or with the given tcp keys merged into it."""
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("tcp", nargs="?", default="{}", help="JSON tcp keys merged into P1's TCP")
    tcp_extra = json.loads(ap.parse_args().tcp)
    base = load("scenarios/p1/f6b.toml").data
    rates = [50e3 * (200 ** (k / 19)) for k in range(20)]
    head = ["rate", "W_max", "RTT_TRC", "t_FR", "srtt@FR", "rto@FR", "need", "RTO after", "g/tgt"]
    print(" ".join(f"{h:>9}" for h in head))
    for r in rates:
        p = parameters(r, rtt_net=F7B_RTT_NET, ecn=False, tcp=P1_TCP)
        pkt = MSS * 8 / p["target"]
        dur = (math.floor(p["w_max"]) + 1 + p["drop_every"]) * pkt + 1.5 * p["rtt"]
        flow = base["flow"][0]
        data = {
            **base,
            "name": "p1-f7a-rto",
            "duration": dur,
            "warmup": 0,
            "flow": [{**flow, "start_jitter": "0s", "tcp": {**flow["tcp"], **tcp_extra}}],
            "conditioner": [{"at": "s", "stages": [{"kind": "trc", "flow": "f1", "rate": r}]}],
            "record": {"interval": dur, "traces": ["f1"]},
        }
        data.pop("sweep", None)
        res = run(data)
        t = res.traces
        # The fast retransmission is the first ssthresh cut; an RTO sets cwnd to 1 MSS.
        fr = t.filter(pl.col("ssthresh") < t["ssthresh"][0]).row(0, named=True)
        before = t.filter(pl.col("t") < fr["t"]).row(-1, named=True)
        after = t.filter((pl.col("t") > fr["t"]) & (pl.col("cwnd") == MSS))
        rto = f"{after['t'][0] - fr['t']:.3f}" if len(after) else "-"
        g = res.flows["goodput_bps"][0] / p["target"]
        need = p["rtt_trc"] + F7B_RTT_NET
        cols = [
            f"{r / 1e3:.1f}", f"{p['w_max']:.1f}", f"{p['rtt_trc'] * 1e3:.1f}", f"{fr['t']:.3f}",
            f"{before['srtt'] * 1e3:.1f}", f"{before['rto'] * 1e3:.1f}", f"{need * 1e3:.1f}",
            rto, f"{g:.3f}",
        ]  # fmt: skip
        print(" ".join(f"{c:>9}" for c in cols))


if __name__ == "__main__":
    main()

"""P2 with other TCP variants: the scenario rewrite and the paper's claim for Tahoe, the
variant most unlike SACK, in a short run (the experiment is ``qoslab reproduce
p2-variants``)."""

from __future__ import annotations

import qoslab
from qoslab.reproduce import p2, p2_variants

SHORT = {"duration": "40s", "warmup": "10s"}


def test_with_variant_changes_only_the_tcp_flows_loss_recovery():
    base = p2.dumbbell(True)
    d = p2_variants.with_variant(base, "tahoe")
    assert [f["tcp"]["variant"] for f in d["flow"] if "tcp" in f] == ["tahoe"]
    assert all(f == g for f, g in zip(d["flow"], base["flow"], strict=True) if "tcp" not in f)
    assert base["flow"][0]["tcp"]["variant"] == "sack", "the original is not modified"


def test_tahoe_gains_from_eruf_and_its_drops_move_to_the_edge():
    def m(eruf: bool) -> dict[str, float]:
        d = p2_variants.with_variant(p2.with_total(p2.dumbbell(eruf), 2000), "tahoe")
        return p2.measure(qoslab.run({**d, **SHORT}), p2.EDGES["f1"])

    plain, eruf = m(False), m(True)
    assert eruf["tcp_kbps"] > 3.5 * plain["tcp_kbps"]
    assert eruf["edge_drops_per_s"] > 4 * eruf["core_drops_per_s"]

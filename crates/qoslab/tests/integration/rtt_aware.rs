//! P3's RTT-aware markers in a world: senders stamp what an oracle reads, edges of one
//! group exchange their minimum RTT and RTO, small windows are protected.

use super::common::*;
use qoslab::cond::{AnyConditioner, RttAware};
use qoslab::world::World;

/// Two aggregates of `n` TCP micro-flows (s0 → d0 over 20 ms, s1 → d1 over 100 ms)
/// through a 2 Mb/s RIO-C bottleneck, each marked at its sender by `marker` (TOML
/// inline-table keys) with the aggregate's configured `rtt` unless `marker` sets one.
fn two_aggregates(n: usize, marker: &str) -> World {
    run_world(&two_aggregates_text(n, marker))
}

/// The scenario text of [`two_aggregates`].
fn two_aggregates_text(n: usize, marker: &str) -> String {
    let mut flows = String::new();
    for a in 0..2 {
        for i in 0..n {
            flows += &format!(
                "[[flow]]\nname = \"a{a}-{i}\"\nfrom = \"s{a}\"\nto = \"d{a}\"\nstart_jitter = \"2s\"\ntcp = {{ mss = 1000, delayed_ack = false }}\n"
            );
        }
        let rtt = match (a, marker.contains("rtt =")) {
            (_, true) => String::new(),
            (0, _) => "rtt = \"20ms\", ".into(),
            _ => "rtt = \"100ms\", ".into(),
        };
        flows += &format!(
            "[[conditioner]]\nat = \"s{a}\"\nstages = [ {{ kind = \"rtt_aware\", cir = \"500kbps\", {rtt}{marker} }} ]\n"
        );
    }
    let text = dumbbell(
        2,
        "2Mbps",
        "{ kind = \"rio_c\", limit = 100, w_q = 0.002 }",
        &flows,
        "",
    )
    .replace("duration = \"10s\"", "duration = \"30s\"");
    // s1's access link carries the extra 80 ms of round trip.
    text.replace(
        "a = \"s1\"\nb = \"r1\"\nrate = \"10Mbps\"\ndelay = \"1ms\"",
        "a = \"s1\"\nb = \"r1\"\nrate = \"10Mbps\"\ndelay = \"41ms\"",
    )
}

fn marker(w: &World, host: usize) -> &RttAware {
    let node = w
        .nodes
        .iter()
        .find(|n| n.name == format!("s{host}"))
        .unwrap();
    match &node.host_egress.chain.stages()[0] {
        AnyConditioner::RttAware(m) => m,
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_group_exchanges_the_minimum_rtt_and_rto() {
    // In one group the 100 ms aggregate marks DP2 with q = (20/100)²·(RTO ratio) ≤ 0.04;
    // alone (no group) each aggregate holds its own minima: basic RTT-aware → q = 1.
    let w = two_aggregates(
        10,
        "scheme = \"rtt\", group = \"edges\", exchange = \"100ms\"",
    );
    let q = marker(&w, 1).q();
    assert!(q <= 0.04 + 1e-12, "{q}");
    assert_eq!(marker(&w, 0).q(), 1.0);
    let alone = two_aggregates(10, "scheme = \"rtt\"");
    assert_eq!(marker(&alone, 1).q(), 1.0);
    // What the markers did differs accordingly: far fewer DP2 packets for the long
    // aggregate in the group.
    let red = |w: &World| marker(w, 1).counts().colour[2];
    assert!(red(&w) * 5 < red(&alone), "{} vs {}", red(&w), red(&alone));
}

#[test]
fn the_oracle_reads_the_senders_rtt_and_rto() {
    // rtt = "oracle" overrides the configured value: the aggregate's RTT is the mean
    // smoothed RTT of its micro-flows, at least the 20 ms propagation time and below
    // 20 ms + a full 100-packet queue at 2 Mb/s (0.42 s); RTO ≥ RFC 6298's floor.
    let w = two_aggregates(5, "scheme = \"rtt_rto\", rtt = \"oracle\"");
    let (rtt, rto) = marker(&w, 0).aggregate().unwrap();
    assert!((22_000..440_000).contains(&rtt), "{rtt}");
    assert!(rto >= 200_000 && rto >= rtt, "{rto}");
    let (rtt1, _) = marker(&w, 1).aggregate().unwrap();
    assert!(rtt1 > rtt + 70_000, "{rtt1} vs {rtt}");
}

#[test]
fn small_window_protection_covers_every_packet_below_k() {
    // With k above any window every packet is protected: nothing leaves DP1/DP2 (no
    // payback), where the same marker without protection marks many of them.
    let w = two_aggregates(
        5,
        "scheme = \"rtt\", small_window = 1000000, payback = false, protect_bound = \"none\"",
    );
    let c = marker(&w, 0).counts();
    assert_eq!(c.colour[1] + c.colour[2], 0, "{c:?}");
    assert!(c.protected > 100, "{c:?}");
    let bare = two_aggregates(5, "scheme = \"rtt\"");
    let b = marker(&bare, 0).counts();
    assert!(b.colour[1] + b.colour[2] > 100, "{b:?}");
}

#[test]
fn the_rtt_markers_table_lists_a_marker_placed_on_an_input_interface() {
    // P3's oracle scenarios place their markers by `iface_in`; the table must name them
    // too, apart from a chain before the same interface's queue.
    let text = two_aggregates_text(5, "scheme = \"rtt\"")
        .replace("at = \"s1\"\nstages", "iface_in = \"s1->r1\"\nstages");
    assert!(text.contains("iface_in"), "{text}");
    let r = run_text(&text);
    let t = &r.tables["rtt_markers"];
    assert_eq!(t.rows(), 2);
    let at: Vec<_> = (0..2)
        .map(|i| t.get("at").unwrap().str_at(i).unwrap().to_owned())
        .collect();
    assert_eq!(at, ["s0", "s1->r1 (in)"]);
    match t.get("rtt_ms") {
        Some(qoslab::stats::Column::Float(v)) => assert_eq!(v, &[20.0, 100.0]),
        c => panic!("{c:?}"),
    }
}

#[test]
fn the_rtt_markers_table_reports_each_markers_rtt_minima_and_colours() {
    use qoslab::stats::Column;
    let text = two_aggregates_text(
        5,
        "scheme = \"rtt\", group = \"edges\", exchange = \"100ms\"",
    );
    let r = run_text(&text);
    let t = &r.tables["rtt_markers"];
    assert_eq!(t.rows(), 2);
    let floats = |c: &str| match t.get(c) {
        Some(Column::Float(v)) => v.clone(),
        _ => panic!("{c}"),
    };
    let at: Vec<_> = (0..2)
        .map(|i| t.get("at").unwrap().str_at(i).unwrap().to_owned())
        .collect();
    assert_eq!(at, ["s0", "s1"]);
    assert_eq!(t.get("scheme").unwrap().str_at(1), Some("rtt"));
    // The configured RTTs, the group's minimum read by both, q as in
    // a_group_exchanges_the_minimum_rtt_and_rto.
    assert_eq!(floats("rtt_ms"), [20.0, 100.0]);
    assert_eq!(floats("min_rtt_ms"), [20.0, 20.0]);
    let q = floats("q");
    assert_eq!(q[0], 1.0);
    assert!(q[1] <= 0.04 + 1e-12, "{q:?}");
    // No passive estimator; every marked packet in one colour column.
    assert_eq!(ints(&r, "rtt_markers", "passive_samples"), [0, 0]);
    let marked: i64 = ["dp0", "dp1", "dp2"]
        .iter()
        .map(|c| ints(&r, "rtt_markers", c).iter().sum::<i64>())
        .sum();
    assert!(marked > 1000, "{marked}");
}

//! UDP sources over the network: exact delays and proportional sharing.

use qoslab::time::{Dur, Rate};
use qoslab::world::FlowApp;

use super::common::*;

#[test]
fn lone_cbr_below_rate_loses_nothing_and_delay_is_exact() {
    let flows = cbr(0, "1Mbps", 1000, 0.0);
    let w = run_world(&dumbbell(
        1,
        "2Mbps",
        "{ kind = \"droptail\", limit = 10 }",
        &flows,
        "",
    ));
    let f = &w.flows[0];
    assert_eq!(f.counters.drops, 0);
    // Everything sent up to the last 50 ms has arrived.
    assert!(f.counters.pkts_sent - f.counters.pkts_delivered <= 3);
    let FlowApp::Cbr { sink, .. } = &f.app else {
        panic!()
    };
    // Store and forward over 10 Mb/s, 2 Mb/s, 10 Mb/s links with 1, 10, 1 ms delay.
    let expect = Rate::from_mbps(10).tx_time(1000).saturating_mul(2)
        + Rate::from_mbps(2).tx_time(1000)
        + Dur::from_millis(12);
    assert_eq!(sink.delay_min, Some(expect));
    assert_eq!(sink.delay_max, expect);
}

#[test]
fn two_cbr_share_droptail_in_proportion_to_arrival_rate() {
    // Offered 1.2 and 0.6 Mb/s of Poisson arrivals into 1 Mb/s: every arrival sees the
    // same chance of a full buffer (PASTA), so DropTail shares the link 2:1. (Strictly
    // periodic sources do not: the faster one is more often first into a freed slot.)
    let poisson = |i, r| cbr(i, r, 1000, 0.0).replace("jitter = 0", "poisson = true");
    let flows = poisson(0, "1.2Mbps") + &poisson(1, "0.6Mbps");
    let text = dumbbell(
        2,
        "1Mbps",
        "{ kind = \"droptail\", limit = 30 }",
        &flows,
        "warmup = \"2s\"\n",
    )
    .replace("duration = \"10s\"", "duration = \"60s\"");
    let w = run_world(&text);
    let g0 = w.flows[0].counters_since(&w.warm, 0).goodput_bytes as f64;
    let g1 = w.flows[1].counters_since(&w.warm, 1).goodput_bytes as f64;
    let ratio = g0 / g1;
    assert!((ratio - 2.0).abs() < 0.1, "ratio {ratio}");
    // The bottleneck is fully used: 972 payload bytes per 1000 on the wire.
    let total_bps = (g0 + g1) * 8.0 / 58.0;
    assert!((total_bps / 972_000.0 - 1.0).abs() < 0.01, "{total_bps}");
}

#[test]
fn pareto_source_runs() {
    let text = dumbbell(
        1,
        "10Mbps",
        "{ kind = \"droptail\", limit = 100 }",
        "[[flow]]\nname = \"p\"\nfrom = \"s0\"\nto = \"d0\"\npareto = { rate = \"200kbps\", mean_on = \"1s\", mean_off = \"2s\" }\n",
        "",
    );
    let w = run_world(&text);
    assert!(w.flows[0].counters.pkts_delivered > 0);
    assert_eq!(w.flows[0].counters.drops, 0);
}

#[test]
fn framing_overhead_takes_link_time_per_packet() {
    // 986-byte CBR packets at 2 Mb/s into a 1 Mb/s link: the link sends 1e6/8/986 =
    // 126.8 packets/s, or with 14 bytes of framing 1e6/8/1000 = 125 packets/s.
    let rate = |framing: u32| {
        let text = dumbbell(
            1,
            "1Mbps",
            "{ kind = \"droptail\", limit = 50 }",
            &cbr(0, "2Mbps", 986, 0.0),
            "warmup = \"2s\"\n",
        )
        .replace(
            "delay = \"10ms\"\n",
            &format!("delay = \"10ms\"\nframing = {framing}\n"),
        );
        let w = run_world(&text);
        let i = w.ifaces.iter().position(|f| f.name == "r1->r2").unwrap();
        let c = w.ifaces[i].counters.since(&w.warm.ifaces[i]);
        c.departed as f64 / 8.0
    };
    let (plain, framed) = (rate(0), rate(14));
    assert!((plain - 126.8).abs() < 0.5, "{plain}");
    assert!((framed - 125.0).abs() < 0.5, "{framed}");
}

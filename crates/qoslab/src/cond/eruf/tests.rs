//! The ERUF stage driven by hand: packets and quenches at explicit times.

use super::*;
use crate::packet::{FlowId, UdpHeader};

fn cfg(aggregate: Aggregation) -> ErufConfig {
    ErufConfig {
        aggregate,
        estimator: EstimatorName::Window,
        max_window: 16,
        tolerance: 0.05,
        k: Dur::from_millis(100),
        burst: Bytes(300),
        rtt: None,
        link_rate: None,
        increase: Increase::PacketPerRtt,
        avg_size: AvgSize::Lifetime,
    }
}

fn udp(flow: u32, src: u32, dst: u32) -> Packet {
    Packet {
        flow: FlowId(flow),
        src: NodeId(src),
        dst: NodeId(dst),
        src_port: 1024 + flow as u16,
        dst_port: 5001,
        size: 100,
        hdr: Header::Udp(UdpHeader::default()),
        ..Default::default()
    }
}

fn quench_of(p: &Packet) -> QuenchHeader {
    QuenchHeader {
        orig_flow: p.flow,
        orig_src: p.src,
        orig_dst: p.dst,
        reporter: NodeId(99),
        orig_src_port: p.src_port,
        orig_dst_port: p.dst_port,
        orig_proto: p.proto(),
    }
}

/// Offers `flows` (each 100-byte packets every 2 ms = 400 kb/s, interleaved) from
/// `from` to `to` [µs]; returns packets passed per flow.
fn offer(e: &mut Eruf, flows: &[Packet], from: u64, to: u64) -> Vec<u64> {
    let mut passed = vec![0; flows.len()];
    let mut t = from;
    while t < to {
        for (i, f) in flows.iter().enumerate() {
            let mut p = *f;
            let now = SimTime::from_micros(t + 10 * i as u64);
            if e.condition(now, &mut p) == Action::Pass {
                passed[i] += 1;
            }
        }
        t += 2000;
    }
    passed
}

#[test]
fn unregulated_until_a_quench_then_half_the_arrival_rate() {
    let mut e = cfg(Aggregation::Flow).build();
    e.bind_link(Rate::from_mbps(10), Dur::from_secs(50)); // no growth within the test
    let a = udp(0, 1, 2);
    assert_eq!(offer(&mut e, &[a], 0, 1_000_000), vec![500]);
    e.on_quench(SimTime::from_secs(1), &quench_of(&a));
    assert_eq!(e.counters().installed, 1);
    let r = e.units()[0].regulator().unwrap().rate();
    assert!((r - 200_000.0).abs() < 1.0, "{r}");
    // 200 kb/s of 400: half the packets (plus the 300-byte bucket) pass.
    let p = offer(&mut e, &[a], 1_000_000, 2_000_000)[0];
    assert!((250..=254).contains(&p), "{p}");
    assert_eq!(e.counters().policed, 500 - p);
}

#[test]
fn aggregation_by_destination_regulates_the_aggregate_as_one() {
    // Two sources to one destination; the quench names only the first flow.
    let (a, b) = (udp(0, 1, 9), udp(1, 2, 9));
    let mut per_flow = cfg(Aggregation::Flow).build();
    let mut by_dst = cfg(Aggregation::Destination).build();
    for e in [&mut per_flow, &mut by_dst] {
        e.bind_link(Rate::from_mbps(10), Dur::from_secs(50));
        offer(e, &[a, b], 0, 1_000_000);
        e.on_quench(SimTime::from_secs(1), &quench_of(&a));
    }
    assert_eq!(per_flow.units().len(), 2);
    assert_eq!(by_dst.units().len(), 1);
    // Per flow: only a is regulated (at 200 kb/s); b passes untouched.
    let p = offer(&mut per_flow, &[a, b], 1_000_000, 2_000_000);
    assert!((250..=254).contains(&p[0]) && p[1] == 500, "{p:?}");
    // By destination: one regulator at half the aggregate's 800 kb/s, shared by both.
    let r = by_dst.units()[0].regulator().unwrap().rate();
    assert!((r / 400_000.0 - 1.0).abs() < 0.01, "{r}");
    // (a's packet comes 10 µs before b's each time and takes the tokens first: the
    // quench about a regulates b too.)
    let p = offer(&mut by_dst, &[a, b], 1_000_000, 2_000_000);
    assert!(p[1] < 250, "{p:?}");
    assert!((500..=510).contains(&(p[0] + p[1])), "{p:?}");
    // A quench about b now meets the same regulator (within its RTT estimate of 100 s:
    // ignored, not a second installation).
    by_dst.on_quench(SimTime::from_secs(2), &quench_of(&b));
    assert_eq!(by_dst.counters().installed, 1);
    assert_eq!(by_dst.counters().ignored, 1);
}

#[test]
fn a_quench_burst_halves_once_per_rtt_estimate_through_the_stage() {
    let mut e = cfg(Aggregation::Flow).build();
    e.bind_link(Rate::from_mbps(10), Dur::from_millis(10)); // RTT estimate 20 ms
    assert_eq!(e.rtt(), Dur::from_millis(20));
    let a = udp(0, 1, 2);
    offer(&mut e, &[a], 0, 100_000);
    // 50 quenches at 1 ms spacing: install at 100 ms, halve at 120 and 140 ms.
    for t in 100..150 {
        e.on_quench(SimTime::from_millis(t), &quench_of(&a));
    }
    let c = *e.counters();
    assert_eq!((c.installed, c.decreased, c.ignored), (1, 2, 47));
    let r = e.units()[0].regulator().unwrap().rate();
    assert!((r - 50_000.0).abs() < 1.0, "{r}");
}

#[test]
fn the_regulator_is_removed_at_the_link_rate() {
    let mut e = cfg(Aggregation::Flow).build();
    // 1 Mb/s link, RTT 20 ms; 100-byte packets: +40 kb/s per quiet RTT estimate.
    e.bind_link(Rate::from_mbps(1), Dur::from_millis(10));
    let a = udp(0, 1, 2);
    offer(&mut e, &[a], 0, 100_000);
    e.on_quench(SimTime::from_millis(100), &quench_of(&a));
    assert_eq!(e.active(), 1);
    // 200 → 1000 kb/s takes 20 increases: the last at 100 + 40 + 19·20 = 520 ms.
    offer(&mut e, &[a], 102_000, 518_000);
    assert_eq!(e.active(), 1);
    offer(&mut e, &[a], 520_000, 530_000);
    assert_eq!(e.active(), 0);
    assert_eq!(e.counters().removed, 1);
    // Unregulated again: everything passes.
    assert_eq!(offer(&mut e, &[a], 600_000, 700_000), vec![50]);
}

#[test]
fn quenches_about_unseen_flows_and_quench_packets_are_left_alone() {
    let mut e = cfg(Aggregation::Flow).build();
    e.bind_link(Rate::from_mbps(1), Dur::from_millis(10));
    e.on_quench(SimTime::from_millis(1), &quench_of(&udp(3, 4, 5)));
    assert_eq!(e.counters().unknown, 1);
    let mut q = udp(0, 1, 2);
    q.hdr = Header::Quench(quench_of(&q));
    assert_eq!(e.condition(SimTime::ZERO, &mut q), Action::Pass);
    assert!(e.units().is_empty());
}

#[test]
fn config_defaults_and_validation() {
    let c: ErufConfig = toml::from_str("").unwrap();
    assert_eq!(c, cfg(Aggregation::Flow).with_burst(Bytes(3000)));
    let c: ErufConfig =
        toml::from_str("aggregate = \"destination\"\nestimator = \"ewma\"\nrtt = \"40ms\"")
            .unwrap();
    assert_eq!(c.aggregate, Aggregation::Destination);
    assert_eq!(c.estimator, EstimatorName::Ewma);
    let mut e = c.build();
    e.bind_link(Rate::from_mbps(1), Dur::from_millis(5));
    assert_eq!(e.rtt(), Dur::from_millis(40));
    assert_eq!(e.link_rate(), Rate::from_mbps(1));
    assert!(toml::from_str::<ErufConfig>("aggregate = \"port\"").is_err());
    assert!(toml::from_str::<ErufConfig>("rate = 1").is_err());
    let bad = |t: &str| {
        toml::from_str::<ErufConfig>(t)
            .unwrap()
            .validate()
            .unwrap_err()
            .key
    };
    assert_eq!(bad("max_window = 0"), "max_window");
    assert_eq!(bad("tolerance = -1.0"), "tolerance");
    assert_eq!(bad("burst = 0"), "burst");
    assert_eq!(bad("rtt = \"0s\""), "rtt");
}

impl ErufConfig {
    fn with_burst(mut self, b: Bytes) -> Self {
        self.burst = b;
        self
    }
}

/// Ten 1000-byte packets 1 ms apart, a quench at 10 ms, eleven 100-byte packets from
/// 11 ms to 50 ms (the last one at 50 ms, one quiet RTT estimate after the 20 ms hold
/// plus 20 ms); returns (installed rate, rate after the first increase).
fn first_increase(avg_size: AvgSize, increase: Increase) -> (f64, f64) {
    let mut c = cfg(Aggregation::Flow);
    c.avg_size = avg_size;
    c.increase = increase;
    let mut e = c.build();
    e.bind_link(Rate::from_mbps(100), Dur::from_millis(10)); // RTT estimate 20 ms
    let mut a = udp(0, 1, 2);
    a.size = 1000;
    for t in 0..10 {
        let mut p = a;
        e.condition(SimTime::from_millis(t), &mut p);
    }
    e.on_quench(SimTime::from_millis(10), &quench_of(&a));
    let r0 = e.units()[0].regulator().unwrap().rate();
    a.size = 100;
    for t in [11, 14, 17, 20, 23, 26, 29, 32, 35, 38, 50] {
        let mut p = a;
        e.condition(SimTime::from_millis(t), &mut p);
    }
    (r0, e.units()[0].regulator().unwrap().rate())
}

#[test]
fn the_increase_step_uses_the_average_the_config_names() {
    // At 50 ms the unit has seen 10 × 1000 B + 11 × 100 B = 11 100 B in 21 packets
    // (lifetime average 528.57 B), 11 × 100 B since the regulator (average 100 B).
    let life = 11_100.0 / 21.0;
    let cases = [
        (
            AvgSize::Lifetime,
            Increase::PacketPerRtt,
            8.0 * life / 0.020,
        ),
        (
            AvgSize::Regulated,
            Increase::PacketPerRtt,
            8.0 * 100.0 / 0.020,
        ),
        (AvgSize::Lifetime, Increase::BytesPerSecond, 8.0 * life),
        (AvgSize::Regulated, Increase::BytesPerSecond, 8.0 * 100.0),
    ];
    for (avg, inc, step) in cases {
        let (r0, r1) = first_increase(avg, inc);
        // 1000 B per 1 ms measured: installed at half of 8 Mb/s.
        assert!((r0 - 4_000_000.0).abs() < 1.0, "{r0}");
        assert!(
            (r1 - r0 - step).abs() < 1e-6,
            "{avg:?} {inc:?}: {} vs {step}",
            r1 - r0
        );
    }
}

#[test]
fn increase_and_avg_size_keys_parse_and_unknown_readings_are_errors() {
    let c: ErufConfig =
        toml::from_str("increase = \"bytes_per_second\"\navg_size = \"regulated\"").unwrap();
    assert_eq!(c.increase, Increase::BytesPerSecond);
    assert_eq!(c.avg_size, AvgSize::Regulated);
    let d: ErufConfig = toml::from_str("").unwrap();
    assert_eq!(d.increase, Increase::PacketPerRtt);
    assert_eq!(d.avg_size, AvgSize::Lifetime);
    assert!(toml::from_str::<ErufConfig>("increase = \"bytes\"").is_err());
    assert!(toml::from_str::<ErufConfig>("increse = \"packet_per_rtt\"").is_err());
}

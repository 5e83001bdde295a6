//! Nanoseconds per enqueue + dequeue pair for each queue discipline at a steady
//! occupancy. Run with `cargo bench -p qoslab --bench queues`.
//!
//! Each discipline is filled to its steady occupancy, then every step offers one
//! packet and, if the queue then holds more than that occupancy, takes one out: the
//! occupancy stays put whatever the discipline drops. A step that drops (or pushes
//! out) does no dequeue, so the "full" LQD case measures enqueue with push-out.
//! Plain `std::time::Instant`, best of a few repetitions to dampen noise on a shared
//! machine.

use std::hint::black_box;
use std::time::Instant;

use qoslab::packet::{Colour, Ecn, FlowId, Packet};
use qoslab::queue::{Drops, Queue, QueueConfig};
use qoslab::rng::RngStream;
use qoslab::time::{Dur, Rate, SimTime};

const STEPS: u64 = 1_000_000;
const REPS: usize = 5;

fn config(text: &str) -> QueueConfig {
    let t: toml::Table = toml::from_str(&format!("q = {text}")).expect("bench config parses");
    let c: QueueConfig = t["q"].clone().try_into().expect("bench config is a queue");
    c.validate().expect("bench config is valid");
    c
}

/// Packets for the run, made up front so the timed loop measures only the queue.
fn packets(n: usize) -> Vec<Packet> {
    let mut r = RngStream::from_seed(99);
    (0..n)
        .map(|i| Packet {
            uid: i as u64,
            flow: FlowId(r.below(64) as u32),
            size: [64, 576, 1500][r.below(3) as usize],
            colour: Colour::from_index(r.below(3) as usize),
            ecn: Ecn::Ect,
            in_profile: r.bernoulli(0.5),
            ..Default::default()
        })
        .collect()
}

fn bench(name: &str, text: &str, fill: usize, pkts: &[Packet]) {
    let mut best = f64::INFINITY;
    let mut dropped = 0;
    for rep in 0..REPS {
        let mut q = config(text).build(Rate::from_mbps(100), RngStream::derive(rep as u64, name));
        let mut d = Drops::default();
        let mut now = SimTime::ZERO;
        for p in &pkts[..fill] {
            q.enqueue(now, *p, &mut d);
        }
        d.clear();
        dropped = 0;
        let start = Instant::now();
        for i in 0..STEPS as usize {
            now += Dur::from_nanos(120_000);
            q.enqueue(now, pkts[i % pkts.len()], &mut d);
            if q.occupancy().packets as usize > fill {
                black_box(q.dequeue(now, &mut d));
            }
            dropped += d.dropped.len();
            d.clear();
        }
        let ns = start.elapsed().as_nanos() as f64 / STEPS as f64;
        best = best.min(ns);
        assert_eq!(
            q.occupancy().packets as usize,
            fill,
            "{name}: occupancy drifted"
        );
    }
    println!(
        "{name:<22} {best:7.1} ns per step  (occupancy {fill}, {:.2}% of arrivals dropped)",
        100.0 * dropped as f64 / STEPS as f64
    );
}

fn main() {
    let pkts = packets(1 << 16);
    let cases = [
        ("droptail", r#"{ kind = "droptail", limit = 100 }"#, 50),
        (
            "red",
            r#"{ kind = "red", limit = 100, min_th = 5, max_th = 60 }"#,
            50,
        ),
        (
            "red gentle ecn",
            r#"{ kind = "red", limit = 100, min_th = 5, max_th = 60, gentle = true, ecn = true }"#,
            50,
        ),
        (
            "red bytes",
            r#"{ kind = "red", limit_bytes = "150KB", min_th = 5000, max_th = 60000 }"#,
            50,
        ),
        ("rio_c", r#"{ kind = "rio_c", limit = 100 }"#, 50),
        ("rio_d", r#"{ kind = "rio_d", limit = 100 }"#, 50),
        ("wred", r#"{ kind = "wred", limit = 100 }"#, 50),
        (
            "ered",
            r#"{ kind = "ered", limit = 100, min_th = 5, max_th = 60 }"#,
            50,
        ),
        ("lqd drr 64 flows", r#"{ kind = "lqd", limit = 100 }"#, 50),
        (
            "lqd fifo 64 flows",
            r#"{ kind = "lqd", limit = 100, service = "fifo" }"#,
            50,
        ),
        ("lqd full (push-out)", r#"{ kind = "lqd", limit = 50 }"#, 50),
    ];
    println!("{STEPS} steps, best of {REPS}");
    for (name, text, fill) in cases {
        bench(name, text, fill, &pkts);
    }
}

//! Speed of each conditioner: nanoseconds per packet on a steady synthetic stream.
//!
//! Run with `cargo bench -p qoslab --bench conditioners`. Plain `std::time::Instant`, no
//! harness: each case conditions `N` packets (1000 B, one every 100 µs = 80 Mb/s offered,
//! flows and destinations cycling) after a warm-up pass, and prints the mean.

use std::hint::black_box;
use std::time::Instant;

use qoslab::cond::{AnyConditioner, Chain, Conditioner, ConditionerConfig};
use qoslab::packet::{FlowId, NodeId, Packet};
use qoslab::rng::RngStream;
use qoslab::time::SimTime;

const N: u64 = 2_000_000;

fn resolve(name: &str) -> Option<NodeId> {
    match name {
        "server" => Some(NodeId(0)),
        n => n.strip_prefix('c').and_then(|i| i.parse().ok()).map(NodeId),
    }
}

fn packet(k: u64, flows: u64) -> Packet {
    let f = (k % flows) as u32;
    Packet {
        uid: k,
        flow: FlowId(f),
        src: NodeId(0),
        dst: NodeId(1 + f % 16),
        src_port: 80,
        dst_port: 5000 + f as u16,
        size: 1000,
        ..Default::default()
    }
}

fn run(name: &str, toml_text: &str, flows: u64) {
    let cfg: ConditionerConfig = toml::from_str(toml_text).expect(name);
    let mut c: AnyConditioner = cfg.build(&resolve, RngStream::from_seed(1)).expect(name);
    let mut sink = 0u64;
    for pass in 0..2 {
        let start = Instant::now();
        for k in 0..N {
            let now = SimTime::from_micros((pass * N + k) * 100);
            let mut p = packet(k, flows);
            let a = c.condition(now, black_box(&mut p));
            sink =
                sink.wrapping_add(p.dscp as u64 + matches!(a, qoslab::cond::Action::Pass) as u64);
        }
        if pass == 1 {
            let ns = start.elapsed().as_nanos() as f64 / N as f64;
            println!("{name:<40} {ns:>7.1} ns/packet");
        }
    }
    black_box(sink);
}

fn run_chain(name: &str, toml_text: &str) {
    #[derive(serde::Deserialize)]
    struct T {
        c: Vec<ConditionerConfig>,
    }
    let t: T = toml::from_str(toml_text).expect(name);
    let mut chain = Chain::build(&t.c, &resolve, RngStream::from_seed(1)).expect(name);
    let start = Instant::now();
    let mut sink = 0u64;
    for k in 0..N {
        let now = SimTime::from_micros(k * 100);
        let mut p = packet(k, 1);
        let (a, s) = chain.condition_from(0, now, black_box(&mut p));
        sink = sink.wrapping_add(s as u64 + matches!(a, qoslab::cond::Action::Pass) as u64);
    }
    let ns = start.elapsed().as_nanos() as f64 / N as f64;
    println!("{name:<40} {ns:>7.1} ns/packet");
    black_box(sink);
}

fn main() {
    println!("{N} packets per case, 80 Mb/s offered");
    run(
        "delay",
        r#"kind = "delay"
delay = "5ms""#,
        1,
    );
    run(
        "token_bucket mark",
        r#"kind = "token_bucket"
rate = "40Mbps"
depth = "16KB""#,
        1,
    );
    run(
        "token_bucket mark + peak",
        r#"kind = "token_bucket"
rate = "40Mbps"
depth = "16KB"
peak = "60Mbps""#,
        1,
    );
    run(
        "token_bucket police",
        r#"kind = "token_bucket"
rate = "40Mbps"
depth = "16KB"
action = "police""#,
        1,
    );
    // Offered 80 Mb/s into a 70 Mb/s shaper with a 64 KB buffer: packets are held,
    // released and (once the buffer is full) dropped, so every path is exercised.
    run(
        "token_bucket shape exact, overloaded",
        r#"kind = "token_bucket"
rate = "70Mbps"
depth = "3KB"
action = "shape"
buffer = "64KB""#,
        1,
    );
    run(
        "token_bucket shape 15ms, overloaded",
        r#"kind = "token_bucket"
rate = "70Mbps"
depth = "3KB"
action = "shape"
timer = "15ms"
buffer = "64KB""#,
        1,
    );
    run(
        "srtcm colour-blind",
        r#"kind = "srtcm"
cir = "40Mbps"
cbs = "16KB"
ebs = "32KB""#,
        1,
    );
    run(
        "trtcm colour-aware",
        r#"kind = "trtcm"
cir = "40Mbps"
cbs = "16KB"
pir = "60Mbps"
pbs = "32KB"
colour_aware = true"#,
        1,
    );
    run(
        "tsw2cm",
        r#"kind = "tsw2cm"
cir = "40Mbps"
window = "100ms""#,
        1,
    );
    run(
        "tsw3cm",
        r#"kind = "tsw3cm"
cir = "40Mbps"
pir = "60Mbps"
window = "100ms""#,
        1,
    );
    let policy = |agg: &str| {
        format!(
            r#"kind = "policy"
[[rules]]
filter = {{ src = "server", src_port = 22 }}
profile = {{ rate = "1Mbps", burst = "10KB" }}
action = "police"
[[rules]]
filter = {{ src = "server", src_port = 80 }}
profile = {{ rate = "640kbps", burst = "16KB" }}
action = "police_and_mark"
aggregate = "{agg}""#
        )
    };
    run("policy (2nd rule) per_policy", &policy("per_policy"), 1000);
    run(
        "policy (2nd rule) per_flow, 1000 flows",
        &policy("per_flow"),
        1000,
    );
    run(
        "policy (2nd rule) per_destination, 16",
        &policy("per_destination"),
        1000,
    );
    run_chain(
        "chain trtcm -> shape exact, overloaded",
        r#"c = [
    { kind = "trtcm", cir = "40Mbps", cbs = "16KB", pir = "60Mbps", pbs = "32KB" },
    { kind = "token_bucket", rate = "70Mbps", depth = "3KB", action = "shape", buffer = "64KB" },
]"#,
    );
}

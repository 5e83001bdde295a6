//! Scenario builders shared by the integration tests.

use qoslab::scenario::{self, Format, Scenario};
use qoslab::stats::{Column, RunResult};
use qoslab::world::World;

/// A dumbbell: `n` senders s0.. → r1 → r2 → receivers d0.., access links 10 Mb/s 1 ms,
/// bottleneck `bottleneck` with `queue`, plus `flows` (TOML text of [[flow]] tables).
pub fn dumbbell(n: usize, bottleneck: &str, queue: &str, flows: &str, extra: &str) -> String {
    let mut s = String::from("duration = \"10s\"\n");
    s += extra;
    s += "\n[[node]]\nname = \"r1\"\nkind = \"router\"\n[[node]]\nname = \"r2\"\nkind = \"router\"\n";
    for i in 0..n {
        s += &format!("[[node]]\nname = \"s{i}\"\n[[node]]\nname = \"d{i}\"\n");
        s += &format!("[[link]]\na = \"s{i}\"\nb = \"r1\"\nrate = \"10Mbps\"\ndelay = \"1ms\"\n");
        s += &format!("[[link]]\na = \"r2\"\nb = \"d{i}\"\nrate = \"10Mbps\"\ndelay = \"1ms\"\n");
    }
    s += &format!("[[link]]\na = \"r1\"\nb = \"r2\"\nrate = \"{bottleneck}\"\ndelay = \"10ms\"\nqueue = {queue}\n");
    s += flows;
    s
}

/// A CBR flow table from s`i` to d`i`.
pub fn cbr(i: usize, rate: &str, size: u32, jitter: f64) -> String {
    format!("[[flow]]\nname = \"f{i}\"\nfrom = \"s{i}\"\nto = \"d{i}\"\ncbr = {{ rate = \"{rate}\", size = {size}, jitter = {jitter} }}\n")
}

/// Parses TOML text, panicking with the error if it is invalid.
pub fn parse(text: &str) -> Scenario {
    scenario::parse(text, Format::Toml).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// Builds and runs a world from TOML text.
pub fn run_world(text: &str) -> World {
    let sc = parse(text);
    let mut w = scenario::build(&sc).unwrap_or_else(|e| panic!("{e}"));
    w.run().unwrap();
    w
}

/// One sender s0 → d0 with `flows` (TOML of its [[flow]] table) over a 5 Mb/s, 30 ms
/// DropTail bottleneck with random `loss`, for `duration`.
pub fn lossy_one_flow(flows: &str, loss: f64, duration: &str) -> String {
    dumbbell(1, "5Mbps", "{ kind = \"droptail\", limit = 50 }", flows, "")
        .replace("duration = \"10s\"", &format!("duration = \"{duration}\""))
        .replace(
            "delay = \"10ms\"\nqueue",
            &format!("delay = \"30ms\"\nloss = {loss}\nqueue"),
        )
}

/// Runs TOML text, panicking with the error and the text if it fails.
pub fn run_text(text: &str) -> RunResult {
    qoslab::run_str(text, Format::Toml, None).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// The integer column `c` of result table `table`.
pub fn ints(r: &RunResult, table: &str, c: &str) -> Vec<i64> {
    match r.tables.get(table).and_then(|t| t.get(c)) {
        Some(Column::Int(v)) => v.clone(),
        _ => panic!("{table}.{c}"),
    }
}

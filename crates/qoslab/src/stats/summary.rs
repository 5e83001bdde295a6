//! The run's summary: its name, seed, times, event counts and the warnings a reader
//! should see beside the tables.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::world::World;

/// The summary of run `name` (`seed`, `wall_s` seconds of wall-clock time): its
/// times, event counts, packet hops, drop-log size, version and warnings.
pub(super) fn summary(w: &World, name: &str, seed: u64, wall_s: f64) -> BTreeMap<String, Value> {
    let mut s = BTreeMap::new();
    s.insert("name".into(), json!(name));
    s.insert("warnings".into(), json!(warnings(w)));
    s.insert("seed".into(), json!(seed));
    s.insert("duration".into(), json!(w.end.as_secs_f64()));
    s.insert("warmup".into(), json!(w.warmup.as_secs_f64()));
    s.insert("events".into(), json!(w.events()));
    let kinds = crate::world::EVENT_KINDS.iter().zip(w.events_by_kind());
    let kinds: serde_json::Map<_, _> = kinds.map(|(k, n)| (k.to_string(), json!(n))).collect();
    s.insert("events_by_kind".into(), Value::Object(kinds));
    s.insert("packet_hops".into(), json!(w.hops));
    if let Some(log) = w.recorded.drop_log.as_deref() {
        s.insert("drop_events".into(), json!(log.events.len()));
        s.insert("drop_events_left_out".into(), json!(log.left_out));
    }
    s.insert("wall_s".into(), json!(wall_s));
    s.insert("version".into(), json!(env!("CARGO_PKG_VERSION")));
    s
}

/// The run's warnings: the world's (those of a queue rule with what the queue
/// dropped), then ERUF's, the RTO rule's, silent and overflowing flows', and a
/// truncated drop log's.
fn warnings(w: &World) -> Vec<String> {
    let mut warnings = w.warnings.clone();
    queue_rule_outcome(w, &mut warnings);
    warnings.extend(super::eruf::eruf_warnings(w));
    warnings.extend(super::rtt_markers::rto_rule_warnings(w));
    warnings.extend(super::silent::silent_flows_warning(w));
    warnings.extend(super::silent::overflow_all_warnings(w));
    if let Some(log) = w.recorded.drop_log.as_deref() {
        if log.left_out > 0 {
            warnings.push(format!(
                "drop_events kept the first {} drops and marks after the warm-up and left \
                 out {} more (raise record.drop_events_limit to keep them)",
                log.events.len(),
                log.left_out
            ));
        }
    }
    warnings
}

/// Adds to each P1 §4.4 queue-rule warning what the queue dropped after the warm-up,
/// so a reader can tell a rule broken on paper from one that cost packets.
fn queue_rule_outcome(w: &World, warnings: &mut [String]) {
    for &(f, k) in &w.queue_rule {
        let i = f.0 as usize;
        let c = w.ifaces[i].counters.since(&w.warm.ifaces[i]);
        let n = c.drops.total_packets();
        if let Some(s) = warnings.get_mut(k) {
            if n == 0 {
                s.push_str("; it dropped no packet after the warm-up");
            } else {
                s.push_str(&format!(
                    "; it dropped {n} packet{} after the warm-up",
                    if n == 1 { "" } else { "s" }
                ));
            }
        }
    }
}

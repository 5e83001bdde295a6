//! The `rtt_markers` result table: one row per RTT-aware marker (P3) with the RTT and
//! RTO it used for its aggregate at the end of the run and what its passive estimator saw.

use super::{Column, Table};
use crate::cond::{AnyConditioner, RttAware};
use crate::world::World;

/// Every RTT-aware marker in the world with where it sits.
fn all(w: &World) -> Vec<(String, &RttAware)> {
    super::collect::stages_where(w, |s| match s {
        AnyConditioner::RttAware(c) => Some(c),
        _ => None,
    })
}

/// The `rtt_markers` table, or `None` if the run has no RTT-aware marker. `rtt_ms` and
/// `rto_ms` are the aggregate's values the marker used last (NaN while unknown),
/// `min_rtt_ms`/`min_rto_ms` the group's minima it last read; `passive_flows` and
/// `passive_samples` count the micro-flows and RTT samples its passive estimator took
/// (0 without one); the colour and protection counters cover the whole run.
pub fn table(w: &World) -> Option<Table> {
    let ms = all(w);
    if ms.is_empty() {
        return None;
    }
    let f = |g: &dyn Fn(&RttAware) -> f64| Column::Float(ms.iter().map(|(_, m)| g(m)).collect());
    let i = |g: &dyn Fn(&RttAware) -> i64| Column::Int(ms.iter().map(|(_, m)| g(m)).collect());
    let us = |v: Option<u64>| v.map_or(f64::NAN, |x| x as f64 / 1e3);
    let mut t = Table::default();
    t.push(
        "at",
        Column::Str(ms.iter().map(|(p, _)| p.clone()).collect()),
    );
    t.push(
        "scheme",
        Column::Str(
            ms.iter()
                .map(|(_, m)| {
                    serde_json::to_value(m.config().scheme)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default()
                })
                .collect(),
        ),
    );
    t.push("rtt_ms", f(&|m| us(m.aggregate().map(|a| a.0))));
    t.push("rto_ms", f(&|m| us(m.aggregate().map(|a| a.1))));
    t.push("min_rtt_ms", f(&|m| us(m.minima().map(|a| a.0))));
    t.push("min_rto_ms", f(&|m| us(m.minima().map(|a| a.1))));
    t.push("q", f(&|m| m.q()));
    t.push(
        "passive_flows",
        i(&|m| m.passive().map_or(0, |p| p.flows() as i64)),
    );
    t.push(
        "passive_samples",
        i(&|m| m.passive().map_or(0, |p| p.samples() as i64)),
    );
    for (k, name) in ["dp0", "dp1", "dp2"].into_iter().enumerate() {
        t.push(name, i(&|m| m.counts().colour[k] as i64));
    }
    t.push("protected", i(&|m| m.counts().protected as i64));
    t.push("paid_back", i(&|m| m.counts().paid_back as i64));
    t.push("refused", i(&|m| m.counts().refused as i64));
    Some(t)
}

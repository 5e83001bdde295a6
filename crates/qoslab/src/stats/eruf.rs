//! P2's result tables: `quench` (one row per router sending source quenches) and
//! `eruf` (one row per ERUF edge stage); both count from the start of the run, warm-up
//! included, and exist only in runs that have such routers or stages.

use super::{Column, Table};
use crate::cond::{AnyConditioner, Eruf};
use crate::world::World;

/// The `quench` table: node, sent, suppressed, size [bytes].
pub fn quench_table(w: &World) -> Option<Table> {
    let rows: Vec<_> = w
        .nodes
        .iter()
        .filter_map(|n| n.quench.as_ref().map(|q| (n.name.clone(), q)))
        .collect();
    if rows.is_empty() {
        return None;
    }
    let mut t = Table::default();
    t.push(
        "node",
        Column::Str(rows.iter().map(|(n, _)| n.clone()).collect()),
    );
    let i = |g: &dyn Fn(&crate::net::quench::QuenchLimiter) -> i64| {
        Column::Int(rows.iter().map(|(_, q)| g(q)).collect())
    };
    t.push("sent", i(&|q| q.counters.sent as i64));
    t.push("suppressed", i(&|q| q.counters.suppressed as i64));
    t.push("size", i(&|q| q.config().size.0 as i64));
    Some(t)
}

/// The `eruf` table: where each stage sits, its RTT estimate [s] and link rate
/// [bit/s], and what it did (see [`crate::cond::eruf::ErufCounters`]).
pub fn eruf_table(w: &World) -> Option<Table> {
    let hooks = w
        .nodes
        .iter()
        .map(|n| (&n.name, &n.ingress))
        .chain(w.ifaces.iter().map(|f| (&f.name, &f.egress)));
    let mut rows: Vec<(String, &Eruf)> = Vec::new();
    for (place, h) in hooks {
        for s in h.chain.stages() {
            if let AnyConditioner::Eruf(e) = s {
                rows.push((place.clone(), e));
            }
        }
    }
    if rows.is_empty() {
        return None;
    }
    let mut t = Table::default();
    t.push(
        "at",
        Column::Str(rows.iter().map(|(p, _)| p.clone()).collect()),
    );
    t.push(
        "aggregate",
        Column::Str(
            rows.iter()
                .map(|(_, e)| format!("{:?}", e.config().aggregate).to_lowercase())
                .collect(),
        ),
    );
    t.push(
        "rtt",
        Column::Float(rows.iter().map(|(_, e)| e.rtt().as_secs_f64()).collect()),
    );
    t.push(
        "link_rate",
        Column::Float(
            rows.iter()
                .map(|(_, e)| e.link_rate().bps() as f64)
                .collect(),
        ),
    );
    let i = |g: &dyn Fn(&Eruf) -> u64| Column::Int(rows.iter().map(|(_, e)| g(e) as i64).collect());
    t.push("units", i(&|e| e.units().len() as u64));
    t.push("quenches", i(&|e| e.counters().quenches));
    t.push("unknown", i(&|e| e.counters().unknown));
    t.push("installed", i(&|e| e.counters().installed));
    t.push("decreased", i(&|e| e.counters().decreased));
    t.push("ignored", i(&|e| e.counters().ignored));
    t.push("removed", i(&|e| e.counters().removed));
    t.push("active", i(&|e| e.active() as u64));
    t.push("policed", i(&|e| e.counters().policed));
    t.push("policed_bytes", i(&|e| e.counters().policed_bytes));
    Some(t)
}

/// A warning per ERUF stage whose regulators were installed but never policed a packet:
/// each regrew to the link rate and was removed (P2 §3's additive increase of one
/// packet per `rtt`) faster than the quenches brought it down, typically because the
/// stage sits on a link much faster than the bottleneck. The ERUF promise (regulate
/// unresponsive flows at the edge) then silently does not hold.
pub fn eruf_warnings(w: &World) -> Vec<String> {
    let hooks = w
        .nodes
        .iter()
        .map(|n| (&n.name, &n.ingress))
        .chain(w.ifaces.iter().map(|f| (&f.name, &f.egress)));
    let mut out = Vec::new();
    for (place, h) in hooks {
        for s in h.chain.stages() {
            if let AnyConditioner::Eruf(e) = s {
                let c = e.counters();
                if c.installed > 0 && c.policed == 0 {
                    out.push(format!(
                        "eruf at {place}: {} regulators installed on source quenches, none \
                         policed a packet: they regrow to link_rate = {} bit/s (one packet \
                         per rtt = {} s) faster than the quenches halve them; set `link_rate` \
                         to the bottleneck's rate and `rtt` to the flows' RTT",
                        c.installed,
                        e.link_rate().bps(),
                        e.rtt().as_secs_f64()
                    ));
                }
            }
        }
    }
    out
}

//! The `qosmgr` result table: one row per connection of every P0 QoS manager, with its
//! share of the bucket and what the manager did (counters since the start of the run).

use super::{Column, Table};
use crate::qosmgr::Trigger;
use crate::world::World;

/// The `qosmgr` table, or `None` if the run has no QoS manager.
pub fn table(w: &World) -> Option<Table> {
    let q = w.qos.as_deref()?;
    let rows: Vec<_> = q
        .managers
        .iter()
        .flat_map(|m| m.conns.iter().enumerate().map(move |(i, c)| (m, i, c)))
        .collect();
    let mut t = Table::default();
    let s = |g: &dyn Fn(usize) -> String| Column::Str((0..rows.len()).map(g).collect());
    let f = |g: &dyn Fn(usize) -> f64| Column::Float((0..rows.len()).map(g).collect());
    let n = |g: &dyn Fn(usize) -> i64| Column::Int((0..rows.len()).map(g).collect());
    t.push("manager", s(&|r| rows[r].0.name.clone()));
    t.push(
        "name",
        s(&|r| w.flows[rows[r].2.flow.0 as usize].name.clone()),
    );
    t.push("rtt", f(&|r| rows[r].2.rtt.as_secs_f64()));
    t.push("depth", f(&|r| rows[r].0.share().depth_bytes(rows[r].1)));
    t.push("packets", n(&|r| rows[r].2.counters.packets as i64));
    t.push("bytes", n(&|r| rows[r].2.counters.bytes as i64));
    t.push(
        "marked_bytes",
        n(&|r| rows[r].2.counters.marked_bytes as i64),
    );
    // Marked bytes that reached the client (P0 §4.1 compliant throughput), since the start.
    t.push(
        "marked_delivered_bytes",
        n(&|r| {
            w.flows[rows[r].2.flow.0 as usize]
                .counters
                .in_profile_delivered_bytes as i64
        }),
    );
    t.push("held", n(&|r| rows[r].2.counters.held as i64));
    t.push(
        "mean_wait",
        f(&|r| {
            let c = &rows[r].2.counters;
            if c.held == 0 {
                0.0
            } else {
                c.wait_ns as f64 / c.held as f64 / 1e9
            }
        }),
    );
    t.push("max_waiting", n(&|r| rows[r].2.counters.max_waiting as i64));
    for (k, trig) in Trigger::ALL.iter().enumerate() {
        t.push(
            &format!("released_{}", trig.name()),
            n(&|r| rows[r].2.counters.released[k] as i64),
        );
    }
    t.push("timer_events", n(&|r| rows[r].0.ticks as i64));
    Some(t)
}

//! The interface tables: `queues` (what each queue did after the warm-up), the sampled
//! `queue_samples` and `queue_colour_samples`, `colour_drops` (queue drops by drop
//! precedence) and `classes` (per-class counters).

use super::table::names;
use super::{Column, Table};
use crate::world::World;

/// The `queues` table: per interface, its queue's counters after the warm-up, its link's
/// utilisation over the `measured` seconds and the packets still queued at the end.
pub(super) fn queues_table(w: &World, measured: f64) -> Table {
    let mut t = Table::default();
    let qc: Vec<_> = w
        .ifaces
        .iter()
        .enumerate()
        .map(|(i, f)| f.counters.since(&w.warm.ifaces[i]))
        .collect();
    t.push(
        "iface",
        names(w.ifaces.iter().map(|f| f.name.as_str()).collect()),
    );
    t.push(
        "node",
        names(
            w.ifaces
                .iter()
                .map(|f| w.nodes[f.node.0 as usize].name.as_str())
                .collect(),
        ),
    );
    t.push(
        "arrived",
        Column::Int(qc.iter().map(|c| c.arrived as i64).collect()),
    );
    t.push(
        "departed",
        Column::Int(qc.iter().map(|c| c.departed as i64).collect()),
    );
    t.push(
        "dropped",
        Column::Int(qc.iter().map(|c| c.drops.total_packets() as i64).collect()),
    );
    t.push(
        "ecn_marked",
        Column::Int(qc.iter().map(|c| c.ecn_marked as i64).collect()),
    );
    t.push(
        "departed_bytes",
        Column::Int(qc.iter().map(|c| c.departed_bytes as i64).collect()),
    );
    t.push(
        "utilisation",
        Column::Float(
            w.ifaces
                .iter()
                .zip(&qc)
                .map(|(f, c)| c.departed_bytes as f64 * 8.0 / (f.rate.bps() as f64 * measured))
                .collect(),
        ),
    );
    t.push(
        "queued_at_end",
        Column::Int(
            w.ifaces
                .iter()
                .map(|f| f.occupancy().packets as i64)
                .collect(),
        ),
    );
    t
}

/// The `queue_samples` table: one row per sample of a recorded queue with its packets,
/// bytes and average (RED's, where the queue keeps one).
pub(super) fn queue_samples_table(w: &World) -> Table {
    let mut t = Table::default();
    let qs = &w.recorded.queue_samples;
    t.push(
        "iface",
        names(
            qs.iter()
                .map(|x| w.ifaces[x.0 as usize].name.as_str())
                .collect(),
        ),
    );
    t.push(
        "t",
        Column::Float(qs.iter().map(|x| x.1 as f64 / 1e9).collect()),
    );
    t.push(
        "packets",
        Column::Int(qs.iter().map(|x| x.2 as i64).collect()),
    );
    t.push(
        "bytes",
        Column::Int(qs.iter().map(|x| x.3 as i64).collect()),
    );
    t.push("avg", Column::Float(qs.iter().map(|x| x.4).collect()));
    t
}

/// The per-colour drop columns of `colour_drops` and `classes`, in the order of
/// [`crate::net::IfaceCounters::dropped_by_colour`].
const DROP_COLOUR_COLUMNS: [&str; 4] = [
    "dropped_green",
    "dropped_yellow",
    "dropped_red",
    "dropped_none",
];

/// Queue drops by drop precedence (after the warm-up) at each interface whose queue
/// tells colours apart (RIO-C/D, WRED, ERED, per-class queues); `None` if none does.
pub(super) fn colour_drops_table(w: &World) -> Option<Table> {
    use crate::queue::AnyQueue;
    let rows: Vec<_> = w
        .ifaces
        .iter()
        .enumerate()
        .filter(|(_, f)| {
            matches!(
                f.queue,
                AnyQueue::MultiRed(_) | AnyQueue::Ered(_) | AnyQueue::Classes(_)
            )
        })
        .map(|(i, f)| (f.name.as_str(), f.counters.since(&w.warm.ifaces[i])))
        .collect();
    if rows.is_empty() {
        return None;
    }
    let mut t = Table::default();
    t.push("iface", names(rows.iter().map(|r| r.0).collect()));
    // Green, yellow, red: the drop precedence of an AF codepoint; none: a codepoint
    // without one (best effort, EF, class selectors), never counted as green.
    for (k, col) in DROP_COLOUR_COLUMNS.into_iter().enumerate() {
        t.push(
            col,
            Column::Int(
                rows.iter()
                    .map(|r| r.1.dropped_by_colour[k] as i64)
                    .collect(),
            ),
        );
    }
    // ERED (P0 §4.1) decides by the in-profile mark, not by the colour.
    for (k, col) in ["dropped_unmarked", "dropped_marked"]
        .into_iter()
        .enumerate()
    {
        t.push(
            col,
            Column::Int(
                rows.iter()
                    .map(|r| r.1.dropped_by_profile[k] as i64)
                    .collect(),
            ),
        );
    }
    Some(t)
}

/// Per-class counters of interfaces with per-class queues (after the warm-up), one row
/// per (interface, class); `None` if no interface has classes.
pub(super) fn classes_table(w: &World) -> Option<Table> {
    let mut rows = Vec::new();
    for (i, f) in w.ifaces.iter().enumerate() {
        if let crate::queue::AnyQueue::Classes(s) = &f.queue {
            for (k, (name, c)) in s.class_counters().enumerate() {
                let e = w
                    .warm
                    .classes
                    .get(i)
                    .and_then(|v| v.get(k))
                    .copied()
                    .unwrap_or_default();
                rows.push((f.name.as_str(), name, c.since(&e)));
            }
        }
    }
    if rows.is_empty() {
        return None;
    }
    let mut t = Table::default();
    let int = |g: &dyn Fn(&crate::queue::ClassCounters) -> u64| {
        Column::Int(rows.iter().map(|r| g(&r.2) as i64).collect())
    };
    t.push("iface", names(rows.iter().map(|r| r.0).collect()));
    t.push("class", names(rows.iter().map(|r| r.1).collect()));
    t.push("arrived", int(&|c| c.arrived));
    t.push("arrived_bytes", int(&|c| c.arrived_bytes));
    t.push("departed", int(&|c| c.departed));
    t.push("departed_bytes", int(&|c| c.departed_bytes));
    t.push("dropped", int(&|c| c.dropped));
    t.push("dropped_bytes", int(&|c| c.dropped_bytes));
    for (k, col) in DROP_COLOUR_COLUMNS.into_iter().enumerate() {
        t.push(col, int(&|c| c.dropped_by_colour[k]));
    }
    Some(t)
}

/// Per-colour averages of the sampled multi-colour RED queues (RIO-C, RIO-D, WRED,
/// also as classes of a `classes` queue): one row per (interface, class, time) with
/// `avg_green`, `avg_yellow`, `avg_red` [packets]; `class` is empty for a queue that
/// is not a class. `None` when no sampled queue has per-colour averages.
pub(super) fn colour_samples_table(w: &World) -> Option<Table> {
    let cs = &w.recorded.colour_samples;
    if cs.is_empty() {
        return None;
    }
    let class = |x: &(u32, u64, Option<u32>, [f64; 3])| match (x.2, &w.ifaces[x.0 as usize].queue) {
        (Some(k), crate::queue::AnyQueue::Classes(s)) => s.class_name(k as usize),
        _ => "",
    };
    let mut t = Table::default();
    t.push(
        "iface",
        names(
            cs.iter()
                .map(|x| w.ifaces[x.0 as usize].name.as_str())
                .collect(),
        ),
    );
    t.push("class", names(cs.iter().map(class).collect()));
    t.push(
        "t",
        Column::Float(cs.iter().map(|x| x.1 as f64 / 1e9).collect()),
    );
    for (k, name) in ["avg_green", "avg_yellow", "avg_red"].iter().enumerate() {
        t.push(name, Column::Float(cs.iter().map(|x| x.3[k]).collect()));
    }
    Some(t)
}

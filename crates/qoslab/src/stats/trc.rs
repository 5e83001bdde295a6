//! The `trc` result table: one row per TRC stage with its parameters and what it did.

use super::{Column, Table};
use crate::cond::{AnyConditioner, Trc};
use crate::world::World;

/// Every TRC in the world with where it sits; empty if there is none.
fn all(w: &World) -> Vec<(String, &Trc)> {
    super::conditioners::stages_where(w, |s| match s {
        AnyConditioner::Trc(c) => Some(c),
        _ => None,
    })
}

/// The `trc` table (counters since the start of the run, warm-up included), or `None`
/// if the run has no TRC.
pub fn table(w: &World) -> Option<Table> {
    let trcs = all(w);
    if trcs.is_empty() {
        return None;
    }
    let f = |g: &dyn Fn(&Trc) -> f64| Column::Float(trcs.iter().map(|(_, t)| g(t)).collect());
    let i = |g: &dyn Fn(&Trc) -> i64| Column::Int(trcs.iter().map(|(_, t)| g(t)).collect());
    let mut t = Table::default();
    t.push(
        "name",
        Column::Str(
            trcs.iter()
                .map(|(_, t)| w.flows[t.setup().flow.0 as usize].name.clone())
                .collect(),
        ),
    );
    t.push(
        "at",
        Column::Str(trcs.iter().map(|(p, _)| p.clone()).collect()),
    );
    t.push("target_bps", f(&|t| t.setup().params.target));
    t.push("predicted_bps", f(&|t| t.setup().params.predicted));
    t.push("w_max", f(&|t| t.setup().params.w_max));
    t.push("p", f(&|t| t.setup().params.p));
    t.push("drop_every", f(&|t| t.setup().params.drop_every));
    t.push("rtt_net", f(&|t| t.rtt_net().as_secs_f64()));
    t.push("rtt_trc", f(&|t| t.setup().params.rtt_trc));
    t.push("rtt", f(&|t| t.setup().params.rtt));
    t.push("buffer", i(&|t| t.setup().buffer as i64));
    t.push("packets", i(&|t| t.counters().packets as i64));
    t.push("dropped", i(&|t| t.counters().dropped as i64));
    t.push("marked", i(&|t| t.counters().marked as i64));
    t.push("buffer_full", i(&|t| t.counters().buffer_full as i64));
    t.push("max_held", i(&|t| t.counters().max_held as i64));
    t.push("led", i(&|t| t.counters().led as i64));
    t.push(
        "retransmissions",
        i(&|t| t.counters().retransmissions as i64),
    );
    t.push(
        "slow_start_end",
        f(&|t| match t.counters().slow_start_end {
            u64::MAX => f64::NAN,
            ns => ns as f64 / 1e9,
        }),
    );
    Some(t)
}

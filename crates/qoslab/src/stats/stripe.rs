//! The `stripe` and `stripe_connections` tables of striped flows (P4 §2): per flow the
//! bytes its receiving application read in order, its blocks and its head-of-line
//! waits; per connection what was written to and read from it, its zero-window and
//! below-one-segment-window ACKs and its losses. All counts are over the whole run
//! (the flow's goodput after the warm-up is in the `flows` table).

use super::{Column, RunResult, Table};
use crate::app::Stripe;

/// Adds `stripe` and `stripe_connections` for the striped flows `st` (flow index, app).
pub(super) fn stripe_tables(r: &mut RunResult, st: &[(usize, &Stripe)]) {
    let int = |f: &dyn Fn(&(usize, &Stripe)) -> i64| Column::Int(st.iter().map(f).collect());
    let sum = |s: &Stripe, f: &dyn Fn(&crate::app::StripeConn) -> u64| {
        s.conns.iter().map(f).sum::<u64>() as i64
    };
    let mut t = Table::default();
    t.push("flow", int(&|x| x.0 as i64));
    t.push("connections", int(&|x| x.1.conns.len() as i64));
    t.push(
        "policy",
        Column::cat(st.iter().map(|x| x.1.cfg.policy.name())),
    );
    t.push("block", int(&|x| x.1.cfg.block.0 as i64));
    t.push("app_bytes", int(&|x| x.1.app_bytes as i64));
    t.push("blocks_read", int(&|x| x.1.blocks_read as i64));
    t.push("hol_waits", int(&|x| x.1.hol_waits as i64));
    t.push("zero_windows", int(&|x| sum(x.1, &|c| c.zero_windows)));
    t.push("small_windows", int(&|x| sum(x.1, &|c| c.small_windows)));
    t.push(
        "retransmits",
        int(&|x| sum(x.1, &|c| c.snd.stats().retransmits)),
    );
    t.push("timeouts", int(&|x| sum(x.1, &|c| c.snd.stats().timeouts)));
    r.tables.insert("stripe".into(), t);

    let rows: Vec<(usize, usize, &crate::app::StripeConn)> = st
        .iter()
        .flat_map(|(i, s)| s.conns.iter().enumerate().map(move |(k, c)| (*i, k, c)))
        .collect();
    let int = |f: &dyn Fn(&(usize, usize, &crate::app::StripeConn)) -> i64| {
        Column::Int(rows.iter().map(f).collect())
    };
    let mut t = Table::default();
    t.push("flow", int(&|x| x.0 as i64));
    t.push("conn", int(&|x| x.1 as i64));
    t.push("written", int(&|x| x.2.written as i64));
    t.push("read", int(&|x| x.2.read as i64));
    t.push("zero_windows", int(&|x| x.2.zero_windows as i64));
    t.push("small_windows", int(&|x| x.2.small_windows as i64));
    t.push("retransmits", int(&|x| x.2.snd.stats().retransmits as i64));
    t.push("timeouts", int(&|x| x.2.snd.stats().timeouts as i64));
    r.tables.insert("stripe_connections".into(), t);
}

//! The `rtt_markers` result table: one row per RTT-aware marker (P3) with the RTT and
//! RTO it used for its aggregate at the end of the run and what its passive estimator saw.

use super::{Column, Table};
use crate::cond::{AnyConditioner, RttAware};
use crate::world::World;

/// Every RTT-aware marker in the world with where it sits.
fn all(w: &World) -> Vec<(String, &RttAware)> {
    super::conditioners::stages_where(w, |s| match s {
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

/// A warning per exchange group of `rtt_rto` markers under one of the paper's own-ratio
/// rules (`rto_rule = "min_rtt_aggregate"` or `"min_rtt_and_rto"`) whose aggregates sat
/// near the rule's jump at the end of the run ([`crate::cond::rtt_aware::NEAR_JUMP`], from the RTTs and RTOs last
/// published), or whose minimum-RTT aggregate changed during the run. There q jumps between
/// RTT/RTO ≈ 0.1 and Fig. 1's (minRTT/RTT)²·(minRTO/RTO) ≈ 1, so a small RTT change
/// decides which aggregate is marked harder (module doc; `"capped"` has no jump).
pub fn rto_rule_warnings(w: &World) -> Vec<String> {
    use crate::cond::rtt_aware::{RtoRule, Scheme, NEAR_JUMP};
    use std::collections::BTreeMap;
    let hooks = w
        .nodes
        .iter()
        .flat_map(|n| [&n.host_egress, &n.ingress])
        .chain(w.ifaces.iter().flat_map(|f| [&f.egress, &f.ingress]));
    /// A group's rule, the (RTT, RTO) its markers last published, their holder changes.
    type Group = (RtoRule, Vec<(u64, u64)>, u32);
    let mut groups: BTreeMap<&str, Group> = BTreeMap::new();
    for h in hooks {
        for s in h.chain.stages() {
            let AnyConditioner::RttAware(m) = s else {
                continue;
            };
            let (c, Some(g)) = (m.config(), m.group()) else {
                continue;
            };
            if c.scheme != Scheme::RttRto || c.rto_rule == RtoRule::Capped {
                continue;
            }
            let e = groups.entry(g).or_insert((c.rto_rule, Vec::new(), 0));
            e.1.extend(m.published());
            e.2 += m.holder_changes();
        }
    }
    let mut out = Vec::new();
    for (g, (rule, mut rtts, changes)) in groups {
        rtts.sort_unstable();
        let min_rto = rtts.iter().map(|p| p.1).min().unwrap_or(1).max(1) as f64;
        let f = |v: u64| v.max(1) as f64;
        // The minimum-RTT aggregate's own ratio against the next one's Fig. 1 q.
        let (own, next) = match rtts.as_slice() {
            [a, b, ..] => (
                f(a.0) / f(a.1),
                (f(a.0) / f(b.0)).powi(2) * min_rto / f(b.1),
            ),
            _ => (1.0, 0.0),
        };
        let close = next > NEAR_JUMP * own;
        if !close && changes == 0 {
            continue;
        }
        let rule = serde_json::to_value(rule).ok();
        let rule = rule.as_ref().and_then(|v| v.as_str()).unwrap_or("?");
        let near = if close {
            format!(
                "the {:.1} ms aggregate gets q = {own:.3} (its own RTT/RTO) while the {:.1} ms \
                 one gets {next:.3} (Fig. 1), more than {NEAR_JUMP} × as much",
                rtts[0].0 as f64 / 1e3,
                rtts[1].0 as f64 / 1e3,
            )
        } else {
            String::new()
        };
        let moved = if changes > 0 {
            format!(
                "{}the minimum-RTT aggregate changed {changes} times during the run",
                if close { "; " } else { "" }
            )
        } else {
            String::new()
        };
        out.push(format!(
            "rtt_aware group `{g}`: rto_rule = \"{rule}\" (P3 §III's own-ratio exception) near \
             its jump: {near}{moved}. A small RTT change that made the other aggregate the \
             fastest would swap the two q's, so it decides which one is marked harder; rto_rule = \"capped\" (the \
             default) is continuous"
        ));
    }
    out
}

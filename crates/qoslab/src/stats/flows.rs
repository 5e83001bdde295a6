//! The per-flow tables: `flows` (what each flow sent and delivered after the warm-up),
//! `series` (goodput over time), `flow_classes` (the DiffServ class its packets got),
//! `delays` and `delay_histogram` (one-way delays).

use super::table::names;
use super::{Column, Table};
use crate::world::{FlowApp, FlowCounters, World};

/// The `flows` table: one row per flow with its endpoints, its counters after the
/// warm-up (goodput over the `measured` seconds), its sink's mean delay (UDP) and its
/// TCP sender's counters and final state (zeros / NaN for UDP flows).
pub(super) fn flows_table(w: &World, measured: f64) -> Table {
    let mut t = Table::default();
    let c: Vec<_> = w
        .flows
        .iter()
        .enumerate()
        .map(|(i, f)| f.counters_since(&w.warm, i))
        .collect();
    endpoint_columns(w, &mut t);
    counter_columns(&mut t, &c, measured);
    t.push(
        "mean_delay",
        Column::Float(
            w.flows
                .iter()
                .map(|f| match &f.app {
                    FlowApp::Cbr { sink, .. } | FlowApp::Pareto { sink, .. } => {
                        sink.mean_delay().unwrap_or(f64::NAN)
                    }
                    FlowApp::Tcp(_) => f64::NAN,
                })
                .collect(),
        ),
    );
    let tcp = super::tcp::senders(w);
    super::tcp::counter_columns(w, &tcp, &mut t);
    t.push(
        "acks_sent",
        Column::Int(c.iter().map(|x| x.acks_sent as i64).collect()),
    );
    super::tcp::state_columns(&tcp, &mut t);
    t
}

/// The `flows` table's first columns: the flow's index, name, kind and its two hosts.
fn endpoint_columns(w: &World, t: &mut Table) {
    let n = w.flows.len();
    t.push("flow", Column::Int((0..n as i64).collect()));
    t.push(
        "name",
        names(w.flows.iter().map(|f| f.name.as_str()).collect()),
    );
    t.push(
        "kind",
        names(w.flows.iter().map(|f| f.app.kind()).collect()),
    );
    t.push(
        "src",
        names(
            w.flows
                .iter()
                .map(|f| w.nodes[f.src.0 as usize].name.as_str())
                .collect(),
        ),
    );
    t.push(
        "dst",
        names(
            w.flows
                .iter()
                .map(|f| w.nodes[f.dst.0 as usize].name.as_str())
                .collect(),
        ),
    );
}

/// The `flows` table's packet and byte counters `c` (after the warm-up), with goodput
/// over the `measured` seconds.
fn counter_columns(t: &mut Table, c: &[FlowCounters], measured: f64) {
    t.push(
        "pkts_sent",
        Column::Int(c.iter().map(|x| x.pkts_sent as i64).collect()),
    );
    t.push(
        "bytes_sent",
        Column::Int(c.iter().map(|x| x.bytes_sent as i64).collect()),
    );
    t.push(
        "pkts_delivered",
        Column::Int(c.iter().map(|x| x.pkts_delivered as i64).collect()),
    );
    t.push(
        "goodput_bytes",
        Column::Int(c.iter().map(|x| x.goodput_bytes as i64).collect()),
    );
    t.push(
        "goodput_bps",
        Column::Float(
            c.iter()
                .map(|x| x.goodput_bytes as f64 * 8.0 / measured)
                .collect(),
        ),
    );
    t.push(
        "drops",
        Column::Int(c.iter().map(|x| x.drops as i64).collect()),
    );
}

/// The `series` table: per flow, its cumulative goodput bytes at each sample and the
/// goodput since its previous sample.
pub(super) fn series_table(w: &World) -> Table {
    let n = w.flows.len();
    let mut t = Table::default();
    let s = &w.recorded.series;
    let mut prev = vec![0u64; n];
    let mut prev_t = vec![0u64; n];
    let mut rate = Vec::with_capacity(s.len());
    for &(f, tt, cum) in s {
        let dt = (tt - prev_t[f as usize]) as f64 / 1e9;
        rate.push(if dt > 0.0 {
            (cum - prev[f as usize]) as f64 * 8.0 / dt
        } else {
            0.0
        });
        prev[f as usize] = cum;
        prev_t[f as usize] = tt;
    }
    t.push("flow", Column::Int(s.iter().map(|x| x.0 as i64).collect()));
    t.push(
        "t",
        Column::Float(s.iter().map(|x| x.1 as f64 / 1e9).collect()),
    );
    t.push("goodput_bps", Column::Float(rate));
    t.push(
        "cum_bytes",
        Column::Int(s.iter().map(|x| x.2 as i64).collect()),
    );
    t
}

/// Per flow, the DiffServ class of the data packets it delivered after the warm-up:
/// the class the destination's DSCP table gives each DSCP they arrived with (several
/// classes joined by `+`; `none` if nothing arrived) and those DSCPs. `None` when
/// every delivered packet carried DSCP 0 (no DiffServ in the run).
pub(super) fn flow_classes_table(w: &World) -> Option<Table> {
    if w.flows.iter().all(|f| f.delivered_dscps.0 & !1 == 0) {
        return None;
    }
    let mut class = Vec::new();
    let mut dscps = Vec::new();
    for f in &w.flows {
        let table = &w.nodes[f.dst.0 as usize].dscp;
        let mut cs: Vec<&str> = Vec::new();
        for d in f.delivered_dscps.iter() {
            let c = table.class(d);
            if !cs.contains(&c) {
                cs.push(c);
            }
        }
        class.push(if cs.is_empty() {
            "none".to_string()
        } else {
            cs.join("+")
        });
        dscps.push(
            f.delivered_dscps
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(" "),
        );
    }
    let mut t = Table::default();
    t.push("flow", Column::Int((0..w.flows.len() as i64).collect()));
    t.push(
        "name",
        names(w.flows.iter().map(|f| f.name.as_str()).collect()),
    );
    t.push("class", names(class.iter().map(String::as_str).collect()));
    t.push("dscps", names(dscps.iter().map(String::as_str).collect()));
    Some(t)
}

/// Per-flow one-way delay statistics of data packets after the warm-up
/// (`record.delays`); `None` when not recorded.
pub(super) fn delays_table(w: &World) -> Option<Table> {
    let rows: Vec<_> = w
        .flows
        .iter()
        .enumerate()
        .filter_map(|(i, f)| f.delays.as_deref().map(|d| (i, f, d)))
        .collect();
    if rows.is_empty() {
        return None;
    }
    let float = |g: &dyn Fn(&super::delay::DelayStats) -> f64| {
        Column::Float(rows.iter().map(|r| g(r.2)).collect())
    };
    let mut t = Table::default();
    t.push(
        "flow",
        Column::Int(rows.iter().map(|r| r.0 as i64).collect()),
    );
    t.push(
        "name",
        names(rows.iter().map(|r| r.1.name.as_str()).collect()),
    );
    t.push(
        "packets",
        Column::Int(rows.iter().map(|r| r.2.count() as i64).collect()),
    );
    t.push("mean", float(&|d| d.mean()));
    t.push("p50", float(&|d| d.quantile(0.5)));
    t.push("p95", float(&|d| d.quantile(0.95)));
    t.push("p99", float(&|d| d.quantile(0.99)));
    t.push("max", float(&|d| d.max()));
    t.push("jitter", float(&|d| d.jitter()));
    Some(t)
}

/// The `delay_histogram` table (`record.delays = true`): per flow, one row per
/// non-empty 1 %-wide bucket of its data packets' one-way delays: `bucket` (index k:
/// delays in [1.01^k, 1.01^(k+1)) ns), `upper` (the bucket's upper edge [s]) and
/// `packets`. Summing flows' buckets gives the percentiles of a group of flows by the
/// same rule as `delays`' per flow.
pub(super) fn delay_histogram_table(w: &World) -> Option<Table> {
    let mut flow = Vec::new();
    let mut name = Vec::new();
    let mut bucket = Vec::new();
    let mut upper = Vec::new();
    let mut packets = Vec::new();
    let mut any = false;
    for (i, f) in w.flows.iter().enumerate() {
        let Some(d) = f.delays.as_deref() else {
            continue;
        };
        any = true;
        for (k, up, n) in d.buckets() {
            flow.push(i as i64);
            name.push(f.name.as_str());
            bucket.push(k as i64);
            upper.push(up);
            packets.push(n as i64);
        }
    }
    if !any {
        return None;
    }
    let mut t = Table::default();
    t.push("flow", Column::Int(flow));
    t.push("name", names(name));
    t.push("bucket", Column::Int(bucket));
    t.push("upper", Column::Float(upper));
    t.push("packets", Column::Int(packets));
    Some(t)
}

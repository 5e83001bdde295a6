//! TCP: the sender columns of the `flows` table, and the `transfers` (finite
//! transfers) and `traces` (sender state over time) tables.

use super::table::names;
use super::{Column, Table};
use crate::tcp::{TcpProbe, TcpSenderStats};
use crate::time::{Dur, SimTime};
use crate::world::{Flow, FlowApp, World};

/// Per flow, its TCP sender's counters over the whole run and its final state; `None`
/// for a UDP flow.
pub(super) type Senders = Vec<Option<(TcpSenderStats, TcpProbe)>>;

/// Each flow's TCP sender counters and final state.
pub(super) fn senders(w: &World) -> Senders {
    w.flows
        .iter()
        .map(|f| match &f.app {
            FlowApp::Tcp(t) => Some((*t.snd.stats(), t.snd.probe())),
            _ => None,
        })
        .collect()
}

/// Seconds of `d`; NaN for none.
fn secs(d: Option<Dur>) -> f64 {
    d.map_or(f64::NAN, |d| d.as_secs_f64())
}

/// The sender counters of `tcp` after the warm-up (as goodput and drops), then the same
/// over the whole run in `*_whole_run` columns; zeros for UDP flows.
pub(super) fn counter_columns(w: &World, tcp: &Senders, t: &mut Table) {
    let measured_tcp: Vec<Option<TcpSenderStats>> = tcp
        .iter()
        .enumerate()
        .map(|(i, x)| x.map(|(s, _)| w.warm.tcp.get(i).map_or(s, |e| s.since(e))))
        .collect();
    type Get = fn(&TcpSenderStats) -> u64;
    let counters: [(&str, &str, Get); 5] = [
        ("retransmits", "retransmits_whole_run", |s| s.retransmits),
        ("fast_retransmits", "fast_retransmits_whole_run", |s| {
            s.fast_retransmits
        }),
        ("timeouts", "timeouts_whole_run", |s| s.timeouts),
        ("dupacks", "dupacks_whole_run", |s| s.dupacks),
        ("ecn_reductions", "ecn_reductions_whole_run", |s| {
            s.ecn_reductions
        }),
    ];
    for (name, _, g) in counters {
        t.push(
            name,
            Column::Int(
                measured_tcp
                    .iter()
                    .map(|x| x.as_ref().map_or(0, |s| g(s) as i64))
                    .collect(),
            ),
        );
    }
    for (_, name, g) in counters {
        t.push(
            name,
            Column::Int(
                tcp.iter()
                    .map(|x| x.as_ref().map_or(0, |(s, _)| g(s) as i64))
                    .collect(),
            ),
        );
    }
}

/// The senders' final `srtt`, `rto` and `cwnd`; NaN / 0 for UDP flows.
pub(super) fn state_columns(tcp: &Senders, t: &mut Table) {
    t.push(
        "srtt",
        Column::Float(
            tcp.iter()
                .map(|x| x.map_or(f64::NAN, |(_, p)| secs(p.srtt)))
                .collect(),
        ),
    );
    t.push(
        "rto",
        Column::Float(
            tcp.iter()
                .map(|x| x.map_or(f64::NAN, |(_, p)| p.rto.as_secs_f64()))
                .collect(),
        ),
    );
    t.push(
        "cwnd",
        Column::Int(
            tcp.iter()
                .map(|x| x.map_or(0, |(_, p)| p.cwnd as i64))
                .collect(),
        ),
    );
}

/// The `transfers` table: per finite TCP transfer, when it started and when everything
/// was acknowledged; `None` when the run has none.
pub(super) fn transfers_table(w: &World) -> Option<Table> {
    let fin: Vec<(usize, &Flow, SimTime)> = w
        .flows
        .iter()
        .enumerate()
        .filter_map(|(i, f)| match &f.app {
            FlowApp::Tcp(t) if t.finite => Some((i, f, t.done_at)),
            _ => None,
        })
        .collect();
    if fin.is_empty() {
        return None;
    }
    let mut t = Table::default();
    let done = |d: SimTime| (d != SimTime::NEVER).then(|| d.as_secs_f64());
    t.push(
        "flow",
        Column::Int(fin.iter().map(|x| x.0 as i64).collect()),
    );
    t.push(
        "name",
        names(fin.iter().map(|x| x.1.name.as_str()).collect()),
    );
    t.push(
        "start",
        Column::Float(fin.iter().map(|x| x.1.start.as_secs_f64()).collect()),
    );
    t.push(
        "done",
        Column::Float(fin.iter().map(|x| done(x.2).unwrap_or(f64::NAN)).collect()),
    );
    t.push(
        "completion",
        Column::Float(
            fin.iter()
                .map(|x| done(x.2).map_or(f64::NAN, |d| d - x.1.start.as_secs_f64()))
                .collect(),
        ),
    );
    Some(t)
}

/// The `traces` table: the traced senders' state at each sample (`record.traces`).
pub(super) fn traces_table(w: &World) -> Table {
    let tr = &w.recorded.traces;
    let mut t = Table::default();
    t.push("flow", Column::Int(tr.iter().map(|x| x.0 as i64).collect()));
    t.push(
        "t",
        Column::Float(tr.iter().map(|x| x.1 as f64 / 1e9).collect()),
    );
    t.push(
        "cwnd",
        Column::Int(tr.iter().map(|x| x.2.cwnd as i64).collect()),
    );
    t.push(
        "ssthresh",
        Column::Int(tr.iter().map(|x| x.2.ssthresh as i64).collect()),
    );
    t.push(
        "srtt",
        Column::Float(tr.iter().map(|x| secs(x.2.srtt)).collect()),
    );
    t.push(
        "rto",
        Column::Float(tr.iter().map(|x| x.2.rto.as_secs_f64()).collect()),
    );
    t.push(
        "in_flight",
        Column::Int(tr.iter().map(|x| x.2.in_flight as i64).collect()),
    );
    t.push(
        "state",
        names(tr.iter().map(|x| x.2.state.name()).collect()),
    );
    t.push(
        "dupacks",
        Column::Int(tr.iter().map(|x| x.2.dupacks as i64).collect()),
    );
    t.push(
        "pipe",
        Column::Float(
            tr.iter()
                .map(|x| x.2.pipe.map_or(f64::NAN, |p| p as f64))
                .collect(),
        ),
    );
    t
}

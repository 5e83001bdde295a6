//! The flows as the agents saw them: goodput and TCP state into the `flows` table, and
//! the `series`, `traces` and `live_ping` tables.

use super::datapath::TunIo;
use crate::live::protocol::{AgentResults, TraceSample};
use crate::packet::NodeId;
use crate::stats::{Column, RunResult, Table};
use crate::world::World;

/// What the agents reported, per flow and in rows.
struct FromAgents {
    /// Per flow: payload bytes its sink received after the warm-up.
    goodput: Vec<i64>,
    /// Per flow: segments its sender retransmitted.
    retrans: Vec<i64>,
    /// Per flow: its sender's smoothed RTT [s] (NaN: none).
    srtt: Vec<f64>,
    /// Per flow: its sender's minimum RTT [s] (NaN: none).
    min_rtt: Vec<f64>,
    /// Per flow: its sender's congestion window [segments].
    cwnd: Vec<i64>,
    /// Per flow: its sender's congestion control (empty: UDP).
    linux_cc: Vec<String>,
    /// (flow, t, cumulative bytes) of the sinks' samples.
    series: Vec<(i64, f64, i64)>,
    /// (flow, sample) of the traced senders' `TCP_INFO` samples.
    traces: Vec<(i64, TraceSample)>,
    /// (from, to, seq, rtt) of every ping.
    pings: Vec<(String, String, i64, f64)>,
}

/// The agents' results (`results[i]` from `hosts[i]`) gathered per flow, flows
/// numbered below the world's count only.
fn gather(w: &World, results: &[AgentResults], hosts: &[NodeId]) -> FromAgents {
    let n = w.flows.len();
    let mut g = FromAgents {
        goodput: vec![0; n],
        retrans: vec![0; n],
        srtt: vec![f64::NAN; n],
        min_rtt: vec![f64::NAN; n],
        cwnd: vec![0; n],
        linux_cc: vec![String::new(); n],
        series: Vec::new(),
        traces: Vec::new(),
        pings: Vec::new(),
    };
    let flow = |k: &str| k.parse::<usize>().ok().filter(|&i| i < n);
    for (hi, res) in results.iter().enumerate() {
        for (k, v) in &res.sinks {
            let Some(i) = flow(k) else { continue };
            g.goodput[i] = v.goodput_bytes;
            g.series
                .extend(v.series.iter().map(|&(t, b)| (i as i64, t, b)));
        }
        for (k, v) in &res.senders {
            let Some(i) = flow(k) else { continue };
            g.retrans[i] = v.total_retrans.unwrap_or(0);
            g.srtt[i] = v.srtt.unwrap_or(f64::NAN);
            g.min_rtt[i] = v.min_rtt.unwrap_or(f64::NAN);
            g.cwnd[i] = v.cwnd.unwrap_or(0);
            g.linux_cc[i] = v.cc.clone();
            g.traces.extend(v.trace.iter().map(|&t| (i as i64, t)));
        }
        let from = &w.nodes[hosts[hi].0 as usize].name;
        for p in &res.ping {
            for (seq, rtt) in p.rtts.iter().enumerate() {
                let rtt = rtt.unwrap_or(f64::NAN);
                g.pings.push((from.clone(), p.to.clone(), seq as i64, rtt));
            }
        }
    }
    g
}

/// The flows' goodput and TCP state from the agents (`results[i]` from `hosts[i]`), or
/// for the `simulated` flows from the world's own counters, into `flows`, and the
/// `series`, `traces` and `live_ping` tables.
pub(super) fn insert(
    r: &mut RunResult,
    w: &World,
    io: &TunIo,
    results: &[AgentResults],
    hosts: &[NodeId],
    simulated: &[bool],
) {
    let mut g = gather(w, results, hosts);
    // A simulated flow's series is the world's (its receiver's cumulative goodput).
    g.series.extend(
        (w.recorded.series.iter())
            .filter(|s| simulated.get(s.0 as usize) == Some(&true))
            .map(|&(i, t, b)| (i as i64, t as f64 / 1e9, b as i64)),
    );
    flows_table(r, w, io, &g, simulated);
    series_table(r, &g);
    traces_table(r, &g);
    ping_table(r, &g);
}

/// Row `i` of `world` where `simulated[i]`, else of `agents` (columns of one type).
fn per_flow(world: &Column, agents: Column, simulated: &[bool]) -> Column {
    let pick = |i: usize| simulated.get(i) == Some(&true);
    match (world, agents) {
        (Column::Int(s), Column::Int(mut a)) => {
            (a.iter_mut().enumerate()).for_each(|(i, x)| *x = if pick(i) { s[i] } else { *x });
            Column::Int(a)
        }
        (Column::Float(s), Column::Float(mut a)) => {
            (a.iter_mut().enumerate()).for_each(|(i, x)| *x = if pick(i) { s[i] } else { *x });
            Column::Float(a)
        }
        (_, a) => a,
    }
}

/// The `flows` table with the agents' goodput and TCP state in place of the simulated
/// senders' (whose counters are dropped), except for the `simulated` flows, whose own
/// endpoints ran in the datapath (the world's counters); plus `simulated` (1 for
/// those), `min_rtt`, `linux_cc`, `ce_delivered` and `ece_acks`.
fn flows_table(r: &mut RunResult, w: &World, io: &TunIo, g: &FromAgents, simulated: &[bool]) {
    let Some(t) = r.tables.get_mut("flows") else {
        return;
    };
    let n = w.flows.len();
    let measured = (w.end - w.warmup).as_secs_f64();
    let mut nt = Table::default();
    for (name, col) in t.names.iter().zip(&t.columns) {
        // The simulated senders did not run: their counters would be zeros, not facts.
        let sim_only = [
            "fast_retransmits",
            "timeouts",
            "dupacks",
            "ecn_reductions",
            "rto",
            "mean_delay",
        ];
        if sim_only.iter().any(|s| name.starts_with(s)) || name.ends_with("_whole_run") {
            continue;
        }
        let agents = match name.as_str() {
            "goodput_bytes" => Column::Int(g.goodput.clone()),
            "goodput_bps" => Column::Float(
                g.goodput
                    .iter()
                    .map(|&b| b as f64 * 8.0 / measured)
                    .collect(),
            ),
            "retransmits" => Column::Int(g.retrans.clone()),
            "srtt" => Column::Float(g.srtt.clone()),
            "cwnd" => Column::Int(g.cwnd.clone()),
            _ => {
                nt.push(name, col.clone());
                continue;
            }
        };
        nt.push(name, per_flow(col, agents, simulated));
    }
    // 1: qoslab's own endpoints ran the flow inside the datapath (`[live] simulated`);
    // 0: the hosts' kernels did.
    let sim = (0..n).map(|i| i64::from(simulated.get(i) == Some(&true)));
    nt.push("simulated", Column::Int(sim.collect()));
    // The kernel's minimum RTT of the connection [s] (`tcpi_min_rtt`: the floor the
    // sender measured, queueing excluded as far as its samples allow; NaN for UDP).
    nt.push("min_rtt", Column::Float(g.min_rtt.clone()));
    // The congestion control the sender's socket ran (empty for UDP flows).
    nt.push("linux_cc", Column::Str(g.linux_cc.clone()));
    let ints = |v: &[u64]| Column::Int(v[..n].iter().map(|&x| x as i64).collect());
    nt.push("ce_delivered", ints(&io.ce_delivered));
    nt.push("ece_acks", ints(&io.ece_acks));
    *t = nt;
}

/// The `series` table: each sink's cumulative bytes over time.
fn series_table(r: &mut RunResult, g: &FromAgents) {
    let s = &g.series;
    let mut t = Table::default();
    t.push("flow", Column::Int(s.iter().map(|x| x.0).collect()));
    t.push("t", Column::Float(s.iter().map(|x| x.1).collect()));
    t.push(
        "goodput_bytes",
        Column::Int(s.iter().map(|x| x.2).collect()),
    );
    r.tables.insert("series".into(), t);
}

/// The `traces` table: the traced senders' `TCP_INFO` samples
/// (`[t, cwnd, ssthresh, srtt, rto, total_retrans]`).
fn traces_table(r: &mut RunResult, g: &FromAgents) {
    let tr = &g.traces;
    let float = |f: fn(&TraceSample) -> f64| Column::Float(tr.iter().map(|x| f(&x.1)).collect());
    let int = |f: fn(&TraceSample) -> i64| Column::Int(tr.iter().map(|x| f(&x.1)).collect());
    let mut t = Table::default();
    t.push("flow", Column::Int(tr.iter().map(|x| x.0).collect()));
    t.push("t", float(|s| s.t));
    t.push("cwnd", int(|s| s.cwnd));
    t.push("ssthresh", int(|s| s.ssthresh));
    t.push("srtt", float(|s| s.srtt));
    t.push("rto", float(|s| s.rto));
    t.push("retransmits", int(|s| s.total_retrans));
    r.tables.insert("traces".into(), t);
}

/// The `live_ping` table: each ping's round trip (NaN: no answer).
fn ping_table(r: &mut RunResult, g: &FromAgents) {
    let p = &g.pings;
    let mut t = Table::default();
    t.push("from", Column::Str(p.iter().map(|x| x.0.clone()).collect()));
    t.push("to", Column::Str(p.iter().map(|x| x.1.clone()).collect()));
    t.push("seq", Column::Int(p.iter().map(|x| x.2).collect()));
    t.push("rtt", Column::Float(p.iter().map(|x| x.3).collect()));
    r.tables.insert("live_ping".into(), t);
}

//! The `ptcp` and `ptcp_pipes` tables of pTCP flows (P4 §4): per flow the bytes its
//! receiving application got in order and the engine's reassigns, redundant sends,
//! hollow segments, unbinds, freezes and resumes; per pipe the stream bytes it carried, its retransmissions,
//! timeouts and mean congestion window. All counts are over the whole run (the flow's
//! goodput after the warm-up is in the `flows` table).

use super::{Column, RunResult, Table};
use crate::app::ptcp::Pipe;
use crate::app::Ptcp;

/// Adds `ptcp` and `ptcp_pipes` for the pTCP flows `pt` (flow index, connection).
pub(super) fn ptcp_tables(r: &mut RunResult, pt: &[(usize, &Ptcp)]) {
    let int =
        |f: &dyn Fn(&(usize, &Ptcp)) -> u64| Column::Int(pt.iter().map(|x| f(x) as i64).collect());
    let sum = |s: &Ptcp, f: &dyn Fn(&Pipe) -> u64| s.pipes.iter().map(f).sum::<u64>();
    let mut t = Table::default();
    t.push("flow", int(&|x| x.0 as u64));
    t.push("pipes", int(&|x| x.1.pipes.len() as u64));
    t.push("send_buffer", int(&|x| x.1.cfg.send_buffer.0));
    t.push("recv_buffer", int(&|x| x.1.cfg.recv_buffer.0));
    t.push("app_bytes", int(&|x| x.1.rcv.app_bytes));
    t.push("bytes_sent", int(&|x| sum(x.1, &|p| p.stats.data_bytes)));
    t.push("binds", int(&|x| x.1.engine.stats.binds));
    t.push("reassigns", int(&|x| x.1.engine.stats.reassigns));
    t.push("redundant", int(&|x| x.1.engine.stats.redundant));
    t.push("hollow", int(&|x| x.1.engine.stats.hollow));
    t.push("unbinds", int(&|x| x.1.engine.stats.unbinds));
    t.push("freezes", int(&|x| x.1.engine.stats.freezes));
    t.push("resumes", int(&|x| x.1.engine.stats.resumes));
    t.push("duplicates", int(&|x| x.1.rcv.duplicates));
    t.push("max_held", int(&|x| x.1.rcv.max_held));
    t.push(
        "retransmits",
        int(&|x| sum(x.1, &|p| p.snd.stats().retransmits)),
    );
    t.push("timeouts", int(&|x| sum(x.1, &|p| p.snd.stats().timeouts)));
    r.tables.insert("ptcp".into(), t);

    let rows: Vec<(usize, usize, &Pipe)> = pt
        .iter()
        .flat_map(|(i, s)| s.pipes.iter().enumerate().map(move |(k, p)| (*i, k, p)))
        .collect();
    let int = |f: &dyn Fn(&(usize, usize, &Pipe)) -> u64| {
        Column::Int(rows.iter().map(|x| f(x) as i64).collect())
    };
    let mut t = Table::default();
    t.push("flow", int(&|x| x.0 as u64));
    t.push("pipe", int(&|x| x.1 as u64));
    t.push("bytes_sent", int(&|x| x.2.stats.data_bytes));
    t.push("segments", int(&|x| x.2.snd.stats().segments_sent));
    t.push("retransmits", int(&|x| x.2.snd.stats().retransmits));
    t.push(
        "fast_retransmits",
        int(&|x| x.2.snd.stats().fast_retransmits),
    );
    t.push("timeouts", int(&|x| x.2.snd.stats().timeouts));
    t.push("freezes", int(&|x| x.2.stats.freezes));
    t.push(
        "mean_cwnd",
        Column::Float(
            rows.iter()
                .map(|x| {
                    let s = &x.2.stats;
                    if s.cwnd_n == 0 {
                        f64::NAN
                    } else {
                        s.cwnd_sum / s.cwnd_n as f64
                    }
                })
                .collect(),
        ),
    );
    r.tables.insert("ptcp_pipes".into(), t);
}

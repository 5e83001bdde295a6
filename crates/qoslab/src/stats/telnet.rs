//! The `telnet` and `telnet_sessions` tables of Telnet flows (P3 §V.D): every write
//! and its write-to-delivery delay, and per session its start, its writes and when its
//! last write was delivered. One builder for the simulator and live mode
//! ([`insert_telnet_tables`]).

use super::{Column, RunResult, Table};

/// The `telnet` (one row per write) and `telnet_sessions` tables.
pub(super) fn telnet_tables(r: &mut RunResult, tn: &[(usize, &crate::app::Telnet)]) {
    let delay = |w: &crate::app::TelnetWrite| w.delay.map_or(f64::NAN, |d| d.as_secs_f64());
    let rows: Vec<TelnetRow> = tn
        .iter()
        .flat_map(|(i, x)| x.writes.iter().map(move |w| (*i, w)))
        .map(|(i, w)| {
            let t = w.at.as_secs_f64();
            (i as i64, w.session as i64, t, w.size as i64, delay(w))
        })
        .collect();
    insert_telnet_tables(r, &rows);
}

/// One Telnet write: (flow, session, t [s], size [bytes], delay [s], NaN if never
/// delivered).
pub type TelnetRow = (i64, i64, f64, i64, f64);

/// Puts the `telnet` table (one row per write, in flow and session order) and the
/// `telnet_sessions` table (flow, session, start, writes, completion = last delivery −
/// start) made of `rows` into `r`: the simulator's and live mode's alike.
pub fn insert_telnet_tables(r: &mut RunResult, rows: &[TelnetRow]) {
    let mut t = Table::default();
    t.push("flow", Column::Int(rows.iter().map(|x| x.0).collect()));
    t.push("session", Column::Int(rows.iter().map(|x| x.1).collect()));
    t.push("t", Column::Float(rows.iter().map(|x| x.2).collect()));
    t.push("size", Column::Int(rows.iter().map(|x| x.3).collect()));
    t.push("delay", Column::Float(rows.iter().map(|x| x.4).collect()));
    r.tables.insert("telnet".into(), t);
    let mut ses: Vec<(i64, i64, f64, i64, f64)> = Vec::new();
    for &(i, session, at, _, delay) in rows {
        let end = at + delay;
        match ses.last_mut() {
            Some(s) if s.0 == i && s.1 == session => {
                s.3 += 1;
                s.4 = end - s.2;
            }
            _ => ses.push((i, session, at, 1, delay)),
        }
    }
    let mut t = Table::default();
    t.push("flow", Column::Int(ses.iter().map(|x| x.0).collect()));
    t.push("session", Column::Int(ses.iter().map(|x| x.1).collect()));
    t.push("start", Column::Float(ses.iter().map(|x| x.2).collect()));
    t.push("writes", Column::Int(ses.iter().map(|x| x.3).collect()));
    t.push(
        "completion",
        Column::Float(ses.iter().map(|x| x.4).collect()),
    );
    r.tables.insert("telnet_sessions".into(), t);
}

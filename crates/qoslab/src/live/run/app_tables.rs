//! The applications' tables from what the agents recorded: `telnet` and
//! `telnet_sessions`, `web_objects` and `web_pages`, and `live_programs`.

use std::collections::BTreeMap;

use crate::live::LiveConfig;
use crate::stats::{insert_telnet_tables, Column, RunResult, Table, TelnetRow};

/// The `telnet` and `telnet_sessions` tables of a live run, as the simulator's: each
/// write the sender's agent made (session, time, size) with its delay until the
/// receiving application had read its last byte, from the sink's arrival times (both
/// agents stamp with the machine's monotonic clock; times from the sender's start).
pub(super) fn telnet_tables(r: &mut RunResult, results: &[serde_json::Value]) {
    // Per flow: the sink's (time, cumulative bytes read) and the sender's writes.
    let mut arrivals: BTreeMap<usize, Vec<(f64, u64)>> = BTreeMap::new();
    // Per flow: the sender's start and its writes (session, time, size, end offset).
    type Writes = (f64, Vec<(i64, f64, i64, u64)>);
    let mut writes: BTreeMap<usize, Writes> = BTreeMap::new();
    for res in results {
        for (k, v) in res["arrivals"].as_object().into_iter().flatten() {
            let Ok(i) = k.parse::<usize>() else { continue };
            let a = v.as_array().into_iter().flatten().map(|x| {
                (
                    x[0].as_f64().unwrap_or(f64::NAN),
                    x[1].as_u64().unwrap_or(0),
                )
            });
            arrivals.entry(i).or_default().extend(a);
        }
        for (k, v) in res["telnet"].as_object().into_iter().flatten() {
            let Ok(i) = k.parse::<usize>() else { continue };
            let t0 = v["t0"].as_f64().unwrap_or(0.0);
            let w = v["writes"].as_array().into_iter().flatten().map(|x| {
                (
                    x[0].as_i64().unwrap_or(0),
                    x[1].as_f64().unwrap_or(f64::NAN),
                    x[2].as_i64().unwrap_or(0),
                    x[3].as_u64().unwrap_or(0),
                )
            });
            writes.insert(i, (t0, w.collect()));
        }
    }
    let mut rows: Vec<TelnetRow> = Vec::new();
    for (i, (t0, ws)) in &writes {
        let arr = arrivals.get(i).map_or(&[][..], |a| &a[..]);
        let mut k = 0;
        for &(session, at, size, end) in ws {
            while k < arr.len() && arr[k].1 < end {
                k += 1;
            }
            let delay = arr.get(k).map_or(f64::NAN, |a| (a.0 - at).max(0.0));
            rows.push((*i as i64, session, at - t0, size, delay));
        }
    }
    insert_telnet_tables(r, &rows);
}

/// The `web_objects` and `web_pages` tables of a live run, as the simulator's, from
/// what the client's agent recorded: per object its session, page, size, when it
/// called `connect` (the SYN), when its first and its last byte were read, bytes read
/// and SYNs sent; per page its session, objects, start and completion (times on the
/// machine's monotonic clock from the agent's start, the run's time zero).
pub(super) fn web_tables(r: &mut RunResult, results: &[serde_json::Value]) {
    use crate::stats::{WebObjectRow, WebPageRow};
    let f = |x: &serde_json::Value| x.as_f64().unwrap_or(f64::NAN);
    let u = |x: &serde_json::Value| x.as_u64().unwrap_or(0);
    // Per flow, in flow order (a flow's client is on one host).
    let mut flows: BTreeMap<usize, &serde_json::Value> = BTreeMap::new();
    for res in results {
        for (k, v) in res["web"].as_object().into_iter().flatten() {
            if let Ok(i) = k.parse::<usize>() {
                flows.insert(i, v);
            }
        }
    }
    let mut objects = Vec::new();
    let mut pages = Vec::new();
    for (&flow, v) in &flows {
        for o in v["objects"].as_array().into_iter().flatten() {
            let (requested, first, done) = (f(&o[3]), f(&o[4]), f(&o[5]));
            objects.push(WebObjectRow {
                flow,
                session: u(&o[0]) as u32,
                page: u(&o[1]) as u32,
                bytes: u(&o[2]),
                requested,
                first,
                done,
                response_first: first - requested,
                response_all: done - requested,
                received: u(&o[6]),
                syns: u(&o[7]) as u32,
            });
        }
        for p in v["pages"].as_array().into_iter().flatten() {
            let (start, done) = (f(&p[2]), f(&p[3]));
            pages.push(WebPageRow {
                flow,
                session: u(&p[0]) as u32,
                objects: u(&p[1]) as u32,
                start,
                done,
                response: done - start,
            });
        }
    }
    crate::stats::insert_web_tables(r, &objects, &pages);
}

/// Keeps at most this many bytes (the end) of a program's stdout and of its stderr.
const PROGRAM_OUTPUT_MAX: u64 = 64 << 10;

/// The end of file `path` (at most [`PROGRAM_OUTPUT_MAX`] bytes, as text) and its size.
fn tail(path: &std::path::Path) -> (String, i64) {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else {
        return (String::new(), 0);
    };
    let len = f.metadata().map_or(0, |m| m.len());
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(PROGRAM_OUTPUT_MAX)));
    let mut b = Vec::new();
    let _ = f.read_to_end(&mut b);
    (String::from_utf8_lossy(&b).into_owned(), len as i64)
}

/// The `live_programs` table (`[[live.program]]`: name, host, argv, when it ran, its
/// exit status, whether qoslab stopped it, the end of its stdout and stderr); returns a
/// warning per program that failed to start or exited with a non-zero status.
pub(super) fn program_table(
    r: &mut RunResult,
    live: &LiveConfig,
    results: &[serde_json::Value],
    work: &std::path::Path,
) -> Vec<String> {
    let mut warnings = Vec::new();
    if live.program.is_empty() {
        return warnings;
    }
    let mut by_index: BTreeMap<usize, &serde_json::Value> = BTreeMap::new();
    for res in results {
        for p in res["programs"].as_array().into_iter().flatten() {
            if let Some(i) = p["index"].as_u64() {
                by_index.insert(i as usize, p);
            }
        }
    }
    let n = live.program.len();
    let (mut names, mut hosts, mut argv) = (vec![], vec![], vec![]);
    let (mut started, mut ended, mut exit, mut signal) = (vec![], vec![], vec![], vec![]);
    let (mut stopped, mut outs, mut errs, mut out_b, mut err_b) =
        (vec![], vec![], vec![], vec![], vec![]);
    for (i, p) in live.program.iter().enumerate().take(n) {
        let res = by_index
            .get(&i)
            .copied()
            .unwrap_or(&serde_json::Value::Null);
        let name = p.label(i);
        let (out, ob) = tail(&work.join(format!("program-{i}.out")));
        let (mut err, eb) = tail(&work.join(format!("program-{i}.err")));
        let code = res["exit_code"].as_i64().unwrap_or(-1);
        let sig = res["signal"].as_i64().unwrap_or(0);
        let by_us = res["stopped"].as_bool().unwrap_or(false);
        if let Some(e) = res["error"].as_str() {
            warnings.push(format!(
                "live: program {name:?} (live.program[{i}]) on host {:?} did not start: {e}",
                p.host
            ));
            err = e.to_string();
        } else if !by_us && (code != 0 || sig != 0) {
            warnings.push(format!(
                "live: program {name:?} (live.program[{i}]) on host {:?} exited with status \
                 {code}{}: see live_programs' stderr",
                p.host,
                if sig != 0 {
                    format!(" (signal {sig})")
                } else {
                    String::new()
                }
            ));
        }
        names.push(name);
        hosts.push(p.host.clone());
        argv.push(serde_json::to_string(&p.argv).unwrap_or_default());
        started.push(res["started"].as_f64().unwrap_or(f64::NAN));
        ended.push(res["ended"].as_f64().unwrap_or(f64::NAN));
        exit.push(code);
        signal.push(sig);
        stopped.push(by_us as i64);
        outs.push(out);
        errs.push(err);
        out_b.push(ob);
        err_b.push(eb);
    }
    let mut t = Table::default();
    t.push("name", Column::Str(names));
    t.push("host", Column::Str(hosts));
    t.push("argv", Column::Str(argv));
    t.push("started", Column::Float(started));
    t.push("ended", Column::Float(ended));
    t.push("exit_code", Column::Int(exit));
    t.push("signal", Column::Int(signal));
    t.push("stopped", Column::Int(stopped));
    t.push("stdout_bytes", Column::Int(out_b));
    t.push("stderr_bytes", Column::Int(err_b));
    t.push("stdout", Column::Str(outs));
    t.push("stderr", Column::Str(errs));
    r.tables.insert("live_programs".into(), t);
    warnings
}

//! The applications' tables from what the agents recorded: `telnet` and
//! `telnet_sessions`, `web_objects` and `web_pages`, and `live_programs`.

use std::collections::BTreeMap;
use std::path::Path;

use crate::live::protocol::{AgentResults, Program, TelnetWrite, Web, WebObject, WebPage};
use crate::live::{LiveConfig, ProgramSpec};
use crate::stats::{insert_telnet_tables, Column, RunResult, Table, TelnetRow};
use crate::stats::{WebObjectRow, WebPageRow};

/// The `telnet` and `telnet_sessions` tables of a live run, as the simulator's: each
/// write the sender's agent made (session, time, size) with its delay until the
/// receiving application had read its last byte, from the sink's arrival times (both
/// agents stamp with the machine's monotonic clock; times from the sender's start).
pub(super) fn telnet_tables(r: &mut RunResult, results: &[AgentResults]) {
    // Per flow: the sink's (time, cumulative bytes read).
    let mut arrivals: BTreeMap<usize, Vec<(f64, u64)>> = BTreeMap::new();
    // Per flow: the sender's start and its writes.
    let mut writes: BTreeMap<usize, (f64, &[TelnetWrite])> = BTreeMap::new();
    for res in results {
        for (k, a) in &res.arrivals {
            let Ok(i) = k.parse::<usize>() else { continue };
            arrivals.entry(i).or_default().extend(a);
        }
        for (k, v) in &res.telnet {
            let Ok(i) = k.parse::<usize>() else { continue };
            writes.insert(i, (v.t0, &v.writes));
        }
    }
    let mut rows: Vec<TelnetRow> = Vec::new();
    for (i, (t0, ws)) in &writes {
        let arr = arrivals.get(i).map_or(&[][..], |a| &a[..]);
        let mut k = 0;
        for w in *ws {
            while k < arr.len() && arr[k].1 < w.end {
                k += 1;
            }
            let delay = arr.get(k).map_or(f64::NAN, |a| (a.0 - w.at).max(0.0));
            rows.push((*i as i64, w.session, w.at - t0, w.size, delay));
        }
    }
    insert_telnet_tables(r, &rows);
}

/// The `web_objects` and `web_pages` tables of a live run, as the simulator's, from
/// what the client's agent recorded: per object its session, page, size, when it
/// called `connect` (the SYN), when its first and its last byte were read, bytes read
/// and SYNs sent; per page its session, objects, start and completion (times on the
/// machine's monotonic clock from the agent's start, the run's time zero; NaN for what
/// did not happen).
pub(super) fn web_tables(r: &mut RunResult, results: &[AgentResults]) {
    // Per flow, in flow order (a flow's client is on one host).
    let mut flows: BTreeMap<usize, &Web> = BTreeMap::new();
    for res in results {
        for (k, v) in &res.web {
            if let Ok(i) = k.parse::<usize>() {
                flows.insert(i, v);
            }
        }
    }
    let mut objects = Vec::new();
    let mut pages = Vec::new();
    for (&flow, v) in &flows {
        objects.extend(v.objects.iter().map(|o| web_object_row(flow, o)));
        pages.extend(v.pages.iter().map(|p| web_page_row(flow, p)));
    }
    crate::stats::insert_web_tables(r, &objects, &pages);
}

/// A web object of flow `flow` as a `web_objects` row.
fn web_object_row(flow: usize, o: &WebObject) -> WebObjectRow {
    let nan = |t: Option<f64>| t.unwrap_or(f64::NAN);
    let (requested, first, done) = (nan(o.requested), nan(o.first), nan(o.done));
    WebObjectRow {
        flow,
        session: o.session as u32,
        page: o.page as u32,
        bytes: o.bytes,
        requested,
        first,
        done,
        response_first: first - requested,
        response_all: done - requested,
        received: o.received,
        syns: o.syns as u32,
    }
}

/// A web page of flow `flow` as a `web_pages` row.
fn web_page_row(flow: usize, p: &WebPage) -> WebPageRow {
    let (start, done) = (p.start.unwrap_or(f64::NAN), p.done.unwrap_or(f64::NAN));
    WebPageRow {
        flow,
        session: p.session as u32,
        objects: p.objects as u32,
        start,
        done,
        response: done - start,
    }
}

/// Keeps at most this many bytes (the end) of a program's stdout and of its stderr.
const PROGRAM_OUTPUT_MAX: u64 = 64 << 10;

/// The end of file `path` (at most [`PROGRAM_OUTPUT_MAX`] bytes, as text) and its size.
fn tail(path: &Path) -> (String, i64) {
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

/// One `live_programs` row.
struct ProgramRow {
    /// The program's label.
    name: String,
    /// The host it ran on.
    host: String,
    /// Its argv, as JSON.
    argv: String,
    /// When it started [s] (NaN: it did not).
    started: f64,
    /// When it ended [s] (NaN: it did not).
    ended: f64,
    /// Its exit status (-1: none reported).
    exit_code: i64,
    /// The signal that killed it (0: none).
    signal: i64,
    /// 1 when qoslab stopped it.
    stopped: i64,
    /// The end of its stdout, and the whole's size [B].
    stdout: (String, i64),
    /// The end of its stderr (or why it did not start), and the whole's size [B].
    stderr: (String, i64),
}

/// The `live_programs` table (`[[live.program]]`: name, host, argv, when it ran, its
/// exit status, whether qoslab stopped it, the end of its stdout and stderr); returns a
/// warning per program that failed to start or exited with a non-zero status.
pub(super) fn program_table(
    r: &mut RunResult,
    live: &LiveConfig,
    results: &[AgentResults],
    work: &Path,
) -> Vec<String> {
    let mut warnings = Vec::new();
    if live.program.is_empty() {
        return warnings;
    }
    let by_index: BTreeMap<usize, &Program> = results
        .iter()
        .flat_map(|res| &res.programs)
        .map(|p| (p.index, p))
        .collect();
    let rows: Vec<ProgramRow> = live
        .program
        .iter()
        .enumerate()
        .map(|(i, p)| program_row(i, p, by_index.get(&i).copied(), work, &mut warnings))
        .collect();
    r.tables
        .insert("live_programs".into(), programs_table(&rows));
    warnings
}

/// Program `i`'s row from what its agent reported (`None`: nothing) and its output
/// files in `work`; a warning if it did not start or exited with a non-zero status.
fn program_row(
    i: usize,
    p: &ProgramSpec,
    res: Option<&Program>,
    work: &Path,
    warnings: &mut Vec<String>,
) -> ProgramRow {
    let name = p.label(i);
    let stdout = tail(&work.join(format!("program-{i}.out")));
    let mut stderr = tail(&work.join(format!("program-{i}.err")));
    let code = res.and_then(|x| x.exit_code).unwrap_or(-1);
    let sig = res.and_then(|x| x.signal).unwrap_or(0);
    let by_us = res.is_some_and(|x| x.stopped);
    if let Some(e) = res.and_then(|x| x.error.as_deref()) {
        warnings.push(format!(
            "live: program {name:?} (live.program[{i}]) on host {:?} did not start: {e}",
            p.host
        ));
        stderr.0 = e.to_string();
    } else if !by_us && (code != 0 || sig != 0) {
        let signal = match sig {
            0 => String::new(),
            s => format!(" (signal {s})"),
        };
        warnings.push(format!(
            "live: program {name:?} (live.program[{i}]) on host {:?} exited with status \
             {code}{signal}: see live_programs' stderr",
            p.host,
        ));
    }
    ProgramRow {
        name,
        host: p.host.clone(),
        argv: serde_json::to_string(&p.argv).unwrap_or_default(),
        started: res.and_then(|x| x.started).unwrap_or(f64::NAN),
        ended: res.and_then(|x| x.ended).unwrap_or(f64::NAN),
        exit_code: code,
        signal: sig,
        stopped: by_us as i64,
        stdout,
        stderr,
    }
}

/// The `live_programs` table of `rows`.
fn programs_table(rows: &[ProgramRow]) -> Table {
    let s =
        |f: fn(&ProgramRow) -> &String| Column::Str(rows.iter().map(|x| f(x).clone()).collect());
    let float = |f: fn(&ProgramRow) -> f64| Column::Float(rows.iter().map(f).collect());
    let int = |f: fn(&ProgramRow) -> i64| Column::Int(rows.iter().map(f).collect());
    let mut t = Table::default();
    t.push("name", s(|x| &x.name));
    t.push("host", s(|x| &x.host));
    t.push("argv", s(|x| &x.argv));
    t.push("started", float(|x| x.started));
    t.push("ended", float(|x| x.ended));
    t.push("exit_code", int(|x| x.exit_code));
    t.push("signal", int(|x| x.signal));
    t.push("stopped", int(|x| x.stopped));
    t.push("stdout_bytes", int(|x| x.stdout.1));
    t.push("stderr_bytes", int(|x| x.stderr.1));
    t.push("stdout", s(|x| &x.stdout.0));
    t.push("stderr", s(|x| &x.stderr.0));
    t
}

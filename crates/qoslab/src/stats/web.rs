//! The `web_objects` and `web_pages` tables of web flows (P3 §V.D): per object its
//! request time and response times to the first and to the last byte, per page the time
//! from its first request to its last object's delivery. One builder for the simulator
//! and live mode ([`insert_web_tables`]).

use super::{Column, RunResult, Table};
use crate::app::Web;
use crate::time::SimTime;

fn secs(t: Option<SimTime>) -> f64 {
    t.map_or(f64::NAN, |t| t.as_secs_f64())
}

fn since(t: Option<SimTime>, from: SimTime) -> f64 {
    t.map_or(f64::NAN, |t| (t - from).as_secs_f64())
}

/// One object of a web flow, times in seconds from the run's start (NaN: not by the end).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WebObjectRow {
    /// The flow's index.
    pub flow: usize,
    /// Session number (from 0).
    pub session: u32,
    /// Index of its page within the flow (into the flow's pages).
    pub page: u32,
    /// Size [bytes].
    pub bytes: u64,
    /// When the client opened its connection (sent the SYN) [s].
    pub requested: f64,
    /// When its first byte arrived in order at the client [s].
    pub first: f64,
    /// When its last byte arrived [s].
    pub done: f64,
    /// first − requested [s] (the simulator's from its integer clock, exact).
    pub response_first: f64,
    /// done − requested [s].
    pub response_all: f64,
    /// Bytes delivered in order at the client.
    pub received: u64,
    /// SYNs the client sent (1 without loss).
    pub syns: u32,
}

/// One page of a web flow, times in seconds from the run's start.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WebPageRow {
    /// The flow's index.
    pub flow: usize,
    /// Session number (from 0).
    pub session: u32,
    /// Objects it has.
    pub objects: u32,
    /// When its first object was requested [s].
    pub start: f64,
    /// When its last object was complete [s] (NaN: not by the end).
    pub done: f64,
    /// done − start [s].
    pub response: f64,
}

/// Adds `web_objects` and `web_pages` for the web flows `web` (flow index, model).
pub(super) fn web_tables(r: &mut RunResult, web: &[(usize, &Web)]) {
    let objects: Vec<WebObjectRow> = web
        .iter()
        .flat_map(|&(flow, w)| {
            w.objects.iter().map(move |o| WebObjectRow {
                flow,
                session: o.session,
                page: o.page,
                bytes: o.bytes,
                requested: o.requested.as_secs_f64(),
                first: secs(o.first),
                done: secs(o.done),
                response_first: since(o.first, o.requested),
                response_all: since(o.done, o.requested),
                received: o.received,
                syns: o.syns,
            })
        })
        .collect();
    let pages: Vec<WebPageRow> = web
        .iter()
        .flat_map(|&(flow, w)| {
            w.pages.iter().map(move |p| WebPageRow {
                flow,
                session: p.session,
                objects: p.objects,
                start: p.started.as_secs_f64(),
                done: secs(p.done),
                response: since(p.done, p.started),
            })
        })
        .collect();
    insert_web_tables(r, &objects, &pages);
}

/// Puts `web_objects` (one row per object: its flow, session, page, index within the
/// flow, bytes, request time, first and last byte's arrival, both response times,
/// bytes received and SYNs) and `web_pages` (one row per page: objects, bytes as the
/// sum of its objects', start, done, response = done − start) made of `objects` and
/// `pages` (each in flow order, a page's index counted within its flow) into `r`: the
/// simulator's and live mode's alike.
pub fn insert_web_tables(r: &mut RunResult, objects: &[WebObjectRow], pages: &[WebPageRow]) {
    // Index within the flow: objects and pages are counted from 0 in each flow.
    let within = |flows: &mut dyn Iterator<Item = usize>| -> Vec<i64> {
        let mut last = None;
        let mut k = 0i64;
        flows
            .map(|f| {
                k = if last == Some(f) { k + 1 } else { 0 };
                last = Some(f);
                k
            })
            .collect()
    };
    let int = |f: &dyn Fn(&WebObjectRow) -> i64| Column::Int(objects.iter().map(f).collect());
    let float = |f: &dyn Fn(&WebObjectRow) -> f64| Column::Float(objects.iter().map(f).collect());
    let mut t = Table::default();
    t.push("flow", int(&|x| x.flow as i64));
    t.push("session", int(&|x| x.session as i64));
    t.push("page", int(&|x| x.page as i64));
    t.push(
        "object",
        Column::Int(within(&mut objects.iter().map(|x| x.flow))),
    );
    t.push("bytes", int(&|x| x.bytes as i64));
    t.push("requested", float(&|x| x.requested));
    t.push("first", float(&|x| x.first));
    t.push("done", float(&|x| x.done));
    t.push("response_first", float(&|x| x.response_first));
    t.push("response_all", float(&|x| x.response_all));
    t.push("received", int(&|x| x.received as i64));
    t.push("syns", int(&|x| x.syns as i64));
    r.tables.insert("web_objects".into(), t);

    let page_no = within(&mut pages.iter().map(|x| x.flow));
    let mut by_page: std::collections::HashMap<(usize, i64), i64> = Default::default();
    for o in objects {
        *by_page.entry((o.flow, o.page as i64)).or_default() += o.bytes as i64;
    }
    let bytes: Vec<i64> = pages
        .iter()
        .zip(&page_no)
        .map(|(p, &k)| by_page.get(&(p.flow, k)).copied().unwrap_or(0))
        .collect();
    let int = |f: &dyn Fn(&WebPageRow) -> i64| Column::Int(pages.iter().map(f).collect());
    let float = |f: &dyn Fn(&WebPageRow) -> f64| Column::Float(pages.iter().map(f).collect());
    let mut t = Table::default();
    t.push("flow", int(&|x| x.flow as i64));
    t.push("session", int(&|x| x.session as i64));
    t.push("page", Column::Int(page_no));
    t.push("objects", int(&|x| x.objects as i64));
    t.push("bytes", Column::Int(bytes));
    t.push("start", float(&|x| x.start));
    t.push("done", float(&|x| x.done));
    t.push("response", float(&|x| x.response));
    r.tables.insert("web_pages".into(), t);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(flow: usize, page: u32, bytes: u64, requested: f64, done: f64) -> WebObjectRow {
        WebObjectRow {
            flow,
            session: 0,
            page,
            bytes,
            requested,
            first: requested + 0.08,
            done,
            response_first: 0.08,
            response_all: done - requested,
            received: if done.is_nan() { 0 } else { bytes },
            syns: 1,
        }
    }

    fn ints(t: &Table, name: &str) -> Vec<i64> {
        match t.get(name) {
            Some(Column::Int(v)) => v.clone(),
            c => panic!("{name}: {c:?}"),
        }
    }

    #[test]
    fn objects_and_pages_are_counted_within_their_flow_and_pages_sum_their_objects() {
        // Flow 0: page 0 of two objects, page 1 of one still in flight; flow 2: one page.
        let objects = [
            obj(0, 0, 1000, 0.0, 0.1),
            obj(0, 0, 3000, 0.01, 0.12),
            obj(0, 1, 2000, 0.3, f64::NAN),
            obj(2, 0, 5000, 0.5, 0.6),
        ];
        let page = |flow, objects, start, done| WebPageRow {
            flow,
            session: 0,
            objects,
            start,
            done,
            response: done - start,
        };
        let pages = [
            page(0, 2, 0.0, 0.12),
            page(0, 1, 0.3, f64::NAN),
            page(2, 1, 0.5, 0.6),
        ];
        let mut r = RunResult::default();
        insert_web_tables(&mut r, &objects, &pages);
        let o = &r.tables["web_objects"];
        assert_eq!(ints(o, "object"), [0, 1, 2, 0]);
        assert_eq!(ints(o, "page"), [0, 0, 1, 0]);
        assert_eq!(ints(o, "received"), [1000, 3000, 0, 5000]);
        let Some(Column::Float(all)) = o.get("response_all") else {
            panic!()
        };
        assert!((all[1] - 0.11).abs() < 1e-12 && all[2].is_nan());
        let p = &r.tables["web_pages"];
        assert_eq!(ints(p, "page"), [0, 1, 0]);
        assert_eq!(ints(p, "bytes"), [4000, 2000, 5000]);
        let Some(Column::Float(resp)) = p.get("response") else {
            panic!()
        };
        assert!((resp[0] - 0.12).abs() < 1e-12 && resp[1].is_nan());
    }
}

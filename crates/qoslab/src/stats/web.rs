//! The `web_objects` and `web_pages` tables of web flows (P3 §V.D): per object its
//! request time and response times to the first and to the last byte, per page the time
//! from its first request to its last object's delivery.

use super::{Column, RunResult, Table};
use crate::app::Web;
use crate::time::SimTime;

fn secs(t: Option<SimTime>) -> f64 {
    t.map_or(f64::NAN, |t| t.as_secs_f64())
}

fn since(t: Option<SimTime>, from: SimTime) -> f64 {
    t.map_or(f64::NAN, |t| (t - from).as_secs_f64())
}

/// Adds `web_objects` and `web_pages` for the web flows `web` (flow index, model).
pub(super) fn web_tables(r: &mut RunResult, web: &[(usize, &Web)]) {
    let objs: Vec<(usize, usize, &crate::app::web::WebObject)> = web
        .iter()
        .flat_map(|(i, w)| w.objects.iter().enumerate().map(move |(k, o)| (*i, k, o)))
        .collect();
    let int = |f: &dyn Fn(&(usize, usize, &crate::app::web::WebObject)) -> i64| {
        Column::Int(objs.iter().map(f).collect())
    };
    let float = |f: &dyn Fn(&(usize, usize, &crate::app::web::WebObject)) -> f64| {
        Column::Float(objs.iter().map(f).collect())
    };
    let mut t = Table::default();
    t.push("flow", int(&|x| x.0 as i64));
    t.push("session", int(&|x| x.2.session as i64));
    t.push("page", int(&|x| x.2.page as i64));
    t.push("object", int(&|x| x.1 as i64));
    t.push("bytes", int(&|x| x.2.bytes as i64));
    t.push("requested", float(&|x| x.2.requested.as_secs_f64()));
    t.push("first", float(&|x| secs(x.2.first)));
    t.push("done", float(&|x| secs(x.2.done)));
    t.push(
        "response_first",
        float(&|x| since(x.2.first, x.2.requested)),
    );
    t.push("response_all", float(&|x| since(x.2.done, x.2.requested)));
    t.push("received", int(&|x| x.2.received as i64));
    t.push("syns", int(&|x| x.2.syns as i64));
    r.tables.insert("web_objects".into(), t);

    type PageRow<'a> = (usize, usize, &'a crate::app::web::WebPage, u64);
    let pages: Vec<PageRow> = web
        .iter()
        .flat_map(|(i, w)| {
            let mut bytes = vec![0u64; w.pages.len()];
            for o in &w.objects {
                bytes[o.page as usize] += o.bytes;
            }
            w.pages
                .iter()
                .enumerate()
                .map(move |(k, p)| (*i, k, p, bytes[k]))
                .collect::<Vec<_>>()
        })
        .collect();
    let mut t = Table::default();
    t.push(
        "flow",
        Column::Int(pages.iter().map(|x| x.0 as i64).collect()),
    );
    t.push(
        "session",
        Column::Int(pages.iter().map(|x| x.2.session as i64).collect()),
    );
    t.push(
        "page",
        Column::Int(pages.iter().map(|x| x.1 as i64).collect()),
    );
    t.push(
        "objects",
        Column::Int(pages.iter().map(|x| x.2.objects as i64).collect()),
    );
    t.push(
        "bytes",
        Column::Int(pages.iter().map(|x| x.3 as i64).collect()),
    );
    t.push(
        "start",
        Column::Float(pages.iter().map(|x| x.2.started.as_secs_f64()).collect()),
    );
    t.push(
        "done",
        Column::Float(pages.iter().map(|x| secs(x.2.done)).collect()),
    );
    t.push(
        "response",
        Column::Float(pages.iter().map(|x| since(x.2.done, x.2.started)).collect()),
    );
    r.tables.insert("web_pages".into(), t);
}

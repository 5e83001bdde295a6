//! Turns a finished world's counters into result tables: one call per table or group
//! of tables, each built in the module that names what it holds.

use super::{conditioners, drops, flows, queues, summary, tcp, telnet};
use super::{RunResult, Table};
use crate::world::{FlowApp, TcpApp, World};

/// Builds the result tables of a finished run.
pub fn collect(w: &World, name: &str, seed: u64, wall_s: f64) -> RunResult {
    let mut r = RunResult::default();
    let measured = (w.end - w.warmup).as_secs_f64();
    let always = [
        ("flows", flows::flows_table(w, measured)),
        ("traces", tcp::traces_table(w)),
        ("series", flows::series_table(w)),
        ("drops", drops::drops_table(w)),
        ("queues", queues::queues_table(w, measured)),
        ("queue_samples", queues::queue_samples_table(w)),
    ];
    for (k, t) in always {
        r.tables.insert(k.into(), t);
    }
    let optional = [
        ("transfers", tcp::transfers_table(w)),
        ("trc", super::trc::table(w)),
        ("qosmgr", super::qosmgr::table(w)),
        ("rtt_markers", super::rtt_markers::table(w)),
        ("delay_histogram", flows::delay_histogram_table(w)),
        ("delays", flows::delays_table(w)),
        ("classes", queues::classes_table(w)),
        ("colour_drops", queues::colour_drops_table(w)),
        ("colours", conditioners::colours_table(w)),
        ("queue_colour_samples", queues::colour_samples_table(w)),
        ("flow_classes", flows::flow_classes_table(w)),
        ("quench", super::eruf::quench_table(w)),
        ("eruf", super::eruf::eruf_table(w)),
        ("drop_events", drops::drop_events_table(w)),
    ];
    for (k, t) in optional {
        insert_some(&mut r, k, t);
    }
    app_tables(w, &mut r);
    r.summary = summary::summary(w, name, seed, wall_s);
    r
}

/// Puts table `t` into `r` as `name` if there is one.
fn insert_some(r: &mut RunResult, name: &str, t: Option<Table>) {
    if let Some(t) = t {
        r.tables.insert(name.into(), t);
    }
}

/// The tables of the TCP applications that keep their own records: Telnet writes and
/// WWW objects and pages (P3 §V.D), striped flows (P4 §2) and pTCP flows (P4 §4).
fn app_tables(w: &World, r: &mut RunResult) {
    let tn = tcp_apps(w, TcpApp::telnet);
    if !tn.is_empty() {
        telnet::telnet_tables(r, &tn);
    }
    let web = tcp_apps(w, |a| a.web().map(|x| &x.model));
    if !web.is_empty() {
        super::web::web_tables(r, &web);
    }
    let st = tcp_apps(w, TcpApp::stripe);
    if !st.is_empty() {
        super::stripe::stripe_tables(r, &st);
    }
    let pt = tcp_apps(w, TcpApp::ptcp);
    if !pt.is_empty() {
        super::ptcp::ptcp_tables(r, &pt);
    }
}

/// The TCP flows whose application `pick` finds, with their indices.
fn tcp_apps<'a, T>(
    w: &'a World,
    pick: impl Fn(&'a TcpApp) -> Option<&'a T>,
) -> Vec<(usize, &'a T)> {
    w.flows
        .iter()
        .enumerate()
        .filter_map(|(i, f)| match &f.app {
            FlowApp::Tcp(t) => pick(&t.app).map(|x| (i, x)),
            _ => None,
        })
        .collect()
}

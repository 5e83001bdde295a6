//! Turns a finished world's counters into result tables.

use serde_json::json;

use super::{Column, RunResult, Table};
use crate::time::SimTime;
use crate::world::{FlowApp, World};

fn names(v: Vec<&str>) -> Column {
    Column::cat(v)
}

/// Builds the result tables of a finished run.
pub fn collect(w: &World, name: &str, seed: u64, wall_s: f64) -> RunResult {
    let mut r = RunResult::default();
    let measured = (w.end - w.warmup).as_secs_f64();

    // flows
    let mut t = Table::default();
    let n = w.flows.len();
    let c: Vec<_> = w
        .flows
        .iter()
        .enumerate()
        .map(|(i, f)| f.counters_since(&w.warm, i))
        .collect();
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
    // TCP sender counters after the warm-up (as goodput and drops), the same over the
    // whole run in `*_whole_run` columns, and the final state; zeros / NaN for UDP flows.
    let tcp: Vec<Option<(crate::tcp::TcpSenderStats, crate::tcp::TcpProbe)>> = w
        .flows
        .iter()
        .map(|f| match &f.app {
            FlowApp::Tcp(t) => Some((*t.snd.stats(), t.snd.probe())),
            _ => None,
        })
        .collect();
    let measured_tcp: Vec<Option<crate::tcp::TcpSenderStats>> = tcp
        .iter()
        .enumerate()
        .map(|(i, x)| x.map(|(s, _)| w.warm.tcp.get(i).map_or(s, |e| s.since(e))))
        .collect();
    type Get = fn(&crate::tcp::TcpSenderStats) -> u64;
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
    t.push(
        "acks_sent",
        Column::Int(c.iter().map(|x| x.acks_sent as i64).collect()),
    );
    let secs = |d: Option<crate::time::Dur>| d.map_or(f64::NAN, |d| d.as_secs_f64());
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
    r.tables.insert("flows".into(), t);

    // finite TCP transfers: when they started and when everything was acknowledged
    let fin: Vec<(usize, &crate::world::Flow, SimTime)> = w
        .flows
        .iter()
        .enumerate()
        .filter_map(|(i, f)| match &f.app {
            FlowApp::Tcp(t) if t.finite => Some((i, f, t.done_at)),
            _ => None,
        })
        .collect();
    if !fin.is_empty() {
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
        r.tables.insert("transfers".into(), t);
    }

    // Telnet writes (P3 §V.D): every write and its write-to-delivery delay, and per
    // session its start, its writes and when its last write was delivered
    let tn: Vec<(usize, &crate::app::Telnet)> = w
        .flows
        .iter()
        .enumerate()
        .filter_map(|(i, f)| match &f.app {
            FlowApp::Tcp(t) => t.app.telnet().map(|x| (i, x)),
            _ => None,
        })
        .collect();
    if !tn.is_empty() {
        telnet_tables(&mut r, &tn);
    }

    // WWW objects and pages (P3 §V.D)
    let web: Vec<(usize, &crate::app::Web)> = w
        .flows
        .iter()
        .enumerate()
        .filter_map(|(i, f)| match &f.app {
            FlowApp::Tcp(t) => t.app.web().map(|x| (i, &x.model)),
            _ => None,
        })
        .collect();
    if !web.is_empty() {
        super::web::web_tables(&mut r, &web);
    }

    // Striped flows (P4 §2)
    let st: Vec<(usize, &crate::app::Stripe)> = w
        .flows
        .iter()
        .enumerate()
        .filter_map(|(i, f)| match &f.app {
            FlowApp::Tcp(t) => t.app.stripe().map(|x| (i, x)),
            _ => None,
        })
        .collect();
    if !st.is_empty() {
        super::stripe::stripe_tables(&mut r, &st);
    }

    // pTCP flows (P4 §4)
    let pt: Vec<(usize, &crate::app::Ptcp)> = w
        .flows
        .iter()
        .enumerate()
        .filter_map(|(i, f)| match &f.app {
            FlowApp::Tcp(t) => t.app.ptcp().map(|x| (i, x)),
            _ => None,
        })
        .collect();
    if !pt.is_empty() {
        super::ptcp::ptcp_tables(&mut r, &pt);
    }

    // traces
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
    r.tables.insert("traces".into(), t);

    // series
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
    r.tables.insert("series".into(), t);

    r.tables
        .insert("drops".into(), super::drops::drops_table(w));
    r.tables
        .insert("queues".into(), super::queues::queues_table(w, measured));
    r.tables.insert(
        "queue_samples".into(),
        super::queues::queue_samples_table(w),
    );

    if let Some(t) = super::trc::table(w) {
        r.tables.insert("trc".into(), t);
    }
    if let Some(t) = super::qosmgr::table(w) {
        r.tables.insert("qosmgr".into(), t);
    }
    if let Some(t) = super::rtt_markers::table(w) {
        r.tables.insert("rtt_markers".into(), t);
    }
    if let Some(t) = delay_histogram_table(w) {
        r.tables.insert("delay_histogram".into(), t);
    }
    if let Some(t) = delays_table(w) {
        r.tables.insert("delays".into(), t);
    }
    if let Some(t) = super::queues::classes_table(w) {
        r.tables.insert("classes".into(), t);
    }
    if let Some(t) = super::queues::colour_drops_table(w) {
        r.tables.insert("colour_drops".into(), t);
    }
    if let Some(t) = super::conditioners::colours_table(w) {
        r.tables.insert("colours".into(), t);
    }
    if let Some(t) = super::queues::colour_samples_table(w) {
        r.tables.insert("queue_colour_samples".into(), t);
    }
    if let Some(t) = flow_classes_table(w) {
        r.tables.insert("flow_classes".into(), t);
    }
    if let Some(t) = super::eruf::quench_table(w) {
        r.tables.insert("quench".into(), t);
    }
    if let Some(t) = super::eruf::eruf_table(w) {
        r.tables.insert("eruf".into(), t);
    }
    if let Some(t) = super::drops::drop_events_table(w) {
        r.tables.insert("drop_events".into(), t);
    }

    let s = &mut r.summary;
    s.insert("name".into(), json!(name));
    let mut warnings = w.warnings.clone();
    queue_rule_outcome(w, &mut warnings);
    warnings.extend(super::eruf::eruf_warnings(w));
    warnings.extend(super::rtt_markers::rto_rule_warnings(w));
    warnings.extend(super::silent::silent_flows_warning(w));
    warnings.extend(super::silent::overflow_all_warnings(w));
    if let Some(log) = w.recorded.drop_log.as_deref() {
        if log.left_out > 0 {
            warnings.push(format!(
                "drop_events kept the first {} drops and marks after the warm-up and left \
                 out {} more (raise record.drop_events_limit to keep them)",
                log.events.len(),
                log.left_out
            ));
        }
    }
    s.insert("warnings".into(), json!(warnings));
    s.insert("seed".into(), json!(seed));
    s.insert("duration".into(), json!(w.end.as_secs_f64()));
    s.insert("warmup".into(), json!(w.warmup.as_secs_f64()));
    s.insert("events".into(), json!(w.events()));
    let kinds = crate::world::EVENT_KINDS.iter().zip(w.events_by_kind());
    let kinds: serde_json::Map<_, _> = kinds.map(|(k, n)| (k.to_string(), json!(n))).collect();
    s.insert("events_by_kind".into(), serde_json::Value::Object(kinds));
    s.insert("packet_hops".into(), json!(w.hops));
    if let Some(log) = w.recorded.drop_log.as_deref() {
        s.insert("drop_events".into(), json!(log.events.len()));
        s.insert("drop_events_left_out".into(), json!(log.left_out));
    }
    s.insert("wall_s".into(), json!(wall_s));
    s.insert("version".into(), json!(env!("CARGO_PKG_VERSION")));
    r
}

/// Adds to each P1 §4.4 queue-rule warning what the queue dropped after the warm-up,
/// so a reader can tell a rule broken on paper from one that cost packets.
fn queue_rule_outcome(w: &World, warnings: &mut [String]) {
    for &(f, k) in &w.queue_rule {
        let i = f.0 as usize;
        let c = w.ifaces[i].counters.since(&w.warm.ifaces[i]);
        let n = c.drops.total_packets();
        if let Some(s) = warnings.get_mut(k) {
            if n == 0 {
                s.push_str("; it dropped no packet after the warm-up");
            } else {
                s.push_str(&format!(
                    "; it dropped {n} packet{} after the warm-up",
                    if n == 1 { "" } else { "s" }
                ));
            }
        }
    }
}

/// Per flow, the DiffServ class of the data packets it delivered after the warm-up:
/// the class the destination's DSCP table gives each DSCP they arrived with (several
/// classes joined by `+`; `none` if nothing arrived) and those DSCPs. `None` when
/// every delivered packet carried DSCP 0 (no DiffServ in the run).
fn flow_classes_table(w: &World) -> Option<Table> {
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
fn delays_table(w: &World) -> Option<Table> {
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
fn delay_histogram_table(w: &World) -> Option<Table> {
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

/// The `telnet` (one row per write) and `telnet_sessions` tables.
fn telnet_tables(r: &mut RunResult, tn: &[(usize, &crate::app::Telnet)]) {
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

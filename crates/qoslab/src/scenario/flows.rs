//! The flows of a scenario: each flow's hosts and times checked, then its application
//! (CBR, Pareto on/off or TCP with one of its applications) and transport built.

use super::build::{at, Names};
use super::model::{AppSpec, FlowSpec, Scenario, TcpAppSpec};
use crate::app::{Cbr, ParetoOnOff, UdpSink};
use crate::config::ScenarioError;
use crate::net::NodeKind;
use crate::packet::NodeId;
use crate::rng::RngStream;
use crate::tcp::{TcpConfig, TcpReceiver, TcpSender};
use crate::time::{Dur, SimTime};
use crate::world::{Flow, FlowApp, FlowCounters, TcpApp, TcpFlow, World, Writer};

/// The key of flow `i`'s setting `k`, as errors name it.
fn key(i: usize, k: &str) -> String {
    format!("flow[{i}].{k}")
}

/// Flows with their applications and transports; returns the nodes routes must reach.
pub(super) fn flows<'a>(
    sc: &'a Scenario,
    w: &mut World,
    names: &mut Names<'a>,
) -> Result<Vec<NodeId>, ScenarioError> {
    let mut dests: Vec<NodeId> = Vec::new();
    for (i, f) in sc.flow.iter().enumerate() {
        let (src, dst) = endpoints(w, names, i, f)?;
        let stop = stop_time(sc, w.end, i, f)?;
        let app = flow_app(sc, i, f, stop)?;
        for (k, d) in [("dscp", f.dscp), ("ack_dscp", f.ack_dscp)] {
            crate::dscp::check_dscp(&key(i, k), d)?;
        }
        dests.push(dst);
        dests.push(src);
        w.flows.push(flow(sc, i, f, (src, dst), app));
    }
    Ok(dests)
}

/// Flow `i`'s sending and receiving hosts, after checking that its name is new and
/// that its ends are two different hosts.
fn endpoints<'a>(
    w: &World,
    names: &mut Names<'a>,
    i: usize,
    f: &'a FlowSpec,
) -> Result<(NodeId, NodeId), ScenarioError> {
    if names.flows.insert(f.name.as_str(), i).is_some() {
        return Err(ScenarioError::new(
            key(i, "name"),
            format!("duplicate flow name {:?}", f.name),
        ));
    }
    let src = names.node(key(i, "from"), &f.from)?;
    let dst = names.node(key(i, "to"), &f.to)?;
    for (k, n) in [("from", src), ("to", dst)] {
        if w.nodes[n.0 as usize].kind != NodeKind::Host {
            return Err(ScenarioError::new(
                key(i, k),
                format!(
                    "expected a host, found router {:?}",
                    w.nodes[n.0 as usize].name
                ),
            ));
        }
    }
    if src == dst {
        return Err(ScenarioError::new(
            key(i, "to"),
            "a flow needs two different hosts",
        ));
    }
    Ok((src, dst))
}

/// When flow `i`'s source stops (the run's `end` unless it says), after checking that
/// it starts before the end and stops after its start.
fn stop_time(
    sc: &Scenario,
    end: SimTime,
    i: usize,
    f: &FlowSpec,
) -> Result<SimTime, ScenarioError> {
    if SimTime::ZERO + f.start >= end {
        return Err(ScenarioError::new(
            key(i, "start"),
            format!(
                "expected a start before the end of the run ({}), found {}",
                sc.duration, f.start
            ),
        ));
    }
    let stop = f.stop.map_or(end, |d| SimTime::ZERO + d);
    if stop <= SimTime::ZERO + f.start {
        return Err(ScenarioError::new(
            key(i, "stop"),
            format!(
                "expected a stop time after the start time ({}), found {}",
                f.start,
                f.stop.unwrap_or(sc.duration)
            ),
        ));
    }
    Ok(stop)
}

/// Whether `record.traces` names flow `f`, after checking that it is a single TCP
/// sender (the only kind a trace follows).
fn traced(sc: &Scenario, f: &FlowSpec) -> Result<bool, ScenarioError> {
    let traced = sc.record.traces.iter().any(|t| t == &f.name);
    if traced {
        let what = match f.tcp_app() {
            None => Some("is not a TCP flow; only TCP senders"),
            Some(TcpAppSpec::Web(_)) => Some("is a web flow; only single TCP senders"),
            Some(TcpAppSpec::Stripe { .. }) => Some("is a striped flow; only single TCP senders"),
            Some(TcpAppSpec::Ptcp { .. }) => Some("is a pTCP flow; only single TCP senders"),
            Some(_) => None,
        };
        if let Some(what) = what {
            return Err(ScenarioError::new(
                "record.traces",
                format!("flow {:?} {what} can be traced", f.name),
            ));
        }
    }
    Ok(traced)
}

/// Flow `i`'s application with its transport, sources stopping at `stop`. Which
/// application tables may sit together was settled when the file was read
/// (`FlowSpec`'s `TryFrom`); what is left are their values.
fn flow_app(
    sc: &Scenario,
    i: usize,
    f: &FlowSpec,
    stop: SimTime,
) -> Result<FlowApp, ScenarioError> {
    let rng = RngStream::derive(sc.seed, &format!("flow/{}", f.name));
    let traced = traced(sc, f)?;
    Ok(match &f.app {
        AppSpec::Tcp { tcp: c, app } => tcp_flow(sc, i, f, c, app, traced)?,
        AppSpec::Cbr(c) => {
            c.validate().map_err(|e| at(key(i, "cbr"), e))?;
            FlowApp::Cbr {
                src: Cbr::new(c, stop, rng),
                sink: UdpSink::default(),
                seq: 0,
                size: c.size,
            }
        }
        AppSpec::Pareto(p) => {
            p.validate().map_err(|e| at(key(i, "pareto"), e))?;
            FlowApp::Pareto {
                src: ParetoOnOff::new(p, stop, rng),
                sink: UdpSink::default(),
                seq: 0,
                size: p.size,
            }
        }
    })
}

/// A TCP flow's sender, receiver and application, after checking the application's
/// values, the transport's and that the flow ends by `bytes`, not by `stop`.
fn tcp_flow(
    sc: &Scenario,
    i: usize,
    f: &FlowSpec,
    c: &TcpConfig,
    app: &TcpAppSpec,
    traced: bool,
) -> Result<FlowApp, ScenarioError> {
    check_tcp_app(i, c, app)?;
    c.validate().map_err(|e| at(key(i, "tcp"), e))?;
    if f.stop.is_some() {
        return Err(ScenarioError::new(
            key(i, "stop"),
            "stop applies to UDP flows; give a TCP flow `bytes` for a finite transfer",
        ));
    }
    let bytes = app.bytes().map(|b| b.0);
    if bytes == Some(0) {
        return Err(ScenarioError::new(
            key(i, "bytes"),
            "expected a positive number of bytes",
        ));
    }
    let app = tcp_app(sc, f, c, app, bytes);
    Ok(FlowApp::Tcp(Box::new(TcpFlow {
        snd: if matches!(app, TcpApp::Writes(_) | TcpApp::Telnet(_)) {
            TcpSender::new_app_limited(c)
        } else {
            TcpSender::new(c, bytes)
        },
        rcv: TcpReceiver::new(c),
        ecn: c.ecn,
        app_reads: c.rcv_buffer.is_some(),
        traced,
        snd_armed: SimTime::NEVER,
        rcv_armed: SimTime::NEVER,
        last_trace: Default::default(),
        app,
        started: false,
        finite: bytes.is_some(),
        done_at: SimTime::NEVER,
    })))
}

/// Checks the values of flow `i`'s TCP application (`c` its transport's settings).
fn check_tcp_app(i: usize, c: &TcpConfig, app: &TcpAppSpec) -> Result<(), ScenarioError> {
    match app {
        TcpAppSpec::Bulk { .. } => {}
        TcpAppSpec::Writes { writes: wr, .. } => {
            if wr.size.0 == 0 {
                return Err(ScenarioError::new(
                    key(i, "writes.size"),
                    "expected a positive number of bytes per write",
                ));
            }
            if wr.every == Dur::ZERO {
                return Err(ScenarioError::new(
                    key(i, "writes.every"),
                    "expected a positive time between writes, found 0",
                ));
            }
        }
        TcpAppSpec::Telnet(tn) => tn.validate().map_err(|e| at(key(i, "telnet"), e))?,
        TcpAppSpec::Web(wb) => wb.validate().map_err(|e| at(key(i, "web"), e))?,
        TcpAppSpec::Stripe { stripe: st, .. } => {
            st.validate().map_err(|e| at(key(i, "stripe"), e))?
        }
        TcpAppSpec::Ptcp { ptcp: pt, .. } => {
            if c.rcv_buffer.is_some() {
                return Err(ScenarioError::new(
                    key(i, "tcp.rcv_buffer"),
                    "a pTCP flow's receive buffer belongs to its engine: set ptcp.recv_buffer instead",
                ));
            }
            pt.validate(c.mss).map_err(|e| at(key(i, "ptcp"), e))?
        }
    }
    Ok(())
}

/// What writes on flow `f`'s connection (`bytes` of it, `None`: unlimited), each
/// random application on its own stream derived from the run seed and the flow name.
fn tcp_app(
    sc: &Scenario,
    f: &FlowSpec,
    c: &TcpConfig,
    app: &TcpAppSpec,
    bytes: Option<u64>,
) -> TcpApp {
    match app {
        TcpAppSpec::Bulk { .. } => TcpApp::Bulk,
        TcpAppSpec::Writes { writes: wr, .. } => TcpApp::Writes(Writer {
            size: wr.size.0,
            every: wr.every,
            left: bytes,
        }),
        TcpAppSpec::Telnet(tn) => {
            let r = RngStream::derive(sc.seed, &format!("telnet/{}", f.name));
            TcpApp::Telnet(Box::new(crate::app::Telnet::new(tn, r)))
        }
        TcpAppSpec::Web(wb) => {
            let r = RngStream::derive(sc.seed, &format!("web/{}", f.name));
            TcpApp::Web(Box::new(crate::app::web::WebFlow::new(wb, c, r)))
        }
        TcpAppSpec::Stripe { stripe: st, .. } => {
            TcpApp::Stripe(Box::new(crate::app::Stripe::new(st, c, bytes)))
        }
        TcpAppSpec::Ptcp { ptcp: pt, .. } => {
            TcpApp::Ptcp(Box::new(crate::app::Ptcp::new(pt, c, bytes)))
        }
    }
}

/// Flow `i` from its spec, hosts and application, with its start time: `start` plus,
/// with `start_jitter`, a draw from the flow's own stream (adding jitter changes
/// nothing else in the run).
fn flow(sc: &Scenario, i: usize, f: &FlowSpec, (src, dst): (NodeId, NodeId), app: FlowApp) -> Flow {
    Flow {
        name: f.name.clone(),
        src,
        dst,
        src_port: f.src_port.unwrap_or(1024 + (i % 60_000) as u16),
        dst_port: f.dst_port.unwrap_or(5001),
        dscp: f.dscp,
        ack_dscp: f.ack_dscp,
        start: SimTime::ZERO
            + f.start
            + if f.start_jitter > Dur::ZERO {
                let mut r = RngStream::derive(sc.seed, &format!("start/{}", f.name));
                Dur::from_nanos(r.below(f.start_jitter.as_nanos()))
            } else {
                Dur::ZERO
            },
        app,
        counters: FlowCounters::default(),
        delays: sc.record.delays.then(Default::default),
        delivered_dscps: crate::cond::DscpSet(0),
    }
}

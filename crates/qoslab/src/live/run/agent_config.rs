//! Each host's agent configuration (JSON): what it listens on, sends, serves, fetches
//! and pings, and the user's programs it runs.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Value};

use super::addr_str;
use crate::live::LiveConfig;
use crate::packet::NodeId;
use crate::scenario::Scenario;
use crate::time::{Dur, SimTime};
use crate::world::{FlowApp, World};

/// Seconds of `d`, as the agent reads times.
fn secs(d: Dur) -> f64 {
    d.as_secs_f64()
}

/// Each host's agent configuration (JSON), in `hosts`' order; the programs' output
/// files go in `work`.
pub(super) fn agent_configs(
    sc: &Scenario,
    w: &World,
    live: &LiveConfig,
    hosts: &[NodeId],
    work: &Path,
) -> Vec<Value> {
    let env = program_env(w, hosts);
    hosts
        .iter()
        .map(|&h| host_config(sc, w, live, h, &env, work))
        .collect()
}

/// What the user's programs see on every host: every host's address
/// (`QOSLAB_ADDR_<host>`) and the run's duration (`QOSLAB_DURATION`).
fn program_env(w: &World, hosts: &[NodeId]) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = hosts
        .iter()
        .map(|&h| {
            let n = &w.nodes[h.0 as usize];
            (format!("QOSLAB_ADDR_{}", n.name), addr_str(n.addr))
        })
        .collect();
    env.insert(
        "QOSLAB_DURATION".into(),
        (w.end - SimTime::ZERO).as_secs_f64().to_string(),
    );
    env
}

/// Host `h`'s agent configuration.
fn host_config(
    sc: &Scenario,
    w: &World,
    live: &LiveConfig,
    h: NodeId,
    env: &BTreeMap<String, String>,
    work: &Path,
) -> Value {
    let flows = flow_entries(sc, w, h);
    let name = &w.nodes[h.0 as usize].name;
    json!({
        "host": name,
        "cc": live.cc.name(),
        "addr": addr_str(w.nodes[h.0 as usize].addr),
        "listen": flows.listen.into_iter().map(|((proto, port), peers)| json!({
            "proto": proto, "port": port, "peers": peers})).collect::<Vec<_>>(),
        "send": flows.send,
        "web_servers": flows.web_servers,
        "web_clients": flows.web_clients,
        "ping": ping_entries(w, live, name),
        "programs": program_entries(w, live, h, env, work),
        "duration": secs(w.end - SimTime::ZERO),
        "warmup": secs(w.warmup - SimTime::ZERO),
        "interval": secs(sc.record.interval),
    })
}

/// A host's part in the scenario's flows.
#[derive(Default)]
struct FlowEntries {
    /// Per (protocol, port) it listens on: the flows' peers it expects there.
    listen: BTreeMap<(String, u16), Vec<Value>>,
    /// The flows it sends.
    send: Vec<Value>,
    /// The web flows it serves.
    web_servers: Vec<Value>,
    /// The web flows it is the client of.
    web_clients: Vec<Value>,
}

/// Host `h`'s part in each of the scenario's flows (not the simulated ones): their
/// sinks, senders, web servers and web clients on it.
fn flow_entries(sc: &Scenario, w: &World, h: NodeId) -> FlowEntries {
    let traced: Vec<&str> = sc.record.traces.iter().map(String::as_str).collect();
    let simulated = crate::live::simulated_flows(sc);
    let mut out = FlowEntries::default();
    for (i, f) in w.flows.iter().enumerate() {
        if simulated[i] {
            continue; // qoslab's own endpoints run it inside the datapath
        }
        let proto = if matches!(f.app, FlowApp::Tcp(_)) {
            "tcp"
        } else {
            "udp"
        };
        if let FlowApp::Tcp(t) = &f.app {
            if t.app.web().is_some() {
                web_entries(sc, w, i, h, &mut out);
                continue;
            }
        }
        if f.dst == h {
            let src = addr_str(w.nodes[f.src.0 as usize].addr);
            out.listen
                .entry((proto.to_string(), f.dst_port))
                .or_default()
                .push(json!({
                    "flow": i, "peer": src, "peer_port": f.src_port,
                    "arrivals": sc.flow[i].telnet().is_some(),
                }));
        }
        if f.src == h {
            let trace = traced.contains(&f.name.as_str());
            out.send.push(send_entry(sc, w, i, proto, trace));
        }
    }
    out
}

/// Web flow `i`'s server or client on host `h` (WWW traffic, P3 §V.D): the server (the
/// flow's source) answers each request with the object the request names; the client
/// (its destination) runs the simulator's model from the state of the simulator's own
/// stream for this flow, so both draw the same sequence of counts, sizes and gaps
/// (docs/live.md, "WWW traffic").
fn web_entries(sc: &Scenario, w: &World, i: usize, h: NodeId, out: &mut FlowEntries) {
    let f = &w.flows[i];
    let spec = &sc.flow[i];
    let FlowApp::Tcp(t) = &f.app else { return };
    let Some(wf) = t.app.web() else { return };
    let src = addr_str(w.nodes[f.src.0 as usize].addr);
    let dst = addr_str(w.nodes[f.dst.0 as usize].addr);
    let request = wf.model.request_bytes();
    if f.src == h {
        out.web_servers.push(json!({
            "flow": i, "port": f.src_port, "client": dst,
            "request": request, "dscp": spec.dscp,
        }));
    }
    if f.dst == h {
        let rng = crate::rng::RngStream::derive(sc.seed, &format!("web/{}", spec.name));
        let cfg = spec.web().expect("a web flow has its web table");
        out.web_clients.push(json!({
            "flow": i, "server": src, "sport": f.src_port, "addr": dst,
            "start": f.start.as_secs_f64(), "mss": wf.tcp.mss,
            "request": request, "sessions": cfg.sessions,
            "inter_session": cfg.inter_session, "pages": cfg.pages,
            "inter_page": cfg.inter_page, "objects": cfg.objects,
            "inter_object": cfg.inter_object,
            "object_size": cfg.object_size,
            // As strings: JSON numbers above 2^53 lose bits.
            "state": rng.state().map(|x| x.to_string()),
        }));
    }
}

/// Flow `i`'s sender (over `proto`; `trace`: sample its `TCP_INFO` each interval).
fn send_entry(sc: &Scenario, w: &World, i: usize, proto: &str, trace: bool) -> Value {
    let f = &w.flows[i];
    let spec = &sc.flow[i];
    let (rate, size) = match (spec.cbr(), spec.pareto()) {
        (Some(c), _) => (c.rate.bps() as f64, c.size as u64),
        (None, Some(p)) => (p.rate.bps() as f64, p.size as u64),
        (None, None) => (0.0, 0),
    };
    let seed = sc.seed.wrapping_mul(1_000_003).wrapping_add(i as u64);
    // Pareto on/off (ns-2's Application/Traffic/Pareto): the agent draws its periods from
    // its own stream seeded by the run's seed and the flow, with the simulator's law (not
    // its sequence).
    let onoff = spec.pareto().map(|p| {
        json!({"mean_on": secs(p.mean_on), "mean_off": secs(p.mean_off),
               "shape": p.shape, "seed": seed})
    });
    // Telnet (P3 §V.D): the agent draws its sessions and writes from the simulator's
    // laws, from its own stream (not the simulator's sequence).
    let telnet = spec.telnet().map(|t| {
        json!({"mean_interval": secs(t.mean_interval), "size_min": t.size_min,
               "size_max": t.size_max, "packets_min": t.packets_min,
               "packets_max": t.packets_max, "mean_idle": secs(t.mean_idle),
               "sessions": t.sessions, "seed": seed})
    });
    json!({
        "telnet": telnet,
        "flow": i, "proto": proto,
        "dst": addr_str(w.nodes[f.dst.0 as usize].addr), "dport": f.dst_port,
        "src": addr_str(w.nodes[f.src.0 as usize].addr), "sport": f.src_port,
        "start": f.start.as_secs_f64(),
        "stop": spec.stop.map(secs), "bytes": spec.bytes().map(|b| b.0),
        "rate": rate, "size": size, "dscp": spec.dscp,
        "trace": trace, "onoff": onoff,
    })
}

/// The user's programs (`[[live.program]]`) that run on host `h`, each with `env`, the
/// host's own name and address, and its output files in `work`.
fn program_entries(
    w: &World,
    live: &LiveConfig,
    h: NodeId,
    env: &BTreeMap<String, String>,
    work: &Path,
) -> Vec<Value> {
    let name = &w.nodes[h.0 as usize].name;
    live.program
        .iter()
        .enumerate()
        .filter(|(_, p)| &p.host == name)
        .map(|(i, p)| {
            let mut env = env.clone();
            env.insert("QOSLAB_HOST".into(), name.clone());
            env.insert("QOSLAB_ADDR".into(), addr_str(w.nodes[h.0 as usize].addr));
            json!({"index": i, "name": p.label(i), "argv": p.argv,
                   "start": secs(p.start), "stop": p.stop.map(secs), "env": env,
                   "out": work.join(format!("program-{i}.out")),
                   "err": work.join(format!("program-{i}.err"))})
        })
        .collect()
}

/// The pings (`[[live.ping]]`) host `name` sends, to hosts that exist.
fn ping_entries(w: &World, live: &LiveConfig, name: &str) -> Vec<Value> {
    live.ping
        .iter()
        .filter(|p| p.from == name)
        .filter_map(|p| {
            let to = w.nodes.iter().find(|n| n.name == p.to)?;
            Some(
                json!({"to": p.to, "dst": addr_str(to.addr), "count": p.count,
                        "interval": secs(p.interval), "start": secs(p.start)}),
            )
        })
        .collect()
}

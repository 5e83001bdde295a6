//! The live runner: namespaces, TUN devices, the agents, the wall-clock datapath and
//! the result tables; everything it creates is removed on the way out.

mod agent_config;
mod agents;
mod app_tables;
mod datapath;
mod datapath_tables;
mod flow_tables;
mod netns;
mod pcap;
mod verdict;
mod writer;

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

pub use netns::{sweep_leftovers, NS_PREFIX};

use super::ipv4::{FlowMap, PROTO_TCP, PROTO_UDP};
use super::{check_live, sys, LiveConfig};
use crate::net::NodeKind;
use crate::packet::{FlowId, NodeId};
use crate::scenario::Scenario;
use crate::stats::RunResult;
use crate::world::{FlowApp, World};
use crate::Error;
use datapath::TunIo;
use pcap::LivePcap;
use verdict::Load;

/// How to run live, beyond the scenario.
#[derive(Clone, Debug, Default)]
pub struct LiveOptions {
    /// The agent program (argv): run inside each namespace with its config file's path
    /// appended; it prints `ready`, starts at `go` on stdin and prints one line of JSON
    /// results at `stop`.
    pub agent: Vec<String>,
    /// Where agent configs and logs go (a temporary folder when `None`).
    pub work_dir: Option<PathBuf>,
    /// Set it to stop the run early (Ctrl-C, SIGTERM).
    pub interrupt: Option<Arc<AtomicBool>>,
}

/// A live run could not start or failed outside the world.
fn live_err(msg: impl Into<String>) -> Error {
    Error::Live(msg.into())
}

/// An IPv4 address in dotted form.
fn addr_str(a: [u8; 4]) -> String {
    format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3])
}

/// Runs `sc` live (see the module doc). Needs root and `/dev/net/tun`.
pub fn run_live(sc: &Scenario, opts: &LiveOptions) -> Result<RunResult, Error> {
    let t0 = std::time::Instant::now();
    check_live(sc)?;
    netns::preflight()?;
    let live = sc.live.clone().unwrap_or_default();
    let mut w = crate::scenario::build(sc)?;
    // Before anything is created: a scenario faster than the datapath is refused.
    let peak = super::check_budget(sc, &w)?;
    w.interrupt = opts.interrupt.clone();
    let swept = sweep_leftovers();
    let work = match &opts.work_dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("{NS_PREFIX}{}", std::process::id())),
    };
    std::fs::create_dir_all(&work).map_err(|e| live_err(format!("{}: {e}", work.display())))?;
    let mut warnings: Vec<String> = w.warnings.clone();
    let mut ran = run_in_namespaces(sc, &live, &mut w, opts, &work, &mut warnings)?;
    let name = sc.name.clone().unwrap_or_else(|| "run".to_string());
    let mut r = crate::stats::collect(&w, &name, sc.seed, t0.elapsed().as_secs_f64());
    insert_tables(&mut r, sc, &live, &w, &ran, &work, &mut warnings);
    insert_summary(&mut r, &live, &ran, swept.len(), peak.map(|p| p.pps));
    simulated_summary(&mut r, sc, &w);
    pcap_summary(&mut r, &mut ran.io, &mut warnings);
    merge_warnings(&mut r, &w, warnings);
    Ok(r)
}

/// What a run in the namespaces left to report, once they are gone.
struct Ran {
    /// The datapath and its counters.
    io: TunIo,
    /// The hosts, in the order of `results` and `tun_stats`.
    hosts: Vec<NodeId>,
    /// (host, key, value) of every sysctl set.
    sysctls: Vec<(String, String, String)>,
    /// Each host's agent results.
    results: Vec<crate::live::protocol::AgentResults>,
    /// Each host's TUN (tx_dropped, tx_packets) as the kernel counted them.
    tun_stats: Vec<(u64, u64)>,
    /// How hard the datapath thread worked.
    load: Load,
    /// Whether the datapath ran under SCHED_FIFO.
    fifo: bool,
}

/// Sets up the hosts' namespaces and agents, runs the world on the wall clock between
/// the agents' `go` and `stop`, reads their results and removes all it created (also
/// on an error); the agents' configs and logs go in `work`.
fn run_in_namespaces(
    sc: &Scenario,
    live: &LiveConfig,
    w: &mut World,
    opts: &LiveOptions,
    work: &std::path::Path,
    warnings: &mut Vec<String>,
) -> Result<Ran, Error> {
    let mut created = netns::Created::default();
    let hosts = route_hosts(w)?;
    let up = netns::set_up(w, live, &hosts, std::process::id(), &mut created)?;
    let simulated = super::simulated_flows(sc);
    let map = flow_map(sc, w, &hosts, &simulated);
    let configs = agent_config::agent_configs(sc, w, live, &hosts, work);
    let named: Vec<(&str, &str, serde_json::Value)> = hosts
        .iter()
        .zip(configs)
        .map(|(&h, cfg)| {
            let i = h.0 as usize;
            (w.nodes[i].name.as_str(), up.ns_of_node[i].as_str(), cfg)
        })
        .collect();
    let mut agents = agents::start(&opts.agent, &named, work, &mut created)?;
    let fifo = raise_priority(warnings);
    let pcap = match live.pcap {
        true => Some(LivePcap::open(
            &work.join("pcap").join("datapath.pcap"),
            live.pcap_snaplen,
        )?),
        false => None,
    };
    let flow_dst = w.flows.iter().map(|f| f.dst).collect();
    let (spin, stop) = (live.spin.as_nanos(), opts.interrupt.clone());
    let mut io = TunIo::new(up.io, up.host_of_node, map, flow_dst, pcap, spin, stop);
    // Measured here, at the datapath's priority, before the clock starts (about 1 ms).
    io.sleep_cost_ns = sys::sleep_cost_ns(50);
    agents::say_all(&mut agents, "go");
    let (ran, mut load) = drive(w, &mut io, fifo, &simulated);
    agents::say_all(&mut agents, "stop");
    let results = agents::results(&agents)?;
    let tun_stats: Vec<(u64, u64)> = hosts
        .iter()
        .map(|&h| netns::tun_drops(&up.ns_of_node[h.0 as usize]))
        .collect();
    drop(created);
    ran?;
    io.close_backlogs(w.end);
    load.spin = live.spin;
    load.max_pps = live.max_pps.unwrap_or(super::DEFAULT_MAX_PPS);
    let sysctls = up.sysctls;
    Ok(Ran {
        io,
        hosts,
        sysctls,
        results,
        tun_stats,
        load,
        fifo,
    })
}

/// The live run's tables (flows from the agents, the datapath's, the verdict's columns,
/// the applications', `live_conns`), the warnings they raise added to `warnings`.
fn insert_tables(
    r: &mut RunResult,
    sc: &Scenario,
    live: &LiveConfig,
    w: &World,
    ran: &Ran,
    work: &std::path::Path,
    warnings: &mut Vec<String>,
) {
    let io = &ran.io;
    flow_tables::insert(
        r,
        w,
        io,
        &ran.results,
        &ran.hosts,
        &super::simulated_flows(sc),
    );
    datapath_tables::timing(r, w, io);
    datapath_tables::hosts(r, w, io, &ran.hosts, &ran.tun_stats);
    datapath_tables::sysctls(r, &ran.sysctls);
    warnings.extend(verdict::timing_verdict(r, w, io, &ran.load));
    warnings.extend(app_tables::program_table(r, live, &ran.results, work));
    if sc.flow.iter().any(|f| f.telnet().is_some()) {
        app_tables::telnet_tables(r, &ran.results);
    }
    if sc.flow.iter().any(|f| f.web().is_some()) {
        app_tables::web_tables(r, &ran.results);
    }
    datapath_tables::conns(r, w, io);
}

/// The summary's `live_*` settings: the peak rate and budget, FIFO, spin, congestion
/// control and how many leftover namespaces were swept.
fn insert_summary(
    r: &mut RunResult,
    live: &LiveConfig,
    ran: &Ran,
    swept: usize,
    peak: Option<f64>,
) {
    if let Some(p) = peak {
        r.summary.insert("live_peak_pps".into(), p.into());
    }
    r.summary
        .insert("live_max_pps".into(), ran.load.max_pps.into());
    r.summary.insert("live".into(), true.into());
    r.summary.insert("live_fifo".into(), ran.fifo.into());
    r.summary.insert(
        "live_spin_us".into(),
        (live.spin.as_nanos() as f64 / 1e3).into(),
    );
    r.summary.insert("live_cc".into(), live.cc.name().into());
    r.summary.insert("live_swept".into(), swept.into());
}

/// With `[live] simulated` flows, `live_simulated_packets`: the packets their own
/// endpoints sent over the whole run (data and ACKs), which the datapath's thread made
/// and carried beside the packets it read from the hosts (`live_injected`).
fn simulated_summary(r: &mut RunResult, sc: &Scenario, w: &World) {
    let simulated = super::simulated_flows(sc);
    if !simulated.contains(&true) {
        return;
    }
    let sent: u64 = (w.flows.iter().zip(&simulated))
        .filter(|(_, &s)| s)
        .map(|(f, _)| f.counters.pkts_sent + f.counters.acks_sent)
        .sum();
    r.summary
        .insert("live_simulated_packets".into(), sent.into());
}

/// Closes the capture file, if any: its name and packets in the summary, a warning if
/// it is incomplete.
fn pcap_summary(r: &mut RunResult, io: &mut TunIo, warnings: &mut Vec<String>) {
    let Some(p) = io.pcap.take() else { return };
    let flushed = p.writer.finish().map(|_| ()).map_err(|e| e.to_string());
    if let Some(e) = p.error.clone().or(flushed.err()) {
        warnings.push(format!("live: pcap/datapath.pcap incomplete: {e}"));
    }
    r.summary
        .insert("live_pcap".into(), "pcap/datapath.pcap".into());
    r.summary
        .insert("live_pcap_packets".into(), p.packets.into());
}

/// The summary's `warnings`: the simulator's (less its "delivered nothing", which would
/// name every flow of a live run: its counters do not count the sockets), then the live
/// run's `warnings`, each once.
fn merge_warnings(r: &mut RunResult, w: &World, warnings: Vec<String>) {
    let mut all_warnings: Vec<serde_json::Value> = match r.summary.remove("warnings") {
        Some(serde_json::Value::Array(v)) => v,
        _ => Vec::new(),
    };
    if let Some(silent) = crate::stats::silent::silent_flows_warning(w) {
        all_warnings.retain(|x| x.as_str() != Some(silent.as_str()));
    }
    for wn in warnings {
        if !all_warnings.iter().any(|x| x.as_str() == Some(&wn)) {
            all_warnings.push(wn.into());
        }
    }
    r.summary.insert("warnings".into(), all_warnings.into());
}

/// The world's hosts, each checked to have exactly one link, with routes computed
/// towards every host, not only the flows' ends: pings and any other traffic between
/// hosts must find their way too (the same routing code as the simulator).
fn route_hosts(w: &mut World) -> Result<Vec<NodeId>, Error> {
    let hosts: Vec<NodeId> = (0..w.nodes.len())
        .filter(|&i| w.nodes[i].kind == NodeKind::Host)
        .map(|i| NodeId(i as u32))
        .collect();
    for &h in &hosts {
        let links = w.ifaces.iter().filter(|f| f.node == h).count();
        if links != 1 {
            return Err(Error::Scenario(crate::config::ScenarioError::new(
                format!("node[{}]", h.0),
                format!(
                    "cannot run live: host {:?} has {links} links (a live host has exactly one)",
                    w.nodes[h.0 as usize].name
                ),
            )));
        }
    }
    let node_ifaces: Vec<Vec<crate::net::IfaceId>> =
        w.nodes.iter().map(|n| n.ifaces.clone()).collect();
    w.routes = crate::net::Routes::compute(w.nodes.len(), &w.ifaces, &node_ifaces, &hosts);
    Ok(hosts)
}

/// The flows' 5-tuples (a web flow: every connection between its server's port and
/// its client), and the hosts' addresses. The simulated flows have none: their packets
/// never cross a TUN, and a kernel socket on the same ports stays the kernel's.
fn flow_map(sc: &Scenario, w: &World, hosts: &[NodeId], simulated: &[bool]) -> FlowMap {
    let nflows = w.flows.len();
    let mut map = FlowMap::new(
        hosts.iter().map(|&h| (w.nodes[h.0 as usize].addr, h)),
        FlowId(nflows as u32),
    );
    for (i, f) in w.flows.iter().enumerate() {
        if simulated[i] {
            continue;
        }
        let proto = if matches!(f.app, FlowApp::Tcp(_)) {
            PROTO_TCP
        } else {
            PROTO_UDP
        };
        let (s, d) = (
            w.nodes[f.src.0 as usize].addr,
            w.nodes[f.dst.0 as usize].addr,
        );
        if sc.flow[i].web().is_some() {
            // A web flow's client opens a connection per object from ports its kernel
            // picks: every connection between the server's port and the client is it.
            map.add_server(proto, (s, f.src_port), d, FlowId(i as u32));
        } else {
            map.add_flow(proto, (s, f.src_port), (d, f.dst_port), FlowId(i as u32));
        }
    }
    map
}

/// Timing for this thread: 1 ns timer slack, real-time priority when permitted (a
/// warning for each it did not get); whether it runs under SCHED_FIFO.
fn raise_priority(warnings: &mut Vec<String>) -> bool {
    if let Err(e) = sys::set_timer_slack_1ns() {
        warnings.push(format!("live: timer slack not set ({e})"));
    }
    let fifo = sys::set_fifo(10).is_ok();
    if !fifo {
        warnings
            .push("live: SCHED_FIFO not permitted; the datapath runs at normal priority".into());
    }
    fifo
}

/// Runs the world on the wall clock through `io`, the `simulated` flows by qoslab's
/// own endpoints, measuring the thread's wall and CPU time and the machine's load; back
/// to the normal scheduler after when `fifo`.
fn drive(
    w: &mut World,
    io: &mut TunIo,
    fifo: bool,
    simulated: &[bool],
) -> (Result<(), crate::world::RunError>, Load) {
    let (wall0, cpu0, jif0) = (
        std::time::Instant::now(),
        sys::thread_cpu_ns(),
        sys::machine_jiffies(),
    );
    // The TUN writes on the other CPU, when there is one (docs/live.md, "The datapath's
    // budget"): the loop keeps its own for its events.
    io.start_writer();
    let external = simulated.iter().map(|&s| !s).collect();
    let ran = w.run_wall_with(io, external, true);
    let cpu_ns = sys::thread_cpu_ns().saturating_sub(cpu0);
    let wall_ns = wall0.elapsed().as_nanos() as u64;
    io.finish_writer();
    // The share of all cores' time the machine spent busy during the run.
    let machine_busy = match (jif0, sys::machine_jiffies()) {
        (Some((b0, a0)), Some((b1, a1))) if a1 > a0 => Some((b1 - b0) as f64 / (a1 - a0) as f64),
        _ => None,
    };
    if fifo {
        let p = libc::sched_param { sched_priority: 0 };
        // SAFETY: back to the normal scheduler for this thread.
        unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &p) };
    }
    let load = Load {
        wall_ns,
        cpu_ns,
        idle_ns: io.idle_ns,
        spin: crate::time::Dur::ZERO,
        max_pps: 0.0,
        machine_busy,
    };
    (ran, load)
}

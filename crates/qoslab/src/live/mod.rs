//! Live mode: the scenario's routers, links, queues and conditioners carry real Linux
//! TCP and UDP between network namespaces (docs/live.md).
//!
//! Each host is a network namespace with one TUN device and a default route through
//! it; a single datapath thread reads the packets the hosts send, hands them to the
//! same [`World`](crate::world::World) the simulator runs (the same `Queue`,
//! `Conditioner` and routing code) driven by the wall clock
//! ([`World::run_wall`](crate::world::World::run_wall)), and writes the packets it
//! delivers to the destination host's TUN, DSCP and CE written back into the bytes.
//! Built-in programs inside the namespaces (the caller's `agent` command) send and
//! sink the scenario's flows with the kernel's own TCP.

use crate::config::ScenarioError;

pub mod ipv4;
pub mod protocol;
#[cfg(target_os = "linux")]
mod run;
#[cfg(target_os = "linux")]
mod sys;

#[cfg(target_os = "linux")]
pub use run::{run_live, sweep_leftovers, LiveOptions, NS_PREFIX};

pub use crate::live_config::{program_found, LinuxCc, LiveConfig, PingSpec, ProgramSpec};

/// The datapath's default budget [packets/s]: 250 Mb/s of 1500-byte TCP segments
/// (20 833 /s) and their delayed ACKs (one per two segments). On qoslab's 2-core
/// development machine a 250 Mb/s flow kept the timing verdict and 1 Gb/s did not; with
/// a load average of 7 (other jobs) `benches/live_datapath.py --budget` kept it at
/// 100 Mb/s and missed it at 250 Mb/s by 22 µs of p99 (docs/live.md).
pub const DEFAULT_MAX_PPS: f64 = 31_250.0;

/// Bytes of a Linux TCP segment on the hosts' 1500-byte MTU.
const TCP_PACKET: f64 = 1500.0;

/// What a scenario's flows can push through the live datapath at most.
#[derive(Clone, Debug, PartialEq)]
pub struct PeakRate {
    /// Packets per second read from the hosts (data and, for TCP, one ACK per two
    /// segments), with every flow at its max-min fair share of the links it crosses.
    pub pps: f64,
    /// The link direction carrying the most of them: its rate's key (`link[3].rate`,
    /// `link[3].rate_b_to_a`), its rate [b/s] and the data packets/s it carries.
    pub link_key: String,
    /// That link direction's rate [b/s].
    pub link_bps: f64,
    /// Data packets per second on that link direction.
    pub link_pps: f64,
}

/// The scenario's peak packet rate through the datapath: each flow at its max-min fair
/// share of the links on its path (a TCP flow wants all it can get, a CBR or Pareto
/// flow its rate), in 1500-byte packets for TCP (plus one ACK per two, Linux's delayed
/// ACKs) and `size`-byte datagrams for UDP. `None` when no flow crosses a link.
pub fn peak_rate(sc: &crate::scenario::Scenario, w: &crate::world::World) -> Option<PeakRate> {
    use crate::packet::NodeId;
    let hosts: Vec<NodeId> = (0..w.nodes.len())
        .filter(|&i| w.nodes[i].kind == crate::net::NodeKind::Host)
        .map(|i| NodeId(i as u32))
        .collect();
    let node_ifaces: Vec<Vec<crate::net::IfaceId>> =
        w.nodes.iter().map(|n| n.ifaces.clone()).collect();
    let routes = crate::net::Routes::compute(w.nodes.len(), &w.ifaces, &node_ifaces, &hosts);
    // Per flow: the interfaces it crosses, what it wants [b/s], its packet size [B].
    let mut paths: Vec<Vec<usize>> = Vec::new();
    let mut want: Vec<f64> = Vec::new();
    let mut size: Vec<f64> = Vec::new();
    let mut tcp: Vec<bool> = Vec::new();
    for (i, f) in w.flows.iter().enumerate() {
        let spec = sc.flow.get(i);
        let (rate, bytes, is_tcp) = match spec.map(|s| (s.cbr(), s.pareto())) {
            Some((Some(c), _)) => (c.rate.bps() as f64, c.size as f64, false),
            Some((None, Some(p))) => (p.rate.bps() as f64, p.size as f64, false),
            _ => (f64::INFINITY, TCP_PACKET, true),
        };
        let mut path = Vec::new();
        let mut at = f.src;
        while at != f.dst && path.len() <= w.nodes.len() {
            let Some(hop) = routes.next_hop(at, f.dst) else {
                break;
            };
            path.push(hop.0 as usize);
            at = w.ifaces[hop.0 as usize].peer;
        }
        paths.push(path);
        want.push(rate);
        size.push(bytes.max(1.0));
        tcp.push(is_tcp);
    }
    // Max-min fair shares by progressive filling.
    let cap: Vec<f64> = w.ifaces.iter().map(|f| f.rate.bps() as f64).collect();
    let mut left = cap.clone();
    let mut share = vec![0.0; paths.len()];
    let mut frozen: Vec<bool> = paths.iter().map(|p| p.is_empty()).collect();
    while frozen.iter().any(|&x| !x) {
        let mut users = vec![0usize; cap.len()];
        for (k, p) in paths.iter().enumerate() {
            if !frozen[k] {
                for &f in p {
                    users[f] += 1;
                }
            }
        }
        // The largest equal increment every unfrozen flow can take.
        let mut step = f64::INFINITY;
        for (f, &u) in users.iter().enumerate() {
            if u > 0 {
                step = step.min(left[f] / u as f64);
            }
        }
        for k in 0..paths.len() {
            if !frozen[k] {
                step = step.min(want[k] - share[k]);
            }
        }
        if !step.is_finite() {
            break;
        }
        for k in 0..paths.len() {
            if !frozen[k] {
                share[k] += step;
                for &f in &paths[k] {
                    left[f] -= step;
                }
            }
        }
        for k in 0..paths.len() {
            let full = paths[k].iter().any(|&f| left[f] <= cap[f] * 1e-9);
            if !frozen[k] && (full || share[k] >= want[k]) {
                frozen[k] = true;
            }
        }
    }
    let mut on_iface = vec![0.0; cap.len()];
    let mut pps = 0.0;
    for k in 0..paths.len() {
        let data = share[k] / (8.0 * size[k]);
        pps += if tcp[k] { data * 1.5 } else { data };
        for &f in &paths[k] {
            on_iface[f] += data;
        }
    }
    // The busiest link direction; of equally busy ones (a flow's path) the slowest, whose
    // rate sets the peak.
    let (busiest, &link_pps) = on_iface
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1).then(cap[b.0].total_cmp(&cap[a.0])))?;
    if link_pps <= 0.0 {
        return None;
    }
    // Links make interfaces in pairs: a->b, then b->a.
    let link_key = match busiest % 2 {
        0 => format!("link[{}].rate", busiest / 2),
        _ => format!("link[{}].rate_b_to_a", busiest / 2),
    };
    Some(PeakRate {
        pps,
        link_key,
        link_bps: cap[busiest],
        link_pps,
    })
}

/// Refuses a scenario whose peak packet rate ([`peak_rate`]) exceeds the datapath's
/// budget (`[live] max_pps`, default [`DEFAULT_MAX_PPS`]), naming the busiest link's key.
pub fn check_budget(
    sc: &crate::scenario::Scenario,
    w: &crate::world::World,
) -> Result<Option<PeakRate>, ScenarioError> {
    let live = sc.live.clone().unwrap_or_default();
    let budget = live.max_pps.unwrap_or(DEFAULT_MAX_PPS);
    if !(budget.is_finite() && budget > 0.0) {
        return Err(ScenarioError::new(
            "live.max_pps",
            format!("must be a positive number of packets per second, found {budget}"),
        ));
    }
    let Some(peak) = peak_rate(sc, w) else {
        return Ok(None);
    };
    if peak.pps > budget {
        let given = match live.max_pps {
            Some(_) => "as set by live.max_pps".to_string(),
            None => "the default live.max_pps: 250 Mb/s of 1500-byte packets and their ACKs, \
                     what benches/live_datapath.py --budget measured on a 2-core machine"
                .to_string(),
        };
        return Err(ScenarioError::new(
            peak.link_key.clone(),
            format!(
                "cannot run live: at {} Mb/s this link carries up to {:.0} packets/s and the \
                 scenario's flows {:.0} packets/s through the datapath, over its budget of \
                 {budget:.0} packets/s ({given}); the run would be limited by the datapath's \
                 CPU, not by the link. Lower the rate, or set live.max_pps to what \
                 benches/live_datapath.py --budget measures on this machine",
                fmt_mbps(peak.link_bps),
                peak.link_pps,
                peak.pps,
            ),
        ));
    }
    Ok(Some(peak))
}

/// A rate in Mb/s without trailing zeros (`20000`, `0.5`).
fn fmt_mbps(bps: f64) -> String {
    let s = format!("{:.3}", bps / 1e6);
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The longest `[live] spin`: beyond it the datapath would mostly spin, not sleep.
pub const MAX_SPIN: crate::time::Dur = crate::time::Dur::from_millis(5);

/// Per flow of `sc`: whether `[live] simulated` names it (qoslab's own endpoints run
/// it inside the datapath).
pub fn simulated_flows(sc: &crate::scenario::Scenario) -> Vec<bool> {
    let names = sc.live.as_ref().map_or(&[][..], |l| &l.simulated[..]);
    sc.flow.iter().map(|f| names.contains(&f.name)).collect()
}

/// Refuses a `[live] simulated` entry that names no flow, or a flow twice.
fn check_simulated(sc: &crate::scenario::Scenario) -> Result<(), ScenarioError> {
    let names = sc.live.as_ref().map_or(&[][..], |l| &l.simulated[..]);
    for (i, n) in names.iter().enumerate() {
        let key = format!("live.simulated[{i}]");
        if !sc.flow.iter().any(|f| &f.name == n) {
            return Err(ScenarioError::new(key, format!("no flow is called {n:?}")));
        }
        if names[..i].contains(n) {
            return Err(ScenarioError::new(
                key,
                format!("flow {n:?} is named twice"),
            ));
        }
    }
    Ok(())
}

/// Refuses what cannot run live, naming the key: in flows the hosts' kernels run (not
/// `[live] simulated`), qoslab's own TCP variants and applications (MulTCP and the
/// other increase rules, pTCP, striping, periodic writes); source quench (Linux
/// ignores it), the P0 QoS-manager triggers only the sender's stack sees, and hosts
/// with more than one link.
pub fn check_live(sc: &crate::scenario::Scenario) -> Result<(), ScenarioError> {
    let refuse =
        |key: String, why: &str| Err(ScenarioError::new(key, format!("cannot run live: {why}")));
    check_simulated(sc)?;
    let simulated = simulated_flows(sc);
    for (i, f) in sc.flow.iter().enumerate() {
        if simulated[i] {
            continue; // qoslab's own endpoints run it, whatever it is
        }
        let k = |s: &str| format!("flow[{i}].{s}");
        match f.tcp_app() {
            Some(crate::scenario::TcpAppSpec::Ptcp { .. }) => {
                return refuse(
                    k("ptcp"),
                    "pTCP is qoslab's own transport; name the flow in live.simulated",
                );
            }
            Some(crate::scenario::TcpAppSpec::Stripe { .. }) => {
                return refuse(
                    k("stripe"),
                    "striping is qoslab's own application; name the flow in live.simulated",
                );
            }
            Some(crate::scenario::TcpAppSpec::Writes { .. }) => {
                return refuse(
                    k("writes"),
                    "periodic writes are not built into the live sender yet; name the flow in live.simulated",
                );
            }
            _ => {}
        }
        if let Some(t) = f.tcp() {
            match t.cc {
                crate::tcp::CcConfig::Reno => {}
                crate::tcp::CcConfig::MulTcp { .. } => {
                    return refuse(
                        k("tcp.cc"),
                        "MulTCP is qoslab's own congestion control; set live.cc, or name the flow in live.simulated",
                    )
                }
                _ => {
                    return refuse(
                        k("tcp.cc"),
                        "this increase rule is qoslab's own; set live.cc",
                    )
                }
            }
        }
    }
    // A web flow's server listens on its source port at its source host (its clients
    // connect from ports their kernel picks): no other TCP socket there may take that
    // port (the defaults, as the build gives them, never do).
    let sport = |i: usize| sc.flow[i].src_port.unwrap_or(1024 + (i % 60_000) as u16);
    for (i, w) in sc.flow.iter().enumerate() {
        if w.web().is_none() || simulated[i] {
            continue;
        }
        let clash = sc.flow.iter().enumerate().find(|&(j, f)| {
            j != i
                && !simulated[j]
                && f.tcp().is_some()
                && ((f.from == w.from && sport(j) == sport(i))
                    || (f.web().is_none()
                        && f.to == w.from
                        && f.dst_port.unwrap_or(5001) == sport(i)))
        });
        if let Some((j, _)) = clash {
            return refuse(
                format!("flow[{i}].src_port"),
                &format!(
                    "the web server's port {} on host {:?} is taken by flow[{j}]'s socket there",
                    sport(i),
                    w.from
                ),
            );
        }
    }
    for (i, n) in sc.node.iter().enumerate() {
        if n.source_quench.is_some() {
            return refuse(
                format!("node[{i}].source_quench"),
                "Linux ignores ICMP source quench",
            );
        }
    }
    // P0's QoS managers run in the datapath at their host's edge: a data segment read
    // from the host's TUN is what TCP's output released (the `send` trigger), an ACK
    // written to it is the `ack` / `dupack` trigger, and the timer is the datapath's.
    // What only the sender's stack sees cannot trigger them (P0 §6.3).
    for (i, m) in sc.qosmgr.iter().enumerate() {
        for (j, t) in m.triggers.iter().enumerate() {
            let why = match t {
                crate::qosmgr::Trigger::IdleAck => {
                    "whether TCP sent data after an ACK is inside the sender's stack"
                }
                crate::qosmgr::Trigger::ClosedSend => {
                    "a write on a closed window is inside the sender's stack"
                }
                crate::qosmgr::Trigger::NewConn => {
                    "a new connection (its SYN) is visible but not built into the datapath yet"
                }
                _ => continue,
            };
            return refuse(format!("qosmgr[{i}].triggers[{j}]"), why);
        }
    }
    if let Some(l) = sc.live.as_ref().filter(|l| l.pcap_snaplen < 64) {
        return Err(ScenarioError::new(
            "live.pcap_snaplen",
            format!("must be at least 64 bytes, found {}", l.pcap_snaplen),
        ));
    }
    let programs = sc.live.as_ref().map_or(&[][..], |l| &l.program[..]);
    let path = std::env::var_os("PATH");
    for (i, p) in programs.iter().enumerate() {
        let k = |s: &str| format!("live.program[{i}].{s}");
        let host = sc.node.iter().find(|n| n.name == p.host);
        if !host.is_some_and(|n| n.kind == crate::net::NodeKind::Host) {
            let why = match host {
                Some(_) => format!("{:?} is a router, not a host", p.host),
                None => format!("no node is called {:?}", p.host),
            };
            return Err(ScenarioError::new(k("host"), why));
        }
        let Some(prog) = p.argv.first() else {
            return Err(ScenarioError::new(
                k("argv"),
                "must name a program: [\"program\", \"arg\", …]",
            ));
        };
        if !program_found(prog, path.as_deref()) {
            return Err(ScenarioError::new(
                k("argv"),
                format!(
                    "no program {prog:?} {}: install it or give its full path",
                    if prog.contains('/') {
                        "(no executable file there)"
                    } else {
                        "on this machine's PATH"
                    }
                ),
            ));
        }
        if p.stop.is_some_and(|s| s <= p.start) {
            return Err(ScenarioError::new(
                k("stop"),
                format!("must come after start ({})", p.start),
            ));
        }
    }
    if let Some(l) = sc.live.as_ref().filter(|l| l.spin > MAX_SPIN) {
        return Err(ScenarioError::new(
            "live.spin",
            format!(
                "must be at most {MAX_SPIN} (a core spent waiting), found {}",
                l.spin
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(extra: &str) -> Result<crate::scenario::Scenario, crate::config::ScenarioError> {
        let text = format!(
            "duration = \"1s\"\n[[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n\
             [[link]]\na = \"a\"\nb = \"b\"\nrate = \"10Mbps\"\ndelay = \"1ms\"\n{extra}"
        );
        crate::scenario::parse(&text, crate::scenario::Format::Toml)
    }

    #[test]
    fn live_table_keys_and_defaults() {
        let sc = scenario("[live]\ncc = \"cubic\"\necn = true\nrmem = \"8MB\"\nping = [{ from = \"a\", to = \"b\", count = 3 }]\n").unwrap();
        let l = sc.live.unwrap();
        assert_eq!(
            (l.cc, l.ecn, l.sack, l.timestamps),
            (LinuxCc::Cubic, Some(true), true, true)
        );
        assert_eq!(
            (l.rmem.0, l.wmem.0, l.txqueuelen),
            (8_000_000, 32 << 20, 10_000)
        );
        assert_eq!(
            (l.ping[0].count, l.ping[0].interval),
            (3, crate::time::Dur::from_millis(50))
        );
        let e = scenario("[live]\ncc = \"vegas\"\n").unwrap_err();
        assert!(e.to_string().contains("live.cc"), "{e}");
        let e = scenario("[live]\nbuffers = 1\n").unwrap_err();
        assert!(e.to_string().contains("buffers"), "{e}");
        assert!(!l.pcap && l.pcap_snaplen == 128 && l.rack_tlp);
        let l = scenario("[live]\nrack_tlp = false\n")
            .unwrap()
            .live
            .unwrap();
        assert!(!l.rack_tlp);
        let l = scenario("[live]\npcap = true\npcap_snaplen = 1500\n")
            .unwrap()
            .live
            .unwrap();
        assert!(l.pcap && l.pcap_snaplen == 1500);
        let small = scenario("[live]\npcap = true\npcap_snaplen = 63\n").unwrap();
        assert_eq!(check_live(&small).unwrap_err().key, "live.pcap_snaplen");
        assert_eq!(l.spin, crate::time::Dur::ZERO);
        let l = scenario("[live]\nspin = \"300us\"\n")
            .unwrap()
            .live
            .unwrap();
        assert_eq!(l.spin, crate::time::Dur::from_micros(300));
        let long = scenario("[live]\nspin = \"6ms\"\n").unwrap();
        assert_eq!(check_live(&long).unwrap_err().key, "live.spin");
        assert_eq!(l.max_pps, None);
        // The simulator ignores the table: a scenario without it has none.
        assert!(scenario("").unwrap().live.is_none());
    }

    #[test]
    fn refuses_what_cannot_be_live_naming_the_key() {
        let ok = scenario("[[flow]]\nname = \"t\"\nfrom = \"a\"\nto = \"b\"\ntcp = {}\n").unwrap();
        assert!(check_live(&ok).is_ok());
        let m = scenario("[[flow]]\nname = \"t\"\nfrom = \"a\"\nto = \"b\"\ntcp = { cc = { kind = \"multcp\", w = 2 } }\n").unwrap();
        assert_eq!(check_live(&m).unwrap_err().key, "flow[0].tcp.cc");
        // A web flow runs live, unless its server's port is another socket's there.
        let web = "[[flow]]\nname = \"w\"\nfrom = \"a\"\nto = \"b\"\ntcp = {}\nweb = {}\n";
        let bulk = |port: &str| {
            format!("[[flow]]\nname = \"t\"\nfrom = \"b\"\nto = \"a\"\ntcp = {{}}\n{port}")
        };
        assert!(check_live(&scenario(&format!("{web}{}", bulk(""))).unwrap()).is_ok());
        let taken = scenario(&format!("{web}{}", bulk("dst_port = 1024\n"))).unwrap();
        let e = check_live(&taken).unwrap_err();
        assert_eq!(e.key, "flow[0].src_port");
        assert!(e.to_string().contains("port 1024") && e.to_string().contains("flow[1]"));
        let p =
            scenario("[[flow]]\nname = \"t\"\nfrom = \"a\"\nto = \"b\"\nptcp = { pipes = 2 }\n");
        if let Ok(p) = p {
            assert_eq!(check_live(&p).unwrap_err().key, "flow[0].ptcp");
        }
        // Named in `[live] simulated`, qoslab's own endpoints run it: accepted.
        let pt = "[[flow]]\nname = \"pt\"\nfrom = \"a\"\nto = \"b\"\ntcp = {}\n\
                  ptcp = { pipes = 2 }\n[[flow]]\nname = \"m\"\nfrom = \"a\"\nto = \"b\"\n\
                  tcp = { cc = { kind = \"multcp\", w = 2 } }\n";
        let sim = |names: &str| scenario(&format!("{pt}[live]\nsimulated = {names}\n")).unwrap();
        assert_eq!(check_live(&sim("[]")).unwrap_err().key, "flow[0].ptcp");
        assert_eq!(
            check_live(&sim("[\"pt\"]")).unwrap_err().key,
            "flow[1].tcp.cc"
        );
        assert!(check_live(&sim("[\"pt\", \"m\"]")).is_ok());
        assert_eq!(simulated_flows(&sim("[\"m\"]")), vec![false, true]);
        let e = check_live(&sim("[\"pt\", \"q\"]")).unwrap_err();
        assert_eq!(e.key, "live.simulated[1]");
        assert!(e.to_string().contains("\"q\""), "{e}");
        let e = check_live(&sim("[\"pt\", \"m\", \"pt\"]")).unwrap_err();
        assert_eq!(e.key, "live.simulated[2]");
        // P0's QoS managers run in the datapath; triggers only the sender sees do not.
        let mgr = |triggers: &str| {
            scenario(&format!(
                "[[flow]]\nname = \"t\"\nfrom = \"a\"\nto = \"b\"\ntcp = {{}}\n\
                 [[qosmgr]]\nat = \"a\"\nprofile = {{ rate = \"1Mbps\", burst = \"10KB\" }}\n\
                 action = \"shape\"\nsharing = \"partitioned\"\n{triggers}"
            ))
            .unwrap()
        };
        assert!(check_live(&mgr("")).is_ok());
        assert!(check_live(&mgr("triggers = [\"send\", \"ack\", \"dupack\"]\n")).is_ok());
        for t in ["idle_ack", "closed_send", "new_conn"] {
            let e = check_live(&mgr(&format!("triggers = [\"send\", \"{t}\"]\n"))).unwrap_err();
            assert_eq!(e.key, "qosmgr[0].triggers[1]", "{t}");
        }
    }

    fn budget_of(text: &str) -> Result<Option<PeakRate>, ScenarioError> {
        let sc = crate::scenario::parse(text, crate::scenario::Format::Toml).unwrap();
        let w = crate::scenario::build(&sc).unwrap();
        check_budget(&sc, &w)
    }

    /// a — r — b with `rate` on r—b, 100 Mb/s on a—r, and `flows`.
    fn chain(rate: &str, flows: &str, live: &str) -> String {
        format!(
            "duration = \"1s\"\n[[node]]\nname = \"a\"\n[[node]]\nname = \"r\"\nkind = \"router\"\n\
             [[node]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"r\"\nrate = \"100Mbps\"\ndelay = \"1ms\"\n\
             [[link]]\na = \"b\"\nb = \"r\"\nrate = \"{rate}\"\ndelay = \"1ms\"\n{flows}{live}"
        )
    }

    #[test]
    fn a_link_faster_than_the_datapath_is_refused_naming_it_and_the_budget() {
        // The review's case: one 20 Gb/s link carrying one TCP flow.
        let one = "duration = \"1s\"\n[[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n\
                   [[link]]\na = \"a\"\nb = \"b\"\nrate = \"20Gbps\"\ndelay = \"1ms\"\n\
                   [[flow]]\nname = \"t\"\nfrom = \"a\"\nto = \"b\"\ntcp = {}\n";
        let e = budget_of(one).unwrap_err();
        assert_eq!(e.key, "link[0].rate", "{e}");
        let msg = e.to_string();
        assert!(
            msg.contains("31250 packets/s") && msg.contains("live.max_pps"),
            "{msg}"
        );
        assert!(
            msg.contains("20000 Mb/s") && msg.contains("2500000 packets/s"),
            "{msg}"
        );
        // Set knowingly (the forwarding benchmark does), the budget lets it run.
        let set = format!("{one}[live]\nmax_pps = 5e6\n");
        let p = budget_of(&set).unwrap().unwrap();
        assert!((p.pps - 20e9 / 12_000.0 * 1.5).abs() < 1.0, "{p:?}");
        let bad = format!("{one}[live]\nmax_pps = 0\n");
        assert_eq!(budget_of(&bad).unwrap_err().key, "live.max_pps");
    }

    #[test]
    fn the_peak_is_each_flow_at_its_fair_share_of_its_path() {
        let tcp = "[[flow]]\nname = \"t\"\nfrom = \"a\"\nto = \"b\"\ntcp = {}\n";
        // A 10 Mb/s bottleneck behind a 100 Mb/s access link: the flow gets 10 Mb/s.
        let p = budget_of(&chain("10Mbps", tcp, "")).unwrap().unwrap();
        assert!((p.pps - 10e6 / 12_000.0 * 1.5).abs() < 1e-6, "{p:?}");
        // The bottleneck is b's link, written b -> r: its r -> b direction is rate_b_to_a.
        assert_eq!(p.link_key, "link[1].rate_b_to_a");
        // A 2 Gb/s link behind the 100 Mb/s one does not raise the peak.
        let p = budget_of(&chain("2Gbps", tcp, "")).unwrap().unwrap();
        assert!((p.pps - 100e6 / 12_000.0 * 1.5).abs() < 1e-6, "{p:?}");
        assert_eq!(p.link_key, "link[0].rate");
        // A CBR flow counts at its own rate and datagram size, TCP takes what is left.
        let both = format!(
            "{tcp}[[flow]]\nname = \"u\"\nfrom = \"a\"\nto = \"b\"\ncbr = {{ rate = \"2Mbps\", size = 500 }}\n"
        );
        let p = budget_of(&chain("10Mbps", &both, "")).unwrap().unwrap();
        let want = 2e6 / 4_000.0 + 8e6 / 12_000.0 * 1.5;
        assert!((p.pps - want).abs() < 1e-6, "{p:?} vs {want}");
        // 300 Mb/s of TCP is over the default budget (250 Mb/s of it).
        let fast = chain("300Mbps", tcp, "").replace("100Mbps", "1Gbps");
        assert_eq!(budget_of(&fast).unwrap_err().key, "link[1].rate_b_to_a");
        let slow = chain("240Mbps", tcp, "").replace("100Mbps", "1Gbps");
        assert!(budget_of(&slow).is_ok());
    }

    #[test]
    fn a_program_is_checked_naming_its_key() {
        let prog = |p: &str| {
            scenario(&format!("[live]\nprogram = [{p}]\n"))
                .map(|sc| check_live(&sc).map_err(|e| (e.key.clone(), e.to_string())))
        };
        assert!(prog("{ host = \"a\", argv = [\"sh\", \"-c\", \"true\"] }")
            .unwrap()
            .is_ok());
        let (key, msg) = prog("{ host = \"a\", argv = [\"qoslab-no-such-program\"] }")
            .unwrap()
            .unwrap_err();
        assert_eq!(key, "live.program[0].argv");
        assert!(
            msg.contains("qoslab-no-such-program") && msg.contains("PATH"),
            "{msg}"
        );
        let (key, _) = prog("{ host = \"a\", argv = [\"/nonexistent/iperf3\"] }")
            .unwrap()
            .unwrap_err();
        assert_eq!(key, "live.program[0].argv");
        let (key, _) = prog("{ host = \"c\", argv = [\"sh\"] }")
            .unwrap()
            .unwrap_err();
        assert_eq!(key, "live.program[0].host");
        let (key, _) = prog("{ host = \"a\", argv = [] }").unwrap().unwrap_err();
        assert_eq!(key, "live.program[0].argv");
        let (key, _) = prog("{ host = \"a\", argv = [\"sh\"], start = \"2s\", stop = \"1s\" }")
            .unwrap()
            .unwrap_err();
        assert_eq!(key, "live.program[0].stop");
        assert!(prog("{ host = \"a\", argv = [\"sh\"], args = 1 }").is_err());
        let sc = scenario("[live]\nprogram = [{ host = \"b\", argv = [\"sh\"] }]\n").unwrap();
        assert_eq!(sc.live.unwrap().program[0].label(0), "b-0");
    }
}

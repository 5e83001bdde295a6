//! The live runner: namespaces, TUN devices, the agents, the wall-clock datapath and
//! the result tables; everything it creates is removed on the way out.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use super::ipv4::{self, FlowMap, PROTO_TCP, PROTO_UDP};
use super::{check_live, sys, LiveConfig};
use crate::engine::{Lateness, WallClock};
use crate::net::NodeKind;
use crate::packet::{Ecn, FlowId, NodeId, Packet};
use crate::stats::{insert_telnet_tables, Column, RunResult, Table, TelnetRow};
use crate::time::{Dur, SimTime};
use crate::world::{FlowApp, WallIo, World};
use crate::Error;

/// Every namespace live mode creates is called `<NS_PREFIX><owner pid>-<host index>`.
pub const NS_PREFIX: &str = "qlab";
/// The TUN device's name inside a host's namespace.
const TUN: &str = "qtun0";
/// Packets whose bytes the datapath keeps while the world carries them (a ring: a
/// packet still in the network after this many newer ones lost its bytes).
const RING: usize = 1 << 16;
/// Bytes each ring slot holds without growing: the TUN's MTU (1500) and room to spare.
const SLOT: usize = 2048;
/// p99 lateness above this flags the run (the bound).
const P99_BOUND: Dur = Dur::from_micros(100);
/// p99.9 lateness above this flags the run.
const P999_BOUND: Dur = Dur::from_millis(2);
/// Packets read from one host per round of the loop.
const BATCH: usize = 64;
/// A loop busy (not idle) more than this share of the run was behind or CPU-bound.
const BUSY_BOUND: f64 = 0.9;
/// A thread using at least this share of a core while busy was CPU-bound (less: other
/// processes had the core).
const CPU_BOUND: f64 = 0.7;
/// A host's TUN backlogged more than this share of the run is a standing queue …
const BACKLOG_BOUND: f64 = 0.25;
/// … and its link short of the rate when it carried less than this share of it.
const RATE_SHORT: f64 = 0.9;

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

fn ip(args: &[&str]) -> Result<(), Error> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| live_err(format!("cannot run `ip`: {e}")))?;
    if !out.status.success() {
        return Err(live_err(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// Removes the namespaces (and the processes in them) of live runs whose owner is
/// gone (a SIGKILLed run); returns their names. Only names of the form
/// `qlab<pid>-<n>` whose pid no longer exists are touched.
pub fn sweep_leftovers() -> Vec<String> {
    let mut removed = Vec::new();
    let Ok(dir) = std::fs::read_dir("/run/netns") else {
        return removed;
    };
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = owner_pid(&name) else {
            continue;
        };
        if pid == std::process::id() as i32 || sys::pid_alive(pid) {
            continue;
        }
        kill_ns_processes(&name);
        if ip(&["netns", "del", &name]).is_ok() {
            removed.push(name);
        }
    }
    removed
}

/// The owner pid in a live namespace's name, if it is one.
fn owner_pid(name: &str) -> Option<i32> {
    let rest = name.strip_prefix(NS_PREFIX)?;
    let (pid, host) = rest.split_once('-')?;
    if pid.is_empty() || host.is_empty() || !host.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    pid.parse().ok()
}

/// SIGKILLs every process inside namespace `ns` (ours: the agents).
fn kill_ns_processes(ns: &str) {
    if let Ok(out) = Command::new("ip").args(["netns", "pids", ns]).output() {
        for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
            if let Ok(p) = pid.parse::<i32>() {
                sys::kill(p, libc::SIGKILL);
            }
        }
    }
}

/// What the run created; dropping it removes all of it (agents first, then the
/// namespaces, which takes their TUN devices with them).
#[derive(Default)]
struct Created {
    namespaces: Vec<String>,
    agents: Vec<Child>,
}

impl Drop for Created {
    fn drop(&mut self) {
        for c in &mut self.agents {
            let _ = c.kill();
            let _ = c.wait();
        }
        for ns in &self.namespaces {
            kill_ns_processes(ns);
            let _ = ip(&["netns", "del", ns]);
        }
    }
}

/// One host's TUN and counters.
struct HostIo {
    node: NodeId,
    fd: OwnedFd,
    rx: u64,
    tx: u64,
    tx_failed: u64,
    rejected: u64,
    /// Bytes read from and written to the TUN.
    rx_bytes: u64,
    tx_bytes: u64,
    /// Since when the TUN has held more packets than one read round takes (a standing
    /// queue in front of the host's link), and for how long in all [ns].
    backlog_since: Option<SimTime>,
    backlog_ns: u64,
}

impl HostIo {
    /// A host's counters, all zero.
    fn new(node: NodeId, fd: OwnedFd) -> HostIo {
        HostIo {
            node,
            fd,
            rx: 0,
            tx: 0,
            tx_failed: 0,
            rejected: 0,
            rx_bytes: 0,
            tx_bytes: 0,
            backlog_since: None,
            backlog_ns: 0,
        }
    }
}

/// The datapath's capture file (`[live] pcap`).
struct LivePcap {
    writer: crate::capture::pcap::PcapWriter<std::io::BufWriter<std::fs::File>>,
    snaplen: u32,
    packets: u64,
    error: Option<String>,
}

impl LivePcap {
    fn open(path: &std::path::Path, snaplen: u32) -> Result<LivePcap, Error> {
        let err = |e: std::io::Error| live_err(format!("{}: {e}", path.display()));
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d).map_err(err)?;
        }
        let f = std::fs::File::create(path).map_err(err)?;
        let writer = crate::capture::pcap::PcapWriter::with_linktype(
            std::io::BufWriter::with_capacity(1 << 20, f),
            snaplen,
            crate::capture::pcap::LINKTYPE_RAW,
        )
        .map_err(err)?;
        Ok(LivePcap {
            writer,
            snaplen,
            packets: 0,
            error: None,
        })
    }

    /// Records one delivered packet; the first write error stops the capture.
    fn record(&mut self, t: SimTime, bytes: &[u8]) {
        if self.error.is_some() {
            return;
        }
        match self
            .writer
            .record(t, bytes, bytes.len() as u32, self.snaplen)
        {
            Ok(()) => self.packets += 1,
            Err(e) => self.error = Some(e.to_string()),
        }
    }
}

/// The datapath's I/O: the hosts' TUN devices and the bytes of the packets in flight.
struct TunIo {
    hosts: Vec<HostIo>,
    host_of_node: Vec<Option<usize>>,
    pollfds: Vec<libc::pollfd>,
    map: FlowMap,
    ring: Vec<(u64, Vec<u8>)>,
    next_uid: u64,
    buf: Vec<u8>,
    /// Packets whose bytes were overwritten in the ring before delivery.
    ring_lost: u64,
    /// Per flow (+ one for other traffic): packets delivered with CE, TCP ACKs with ECE.
    ce_delivered: Vec<u64>,
    ece_acks: Vec<u64>,
    /// Lateness of the TUN writes behind the delivery's scheduled time.
    write_late: Lateness,
    /// `[live] pcap`: the delivered packets' bytes, stamped with their delivery time.
    pcap: Option<LivePcap>,
    clock_now: Option<WallClock>,
    /// `[live] spin` [ns]: closer than this to the next event, poll without sleeping.
    spin_ns: u64,
    stop: Option<Arc<AtomicBool>>,
    flow_dst: Vec<NodeId>,
    /// Wall time the loop spent with nothing due (asleep, or spinning before an
    /// event) [ns]: the rest of the run it was working or behind.
    idle_ns: u64,
    /// What one sleep costs this thread in CPU [ns] ([`sys::sleep_cost_ns`]): a wait no
    /// longer than this polls the hosts without sleeping (a sleep would cost as much CPU
    /// and wake late). 0: every wait longer than `[live] spin` sleeps.
    sleep_cost_ns: u64,
    /// Waits that slept (armed a timer), and the time the loop spent polling without
    /// sleeping [ns] (part of `idle_ns`).
    sleeps: u64,
    polled_ns: u64,
    /// The last wait ended on a poll that found a host readable: its `revents` say which
    /// hosts to read (the others would only answer EAGAIN).
    polled_ready: bool,
    /// How late the thread woke from a sleep that ran to its timeout, behind the time
    /// it asked for: the machine's wake-up latency, which `[live] spin` hides.
    wake_late: Lateness,
    /// Traffic that is none of the scenario's flows (the user's programs, pings), per
    /// 5-tuple as the datapath saw it.
    conns: BTreeMap<ConnKey, ConnStats>,
}

/// (protocol, source address, source port, destination address, destination port).
type ConnKey = (u8, [u8; 4], u16, [u8; 4], u16);

/// Packets and bytes of one 5-tuple through the datapath.
#[derive(Clone, Copy, Debug, Default)]
struct ConnStats {
    read: u64,
    read_bytes: u64,
    delivered: u64,
    delivered_bytes: u64,
    /// TCP or UDP payload bytes delivered (retransmissions included).
    payload_delivered: u64,
}

/// The 5-tuple of a parsed packet.
fn conn_key(i: &ipv4::Ipv4Info) -> ConnKey {
    (i.proto, i.src, i.src_port, i.dst, i.dst_port)
}

/// Payload bytes of a parsed TCP segment or UDP datagram (0 for others).
fn payload(i: &ipv4::Ipv4Info) -> u64 {
    match (i.tcp, i.proto) {
        (Some(t), _) => t.2 as u64,
        (None, PROTO_UDP) => (i.size as u64).saturating_sub(28),
        _ => 0,
    }
}

impl TunIo {
    /// The datapath over `hosts` (their TUN devices), with `flow_dst` the destination
    /// host of each of the scenario's flows.
    fn new(
        hosts: Vec<HostIo>,
        host_of_node: Vec<Option<usize>>,
        map: FlowMap,
        mut flow_dst: Vec<NodeId>,
        pcap: Option<LivePcap>,
        spin_ns: u64,
        stop: Option<Arc<AtomicBool>>,
    ) -> TunIo {
        let nflows = flow_dst.len();
        flow_dst.push(NodeId(u32::MAX));
        TunIo {
            pollfds: hosts
                .iter()
                .map(|h| libc::pollfd {
                    fd: h.fd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                })
                .collect(),
            hosts,
            host_of_node,
            map,
            // Each slot holds a full-size packet from the start: no allocation (and no
            // page faults) per packet read while the clock runs.
            ring: (0..RING)
                .map(|_| (u64::MAX, Vec::with_capacity(SLOT)))
                .collect(),
            next_uid: 0,
            buf: vec![0; 65_536],
            ring_lost: 0,
            ce_delivered: vec![0; nflows + 1],
            ece_acks: vec![0; nflows + 1],
            write_late: Lateness::default(),
            pcap,
            clock_now: None,
            spin_ns,
            stop,
            flow_dst,
            idle_ns: 0,
            sleep_cost_ns: 0,
            sleeps: 0,
            polled_ns: 0,
            polled_ready: false,
            wake_late: Lateness::default(),
            conns: BTreeMap::new(),
        }
    }
}

impl WallIo for TunIo {
    fn wait(&mut self, clock: &WallClock, until: SimTime) {
        self.clock_now = Some(*clock);
        self.polled_ready = false;
        let now = clock.now();
        // Wake at least every 50 ms to see a stop request.
        let limit = Dur::from_millis(50).as_nanos();
        let ns = until.as_nanos().saturating_sub(now.as_nanos()).min(limit);
        if ns == 0 {
            return;
        }
        // A wait within `spin`, or no longer than a sleep would cost this thread in CPU,
        // polls the hosts until the event instead: no more CPU than sleeping it, and
        // without the wake-up's latency.
        if ns <= self.spin_ns.max(self.sleep_cost_ns) {
            let mut ready = false;
            let mut t;
            loop {
                if sys::poll_in(&mut self.pollfds, Some(0)) {
                    ready = true;
                }
                t = clock.now();
                if ready || t.saturating_since(now).as_nanos() >= ns {
                    break;
                }
                std::hint::spin_loop();
            }
            let polled = t.saturating_since(now).as_nanos();
            self.idle_ns += polled;
            self.polled_ns += polled;
            self.polled_ready = ready;
            return;
        }
        // Sleep, waking `spin` early: the next wait polls the hosts until it is due.
        let asked = ns - self.spin_ns;
        self.sleeps += 1;
        let woke = sys::poll_in(&mut self.pollfds, Some(asked));
        self.polled_ready = woke;
        let slept = clock.now().saturating_since(now);
        self.idle_ns += slept.as_nanos();
        if !woke {
            let over = slept.as_nanos().saturating_sub(asked);
            self.wake_late.record(Dur::from_nanos(over));
        }
    }

    fn read(&mut self, clock: &WallClock, into: &mut Vec<Packet>) {
        let only_ready = std::mem::take(&mut self.polled_ready);
        for h in 0..self.hosts.len() {
            // Right after a poll, a host it found empty is left for the next round (a
            // packet that came since waits a few µs; it enters the network when read).
            if only_ready && self.pollfds[h].revents == 0 && self.hosts[h].backlog_since.is_none() {
                continue;
            }
            // A bounded batch per host per round, so one busy host cannot starve events.
            let mut got = 0;
            for _ in 0..BATCH {
                let fd = self.hosts[h].fd.as_raw_fd();
                let n = match sys::read_packet(fd, &mut self.buf) {
                    Ok(Some(n)) => n,
                    _ => break,
                };
                // Stamped as it is read: the time it enters the network.
                let now = clock.now();
                let host = &mut self.hosts[h];
                host.rx += 1;
                host.rx_bytes += n as u64;
                got += 1;
                let b = &self.buf[..n];
                let info = match ipv4::parse(b) {
                    Ok(i) => i,
                    Err(_) => {
                        host.rejected += 1;
                        continue;
                    }
                };
                let uid = self.next_uid;
                let pkt = match self.map.packet(&info, host.node, uid, now) {
                    Ok(p) => p,
                    Err(_) => {
                        host.rejected += 1;
                        continue;
                    }
                };
                self.next_uid += 1;
                if pkt.flow == self.map.other {
                    let c = self.conns.entry(conn_key(&info)).or_default();
                    c.read += 1;
                    c.read_bytes += n as u64;
                }
                if let Some((_, _, _, flags, _)) = info.tcp {
                    let f = pkt.flow.0 as usize;
                    let from_receiver = self.flow_dst.get(f) == Some(&pkt.src);
                    if flags & 0x40 != 0 && flags & 0x02 == 0 && from_receiver {
                        self.ece_acks[f] += 1;
                    }
                }
                let slot = &mut self.ring[uid as usize % RING];
                slot.0 = uid;
                slot.1.clear();
                slot.1.extend_from_slice(b);
                into.push(pkt);
            }
            // A full batch left packets waiting in the TUN: a standing queue in front
            // of the host's link, until a round drains it.
            let now = clock.now();
            let host = &mut self.hosts[h];
            match (got == BATCH, host.backlog_since) {
                (true, None) => host.backlog_since = Some(now),
                (false, Some(from)) => {
                    host.backlog_ns += now.saturating_since(from).as_nanos();
                    host.backlog_since = None;
                }
                _ => {}
            }
        }
    }

    fn deliver(&mut self, now: SimTime, pkt: &Packet) {
        if let Some(c) = &self.clock_now {
            self.write_late.record(c.now().saturating_since(now));
        }
        let slot = &mut self.ring[pkt.uid as usize % RING];
        if slot.0 != pkt.uid {
            self.ring_lost += 1;
            return;
        }
        ipv4::write_back(&mut slot.1, pkt.dscp, pkt.ecn);
        if pkt.flow == self.map.other {
            if let Ok(info) = ipv4::parse(&slot.1) {
                let c = self.conns.entry(conn_key(&info)).or_default();
                c.delivered += 1;
                c.delivered_bytes += slot.1.len() as u64;
                c.payload_delivered += payload(&info);
            }
        }
        if pkt.ecn == Ecn::Ce {
            let last = self.ce_delivered.len() - 1;
            self.ce_delivered[(pkt.flow.0 as usize).min(last)] += 1;
        }
        let Some(h) = self.host_of_node.get(pkt.dst.0 as usize).copied().flatten() else {
            return;
        };
        if let Some(p) = &mut self.pcap {
            p.record(now, &slot.1);
        }
        let host = &mut self.hosts[h];
        if sys::write_packet(host.fd.as_raw_fd(), &slot.1) {
            host.tx += 1;
            host.tx_bytes += slot.1.len() as u64;
        } else {
            host.tx_failed += 1;
        }
    }

    fn stop(&self) -> bool {
        self.stop
            .as_ref()
            .is_some_and(|s| s.load(Ordering::Relaxed))
    }
}

fn addr_str(a: [u8; 4]) -> String {
    format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3])
}

/// A running agent: its stdin and the lines it prints.
struct Agent {
    host: String,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
}

impl Agent {
    fn expect(&self, what: &str, timeout: Duration) -> Result<String, Error> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) if l.starts_with(what) => return Ok(l),
                Ok(_) => continue,
                Err(_) => {
                    return Err(live_err(format!(
                    "the agent in host {} did not say {what:?} within {timeout:?} (see its log)",
                    self.host
                )))
                }
            }
        }
    }
}

/// Runs `sc` live (see the module doc). Needs root and `/dev/net/tun`.
pub fn run_live(sc: &crate::scenario::Scenario, opts: &LiveOptions) -> Result<RunResult, Error> {
    let t0 = std::time::Instant::now();
    check_live(sc)?;
    preflight()?;
    let live = sc.live.clone().unwrap_or_default();
    let mut w = crate::scenario::build(sc)?;
    // Before anything is created: a scenario faster than the datapath is refused.
    let peak = super::check_budget(sc, &w)?;
    w.interrupt = opts.interrupt.clone();
    let swept = sweep_leftovers();
    let pid = std::process::id();
    let work = match &opts.work_dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("{NS_PREFIX}{pid}")),
    };
    std::fs::create_dir_all(&work).map_err(|e| live_err(format!("{}: {e}", work.display())))?;
    let mut created = Created::default();
    let mut warnings: Vec<String> = w.warnings.clone();

    // Hosts: one namespace each, with its TUN towards its one link.
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
    // Routes towards every host, not only the flows' ends: pings and any other traffic
    // between hosts must find their way too (the same routing code as the simulator).
    let node_ifaces: Vec<Vec<crate::net::IfaceId>> =
        w.nodes.iter().map(|n| n.ifaces.clone()).collect();
    w.routes = crate::net::Routes::compute(w.nodes.len(), &w.ifaces, &node_ifaces, &hosts);
    let ecn_hosts = ecn_hosts(&w);
    let mut sysctls: Vec<(String, String, String)> = Vec::new();
    let mut io_hosts = Vec::new();
    let mut host_of_node = vec![None; w.nodes.len()];
    let mut ns_of_node = vec![String::new(); w.nodes.len()];
    for &h in &hosts {
        let node = &w.nodes[h.0 as usize];
        let ns = format!("{NS_PREFIX}{pid}-{}", h.0);
        ip(&["netns", "add", &ns])?;
        created.namespaces.push(ns.clone());
        let ecn = live.ecn.unwrap_or(ecn_hosts.contains(&h));
        let (rmem, wmem) = (live.rmem.0, live.wmem.0);
        let mut set: Vec<(&str, String)> = vec![
            ("net.ipv6.conf.all.disable_ipv6", "1".into()),
            ("net.ipv6.conf.default.disable_ipv6", "1".into()),
            ("net.ipv4.tcp_ecn", (ecn as u8).to_string()),
            ("net.ipv4.tcp_sack", (live.sack as u8).to_string()),
            (
                "net.ipv4.tcp_timestamps",
                (live.timestamps as u8).to_string(),
            ),
            ("net.ipv4.tcp_no_metrics_save", "1".into()),
            ("net.ipv4.tcp_rmem", format!("4096 131072 {rmem}")),
            ("net.ipv4.tcp_wmem", format!("4096 16384 {wmem}")),
        ];
        if !live.rack_tlp {
            set.push(("net.ipv4.tcp_recovery", "0".into()));
            set.push(("net.ipv4.tcp_early_retrans", "0".into()));
        }
        set_sysctls(&ns, &set)?;
        for (k, v) in set {
            sysctls.push((node.name.clone(), k.to_string(), v));
        }
        // A namespace may only default to a congestion control the host allows
        // (`tcp_allowed_congestion_control`, global; not ours to change): otherwise the
        // agents set it on every socket (TCP_CONGESTION, permitted to root).
        let cc_key = "net.ipv4.tcp_congestion_control";
        let how = match set_sysctls(&ns, &[(cc_key, live.cc.name().into())]) {
            Ok(()) => live.cc.name().to_string(),
            Err(_) => format!(
                "(not permitted; TCP_CONGESTION={} on every socket)",
                live.cc.name()
            ),
        };
        sysctls.push((node.name.clone(), cc_key.to_string(), how));
        let fd = sys::in_netns(&ns, || sys::open_tun(TUN))
            .map_err(|e| live_err(format!("TUN in {ns}: {e}")))?;
        let a = addr_str(node.addr);
        ip(&["-n", &ns, "link", "set", "lo", "up"])?;
        ip(&["-n", &ns, "addr", "add", &format!("{a}/32"), "dev", TUN])?;
        let txq = live.txqueuelen.to_string();
        ip(&[
            "-n",
            &ns,
            "link",
            "set",
            TUN,
            "txqueuelen",
            &txq,
            "mtu",
            "1500",
            "up",
        ])?;
        ip(&["-n", &ns, "route", "add", "default", "dev", TUN])?;
        host_of_node[h.0 as usize] = Some(io_hosts.len());
        ns_of_node[h.0 as usize] = ns;
        io_hosts.push(HostIo::new(h, fd));
    }

    // The flows' 5-tuples.
    let nflows = w.flows.len();
    let mut map = FlowMap::new(
        hosts.iter().map(|&h| (w.nodes[h.0 as usize].addr, h)),
        FlowId(nflows as u32),
    );
    for (i, f) in w.flows.iter().enumerate() {
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

    // Agents: one per host, started and ready before the clock starts.
    let configs = agent_configs(sc, &w, &live, &hosts, &work);
    let mut agents = Vec::new();
    for (&h, cfg) in hosts.iter().zip(&configs) {
        let name = &w.nodes[h.0 as usize].name;
        let path = work.join(format!("agent-{name}.json"));
        std::fs::write(&path, cfg.to_string())
            .map_err(|e| live_err(format!("{}: {e}", path.display())))?;
        let log = std::fs::File::create(work.join(format!("agent-{name}.log")))
            .map_err(|e| live_err(format!("agent log: {e}")))?;
        if opts.agent.is_empty() {
            return Err(live_err("no agent program given"));
        }
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &ns_of_node[h.0 as usize]])
            .args(&opts.agent)
            .arg(&path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log);
        // SAFETY: prctl only, between fork and exec: the agent dies with this thread.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(
                    libc::PR_SET_PDEATHSIG,
                    libc::SIGKILL as libc::c_ulong,
                    0,
                    0,
                    0,
                );
                Ok(())
            });
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| live_err(format!("cannot start the agent: {e}")))?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = child.stdout.take().expect("piped");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        created.agents.push(child);
        agents.push(Agent {
            host: name.clone(),
            stdin,
            lines: rx,
        });
    }
    for a in &agents {
        a.expect("ready", Duration::from_secs(30))?;
    }

    // Timing: 1 ns timer slack, real-time priority when permitted.
    if let Err(e) = sys::set_timer_slack_1ns() {
        warnings.push(format!("live: timer slack not set ({e})"));
    }
    let fifo = sys::set_fifo(10).is_ok();
    if !fifo {
        warnings
            .push("live: SCHED_FIFO not permitted; the datapath runs at normal priority".into());
    }
    let pcap = match live.pcap {
        true => Some(LivePcap::open(
            &work.join("pcap").join("datapath.pcap"),
            live.pcap_snaplen,
        )?),
        false => None,
    };
    let mut io = TunIo::new(
        io_hosts,
        host_of_node,
        map,
        w.flows.iter().map(|f| f.dst).collect(),
        pcap,
        live.spin.as_nanos(),
        opts.interrupt.clone(),
    );
    // Measured here, at the datapath's priority, before the clock starts (about 1 ms).
    io.sleep_cost_ns = sys::sleep_cost_ns(50);
    for a in &mut agents {
        let _ = a.stdin.write_all(b"go\n");
        let _ = a.stdin.flush();
    }
    let (wall0, cpu0, jif0) = (
        std::time::Instant::now(),
        sys::thread_cpu_ns(),
        sys::machine_jiffies(),
    );
    let ran = w.run_wall(&mut io, true);
    let cpu_ns = sys::thread_cpu_ns().saturating_sub(cpu0);
    let wall_ns = wall0.elapsed().as_nanos() as u64;
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
    for a in &mut agents {
        let _ = a.stdin.write_all(b"stop\n");
        let _ = a.stdin.flush();
    }
    let mut results = Vec::new();
    let mut typed = Vec::new();
    for a in &agents {
        let line = a.expect("{", Duration::from_secs(10))?;
        let v: serde_json::Value = serde_json::from_str(&line)
            .map_err(|e| live_err(format!("agent in {}: bad result line: {e}", a.host)))?;
        typed.push(super::protocol::parse(&a.host, &v).map_err(live_err)?);
        results.push(v);
    }
    let tun_stats: Vec<(u64, u64)> = hosts
        .iter()
        .map(|&h| tun_drops(&ns_of_node[h.0 as usize]))
        .collect();
    drop(created);
    ran?;

    let name = sc.name.clone().unwrap_or_else(|| "run".to_string());
    let mut r = crate::stats::collect(&w, &name, sc.seed, t0.elapsed().as_secs_f64());
    let end = w.end;
    for h in &mut io.hosts {
        if let Some(from) = h.backlog_since.take() {
            h.backlog_ns += end.saturating_since(from).as_nanos();
        }
    }
    fill_live_tables(&mut r, &w, &io, &typed, &hosts, &tun_stats, &sysctls);
    let load = Load {
        wall_ns,
        cpu_ns,
        idle_ns: io.idle_ns,
        spin: live.spin,
        max_pps: live.max_pps.unwrap_or(super::DEFAULT_MAX_PPS),
        machine_busy,
    };
    warnings.extend(timing_verdict(&mut r, &w, &io, &load));
    warnings.extend(program_table(&mut r, &live, &results, &work));
    if sc.flow.iter().any(|f| f.telnet().is_some()) {
        telnet_tables(&mut r, &results);
    }
    if sc.flow.iter().any(|f| f.web().is_some()) {
        web_tables(&mut r, &results);
    }
    conns_table(&mut r, &w, &io);
    if let Some(p) = &peak {
        r.summary.insert("live_peak_pps".into(), p.pps.into());
    }
    r.summary.insert("live_max_pps".into(), load.max_pps.into());
    r.summary.insert("live".into(), true.into());
    r.summary.insert("live_fifo".into(), fifo.into());
    r.summary.insert(
        "live_spin_us".into(),
        (live.spin.as_nanos() as f64 / 1e3).into(),
    );
    r.summary.insert("live_cc".into(), live.cc.name().into());
    r.summary.insert("live_swept".into(), swept.len().into());
    if let Some(p) = io.pcap.take() {
        let flushed = p.writer.finish().map(|_| ()).map_err(|e| e.to_string());
        if let Some(e) = p.error.clone().or(flushed.err()) {
            warnings.push(format!("live: pcap/datapath.pcap incomplete: {e}"));
        }
        r.summary
            .insert("live_pcap".into(), "pcap/datapath.pcap".into());
        r.summary
            .insert("live_pcap_packets".into(), p.packets.into());
    }
    let mut all_warnings: Vec<serde_json::Value> = match r.summary.remove("warnings") {
        Some(serde_json::Value::Array(v)) => v,
        _ => Vec::new(),
    };
    // The simulator's flow counters do not count a live run's sockets: its "delivered
    // nothing" warning would name every flow of every live run.
    if let Some(silent) = crate::stats::silent::silent_flows_warning(&w) {
        all_warnings.retain(|x| x.as_str() != Some(silent.as_str()));
    }
    for wn in warnings {
        if !all_warnings.iter().any(|x| x.as_str() == Some(&wn)) {
            all_warnings.push(wn.into());
        }
    }
    r.summary.insert("warnings".into(), all_warnings.into());
    Ok(r)
}

/// The `telnet` and `telnet_sessions` tables of a live run, as the simulator's: each
/// write the sender's agent made (session, time, size) with its delay until the
/// receiving application had read its last byte, from the sink's arrival times (both
/// agents stamp with the machine's monotonic clock; times from the sender's start).
fn telnet_tables(r: &mut RunResult, results: &[serde_json::Value]) {
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
fn web_tables(r: &mut RunResult, results: &[serde_json::Value]) {
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
fn program_table(
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

/// The `live_conns` table: traffic that is none of the scenario's flows (the user's
/// programs, pings), per 5-tuple as the datapath saw it, with the hosts at its ends.
fn conns_table(r: &mut RunResult, w: &World, io: &TunIo) {
    let host_name = |a: [u8; 4]| {
        io.map
            .host(a)
            .map_or(String::new(), |n| w.nodes[n.0 as usize].name.clone())
    };
    let secs = (w.end - SimTime::ZERO).as_secs_f64().max(1e-9);
    let rows: Vec<(&ConnKey, &ConnStats)> = io.conns.iter().collect();
    let proto = |p: u8| match p {
        PROTO_TCP => "tcp".to_string(),
        PROTO_UDP => "udp".to_string(),
        ipv4::PROTO_ICMP => "icmp".to_string(),
        p => p.to_string(),
    };
    let mut t = Table::default();
    t.push(
        "proto",
        Column::Str(rows.iter().map(|(k, _)| proto(k.0)).collect()),
    );
    t.push(
        "src",
        Column::Str(rows.iter().map(|(k, _)| addr_str(k.1)).collect()),
    );
    t.push(
        "sport",
        Column::Int(rows.iter().map(|(k, _)| k.2 as i64).collect()),
    );
    t.push(
        "dst",
        Column::Str(rows.iter().map(|(k, _)| addr_str(k.3)).collect()),
    );
    t.push(
        "dport",
        Column::Int(rows.iter().map(|(k, _)| k.4 as i64).collect()),
    );
    t.push(
        "src_host",
        Column::Str(rows.iter().map(|(k, _)| host_name(k.1)).collect()),
    );
    t.push(
        "dst_host",
        Column::Str(rows.iter().map(|(k, _)| host_name(k.3)).collect()),
    );
    let int =
        |f: fn(&ConnStats) -> u64| Column::Int(rows.iter().map(|(_, c)| f(c) as i64).collect());
    t.push("pkts_sent", int(|c| c.read));
    t.push("bytes_sent", int(|c| c.read_bytes));
    t.push("pkts_delivered", int(|c| c.delivered));
    t.push("bytes_delivered", int(|c| c.delivered_bytes));
    t.push("payload_delivered", int(|c| c.payload_delivered));
    t.push(
        "delivered_bps",
        Column::Float(
            rows.iter()
                .map(|(_, c)| c.delivered_bytes as f64 * 8.0 / secs)
                .collect(),
        ),
    );
    r.tables.insert("live_conns".into(), t);
}

/// How hard the datapath thread worked during the run.
struct Load {
    /// Wall time of the run [ns].
    wall_ns: u64,
    /// CPU time the datapath thread used [ns].
    cpu_ns: u64,
    /// Wall time the loop had nothing due [ns].
    idle_ns: u64,
    /// `[live] spin`.
    spin: Dur,
    /// The packet budget the run was checked against.
    max_pps: f64,
    /// The share of all cores' time the machine was busy during the run.
    machine_busy: Option<f64>,
}

/// The run's timing verdict (`live_timing_ok`, `live_timing_cause`) from the lateness
/// bounds, how busy the datapath was and whether every backlogged host link carried
/// its rate; returns the warnings, each with the advice that fits its cause.
fn timing_verdict(r: &mut RunResult, w: &World, io: &TunIo, load: &Load) -> Vec<String> {
    let mut warnings = Vec::new();
    let wall = load.wall_ns.max(1) as f64;
    let busy = (1.0 - load.idle_ns as f64 / wall).clamp(0.0, 1.0);
    let cpu = load.cpu_ns as f64 / wall;
    let secs = (w.end - SimTime::ZERO).as_secs_f64().max(1e-9);
    // Per host: the share of the run packets stood in its TUN, and what its link carried.
    let mut short = Vec::new();
    let (mut backlog, mut carried, mut rates, mut links) = (vec![], vec![], vec![], vec![]);
    for h in &io.hosts {
        let frac = h.backlog_ns as f64 / 1e9 / secs;
        let f = w.ifaces.iter().position(|f| f.node == h.node);
        let (out, rate, name) = f.map_or((0.0, 0.0, String::new()), |i| {
            let f = &w.ifaces[i];
            let key = match i % 2 {
                0 => format!("link[{}].rate", i / 2),
                _ => format!("link[{}].rate_b_to_a", i / 2),
            };
            let out = f.counters.departed_bytes as f64 * 8.0 / secs;
            (out, f.rate.bps() as f64, format!("{} ({key})", f.name))
        });
        if frac > BACKLOG_BOUND && rate > 0.0 && out < RATE_SHORT * rate {
            short.push(format!(
                "link {name} carried {:.3} Mb/s, {:.1} % of its {:.3} Mb/s, while packets \
                 waited in host {:?}'s TUN for {:.0} % of the run",
                out / 1e6,
                100.0 * out / rate,
                rate / 1e6,
                w.nodes[h.node.0 as usize].name,
                100.0 * frac
            ));
        }
        backlog.push(frac);
        carried.push(out);
        rates.push(rate);
        links.push(name);
    }
    if let Some(t) = r.tables.get_mut("live_hosts") {
        t.push("link", Column::Str(links));
        t.push("link_rate_bps", Column::Float(rates));
        t.push("link_out_bps", Column::Float(carried));
        t.push("backlog_frac", Column::Float(backlog));
    }
    let lateness_ok = r.summary.get("live_timing_ok") == Some(&serde_json::Value::Bool(true));
    let pps = io.hosts.iter().map(|h| h.rx).sum::<u64>() as f64 / secs;
    let wake_p99 = io.wake_late.quantile(0.99).unwrap_or(0);
    let machine = load.machine_busy.unwrap_or(f64::NAN);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cause = if busy > BUSY_BOUND && cpu >= CPU_BOUND {
        warnings.push(format!(
            "live: the datapath thread was busy {:.0} % of the run on {cpu:.2} of a core \
             ({pps:.0} packets/s read from the hosts): it is CPU-bound, so the links' \
             rates and delays were not kept; `[live] spin` cannot help a saturated core. \
             Lower the rates to what it carried, or run on a faster machine (the \
             scenario's peak was checked against live.max_pps = {:.0} packets/s; \
             benches/live_datapath.py --budget measures this machine's)",
            100.0 * busy,
            load.max_pps
        ));
        "cpu-bound"
    } else if busy > BUSY_BOUND {
        warnings.push(format!(
            "live: the datapath thread was behind {:.0} % of the run but got only {cpu:.2} \
             of a core: other processes took its CPU (load average {:.2}); `[live] spin` \
             would take more of it. Run on a quieter machine",
            100.0 * busy,
            sys::load_average()
        ));
        "cpu-starved"
    } else if !short.is_empty() {
        "rate not achieved"
    } else if lateness_ok {
        "ok"
    } else if wake_p99 > P99_BOUND.as_nanos() {
        let advice = if load.spin > Dur::ZERO {
            format!(
                "it already spins {} before each event; see validation/live_spin.py",
                load.spin
            )
        } else {
            "`[live] spin = \"100us\"` keeps events on time for some CPU \
             (validation/live_spin.py measures both ways)"
                .to_string()
        };
        warnings.push(format!(
            "live: timing out of bounds (p99 > 100 µs or p99.9 > 2 ms): see live_timing; \
             the thread woke from its sleeps {:.0} µs late (p99), so its events ran late: \
             {advice}",
            wake_p99 as f64 / 1e3
        ));
        "wake-up latency"
    } else {
        // Woken on time, and not behind most of the run: the events came late in bursts
        // of work (rounds of packets, each TUN write running the receiving host's TCP),
        // on a machine whose cores the hosts' TCP and other processes share.
        warnings.push(format!(
            "live: timing out of bounds (p99 > 100 µs or p99.9 > 2 ms): see live_timing; \
             the thread woke on time (p99 {:.0} µs) but fell behind in bursts of work \
             ({pps:.0} packets/s read from the hosts, {cpu:.2} of a core; the machine's \
             {cores} cores were {:.0} % busy, load average {:.2}): the datapath and the \
             hosts' TCP need more CPU than they had, which `[live] spin` does not give. \
             Lower the rates or the number of flows, or run on a quieter or faster machine",
            wake_p99 as f64 / 1e3,
            100.0 * machine,
            sys::load_average()
        ));
        "cpu-bursts"
    };
    for s in &short {
        warnings.push(format!(
            "live: a configured rate was not achieved: {s}; the datapath did not keep up \
             (see live_hosts: its thread was busy {:.0} % of the run on {cpu:.2} of a core, \
             the machine's {cores} cores {:.0} % busy, {pps:.0} packets/s read from the \
             hosts), which `[live] spin` does not change: lower the rate to what it \
             carried, or run on a quieter or faster machine (the scenario's peak was \
             checked against live.max_pps = {:.0} packets/s; benches/live_datapath.py \
             --budget measures this machine's)",
            100.0 * busy,
            100.0 * machine,
            load.max_pps
        ));
    }
    let ok = lateness_ok && cause == "ok";
    r.summary.insert("live_timing_ok".into(), ok.into());
    r.summary
        .insert("live_lateness_ok".into(), lateness_ok.into());
    r.summary.insert("live_timing_cause".into(), cause.into());
    r.summary.insert("live_busy".into(), busy.into());
    r.summary.insert("live_cpu".into(), cpu.into());
    r.summary.insert("live_pps".into(), pps.into());
    r.summary
        .insert("live_wake_p99_us".into(), (wake_p99 as f64 / 1e3).into());
    // Per packet read from the hosts: the thread's CPU, and its wall time working (not
    // asleep or polling for its next event; under SCHED_FIFO other processes do not take
    // it, so this is the datapath's cost on a loaded machine too) [µs].
    let read = io.hosts.iter().map(|h| h.rx).sum::<u64>().max(1) as f64;
    let work_ns = load.wall_ns.saturating_sub(load.idle_ns) as f64;
    r.summary.insert(
        "live_cpu_us_per_packet".into(),
        (load.cpu_ns as f64 / read / 1e3).into(),
    );
    r.summary.insert(
        "live_work_us_per_packet".into(),
        (work_ns / read / 1e3).into(),
    );
    r.summary.insert(
        "live_sleep_cost_us".into(),
        (io.sleep_cost_ns as f64 / 1e3).into(),
    );
    r.summary.insert("live_sleeps".into(), io.sleeps.into());
    r.summary
        .insert("live_polled".into(), (io.polled_ns as f64 / wall).into());
    r.summary
        .insert("live_machine_busy".into(), load.machine_busy.into());
    r.summary.insert(
        "live_rate_short".into(),
        serde_json::Value::from(short.clone()),
    );
    warnings
}

/// Root and `/dev/net/tun`, or an error saying which is missing.
fn preflight() -> Result<(), Error> {
    let mut missing = Vec::new();
    if sys::euid() != 0 {
        missing.push("root (namespaces and TUN devices need CAP_NET_ADMIN and CAP_SYS_ADMIN)");
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        missing.push("/dev/net/tun");
    }
    if Command::new("ip").arg("-V").output().is_err() {
        missing.push("the `ip` command (iproute2)");
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(Error::LiveUnavailable(format!(
            "live mode needs {}",
            missing.join(" and ")
        )))
    }
}

fn set_sysctls(ns: &str, set: &[(&str, String)]) -> Result<(), Error> {
    let args: Vec<String> = set.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "sysctl", "-q", "-w"])
        .args(&args)
        .output()
        .map_err(|e| live_err(format!("sysctl: {e}")))?;
    if !out.status.success() {
        return Err(live_err(format!(
            "sysctl in {ns} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// (tx_dropped, tx_packets) of a host's TUN device, from `ip -s`.
fn tun_drops(ns: &str) -> (u64, u64) {
    let Ok(out) = Command::new("ip")
        .args(["-n", ns, "-s", "-j", "link", "show", "dev", TUN])
        .output()
    else {
        return (0, 0);
    };
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    let tx = &v[0]["stats64"]["tx"];
    (
        tx["dropped"].as_u64().unwrap_or(0),
        tx["packets"].as_u64().unwrap_or(0),
    )
}

/// Hosts at either end of a TCP flow with ECN on.
fn ecn_hosts(w: &World) -> Vec<NodeId> {
    let mut v = Vec::new();
    for f in &w.flows {
        if let FlowApp::Tcp(t) = &f.app {
            if t.ecn {
                v.push(f.src);
                v.push(f.dst);
            }
        }
    }
    v
}

/// Each host's agent configuration (JSON): what it listens on, sends and pings.
fn agent_configs(
    sc: &crate::scenario::Scenario,
    w: &World,
    live: &LiveConfig,
    hosts: &[NodeId],
    work: &std::path::Path,
) -> Vec<serde_json::Value> {
    use serde_json::json;
    // The user's programs see every host's address: QOSLAB_ADDR_<host>.
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
    let secs = |d: Dur| d.as_secs_f64();
    let traced: Vec<&str> = sc.record.traces.iter().map(String::as_str).collect();
    hosts
        .iter()
        .map(|&h| {
            let mut listen: BTreeMap<(String, u16), Vec<serde_json::Value>> = BTreeMap::new();
            let mut send = Vec::new();
            let mut web_servers = Vec::new();
            let mut web_clients = Vec::new();
            for (i, f) in w.flows.iter().enumerate() {
                let spec = &sc.flow[i];
                let tcp = matches!(f.app, FlowApp::Tcp(_));
                let proto = if tcp { "tcp" } else { "udp" };
                let src = addr_str(w.nodes[f.src.0 as usize].addr);
                let dst = addr_str(w.nodes[f.dst.0 as usize].addr);
                let web = match &f.app {
                    FlowApp::Tcp(t) => t.app.web(),
                    _ => None,
                };
                if let Some(wf) = web {
                    // WWW traffic (P3 §V.D): the server (the flow's source) answers each
                    // request with the object the request names; the client (its
                    // destination) runs the simulator's model from the state of the
                    // simulator's own stream for this flow, so both draw the same
                    // sequence of counts, sizes and gaps (docs/live.md, "WWW traffic").
                    let request = wf.model.request_bytes();
                    if f.src == h {
                        web_servers.push(json!({
                            "flow": i, "port": f.src_port, "client": dst,
                            "request": request, "dscp": spec.dscp,
                        }));
                    }
                    if f.dst == h {
                        let rng =
                            crate::rng::RngStream::derive(sc.seed, &format!("web/{}", spec.name));
                        let cfg = spec.web().expect("a web flow has its web table");
                        web_clients.push(json!({
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
                    continue;
                }
                if f.dst == h {
                    listen
                        .entry((proto.to_string(), f.dst_port))
                        .or_default()
                        .push(json!({
                            "flow": i, "peer": src, "peer_port": f.src_port,
                            "arrivals": spec.telnet().is_some(),
                        }));
                }
                if f.src == h {
                    let (rate, size) = match (spec.cbr(), spec.pareto()) {
                        (Some(c), _) => (c.rate.bps() as f64, c.size as u64),
                        (None, Some(p)) => (p.rate.bps() as f64, p.size as u64),
                        (None, None) => (0.0, 0),
                    };
                    // Pareto on/off (ns-2's Application/Traffic/Pareto): the agent draws
                    // its periods from its own stream seeded by the run's seed and the
                    // flow, with the simulator's law (not its sequence).
                    let onoff = spec.pareto().map(|p| {
                        json!({"mean_on": secs(p.mean_on), "mean_off": secs(p.mean_off),
                               "shape": p.shape, "seed": sc.seed.wrapping_mul(1_000_003)
                                   .wrapping_add(i as u64)})
                    });
                    // Telnet (P3 §V.D): the agent draws its sessions and writes from the
                    // simulator's laws, from its own stream (not the simulator's sequence).
                    let telnet = spec.telnet().map(|t| {
                        json!({"mean_interval": secs(t.mean_interval), "size_min": t.size_min,
                               "size_max": t.size_max, "packets_min": t.packets_min,
                               "packets_max": t.packets_max, "mean_idle": secs(t.mean_idle),
                               "sessions": t.sessions, "seed": sc.seed.wrapping_mul(1_000_003)
                                   .wrapping_add(i as u64)})
                    });
                    send.push(json!({
                        "telnet": telnet,
                        "flow": i, "proto": proto, "dst": dst, "dport": f.dst_port,
                        "src": src, "sport": f.src_port, "start": f.start.as_secs_f64(),
                        "stop": spec.stop.map(secs), "bytes": spec.bytes().map(|b| b.0),
                        "rate": rate, "size": size, "dscp": spec.dscp,
                        "trace": traced.contains(&f.name.as_str()), "onoff": onoff,
                    }));
                }
            }
            let name = &w.nodes[h.0 as usize].name;
            let programs: Vec<_> = live
                .program
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
                .collect();
            let ping: Vec<_> = live
                .ping
                .iter()
                .filter(|p| &p.from == name)
                .filter_map(|p| {
                    let to = w.nodes.iter().find(|n| n.name == p.to)?;
                    Some(
                        json!({"to": p.to, "dst": addr_str(to.addr), "count": p.count,
                                "interval": secs(p.interval), "start": secs(p.start)}),
                    )
                })
                .collect();
            json!({
                "host": name,
                "cc": live.cc.name(),
                "addr": addr_str(w.nodes[h.0 as usize].addr),
                "listen": listen.into_iter().map(|((proto, port), peers)| json!({
                    "proto": proto, "port": port, "peers": peers})).collect::<Vec<_>>(),
                "send": send,
                "web_servers": web_servers,
                "web_clients": web_clients,
                "ping": ping,
                "programs": programs,
                "duration": secs(w.end - SimTime::ZERO),
                "warmup": secs(w.warmup - SimTime::ZERO),
                "interval": secs(sc.record.interval),
            })
        })
        .collect()
}

/// The flows' goodput and TCP state from the agents, and the live tables:
/// `live_timing`, `live_hosts`, `live_sysctl`, `live_ecn`, `live_ping`.
fn fill_live_tables(
    r: &mut RunResult,
    w: &World,
    io: &TunIo,
    results: &[super::protocol::AgentResults],
    hosts: &[NodeId],
    tun_stats: &[(u64, u64)],
    sysctls: &[(String, String, String)],
) {
    let n = w.flows.len();
    let measured = (w.end - w.warmup).as_secs_f64();
    let mut goodput = vec![0i64; n];
    let mut retrans = vec![0i64; n];
    let mut srtt = vec![f64::NAN; n];
    let mut min_rtt = vec![f64::NAN; n];
    let mut cwnd = vec![0i64; n];
    let mut linux_cc = vec![String::new(); n];
    let mut series = Vec::new();
    let mut traces = Vec::new();
    let mut pings = Vec::new();
    let flow = |k: &str| k.parse::<usize>().ok().filter(|&i| i < n);
    for (hi, res) in results.iter().enumerate() {
        for (k, v) in &res.sinks {
            let Some(i) = flow(k) else { continue };
            goodput[i] = v.goodput_bytes;
            series.extend(v.series.iter().map(|&(t, b)| (i as i64, t, b)));
        }
        for (k, v) in &res.senders {
            let Some(i) = flow(k) else { continue };
            retrans[i] = v.total_retrans.unwrap_or(0);
            srtt[i] = v.srtt.unwrap_or(f64::NAN);
            min_rtt[i] = v.min_rtt.unwrap_or(f64::NAN);
            cwnd[i] = v.cwnd.unwrap_or(0);
            linux_cc[i] = v.cc.clone();
            traces.extend(v.trace.iter().map(|t| (i as i64, t.clone())));
        }
        for p in &res.ping {
            let from = &w.nodes[hosts[hi].0 as usize].name;
            for (seq, rtt) in p.rtts.iter().enumerate() {
                pings.push((
                    from.clone(),
                    p.to.clone(),
                    seq as i64,
                    rtt.unwrap_or(f64::NAN),
                ));
            }
        }
    }
    if let Some(t) = r.tables.get_mut("flows") {
        let mut nt = Table::default();
        for (name, col) in t.names.iter().zip(&t.columns) {
            // The simulated senders did not run: their counters would be zeros, not facts.
            let sim_only = [
                "fast_retransmits",
                "timeouts",
                "dupacks",
                "ecn_reductions",
                "rto",
                "mean_delay",
            ];
            if sim_only.iter().any(|s| name.starts_with(s)) || name.ends_with("_whole_run") {
                continue;
            }
            let col = match name.as_str() {
                "goodput_bytes" => Column::Int(goodput.clone()),
                "goodput_bps" => {
                    Column::Float(goodput.iter().map(|&g| g as f64 * 8.0 / measured).collect())
                }
                "retransmits" => Column::Int(retrans.clone()),
                "srtt" => Column::Float(srtt.clone()),
                "cwnd" => Column::Int(cwnd.clone()),
                _ => col.clone(),
            };
            nt.push(name, col);
        }
        // The kernel's minimum RTT of the connection [s] (`tcpi_min_rtt`: the floor the
        // sender measured, queueing excluded as far as its samples allow; NaN for UDP).
        nt.push("min_rtt", Column::Float(min_rtt));
        // The congestion control the sender's socket ran (empty for UDP flows).
        nt.push("linux_cc", Column::Str(linux_cc.clone()));
        nt.push(
            "ce_delivered",
            Column::Int(io.ce_delivered[..n].iter().map(|&x| x as i64).collect()),
        );
        nt.push(
            "ece_acks",
            Column::Int(io.ece_acks[..n].iter().map(|&x| x as i64).collect()),
        );
        *t = nt;
    }
    let mut s = Table::default();
    s.push("flow", Column::Int(series.iter().map(|x| x.0).collect()));
    s.push("t", Column::Float(series.iter().map(|x| x.1).collect()));
    s.push(
        "goodput_bytes",
        Column::Int(series.iter().map(|x| x.2).collect()),
    );
    r.tables.insert("series".into(), s);
    let mut tr = Table::default();
    tr.push("flow", Column::Int(traces.iter().map(|x| x.0).collect()));
    tr.push(
        "t",
        Column::Float(
            traces
                .iter()
                .map(|x| x.1[0].as_f64().unwrap_or(0.0))
                .collect(),
        ),
    );
    tr.push(
        "cwnd",
        Column::Int(
            traces
                .iter()
                .map(|x| x.1[1].as_i64().unwrap_or(0))
                .collect(),
        ),
    );
    tr.push(
        "ssthresh",
        Column::Int(
            traces
                .iter()
                .map(|x| x.1[2].as_i64().unwrap_or(0))
                .collect(),
        ),
    );
    tr.push(
        "srtt",
        Column::Float(
            traces
                .iter()
                .map(|x| x.1[3].as_f64().unwrap_or(f64::NAN))
                .collect(),
        ),
    );
    tr.push(
        "rto",
        Column::Float(
            traces
                .iter()
                .map(|x| x.1[4].as_f64().unwrap_or(f64::NAN))
                .collect(),
        ),
    );
    tr.push(
        "retransmits",
        Column::Int(
            traces
                .iter()
                .map(|x| x.1[5].as_i64().unwrap_or(0))
                .collect(),
        ),
    );
    r.tables.insert("traces".into(), tr);

    // Timing: per link (the releases off it) and overall, plus the TUN writes.
    let ws = w.wall.as_ref().expect("a wall run");
    let mut rows: Vec<(String, &Lateness)> = w
        .ifaces
        .iter()
        .zip(&ws.by_iface)
        .map(|(f, l)| {
            let name = format!(
                "{}->{}",
                w.nodes[f.node.0 as usize].name, w.nodes[f.peer.0 as usize].name
            );
            (name, l)
        })
        .collect();
    let mut all = Lateness::default();
    for l in &ws.by_iface {
        all.merge(l);
    }
    all.merge(&ws.other);
    rows.push(("(other events)".into(), &ws.other));
    rows.push(("(tun writes)".into(), &io.write_late));
    // Sleeps that ran to their timeout: how late the thread woke (not an event).
    rows.push(("(wake-ups)".into(), &io.wake_late));
    rows.push(("(all events)".into(), &all));
    let us = |l: &Lateness, q: f64| l.quantile(q).map_or(f64::NAN, |ns| ns as f64 / 1e3);
    let mut t = Table::default();
    t.push(
        "place",
        Column::Str(rows.iter().map(|x| x.0.clone()).collect()),
    );
    t.push(
        "events",
        Column::Int(rows.iter().map(|x| x.1.count() as i64).collect()),
    );
    t.push(
        "mean_us",
        Column::Float(rows.iter().map(|x| x.1.mean() / 1e3).collect()),
    );
    for (name, q) in [
        ("p50_us", 0.5),
        ("p99_us", 0.99),
        ("p999_us", 0.999),
        ("max_us", 1.0),
    ] {
        t.push(
            name,
            Column::Float(rows.iter().map(|x| us(x.1, q)).collect()),
        );
    }
    t.push(
        "late_100us",
        Column::Int(rows.iter().map(|x| x.1.over(P99_BOUND) as i64).collect()),
    );
    t.push(
        "late_2ms",
        Column::Int(rows.iter().map(|x| x.1.over(P999_BOUND) as i64).collect()),
    );
    r.tables.insert("live_timing".into(), t);
    let p99 = all.quantile(0.99).unwrap_or(0);
    let p999 = all.quantile(0.999).unwrap_or(0);
    let ok = p99 <= P99_BOUND.as_nanos() && p999 <= P999_BOUND.as_nanos();
    r.summary
        .insert("live_lateness_p99_us".into(), (p99 as f64 / 1e3).into());
    r.summary
        .insert("live_lateness_p999_us".into(), (p999 as f64 / 1e3).into());
    r.summary.insert("live_timing_ok".into(), ok.into());
    r.summary
        .insert("live_ring_lost".into(), io.ring_lost.into());
    r.summary.insert("live_injected".into(), ws.injected.into());

    let mut t = Table::default();
    t.push(
        "host",
        Column::Str(
            hosts
                .iter()
                .map(|h| w.nodes[h.0 as usize].name.clone())
                .collect(),
        ),
    );
    t.push(
        "addr",
        Column::Str(
            hosts
                .iter()
                .map(|h| addr_str(w.nodes[h.0 as usize].addr))
                .collect(),
        ),
    );
    t.push(
        "tun_read",
        Column::Int(io.hosts.iter().map(|h| h.rx as i64).collect()),
    );
    t.push(
        "tun_written",
        Column::Int(io.hosts.iter().map(|h| h.tx as i64).collect()),
    );
    t.push(
        "tun_write_failed",
        Column::Int(io.hosts.iter().map(|h| h.tx_failed as i64).collect()),
    );
    t.push(
        "rejected",
        Column::Int(io.hosts.iter().map(|h| h.rejected as i64).collect()),
    );
    t.push(
        "tun_tx_dropped",
        Column::Int(tun_stats.iter().map(|x| x.0 as i64).collect()),
    );
    t.push(
        "tun_read_bytes",
        Column::Int(io.hosts.iter().map(|h| h.rx_bytes as i64).collect()),
    );
    t.push(
        "tun_written_bytes",
        Column::Int(io.hosts.iter().map(|h| h.tx_bytes as i64).collect()),
    );
    r.tables.insert("live_hosts".into(), t);

    let mut t = Table::default();
    t.push(
        "host",
        Column::Str(sysctls.iter().map(|x| x.0.clone()).collect()),
    );
    t.push(
        "key",
        Column::Str(sysctls.iter().map(|x| x.1.clone()).collect()),
    );
    t.push(
        "value",
        Column::Str(sysctls.iter().map(|x| x.2.clone()).collect()),
    );
    r.tables.insert("live_sysctl".into(), t);

    let mut t = Table::default();
    t.push(
        "from",
        Column::Str(pings.iter().map(|x| x.0.clone()).collect()),
    );
    t.push(
        "to",
        Column::Str(pings.iter().map(|x| x.1.clone()).collect()),
    );
    t.push("seq", Column::Int(pings.iter().map(|x| x.2).collect()));
    t.push("rtt", Column::Float(pings.iter().map(|x| x.3).collect()));
    r.tables.insert("live_ping".into(), t);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_live_names_with_a_pid_are_ours() {
        assert_eq!(owner_pid("qlab123-4"), Some(123));
        assert_eq!(owner_pid("qlab123-"), None);
        assert_eq!(owner_pid("qlab-4"), None);
        assert_eq!(owner_pid("qlab12x-4"), None);
        assert_eq!(owner_pid("qlab12-4a"), None);
        assert_eq!(owner_pid("other123-4"), None);
        assert_eq!(owner_pid("myqlab1-1"), None);
    }

    /// A non-blocking datagram socket pair: one end stands for a host's TUN device, the
    /// other for the host's kernel writing to and reading from it.
    fn socket_pair() -> (OwnedFd, OwnedFd) {
        use std::os::fd::FromRawFd;
        let mut fds = [0; 2];
        // SAFETY: socketpair writes two descriptors into `fds`.
        let r = unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        };
        assert_eq!(r, 0, "socketpair: {}", std::io::Error::last_os_error());
        // SAFETY: fresh descriptors we own.
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
    }

    /// A UDP/IPv4 packet from `src` to `dst` with 100 payload bytes.
    fn udp_packet(src: [u8; 4], dst: [u8; 4]) -> Vec<u8> {
        let total = 20 + 8 + 100;
        let mut b = vec![0u8; total];
        b[0] = 0x45;
        b[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        b[8] = 64;
        b[9] = PROTO_UDP;
        b[12..16].copy_from_slice(&src);
        b[16..20].copy_from_slice(&dst);
        let c = ipv4::header_checksum(&b);
        b[10..12].copy_from_slice(&c.to_be_bytes());
        b[20..22].copy_from_slice(&4000u16.to_be_bytes());
        b[22..24].copy_from_slice(&5000u16.to_be_bytes());
        b[24..26].copy_from_slice(&108u16.to_be_bytes());
        b
    }

    /// A datapath over `n` hosts (10.0.0.1, 10.0.0.2, …) on socket pairs, no flows; with
    /// the hosts' ends of the pairs.
    fn tun_io(n: u8) -> (TunIo, Vec<OwnedFd>) {
        let (mut devs, mut ends) = (Vec::new(), Vec::new());
        for i in 0..n {
            let (dev, end) = socket_pair();
            devs.push(HostIo::new(NodeId(i as u32), dev));
            ends.push(end);
        }
        let map = FlowMap::new(
            (0..n).map(|i| ([10, 0, 0, i + 1], NodeId(i as u32))),
            FlowId(0),
        );
        let nodes = (0..n as usize).map(Some).collect();
        let io = TunIo::new(devs, nodes, map, Vec::new(), None, 0, None);
        (io, ends)
    }

    #[test]
    fn a_wait_shorter_than_a_sleep_costs_polls_instead_of_sleeping() {
        let (mut io, ends) = tun_io(1);
        let clock = WallClock::start();
        let us = Dur::from_micros;
        // A sleep costs 10 s here: a 20 ms wait polls the host to its end, never sleeps
        // (the waits are long enough that a loaded machine cannot make them 0).
        io.sleep_cost_ns = 10_000_000_000;
        let t0 = clock.now();
        io.wait(&clock, t0 + us(20_000));
        assert!(clock.now() >= t0 + us(20_000));
        assert_eq!(io.sleeps, 0);
        assert!(io.polled_ns > 0 && io.idle_ns == io.polled_ns);
        assert!(!io.polled_ready);
        // A packet waiting ends the poll: the loop reads it.
        let pkt = udp_packet([10, 0, 0, 1], [10, 0, 0, 1]);
        assert!(sys::write_packet(ends[0].as_raw_fd(), &pkt));
        io.wait(&clock, clock.now() + Dur::from_secs(1));
        assert!(io.polled_ready);
        assert_eq!(io.sleeps, 0);
        let mut got = Vec::new();
        io.read(&clock, &mut got);
        assert_eq!(got.len(), 1);
        // Without the measured cost (0), the same wait sleeps.
        io.sleep_cost_ns = 0;
        io.wait(&clock, clock.now() + us(20_000));
        assert_eq!(io.sleeps, 1);
    }

    #[test]
    fn after_a_poll_only_the_hosts_it_found_readable_are_read() {
        let (mut io, ends) = tun_io(2);
        let clock = WallClock::start();
        io.sleep_cost_ns = 10_000_000_000;
        // Each ring slot holds a full packet from the start: reading does not allocate.
        assert!(io.ring.iter().all(|(_, b)| b.capacity() >= SLOT));
        let slot0 = io.ring[0].1.as_ptr();
        let (a, b) = ([10, 0, 0, 1], [10, 0, 0, 2]);
        assert!(sys::write_packet(ends[0].as_raw_fd(), &udp_packet(a, b)));
        io.wait(&clock, clock.now() + Dur::from_secs(1));
        assert!(io.polled_ready);
        // Host b's packet comes after the poll: this round reads a's only (no EAGAIN
        // read of b) …
        assert!(sys::write_packet(ends[1].as_raw_fd(), &udp_packet(b, a)));
        let mut got = Vec::new();
        io.read(&clock, &mut got);
        assert_eq!(got.iter().map(|p| p.src).collect::<Vec<_>>(), [NodeId(0)]);
        assert_eq!(io.ring[0].1.as_ptr(), slot0);
        assert_eq!(io.ring[0].1.len(), 128);
        // … and a round that did not begin with a poll (an event was due) reads every
        // host.
        io.wait(&clock, clock.now());
        assert!(!io.polled_ready);
        io.read(&clock, &mut got);
        assert_eq!(
            got.iter().map(|p| p.src).collect::<Vec<_>>(),
            [NodeId(0), NodeId(1)]
        );
        assert_eq!((io.hosts[0].rx, io.hosts[1].rx), (1, 1));
    }

    /// The TUN datapath with a busy event loop: the first delivery takes 50 ms (as a
    /// loaded machine's events can), and the host sends its second packet as it starts.
    struct BusyLoop {
        io: TunIo,
        host_a: OwnedFd,
        first: Vec<u8>,
        second: Vec<u8>,
        sent_first: bool,
        /// (delivery time, the packet's `created`) of each delivered packet.
        delivered: Vec<(SimTime, SimTime)>,
    }

    impl WallIo for BusyLoop {
        fn wait(&mut self, clock: &WallClock, until: SimTime) {
            self.io.wait(clock, until);
        }
        fn read(&mut self, clock: &WallClock, into: &mut Vec<Packet>) {
            if !self.sent_first {
                self.sent_first = true;
                assert!(sys::write_packet(self.host_a.as_raw_fd(), &self.first));
            }
            self.io.read(clock, into);
        }
        fn deliver(&mut self, now: SimTime, pkt: &Packet) {
            self.io.deliver(now, pkt);
            self.delivered.push((now, pkt.created));
            if self.delivered.len() == 1 {
                assert!(sys::write_packet(self.host_a.as_raw_fd(), &self.second));
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    #[test]
    fn a_packet_enters_the_network_when_it_is_read_not_when_the_loop_began() {
        // a — b, 10 ms one way. The second packet waits in a's device while the loop is
        // busy for 50 ms: it must cross the link after it was read, so it reaches b at
        // least 50 + 10 ms after the first (stamped at the loop's start, it would arrive
        // 10 ms after the first, before the datapath had even seen it).
        let text = "duration = \"0.3s\"\n[[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n\
                    [[link]]\na = \"a\"\nb = \"b\"\nrate = \"100Mbps\"\ndelay = \"10ms\"\n";
        let sc = crate::scenario::parse(text, crate::scenario::Format::Toml).unwrap();
        let mut w = crate::scenario::build(&sc).unwrap();
        let hosts = [NodeId(0), NodeId(1)];
        let node_ifaces: Vec<Vec<crate::net::IfaceId>> =
            w.nodes.iter().map(|n| n.ifaces.clone()).collect();
        w.routes = crate::net::Routes::compute(w.nodes.len(), &w.ifaces, &node_ifaces, &hosts);
        let (addr_a, addr_b) = (w.nodes[0].addr, w.nodes[1].addr);
        let (dev_a, host_a) = socket_pair();
        let (dev_b, _host_b) = socket_pair();
        let io_hosts: Vec<HostIo> = [(NodeId(0), dev_a), (NodeId(1), dev_b)]
            .into_iter()
            .map(|(node, fd)| HostIo::new(node, fd))
            .collect();
        let map = FlowMap::new([(addr_a, NodeId(0)), (addr_b, NodeId(1))], FlowId(0));
        let io = TunIo::new(
            io_hosts,
            vec![Some(0), Some(1)],
            map,
            Vec::new(),
            None,
            0,
            None,
        );
        let mut busy = BusyLoop {
            io,
            host_a,
            first: udp_packet(addr_a, addr_b),
            second: udp_packet(addr_a, addr_b),
            sent_first: false,
            delivered: Vec::new(),
        };
        w.run_wall(&mut busy, true).unwrap();
        let d = &busy.delivered;
        assert_eq!(d.len(), 2, "{d:?}");
        let ms = Dur::from_millis;
        // Each packet crossed the link after it was read …
        assert!(
            d[0].0 >= d[0].1 + ms(10) && d[1].0 >= d[1].1 + ms(10),
            "{d:?}"
        );
        // … and the second was read after the busy 50 ms, not before them.
        assert!(d[1].1 >= d[0].0 + ms(50), "{d:?}");
        assert!(d[1].0 >= d[0].0 + ms(60), "{d:?}");
        assert_eq!(busy.io.hosts[1].tx, 2);
        // Traffic of no flow is counted per 5-tuple as it is read and as it is delivered
        // (`live_conns`): two 128-byte datagrams of 100 payload bytes each.
        let conns: Vec<_> = busy.io.conns.iter().collect();
        assert_eq!(conns.len(), 1, "{conns:?}");
        let (key, c) = conns[0];
        assert_eq!(*key, (PROTO_UDP, addr_a, 4000, addr_b, 5000));
        assert_eq!((c.read, c.read_bytes), (2, 256), "{c:?}");
        assert_eq!(
            (c.delivered, c.delivered_bytes, c.payload_delivered),
            (2, 256, 200),
            "{c:?}"
        );
    }
}

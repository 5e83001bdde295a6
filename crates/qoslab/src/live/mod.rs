//! Live mode: the scenario's routers, links, queues and conditioners carry real Linux
//! TCP and UDP between network namespaces (DESIGN.md "Live mode", LIVE.md).
//!
//! Each host is a network namespace with one TUN device and a default route through
//! it; a single datapath thread reads the packets the hosts send, hands them to the
//! same [`World`](crate::world::World) the simulator runs (the same `Queue`,
//! `Conditioner` and routing code) driven by the wall clock
//! ([`World::run_wall`](crate::world::World::run_wall)), and writes the packets it
//! delivers to the destination host's TUN, DSCP and CE written back into the bytes.
//! Built-in programs inside the namespaces (the caller's `agent` command) send and
//! sink the scenario's flows with the kernel's own TCP.

use serde::Deserialize;

use crate::config::ScenarioError;
use crate::units::Bytes;

pub mod ipv4;
#[cfg(target_os = "linux")]
mod run;
#[cfg(target_os = "linux")]
mod sys;

#[cfg(target_os = "linux")]
pub use run::{run_live, sweep_leftovers, LiveOptions, NS_PREFIX};

/// Linux congestion controls a live host can use (the ones this kernel has, LIVE.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LinuxCc {
    /// `reno`.
    #[default]
    Reno,
    /// `cubic`.
    Cubic,
    /// `bbr`.
    Bbr,
}

impl LinuxCc {
    /// The kernel's name.
    pub fn name(self) -> &'static str {
        match self {
            LinuxCc::Reno => "reno",
            LinuxCc::Cubic => "cubic",
            LinuxCc::Bbr => "bbr",
        }
    }
}

/// The `[live]` table: how the hosts' kernels are set up in a live run (ignored by
/// the simulator).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LiveConfig {
    /// Congestion control of every host (`net.ipv4.tcp_congestion_control`); default reno.
    #[serde(default)]
    pub cc: LinuxCc,
    /// `net.ipv4.tcp_ecn` = 1 on every host; default: on a host when one of its TCP
    /// flows has `tcp.ecn = true` (sender and receiver), else 0.
    #[serde(default)]
    pub ecn: Option<bool>,
    /// `net.ipv4.tcp_sack`; default true.
    #[serde(default = "yes")]
    pub sack: bool,
    /// `net.ipv4.tcp_timestamps`; default true.
    #[serde(default = "yes")]
    pub timestamps: bool,
    /// Linux's RACK loss detection and tail-loss probes (the kernel's defaults,
    /// `net.ipv4.tcp_recovery` = 1, `net.ipv4.tcp_early_retrans` = 3); `false` sets both
    /// to 0, so losses are found by duplicate ACKs and timeouts only, as qoslab's TCP
    /// finds them. Default true (left as the kernel has it).
    #[serde(default = "yes")]
    pub rack_tlp: bool,
    /// Largest socket receive buffer (`tcp_rmem` max); default 32 MB (LIVE.md: a new
    /// namespace's 4 MB is too small above ~0.6 Gb/s at 40 ms).
    #[serde(default = "big_buffer")]
    pub rmem: Bytes,
    /// Largest socket send buffer (`tcp_wmem` max); default 32 MB.
    #[serde(default = "big_buffer")]
    pub wmem: Bytes,
    /// Transmit queue length of the hosts' TUN devices; default 10 000 (LIVE.md: the
    /// default 500 drops packets before the datapath sees them at high rates).
    #[serde(default = "txqueuelen")]
    pub txqueuelen: u32,
    /// ICMP echo probes between hosts (RTT measurements).
    #[serde(default)]
    pub ping: Vec<PingSpec>,
    /// Write every packet the datapath delivers to a host (its real bytes, DSCP and CE
    /// as delivered) to `pcap/datapath.pcap` (raw IPv4 link type); default false.
    #[serde(default)]
    pub pcap: bool,
    /// Bytes stored per packet in that file (≥ 64; headers with options fit in 128).
    #[serde(default = "pcap_snaplen")]
    pub pcap_snaplen: u32,
    /// How long before its next event the datapath stops sleeping and polls its hosts
    /// without blocking (spins) until the event is due: a machine whose wake-ups from
    /// sleep come late (virtual machines: tens to hundreds of µs) keeps its events on
    /// time at the cost of up to this much CPU per event. Default 0 (sleep to the event).
    #[serde(default)]
    pub spin: crate::time::Dur,
}

/// `[[live.ping]]`: ICMP echo requests from one host to another.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PingSpec {
    /// Sending host.
    pub from: String,
    /// Echoing host.
    pub to: String,
    /// Requests; default 20.
    #[serde(default = "ping_count")]
    pub count: u32,
    /// Time between requests; default 50 ms.
    #[serde(default = "ping_interval")]
    pub interval: crate::time::Dur,
    /// When the first is sent; default 0.
    #[serde(default)]
    pub start: crate::time::Dur,
}

fn yes() -> bool {
    true
}
fn big_buffer() -> Bytes {
    Bytes(32 << 20)
}
fn pcap_snaplen() -> u32 {
    128
}
fn txqueuelen() -> u32 {
    10_000
}
fn ping_count() -> u32 {
    20
}
fn ping_interval() -> crate::time::Dur {
    crate::time::Dur::from_millis(50)
}

impl Default for LiveConfig {
    fn default() -> Self {
        LiveConfig {
            cc: LinuxCc::default(),
            ecn: None,
            sack: true,
            timestamps: true,
            rack_tlp: true,
            rmem: big_buffer(),
            wmem: big_buffer(),
            txqueuelen: txqueuelen(),
            ping: Vec::new(),
            pcap: false,
            pcap_snaplen: pcap_snaplen(),
            spin: crate::time::Dur::ZERO,
        }
    }
}

/// The longest `[live] spin`: beyond it the datapath would mostly spin, not sleep.
pub const MAX_SPIN: crate::time::Dur = crate::time::Dur::from_millis(5);

/// Refuses what cannot run live, naming the key: qoslab's own TCP variants and
/// applications (MulTCP and the other increase rules, pTCP, striping, web, Telnet,
/// periodic writes, Pareto on/off not yet), source quench (Linux ignores it), the P0
/// QoS-manager triggers only the sender's stack sees, and hosts with more than one link.
pub fn check_live(sc: &crate::scenario::Scenario) -> Result<(), ScenarioError> {
    let refuse =
        |key: String, why: &str| Err(ScenarioError::new(key, format!("cannot run live: {why}")));
    for (i, f) in sc.flow.iter().enumerate() {
        let k = |s: &str| format!("flow[{i}].{s}");
        if f.ptcp.is_some() {
            return refuse(k("ptcp"), "pTCP is qoslab's own transport");
        }
        if f.stripe.is_some() {
            return refuse(k("stripe"), "striping is qoslab's own application");
        }
        if f.web.is_some() {
            return refuse(k("web"), "the web model is qoslab's own application");
        }
        if f.telnet.is_some() {
            return refuse(k("telnet"), "the Telnet model is qoslab's own application");
        }
        if f.writes.is_some() {
            return refuse(
                k("writes"),
                "periodic writes are not built into the live sender yet",
            );
        }
        if let Some(t) = &f.tcp {
            match t.cc {
                crate::tcp::CcConfig::Reno => {}
                crate::tcp::CcConfig::MulTcp { .. } => {
                    return refuse(
                        k("tcp.cc"),
                        "MulTCP is qoslab's own congestion control; set live.cc",
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
        // The simulator ignores the table: a scenario without it has none.
        assert!(scenario("").unwrap().live.is_none());
    }

    #[test]
    fn refuses_what_cannot_be_live_naming_the_key() {
        let ok = scenario("[[flow]]\nname = \"t\"\nfrom = \"a\"\nto = \"b\"\ntcp = {}\n").unwrap();
        assert!(check_live(&ok).is_ok());
        let m = scenario("[[flow]]\nname = \"t\"\nfrom = \"a\"\nto = \"b\"\ntcp = { cc = { kind = \"multcp\", w = 2 } }\n").unwrap();
        assert_eq!(check_live(&m).unwrap_err().key, "flow[0].tcp.cc");
        let p =
            scenario("[[flow]]\nname = \"t\"\nfrom = \"a\"\nto = \"b\"\nptcp = { pipes = 2 }\n");
        if let Ok(p) = p {
            assert_eq!(check_live(&p).unwrap_err().key, "flow[0].ptcp");
        }
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
}

//! The scenario file model: what users write, deserialised with unknown keys rejected.

use serde::Deserialize;

use crate::app::{CbrConfig, ParetoConfig};
use crate::cond::ConditionerConfig;
use crate::net::NodeKind;
use crate::queue::QueueConfig;
use crate::tcp::TcpConfig;
use crate::time::{Dur, Rate};

use super::Bytes;

/// A whole scenario.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Name of the run (results directory, reports).
    #[serde(default)]
    pub name: Option<String>,
    /// Simulated time to run.
    pub duration: Dur,
    /// Initial period excluded from totals; default 0.
    #[serde(default)]
    pub warmup: Dur,
    /// Run seed; every random stream derives from it; default 1.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Guard against runaway scenarios: stop with an error after this many events.
    #[serde(default)]
    pub max_events: Option<u64>,
    /// Hosts and routers.
    #[serde(default)]
    pub node: Vec<NodeSpec>,
    /// Duplex point-to-point links.
    #[serde(default)]
    pub link: Vec<LinkSpec>,
    /// Flows: a source application and its transport between two hosts.
    #[serde(default)]
    pub flow: Vec<FlowSpec>,
    /// Conditioner chains and where they sit.
    #[serde(default)]
    pub conditioner: Vec<CondPlacement>,
    /// What to record beyond the totals.
    #[serde(default)]
    pub record: RecordSpec,
    /// Packet captures to pcap files (written when the run is given an output directory).
    #[serde(default)]
    pub capture: Vec<crate::capture::CaptureSpec>,
    /// Server-side QoS managers for TCP aggregates (P0).
    #[serde(default)]
    pub qosmgr: Vec<crate::qosmgr::QosMgrConfig>,
    /// Live mode's host settings (congestion control, ECN, buffers, pings); the
    /// simulator ignores them.
    #[serde(default)]
    pub live: Option<crate::live_config::LiveConfig>,
}

/// A conditioner chain placed in the network: at a node (a host's egress or a
/// router's ingress) or before an interface's queue (router egress).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CondPlacement {
    /// A node: host → every packet it sends; router → every packet it receives.
    #[serde(default)]
    pub at: Option<String>,
    /// An interface (`"r1->r2"`): packets routed to it, before its queue.
    #[serde(default)]
    pub iface: Option<String>,
    /// An input interface (`"r1->r2"`): packets router r2 receives over that link,
    /// before r2's own ingress chain.
    #[serde(default)]
    pub iface_in: Option<String>,
    /// The stages, applied in order.
    pub stages: Vec<ConditionerConfig>,
}

fn default_seed() -> u64 {
    1
}

/// A node.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    /// Unique name.
    pub name: String,
    /// `"host"` (default) or `"router"`.
    #[serde(default)]
    pub kind: NodeKind,
    /// Overrides of the RFC DSCP → (class, drop precedence) table at this node.
    #[serde(default)]
    pub dscp_map: Vec<crate::cond::DscpMapEntry>,
    /// IPv4 address (`"10.1.2.3"`); default `10.0.0.0` + the node's index + 1, the
    /// address captures used before addresses were configurable.
    #[serde(default)]
    pub address: Option<String>,
    /// Routers: send a rate-limited ICMP source quench for every packet their queues
    /// drop (P2 §2); default off.
    #[serde(default)]
    pub source_quench: Option<crate::net::quench::SourceQuenchConfig>,
    /// Where topology drawings place the node (`[x, y]`, x to the right, y up, one unit
    /// about one node spacing); the simulation ignores it.
    #[serde(default, deserialize_with = "de_pos")]
    pub pos: Option<[f64; 2]>,
}

/// A node's `pos`: a list of exactly two numbers, the message saying how many it had
/// (serde's own for `[0, 0, 1]` was "trailing characters").
fn de_pos<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<[f64; 2]>, D::Error> {
    use serde::de::Error;
    let v = Vec::<f64>::deserialize(d)?;
    match v[..] {
        [x, y] => Ok(Some([x, y])),
        _ => Err(D::Error::custom(format!(
            "expected two numbers [x, y] (where drawings place the node), found {} value{} {v:?}",
            v.len(),
            if v.len() == 1 { "" } else { "s" },
        ))),
    }
}

/// A duplex link between nodes `a` and `b`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// One end (node name).
    pub a: String,
    /// The other end (node name).
    pub b: String,
    /// Rate in both directions.
    pub rate: Rate,
    /// Rate from b to a, if different.
    #[serde(default)]
    pub rate_b_to_a: Option<Rate>,
    /// One-way propagation delay.
    pub delay: Dur,
    /// Link-layer framing bytes added to every packet on the wire; default 0.
    #[serde(default)]
    pub framing: u32,
    /// Output queue in both directions (default DropTail, 100 packets).
    #[serde(default)]
    pub queue: Option<QueueConfig>,
    /// Output queue at `a` towards `b`, overriding `queue`.
    #[serde(default)]
    pub queue_a_to_b: Option<QueueConfig>,
    /// Output queue at `b` towards `a`, overriding `queue`.
    #[serde(default)]
    pub queue_b_to_a: Option<QueueConfig>,
    /// Probability that a packet is lost on the wire, both directions; default 0.
    #[serde(default)]
    pub loss: f64,
    /// Loss probability from a to b, overriding `loss`.
    #[serde(default)]
    pub loss_a_to_b: Option<f64>,
    /// Loss probability from b to a, overriding `loss`.
    #[serde(default)]
    pub loss_b_to_a: Option<f64>,
}

/// A flow: two hosts, when it runs, how its packets are marked, and its application
/// ([`AppSpec`]), made from the application tables of a `[[flow]]` as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(try_from = "FlowFile")]
pub struct FlowSpec {
    /// Unique name.
    pub name: String,
    /// Sending host.
    pub from: String,
    /// Receiving host.
    pub to: String,
    /// When the source starts; default 0.
    pub start: Dur,
    /// The start is drawn uniformly from [start, start + start_jitter) with the flow's
    /// own stream (derived from the run seed and the flow name); default 0.
    pub start_jitter: Dur,
    /// When the source stops; default: runs to the end.
    pub stop: Option<Dur>,
    /// The application and its transport.
    pub app: AppSpec,
    /// DSCP of the packets the source sends (a number or a PHB name); default 0 (BE).
    pub dscp: u8,
    /// DSCP of the packets the destination sends back (TCP ACKs); default 0 (BE).
    pub ack_dscp: u8,
    /// Source port; default 1024 + the flow's index in the file.
    pub src_port: Option<u16>,
    /// Destination port; default 5001.
    pub dst_port: Option<u16>,
}

/// A flow's application and transport: exactly one of the file's `cbr`, `pareto` or
/// `tcp` tables, a TCP flow with at most one application table beside it.
#[derive(Clone, Debug)]
pub enum AppSpec {
    /// `cbr = {…}`: constant bit rate UDP source.
    Cbr(CbrConfig),
    /// `pareto = {…}`: Pareto on/off UDP source.
    Pareto(ParetoConfig),
    /// `tcp = {…}` (NewReno by default; see `tcp::TcpConfig` for the keys) and what
    /// writes on the connection.
    Tcp {
        /// The transport's settings.
        tcp: Box<TcpConfig>,
        /// The application.
        app: TcpAppSpec,
    },
}

/// The application of a TCP flow: one of the flow's `writes`, `telnet`, `web`,
/// `stripe` or `ptcp` tables, or none (a bulk transfer), with `bytes` where it applies.
#[derive(Clone, Debug)]
pub enum TcpAppSpec {
    /// A bulk transfer: everything handed to TCP at the start.
    Bulk {
        /// `bytes`: bytes to transfer (a finite transfer); default unlimited.
        bytes: Option<Bytes>,
    },
    /// `writes = {…}`: `size` bytes every `every` instead of everything at the start
    /// (P0 §6.3: its sends on a window-closed connection).
    Writes {
        /// The writes.
        writes: WritesSpec,
        /// `bytes`: stop (and close) after that many; default write forever.
        bytes: Option<Bytes>,
    },
    /// `telnet = {…}`: sessions of small writes with exponential interarrival times
    /// (P3 §V.D).
    Telnet(crate::app::TelnetConfig),
    /// `web = {…}`: WWW traffic (P3 §V.D, ns-2's web traffic model): sessions of pages
    /// of objects, one connection per object; the flow's source is the server.
    Web(Box<crate::app::WebConfig>),
    /// `stripe = {…}`: application striping (P4 §2): w TCP connections, data in
    /// blocks, read in block order at the receiver.
    Stripe {
        /// The striping.
        stripe: crate::app::StripeConfig,
        /// `bytes`: bytes to transfer; default unlimited.
        bytes: Option<Bytes>,
    },
    /// `ptcp = {…}`: pTCP (P4 §4): one connection of `pipes` TCP-v pipes whose engine
    /// owns the send and receive buffers.
    Ptcp {
        /// The pTCP engine's settings.
        ptcp: crate::app::PtcpConfig,
        /// `bytes`: bytes to transfer; default unlimited.
        bytes: Option<Bytes>,
    },
}

impl TcpAppSpec {
    /// `bytes`, for the applications it applies to.
    pub fn bytes(&self) -> Option<Bytes> {
        match self {
            TcpAppSpec::Bulk { bytes }
            | TcpAppSpec::Writes { bytes, .. }
            | TcpAppSpec::Stripe { bytes, .. }
            | TcpAppSpec::Ptcp { bytes, .. } => *bytes,
            TcpAppSpec::Telnet(_) | TcpAppSpec::Web(_) => None,
        }
    }
}

impl FlowSpec {
    /// The TCP settings of a TCP flow.
    pub fn tcp(&self) -> Option<&TcpConfig> {
        match &self.app {
            AppSpec::Tcp { tcp, .. } => Some(tcp),
            _ => None,
        }
    }

    /// The application of a TCP flow.
    pub fn tcp_app(&self) -> Option<&TcpAppSpec> {
        match &self.app {
            AppSpec::Tcp { app, .. } => Some(app),
            _ => None,
        }
    }

    /// The CBR source of a CBR flow.
    pub fn cbr(&self) -> Option<&CbrConfig> {
        match &self.app {
            AppSpec::Cbr(c) => Some(c),
            _ => None,
        }
    }

    /// The Pareto on/off source of a Pareto flow.
    pub fn pareto(&self) -> Option<&ParetoConfig> {
        match &self.app {
            AppSpec::Pareto(p) => Some(p),
            _ => None,
        }
    }

    /// The Telnet application of a Telnet flow.
    pub fn telnet(&self) -> Option<&crate::app::TelnetConfig> {
        match self.tcp_app() {
            Some(TcpAppSpec::Telnet(t)) => Some(t),
            _ => None,
        }
    }

    /// The web application of a web flow.
    pub fn web(&self) -> Option<&crate::app::WebConfig> {
        match self.tcp_app() {
            Some(TcpAppSpec::Web(w)) => Some(w),
            _ => None,
        }
    }

    /// `bytes` of a finite TCP transfer.
    pub fn bytes(&self) -> Option<Bytes> {
        self.tcp_app().and_then(TcpAppSpec::bytes)
    }
}

/// A `[[flow]]` as written: the application tables side by side, made one [`AppSpec`]
/// (or refused, naming the keys that exclude each other) by `FlowSpec`'s `TryFrom`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FlowFile {
    /// Unique name.
    name: String,
    /// Sending host.
    from: String,
    /// Receiving host.
    to: String,
    /// When the source starts; default 0.
    #[serde(default)]
    start: Dur,
    /// Start jitter; default 0.
    #[serde(default)]
    start_jitter: Dur,
    /// When the source stops; default: runs to the end.
    #[serde(default)]
    stop: Option<Dur>,
    /// Constant bit rate UDP source.
    #[serde(default)]
    cbr: Option<CbrConfig>,
    /// Pareto on/off UDP source.
    #[serde(default)]
    pareto: Option<ParetoConfig>,
    /// TCP transport.
    #[serde(default)]
    tcp: Option<TcpConfig>,
    /// Bytes to transfer (finite TCP transfers).
    #[serde(default)]
    bytes: Option<Bytes>,
    /// TCP only: periodic writes.
    #[serde(default)]
    writes: Option<WritesSpec>,
    /// TCP only: a Telnet application.
    #[serde(default)]
    telnet: Option<crate::app::TelnetConfig>,
    /// TCP only: WWW traffic.
    #[serde(default)]
    web: Option<crate::app::WebConfig>,
    /// TCP only: application striping.
    #[serde(default)]
    stripe: Option<crate::app::StripeConfig>,
    /// TCP only: pTCP.
    #[serde(default)]
    ptcp: Option<crate::app::PtcpConfig>,
    /// DSCP of the packets the source sends.
    #[serde(default, deserialize_with = "crate::dscp::de_dscp")]
    dscp: u8,
    /// DSCP of the packets the destination sends back.
    #[serde(default, deserialize_with = "crate::dscp::de_dscp")]
    ack_dscp: u8,
    /// Source port.
    #[serde(default)]
    src_port: Option<u16>,
    /// Destination port.
    #[serde(default)]
    dst_port: Option<u16>,
}

/// Why each TCP application table excludes the ones before it.
const TCP_APPS: [(&str, &str); 5] = [
    ("writes", ""),
    ("telnet", "Telnet decides its own writes"),
    ("web", "the web model opens its own connections"),
    ("stripe", "the striping application writes its own blocks"),
    ("ptcp", "the pTCP engine writes its own data"),
];

impl TryFrom<FlowFile> for FlowSpec {
    type Error = String;

    /// The one place that refuses application tables which exclude each other; the
    /// message (made by `config::encode`) names the key and the table it clashes with.
    fn try_from(f: FlowFile) -> Result<FlowSpec, String> {
        let refuse = |k: &str, m: String| crate::config::encode(k, &m);
        let set = [
            f.writes.is_some(),
            f.telnet.is_some(),
            f.web.is_some(),
            f.stripe.is_some(),
            f.ptcp.is_some(),
        ];
        let mut apps = (0..TCP_APPS.len()).filter(|&i| set[i]);
        let (first, second) = (apps.next(), apps.next());
        let bytes = f.bytes;
        // A UDP flow has none of TCP's application tables.
        let udp_only = || match first {
            Some(a) => {
                let k = TCP_APPS[a].0;
                Err(refuse(k, format!("{k} applies to TCP flows only")))
            }
            None if bytes.is_some() => {
                Err(refuse("bytes", "bytes applies to TCP flows only".into()))
            }
            None => Ok(()),
        };
        let app = match (f.tcp, f.cbr, f.pareto) {
            (Some(tcp), None, None) => {
                if let (Some(a), Some(b)) = (first, second) {
                    let ((k, _), (with, why)) = (TCP_APPS[a], TCP_APPS[b]);
                    return Err(refuse(
                        k,
                        format!("{k} cannot be combined with {with} ({why})"),
                    ));
                }
                let no_bytes = |app: usize| match bytes {
                    Some(_) => {
                        let (with, why) = TCP_APPS[app];
                        Err(refuse(
                            "bytes",
                            format!("bytes cannot be combined with {with} ({why})"),
                        ))
                    }
                    None => Ok(()),
                };
                let app = if let Some(writes) = f.writes {
                    TcpAppSpec::Writes { writes, bytes }
                } else if let Some(t) = f.telnet {
                    no_bytes(1)?;
                    TcpAppSpec::Telnet(t)
                } else if let Some(w) = f.web {
                    no_bytes(2)?;
                    TcpAppSpec::Web(Box::new(w))
                } else if let Some(stripe) = f.stripe {
                    TcpAppSpec::Stripe { stripe, bytes }
                } else if let Some(ptcp) = f.ptcp {
                    TcpAppSpec::Ptcp { ptcp, bytes }
                } else {
                    TcpAppSpec::Bulk { bytes }
                };
                AppSpec::Tcp {
                    tcp: Box::new(tcp),
                    app,
                }
            }
            (None, Some(c), None) => {
                udp_only()?;
                AppSpec::Cbr(c)
            }
            (None, None, Some(p)) => {
                udp_only()?;
                AppSpec::Pareto(p)
            }
            (None, None, None) if first.is_some() || bytes.is_some() => {
                // TCP's application tables without the `tcp` table.
                let k = first.map_or("bytes", |a| TCP_APPS[a].0);
                return Err(refuse(
                    k,
                    format!("{k} applies to TCP flows only: add a `tcp` table (`tcp = {{}}`)"),
                ));
            }
            (t, c, p) => {
                let found = t.is_some() as u8 + c.is_some() as u8 + p.is_some() as u8;
                let k = if p.is_some() {
                    "pareto"
                } else if t.is_some() {
                    "tcp"
                } else {
                    "cbr"
                };
                return Err(refuse(
                    k,
                    format!(
                        "expected exactly one application table (cbr, pareto or tcp), found {found}"
                    ),
                ));
            }
        };
        Ok(FlowSpec {
            name: f.name,
            from: f.from,
            to: f.to,
            start: f.start,
            start_jitter: f.start_jitter,
            stop: f.stop,
            app,
            dscp: f.dscp,
            ack_dscp: f.ack_dscp,
            src_port: f.src_port,
            dst_port: f.dst_port,
        })
    }
}

/// A TCP application's periodic writes (`writes = { size = "4KB", every = "50ms" }`).
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WritesSpec {
    /// Bytes per write.
    pub size: Bytes,
    /// Time between writes (the first at the flow's start).
    pub every: Dur,
}

/// What a run records beyond the per-flow and per-place totals.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordSpec {
    /// Interval of the per-flow goodput series; default 1 s.
    #[serde(default = "default_interval")]
    pub interval: Dur,
    /// Interfaces (`"a->b"`) whose queue length is sampled.
    #[serde(default)]
    pub queues: Vec<String>,
    /// Queue sampling interval; default 10 ms.
    #[serde(default = "default_queue_interval")]
    pub queue_interval: Dur,
    /// TCP flows whose sender state (cwnd, ssthresh, srtt, RTO) is traced on change.
    #[serde(default)]
    pub traces: Vec<String>,
    /// Per-packet one-way delay statistics of every flow's data packets.
    #[serde(default)]
    pub delays: bool,
    /// One row per packet dropped or marked CE after the warm-up (`drop_events` table).
    #[serde(default)]
    pub drop_events: bool,
    /// Most rows `drop_events` keeps; later drops and marks are only counted.
    #[serde(
        default = "default_drop_events_limit",
        deserialize_with = "de_drop_events_limit"
    )]
    pub drop_events_limit: u64,
}

/// `record.drop_events_limit`: a number of rows, a negative one refused as such (serde's
/// own message offered "a whole number from 0 to 18446744073709551615"; 0 is refused
/// when the run is built, with its own message).
fn de_drop_events_limit<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    struct Rows;
    impl serde::de::Visitor<'_> for Rows {
        type Value = u64;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a whole number of rows, at least 1")
        }
        fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<u64, E> {
            Ok(v)
        }
        fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<u64, E> {
            u64::try_from(v).map_err(|_| {
                E::custom(format!(
                    "expected a whole number of rows, at least 1 (the most the drop_events \
                     table keeps), found {v}"
                ))
            })
        }
    }
    d.deserialize_u64(Rows)
}

/// Default of `record.drop_events_limit`: a million rows (under 50 MB while running).
pub const DEFAULT_DROP_EVENTS_LIMIT: u64 = 1_000_000;

fn default_drop_events_limit() -> u64 {
    DEFAULT_DROP_EVENTS_LIMIT
}

fn default_interval() -> Dur {
    Dur::from_secs(1)
}
fn default_queue_interval() -> Dur {
    Dur::from_millis(10)
}

impl Default for RecordSpec {
    fn default() -> Self {
        RecordSpec {
            interval: default_interval(),
            queues: Vec::new(),
            queue_interval: default_queue_interval(),
            traces: Vec::new(),
            delays: false,
            drop_events: false,
            drop_events_limit: DEFAULT_DROP_EVENTS_LIMIT,
        }
    }
}

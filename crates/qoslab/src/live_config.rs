//! The `[live]` table of a scenario (docs/live.md, docs/scenario-format.md): its types,
//! below the scenario that holds them, so that the scenario model does not import live
//! mode (which runs scenarios, one floor above them). Live mode (`crate::live`)
//! re-exports them.

use serde::Deserialize;

use crate::units::Bytes;

/// Linux congestion controls a live host can use (the ones this kernel has, docs/live.md).
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
    /// to 0, so losses are found by duplicate ACKs and timeouts only, before Linux 6.17;
    /// since 6.17 RACK is Linux's only SACK loss detection and `tcp_recovery` = 0 leaves
    /// it on (only the probes go). Default true (left as the kernel has it).
    #[serde(default = "yes")]
    pub rack_tlp: bool,
    /// Largest socket receive buffer (`tcp_rmem` max); default 32 MB (docs/live.md: a new
    /// namespace's 4 MB is too small above ~0.6 Gb/s at 40 ms).
    #[serde(default = "big_buffer")]
    pub rmem: Bytes,
    /// Largest socket send buffer (`tcp_wmem` max); default 32 MB.
    #[serde(default = "big_buffer")]
    pub wmem: Bytes,
    /// Transmit queue length of the hosts' TUN devices; default 10 000 (docs/live.md: the
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
    /// Packets per second the datapath is trusted to carry (read from the hosts and
    /// written back), against which the scenario's peak packet rate is checked before
    /// the run; default [`DEFAULT_MAX_PPS`].
    #[serde(default)]
    pub max_pps: Option<f64>,
    /// The user's own programs, each run inside its host's namespace.
    #[serde(default)]
    pub program: Vec<ProgramSpec>,
    /// Names of the flows qoslab's own endpoints run inside the datapath (any flow the
    /// simulator runs: pTCP, striping, MulTCP, periodic writes…): their sources start on
    /// the wall clock and their packets cross the same links, queues and conditioners
    /// as the kernel flows', to their simulated transport; no agent runs them. Default
    /// none (docs/live.md, "qoslab's own transports in a live run").
    #[serde(default)]
    pub simulated: Vec<String>,
}

/// `[[live.program]]`: a program of the user's, run inside a host's namespace during a
/// live run (its output kept in the `live_programs` table, its traffic in `live_conns`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProgramSpec {
    /// The host whose namespace it runs in.
    pub host: String,
    /// The program and its arguments (no shell: `["sh", "-c", "…"]` for one).
    pub argv: Vec<String>,
    /// When it is started; default 0.
    #[serde(default)]
    pub start: crate::time::Dur,
    /// When it is stopped (SIGTERM, then SIGKILL a second later) if still running;
    /// default the run's end.
    #[serde(default)]
    pub stop: Option<crate::time::Dur>,
    /// Its name in the results; default `<host>-<index>`.
    #[serde(default)]
    pub name: Option<String>,
}

impl ProgramSpec {
    /// Its name in the results (`name`, or `<host>-<i>` for the i-th program).
    pub fn label(&self, i: usize) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| format!("{}-{i}", self.host))
    }
}

/// True if `prog` names a file that can be run: a path (with a `/`) to an executable
/// file, or a name found in one of `path`'s folders (`$PATH`).
pub fn program_found(prog: &str, path: Option<&std::ffi::OsStr>) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if prog.contains('/') {
        return runnable(std::path::Path::new(prog));
    }
    !prog.is_empty()
        && path.is_some_and(|p| std::env::split_paths(p).any(|d| runnable(&d.join(prog))))
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
            max_pps: None,
            program: Vec::new(),
            simulated: Vec::new(),
        }
    }
}

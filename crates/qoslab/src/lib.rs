//! # qoslab
//!
//! A packet-level network simulator for TCP traffic conditioning and service
//! differentiation. One simulated world, one clock: everything that happens is an event
//! at an integer-nanosecond time, and ties break by insertion order, so a run is
//! reproducible bit for bit from (scenario, seed).
//!
//! ```text
//!   scenario (TOML/JSON) ──► scenario::build ──► World ──► run loop (engine)
//!                                                  │
//!        app ─► tcp/udp endpoint ─► [host egress conditioners] ─► iface queue ─► link
//!        link ─► [router ingress conditioners] ─► route ─► [egress conditioners] ─► queue
//!                                                  │
//!                                     stats ──► RunResult (tables) ──► Python
//! ```
//!
//! Layers, bottom up:
//! - [`time`]: `SimTime`, `Dur`, `Rate` (the only place serialisation delay is computed);
//!   [`units`]: `Bytes` and the unit strings of rates, durations and sizes.
//! - [`config`]: [`config::ScenarioError`] and reading `kind`-tagged configuration
//!   tables with exact key paths.
//! - [`rng`]: one seeded stream per component.
//! - [`engine`]: the deterministic event queue.
//! - [`packet`]: packets and headers.
//! - [`queue`], [`cond`], [`tcp`]: mechanisms as small state machines; each takes
//!   `now` as an argument and answers a decision, never scheduling events itself.
//! - [`net`]: nodes, links, interfaces, routing; [`world`] hosts the mechanisms and
//!   turns their decisions into events.
//! - [`app`]: traffic sources and sinks; [`flow`]: a flow's hosts, application,
//!   transport and counters; [`stats`]: what a run measures.
//! - [`scenario`]: the scenario file model, its validation and the world builder.
//! - [`capture`]: pcap files of chosen interfaces, for Wireshark and tshark.
//!
//! Lower floors never import upper ones: `time`, `units`, `config`, `packet` and the
//! mechanisms know nothing of `flow`, `world`, `scenario` or `capture`. [`error`]
//! gathers each module's error type for callers.

pub mod app;
pub mod capture;
pub mod cond;
pub mod config;
pub mod drop;
pub mod dscp;
pub mod engine;
pub mod error;
pub mod flow;
pub mod live;
/// The `[live]` table's types (below the scenario; `live` re-exports them).
pub mod live_config;
pub mod net;
pub mod packet;
pub mod qosmgr;
pub mod queue;
pub mod rng;
pub mod scenario;
pub mod stats;
pub mod tcp;
pub mod time;
pub mod units;
pub mod world;

use std::path::PathBuf;

use scenario::Format;
use stats::RunResult;

/// Any error qoslab returns.
#[derive(Clone, Debug, thiserror::Error, PartialEq)]
pub enum Error {
    /// Bad scenario input.
    #[error(transparent)]
    Scenario(#[from] config::ScenarioError),
    /// The simulation itself failed.
    #[error(transparent)]
    Run(#[from] world::RunError),
    /// A capture file could not be written (the run's results are lost with it).
    #[error(transparent)]
    Capture(#[from] capture::CaptureError),
    /// Live mode cannot run here (no root, no `/dev/net/tun`): the message says what
    /// is missing.
    #[error("{0}")]
    LiveUnavailable(String),
    /// A live run failed outside the world (namespaces, devices, agents).
    #[error("live run: {0}")]
    Live(String),
}

/// Parses, validates and runs a scenario given as text; `seed` overrides the file's.
pub fn run_str(text: &str, format: Format, seed: Option<u64>) -> Result<RunResult, Error> {
    let mut sc = scenario::parse(text, format)?;
    if let Some(s) = seed {
        sc.seed = s;
    }
    run(&sc)
}

/// How to run a scenario, beyond what its file says.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Directory for the `[[capture]]` pcap files (created if missing); `None`: the
    /// scenario's captures are validated but not written.
    pub pcap_dir: Option<PathBuf>,
    /// Set it (from another thread, e.g. on Ctrl-C) to stop the run with
    /// [`world::RunError::Interrupted`]; checked every 65 536 events.
    pub interrupt: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// Every router hop and every end of a transmission with a packet waiting as an
    /// event of its own (no cut-through, `world::cut`, and no transmissions committed
    /// ahead, `world::ahead`): the same tables with more events wherever no two events
    /// coincide to the nanosecond (`docs/architecture.md`), for checks and speed
    /// comparisons.
    pub every_hop: bool,
}

/// Runs a parsed scenario.
pub fn run(sc: &scenario::Scenario) -> Result<RunResult, Error> {
    run_with(sc, &RunOptions::default())
}

/// Runs a parsed scenario with options. With captures written, the result has a
/// `captures` table (capture, file, iface, direction, flow, packets).
pub fn run_with(sc: &scenario::Scenario, opts: &RunOptions) -> Result<RunResult, Error> {
    let t0 = std::time::Instant::now();
    let mut w = scenario::build(sc)?;
    w.interrupt = opts.interrupt.clone();
    w.cut_through = !opts.every_hop;
    if let (Some(dir), false) = (&opts.pcap_dir, w.capture_plan.is_empty()) {
        let addrs: Vec<[u8; 4]> = w.nodes.iter().map(|n| n.addr).collect();
        let c = capture::Capturer::open(dir, &w.capture_plan, &w.ifaces, &w.flows, &addrs)?;
        w.capture = Some(Box::new(c));
    }
    let ran = w.run();
    // Flush the files even if the run failed: a partial trace helps to see why.
    let mut cap = w.capture.take();
    let flushed = cap.as_deref_mut().map_or(Ok(()), capture::Capturer::finish);
    ran?;
    flushed?;
    let name = sc.name.clone().unwrap_or_else(|| "run".to_string());
    let mut r = stats::collect(&w, &name, sc.seed, t0.elapsed().as_secs_f64());
    if let Some(c) = cap {
        let names: Vec<&str> = w.flows.iter().map(|f| f.name.as_str()).collect();
        r.tables.insert("captures".into(), c.table(&names));
    }
    Ok(r)
}

/// Parses and validates a scenario without running it.
pub fn check_str(text: &str, format: Format) -> Result<(), Error> {
    let sc = scenario::parse(text, format)?;
    scenario::build(&sc)?;
    Ok(())
}

/// Parses and validates a scenario without running it; returns the warnings known
/// before a run (a rate without its unit, a delay as long as the run, …).
pub fn check_warnings(text: &str, format: Format) -> Result<Vec<String>, Error> {
    let sc = scenario::parse(text, format)?;
    Ok(scenario::build(&sc)?.warnings)
}

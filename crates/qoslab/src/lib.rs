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
//! - [`time`]: `SimTime`, `Dur`, `Rate` (the only place serialisation delay is computed).
//! - [`rng`]: one seeded stream per component.
//! - [`engine`]: the deterministic event queue.
//! - [`packet`]: packets and headers.
//! - [`queue`], [`cond`], [`tcp`]: mechanisms as small state machines; each takes
//!   `now` as an argument and answers a decision, never scheduling events itself.
//! - [`net`]: nodes, links, interfaces, routing; [`world`] hosts the mechanisms and
//!   turns their decisions into events.
//! - [`app`]: traffic sources and sinks; [`stats`]: what a run measures.
//! - [`scenario`]: the scenario file model, its validation and the world builder.
//! - [`capture`]: pcap files of chosen interfaces, for Wireshark and tshark.

pub mod app;
pub mod capture;
pub mod cond;
pub mod de;
pub mod engine;
pub mod error;
pub mod net;
pub mod packet;
pub mod queue;
pub mod rng;
pub mod scenario;
pub mod stats;
pub mod tcp;
pub mod time;
pub mod world;

use std::path::PathBuf;

use error::Error;
use scenario::Format;
use stats::RunResult;

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
    /// [`error::RunError::Interrupted`]; checked every 65 536 events.
    pub interrupt: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
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
    if let (Some(dir), false) = (&opts.pcap_dir, w.capture_plan.is_empty()) {
        let c = capture::Capturer::open(dir, &w.capture_plan, &w.ifaces, &w.flows)?;
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

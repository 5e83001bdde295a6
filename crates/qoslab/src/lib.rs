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

pub mod app;
pub mod cond;
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

/// Runs a parsed scenario.
pub fn run(sc: &scenario::Scenario) -> Result<RunResult, Error> {
    let t0 = std::time::Instant::now();
    let mut w = scenario::build(sc)?;
    w.run()?;
    let name = sc.name.clone().unwrap_or_else(|| "run".to_string());
    Ok(stats::collect(
        &w,
        &name,
        sc.seed,
        t0.elapsed().as_secs_f64(),
    ))
}

/// Parses and validates a scenario without running it.
pub fn check_str(text: &str, format: Format) -> Result<(), Error> {
    let sc = scenario::parse(text, format)?;
    scenario::build(&sc)?;
    Ok(())
}

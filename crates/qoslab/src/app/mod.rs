//! Traffic sources and sinks, as small state machines driven by the host.
//!
//! A source answers `on_timer(now)` with whether to send a packet now and when it next
//! wants attention; it never schedules anything itself.

mod cbr;
mod onoff;
mod sink;

pub use cbr::{Cbr, CbrConfig};
pub use onoff::{ParetoConfig, ParetoOnOff};
pub use sink::UdpSink;

use crate::time::SimTime;

/// What a source wants after a timer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SourceStep {
    /// Send one packet now.
    pub send: bool,
    /// When to call `on_timer` next; `None` when the source is finished.
    pub next: Option<SimTime>,
}

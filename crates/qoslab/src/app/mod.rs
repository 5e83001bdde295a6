//! Traffic sources and sinks, as small state machines driven by the host.
//!
//! A source answers `on_timer(now)` with whether to send a packet now and when it next
//! wants attention; it never schedules anything itself.

mod cbr;
mod onoff;
pub mod ptcp;
mod sink;
mod stripe;
mod telnet;
pub mod web;

pub use cbr::{Cbr, CbrConfig, RateChange};
pub use onoff::{ParetoConfig, ParetoOnOff};
pub use ptcp::{Ptcp, PtcpConfig};
pub use sink::UdpSink;
pub use stripe::{Stripe, StripeConfig, StripeConn, StripePolicy};
pub use telnet::{Telnet, TelnetConfig, TelnetStep, TelnetWrite};
pub use web::{Web, WebConfig};

use crate::config::ScenarioError;
use crate::packet::{MAX_UDP_SIZE, UDP_IP_HEADER};
use crate::time::SimTime;

/// Checks a UDP source's packet `size` (key `size`): from the UDP/IP headers up to the
/// largest UDP datagram.
fn check_udp_size(size: u32) -> Result<(), ScenarioError> {
    if size < UDP_IP_HEADER {
        return Err(ScenarioError::new(
            "size",
            format!("expected at least {UDP_IP_HEADER} bytes (the UDP/IP headers), found {size}"),
        ));
    }
    if size > MAX_UDP_SIZE {
        return Err(ScenarioError::new(
            "size",
            format!(
                "expected at most {MAX_UDP_SIZE} bytes (the largest UDP datagram), found {size}"
            ),
        ));
    }
    Ok(())
}

/// What a source wants after a timer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SourceStep {
    /// Send one packet now.
    pub send: bool,
    /// When to call `on_timer` next; `None` when the source is finished.
    pub next: Option<SimTime>,
}

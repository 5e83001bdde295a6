//! Conditioners: meters, markers, policers, shapers and droppers at a network edge
//! (RFC 2475 §2.3.3).
//!
//! A conditioner sees `(now, &mut Packet)` and answers an [`Action`]; it owns no clock
//! and schedules nothing. The node that hosts it turns `DelayUntil` into an event and
//! calls [`Conditioner::on_timer`] at [`Conditioner::next_timer`]. Conditioners can sit
//! at host egress, router ingress and router egress (see `net`).

mod delay;

pub use delay::FixedDelay;

use crate::packet::Packet;
use crate::queue::DropCause;
use crate::time::SimTime;

/// What a conditioner decides for one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Forward now; the packet may have been re-marked in place.
    Pass,
    /// Discard, recording why.
    Drop(DropCause),
    /// Hold the packet until the given time (shaper, delay line), then forward it.
    DelayUntil(SimTime),
}

/// A meter, marker, policer or shaper at a network edge.
pub trait Conditioner {
    /// Decides the fate of `pkt` arriving at `now`; may set its colour/DSCP.
    fn condition(&mut self, now: SimTime, pkt: &mut Packet) -> Action;
    /// Earliest time this mechanism wants `on_timer`; `None` if never.
    fn next_timer(&self) -> Option<SimTime> {
        None
    }
    /// Runs the periodic part of the mechanism; the host calls it at `next_timer()`.
    fn on_timer(&mut self, _now: SimTime) {}
}

/// Every conditioner qoslab has; dispatch is one `match`.
#[derive(Debug)]
pub enum AnyConditioner {
    /// Hold every packet for a fixed time.
    FixedDelay(FixedDelay),
}

impl Conditioner for AnyConditioner {
    fn condition(&mut self, now: SimTime, pkt: &mut Packet) -> Action {
        match self {
            AnyConditioner::FixedDelay(c) => c.condition(now, pkt),
        }
    }
    fn next_timer(&self) -> Option<SimTime> {
        match self {
            AnyConditioner::FixedDelay(c) => c.next_timer(),
        }
    }
    fn on_timer(&mut self, now: SimTime) {
        match self {
            AnyConditioner::FixedDelay(c) => c.on_timer(now),
        }
    }
}

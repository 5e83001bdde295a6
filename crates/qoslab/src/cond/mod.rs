//! Conditioners: meters, markers, policers, shapers and droppers at a network edge
//! (RFC 2475 §2.3.3).
//!
//! A conditioner sees `(now, &mut Packet)` and answers an [`Action`]; it owns no clock
//! and schedules nothing. The node that hosts it turns `DelayUntil` into an event and
//! calls [`Conditioner::on_timer`] at [`Conditioner::next_timer`]. Conditioners can sit
//! at host egress, router ingress and router egress (see `net`).
//!
//! ```text
//!   packet ─► Chain: [ Policy: classify ─► per-key meter/marker/shaper ] ─► [ stage ] ─► queue
//! ```
//!
//! - [`classify`]: multi-field filters with ANY wildcards (P0 Table 1).
//! - [`policy`]: policy tables, per-flow or aggregate state created lazily per key.
//! - [`TokenBucket`] (P0 profile `<b, r, r_p, L_m>`; mark, police, shape),
//!   [`Srtcm`] (RFC 2697), [`Trtcm`] (RFC 2698), [`TswEstimator`], [`Tsw2cm`] and
//!   [`Tsw3cm`] (RFC 2859), [`FixedDelay`].
//! - [`Trc`]: P1's TCP rate controller (per-flow drops and delays from a TCP model).
//! - [`Chain`]: stages in order; [`ConditionerConfig`]: what scenario files say.
//!
//! Markers write `colour`, `dscp` (AF codepoints, default AF11/12/13) and `in_profile`
//! (green ⇒ true). Policing drops with `DropCause::Policed`; a full shaper buffer with
//! `DropCause::CondBufferFull`.

pub mod action;
mod chain;
pub mod classify;
mod config;
mod delay;
pub mod policy;
mod srtcm;
mod token_bucket;
pub mod trc;
mod trtcm;
mod tsw;

pub use action::{Codepoints, MeterAction, ShapeTimer};
pub use chain::Chain;
pub use classify::{Filter, FilterConfig};
pub use config::{ColourName, ConditionerConfig, TbActionName, DEFAULT_TSW_WINDOW};
pub use delay::FixedDelay;
pub use policy::{Aggregate, Policy, PolicyAction, PolicyRule, PolicyRuleConfig, ProfileConfig};
pub use srtcm::{Srtcm, SrtcmConfig};
pub use token_bucket::{TbAction, TokenBucket, TokenBucketConfig};
pub use trc::{Trc, TrcConfig};
pub use trtcm::{Trtcm, TrtcmConfig};
pub use tsw::{Tsw2cm, Tsw3cm, TswConfig, TswEstimator};

use crate::packet::Packet;
use crate::queue::DropCause;
use crate::rng::RngStream;
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
#[derive(Clone, Debug)]
pub enum AnyConditioner {
    /// Hold every packet for a fixed time.
    FixedDelay(FixedDelay),
    /// Token bucket marker/policer/shaper (P0 §3.2).
    TokenBucket(TokenBucket),
    /// Single rate three colour marker (RFC 2697).
    Srtcm(Srtcm),
    /// Two rate three colour marker (RFC 2698).
    Trtcm(Trtcm),
    /// TSW two-colour marker (Clark & Fang 1998).
    Tsw2cm(Tsw2cm),
    /// TSW three-colour marker (RFC 2859).
    Tsw3cm(Tsw3cm),
    /// Policy table (P0 §2.1 Table 1).
    Policy(Policy),
    /// TCP rate controller (P1).
    Trc(Trc),
}

macro_rules! dispatch {
    ($self:expr, $c:ident => $e:expr) => {
        match $self {
            AnyConditioner::FixedDelay($c) => $e,
            AnyConditioner::TokenBucket($c) => $e,
            AnyConditioner::Srtcm($c) => $e,
            AnyConditioner::Trtcm($c) => $e,
            AnyConditioner::Tsw2cm($c) => $e,
            AnyConditioner::Tsw3cm($c) => $e,
            AnyConditioner::Policy($c) => $e,
            AnyConditioner::Trc($c) => $e,
        }
    };
}

impl AnyConditioner {
    /// Replaces the random stream of randomised mechanisms (TSW markers); others ignore it.
    pub fn reseed(&mut self, rng: RngStream) {
        match self {
            AnyConditioner::Tsw2cm(c) => c.reseed(rng),
            AnyConditioner::Tsw3cm(c) => c.reseed(rng),
            _ => {}
        }
    }
}

impl Conditioner for AnyConditioner {
    #[inline]
    fn condition(&mut self, now: SimTime, pkt: &mut Packet) -> Action {
        dispatch!(self, c => c.condition(now, pkt))
    }
    fn next_timer(&self) -> Option<SimTime> {
        dispatch!(self, c => c.next_timer())
    }
    fn on_timer(&mut self, now: SimTime) {
        dispatch!(self, c => c.on_timer(now))
    }
}

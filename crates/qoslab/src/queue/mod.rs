//! Queue disciplines: a buffer that decides admission and service order, never timing.
//!
//! The interface that owns a queue counts arrivals, departures and drops (by cause) in
//! one place, so disciplines never touch statistics; `tests` assert
//! `arrived = departed + dropped + queued` for every kind.

mod config;
mod droptail;

pub use config::QueueConfig;
pub use droptail::DropTail;

use serde::Serialize;

use crate::packet::Packet;
use crate::time::SimTime;

/// Why a packet was discarded; a closed set, counted per place.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DropCause {
    /// The buffer was full (tail drop).
    Overflow,
    /// RED dropped it early, at random, with the average between the thresholds.
    RedEarly,
    /// RED dropped it because the average was above the maximum threshold.
    RedForced,
    /// Pushed out of a full shared buffer to make room (Longest Queue Drop).
    PushedOut,
    /// A policer found it out of profile.
    Policed,
    /// A conditioner's own buffer (shaper, delay line) was full.
    CondBufferFull,
    /// A controlled drop by a rate controller (TRC).
    Controlled,
    /// Random loss configured on a link (loss model).
    RandomLoss,
    /// The node had no route to the destination.
    NoRoute,
}

impl DropCause {
    /// Every cause, in a fixed order (for tables and per-cause arrays).
    pub const ALL: [DropCause; 9] = [
        DropCause::Overflow,
        DropCause::RedEarly,
        DropCause::RedForced,
        DropCause::PushedOut,
        DropCause::Policed,
        DropCause::CondBufferFull,
        DropCause::Controlled,
        DropCause::RandomLoss,
        DropCause::NoRoute,
    ];
    /// Position in [`DropCause::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
    /// The snake_case name used in result tables.
    pub fn name(self) -> &'static str {
        match self {
            DropCause::Overflow => "overflow",
            DropCause::RedEarly => "red_early",
            DropCause::RedForced => "red_forced",
            DropCause::PushedOut => "pushed_out",
            DropCause::Policed => "policed",
            DropCause::CondBufferFull => "cond_buffer_full",
            DropCause::Controlled => "controlled",
            DropCause::RandomLoss => "random_loss",
            DropCause::NoRoute => "no_route",
        }
    }
}

/// Packets a queue discarded or marked during one call; the host counts and clears it.
#[derive(Debug, Default)]
pub struct Drops {
    /// Discarded packets with their causes, in the order they were discarded.
    pub dropped: Vec<(Packet, DropCause)>,
    /// Packets marked CE instead of dropped (ECN) during the call.
    pub ecn_marked: u32,
}

impl Drops {
    /// Records a discarded packet.
    pub fn push(&mut self, pkt: Packet, cause: DropCause) {
        self.dropped.push((pkt, cause));
    }
    /// Forgets everything recorded, keeping the allocation.
    pub fn clear(&mut self) {
        self.dropped.clear();
        self.ecn_marked = 0;
    }
    /// True if nothing was dropped or marked.
    pub fn is_empty(&self) -> bool {
        self.dropped.is_empty() && self.ecn_marked == 0
    }
}

/// How full a queue is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Occupancy {
    /// Packets held.
    pub packets: u32,
    /// Bytes held.
    pub bytes: u64,
}

/// A buffer limit, in packets or in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// At most this many packets.
    Packets(u32),
    /// At most this many bytes.
    Bytes(u64),
}

impl Limit {
    /// True if a packet of `size` bytes fits on top of `occ`.
    pub fn admits(self, occ: Occupancy, size: u32) -> bool {
        match self {
            Limit::Packets(n) => occ.packets < n,
            Limit::Bytes(b) => occ.bytes + size as u64 <= b,
        }
    }
}

/// A buffer with a discipline: decides admission and service order, never timing.
pub trait Queue {
    /// Offers `pkt` at `now`; anything discarded (the arrival or a pushed-out packet)
    /// goes to `drops`.
    fn enqueue(&mut self, now: SimTime, pkt: Packet, drops: &mut Drops);
    /// Takes the next packet to send, discarding at the head into `drops` if the
    /// discipline does.
    fn dequeue(&mut self, now: SimTime, drops: &mut Drops) -> Option<Packet>;
    /// Current occupancy in packets and bytes.
    fn occupancy(&self) -> Occupancy;
    /// The discipline's congestion estimate for samples (RED's average); default: none.
    fn average(&self) -> Option<f64> {
        None
    }
}

/// Every queue discipline qoslab has; dispatch is one `match`.
#[derive(Debug)]
pub enum AnyQueue {
    /// First-in first-out, tail drop.
    DropTail(DropTail),
}

impl Queue for AnyQueue {
    fn enqueue(&mut self, now: SimTime, pkt: Packet, drops: &mut Drops) {
        match self {
            AnyQueue::DropTail(q) => q.enqueue(now, pkt, drops),
        }
    }
    fn dequeue(&mut self, now: SimTime, drops: &mut Drops) -> Option<Packet> {
        match self {
            AnyQueue::DropTail(q) => q.dequeue(now, drops),
        }
    }
    fn occupancy(&self) -> Occupancy {
        match self {
            AnyQueue::DropTail(q) => q.occupancy(),
        }
    }
    fn average(&self) -> Option<f64> {
        match self {
            AnyQueue::DropTail(q) => q.average(),
        }
    }
}

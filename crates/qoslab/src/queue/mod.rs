//! Queue disciplines: a buffer that decides admission and service order, never timing.
//!
//! The interface that owns a queue counts arrivals, departures and drops (by cause) in
//! one place, so disciplines never touch statistics; `tests` assert
//! `arrived = departed + dropped + queued` for every kind.

mod config;
mod droptail;
mod ered;
mod lqd;
mod multired;
mod red;

pub use config::QueueConfig;
pub use droptail::{DropTail, DropTailConfig};
pub use ered::{Ered, EredConfig};
pub use lqd::{Lqd, LqdConfig, LqdService, Service};
pub use multired::{MultiRed, MultiRedConfig, MultiRedMode, MultiRedSettings};
pub use red::{Red, RedConfig, RedParams, RedSettings, RedThresholds};

/// Packets held when a queue gives no limit.
pub const DEFAULT_LIMIT: u32 = 100;

use serde::Serialize;

use crate::config::ScenarioError;
use crate::packet::Packet;
use crate::time::SimTime;
use crate::units::Bytes;

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
    /// The limit a table's `limit` [packets] and `limit_bytes` keys give (bytes win;
    /// [`DEFAULT_LIMIT`] packets when neither is set).
    pub fn from_keys(limit: Option<u32>, limit_bytes: Option<Bytes>) -> Limit {
        match (limit, limit_bytes) {
            (_, Some(b)) => Limit::Bytes(b.0),
            (Some(n), None) => Limit::Packets(n),
            (None, None) => Limit::Packets(DEFAULT_LIMIT),
        }
    }

    /// Checks a table's `limit` / `limit_bytes` keys: not both, neither zero.
    pub fn check_keys(limit: Option<u32>, limit_bytes: Option<Bytes>) -> Result<(), ScenarioError> {
        let e = |k: &str, m: &str| Err(ScenarioError::new(k, m));
        match (limit, limit_bytes) {
            (Some(_), Some(_)) => e(
                "limit_bytes",
                "expected either limit (packets) or limit_bytes, not both",
            ),
            (Some(0), None) => e("limit", "expected a limit of at least 1 packet, found 0"),
            (None, Some(Bytes(0))) => e(
                "limit_bytes",
                "expected a limit of at least 1 byte, found 0",
            ),
            _ => Ok(()),
        }
    }

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
    /// RED (Floyd & Jacobson 1993), optionally gentle, ECN, byte mode.
    Red(Red),
    /// Multi-colour RED: RIO-C, RIO-D or WRED.
    MultiRed(MultiRed),
    /// ERED (P0): RED, gentler on packets marked in profile.
    Ered(Ered),
    /// Longest Queue Drop over per-flow queues (Suter et al. 1998).
    Lqd(Lqd),
}

macro_rules! each {
    ($self:ident, $q:ident => $e:expr) => {
        match $self {
            AnyQueue::DropTail($q) => $e,
            AnyQueue::Red($q) => $e,
            AnyQueue::MultiRed($q) => $e,
            AnyQueue::Ered($q) => $e,
            AnyQueue::Lqd($q) => $e,
        }
    };
}

impl Queue for AnyQueue {
    fn enqueue(&mut self, now: SimTime, pkt: Packet, drops: &mut Drops) {
        each!(self, q => q.enqueue(now, pkt, drops))
    }
    fn dequeue(&mut self, now: SimTime, drops: &mut Drops) -> Option<Packet> {
        each!(self, q => q.dequeue(now, drops))
    }
    fn occupancy(&self) -> Occupancy {
        each!(self, q => q.occupancy())
    }
    fn average(&self) -> Option<f64> {
        each!(self, q => q.average())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Colour, Ecn, FlowId};
    use crate::rng::RngStream;
    use crate::time::{Dur, Rate};

    /// Totals of packets and bytes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    struct Tally {
        packets: u64,
        bytes: u64,
    }

    impl Tally {
        fn add(&mut self, p: &Packet) {
            self.packets += 1;
            self.bytes += p.size as u64;
        }
    }

    /// Random arrivals and departures (bursts, idle periods, five flows, three colours,
    /// mixed sizes, ECN and profile marks); after every call checks
    /// arrived = departed + dropped + queued in packets and in bytes.
    fn check_conservation(cfg: &QueueConfig, seed: u64) {
        cfg.validate().unwrap();
        let mut q = cfg.build(Rate::from_mbps(10), RngStream::derive(seed, "queue"));
        let mut r = RngStream::derive(seed, "traffic");
        let mut d = Drops::default();
        let (mut arrived, mut departed, mut dropped) =
            (Tally::default(), Tally::default(), Tally::default());
        let mut now = SimTime::ZERO;
        let mut marked = 0u64;
        for uid in 0..30_000u64 {
            now += Dur::from_nanos(r.below(400_000));
            // Arrivals outnumber departures in bursts, so every drop path is taken.
            if r.bernoulli(0.55) {
                let p = Packet {
                    uid,
                    flow: FlowId(r.below(5) as u32),
                    size: [40, 576, 1000, 1500][r.below(4) as usize],
                    colour: Colour::from_index(r.below(3) as usize),
                    ecn: if r.bernoulli(0.5) {
                        Ecn::Ect
                    } else {
                        Ecn::NotEct
                    },
                    in_profile: r.bernoulli(0.5),
                    ..Default::default()
                };
                arrived.add(&p);
                q.enqueue(now, p, &mut d);
            } else if let Some(p) = q.dequeue(now, &mut d) {
                departed.add(&p);
            }
            for (p, _) in &d.dropped {
                dropped.add(p);
            }
            marked += d.ecn_marked as u64;
            d.clear();
            let occ = q.occupancy();
            assert_eq!(
                arrived.packets,
                departed.packets + dropped.packets + occ.packets as u64,
                "{cfg:?} packets at step {uid}"
            );
            assert_eq!(
                arrived.bytes,
                departed.bytes + dropped.bytes + occ.bytes,
                "{cfg:?} bytes at step {uid}"
            );
        }
        // Drain: everything held comes out.
        while let Some(p) = q.dequeue(now, &mut d) {
            departed.add(&p);
        }
        assert_eq!(q.occupancy(), Occupancy::default());
        assert_eq!(arrived.bytes, departed.bytes + dropped.bytes);
        assert!(dropped.packets > 0, "{cfg:?} never dropped: test too weak");
        let _ = marked;
    }

    #[test]
    fn conservation_for_every_kind() {
        let configs = [
            r#"{ kind = "droptail", limit = 20 }"#,
            r#"{ kind = "droptail", limit_bytes = "20KB" }"#,
            r#"{ kind = "red", limit = 20, min_th = 2, max_th = 8, w_q = 0.05 }"#,
            r#"{ kind = "red", limit = 20, min_th = 2, max_th = 8, w_q = 0.05, gentle = true, ecn = true }"#,
            r#"{ kind = "red", limit_bytes = "20KB", min_th = 2000, max_th = 8000, w_q = 0.05 }"#,
            r#"{ kind = "rio_c", limit = 60, w_q = 0.05, dp0 = { min_th = 10, max_th = 20, max_p = 0.1 } }"#,
            r#"{ kind = "rio_d", limit = 60 }"#,
            r#"{ kind = "wred", limit = 60, w_q = 0.05 }"#,
            r#"{ kind = "ered", limit = 20, min_th = 2, max_th = 8, w_q = 0.05, ecn = true }"#,
            r#"{ kind = "lqd", limit = 20 }"#,
            r#"{ kind = "lqd", limit = 20, service = "fifo" }"#,
            r#"{ kind = "lqd", limit_bytes = "20KB", quantum = 500 }"#,
            r#"{ kind = "lqd", limit_bytes = "8KB", service = "fifo" }"#,
        ];
        for (i, c) in configs.iter().enumerate() {
            let cfg: QueueConfig = toml::from_str::<toml::Table>(&format!("q = {c}")).unwrap()["q"]
                .clone()
                .try_into()
                .unwrap();
            check_conservation(&cfg, i as u64);
        }
    }
}

//! Queue disciplines: a buffer that decides admission and service order, never timing.
//!
//! The interface that owns a queue counts arrivals, departures and drops (by cause) in
//! one place, so disciplines never touch statistics; `tests` assert
//! `arrived = departed + dropped + queued` for every kind.
//!
//! A scenario's `queue = { kind = … }` table is read by [`QueueConfig`], the dispatch
//! of configurations as [`AnyQueue`] is of mechanisms; each family's keys, checks and
//! builder sit beside its mechanism ([`DropTailConfig`], [`RedConfig`],
//! [`EredConfig`], [`MultiRedConfig`], [`LqdConfig`], [`CodelConfig`],
//! [`FqCodelConfig`], [`PieConfig`]):
//!
//! ```toml
//! queue = { kind = "droptail", limit = 100 }
//! queue = { kind = "droptail", limit_bytes = "64KB" }
//! queue = { kind = "red", limit = 100, min_th = 5, max_th = 15, max_p = 0.1, w_q = 0.002, gentle = true, ecn = false }
//! queue = { kind = "rio_c", limit = 100, dp2 = { min_th = 10, max_th = 25, max_p = 0.1 } }
//! queue = { kind = "ered", min_th = 5, max_th = 15, factor = 1.5 }
//! queue = { kind = "lqd", limit_bytes = "100KB", service = "drr", quantum = 1500 }
//! queue = { kind = "codel", target = "5ms", interval = "100ms", ecn = true }
//! queue = { kind = "fq_codel", flows = 1024, quantum = 1514, limit = 10240 }
//! queue = { kind = "pie", target = "15ms", t_update = "15ms", alpha = 0.125, beta = 1.25 }
//! ```
//!
//! Unknown keys are errors, named at their exact path (`link[1].queue.max_p`).

mod codel;
mod droptail;
mod ered;
mod fq_codel;
mod lqd;
mod multired;
mod pie;
mod red;
mod sched;

pub use crate::drop::DropCause;

pub use codel::{control_law, Codel, CodelConfig, CodelParams, CodelState, AQM_DEFAULT_LIMIT};
pub use droptail::{DropTail, DropTailConfig};
pub use ered::{Ered, EredConfig};
pub use fq_codel::{FqCodel, FqCodelConfig, FQ_CODEL_MAX_FLOWS};
pub use lqd::{Lqd, LqdConfig, LqdService, Service};
pub use multired::{MultiRed, MultiRedConfig, MultiRedMode, MultiRedSettings};
pub use pie::{Pie, PieConfig, PieController, PieParams};
pub(crate) use red::Judged;
pub use red::{Red, RedConfig, RedParams, RedSettings, RedThresholds};
pub use sched::{ClassConfig, ClassContext, ClassCounters, Sched, SchedConfig, Weighted};

/// Packets held when a queue gives no limit.
pub const DEFAULT_LIMIT: u32 = 100;

use serde::{Deserialize, Serialize};

use crate::config::ScenarioError;
use crate::packet::Packet;
use crate::rng::RngStream;
use crate::time::{Rate, SimTime};
use crate::units::Bytes;

/// Packets a queue discarded or marked during one call; the host counts and clears it.
#[derive(Debug, Default)]
pub struct Drops {
    /// Discarded packets with their causes, in the order they were discarded.
    pub dropped: Vec<(Packet, DropCause)>,
    /// Packets marked CE instead of dropped (ECN) during the call.
    pub ecn_marked: u32,
    /// Copies of the packets marked CE during the call, as marked, with the cause
    /// they were marked for instead of dropped (only with `keep_marked`: the
    /// per-packet drop log wants them).
    pub marked: Vec<(Packet, DropCause)>,
    /// Keep a copy of every packet marked in `marked`.
    pub keep_marked: bool,
}

impl Drops {
    /// Records a discarded packet.
    pub fn push(&mut self, pkt: Packet, cause: DropCause) {
        self.dropped.push((pkt, cause));
    }
    /// Records a packet marked CE instead of dropped early by RED.
    #[inline]
    pub fn mark(&mut self, pkt: &Packet) {
        self.mark_for(pkt, DropCause::RedEarly);
    }
    /// Records a packet marked CE instead of dropped for `cause` (CoDel, PIE).
    #[inline]
    pub fn mark_for(&mut self, pkt: &Packet, cause: DropCause) {
        self.ecn_marked += 1;
        if self.keep_marked {
            self.marked.push((*pkt, cause));
        }
    }
    /// Forgets everything recorded, keeping the allocation.
    pub fn clear(&mut self) {
        self.dropped.clear();
        self.ecn_marked = 0;
        self.marked.clear();
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

/// Every queue discipline qoslab has; dispatch is one `match`. `repr(u8)`: the match
/// reads a tag byte instead of decoding a niche of one variant's fields (every arrival
/// at every queue dispatches).
#[derive(Debug)]
#[repr(u8)]
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
    /// CoDel (RFC 8289).
    Codel(Codel),
    /// FQ-CoDel (RFC 8290).
    FqCodel(Box<FqCodel>),
    /// PIE (RFC 8033).
    Pie(Pie),
    /// Per-class queues with strict priority and DRR, WRR or WFQ (SCFQ).
    Classes(Box<Sched>),
}

macro_rules! each {
    ($self:ident, $q:ident => $e:expr) => {
        match $self {
            AnyQueue::DropTail($q) => $e,
            AnyQueue::Red($q) => $e,
            AnyQueue::MultiRed($q) => $e,
            AnyQueue::Ered($q) => $e,
            AnyQueue::Lqd($q) => $e,
            AnyQueue::Codel($q) => $e,
            AnyQueue::FqCodel($q) => $e,
            AnyQueue::Pie($q) => $e,
            AnyQueue::Classes($q) => $e,
        }
    };
}

impl AnyQueue {
    /// True if enqueueing `pkt` and dequeueing at once would hand it back with no other
    /// effect (an empty plain FIFO that admits it): the world then puts it on the idle
    /// link directly. Disciplines with state per arrival (RED's average) say false.
    #[inline]
    pub fn passes_when_empty(&self, pkt: &Packet) -> bool {
        match self {
            AnyQueue::DropTail(q) => q.passes_when_empty(pkt),
            _ => false,
        }
    }

    /// The same as `enqueue(now, *pkt, drops)`; the plain FIFO and RED copy the packet once,
    /// straight from where it waits into its buffer (a by-value packet is copied on the
    /// way in, and a packet is 150-odd bytes).
    #[inline]
    pub fn enqueue_copy(&mut self, now: SimTime, pkt: &Packet, drops: &mut Drops) {
        match self {
            AnyQueue::DropTail(q) => q.enqueue_copy(pkt, drops),
            AnyQueue::Red(q) => q.enqueue_class(now, pkt, drops, 0, 1.0),
            other => other.enqueue(now, *pkt, drops),
        }
    }

    /// The same as `dequeue(now, drops).map(|p| put(&p))`; the plain FIFO and RED hand `put`
    /// the packet where it lies in its buffer, with no copy on the way out.
    #[inline]
    pub fn dequeue_with<R>(
        &mut self,
        now: SimTime,
        drops: &mut Drops,
        put: impl FnOnce(&Packet) -> R,
    ) -> Option<R> {
        match self {
            AnyQueue::DropTail(q) => q.dequeue_with(put),
            AnyQueue::Red(q) => q.dequeue_with(now, put),
            other => other.dequeue(now, drops).map(|p| put(&p)),
        }
    }

    /// Per-colour averages [packets] of the multi-colour RED queues in this queue, as
    /// (class index or `None` for the queue itself, [green, yellow, red]) pushed onto
    /// `out`: RIO-C's average of each colour and better, RIO-D's per colour, WRED's
    /// one average three times. Other disciplines keep no per-colour average (ERED has
    /// one average and scales the probability) and push nothing.
    pub fn colour_averages(&self, out: &mut Vec<(Option<u32>, [f64; 3])>) {
        match self {
            AnyQueue::MultiRed(q) => out.push((None, q.averages())),
            AnyQueue::Classes(s) => s.colour_averages(out),
            _ => {}
        }
    }
}

/// Dispatch is inlined into the forwarding path, so the plain FIFO (most queues of a
/// run) takes the packet straight from the caller, with no intermediate copy.
impl Queue for AnyQueue {
    #[inline]
    fn enqueue(&mut self, now: SimTime, pkt: Packet, drops: &mut Drops) {
        each!(self, q => q.enqueue(now, pkt, drops))
    }
    #[inline]
    fn dequeue(&mut self, now: SimTime, drops: &mut Drops) -> Option<Packet> {
        each!(self, q => q.dequeue(now, drops))
    }
    #[inline]
    fn occupancy(&self) -> Occupancy {
        each!(self, q => q.occupancy())
    }
    fn average(&self) -> Option<f64> {
        each!(self, q => q.average())
    }
}

/// A queue discipline and its parameters, as written in a scenario file: a table
/// tagged by `kind` (read through [`crate::config::Tagged`], so errors name the exact key).
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(remote = "Self", rename_all = "snake_case", deny_unknown_fields)]
pub enum QueueConfig {
    /// FIFO with tail drop (`kind = "droptail"`).
    #[serde(rename = "droptail", alias = "drop_tail")]
    DropTail(DropTailConfig),
    /// RED (Floyd & Jacobson 1993), optionally gentle and ECN-marking.
    Red(RedConfig),
    /// Multi-colour RED, coupled averages (RIO-C), P3's defaults.
    RioC(MultiRedConfig),
    /// Multi-colour RED, decoupled per-colour averages (RIO-D), P3's defaults.
    RioD(MultiRedConfig),
    /// Weighted RED: one average, per-colour curves, P3's defaults.
    Wred(MultiRedConfig),
    /// ERED (P0): RED whose curve applies to unmarked packets; packets marked in
    /// profile get p_b / `factor`.
    Ered(EredConfig),
    /// Longest Queue Drop over per-flow queues (Suter et al. 1998).
    Lqd(LqdConfig),
    /// CoDel (RFC 8289): head drops by sojourn time.
    Codel(CodelConfig),
    /// FQ-CoDel (RFC 8290): hashed flow queues, DRR over new then old flows, CoDel each.
    FqCodel(FqCodelConfig),
    /// PIE (RFC 8033): random drops on arrival by a PI controller of the delay.
    Pie(PieConfig),
    /// Per-class queues and a scheduler (DiffServ PHBs).
    Classes(SchedConfig),
}

impl crate::config::Tagged for QueueConfig {
    const WHAT: &'static str = "queue";
    const KINDS: &'static [&'static str] = &[
        "droptail",
        "drop_tail",
        "red",
        "rio_c",
        "rio_d",
        "wred",
        "ered",
        "lqd",
        "codel",
        "fq_codel",
        "pie",
        "classes",
    ];
    fn read_external<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        QueueConfig::deserialize(d)
    }
    fn write_external<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        QueueConfig::serialize(self, s)
    }
}

impl<'de> Deserialize<'de> for QueueConfig {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        crate::config::read_tagged(d)
    }
}

impl Serialize for QueueConfig {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        crate::config::write_tagged(self, s)
    }
}

impl Default for QueueConfig {
    /// DropTail, 100 packets.
    fn default() -> Self {
        QueueConfig::DropTail(DropTailConfig {
            limit: Some(DEFAULT_LIMIT),
            limit_bytes: None,
        })
    }
}

impl QueueConfig {
    /// Checks every parameter; the error's key is the field name relative to the queue
    /// table (`"max_th"`, `"dp1.max_p"`).
    pub fn validate(&self) -> Result<(), ScenarioError> {
        match self {
            QueueConfig::DropTail(c) => c.validate(),
            QueueConfig::Red(c) => c.validate(),
            QueueConfig::RioC(c) | QueueConfig::RioD(c) | QueueConfig::Wred(c) => c.validate(),
            QueueConfig::Ered(c) => c.validate(),
            QueueConfig::Lqd(c) => c.validate(),
            QueueConfig::Codel(c) => c.validate(),
            QueueConfig::FqCodel(c) => c.validate(),
            QueueConfig::Pie(c) => c.validate(),
            QueueConfig::Classes(c) => c.validate(),
        }
    }

    /// Builds the queue for a link of `link_rate` (RED's idle decay), drawing from
    /// `rng`; call [`QueueConfig::validate`] first.
    pub fn build(&self, link_rate: Rate, rng: RngStream) -> AnyQueue {
        match self {
            QueueConfig::DropTail(c) => AnyQueue::DropTail(c.build()),
            QueueConfig::Red(c) => AnyQueue::Red(Red::new(c.settings(), link_rate, rng)),
            QueueConfig::RioC(c) => AnyQueue::MultiRed(c.build(MultiRedMode::RioC, link_rate, rng)),
            QueueConfig::RioD(c) => AnyQueue::MultiRed(c.build(MultiRedMode::RioD, link_rate, rng)),
            QueueConfig::Wred(c) => AnyQueue::MultiRed(c.build(MultiRedMode::Wred, link_rate, rng)),
            QueueConfig::Ered(c) => AnyQueue::Ered(c.build(link_rate, rng)),
            QueueConfig::Lqd(c) => AnyQueue::Lqd(c.build()),
            QueueConfig::Codel(c) => AnyQueue::Codel(c.build()),
            QueueConfig::FqCodel(c) => AnyQueue::FqCodel(Box::new(c.build(rng))),
            QueueConfig::Pie(c) => AnyQueue::Pie(c.build(rng)),
            QueueConfig::Classes(c) => {
                let table = crate::cond::DscpTable::rfc();
                let ctx = ClassContext {
                    table: &table,
                    nodes: &|_| None,
                    flows: &|_| None,
                    addrs: &[],
                };
                match c.build(link_rate, rng, &ctx) {
                    Ok(s) => AnyQueue::Classes(Box::new(s)),
                    Err(e) => {
                        panic!("classes naming nodes or flows need QueueConfig::build_in: {e}")
                    }
                }
            }
        }
    }

    /// As [`QueueConfig::build`], with class filters and table classes resolved in
    /// `ctx` (the interface's node); errors name keys relative to the queue table.
    pub fn build_in(
        &self,
        link_rate: Rate,
        rng: RngStream,
        ctx: &ClassContext,
    ) -> Result<AnyQueue, ScenarioError> {
        match self {
            QueueConfig::Classes(c) => {
                Ok(AnyQueue::Classes(Box::new(c.build(link_rate, rng, ctx)?)))
            }
            other => Ok(other.build(link_rate, rng)),
        }
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
        let mut causes = std::collections::BTreeSet::new();
        for uid in 0..30_000u64 {
            now += Dur::from_nanos(r.below(400_000));
            // Arrivals outnumber departures in bursts, so every drop path is taken.
            if r.bernoulli(0.55) {
                let flow = r.below(5) as u32;
                let p = Packet {
                    uid,
                    flow: FlowId(flow),
                    dscp: 8 * flow as u8,
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
            for (p, c) in &d.dropped {
                dropped.add(p);
                causes.insert(*c);
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
            if let AnyQueue::Classes(s) = &q {
                // Conservation per class too, and the classes add up to the whole.
                let mut sum = 0;
                for (i, (name, c)) in s.class_counters().enumerate() {
                    let o = s.class_occupancy(i);
                    assert_eq!(
                        c.arrived,
                        c.departed + c.dropped + o.packets as u64,
                        "{name}"
                    );
                    assert_eq!(
                        c.arrived_bytes,
                        c.departed_bytes + c.dropped_bytes + o.bytes,
                        "{name}"
                    );
                    sum += c.arrived;
                }
                assert_eq!(sum, arrived.packets);
            }
        }
        // Drain: everything held comes out (or is dropped at the head: CoDel).
        while let Some(p) = q.dequeue(now, &mut d) {
            departed.add(&p);
        }
        for (p, _) in &d.dropped {
            dropped.add(p);
        }
        assert_eq!(q.occupancy(), Occupancy::default());
        assert_eq!(arrived.bytes, departed.bytes + dropped.bytes);
        assert!(dropped.packets > 0, "{cfg:?} never dropped: test too weak");
        // The AQMs' own drops (or marks) happen too, not only overflows.
        let own = match cfg {
            QueueConfig::Codel(c) => Some((DropCause::Codel, c.ecn)),
            QueueConfig::FqCodel(c) => Some((DropCause::Codel, c.ecn)),
            QueueConfig::Pie(c) => Some((DropCause::Pie, c.ecn)),
            _ => None,
        };
        if let Some((cause, ecn)) = own {
            assert!(causes.contains(&cause), "{cfg:?}: no {cause:?} drop");
            assert!(!ecn || marked > 0, "{cfg:?}: no mark");
        }
    }

    #[test]
    fn copying_enqueue_and_dequeue_in_place_match_by_value() {
        // enqueue_copy / dequeue_with must be enqueue / dequeue exactly: the same
        // packets out in the same order, the same drops and marks, for every kind.
        for cfg in [
            r#"{ kind = "droptail", limit = 20 }"#,
            r#"{ kind = "droptail", limit_bytes = "20KB" }"#,
            r#"{ kind = "red", limit = 20, min_th = 2, max_th = 8, w_q = 0.05, ecn = true }"#,
            r#"{ kind = "red", limit = 20, min_th = 2, max_th = 8, w_q = 0.05 }"#,
            r#"{ kind = "ered", limit = 20, min_th = 2, max_th = 8, w_q = 0.05, ecn = true }"#,
            r#"{ kind = "lqd", limit = 20 }"#,
            r#"{ kind = "codel", limit = 20, target = "1ms", interval = "5ms", ecn = true }"#,
            r#"{ kind = "fq_codel", limit = 20, target = "1ms", interval = "5ms", quantum = 600 }"#,
            r#"{ kind = "pie", limit = 20, target = "1ms", max_burst = 0, ecn = true }"#,
        ] {
            let cfg: QueueConfig = toml::from_str::<toml::Table>(&format!("q = {cfg}")).unwrap()
                ["q"]
                .clone()
                .try_into()
                .unwrap();
            let rng = || RngStream::derive(7, "queue");
            let (mut a, mut b) = (
                cfg.build(Rate::from_mbps(10), rng()),
                cfg.build(Rate::from_mbps(10), rng()),
            );
            let (mut da, mut db) = (Drops::default(), Drops::default());
            let mut r = RngStream::derive(7, "traffic");
            let mut now = SimTime::ZERO;
            let (mut outs, mut drops) = (0, 0);
            for uid in 0..5_000u64 {
                now += Dur::from_nanos(r.below(400_000));
                if r.bernoulli(0.55) {
                    let p = Packet {
                        uid,
                        flow: FlowId(r.below(5) as u32),
                        size: [40, 576, 1500][r.below(3) as usize],
                        ecn: Ecn::Ect,
                        ..Default::default()
                    };
                    a.enqueue(now, p, &mut da);
                    b.enqueue_copy(now, &p, &mut db);
                } else {
                    let x = a.dequeue(now, &mut da).map(|p| (p.uid, p.ecn));
                    let y = b.dequeue_with(now, &mut db, |p| (p.uid, p.ecn));
                    assert_eq!(x, y, "{cfg:?} at {uid}");
                    outs += x.is_some() as u32;
                }
                let uids = |d: &Drops| {
                    d.dropped
                        .iter()
                        .map(|(p, c)| (p.uid, *c))
                        .collect::<Vec<_>>()
                };
                assert_eq!(uids(&da), uids(&db), "{cfg:?} at {uid}");
                assert_eq!(da.ecn_marked, db.ecn_marked);
                drops += da.dropped.len();
                da.clear();
                db.clear();
                assert_eq!(a.occupancy(), b.occupancy());
            }
            assert!(
                outs > 1000 && drops > 0,
                "{cfg:?}: {outs} out, {drops} dropped"
            );
        }
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
            r#"{ kind = "codel", limit = 20, target = "1ms", interval = "5ms" }"#,
            r#"{ kind = "codel", limit_bytes = "20KB", target = "1ms", interval = "5ms", ecn = true }"#,
            r#"{ kind = "fq_codel", limit = 20, target = "1ms", interval = "5ms", quantum = 600 }"#,
            r#"{ kind = "fq_codel", limit = 20, flows = 2, target = "1ms", interval = "5ms", ecn = true }"#,
            r#"{ kind = "pie", limit = 20, target = "1ms", t_update = "2ms", max_burst = 0 }"#,
            r#"{ kind = "pie", limit_bytes = "20KB", target = "1ms", max_burst = "10ms", ecn = true }"#,
            // Per-class queues: the flow index picks a DSCP class below.
            r#"{ kind = "classes", classes = [ { name = "ef", dscp = ["CS1"], priority = true, rate = "2Mbps", burst = 3000, queue = { kind = "droptail", limit = 5 } }, { name = "af", dscp = ["CS2", "CS3"], weight = 2, queue = { kind = "rio_c", limit = 60, w_q = 0.05 } }, { name = "be", queue = { kind = "red", limit = 20, min_th = 2, max_th = 8, w_q = 0.05 } } ] }"#,
            r#"{ kind = "classes", scheduler = "wfq", classes = [ { name = "a", dscp = ["CS1"], weight = 3, queue = { kind = "droptail", limit_bytes = "5KB" } }, { name = "b", dscp = ["CS2"], queue = { kind = "wred", limit = 60, w_q = 0.05 } }, { name = "be", weight = 0.5, queue = { kind = "droptail", limit = 10 } } ] }"#,
            r#"{ kind = "classes", scheduler = "wrr", classes = [ { name = "a", dscp = ["CS1", "CS2"], weight = 3, queue = { kind = "droptail", limit = 8 } }, { name = "be", queue = { kind = "ered", limit = 20, min_th = 2, max_th = 8, w_q = 0.05 } } ] }"#,
            // AQM class queues: CoDel drops at the head, under each scheduler.
            r#"{ kind = "classes", classes = [ { name = "ef", dscp = ["CS1"], priority = true, queue = { kind = "codel", limit = 30, target = "1ms", interval = "5ms" } }, { name = "af", dscp = ["CS2"], weight = 2, queue = { kind = "pie", limit = 30, target = "1ms", max_burst = 0 } }, { name = "be", queue = { kind = "codel", limit = 30, target = "1ms", interval = "5ms" } } ] }"#,
            r#"{ kind = "classes", scheduler = "wfq", classes = [ { name = "a", dscp = ["CS1"], weight = 3, queue = { kind = "codel", limit = 30, target = "1ms", interval = "5ms" } }, { name = "be", queue = { kind = "pie", limit = 30, target = "1ms", max_burst = 0 } } ] }"#,
            r#"{ kind = "classes", scheduler = "wrr", classes = [ { name = "a", dscp = ["CS1"], weight = 2, queue = { kind = "codel", limit = 30, target = "1ms", interval = "5ms" } }, { name = "be", queue = { kind = "codel", limit_bytes = "30KB", target = "1ms", interval = "5ms" } } ] }"#,
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

#[cfg(test)]
mod config_tests {
    use super::*;
    use crate::queue::{LqdService, RedThresholds};
    use crate::time::Dur;
    use crate::units::Bytes;

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Wrap {
        queue: QueueConfig,
    }

    fn parse(s: &str) -> Result<QueueConfig, String> {
        toml::from_str::<Wrap>(&format!("queue = {s}"))
            .map(|w| w.queue)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn examples_parse_with_defaults() {
        let q = parse(
            r#"{ kind = "red", limit = 100, min_th = 5, max_th = 15, max_p = 0.1, w_q = 0.002, gentle = true, ecn = false }"#,
        )
        .unwrap();
        assert!(
            matches!(q, QueueConfig::Red(RedConfig { gentle: true, max_th, .. }) if max_th == 15.0)
        );
        assert_eq!(
            parse(r#"{ kind = "droptail", limit = 100 }"#).unwrap(),
            QueueConfig::default()
        );
        assert_eq!(
            parse(r#"{ kind = "droptail", limit_bytes = "64KB" }"#).unwrap(),
            QueueConfig::DropTail(DropTailConfig {
                limit: None,
                limit_bytes: Some(Bytes(64_000))
            })
        );
        let q =
            parse(r#"{ kind = "rio_c", dp2 = { min_th = 8, max_th = 20, max_p = 0.2 } }"#).unwrap();
        assert_eq!(
            q,
            QueueConfig::RioC(MultiRedConfig {
                limit: 100,
                w_q: 0.002,
                mean_pkt_size: Bytes(1000),
                dp0: RedThresholds::new(40.0, 55.0, 0.02),
                dp1: RedThresholds::new(25.0, 40.0, 0.05),
                dp2: RedThresholds::new(8.0, 20.0, 0.2),
                gentle: false,
                ecn: false,
                wait: false,
                byte_mode: false,
            })
        );
        let q =
            parse(r#"{ kind = "wred", yellow = { min_th = 1, max_th = 2, max_p = 1 } }"#).unwrap();
        assert!(matches!(q, QueueConfig::Wred(c) if c.dp1.max_th == 2.0));
        let q = parse(r#"{ kind = "ered" }"#).unwrap();
        assert!(
            matches!(q, QueueConfig::Ered(c) if c.factor == 1.5 && c.red == RedConfig::default())
        );
        let q = parse(r#"{ kind = "lqd", limit_bytes = "100KB", service = "fifo" }"#).unwrap();
        assert!(matches!(
            q,
            QueueConfig::Lqd(LqdConfig {
                service: LqdService::Fifo,
                quantum: Bytes(1500),
                ..
            })
        ));
        assert!(parse(r#"{ kind = "rio_d" }"#).unwrap().validate().is_ok());
        // The RFCs' defaults.
        let q = parse(r#"{ kind = "codel" }"#).unwrap();
        assert_eq!(q, QueueConfig::Codel(CodelConfig::default()));
        let QueueConfig::Codel(c) = q else { panic!() };
        assert_eq!(
            (c.target, c.interval),
            (Dur::from_millis(5), Dur::from_millis(100))
        );
        let QueueConfig::FqCodel(c) = parse(r#"{ kind = "fq_codel" }"#).unwrap() else {
            panic!()
        };
        assert_eq!((c.limit, c.flows, c.quantum), (10_240, 1024, Bytes(1514)));
        let QueueConfig::Pie(c) = parse(r#"{ kind = "pie" }"#).unwrap() else {
            panic!()
        };
        assert_eq!(
            (
                c.target,
                c.t_update,
                c.alpha,
                c.beta,
                c.max_burst,
                c.mark_ecnth
            ),
            (
                Dur::from_millis(15),
                Dur::from_millis(15),
                0.125,
                1.25,
                Dur::from_millis(150),
                0.1
            )
        );
    }

    #[test]
    fn every_listed_kind_is_a_variant() {
        use crate::config::Tagged;
        for k in QueueConfig::KINDS {
            // A class-based queue needs its classes; every other kind has defaults.
            let extra = if *k == "classes" {
                ", classes = [{ name = \"all\" }]"
            } else {
                ""
            };
            let q = parse(&format!("{{ kind = \"{k}\"{extra} }}")).unwrap();
            q.validate().unwrap();
        }
    }

    #[test]
    fn serialises_back_to_the_same_config() {
        for s in [
            r#"{ kind = "red", limit_bytes = "64KB", min_th = 5000, max_th = 15000, ecn = true }"#,
            r#"{ kind = "rio_d", limit = 80 }"#,
            r#"{ kind = "lqd", quantum = 500 }"#,
            r#"{ kind = "droptail" }"#,
            r#"{ kind = "ered", max_th = 20, factor = 2.5, ecn = true }"#,
            r#"{ kind = "codel", target = "2ms", interval = "50ms", ecn = true }"#,
            r#"{ kind = "fq_codel", flows = 64, quantum = 300 }"#,
            r#"{ kind = "pie", limit_bytes = "64KB", alpha = 0.25, max_burst = 0 }"#,
        ] {
            let q = parse(s).unwrap();
            let text = toml::to_string(&Wrapped { queue: q.clone() }).unwrap();
            assert_eq!(toml::from_str::<Wrap>(&text).unwrap().queue, q, "{text}");
        }
        #[derive(Serialize)]
        struct Wrapped {
            queue: QueueConfig,
        }
    }

    #[test]
    fn unknown_keys_and_kinds_are_rejected() {
        // deny_unknown_fields on an internally tagged enum reaches the struct variants.
        let e = parse(r#"{ kind = "red", min_thresh = 5 }"#).unwrap_err();
        assert!(e.contains("unknown field `min_thresh`"), "{e}");
        let e = parse(r#"{ kind = "droptail", limit = 5, gentle = true }"#).unwrap_err();
        assert!(e.contains("unknown field `gentle`"), "{e}");
        let e =
            parse(r#"{ kind = "rio_c", dp1 = { min_th = 1, max_th = 2, max_p = 0.1, w = 1 } }"#)
                .unwrap_err();
        assert!(e.contains("unknown field `w`"), "{e}");
        let e = parse(r#"{ kind = "lqd", service = "wfq" }"#).unwrap_err();
        assert!(e.contains("unknown variant `wfq`"), "{e}");
        let e = parse(r#"{ kind = "codl" }"#).unwrap_err();
        assert!(e.contains("unknown queue kind \"codl\""), "{e}");
        let e = parse(r#"{ kind = "codel", quantum = 5 }"#).unwrap_err();
        assert!(e.contains("unknown field `quantum`"), "{e}");
        let e = parse(r#"{ kind = "codel", target = "-5ms" }"#).unwrap_err();
        assert!(e.contains("zero or positive"), "{e}");
        let e = parse(r#"{ limit = 5 }"#).unwrap_err();
        assert!(e.contains("missing `kind`"), "{e}");
    }

    fn invalid(s: &str) -> ScenarioError {
        parse(s).unwrap().validate().unwrap_err()
    }

    #[test]
    fn validation_errors_name_the_key_and_what_was_expected() {
        let cases = [
            (
                r#"{ kind = "droptail", limit = 0 }"#,
                "limit",
                "at least 1 packet",
            ),
            (
                r#"{ kind = "droptail", limit = 5, limit_bytes = 500 }"#,
                "limit_bytes",
                "not both",
            ),
            (
                r#"{ kind = "lqd", limit_bytes = 0 }"#,
                "limit_bytes",
                "at least 1 byte",
            ),
            (
                r#"{ kind = "red", min_th = 15, max_th = 5 }"#,
                "max_th",
                "thresholds out of order",
            ),
            (r#"{ kind = "red", min_th = -1 }"#, "min_th", "min_th ≥ 0"),
            (r#"{ kind = "red", max_p = 1.5 }"#, "max_p", "(0, 1]"),
            (r#"{ kind = "red", max_p = 0 }"#, "max_p", "(0, 1]"),
            (r#"{ kind = "red", w_q = 0 }"#, "w_q", "w_q in (0, 1]"),
            (r#"{ kind = "ered", w_q = 2 }"#, "w_q", "w_q in (0, 1]"),
            (
                r#"{ kind = "red", limit = 10, max_th = 15 }"#,
                "limit",
                "limit ≥ max_th (15 packets)",
            ),
            (
                r#"{ kind = "red", limit_bytes = 10000, min_th = 5000, max_th = 15000 }"#,
                "limit_bytes",
                "limit_bytes ≥ max_th (15000 bytes",
            ),
            (
                r#"{ kind = "red", mean_pkt_size = 0 }"#,
                "mean_pkt_size",
                "1..=65535",
            ),
            (r#"{ kind = "ered", factor = 0.5 }"#, "factor", "factor ≥ 1"),
            (
                r#"{ kind = "rio_c", dp1 = { min_th = 30, max_th = 20, max_p = 0.1 } }"#,
                "dp1.max_th",
                "thresholds out of order",
            ),
            (
                r#"{ kind = "wred", dp2 = { min_th = 1, max_th = 2, max_p = 2 } }"#,
                "dp2.max_p",
                "(0, 1]",
            ),
            (
                r#"{ kind = "rio_d", limit = 50 }"#,
                "limit",
                "largest max_th (55 packets)",
            ),
            (
                r#"{ kind = "lqd", quantum = 0 }"#,
                "quantum",
                "at least 1 byte",
            ),
            (r#"{ kind = "codel", target = 0 }"#, "target", "target > 0"),
            (
                r#"{ kind = "codel", interval = 0 }"#,
                "interval",
                "interval > 0",
            ),
            (
                r#"{ kind = "codel", limit = 0 }"#,
                "limit",
                "at least 1 packet",
            ),
            (
                r#"{ kind = "fq_codel", quantum = 0 }"#,
                "quantum",
                "at least 1 byte",
            ),
            (
                r#"{ kind = "fq_codel", limit = 0 }"#,
                "limit",
                "at least 1 packet",
            ),
            (r#"{ kind = "fq_codel", flows = 0 }"#, "flows", "1..=65536"),
            (
                r#"{ kind = "fq_codel", interval = "0ms" }"#,
                "interval",
                "interval > 0",
            ),
            (r#"{ kind = "pie", alpha = -0.1 }"#, "alpha", "alpha ≥ 0"),
            (r#"{ kind = "pie", beta = -1 }"#, "beta", "beta ≥ 0"),
            (
                r#"{ kind = "pie", t_update = 0 }"#,
                "t_update",
                "t_update > 0",
            ),
            (r#"{ kind = "pie", target = 0 }"#, "target", "target > 0"),
            (
                r#"{ kind = "pie", limit = 0 }"#,
                "limit",
                "at least 1 packet",
            ),
            (
                r#"{ kind = "pie", mark_ecnth = 1.5 }"#,
                "mark_ecnth",
                "[0, 1]",
            ),
        ];
        for (text, key, msg) in cases {
            let e = invalid(text);
            assert_eq!(e.key, key, "{text}: {e}");
            assert!(e.message.contains(msg), "{text}: {e}");
        }
    }

    #[test]
    fn build_gives_the_configured_kind() {
        let r = Rate::from_mbps(10);
        let rng = || RngStream::from_seed(1);
        assert!(matches!(
            QueueConfig::default().build(r, rng()),
            AnyQueue::DropTail(_)
        ));
        for (s, want) in [
            (r#"{ kind = "red" }"#, "Red"),
            (r#"{ kind = "ered" }"#, "Ered"),
            (r#"{ kind = "rio_c" }"#, "MultiRed"),
            (r#"{ kind = "lqd" }"#, "Lqd"),
            (r#"{ kind = "codel" }"#, "Codel"),
            (r#"{ kind = "fq_codel" }"#, "FqCodel"),
            (r#"{ kind = "pie" }"#, "Pie"),
        ] {
            let q = parse(s).unwrap().build(r, rng());
            assert!(format!("{q:?}").starts_with(want), "{s}");
        }
    }
}

//! Per-class queues and a scheduler on one interface (DiffServ PHBs, RFC 2475 §2.4):
//! a classifier picks a class by DSCP, by the node's DSCP-table class, or by a
//! multi-field filter; each class has its own queue discipline (DropTail, RED, RIO-C/D,
//! WRED, ERED, CoDel, PIE); the scheduler picks the next class to send.
//!
//! A class queue may drop at its head when asked for a packet (CoDel, RFC 8289): the
//! packets it drops are counted as the class's drops, and if it then hands over a
//! packet of another size than the head the scheduler charged, DRR charges the
//! difference (never below zero credit); if it hands over none (it dropped all it
//! held), the scheduler goes on to the next class.
//!
//! - **Strict priority**: classes with `priority = true` are served first, in the order
//!   listed, whenever they hold a packet; a priority class with `rate` is policed at
//!   arrival by a token bucket (`rate`, `burst`), so it cannot starve the others beyond
//!   that profile (RFC 3246 §2.2: EF's departure rate is configured, and excess is
//!   dropped at the PHB).
//! - The other classes share what is left by one of:
//!   - **DRR** (Shreedhar & Varghese 1995): each visit adds `quantum` bytes of credit
//!     (default 1500 · `weight`); a class sends while its head fits its credit; an
//!     emptied class loses its credit.
//!   - **WRR**: DRR counting packets instead of bytes: `weight` (a whole number)
//!     packets per round.
//!   - **WFQ** as **SCFQ** (Golestani 1994, self-clocked fair queueing): a packet's
//!     finish tag is F = max(F_prev of its class, v) + size / weight, where v is the tag
//!     of the packet last chosen (0 when the scheduler empties); the smallest tag is
//!     sent first. SCFQ's fairness bound: over any interval in which classes i and j
//!     stay backlogged, |W_i / w_i − W_j / w_j| ≤ L_max / w_i + L_max / w_j (bytes W).
//!     Tags are given when a packet reaches the head of its class, which for FIFO
//!     classes gives the same tags as at arrival.
//!
//! Classes are tried in the order listed; the last class must match everything (no
//! `dscp`, `phb` or `filter`): it takes what no other class does. Every class counts its
//! arrivals, departures and drops (`arrived = departed + dropped + queued`).

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::{AnyQueue, DropCause, Drops, Occupancy, Queue, QueueConfig};
use crate::cond::classify::{Filter, FilterConfig};
use crate::cond::Bucket;
use crate::config::ScenarioError;
use crate::dscp::{DscpSet, DscpTable};
use crate::packet::{FlowId, NodeId, Packet};
use crate::rng::RngStream;
use crate::time::{Rate, SimTime};
use crate::units::Bytes;

/// How the classes without priority share the link.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Weighted {
    /// Deficit round robin (bytes).
    #[default]
    Drr,
    /// Weighted round robin (packets).
    Wrr,
    /// Self-clocked fair queueing (Golestani 1994).
    Wfq,
}

fn d_weight() -> f64 {
    1.0
}

/// One class of a scheduler, as written in a scenario file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassConfig {
    /// Name, for results.
    pub name: String,
    /// Codepoints the class takes (numbers or PHB names).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dscp: Option<DscpSet>,
    /// A class of the node's DSCP table (`"AF1"`, `"EF"`): every codepoint it maps there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phb: Option<String>,
    /// A multi-field filter (as in policy rules).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<FilterConfig>,
    /// Served before every class without priority (in the order listed).
    #[serde(default)]
    pub priority: bool,
    /// Priority classes: police arrivals to this rate (with `burst`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    /// Bucket depth of `rate`; default 2 × 1500 B.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<Bytes>,
    /// Share of the classes without priority: WFQ weight, WRR packets per round, DRR
    /// quantum multiplier; default 1.
    #[serde(default = "d_weight")]
    pub weight: f64,
    /// DRR credit per visit [bytes]; default 1500 · weight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantum: Option<Bytes>,
    /// The class's own queue; default DropTail of 100 packets.
    #[serde(default)]
    pub queue: Option<Box<QueueConfig>>,
}

/// The keys of a class-based queue (`kind = "classes"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchedConfig {
    /// How classes without priority share the link; default `"drr"`.
    #[serde(default)]
    pub scheduler: Weighted,
    /// The classes, tried in order by the classifier.
    pub classes: Vec<ClassConfig>,
}

/// What a class's classifier needs from the scenario: the node's DSCP table and name
/// lookups for filters.
pub struct ClassContext<'a> {
    /// The DSCP table of the interface's node.
    pub table: &'a DscpTable,
    /// Node names → nodes.
    pub nodes: &'a dyn Fn(&str) -> Option<NodeId>,
    /// Flow names → flows.
    pub flows: &'a dyn Fn(&str) -> Option<FlowId>,
    /// Node addresses, indexed by node (for prefix filters).
    pub addrs: &'a [[u8; 4]],
}

impl SchedConfig {
    /// Checks every class; keys are relative to the queue table (`classes[1].weight`).
    pub fn validate(&self) -> Result<(), ScenarioError> {
        let n = self.classes.len();
        if n == 0 {
            return Err(ScenarioError::new("classes", "expected at least one class"));
        }
        for (i, c) in self.classes.iter().enumerate() {
            let key = |k: &str| format!("classes[{i}].{k}");
            if c.name.is_empty() {
                return Err(ScenarioError::new(key("name"), "expected a non-empty name"));
            }
            if self.classes[..i].iter().any(|o| o.name == c.name) {
                return Err(ScenarioError::new(
                    key("name"),
                    format!("duplicate class name {:?}", c.name),
                ));
            }
            let catch_all = c.dscp.is_none() && c.phb.is_none() && c.filter.is_none();
            if catch_all != (i == n - 1) {
                return Err(ScenarioError::new(
                    if catch_all { key("name") } else { key("dscp") },
                    if catch_all {
                        "a class without dscp, phb or filter takes every packet; only the \
                         last class may"
                    } else {
                        "the last class takes what no other class does: leave out its \
                         dscp, phb and filter"
                    },
                ));
            }
            if let Some(f) = &c.filter {
                f.validate(&key("filter"))?;
            }
            if !(c.weight > 0.0 && c.weight.is_finite()) {
                return Err(ScenarioError::new(
                    key("weight"),
                    format!("expected a positive weight, found {}", c.weight),
                ));
            }
            if self.scheduler == Weighted::Wrr && c.weight.fract() != 0.0 {
                return Err(ScenarioError::new(
                    key("weight"),
                    format!(
                        "WRR sends `weight` packets per round: expected a whole number, found {}",
                        c.weight
                    ),
                ));
            }
            if c.quantum.is_some_and(|q| q.0 == 0) {
                return Err(ScenarioError::new(
                    key("quantum"),
                    "expected a quantum of at least 1 byte",
                ));
            }
            if !c.priority && (c.rate.is_some() || c.burst.is_some()) {
                return Err(ScenarioError::new(
                    key(if c.rate.is_some() { "rate" } else { "burst" }),
                    "a rate limit applies to priority classes (priority = true)",
                ));
            }
            if c.burst.is_some() && c.rate.is_none() {
                return Err(ScenarioError::new(key("burst"), "burst needs a rate"));
            }
            if c.burst.is_some_and(|b| b.0 == 0) {
                return Err(ScenarioError::new(
                    key("burst"),
                    "expected a burst of at least 1 byte",
                ));
            }
            if let Some(q) = &c.queue {
                if matches!(
                    **q,
                    QueueConfig::Classes(_) | QueueConfig::Lqd(_) | QueueConfig::FqCodel(_)
                ) {
                    return Err(ScenarioError::new(
                        key("queue.kind"),
                        "a class's queue is a FIFO discipline (droptail, red, rio_c, rio_d, \
                         wred, ered, codel, pie)",
                    ));
                }
                q.validate().map_err(|e| {
                    ScenarioError::new(crate::config::join(&key("queue"), &e.key), e.message)
                })?;
            }
        }
        Ok(())
    }

    /// The scheduler for a link of `link_rate`; class queues draw from streams derived
    /// from `rng`. Call [`SchedConfig::validate`] first.
    pub fn build(
        &self,
        link_rate: Rate,
        mut rng: RngStream,
        ctx: &ClassContext,
    ) -> Result<Sched, ScenarioError> {
        let base = rng.next_u64();
        let mut classes = Vec::with_capacity(self.classes.len());
        for (i, c) in self.classes.iter().enumerate() {
            let key = |k: &str| format!("classes[{i}].{k}");
            let mut dscp = c.dscp.map(|s| s.0);
            if let Some(p) = &c.phb {
                let s = ctx.table.class_set(p);
                if s.0 == 0 {
                    return Err(ScenarioError::new(
                        key("phb"),
                        format!("no codepoint of the node's DSCP table is in class {p:?}"),
                    ));
                }
                dscp = Some(dscp.unwrap_or(0) | s.0);
            }
            let filter = match &c.filter {
                None => None,
                Some(f) => {
                    let mut f = f.clone();
                    f.bind_flow(&key("filter"), ctx.flows)?;
                    f.bind_addresses(&key("filter"), ctx.addrs)?;
                    Some(f.build(&key("filter"), ctx.nodes)?)
                }
            };
            let qcfg = c.queue.as_deref().cloned().unwrap_or_default();
            let qrng = RngStream::derive(base, &format!("class/{}", c.name));
            classes.push(Class {
                name: c.name.clone(),
                dscp: dscp.map(DscpSet),
                filter,
                priority: c.priority,
                limiter: c
                    .rate
                    .map(|r| Bucket::full(r, c.burst.map_or(3000, |b| b.0))),
                weight: c.weight,
                quantum: match self.scheduler {
                    Weighted::Wrr => c.weight as u64,
                    _ => c
                        .quantum
                        .map_or((1500.0 * c.weight).round().max(1.0) as u64, |q| q.0),
                },
                queue: qcfg.build(link_rate, qrng),
                sizes: VecDeque::new(),
                credit: 0,
                fresh: true,
                finish: 0.0,
                head_tag: 0.0,
                counters: ClassCounters::default(),
            });
        }
        Ok(Sched {
            mode: self.scheduler,
            classes,
            active: VecDeque::new(),
            vtime: 0.0,
            occ: Occupancy::default(),
            table: ctx.table.clone(),
        })
    }
}

/// Arrivals, departures and drops of one class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClassCounters {
    /// Packets offered to the class.
    pub arrived: u64,
    /// Bytes offered.
    pub arrived_bytes: u64,
    /// Packets sent.
    pub departed: u64,
    /// Bytes sent.
    pub departed_bytes: u64,
    /// Packets dropped (by its queue or its rate limit).
    pub dropped: u64,
    /// Bytes dropped.
    pub dropped_bytes: u64,
    /// Packets dropped per drop precedence (green, yellow, red) as the node's DSCP
    /// table gave it, and (fourth, "none") those whose codepoint has none.
    pub dropped_by_colour: [u64; 4],
}

impl ClassCounters {
    /// The counts accumulated since the snapshot `e`.
    pub fn since(&self, e: &ClassCounters) -> ClassCounters {
        ClassCounters {
            arrived: self.arrived - e.arrived,
            arrived_bytes: self.arrived_bytes - e.arrived_bytes,
            departed: self.departed - e.departed,
            departed_bytes: self.departed_bytes - e.departed_bytes,
            dropped: self.dropped - e.dropped,
            dropped_bytes: self.dropped_bytes - e.dropped_bytes,
            dropped_by_colour: [0, 1, 2, 3]
                .map(|k| self.dropped_by_colour[k] - e.dropped_by_colour[k]),
        }
    }
}

#[derive(Debug)]
struct Class {
    name: String,
    dscp: Option<DscpSet>,
    filter: Option<Filter>,
    priority: bool,
    limiter: Option<Bucket>,
    weight: f64,
    /// DRR credit per visit (bytes), or WRR packets per round.
    quantum: u64,
    queue: AnyQueue,
    /// Sizes of the packets held, in order (the head's size for DRR and WFQ).
    sizes: VecDeque<u32>,
    /// DRR/WRR credit left.
    credit: u64,
    /// DRR/WRR: the class has not had its credit for the current visit yet.
    fresh: bool,
    /// WFQ: finish tag of the class's last tagged packet.
    finish: f64,
    /// WFQ: finish tag of the head packet.
    head_tag: f64,
    counters: ClassCounters,
}

impl Class {
    #[inline]
    fn takes(&self, p: &Packet) -> bool {
        !matches!(self.dscp, Some(s) if !s.contains(p.dscp))
            && !matches!(&self.filter, Some(f) if !f.matches(p))
    }
}

/// Per-class queues with strict priority and DRR, WRR or WFQ (SCFQ) between them.
#[derive(Debug)]
pub struct Sched {
    mode: Weighted,
    classes: Vec<Class>,
    /// DRR/WRR: backlogged classes without priority, in round order.
    active: VecDeque<usize>,
    /// WFQ: the virtual time (tag of the packet last chosen).
    vtime: f64,
    occ: Occupancy,
    /// The node's DSCP table: the drop precedence of each counted drop.
    table: crate::dscp::DscpTable,
}

impl Sched {
    /// Class names and counters, in the order configured.
    pub fn class_counters(&self) -> impl Iterator<Item = (&str, &ClassCounters)> {
        self.classes.iter().map(|c| (c.name.as_str(), &c.counters))
    }

    /// Name of class `i`.
    pub fn class_name(&self, i: usize) -> &str {
        &self.classes[i].name
    }

    /// Per-colour averages of the classes whose queue is a multi-colour RED, tagged
    /// with the class index (see [`AnyQueue::colour_averages`]).
    pub fn colour_averages(&self, out: &mut Vec<(Option<u32>, [f64; 3])>) {
        for (i, c) in self.classes.iter().enumerate() {
            if let AnyQueue::MultiRed(q) = &c.queue {
                out.push((Some(i as u32), q.averages()));
            }
        }
    }

    /// Occupancy of class `i`.
    pub fn class_occupancy(&self, i: usize) -> Occupancy {
        self.classes[i].queue.occupancy()
    }

    fn tag_head(&mut self, i: usize) {
        let vt = self.vtime;
        let c = &mut self.classes[i];
        if let Some(&s) = c.sizes.front() {
            c.head_tag = c.finish.max(vt) + s as f64 / c.weight;
            c.finish = c.head_tag;
        }
    }

    fn take_from(&mut self, i: usize, now: SimTime, drops: &mut Drops) -> Option<Packet> {
        let c = &mut self.classes[i];
        let from = drops.dropped.len();
        let p = c.queue.dequeue(now, drops);
        // Head drops (CoDel): the packets dropped left from the head, in order.
        for (d, _) in &drops.dropped[from..] {
            let s = c.sizes.pop_front();
            debug_assert_eq!(s, Some(d.size));
            c.counters.dropped += 1;
            c.counters.dropped_bytes += d.size as u64;
            c.counters.dropped_by_colour[self.table.drop_colour_index(d.dscp)] += 1;
            self.occ.packets -= 1;
            self.occ.bytes -= d.size as u64;
        }
        let p = p?;
        let s = c.sizes.pop_front();
        debug_assert_eq!(s, Some(p.size));
        c.counters.departed += 1;
        c.counters.departed_bytes += p.size as u64;
        self.occ.packets -= 1;
        self.occ.bytes -= p.size as u64;
        Some(p)
    }

    fn next_weighted(&mut self) -> Option<usize> {
        match self.mode {
            Weighted::Wfq => (0..self.classes.len())
                .filter(|&i| !self.classes[i].priority && !self.classes[i].sizes.is_empty())
                .min_by(|&a, &b| {
                    self.classes[a]
                        .head_tag
                        .total_cmp(&self.classes[b].head_tag)
                }),
            Weighted::Drr | Weighted::Wrr => loop {
                let &i = self.active.front()?;
                let c = &mut self.classes[i];
                let cost = match self.mode {
                    Weighted::Wrr => 1,
                    _ => *c.sizes.front()? as u64,
                };
                if c.fresh {
                    c.credit += c.quantum;
                    c.fresh = false;
                }
                if cost <= c.credit {
                    c.credit -= cost;
                    return Some(i);
                }
                // Not enough credit: keep it for the next round, go to the back.
                c.fresh = true;
                self.active.rotate_left(1);
            },
        }
    }
}

impl Queue for Sched {
    fn enqueue(&mut self, now: SimTime, pkt: Packet, drops: &mut Drops) {
        let i = self
            .classes
            .iter()
            .position(|c| c.takes(&pkt))
            .unwrap_or(self.classes.len() - 1);
        let dp = self.table.drop_colour_index(pkt.dscp);
        let c = &mut self.classes[i];
        c.counters.arrived += 1;
        c.counters.arrived_bytes += pkt.size as u64;
        if let Some(b) = &mut c.limiter {
            b.refill(now);
            if !b.has(pkt.size) {
                c.counters.dropped += 1;
                c.counters.dropped_bytes += pkt.size as u64;
                c.counters.dropped_by_colour[dp] += 1;
                return drops.push(pkt, DropCause::Policed);
            }
            b.take(pkt.size);
        }
        let (before, size) = (c.queue.occupancy().packets, pkt.size);
        let dropped_before = drops.dropped.len();
        c.queue.enqueue(now, pkt, drops);
        for (p, _) in &drops.dropped[dropped_before..] {
            c.counters.dropped += 1;
            c.counters.dropped_bytes += p.size as u64;
            c.counters.dropped_by_colour[self.table.drop_colour_index(p.dscp)] += 1;
        }
        if c.queue.occupancy().packets == before {
            return; // dropped (class queues are FIFOs: they drop only the arrival)
        }
        c.sizes.push_back(size);
        self.occ.packets += 1;
        self.occ.bytes += size as u64;
        if before == 0 && !c.priority {
            match self.mode {
                Weighted::Wfq => self.tag_head(i),
                Weighted::Drr | Weighted::Wrr => {
                    c.credit = 0;
                    c.fresh = true;
                    self.active.push_back(i);
                }
            }
        }
    }

    fn dequeue(&mut self, now: SimTime, drops: &mut Drops) -> Option<Packet> {
        // A class queue that drops at its head may hand over nothing (it dropped all it
        // held): then the next class is asked.
        loop {
            if let Some(i) = self
                .classes
                .iter()
                .position(|c| c.priority && !c.sizes.is_empty())
            {
                match self.take_from(i, now, drops) {
                    Some(p) => return Some(p),
                    None => continue,
                }
            }
            let i = self.next_weighted()?;
            if self.mode == Weighted::Wfq {
                self.vtime = self.classes[i].head_tag;
            }
            let charged = self.classes[i].sizes.front().copied().unwrap_or(0);
            let p = self.take_from(i, now, drops);
            let c = &mut self.classes[i];
            if self.mode == Weighted::Drr {
                // The head was dropped: charge the packet sent instead (none: nothing).
                let sent = p.as_ref().map_or(0, |p| p.size);
                if sent != charged {
                    c.credit = (c.credit + charged as u64).saturating_sub(sent as u64);
                }
            }
            if c.sizes.is_empty() {
                if self.mode != Weighted::Wfq {
                    // An emptied class leaves the round and loses its credit (DRR).
                    c.credit = 0;
                    c.fresh = true;
                    self.active.pop_front();
                }
            } else if self.mode == Weighted::Wfq {
                self.tag_head(i);
            }
            if self.occ.packets == 0 && self.mode == Weighted::Wfq {
                // The system is idle: restart virtual time (SCFQ).
                self.vtime = 0.0;
                for c in &mut self.classes {
                    c.finish = 0.0;
                }
            }
            if p.is_some() {
                return p;
            }
        }
    }

    fn occupancy(&self) -> Occupancy {
        self.occ
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sched(text: &str) -> Sched {
        let cfg: QueueConfig = toml::from_str::<toml::Table>(&format!("q = {text}")).unwrap()["q"]
            .clone()
            .try_into()
            .unwrap();
        cfg.validate().unwrap();
        match cfg.build(Rate::from_mbps(10), RngStream::from_seed(3)) {
            AnyQueue::Classes(s) => *s,
            other => panic!("{other:?}"),
        }
    }

    fn pkt(uid: u64, dscp: u8, size: u32) -> Packet {
        Packet {
            uid,
            dscp,
            size,
            ..Default::default()
        }
    }

    /// Keeps classes 0..n (DSCP 8·(k+1)) backlogged with random sizes 40..=1500, takes
    /// `n_out` packets, and after every departure calls `check(served bytes, served
    /// packets)`.
    fn overload(s: &mut Sched, n: usize, n_out: usize, mut check: impl FnMut(&[u64], &[u64])) {
        let mut r = RngStream::from_seed(5);
        let mut d = Drops::default();
        let (mut bytes, mut pkts) = (vec![0u64; n], vec![0u64; n]);
        let mut uid = 0;
        for _ in 0..n_out {
            for k in 0..n {
                while s.classes[k].sizes.len() < 5 {
                    uid += 1;
                    let size = 40 + r.below(1461) as u32;
                    s.enqueue(SimTime::ZERO, pkt(uid, 8 * (k as u8 + 1), size), &mut d);
                }
            }
            let p = s.dequeue(SimTime::ZERO, &mut d).unwrap();
            let k = (p.dscp / 8 - 1) as usize;
            bytes[k] += p.size as u64;
            pkts[k] += 1;
            check(&bytes, &pkts);
        }
        assert!(d.is_empty());
    }

    const THREE: &str = "classes = [
        { name = \"a\", dscp = [\"CS1\"], weight = 1 },
        { name = \"b\", dscp = [\"CS2\"], weight = 2 },
        { name = \"c\", weight = 3 } ]";

    #[test]
    fn drr_shares_equal_quanta_within_one_packet_per_round() {
        let mut s = sched(&format!(
            "{{ kind = \"classes\", scheduler = \"drr\", {THREE} }}"
        ));
        let q = [1500.0, 3000.0, 4500.0];
        overload(&mut s, 3, 30_000, |b, _| {
            // Each class has had r or r + 1 credits and holds < one packet of credit:
            // served/quantum differ by at most one round plus one packet.
            for i in 0..3 {
                for j in 0..3 {
                    let gap = b[i] as f64 / q[i] - b[j] as f64 / q[j];
                    assert!(gap <= 1.0 + 1500.0 / q[j] + 1e-9, "{b:?}");
                }
            }
        });
        let t: u64 = s.classes.iter().map(|c| c.counters.departed_bytes).sum();
        for (k, w) in [1.0, 2.0, 3.0].iter().enumerate() {
            let share = s.classes[k].counters.departed_bytes as f64 / t as f64;
            assert!((share - w / 6.0).abs() < 0.002, "class {k}: {share}");
        }
    }

    #[test]
    fn wrr_sends_weight_packets_per_round() {
        let mut s = sched(&format!(
            "{{ kind = \"classes\", scheduler = \"wrr\", {THREE} }}"
        ));
        let w = [1.0, 2.0, 3.0];
        overload(&mut s, 3, 6_000, |_, p| {
            for i in 0..3 {
                for j in 0..3 {
                    let gap = p[i] as f64 / w[i] - p[j] as f64 / w[j];
                    assert!(gap <= 1.0 + 1e-9, "{p:?}");
                }
            }
        });
        // 6000 packets = 1000 whole rounds of 1 + 2 + 3.
        let got: Vec<u64> = s.classes.iter().map(|c| c.counters.departed).collect();
        assert_eq!(got, vec![1000, 2000, 3000]);
    }

    #[test]
    fn wfq_is_within_the_scfq_fairness_bound() {
        let mut s = sched(&format!(
            "{{ kind = \"classes\", scheduler = \"wfq\", {THREE} }}"
        ));
        let w = [1.0, 2.0, 3.0];
        overload(&mut s, 3, 30_000, |b, _| {
            for i in 0..3 {
                for j in 0..3 {
                    let gap = (b[i] as f64 / w[i] - b[j] as f64 / w[j]).abs();
                    assert!(gap <= 1500.0 / w[i] + 1500.0 / w[j] + 1e-6, "{b:?}");
                }
            }
        });
    }

    #[test]
    fn strict_priority_starves_the_rest_unless_rate_limited() {
        let text = |limit: &str| {
            format!(
                "{{ kind = \"classes\", classes = [ {{ name = \"ef\", dscp = [\"EF\"], priority = true{limit} }}, {{ name = \"be\" }} ] }}"
            )
        };
        // Both backlogged at every step: the priority class takes every departure.
        let mut s = sched(&text(""));
        let mut d = Drops::default();
        for i in 0..1000 {
            s.enqueue(SimTime::ZERO, pkt(2 * i, 46, 1000), &mut d);
            s.enqueue(SimTime::ZERO, pkt(2 * i + 1, 0, 1000), &mut d);
            assert_eq!(s.dequeue(SimTime::ZERO, &mut d).unwrap().dscp, 46);
        }
        // The best-effort class is served only once EF is empty.
        while let Some(p) = s.dequeue(SimTime::ZERO, &mut d) {
            assert!(p.dscp == 46 || s.classes[0].sizes.is_empty());
        }
        // Rate-limited to 1 Mb/s with a 2000 B burst: over 1 s, EF gets at most
        // 125 000 + 2000 bytes in; the rest is policed.
        let mut s = sched(&text(", rate = \"1Mbps\", burst = 2000"));
        let mut d = Drops::default();
        for i in 0..1000u64 {
            let now = SimTime::from_millis(i);
            s.enqueue(now, pkt(i, 46, 1000), &mut d);
            s.dequeue(now, &mut d);
        }
        let c = s.classes[0].counters;
        assert_eq!(c.arrived, 1000);
        assert!((125..=127).contains(&c.departed), "{c:?}");
        assert_eq!(c.dropped as usize, d.dropped.len());
        assert!(d.dropped.iter().all(|(_, k)| *k == DropCause::Policed));
    }

    #[test]
    fn classes_by_table_class_and_filter() {
        let cfg: SchedConfig = toml::from_str(
            "classes = [ { name = \"af1\", phb = \"AF1\" }, { name = \"f\", filter = { flow = \"voice\" } }, { name = \"be\" } ]",
        )
        .unwrap();
        cfg.validate().unwrap();
        let table = DscpTable::rfc();
        let ctx = ClassContext {
            table: &table,
            nodes: &|_| None,
            flows: &|n| (n == "voice").then_some(FlowId(7)),
            addrs: &[],
        };
        let mut s = cfg
            .build(Rate::from_mbps(1), RngStream::from_seed(1), &ctx)
            .unwrap();
        let mut d = Drops::default();
        let mut voice = pkt(1, 0, 100);
        voice.flow = FlowId(7);
        for p in [pkt(0, 12, 100), voice, pkt(2, 14, 100), pkt(3, 46, 100)] {
            s.enqueue(SimTime::ZERO, p, &mut d);
        }
        let held: Vec<u64> = s.classes.iter().map(|c| c.counters.arrived).collect();
        assert_eq!(held, vec![2, 1, 1]);
        let ctx = ClassContext {
            flows: &|_| None,
            ..ctx
        };
        assert_eq!(
            cfg.build(Rate::from_mbps(1), RngStream::from_seed(1), &ctx)
                .unwrap_err()
                .key,
            "classes[1].filter.flow"
        );
    }
}

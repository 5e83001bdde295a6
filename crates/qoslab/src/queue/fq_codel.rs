//! FQ-CoDel: flow queueing with CoDel (Hoeiland-Joergensen, McKenney, Taht, Gettys &
//! Dumazet, RFC 8290, 2018).
//!
//! Packets are hashed by flow into `flows` queues (RFC 8290 §4.1); a deficit round
//! robin with a byte `quantum` serves them, first the list of new flows, then the list
//! of old ones (§4.2), so a sparse flow's packets go ahead of the backlogged flows';
//! each queue has its own CoDel controller (§2, [`super::codel`]). When the shared
//! `limit` [packets] is exceeded, a packet is dropped from the head of the queue
//! holding the most bytes (§4.1, cause `pushed_out`).
//!
//! Choices where the RFC leaves room:
//! - The hash: RFC 8290 §4.1 hashes the 5-tuple with a random seed. Here the key is
//!   the engine's flow id, the stand-in for the 5-tuple (every flow of a scenario has
//!   its own), mixed with a seed drawn from the queue's random stream (so collisions
//!   differ between seeds, as the RFC's perturbation intends).
//! - Overflow: one packet is dropped from the fattest queue per arrival over the
//!   limit (Linux drops a batch of up to half that queue, for speed; one is what the
//!   RFC's text requires to get back under the limit).
//! - Per-queue CoDel's "more than one MTU queued" guard compares the flow queue's
//!   bytes with the largest packet offered to the whole FQ-CoDel queue.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::codel::{check_positive, d_interval, d_target, CodelParams, CodelState, Stamped};
use super::{DropCause, Drops, Occupancy, Queue};
use crate::config::ScenarioError;
use crate::packet::Packet;
use crate::rng::RngStream;
use crate::time::{Dur, SimTime};
use crate::units::Bytes;

/// Which list a flow queue is on (RFC 8290 §4.2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum OnList {
    /// Neither: the queue is idle.
    #[default]
    None,
    /// The new-flows list.
    New,
    /// The old-flows list.
    Old,
}

/// One flow queue: its packets, CoDel state and DRR deficit (RFC 8290 §4.1, §4.2).
#[derive(Debug, Default)]
struct FlowQueue {
    buf: Stamped,
    codel: CodelState,
    deficit: i64,
    list: OnList,
}

/// Flow-queueing CoDel (RFC 8290 §4): per-flow queues, DRR over new then old flows.
#[derive(Debug)]
pub struct FqCodel {
    params: CodelParams,
    quantum: u32,
    limit: u32,
    seed: u64,
    queues: Vec<FlowQueue>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    packets: u32,
    bytes: u64,
    /// The largest packet offered so far [bytes] (CoDel's `maxpacket`).
    maxpacket: u32,
}

/// A 64-bit mix of `x` (SplitMix64's finaliser), for the flow hash (RFC 8290 §4.1).
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

impl FqCodel {
    /// An empty FQ-CoDel queue with `flows` queues, `quantum` bytes, a shared `limit`
    /// [packets] and per-queue CoDel `params`, its hash seeded from `rng` (RFC 8290 §4).
    pub fn new(
        params: CodelParams,
        flows: u32,
        quantum: u32,
        limit: u32,
        mut rng: RngStream,
    ) -> Self {
        let mut queues = Vec::new();
        queues.resize_with(flows.max(1) as usize, FlowQueue::default);
        FqCodel {
            params,
            quantum: quantum.max(1),
            limit: limit.max(1),
            seed: rng.next_u64(),
            queues,
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            packets: 0,
            bytes: 0,
            maxpacket: 0,
        }
    }

    /// The queue a packet of flow `flow` goes to (RFC 8290 §4.1: seeded hash, modulo `flows`).
    pub fn bucket(&self, flow: u32) -> u32 {
        let h = mix(self.seed ^ flow as u64);
        ((h as u128 * self.queues.len() as u128) >> 64) as u32
    }

    /// Packets and bytes held by queue `i` (RFC 8290 §4.1), for tests and samples.
    pub fn queue_occupancy(&self, i: u32) -> Occupancy {
        self.queues[i as usize].buf.occupancy()
    }

    /// Drops one packet from the head of the queue with the most bytes (RFC 8290 §4.1).
    fn drop_from_fattest(&mut self, drops: &mut Drops) {
        let fattest = self
            .new_flows
            .iter()
            .chain(&self.old_flows)
            .copied()
            .max_by_key(|&i| (self.queues[i as usize].buf.bytes, std::cmp::Reverse(i)));
        let Some(i) = fattest else { return };
        if let Some((_, p)) = self.queues[i as usize].buf.pop() {
            self.packets -= 1;
            self.bytes -= p.size as u64;
            drops.push(p, DropCause::PushedOut);
        }
    }
}

impl Queue for FqCodel {
    fn enqueue(&mut self, now: SimTime, pkt: Packet, drops: &mut Drops) {
        // RFC 8290 §4.1: classify, stamp and add to the flow's queue.
        self.maxpacket = self.maxpacket.max(pkt.size);
        let i = self.bucket(pkt.flow.0);
        let q = &mut self.queues[i as usize];
        self.packets += 1;
        self.bytes += pkt.size as u64;
        q.buf.push(now, pkt);
        if q.list == OnList::None {
            // §4.1: an idle queue joins the end of the new-flows list with a full quantum.
            q.list = OnList::New;
            q.deficit = self.quantum as i64;
            self.new_flows.push_back(i);
        }
        if self.packets > self.limit {
            // §4.1: over the limit, drop from the head of the fattest queue.
            self.drop_from_fattest(drops);
        }
    }

    fn dequeue(&mut self, now: SimTime, drops: &mut Drops) -> Option<Packet> {
        loop {
            // RFC 8290 §4.2: new flows first, then old flows.
            let (from_new, i) = match (self.new_flows.front(), self.old_flows.front()) {
                (Some(&i), _) => (true, i),
                (None, Some(&i)) => (false, i),
                (None, None) => return None,
            };
            let list = if from_new {
                &mut self.new_flows
            } else {
                &mut self.old_flows
            };
            let q = &mut self.queues[i as usize];
            if q.deficit <= 0 {
                // §4.2: out of credit: a quantum more, to the end of the old list.
                q.deficit += self.quantum as i64;
                list.pop_front();
                q.list = OnList::Old;
                self.old_flows.push_back(i);
                continue;
            }
            let before = q.buf.occupancy();
            let out = q
                .codel
                .dequeue(now, &self.params, self.maxpacket, &mut q.buf, drops);
            let after = q.buf.occupancy();
            self.packets -= before.packets - after.packets;
            self.bytes -= before.bytes - after.bytes;
            match out {
                Some(p) => {
                    q.deficit -= p.size as i64;
                    return Some(p);
                }
                None => {
                    // §4.2: an empty new flow goes to the old list (if that has flows),
                    // so it cannot stay at the front by emptying; an empty old flow leaves.
                    list.pop_front();
                    if from_new && !self.old_flows.is_empty() {
                        q.list = OnList::Old;
                        self.old_flows.push_back(i);
                    } else {
                        q.list = OnList::None;
                    }
                }
            }
        }
    }

    fn occupancy(&self) -> Occupancy {
        Occupancy {
            packets: self.packets,
            bytes: self.bytes,
        }
    }
}

fn d_limit() -> u32 {
    10_240
}
fn d_flows() -> u32 {
    1024
}
fn d_quantum() -> Bytes {
    Bytes(1514)
}
fn is_false(b: &bool) -> bool {
    !*b
}

/// The most flow queues an FQ-CoDel queue may have (RFC 8290 §5.2's `flows`; Linux's limit, 65536).
pub const FQ_CODEL_MAX_FLOWS: u32 = 65_536;

/// FQ-CoDel's keys in a scenario (`kind = "fq_codel"`, RFC 8290 §5.2's parameters).
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FqCodelConfig {
    /// Shared limit [packets]; default 10240 (RFC 8290 §5.2).
    #[serde(default = "d_limit")]
    pub limit: u32,
    /// Number of flow queues; default 1024 (RFC 8290 §5.2).
    #[serde(default = "d_flows")]
    pub flows: u32,
    /// DRR quantum [bytes]; default 1514 (RFC 8290 §5.2).
    #[serde(default = "d_quantum")]
    pub quantum: Bytes,
    /// Per-queue CoDel TARGET; default 5 ms (RFC 8290 §5.2, RFC 8289 §4.3).
    #[serde(default = "d_target")]
    pub target: Dur,
    /// Per-queue CoDel INTERVAL; default 100 ms (RFC 8290 §5.2, RFC 8289 §4.2).
    #[serde(default = "d_interval")]
    pub interval: Dur,
    /// Mark ECN-capable packets CE instead of dropping them; default false (RFC 8290 §5.2).
    #[serde(default, skip_serializing_if = "is_false")]
    pub ecn: bool,
}

impl Default for FqCodelConfig {
    /// RFC 8290's defaults: 1024 queues, quantum 1514 bytes, 10240 packets, CoDel 5/100 ms.
    fn default() -> Self {
        FqCodelConfig {
            limit: d_limit(),
            flows: d_flows(),
            quantum: d_quantum(),
            target: d_target(),
            interval: d_interval(),
            ecn: false,
        }
    }
}

impl FqCodelConfig {
    /// Checks every key (RFC 8290 §5.2); keys are relative to the queue table.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        if self.limit == 0 {
            return Err(ScenarioError::new(
                "limit",
                "expected a limit of at least 1 packet, found 0",
            ));
        }
        if !(1..=FQ_CODEL_MAX_FLOWS).contains(&self.flows) {
            return Err(ScenarioError::new(
                "flows",
                format!(
                    "expected flows in 1..={FQ_CODEL_MAX_FLOWS} queues, found {}",
                    self.flows
                ),
            ));
        }
        if !(1..=u32::MAX as u64).contains(&self.quantum.0) {
            return Err(ScenarioError::new(
                "quantum",
                format!(
                    "expected a quantum of at least 1 byte (one MTU, 1514, is usual), found {}",
                    self.quantum.0
                ),
            ));
        }
        check_positive("target", self.target)?;
        check_positive("interval", self.interval)
    }

    /// The queue these settings describe (RFC 8290 §4), its hash seeded from `rng`;
    /// call [`FqCodelConfig::validate`] first.
    pub fn build(&self, rng: RngStream) -> FqCodel {
        FqCodel::new(
            CodelParams {
                target: self.target,
                interval: self.interval,
                ecn: self.ecn,
            },
            self.flows,
            self.quantum.0.min(u32::MAX as u64) as u32,
            self.limit,
            rng,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::FlowId;

    fn fp(flow: u32, uid: u64, size: u32) -> Packet {
        Packet {
            uid,
            flow: FlowId(flow),
            size,
            ..Default::default()
        }
    }

    fn fq(quantum: u32, limit: u32) -> FqCodel {
        let q = FqCodel::new(
            CodelParams {
                target: Dur::from_millis(5),
                interval: Dur::from_millis(100),
                ecn: false,
            },
            1024,
            quantum,
            limit,
            RngStream::from_seed(3),
        );
        // The tests need flows 0, 1 and 2 in separate queues.
        let b: Vec<_> = (0..3).map(|f| q.bucket(f)).collect();
        assert!(b[0] != b[1] && b[1] != b[2] && b[0] != b[2], "{b:?}");
        q
    }

    #[test]
    fn two_backlogged_flows_get_equal_bytes_within_one_quantum() {
        // Flow 0 sends 1500-byte packets, flow 1 300-byte ones, both always backlogged;
        // quantum 1500: each round gives each flow 1500 bytes (one big packet, or five
        // small), so at every point the byte counts differ by at most one quantum.
        let mut q = fq(1500, 100_000);
        let mut d = Drops::default();
        let t = SimTime::ZERO;
        for i in 0..2000 {
            q.enqueue(t, fp(0, i, 1500), &mut d);
            for k in 0..5 {
                q.enqueue(t, fp(1, 10_000 + 5 * i + k, 300), &mut d);
            }
        }
        let mut sent = [0u64; 2];
        for _ in 0..3000 {
            let p = q.dequeue(t, &mut d).unwrap();
            sent[p.flow.0 as usize] += p.size as u64;
            assert!(sent[0].abs_diff(sent[1]) <= 1500, "{sent:?}");
        }
        assert!(sent[0] > 500_000 && sent[1] > 500_000, "{sent:?}");
        assert!(d.is_empty());
    }

    #[test]
    fn a_new_sparse_flow_is_served_before_the_old_ones() {
        let mut q = fq(1514, 1000);
        let mut d = Drops::default();
        let t = SimTime::ZERO;
        for i in 0..20 {
            q.enqueue(t, fp(0, i, 1500), &mut d);
            q.enqueue(t, fp(1, 100 + i, 1500), &mut d);
        }
        // Both start as new flows with 1514 bytes of credit: flow 0 sends two packets
        // (1514 → 14 → −1486), then flow 1 two; both are then old flows.
        let order: Vec<_> = (0..4).map(|_| q.dequeue(t, &mut d).unwrap().uid).collect();
        assert_eq!(order, [0, 1, 100, 101]);
        // A sparse flow's packet arrives: it is sent next, ahead of the backlog.
        q.enqueue(t, fp(2, 500, 200), &mut d);
        assert_eq!(q.dequeue(t, &mut d).unwrap().uid, 500);
        // Then the old flows resume in turn.
        assert_eq!(q.dequeue(t, &mut d).unwrap().uid, 2);
        // A second packet of flow 2 after its queue emptied: flow 2 was moved to the
        // old list (old flows were waiting), so this one waits for its turn in the old
        // round, behind flow 1 (flow 0, out of credit, goes to the back first).
        q.enqueue(t, fp(2, 501, 200), &mut d);
        let next: Vec<_> = (0..4).map(|_| q.dequeue(t, &mut d).unwrap().uid).collect();
        assert_eq!(next, [102, 501, 3, 103]);
    }

    #[test]
    fn over_the_limit_drops_from_the_head_of_the_fattest_queue() {
        let mut q = fq(1514, 6);
        let mut d = Drops::default();
        let t = SimTime::ZERO;
        for i in 0..4 {
            q.enqueue(t, fp(0, i, 1000), &mut d);
        }
        q.enqueue(t, fp(1, 10, 1500), &mut d);
        q.enqueue(t, fp(1, 11, 1500), &mut d);
        assert!(d.is_empty());
        // Seventh packet, of flow 1: flow 1 then holds 4500 bytes, flow 0 4000, so flow
        // 1's head goes (not the arrival, at its tail).
        q.enqueue(t, fp(1, 12, 1500), &mut d);
        assert_eq!(d.dropped.len(), 1);
        assert_eq!(
            (d.dropped[0].0.uid, d.dropped[0].1),
            (10, DropCause::PushedOut)
        );
        // Now flow 0 is the fattest (4100 > 3000): its head goes.
        d.clear();
        q.enqueue(t, fp(0, 4, 100), &mut d);
        assert_eq!(d.dropped[0].0.uid, 0);
        assert_eq!(
            q.occupancy(),
            Occupancy {
                packets: 6,
                bytes: 3100 + 3000
            }
        );
    }

    #[test]
    fn per_queue_codel_drops_only_the_standing_flow() {
        // Flow 0 keeps 100 packets queued (its sojourn grows past target); flow 1 sends
        // one small packet per millisecond and never builds a queue: CoDel drops only
        // flow 0's packets, and conservation holds throughout.
        let mut q = fq(1514, 10_000);
        let mut d = Drops::default();
        let (mut now, mut uid) = (SimTime::ZERO, 0u64);
        let (mut arrived, mut departed, mut dropped) = (0u64, 0u64, 0u64);
        let mut dropped_by_flow = [0u32; 2];
        for step in 0..20_000u64 {
            while q.queue_occupancy(q.bucket(0)).packets < 100 {
                q.enqueue(now, fp(0, uid, 1500), &mut d);
                uid += 1;
                arrived += 1;
            }
            if step % 10 == 0 {
                q.enqueue(now, fp(1, uid, 100), &mut d);
                uid += 1;
                arrived += 1;
            }
            if q.dequeue(now, &mut d).is_some() {
                departed += 1;
            }
            for (p, c) in &d.dropped {
                assert_eq!(*c, DropCause::Codel);
                dropped_by_flow[p.flow.0 as usize] += 1;
                dropped += 1;
            }
            d.clear();
            assert_eq!(arrived, departed + dropped + q.occupancy().packets as u64);
            now += Dur::from_micros(100);
        }
        assert!(dropped_by_flow[0] > 10, "{dropped_by_flow:?}");
        assert_eq!(dropped_by_flow[1], 0);
    }
}

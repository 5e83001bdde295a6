//! LQD: Longest Queue Drop over per-flow queues in a shared buffer (Suter, Lakshman,
//! Stiliadis & Choudhury, "Design considerations for supporting TCP with per-flow
//! queueing", INFOCOM 1998; P2's edge routers).
//!
//! An arrival that does not fit is admitted and a packet is pushed out of the tail of
//! the longest per-flow queue (length in the buffer's unit: packets or bytes); if the
//! arrival's own queue, counting the arrival, is at least as long as every other, the
//! arrival itself is the one dropped (ties go to the arrival, which saves a useless
//! push-out).
//!
//! Service is deficit round robin (Shreedhar & Varghese, SIGCOMM 1995) over backlogged
//! flows with a byte quantum (default one MTU), or arrival order (`Service::Fifo`).
//!
//! Data structures, so nothing allocates per packet once the buffers have grown:
//! - flows live in a `Vec` indexed by `FlowId` (dense in a world), each with its own
//!   `VecDeque` (capacity kept when it drains);
//! - the longest queue comes from an indexed binary max-heap of backlogged flows keyed
//!   by length: O(log n) per length change, O(1) to read the maximum;
//! - DRR keeps a ring of active flows; a flow emptied by a push-out stays in the ring
//!   and is skipped when reached (O(1) amortised);
//! - FIFO service keeps a ring of (flow, sequence number) in arrival order; an entry
//!   whose packet was pushed out no longer matches its flow's head and is skipped.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::{DropCause, Drops, Limit, Occupancy, Queue};
use crate::config::ScenarioError;
use crate::packet::Packet;
use crate::time::SimTime;
use crate::units::Bytes;

/// How LQD serves its per-flow queues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Service {
    /// Deficit round robin with this quantum [bytes].
    Drr {
        /// Bytes a flow may send per round (≥ 1; one MTU is the usual choice).
        quantum: u32,
    },
    /// Arrival order across all flows.
    Fifo,
}

const NONE: u32 = u32::MAX;

#[derive(Debug, Default)]
struct Flow {
    q: VecDeque<(u64, Packet)>,
    bytes: u64,
    deficit: u64,
    /// In the DRR ring.
    active: bool,
    /// Position in the heap, or `NONE`.
    heap_pos: u32,
}

/// Longest Queue Drop with per-flow queues and DRR or FIFO service.
#[derive(Debug)]
pub struct Lqd {
    limit: Limit,
    service: Service,
    flows: Vec<Flow>,
    /// Indexed max-heap of backlogged flow indices, keyed by [`Lqd::key`].
    heap: Vec<u32>,
    /// DRR: active flows, front is being served. FIFO: (flow, seq) in arrival order.
    ring: VecDeque<(u32, u64)>,
    /// DRR: the front flow already got its quantum this turn.
    turn_started: bool,
    seq: u64,
    packets: u32,
    bytes: u64,
}

impl Lqd {
    /// An empty LQD buffer with the given shared limit and service.
    pub fn new(limit: Limit, service: Service) -> Self {
        Lqd {
            limit,
            service,
            flows: Vec::new(),
            heap: Vec::new(),
            ring: VecDeque::new(),
            turn_started: false,
            seq: 0,
            packets: 0,
            bytes: 0,
        }
    }

    /// Length of flow `f`'s queue in the buffer's unit.
    fn key(&self, f: u32) -> u64 {
        let fl = &self.flows[f as usize];
        match self.limit {
            Limit::Packets(_) => fl.q.len() as u64,
            Limit::Bytes(_) => fl.bytes,
        }
    }

    /// Packets held by flow `f` (for tests and samples).
    pub fn flow_len(&self, f: u32) -> usize {
        self.flows.get(f as usize).map_or(0, |x| x.q.len())
    }

    // --- indexed max-heap ---

    fn heap_swap(&mut self, i: usize, j: usize) {
        self.heap.swap(i, j);
        self.flows[self.heap[i] as usize].heap_pos = i as u32;
        self.flows[self.heap[j] as usize].heap_pos = j as u32;
    }

    fn sift_up(&mut self, mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.key(self.heap[i]) <= self.key(self.heap[parent]) {
                break;
            }
            self.heap_swap(i, parent);
            i = parent;
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut big = i;
            if l < self.heap.len() && self.key(self.heap[l]) > self.key(self.heap[big]) {
                big = l;
            }
            if r < self.heap.len() && self.key(self.heap[r]) > self.key(self.heap[big]) {
                big = r;
            }
            if big == i {
                break;
            }
            self.heap_swap(i, big);
            i = big;
        }
    }

    /// Restores the heap after flow `f`'s length changed (inserting or removing it as
    /// it becomes backlogged or empty).
    fn heap_fix(&mut self, f: u32) {
        let pos = self.flows[f as usize].heap_pos;
        let empty = self.flows[f as usize].q.is_empty();
        if pos == NONE {
            if !empty {
                self.heap.push(f);
                let i = self.heap.len() - 1;
                self.flows[f as usize].heap_pos = i as u32;
                self.sift_up(i);
            }
        } else if empty {
            let i = pos as usize;
            let last = self.heap.len() - 1;
            self.heap_swap(i, last);
            self.heap.pop();
            self.flows[f as usize].heap_pos = NONE;
            if i < self.heap.len() {
                self.sift_up(i);
                self.sift_down(i);
            }
        } else {
            self.sift_up(pos as usize);
            self.sift_down(self.flows[f as usize].heap_pos as usize);
        }
    }

    // --- buffer ---

    fn fits(&self, size: u32) -> bool {
        self.limit.admits(
            Occupancy {
                packets: self.packets,
                bytes: self.bytes,
            },
            size,
        )
    }

    fn take(&mut self, f: u32, back: bool) -> Packet {
        let fl = &mut self.flows[f as usize];
        let (_, p) = if back {
            fl.q.pop_back()
        } else {
            fl.q.pop_front()
        }
        .expect("take from a backlogged flow");
        fl.bytes -= p.size as u64;
        self.packets -= 1;
        self.bytes -= p.size as u64;
        self.heap_fix(f);
        p
    }

    /// Next flow to serve by DRR, charging its deficit; `None` if nothing is held.
    fn drr_next(&mut self, quantum: u32) -> Option<u32> {
        loop {
            let &(f, _) = self.ring.front()?;
            let fl = &mut self.flows[f as usize];
            let Some(head) = fl.q.front().map(|x| x.1.size as u64) else {
                // Emptied by a push-out while waiting for its turn.
                fl.active = false;
                fl.deficit = 0;
                self.ring.pop_front();
                self.turn_started = false;
                continue;
            };
            if !self.turn_started {
                fl.deficit += quantum as u64;
                self.turn_started = true;
            }
            if head <= fl.deficit {
                fl.deficit -= head;
                return Some(f);
            }
            // Not enough deficit for the head: end of this flow's turn.
            self.ring.rotate_left(1);
            self.turn_started = false;
        }
    }
}

impl Queue for Lqd {
    fn enqueue(&mut self, _now: SimTime, pkt: Packet, drops: &mut Drops) {
        let f = pkt.flow.0;
        if self.flows.len() <= f as usize {
            self.flows.resize_with(f as usize + 1, || Flow {
                heap_pos: NONE,
                ..Default::default()
            });
        }
        let unit = match self.limit {
            Limit::Packets(_) => 1,
            Limit::Bytes(_) => pkt.size as u64,
        };
        let whole = match self.limit {
            Limit::Packets(n) => n >= 1,
            Limit::Bytes(b) => pkt.size as u64 <= b,
        };
        if !whole {
            return drops.push(pkt, DropCause::Overflow);
        }
        while !self.fits(pkt.size) {
            // Suter et al.: push out from the longest queue, unless it is the arrival's.
            let own = self.key(f) + unit;
            let longest = self.heap[0];
            if own >= self.key(longest) {
                return drops.push(pkt, DropCause::Overflow);
            }
            let victim = self.take(longest, true);
            drops.push(victim, DropCause::PushedOut);
        }
        let seq = self.seq;
        self.seq += 1;
        let fl = &mut self.flows[f as usize];
        fl.bytes += pkt.size as u64;
        fl.q.push_back((seq, pkt));
        self.packets += 1;
        self.bytes += pkt.size as u64;
        match self.service {
            Service::Drr { .. } => {
                if !fl.active {
                    fl.active = true;
                    fl.deficit = 0;
                    self.ring.push_back((f, 0));
                }
            }
            Service::Fifo => self.ring.push_back((f, seq)),
        }
        self.heap_fix(f);
    }

    fn dequeue(&mut self, _now: SimTime, _drops: &mut Drops) -> Option<Packet> {
        if self.packets == 0 {
            // Drop stale ring entries so the ring cannot grow without bound.
            if self.service == Service::Fifo {
                self.ring.clear();
            }
            return None;
        }
        match self.service {
            Service::Drr { quantum } => {
                let f = self.drr_next(quantum)?;
                let p = self.take(f, false);
                let fl = &mut self.flows[f as usize];
                if fl.q.is_empty() {
                    // DRR: an emptied flow leaves the ring and forfeits its deficit.
                    fl.active = false;
                    fl.deficit = 0;
                    self.ring.pop_front();
                    self.turn_started = false;
                }
                Some(p)
            }
            Service::Fifo => loop {
                let (f, seq) = self.ring.pop_front()?;
                let head = self.flows[f as usize].q.front().map(|x| x.0);
                if head == Some(seq) {
                    return Some(self.take(f, false));
                }
                // Its packet was pushed out: skip the stale entry.
            },
        }
    }

    fn occupancy(&self) -> Occupancy {
        Occupancy {
            packets: self.packets,
            bytes: self.bytes,
        }
    }
}

/// How an LQD buffer serves its per-flow queues, as written in a scenario.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum LqdService {
    /// Deficit round robin over backlogged flows, `quantum` bytes per round.
    #[default]
    Drr,
    /// Arrival order across flows.
    Fifo,
}

fn d_quantum() -> Bytes {
    Bytes(1500)
}

/// LQD's keys in a scenario (`kind = "lqd"`).
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LqdConfig {
    /// Shared limit [packets]; default 100 when `limit_bytes` is not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Shared limit [bytes], instead of `limit`; queue lengths are then in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_bytes: Option<Bytes>,
    /// `"drr"` (default) or `"fifo"`.
    #[serde(default)]
    pub service: LqdService,
    /// DRR quantum [bytes]; default 1500 (one Ethernet MTU).
    #[serde(default = "d_quantum")]
    pub quantum: Bytes,
}

impl LqdConfig {
    /// Checks the limits and the quantum; keys are relative to the queue table.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        Limit::check_keys(self.limit, self.limit_bytes)?;
        if (1..=u32::MAX as u64).contains(&self.quantum.0) {
            Ok(())
        } else {
            Err(ScenarioError::new(
                "quantum",
                format!(
                    "expected a quantum of at least 1 byte (one MTU, 1500, is usual), found {}",
                    self.quantum.0
                ),
            ))
        }
    }

    /// The queue these settings describe; call [`LqdConfig::validate`] first.
    pub fn build(&self) -> Lqd {
        let service = match self.service {
            LqdService::Drr => Service::Drr {
                quantum: self.quantum.0.min(u32::MAX as u64) as u32,
            },
            LqdService::Fifo => Service::Fifo,
        };
        Lqd::new(Limit::from_keys(self.limit, self.limit_bytes), service)
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

    #[test]
    fn pushes_out_from_the_longest_queue() {
        let mut q = Lqd::new(Limit::Packets(6), Service::Drr { quantum: 1500 });
        let mut d = Drops::default();
        let t = SimTime::ZERO;
        for i in 0..4 {
            q.enqueue(t, fp(0, i, 100), &mut d);
        }
        q.enqueue(t, fp(1, 10, 100), &mut d);
        q.enqueue(t, fp(2, 20, 100), &mut d);
        assert!(d.is_empty());
        // Full. Flow 1 (1 packet) arrives: flow 0's tail (uid 3) is pushed out.
        q.enqueue(t, fp(1, 11, 100), &mut d);
        assert_eq!(d.dropped.len(), 1);
        assert_eq!(
            (d.dropped[0].0.uid, d.dropped[0].1),
            (3, DropCause::PushedOut)
        );
        assert_eq!((q.flow_len(0), q.flow_len(1)), (3, 2));
        d.clear();
        // Flow 0 (3 packets, the longest) arrives: the arrival is dropped.
        q.enqueue(t, fp(0, 4, 100), &mut d);
        assert_eq!(
            (d.dropped[0].0.uid, d.dropped[0].1),
            (4, DropCause::Overflow)
        );
        d.clear();
        // A new flow 3 pushes out of flow 0 again (3 > 1).
        q.enqueue(t, fp(3, 30, 100), &mut d);
        assert_eq!(
            (d.dropped[0].0.uid, d.dropped[0].1),
            (2, DropCause::PushedOut)
        );
        assert_eq!(q.occupancy().packets, 6);
    }

    #[test]
    fn byte_buffer_pushes_out_by_bytes() {
        // Flow 0 holds 2 × 1000 B, flow 1 holds 10 × 100 B: flow 0 is longer in bytes
        // though shorter in packets.
        let mut q = Lqd::new(Limit::Bytes(3000), Service::Fifo);
        let mut d = Drops::default();
        let t = SimTime::ZERO;
        q.enqueue(t, fp(0, 0, 1000), &mut d);
        q.enqueue(t, fp(0, 1, 1000), &mut d);
        for i in 0..10 {
            q.enqueue(t, fp(1, 10 + i, 100), &mut d);
        }
        assert!(d.is_empty());
        // Flow 2 sends 1500 B into the full buffer: flow 0 (2000 B) is longer than the
        // arrival's 1500, so its tail (uid 1) is pushed out. 500 B are still missing,
        // and now the arrival's 1500 ≥ the longest (1000): the arrival is dropped.
        q.enqueue(t, fp(2, 20, 1500), &mut d);
        let got: Vec<_> = d.dropped.iter().map(|x| (x.0.uid, x.1)).collect();
        assert_eq!(
            got,
            vec![(1, DropCause::PushedOut), (20, DropCause::Overflow)]
        );
        d.clear();
        // Flow 2 sends 500 B: 1000 B in flows 0 and 1 each, 2000 held, fits.
        q.enqueue(t, fp(2, 21, 500), &mut d);
        assert!(d.is_empty());
        // FIFO order skips the pushed-out packet.
        let order: Vec<u64> = std::iter::from_fn(|| q.dequeue(t, &mut d))
            .map(|p| p.uid)
            .collect();
        let mut want = vec![0];
        want.extend(10..20);
        want.push(21);
        assert_eq!(order, want);
    }

    #[test]
    fn drr_shares_service_equally_by_bytes() {
        // Three always-backlogged flows with 100, 576 and 1500-byte packets.
        let sizes = [100u32, 576, 1500];
        let mut q = Lqd::new(Limit::Packets(1000), Service::Drr { quantum: 1500 });
        let mut d = Drops::default();
        let t = SimTime::ZERO;
        let mut uid = 0;
        for (f, &s) in sizes.iter().enumerate() {
            for _ in 0..300 {
                q.enqueue(t, fp(f as u32, uid, s), &mut d);
                uid += 1;
            }
        }
        let mut served = [0u64; 3];
        for _ in 0..2000 {
            let p = q.dequeue(t, &mut d).unwrap();
            served[p.flow.0 as usize] += p.size as u64;
            // Keep every flow backlogged.
            q.enqueue(t, fp(p.flow.0, uid, p.size), &mut d);
            uid += 1;
        }
        assert!(d.is_empty());
        let max = *served.iter().max().unwrap();
        let min = *served.iter().min().unwrap();
        // DRR: each backlogged flow gets quantum bytes per round, ± one quantum.
        assert!(max - min <= 2 * 1500, "{served:?}");
        assert!(min > 100_000, "{served:?}");
    }

    #[test]
    fn fifo_service_keeps_arrival_order() {
        let mut q = Lqd::new(Limit::Packets(10), Service::Fifo);
        let mut d = Drops::default();
        let t = SimTime::ZERO;
        let flows = [2, 0, 1, 0, 2, 2];
        for (i, &f) in flows.iter().enumerate() {
            q.enqueue(t, fp(f, i as u64, 100), &mut d);
        }
        let order: Vec<u64> = std::iter::from_fn(|| q.dequeue(t, &mut d))
            .map(|p| p.uid)
            .collect();
        assert_eq!(order, vec![0, 1, 2, 3, 4, 5]);
    }
}

//! DropTail: first in, first out; an arrival that does not fit is dropped.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::{DropCause, Drops, Limit, Occupancy, Queue};
use crate::config::ScenarioError;
use crate::packet::Packet;
use crate::time::SimTime;
use crate::units::Bytes;

/// A FIFO with a tail-drop limit in packets or bytes.
#[derive(Debug)]
pub struct DropTail {
    limit: Limit,
    buf: VecDeque<Packet>,
    bytes: u64,
}

impl DropTail {
    /// An empty FIFO with the given limit.
    pub fn new(limit: Limit) -> Self {
        DropTail {
            limit,
            buf: VecDeque::new(),
            bytes: 0,
        }
    }
}

impl DropTail {
    /// True if an enqueue of `pkt` followed at once by a dequeue would hand it back and
    /// leave the queue as it was: the queue is empty and admits it.
    #[inline]
    pub fn passes_when_empty(&self, pkt: &Packet) -> bool {
        self.buf.is_empty() && self.limit.admits(self.occupancy(), pkt.size)
    }
}

impl DropTail {
    /// Its limit.
    pub fn limit(&self) -> Limit {
        self.limit
    }

    /// [`Queue::enqueue`] of a copy of `pkt`, copied once, into the buffer.
    #[inline]
    pub fn enqueue_copy(&mut self, pkt: &Packet, drops: &mut Drops) {
        if self.limit.admits(self.occupancy(), pkt.size) {
            self.bytes += pkt.size as u64;
            self.buf.push_back(*pkt);
        } else {
            drops.push(*pkt, DropCause::Overflow);
        }
    }

    /// [`Queue::dequeue`], handing the packet to `put` where it lies in the buffer.
    #[inline]
    pub fn dequeue_with<R>(&mut self, put: impl FnOnce(&Packet) -> R) -> Option<R> {
        let p = self.buf.front()?;
        self.bytes -= p.size as u64;
        let r = put(p);
        self.buf.pop_front();
        Some(r)
    }
}

impl Queue for DropTail {
    #[inline]
    fn enqueue(&mut self, _now: SimTime, pkt: Packet, drops: &mut Drops) {
        if self.limit.admits(self.occupancy(), pkt.size) {
            self.bytes += pkt.size as u64;
            self.buf.push_back(pkt);
        } else {
            drops.push(pkt, DropCause::Overflow);
        }
    }

    #[inline]
    fn dequeue(&mut self, _now: SimTime, _drops: &mut Drops) -> Option<Packet> {
        let p = self.buf.pop_front()?;
        self.bytes -= p.size as u64;
        Some(p)
    }

    #[inline]
    fn occupancy(&self) -> Occupancy {
        Occupancy {
            packets: self.buf.len() as u32,
            bytes: self.bytes,
        }
    }
}

/// DropTail's keys in a scenario (`kind = "droptail"`): `limit` [packets] or
/// `limit_bytes` [bytes, number or "64KB"], never both; with neither, 100 packets.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DropTailConfig {
    /// Limit [packets]; default 100 when `limit_bytes` is not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Limit [bytes], instead of `limit`; e.g. `"64KB"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_bytes: Option<Bytes>,
}

impl DropTailConfig {
    /// Checks the limits; keys are relative to the queue table.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        Limit::check_keys(self.limit, self.limit_bytes)
    }

    /// The queue these settings describe.
    pub fn build(&self) -> DropTail {
        DropTail::new(Limit::from_keys(self.limit, self.limit_bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(uid: u64, size: u32) -> Packet {
        Packet {
            uid,
            size,
            ..Default::default()
        }
    }

    #[test]
    fn fifo_and_packet_limit() {
        let mut q = DropTail::new(Limit::Packets(2));
        let mut d = Drops::default();
        for i in 0..3 {
            q.enqueue(SimTime::ZERO, pkt(i, 100), &mut d);
        }
        assert_eq!(d.dropped.len(), 1);
        assert_eq!(d.dropped[0].0.uid, 2);
        assert_eq!(d.dropped[0].1, DropCause::Overflow);
        assert_eq!(q.dequeue(SimTime::ZERO, &mut d).unwrap().uid, 0);
        assert_eq!(q.dequeue(SimTime::ZERO, &mut d).unwrap().uid, 1);
        assert!(q.dequeue(SimTime::ZERO, &mut d).is_none());
    }

    #[test]
    fn byte_limit_counts_bytes() {
        let mut q = DropTail::new(Limit::Bytes(250));
        let mut d = Drops::default();
        q.enqueue(SimTime::ZERO, pkt(0, 100), &mut d);
        q.enqueue(SimTime::ZERO, pkt(1, 100), &mut d);
        q.enqueue(SimTime::ZERO, pkt(2, 100), &mut d); // 300 > 250
        q.enqueue(SimTime::ZERO, pkt(3, 50), &mut d); // 250 fits exactly
        assert_eq!(d.dropped.len(), 1);
        assert_eq!(
            q.occupancy(),
            Occupancy {
                packets: 3,
                bytes: 250
            }
        );
    }
}

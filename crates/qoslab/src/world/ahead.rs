//! Transmissions committed ahead: a DropTail interface puts a packet it admits behind a
//! busy transmitter on the wire at once, with the time it will start, instead of
//! holding it in its buffer for a `TxDone` event to take out.
//!
//! A FIFO that decides at the tail only (DropTail) fixes every packet's start time the
//! moment it admits it: the end of the transmission before it. So the packet goes on
//! the wire with its arrival time right away, and the interface keeps only the start
//! times (and sizes) of the packets that have not started, for its occupancy: an
//! arrival is admitted or dropped on the packets still waiting at its time, queue
//! samples read them, and the departure counters take a packet when it starts, by
//! [`World::settle_ahead`] at the warm-up's end and the run's end and lazily in
//! between. Nothing else changes (no `TxDone` event for these interfaces; a backlogged
//! bottleneck costs one event per packet instead of two), but where an arrival comes
//! at the very nanosecond a waiting packet starts: that packet counts as started (the
//! order of those two simultaneous events the engine otherwise takes from when each
//! was scheduled). Only on links with a propagation delay and no random loss, so the
//! packet before a committed one is always still on the wire and arrival events are
//! scheduled exactly as the ordinary path schedules them.

use super::*;
use crate::queue::{AnyQueue, Occupancy};

impl World {
    /// Decides, for this run, which interfaces commit transmissions ahead (see the
    /// module comment); none with packet capture or in wall-clock mode.
    pub(super) fn plan_ahead(&mut self) {
        let allowed = self.cut_through && self.capture.is_none() && self.wall.is_none();
        for f in &mut self.ifaces {
            f.ahead = Default::default();
            f.ahead.on = allowed
                && matches!(f.queue, AnyQueue::DropTail(_))
                && f.delay > Dur::ZERO
                && f.loss == 0.0;
        }
    }

    /// Offers the packet in slot `p` to `iface`'s DropTail queue, committing ahead: its
    /// transmitter is busy at `now` (the caller sent it on at once otherwise).
    #[inline(never)]
    pub(super) fn enqueue_ahead(&mut self, now: SimTime, iface: IfaceId, p: Slot) {
        let fi = iface.0 as usize;
        let occ = self.ahead_started(fi, now, true);
        let size = self.pool[p].size;
        let f = &mut self.ifaces[fi];
        let AnyQueue::DropTail(q) = &f.queue else {
            unreachable!("only DropTail commits ahead")
        };
        if !q.limit().admits(occ, size) {
            let pkt = self.pool.take(p);
            self.drops.push(pkt, crate::queue::DropCause::Overflow);
            self.account_queue_drops(now, iface);
            return;
        }
        let start = f.busy_until.max(now);
        let done = start + f.rate.tx_time(size + f.framing);
        f.busy_until = done;
        f.ahead.waiting.push_back((start, size));
        f.ahead.bytes += size as u64;
        let arrive = done + f.delay;
        if self.cut_on && f.cut.feeds && self.try_cut(iface, arrive, p) {
            return;
        }
        let f = &mut self.ifaces[fi];
        f.on_wire.push_back((arrive, p));
        if !f.arrive_pending {
            f.arrive_pending = true;
            self.q.schedule_forget(arrive, Event::Arrive { iface });
        }
    }

    /// Counts the committed packets of interface `fi` that started before `now` (and
    /// at `now` too if `at_now`) as departed; returns what still waits.
    #[inline]
    pub(super) fn ahead_started(&mut self, fi: usize, now: SimTime, at_now: bool) -> Occupancy {
        let f = &mut self.ifaces[fi];
        let mut started = 0;
        while let Some(&(start, size)) = f.ahead.waiting.front() {
            if start > now || (start == now && !at_now) {
                break;
            }
            f.ahead.waiting.pop_front();
            f.ahead.bytes -= size as u64;
            f.counters.departed += 1;
            f.counters.departed_bytes += size as u64;
            started += 1;
        }
        self.hops += started;
        Occupancy {
            packets: f.ahead.waiting.len() as u32,
            bytes: f.ahead.bytes,
        }
    }

    /// Counts every committed packet that started before `now` (and at `now` too if
    /// `at_now`) on every interface, as the ordinary path would have by then (the
    /// warm-up's end runs before transmissions starting at its own time: it was
    /// scheduled first; the end of the run after them).
    pub(super) fn settle_ahead(&mut self, now: SimTime, at_now: bool) {
        for fi in 0..self.ifaces.len() {
            if !self.ifaces[fi].ahead.waiting.is_empty() {
                self.ahead_started(fi, now, at_now);
            }
        }
    }
}

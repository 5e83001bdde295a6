//! Transmissions committed ahead: a DropTail or RED interface puts a packet it admits
//! behind a busy transmitter on the wire at once, with the time it will start, instead
//! of holding it in its buffer for a `TxDone` event to take out.
//!
//! A FIFO that decides at the tail only (DropTail, and RED, whose average, count and
//! random draw are all taken at the arrival) fixes every packet's start time the
//! moment it admits it: the end of the transmission before it. So the packet goes on
//! the wire with its arrival time right away, and the interface keeps only the start
//! times (and sizes) of the packets that have not started, for its occupancy: an
//! arrival is admitted or dropped on the packets still waiting at its time, queue
//! samples read them, and the departure counters take a packet when it starts, by
//! [`World::settle_ahead`] at the warm-up's end and the run's end and lazily in
//! between. RED's idle clock (F&J's `q_time`) starts when the last waiting packet
//! starts, as it does when the ordinary path's `TxDone` empties the buffer; an arrival
//! at an idle RED interface is judged the same way and, admitted, transmitted at once.
//!
//! Which packets have started is decided in the event order, not by time alone: each
//! committed packet carries the key (`time << 64 | seq`) its `TxDone` event would have
//! on the ordinary path, and counts as started exactly when the event being handled
//! sorts after that key. The ordinary path schedules that event either when the packet
//! arrives behind a transmitter with nothing waiting (the key is taken then), or while
//! the packet before it starts (its `TxDone` handler schedules the next): that key is
//! taken when the event loop passes the key of the packet before
//! ([`World::stamp_ahead`], before the first event that sorts after it), so it sorts
//! after every event scheduled before and before every one scheduled after, where the
//! ordinary path puts it. An arrival at the very nanosecond a packet starts thus sees
//! the queue the ordinary path shows it, RED's average included. No `TxDone` event
//! runs for these interfaces (a backlogged bottleneck costs one event per packet
//! instead of two). Only on links with a propagation delay and no random loss, so the
//! packet before a committed one is always still on the wire and arrival events are
//! scheduled exactly as the ordinary path schedules them.

use super::*;
use crate::net::Committed;
use crate::packet::Ecn;
use crate::queue::{AnyQueue, DropCause, Judged, Occupancy};

impl World {
    /// Decides, for this run, which interfaces commit transmissions ahead (see the
    /// module comment); none with packet capture or in wall-clock mode.
    pub(super) fn plan_ahead(&mut self) {
        let allowed = self.cut_through && self.capture.is_none() && self.wall.is_none();
        for f in &mut self.ifaces {
            f.ahead = Default::default();
            f.ahead.on = allowed
                && matches!(f.queue, AnyQueue::DropTail(_) | AnyQueue::Red(_))
                && f.delay > Dur::ZERO
                && f.loss == 0.0;
        }
        self.ahead_keyless.clear();
        self.ahead_watch = Committed::UNSET;
    }

    /// Offers the packet in slot `p` to `iface`'s DropTail or RED queue, committing
    /// ahead: a DropTail interface's transmitter is busy at `now`, or a `TxDone` may be
    /// pending there (the caller sent the packet on at once otherwise); a RED one's may
    /// be idle.
    #[inline(never)]
    pub(super) fn enqueue_ahead(&mut self, now: SimTime, iface: IfaceId, p: Slot) {
        let fi = iface.0 as usize;
        let cur = self.q.current_key();
        let occ = self.ahead_started(fi, cur);
        let size = self.pool[p].size;
        let f = &mut self.ifaces[fi];
        if f.ahead.spare < cur {
            // The ordinary path's spare TxDone has run, and found nothing to start.
            f.ahead.spare = Committed::UNSET;
            f.tx_pending = false;
        }
        let verdict = match &mut f.queue {
            AnyQueue::DropTail(q) if q.limit().admits(occ, size) => Judged::Admit { marked: false },
            AnyQueue::DropTail(_) => Judged::Drop {
                cause: DropCause::Overflow,
                marked: false,
            },
            AnyQueue::Red(q) => q.judge(now, occ, &self.pool[p], 0, 1.0),
            _ => unreachable!("only DropTail and RED commit ahead"),
        };
        match verdict {
            Judged::Admit { marked: false } => {}
            Judged::Admit { marked: true } => {
                self.pool[p].ecn = Ecn::Ce;
                self.drops.mark(&self.pool[p]);
                self.account_queue_drops(now, iface);
            }
            Judged::Drop { cause, marked } => {
                let mut pkt = self.pool.take(p);
                if marked {
                    pkt.ecn = Ecn::Ce;
                }
                self.drops.push(pkt, cause);
                self.account_queue_drops(now, iface);
                // Behind a busy transmitter with nothing waiting and no TxDone pending,
                // the ordinary path schedules one all the same.
                let f = &mut self.ifaces[fi];
                if f.ahead.waiting.is_empty()
                    && f.ahead.spare == Committed::UNSET
                    && f.busy_until > now
                {
                    f.ahead.spare = self.q.take_key(f.busy_until);
                    f.tx_pending = true;
                }
                return;
            }
        }
        let f = &mut self.ifaces[fi];
        let key = if !f.ahead.waiting.is_empty() {
            // The TxDone of the packet before schedules it: its key comes then.
            if f.ahead.unset == 0 {
                let before = f.ahead.waiting.back().map_or(Committed::UNSET, |c| c.key);
                f.ahead.watch = before;
                self.ahead_keyless.push(iface.0);
                self.ahead_watch = self.ahead_watch.min(before);
            }
            f.ahead.unset += 1;
            Committed::UNSET
        } else if f.ahead.spare != Committed::UNSET {
            // The pending TxDone starts it.
            f.tx_pending = false;
            std::mem::replace(&mut f.ahead.spare, Committed::UNSET)
        } else if f.busy_until <= now {
            // Idle (RED only): the ordinary path's buffer hands it straight to the
            // transmitter, and empties.
            if let AnyQueue::Red(q) = &mut f.queue {
                q.emptied_at(now);
            }
            self.transmit(now, iface, p);
            return;
        } else {
            // Nothing waits: the ordinary path schedules the TxDone that starts it now.
            self.q.take_key(f.busy_until)
        };
        let f = &mut self.ifaces[fi];
        let start = f.busy_until.max(now);
        let done = start + f.rate.tx_time(size + f.framing);
        f.busy_until = done;
        f.ahead.waiting.push_back(Committed { start, size, key });
        f.ahead.bytes += size as u64;
        let arrive = done + f.delay;
        self.onto_wire(iface, arrive, p);
    }

    /// Gives keys to the committed packets whose `TxDone` the ordinary path would have
    /// scheduled by now: those after a packet whose key sorts before the event about to
    /// run (see the module comment), earliest key first, each taking the next sequence
    /// number as that `TxDone` would have.
    #[inline(never)]
    pub(super) fn stamp_ahead(&mut self) {
        let cur = self.q.current_key();
        loop {
            let (mut watch, mut at) = (Committed::UNSET, 0);
            for (i, &fi) in self.ahead_keyless.iter().enumerate() {
                let w = self.ifaces[fi as usize].ahead.watch;
                if w < watch {
                    (watch, at) = (w, i);
                }
            }
            if watch >= cur {
                self.ahead_watch = watch;
                return;
            }
            let fi = self.ahead_keyless[at] as usize;
            let a = &mut self.ifaces[fi].ahead;
            let i = a.waiting.len() - a.unset as usize;
            let c = &mut a.waiting[i];
            c.key = self.q.take_key(c.start);
            a.unset -= 1;
            a.watch = if a.unset == 0 {
                self.ahead_keyless.swap_remove(at);
                Committed::UNSET
            } else {
                c.key
            };
        }
    }

    /// Counts the committed packets of interface `fi` whose `TxDone` sorts before
    /// `before` (an event key) as departed; returns what still waits. A RED queue whose
    /// waiting packets ran out starts its idle clock at the last one's start.
    #[inline]
    pub(super) fn ahead_started(&mut self, fi: usize, before: u128) -> Occupancy {
        let f = &mut self.ifaces[fi];
        let (mut started, mut bytes) = (0, 0);
        let mut last = SimTime::ZERO;
        while let Some(&c) = f.ahead.waiting.front() {
            // A packet without a key sorts after every event (its key is UNSET).
            if c.key >= before {
                break;
            }
            f.ahead.waiting.pop_front();
            bytes += c.size as u64;
            started += 1;
            last = c.start;
        }
        if started > 0 {
            f.ahead.bytes -= bytes;
            f.counters.departed += started;
            f.counters.departed_bytes += bytes;
            self.hops += started;
            if f.ahead.waiting.is_empty() {
                if let AnyQueue::Red(q) = &mut f.queue {
                    q.emptied_at(last);
                }
            }
        }
        Occupancy {
            packets: f.ahead.waiting.len() as u32,
            bytes: f.ahead.bytes,
        }
    }

    /// Counts every committed packet whose `TxDone` sorts before the event being
    /// handled (`end`: every one that starts by the run's end) on every interface, as
    /// the ordinary path would have by then.
    pub(super) fn settle_ahead(&mut self, end: bool) {
        let before = if end {
            // Every packet starting by the end has started: give the rest their keys
            // (in start order, as the ordinary path would) and count up to the end.
            for f in &mut self.ifaces {
                let a = &mut f.ahead;
                let from = a.waiting.len() - a.unset as usize;
                for c in a.waiting.range_mut(from..) {
                    c.key = self.q.take_key(c.start);
                }
                a.unset = 0;
                a.watch = Committed::UNSET;
            }
            self.ahead_keyless.clear();
            ((self.end.as_nanos() as u128) << 64) | u64::MAX as u128
        } else {
            self.q.current_key()
        };
        for fi in 0..self.ifaces.len() {
            if !self.ifaces[fi].ahead.waiting.is_empty() {
                self.ahead_started(fi, before);
            }
        }
    }
}

//! The event queue: a deterministic priority queue of timed events.
//!
//! Events are ordered by `(time, seq)` where `seq` is the insertion number: two events
//! at the same nanosecond run in the order they were scheduled. That rule, and nothing
//! else, fixes the order of simultaneous events, so a run is bit-for-bit reproducible
//! from (scenario, seed).
//!
//! Payloads live in a slab of reusable slots; the heap holds only 24-byte keys, so heap
//! operations move little memory and the steady state allocates nothing. Cancellation
//! is lazy: a cancelled slot is emptied and skipped when its key comes out.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::time::SimTime;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    time: SimTime,
    seq: u64,
    slot: u32,
}

/// Handle to a scheduled event, for cancelling it.
#[must_use = "keep the key if the event may need cancelling; otherwise use `schedule_forget`"]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventKey {
    slot: u32,
    seq: u64,
}

#[derive(Debug)]
struct Slot<E> {
    seq: u64,
    ev: Option<E>,
}

/// A deterministic event queue over payloads of type `E`.
#[derive(Debug)]
pub struct EventQueue<E> {
    heap: BinaryHeap<Reverse<Key>>,
    slots: Vec<Slot<E>>,
    free: Vec<u32>,
    next_seq: u64,
    now: SimTime,
    popped: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    /// An empty queue at time zero.
    pub fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            slots: Vec::new(),
            free: Vec::new(),
            next_seq: 0,
            now: SimTime::ZERO,
            popped: 0,
        }
    }

    /// Time of the event most recently popped (the current simulated time).
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Events popped so far (cancelled ones excluded).
    pub fn events_processed(&self) -> u64 {
        self.popped
    }

    /// Events waiting, cancelled ones included until they surface.
    pub fn pending(&self) -> usize {
        self.heap.len()
    }

    /// Schedules `ev` at `at` and returns a key that can cancel it.
    ///
    /// An event in the past is run at the current time (after those already due), so
    /// time never goes backwards.
    pub fn schedule(&mut self, at: SimTime, ev: E) -> EventKey {
        let at = at.max(self.now);
        let seq = self.next_seq;
        self.next_seq += 1;
        let slot = match self.free.pop() {
            Some(i) => {
                let s = &mut self.slots[i as usize];
                s.seq = seq;
                s.ev = Some(ev);
                i
            }
            None => {
                self.slots.push(Slot { seq, ev: Some(ev) });
                (self.slots.len() - 1) as u32
            }
        };
        self.heap.push(Reverse(Key {
            time: at,
            seq,
            slot,
        }));
        EventKey { slot, seq }
    }

    /// Schedules `ev` at `at` with no intention of cancelling it.
    pub fn schedule_forget(&mut self, at: SimTime, ev: E) {
        let _ = self.schedule(at, ev);
    }

    /// Cancels the event behind `key`; returns its payload if it had not run yet.
    pub fn cancel(&mut self, key: EventKey) -> Option<E> {
        let s = self.slots.get_mut(key.slot as usize)?;
        if s.seq == key.seq {
            s.ev.take()
        } else {
            None
        }
    }

    /// Time of the next live event, if any (drops cancelled keys on the way).
    pub fn peek_time(&mut self) -> Option<SimTime> {
        while let Some(Reverse(k)) = self.heap.peek() {
            if self.slots[k.slot as usize].ev.is_some() {
                return Some(k.time);
            }
            let k = *k;
            self.heap.pop();
            self.free.push(k.slot);
        }
        None
    }

    /// Removes the next live event and advances the clock to its time.
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        while let Some(Reverse(k)) = self.heap.pop() {
            let ev = self.slots[k.slot as usize].ev.take();
            self.free.push(k.slot);
            if let Some(ev) = ev {
                self.now = k.time;
                self.popped += 1;
                return Some((k.time, ev));
            }
        }
        None
    }

    /// Removes the next live event only if it is due at or before `until`.
    pub fn pop_until(&mut self, until: SimTime) -> Option<(SimTime, E)> {
        match self.peek_time() {
            Some(t) if t <= until => self.pop(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_by_time_then_insertion() {
        let mut q = EventQueue::new();
        q.schedule_forget(SimTime::from_nanos(5), "b");
        q.schedule_forget(SimTime::from_nanos(3), "a");
        q.schedule_forget(SimTime::from_nanos(5), "c");
        q.schedule_forget(SimTime::from_nanos(5), "d");
        let order: Vec<_> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!["a", "b", "c", "d"]);
        assert_eq!(q.now(), SimTime::from_nanos(5));
        assert_eq!(q.events_processed(), 4);
    }

    #[test]
    fn cancel_skips_and_stale_keys_do_nothing() {
        let mut q = EventQueue::new();
        let k1 = q.schedule(SimTime::from_nanos(1), 1);
        let _k2 = q.schedule(SimTime::from_nanos(2), 2);
        assert_eq!(q.cancel(k1), Some(1));
        assert_eq!(q.cancel(k1), None);
        assert_eq!(q.pop(), Some((SimTime::from_nanos(2), 2)));
        // k1's slot is reused by a new event; the stale key must not cancel it.
        let _k3 = q.schedule(SimTime::from_nanos(3), 3);
        assert_eq!(q.cancel(k1), None);
        assert_eq!(q.pop(), Some((SimTime::from_nanos(3), 3)));
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn past_events_run_now_and_clock_never_goes_back() {
        let mut q = EventQueue::new();
        q.schedule_forget(SimTime::from_nanos(10), 'x');
        assert_eq!(q.pop().unwrap().0, SimTime::from_nanos(10));
        q.schedule_forget(SimTime::from_nanos(4), 'y');
        assert_eq!(q.pop(), Some((SimTime::from_nanos(10), 'y')));
    }

    #[test]
    fn slots_are_reused() {
        let mut q = EventQueue::new();
        for i in 0..1000u64 {
            q.schedule_forget(SimTime::from_nanos(i), i);
            q.pop();
        }
        assert_eq!(q.slots.len(), 1);
    }

    #[test]
    fn pop_until_respects_bound() {
        let mut q = EventQueue::new();
        q.schedule_forget(SimTime::from_nanos(10), ());
        assert!(q.pop_until(SimTime::from_nanos(9)).is_none());
        assert!(q.pop_until(SimTime::from_nanos(10)).is_some());
    }
}

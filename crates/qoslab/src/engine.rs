//! The event queue: a deterministic priority queue of timed events.
//!
//! Events are ordered by `(time, seq)` where `seq` is the insertion number: two events
//! at the same nanosecond run in the order they were scheduled. That rule, and nothing
//! else, fixes the order of simultaneous events, so a run is bit-for-bit reproducible
//! from (scenario, seed).
//!
//! Events live in the heap itself, next to their `(time, seq)` key: a 4-ary min-heap of
//! 32-byte entries, so a pop touches half as many levels as a binary heap and reads no
//! second array, and the steady state allocates nothing. Cancellation is lazy and rare
//! (the world never cancels): it finds the entry by its sequence number, empties it,
//! and the emptied entry is skipped when it comes out.

use crate::time::SimTime;

/// Handle to a scheduled event, for cancelling it.
#[must_use = "keep the key if the event may need cancelling; otherwise use `schedule_forget`"]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventKey {
    seq: u64,
}

/// A place in the event order, `(time, seq)`, taken by [`EventQueue::reserve`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ReservedKey(u128);

impl ReservedKey {
    /// The time the key was reserved for.
    pub fn time(self) -> SimTime {
        SimTime::from_nanos((self.0 >> 64) as u64)
    }
}

#[derive(Debug)]
struct Entry<E> {
    /// `time << 64 | seq`: one integer comparison orders by time, then insertion.
    key: u128,
    /// `None` once cancelled.
    ev: Option<E>,
}

impl<E> Entry<E> {
    fn time(&self) -> SimTime {
        SimTime::from_nanos((self.key >> 64) as u64)
    }

    fn seq(&self) -> u64 {
        self.key as u64
    }
}

/// Children per heap node.
const ARITY: usize = 4;

/// A deterministic event queue over payloads of type `E`.
#[derive(Debug)]
pub struct EventQueue<E> {
    heap: Vec<Entry<E>>,
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
            heap: Vec::new(),
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
    #[inline]
    pub fn schedule(&mut self, at: SimTime, ev: E) -> EventKey {
        let time = at.max(self.now);
        let seq = self.next_seq;
        self.next_seq += 1;
        self.push(Entry {
            key: (time.as_nanos() as u128) << 64 | seq as u128,
            ev: Some(ev),
        });
        EventKey { seq }
    }

    /// Schedules `ev` at `at` with no intention of cancelling it.
    #[inline]
    pub fn schedule_forget(&mut self, at: SimTime, ev: E) {
        let _ = self.schedule(at, ev);
    }

    /// Takes the place in the order that `schedule(at, _)` would give an event now,
    /// without scheduling anything: the key it returns goes to [`Self::schedule_reserved`]
    /// later. A mechanism that releases its own items in key order (a delay FIFO) keeps
    /// only its earliest item in the heap, and the run is the same event for event as if
    /// every item had had its own event from the start.
    #[inline]
    pub fn reserve(&mut self, at: SimTime) -> ReservedKey {
        let time = at.max(self.now);
        let seq = self.next_seq;
        self.next_seq += 1;
        ReservedKey((time.as_nanos() as u128) << 64 | seq as u128)
    }

    /// Schedules `ev` with a key taken earlier by [`Self::reserve`]; its time must not be
    /// before the current time (the caller keeps its items in key order and schedules
    /// the next only when the one before it has run).
    #[inline]
    pub fn schedule_reserved(&mut self, key: ReservedKey, ev: E) {
        debug_assert!(((key.0 >> 64) as u64) >= self.now.as_nanos());
        self.push(Entry {
            key: key.0,
            ev: Some(ev),
        });
    }

    /// Cancels the event behind `key`; returns its payload if it had not run yet.
    /// Linear in the number of pending events (nothing on a hot path cancels).
    pub fn cancel(&mut self, key: EventKey) -> Option<E> {
        self.heap
            .iter_mut()
            .find(|e| e.seq() == key.seq)
            .and_then(|e| e.ev.take())
    }

    /// Time of the next live event, if any (drops cancelled entries on the way).
    pub fn peek_time(&mut self) -> Option<SimTime> {
        while let Some(top) = self.heap.first() {
            if top.ev.is_some() {
                return Some(top.time());
            }
            self.pop_root();
        }
        None
    }

    /// Removes the next live event and advances the clock to its time.
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        while !self.heap.is_empty() {
            let e = self.pop_root();
            let t = e.time();
            if let Some(ev) = e.ev {
                self.now = t;
                self.popped += 1;
                return Some((t, ev));
            }
        }
        None
    }

    /// Removes the next live event only if it is due at or before `until`.
    #[inline]
    pub fn pop_until(&mut self, until: SimTime) -> Option<(SimTime, E)> {
        match self.peek_time() {
            Some(t) if t <= until => self.pop(),
            _ => None,
        }
    }

    /// Appends `e` and moves it up to its place: parents that run later move down one
    /// level each, and `e` is written once, where it belongs.
    #[inline]
    fn push(&mut self, e: Entry<E>) {
        let mut hole = self.heap.len();
        self.heap.push(Entry { key: 0, ev: None });
        while hole > 0 {
            let parent = (hole - 1) / ARITY;
            if e.key < self.heap[parent].key {
                self.move_entry(parent, hole);
                hole = parent;
            } else {
                break;
            }
        }
        self.heap[hole] = e;
    }

    /// Moves the entry at `from` to `to`, leaving an empty entry at `from`.
    #[inline(always)]
    fn move_entry(&mut self, from: usize, to: usize) {
        let ev = self.heap[from].ev.take();
        self.heap[to].key = self.heap[from].key;
        self.heap[to].ev = ev;
    }

    /// Removes the root (the heap is not empty) and restores the heap.
    ///
    /// Bottom-up (Floyd's variant): the hole left by the root sinks along the earliest
    /// children to a leaf, with no comparison against the last entry on the way; the last
    /// entry then goes into the hole and rises (it usually belongs near the bottom, as
    /// most new events are scheduled later than the ones waiting).
    #[inline]
    fn pop_root(&mut self) -> Entry<E> {
        let last = self.heap.pop().expect("pop_root on a non-empty heap");
        let n = self.heap.len();
        if n == 0 {
            return last;
        }
        let root = Entry {
            key: self.heap[0].key,
            ev: self.heap[0].ev.take(),
        };
        let mut hole = 0;
        loop {
            let first = hole * ARITY + 1;
            if first >= n {
                break;
            }
            let end = (first + ARITY).min(n);
            let mut best = first;
            let mut best_key = self.heap[first].key;
            for c in first + 1..end {
                let k = self.heap[c].key;
                if k < best_key {
                    best = c;
                    best_key = k;
                }
            }
            self.move_entry(best, hole);
            hole = best;
        }
        while hole > 0 {
            let parent = (hole - 1) / ARITY;
            if last.key < self.heap[parent].key {
                self.move_entry(parent, hole);
                hole = parent;
            } else {
                break;
            }
        }
        self.heap[hole] = last;
        root
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
    fn storage_is_reused() {
        let mut q = EventQueue::new();
        for i in 0..1000u64 {
            q.schedule_forget(SimTime::from_nanos(i), i);
            q.pop();
        }
        assert!(q.heap.capacity() <= 4, "{}", q.heap.capacity());
    }

    #[test]
    fn matches_a_sorted_order_on_random_times() {
        // Many events, many equal times, interleaved pops: the order must be exactly
        // (time, insertion), which is what makes runs reproducible.
        let mut q = EventQueue::new();
        let mut want = Vec::new();
        let mut got = Vec::new();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut seq = 0u64;
        for round in 0..200u64 {
            for _ in 0..(x % 13) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let t = q.now().as_nanos() + x % 50;
                q.schedule_forget(SimTime::from_nanos(t), seq);
                want.push((t, seq));
                seq += 1;
            }
            for _ in 0..(round % 5) {
                if let Some((t, s)) = q.pop() {
                    got.push((t.as_nanos(), s));
                }
            }
        }
        while let Some((t, s)) = q.pop() {
            got.push((t.as_nanos(), s));
        }
        want.sort();
        assert_eq!(got, want);
    }

    #[test]
    fn reserved_keys_keep_the_order_of_scheduling_at_once() {
        // A FIFO of items that each reserve their place when they arrive and are
        // scheduled one at a time, when the one before runs, must come out in exactly
        // the order of giving every item its own event at once.
        let run = |fifo: bool| {
            let mut q = EventQueue::new();
            let mut held: std::collections::VecDeque<(ReservedKey, u64)> = Default::default();
            let mut out = Vec::new();
            let mut x = 0x9e37_79b9_7f4a_7c15u64;
            let mut id = 0u64;
            let mut last = 0u64;
            q.schedule_forget(SimTime::from_nanos(0), (0u8, 0u64));
            while let Some((t, (kind, v))) = q.pop() {
                out.push((t.as_nanos(), kind, v));
                if kind == 1 {
                    let (_, head) = held.pop_front().unwrap_or((ReservedKey(0), v));
                    assert!(!fifo || head == v);
                    if fifo {
                        if let Some(&(k, n)) = held.front() {
                            q.schedule_reserved(k, (1, n));
                        }
                    }
                }
                if out.len() > 3000 {
                    continue;
                }
                // Each event makes a few plain events and one held item.
                for _ in 0..(x % 3) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    q.schedule_forget(t + crate::time::Dur::from_nanos(x % 40), (0, id));
                    id += 1;
                }
                last = last.max(t.as_nanos()) + x % 7;
                let at = SimTime::from_nanos(last);
                if fifo {
                    let k = q.reserve(at);
                    if held.is_empty() {
                        q.schedule_reserved(k, (1, id));
                    }
                    held.push_back((k, id));
                } else {
                    q.schedule_forget(at, (1, id));
                }
                id += 1;
            }
            out
        };
        let a = run(false);
        assert!(a.len() > 3000);
        assert_eq!(a, run(true));
    }

    #[test]
    fn pop_until_respects_bound() {
        let mut q = EventQueue::new();
        q.schedule_forget(SimTime::from_nanos(10), ());
        assert!(q.pop_until(SimTime::from_nanos(9)).is_none());
        assert!(q.pop_until(SimTime::from_nanos(10)).is_some());
    }
}

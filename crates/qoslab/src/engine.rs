//! The event queue: a deterministic priority queue of timed events.
//!
//! Events are ordered by `(time, seq)` where `seq` is the insertion number: two events
//! at the same nanosecond run in the order they were scheduled. That rule, and nothing
//! else, fixes the order of simultaneous events, so a run is bit-for-bit reproducible
//! from (scenario, seed). (A packet that cuts through a router, `world::cut`, has its
//! arrival beyond it scheduled as it leaves the link before: that is its place.)
//!
//! Events live in the heap itself, next to their `(time, seq)` key: a 4-ary min-heap of
//! 32-byte entries, so a pop touches half as many levels as a binary heap and reads no
//! second array, and the steady state allocates nothing. Cancellation is lazy and rare
//! (the world never cancels): it finds the entry by its sequence number and notes that
//! number, and the entry is skipped when it comes out.

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

#[derive(Clone, Copy, Debug)]
struct Entry<E> {
    /// `time << 64 | seq`: one integer comparison orders by time, then insertion.
    key: u128,
    ev: E,
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

/// A 4-ary min-heap of entries by key.
#[derive(Debug)]
struct Heap<E>(Vec<Entry<E>>);

/// Puts `e` into the hole at `hole` and moves it up to its place: parents that run
/// later move down one level each, and `e` is written once, where it belongs.
#[inline(always)]
fn sift_up<E: Copy>(heap: &mut [Entry<E>], mut hole: usize, e: Entry<E>) {
    while hole > 0 {
        let parent = (hole - 1) / ARITY;
        let p = heap[parent];
        if e.key < p.key {
            heap[hole] = p;
            hole = parent;
        } else {
            break;
        }
    }
    heap[hole] = e;
}

impl<E: Copy> Heap<E> {
    /// Key of the earliest entry, if any.
    #[inline(always)]
    fn top(&self) -> Option<&Entry<E>> {
        self.0.first()
    }

    /// Appends `e` and moves it up to its place ([`sift_up`]).
    #[inline]
    fn push(&mut self, e: Entry<E>) {
        let hole = self.0.len();
        self.0.push(e);
        sift_up(&mut self.0, hole, e);
    }

    /// Replaces the root (the heap is not empty) with `e` and moves `e` down to its
    /// place: the children that run earlier move up one level each.
    #[inline(always)]
    fn replace_root(&mut self, e: Entry<E>) {
        let heap = &mut self.0[..];
        let n = heap.len();
        let mut hole = 0;
        loop {
            let first = hole * ARITY + 1;
            let best = if let Some(c) = heap.get(first..first + ARITY) {
                let (k0, k1, k2, k3) = (c[0].key, c[1].key, c[2].key, c[3].key);
                let (a, ka) = if k1 < k0 { (1, k1) } else { (0, k0) };
                let (b, kb) = if k3 < k2 { (3, k3) } else { (2, k2) };
                first + if kb < ka { b } else { a }
            } else if first < n {
                let mut best = first;
                for c in first + 1..n {
                    if heap[c].key < heap[best].key {
                        best = c;
                    }
                }
                best
            } else {
                break;
            };
            if heap[best].key < e.key {
                heap[hole] = heap[best];
                hole = best;
            } else {
                break;
            }
        }
        heap[hole] = e;
    }

    /// Removes the root (the heap is not empty) and restores the heap.
    ///
    /// Bottom-up (Floyd's variant): the hole left by the root sinks along the earliest
    /// children to a leaf, with no comparison against the last entry on the way; the last
    /// entry then goes into the hole and rises (it usually belongs near the bottom, as
    /// most new events are scheduled later than the ones waiting). A node with all four
    /// children (every level but the last) picks the earliest in a fixed sequence of
    /// three comparisons.
    #[inline]
    fn pop_root(&mut self) -> Entry<E> {
        let last = self.0.pop().expect("pop_root on a non-empty heap");
        let heap = &mut self.0[..];
        let n = heap.len();
        if n == 0 {
            return last;
        }
        let root = heap[0];
        let mut hole = 0;
        loop {
            let first = hole * ARITY + 1;
            if let Some(c) = heap.get(first..first + ARITY) {
                let (k0, k1, k2, k3) = (c[0].key, c[1].key, c[2].key, c[3].key);
                let (a, ka) = if k1 < k0 { (1, k1) } else { (0, k0) };
                let (b, kb) = if k3 < k2 { (3, k3) } else { (2, k2) };
                let best = first + if kb < ka { b } else { a };
                heap[hole] = heap[best];
                hole = best;
            } else {
                // The last parent, with fewer than four children: their own children
                // (from 4·first + 1 on) are past the end, so the hole stops there.
                if first < n {
                    let mut best = first;
                    for c in first + 1..n {
                        if heap[c].key < heap[best].key {
                            best = c;
                        }
                    }
                    heap[hole] = heap[best];
                    hole = best;
                }
                break;
            }
        }
        sift_up(heap, hole, last);
        root
    }
}

/// Which of the two heaps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lane {
    Main,
    Held,
    Timers,
}

/// A deterministic event queue over payloads of type `E`.
///
/// Payloads are small plain values (`Copy`): entries move through the heap as plain
/// copies, with no "taken" state to write and test on every move.
///
/// Three heaps share one sequence counter: the main one, one for timers
/// ([`Self::schedule_timer`]) and one for the releases of held items
/// ([`Self::schedule_reserved`]). Timers (a TCP endpoint's, a conditioner's, the
/// samplers') wait long and rarely run, and in a run of many flows they are most of
/// the pending events; held items (packets a conditioner delays: P1 has a TRC per
/// flow, each always holding packets) keep one entry per FIFO, most of them far
/// ahead. Kept apart, neither deepens the heap that the links' events go through
/// (most events of a run). A pop takes the earliest of the three tops, so the order of
/// events is `(time, seq)` exactly as with one heap.
///
/// A popped event's entry stays at the root of its heap until the next schedule into
/// that heap or the next pop: the handler of an event usually schedules one, which then
/// takes the root's place and sinks once, instead of the root's removal and the new
/// entry's insertion each restoring the heap.
#[derive(Debug)]
pub struct EventQueue<E> {
    main: Heap<E>,
    held: Heap<E>,
    timers: Heap<E>,
    /// The heap whose root is the event popped last and not yet removed, if any.
    spent: Option<Lane>,
    /// Sequence numbers of cancelled events still in a heap (empty in a run: the
    /// world never cancels, so the pop path tests only `is_empty`).
    cancelled: Vec<u64>,
    next_seq: u64,
    now: SimTime,
    /// `(time, seq)` of the event most recently popped.
    current: u128,
    popped: u64,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> EventQueue<E> {
    /// An empty queue at time zero.
    pub fn new() -> Self {
        EventQueue {
            main: Heap(Vec::new()),
            held: Heap(Vec::new()),
            timers: Heap(Vec::new()),
            spent: None,
            cancelled: Vec::new(),
            next_seq: 0,
            now: SimTime::ZERO,
            current: 0,
            popped: 0,
        }
    }

    /// Time of the event most recently popped (the current simulated time).
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// The place in the order, `time << 64 | seq`, of the event most recently popped:
    /// an event scheduled so far sorts before it if and only if it has run.
    #[inline(always)]
    pub fn current_key(&self) -> u128 {
        self.current
    }

    /// Takes the next sequence number, as scheduling an event now would, and returns
    /// the place in the order, `at << 64 | seq`, that an event at `at` would get (`at`
    /// may lie in the past: a mechanism that stands in for an event it never schedules
    /// compares the key with [`Self::current_key`]).
    #[inline(always)]
    pub fn take_key(&mut self, at: SimTime) -> u128 {
        let seq = self.next_seq;
        self.next_seq += 1;
        (at.as_nanos() as u128) << 64 | seq as u128
    }

    /// Events popped so far (cancelled ones excluded).
    pub fn events_processed(&self) -> u64 {
        self.popped
    }

    /// Events waiting, cancelled ones included until they surface.
    pub fn pending(&self) -> usize {
        self.main.0.len() + self.held.0.len() + self.timers.0.len() - self.spent.is_some() as usize
    }

    /// The heap of `lane`.
    #[inline(always)]
    fn heap(&mut self, lane: Lane) -> &mut Heap<E> {
        match lane {
            Lane::Main => &mut self.main,
            Lane::Held => &mut self.held,
            Lane::Timers => &mut self.timers,
        }
    }

    /// Puts `e` into the heap of `lane`, in the place of its spent root if it has one.
    #[inline(always)]
    fn insert(&mut self, lane: Lane, e: Entry<E>) {
        if self.spent == Some(lane) {
            self.spent = None;
            self.heap(lane).replace_root(e);
        } else {
            self.heap(lane).push(e);
        }
    }

    /// Removes the spent root, if any.
    #[inline(always)]
    fn settle(&mut self) {
        if let Some(lane) = self.spent.take() {
            self.heap(lane).pop_root();
        }
    }

    /// The key `schedule(at, _)` gives an event now.
    #[inline(always)]
    fn next_key(&mut self, at: SimTime) -> u128 {
        self.take_key(at.max(self.now))
    }

    /// Schedules `ev` at `at` and returns a key that can cancel it.
    ///
    /// An event in the past is run at the current time (after those already due), so
    /// time never goes backwards.
    #[inline(always)]
    pub fn schedule(&mut self, at: SimTime, ev: E) -> EventKey {
        let key = self.next_key(at);
        self.insert(Lane::Main, Entry { key, ev });
        EventKey { seq: key as u64 }
    }

    /// Schedules `ev` at `at` with no intention of cancelling it.
    #[inline(always)]
    pub fn schedule_forget(&mut self, at: SimTime, ev: E) {
        let _ = self.schedule(at, ev);
    }

    /// Schedules a timer: the same as [`Self::schedule_forget`] (same place in the
    /// order), kept in the timers' heap.
    #[inline]
    pub fn schedule_timer(&mut self, at: SimTime, ev: E) {
        let key = self.next_key(at);
        self.insert(Lane::Timers, Entry { key, ev });
    }

    /// Takes the place in the order that `schedule(at, _)` would give an event now,
    /// without scheduling anything: the key it returns goes to [`Self::schedule_reserved`]
    /// later. A mechanism that releases its own items in key order (a delay FIFO) keeps
    /// only its earliest item in the heap, and the run is the same event for event as if
    /// every item had had its own event from the start.
    #[inline]
    pub fn reserve(&mut self, at: SimTime) -> ReservedKey {
        ReservedKey(self.next_key(at))
    }

    /// Schedules `ev` with a key taken earlier by [`Self::reserve`]; its time must not be
    /// before the current time (the caller keeps its items in key order and schedules
    /// the next only when the one before it has run); kept in the held items' heap.
    #[inline]
    pub fn schedule_reserved(&mut self, key: ReservedKey, ev: E) {
        debug_assert!(((key.0 >> 64) as u64) >= self.now.as_nanos());
        self.insert(Lane::Held, Entry { key: key.0, ev });
    }

    /// Cancels the event behind `key`; returns its payload if it had not run yet.
    /// Linear in the number of pending events (nothing on a hot path cancels).
    pub fn cancel(&mut self, key: EventKey) -> Option<E> {
        self.settle();
        if self.cancelled.contains(&key.seq) {
            return None;
        }
        let ev = (self.main.0.iter())
            .chain(self.held.0.iter())
            .chain(self.timers.0.iter())
            .find(|e| e.seq() == key.seq)?
            .ev;
        self.cancelled.push(key.seq);
        Some(ev)
    }

    /// True (and forgets the mark) if the entry with `seq` was cancelled.
    #[cold]
    fn take_cancelled(&mut self, seq: u64) -> bool {
        match self.cancelled.iter().position(|&s| s == seq) {
            Some(i) => {
                self.cancelled.swap_remove(i);
                true
            }
            None => false,
        }
    }

    /// The heap whose top is the earliest event, if any event waits (no root is spent).
    #[inline(always)]
    fn earliest(&self) -> Option<Lane> {
        let mut best = self.main.top().map(|m| (m.key, Lane::Main));
        for (heap, lane) in [(&self.held, Lane::Held), (&self.timers, Lane::Timers)] {
            if let Some(e) = heap.top() {
                if best.is_none_or(|(k, _)| e.key < k) {
                    best = Some((e.key, lane));
                }
            }
        }
        best.map(|(_, lane)| lane)
    }

    /// Time of the next live event, if any (drops cancelled entries on the way).
    #[inline]
    pub fn peek_time(&mut self) -> Option<SimTime> {
        self.settle();
        loop {
            let lane = self.earliest()?;
            let top = *self.heap(lane).top()?;
            if self.cancelled.is_empty() || !self.take_cancelled(top.seq()) {
                return Some(top.time());
            }
            self.heap(lane).pop_root();
        }
    }

    /// Removes the next live event and advances the clock to its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        // No event is due later than NEVER (u64::MAX), so this takes whatever is next.
        self.pop_until(SimTime::NEVER)
    }

    /// Removes the next live event only if it is due at or before `until`.
    ///
    /// The same as [`Self::peek_time`] then [`Self::pop`], finding the earliest entry
    /// once instead of twice (this runs once per event).
    #[inline]
    pub fn pop_until(&mut self, until: SimTime) -> Option<(SimTime, E)> {
        self.settle();
        loop {
            let lane = self.earliest()?;
            let e = *self.heap(lane).top()?;
            if !self.cancelled.is_empty() && self.take_cancelled(e.seq()) {
                self.heap(lane).pop_root();
                continue;
            }
            let t = e.time();
            if t > until {
                return None;
            }
            // The entry stays at the root until the next schedule or pop.
            self.spent = Some(lane);
            self.now = t;
            self.current = e.key;
            self.popped += 1;
            return Some((t, e.ev));
        }
    }
}

/// The monotonic clock of a wall-clock run, as a [`SimTime`] since the run's start.
///
/// A simulated run has no clock: time jumps to the next event, so it takes as long as
/// its events take to compute and is reproducible bit for bit. A live run (docs/live.md)
/// sleeps until the next event is due on this clock, runs every event due by then *at
/// its scheduled time* (so the mechanisms see model times, as in a simulated run) and
/// records how late each ran.
#[derive(Clone, Copy, Debug)]
pub struct WallClock {
    origin: std::time::Instant,
}

impl WallClock {
    /// A clock whose zero is now.
    pub fn start() -> Self {
        WallClock {
            origin: std::time::Instant::now(),
        }
    }

    /// Time since the start.
    #[inline]
    pub fn now(&self) -> SimTime {
        SimTime::from_nanos(self.origin.elapsed().as_nanos() as u64)
    }

    /// The `Instant` at model time `t` (for timeouts of system calls).
    pub fn instant_at(&self, t: SimTime) -> std::time::Instant {
        self.origin + std::time::Duration::from_nanos(t.as_nanos())
    }
}

/// How late events ran behind their scheduled time in a wall-clock run: every sample,
/// in nanoseconds (saturating at about 4.3 s), for exact quantiles afterwards.
#[derive(Clone, Debug, Default)]
pub struct Lateness {
    samples: Vec<u32>,
}

impl Lateness {
    /// Records one event that ran `late` behind its time.
    #[inline]
    pub fn record(&mut self, late: crate::time::Dur) {
        self.samples
            .push(late.as_nanos().min(u32::MAX as u64) as u32);
    }

    /// Events recorded.
    pub fn count(&self) -> usize {
        self.samples.len()
    }

    /// Events that ran more than `bound` late.
    pub fn over(&self, bound: crate::time::Dur) -> usize {
        let b = bound.as_nanos();
        self.samples.iter().filter(|&&s| s as u64 > b).count()
    }

    /// The `q` quantile (0..=1, nearest rank) [ns]; `None` with no samples.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        if self.samples.is_empty() {
            return None;
        }
        let mut v = self.samples.clone();
        v.sort_unstable();
        let rank = ((q.clamp(0.0, 1.0) * v.len() as f64).ceil() as usize).clamp(1, v.len());
        Some(v[rank - 1] as u64)
    }

    /// Mean [ns]; 0 with no samples.
    pub fn mean(&self) -> f64 {
        if self.samples.is_empty() {
            return 0.0;
        }
        self.samples.iter().map(|&s| s as f64).sum::<f64>() / self.samples.len() as f64
    }

    /// Adds another record's samples to this one.
    pub fn merge(&mut self, other: &Lateness) {
        self.samples.extend_from_slice(&other.samples);
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
        assert!(q.main.0.capacity() <= 4, "{}", q.main.0.capacity());
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
                // Any heap: the order is the same (time, insertion) across all three.
                match x % 3 {
                    0 => q.schedule_timer(SimTime::from_nanos(t), seq),
                    1 => {
                        let k = q.reserve(SimTime::from_nanos(t));
                        q.schedule_reserved(k, seq);
                    }
                    _ => q.schedule_forget(SimTime::from_nanos(t), seq),
                }
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
    fn timers_take_their_place_in_one_order_and_cancel() {
        let mut q = EventQueue::new();
        q.schedule_timer(SimTime::from_nanos(5), "t5");
        q.schedule_forget(SimTime::from_nanos(5), "m5");
        let k = q.schedule(SimTime::from_nanos(3), "m3");
        q.schedule_timer(SimTime::from_nanos(3), "t3");
        q.schedule_timer(SimTime::from_nanos(1), "t1");
        assert_eq!(q.pending(), 5);
        assert_eq!(q.cancel(k), Some("m3"));
        assert_eq!(q.peek_time(), Some(SimTime::from_nanos(1)));
        let order: Vec<_> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!["t1", "t3", "t5", "m5"]);
    }

    #[test]
    fn lateness_quantiles_by_nearest_rank() {
        let mut l = Lateness::default();
        assert_eq!(l.quantile(0.5), None);
        for ns in [5u64, 1, 4, 2, 3, 100, 6, 7, 8, 9] {
            l.record(crate::time::Dur::from_nanos(ns));
        }
        assert_eq!(l.count(), 10);
        assert_eq!(l.quantile(0.5), Some(5));
        assert_eq!(l.quantile(0.9), Some(9));
        assert_eq!(l.quantile(0.99), Some(100));
        assert_eq!(l.quantile(0.0), Some(1));
        assert_eq!(l.over(crate::time::Dur::from_nanos(8)), 2);
        assert!((l.mean() - 14.5).abs() < 1e-9);
    }

    #[test]
    fn wall_clock_moves_forward() {
        let c = WallClock::start();
        let a = c.now();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = c.now();
        assert!(b.as_nanos() >= a.as_nanos() + 2_000_000);
    }

    #[test]
    fn pop_until_respects_bound() {
        let mut q = EventQueue::new();
        q.schedule_forget(SimTime::from_nanos(10), ());
        assert!(q.pop_until(SimTime::from_nanos(9)).is_none());
        assert!(q.pop_until(SimTime::from_nanos(10)).is_some());
        // The popped entry waits at the root for the next schedule but is not pending.
        assert_eq!(q.pending(), 0);
        q.schedule_forget(SimTime::from_nanos(12), ());
        q.schedule_forget(SimTime::from_nanos(11), ());
        assert_eq!(q.pending(), 2);
        assert_eq!(q.pop().map(|(t, _)| t), Some(SimTime::from_nanos(11)));
        assert_eq!(q.pending(), 1);
    }
}

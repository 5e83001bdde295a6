//! CoDel: Controlled Delay (Nichols, Jacobson, McGregor & Iyengar, RFC 8289, 2018).
//!
//! Each packet is stamped when it enters; at the head, its sojourn time decides. Once
//! the sojourn has stayed at or above `target` for a whole `interval` (and more than
//! one MTU is queued), CoDel enters its dropping state and drops (or, with `ecn`,
//! marks) a head packet, then the next ones at `interval / sqrt(count)` spacing
//! (the control law, RFC 8289 §3.3 and §5.6), until a head packet's sojourn falls
//! below `target`.
//!
//! The state machine is the RFC's pseudocode (§5.4 to §5.6), with these choices where
//! the RFC leaves room, each at the line it governs:
//! - `maxpacket` (the "more than one MTU queued" guard of §5.6) is the largest packet
//!   this queue has been offered, as Linux's `codel` learns it.
//! - An ECN-capable head packet due to be dropped is marked CE and sent instead, and
//!   the dropping loop stops there (the Linux implementation that RFC 8289 §5 annotates;
//!   the pseudocode itself only drops).
//! - `count` re-entry: if the last dropping state ended less than 16 intervals ago,
//!   `count` restarts from the drops of that state (`count − lastcount`), as §5.5's
//!   Linux-derived code does.
//!
//! [`CodelState`] is the per-queue controller alone, so FQ-CoDel (`fq_codel.rs`) runs
//! one per flow queue.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::{DropCause, Drops, Limit, Occupancy, Queue};
use crate::config::ScenarioError;
use crate::packet::{Ecn, Packet};
use crate::time::{Dur, SimTime};
use crate::units::Bytes;

/// CoDel's parameters (RFC 8289 §4.2, §4.3).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CodelParams {
    /// Acceptable standing queue delay, TARGET (RFC 8289 §4.3); default 5 ms.
    pub target: Dur,
    /// Sliding window over which the minimum sojourn is judged, INTERVAL (RFC 8289 §4.2).
    pub interval: Dur,
    /// Mark ECN-capable packets CE instead of dropping them (RFC 8289 §5, as Linux does).
    pub ecn: bool,
}

/// A FIFO of packets stamped with their enqueue time (RFC 8289 §5.4), with its byte count.
#[derive(Debug, Default)]
pub(crate) struct Stamped {
    /// (enqueue time, packet), head first.
    pub(crate) q: VecDeque<(SimTime, Packet)>,
    /// Bytes held.
    pub(crate) bytes: u64,
}

impl Stamped {
    /// Appends `pkt`, stamped `now`.
    #[inline]
    pub(crate) fn push(&mut self, now: SimTime, pkt: Packet) {
        self.bytes += pkt.size as u64;
        self.q.push_back((now, pkt));
    }

    /// Removes the head packet, with its stamp.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<(SimTime, Packet)> {
        let (t, p) = self.q.pop_front()?;
        self.bytes -= p.size as u64;
        Some((t, p))
    }

    /// Packets and bytes held.
    pub(crate) fn occupancy(&self) -> Occupancy {
        Occupancy {
            packets: self.q.len() as u32,
            bytes: self.bytes,
        }
    }
}

/// The control law: the next drop time after `t`, `t + interval / sqrt(count)` (RFC 8289 §3.3, §5.6).
pub fn control_law(t: SimTime, interval: Dur, count: u32) -> SimTime {
    let ns = interval.as_nanos() as f64 / (count.max(1) as f64).sqrt();
    t + Dur::from_nanos(ns.round() as u64)
}

/// CoDel's per-queue controller state (RFC 8289 §5.2's variables).
#[derive(Clone, Copy, Debug, Default)]
pub struct CodelState {
    /// Drops (and marks) since entering the dropping state (`count_`).
    count: u32,
    /// `count` when the dropping state was last entered (`lastcount_`).
    lastcount: u32,
    /// In the dropping state (`dropping_`).
    dropping: bool,
    /// When the sojourn will have been above target for an interval (`first_above_time_`,
    /// `None` for the RFC's 0).
    first_above: Option<SimTime>,
    /// When the next drop is due in the dropping state (`drop_next_`).
    drop_next: SimTime,
}

impl CodelState {
    /// Drops and marks of the current (or last) dropping state (RFC 8289 §5.2 `count_`).
    pub fn count(&self) -> u32 {
        self.count
    }

    /// True while in the dropping state (RFC 8289 §5.2 `dropping_`).
    pub fn dropping(&self) -> bool {
        self.dropping
    }

    /// `dodequeue` (RFC 8289 §5.6): takes the head and says whether it may be dropped.
    #[inline]
    fn dodequeue(
        &mut self,
        now: SimTime,
        p: &CodelParams,
        maxpacket: u32,
        buf: &mut Stamped,
    ) -> (Option<Packet>, bool) {
        let Some((stamp, pkt)) = buf.pop() else {
            // The queue is empty: leave the above-target state.
            self.first_above = None;
            return (None, false);
        };
        let sojourn = now.saturating_since(stamp);
        let mut ok_to_drop = false;
        if sojourn < p.target || buf.bytes <= maxpacket as u64 {
            // Below target, or less than one MTU left queued (§5.6): not a standing queue.
            self.first_above = None;
        } else {
            match self.first_above {
                None => self.first_above = Some(now + p.interval),
                Some(t) if now >= t => ok_to_drop = true,
                Some(_) => {}
            }
        }
        (Some(pkt), ok_to_drop)
    }

    /// Drops (or marks) `pkt` as CoDel decided; returns it if it was marked and is to be sent.
    #[inline]
    fn drop_or_mark(p: &CodelParams, mut pkt: Packet, drops: &mut Drops) -> Option<Packet> {
        if p.ecn && matches!(pkt.ecn, Ecn::Ect | Ecn::Ce) {
            pkt.ecn = Ecn::Ce;
            drops.mark_for(&pkt, DropCause::Codel);
            Some(pkt)
        } else {
            drops.push(pkt, DropCause::Codel);
            None
        }
    }

    /// CoDel's `dequeue` (RFC 8289 §5.5): the next packet of `buf` to send at `now`,
    /// dropping head packets into `drops` as the dropping state and control law say.
    pub(crate) fn dequeue(
        &mut self,
        now: SimTime,
        p: &CodelParams,
        maxpacket: u32,
        buf: &mut Stamped,
        drops: &mut Drops,
    ) -> Option<Packet> {
        let (mut pkt, mut ok_to_drop) = self.dodequeue(now, p, maxpacket, buf);
        if pkt.is_none() {
            // §5.5: an empty queue ends the dropping state.
            self.dropping = false;
            return None;
        }
        if self.dropping {
            if !ok_to_drop {
                // §5.5: the sojourn went below target; leave the dropping state.
                self.dropping = false;
            }
            // §5.5: drop as many as the control law says are due by now.
            while self.dropping && now >= self.drop_next {
                self.count += 1;
                let head = pkt.take().expect("a packet in the dropping loop");
                if let Some(marked) = Self::drop_or_mark(p, head, drops) {
                    // Marked instead of dropped: send it, next mark per the control law.
                    self.drop_next = control_law(self.drop_next, p.interval, self.count);
                    return Some(marked);
                }
                (pkt, ok_to_drop) = self.dodequeue(now, p, maxpacket, buf);
                if pkt.is_none() || !ok_to_drop {
                    self.dropping = false;
                } else {
                    self.drop_next = control_law(self.drop_next, p.interval, self.count);
                }
            }
            pkt
        } else if ok_to_drop {
            // §5.5: enter the dropping state, dropping (or marking) this head packet.
            let head = pkt.take().expect("a packet to drop");
            pkt = match Self::drop_or_mark(p, head, drops) {
                Some(marked) => Some(marked),
                None => self.dodequeue(now, p, maxpacket, buf).0,
            };
            self.dropping = true;
            // §5.5: restart near the last state's drop rate if it ended recently.
            let delta = self.count.wrapping_sub(self.lastcount);
            self.count = 1;
            if delta > 1
                && delta < u32::MAX / 2
                && now.saturating_since(self.drop_next) < p.interval.saturating_mul(16)
            {
                self.count = delta;
            }
            self.drop_next = control_law(now, p.interval, self.count);
            self.lastcount = self.count;
            pkt
        } else {
            pkt
        }
    }
}

/// A FIFO managed by CoDel (RFC 8289), with a tail-drop limit.
#[derive(Debug)]
pub struct Codel {
    params: CodelParams,
    limit: Limit,
    buf: Stamped,
    state: CodelState,
    /// The largest packet offered so far [bytes] (RFC 8289 §5.3's `maxpacket`, used in §5.6).
    maxpacket: u32,
}

impl Codel {
    /// An empty CoDel queue with `params` and a tail-drop `limit` (RFC 8289 §5.4).
    pub fn new(params: CodelParams, limit: Limit) -> Self {
        Codel {
            params,
            limit,
            buf: Stamped::default(),
            state: CodelState::default(),
            maxpacket: 0,
        }
    }

    /// The controller's state (RFC 8289 §5.2), for tests and samples.
    pub fn state(&self) -> &CodelState {
        &self.state
    }
}

impl Queue for Codel {
    fn enqueue(&mut self, now: SimTime, pkt: Packet, drops: &mut Drops) {
        // RFC 8289 §5.4: stamp on entry; a full buffer drops the arrival.
        self.maxpacket = self.maxpacket.max(pkt.size);
        if self.limit.admits(self.buf.occupancy(), pkt.size) {
            self.buf.push(now, pkt);
        } else {
            drops.push(pkt, DropCause::Overflow);
        }
    }

    fn dequeue(&mut self, now: SimTime, drops: &mut Drops) -> Option<Packet> {
        self.state
            .dequeue(now, &self.params, self.maxpacket, &mut self.buf, drops)
    }

    fn occupancy(&self) -> Occupancy {
        self.buf.occupancy()
    }
}

/// Default CoDel target, 5 ms (RFC 8289 §4.3).
pub(crate) fn d_target() -> Dur {
    Dur::from_millis(5)
}
/// Default CoDel interval, 100 ms (RFC 8289 §4.2).
pub(crate) fn d_interval() -> Dur {
    Dur::from_millis(100)
}
fn is_false(b: &bool) -> bool {
    !*b
}

/// Packets a CoDel or PIE queue holds when no limit is given (RFC 8289 §5.4 and RFC 8033 §4.1 leave it open; Linux's default).
pub const AQM_DEFAULT_LIMIT: u32 = 1000;

/// Checks that a duration key (`target`, `interval`, `t_update`) is above zero.
pub(crate) fn check_positive(key: &str, d: Dur) -> Result<(), ScenarioError> {
    if d > Dur::ZERO {
        Ok(())
    } else {
        Err(ScenarioError::new(
            key,
            format!("expected {key} > 0, found {d}"),
        ))
    }
}

/// CoDel's keys in a scenario (`kind = "codel"`, RFC 8289 §4).
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CodelConfig {
    /// Tail-drop limit [packets]; default 1000 when `limit_bytes` is not given (RFC 8289 §5.4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Tail-drop limit [bytes], instead of `limit` (RFC 8289 §5.4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_bytes: Option<Bytes>,
    /// TARGET, the acceptable standing sojourn time; default 5 ms (RFC 8289 §4.3).
    #[serde(default = "d_target")]
    pub target: Dur,
    /// INTERVAL, the window and control-law base; default 100 ms (RFC 8289 §4.2).
    #[serde(default = "d_interval")]
    pub interval: Dur,
    /// Mark ECN-capable packets CE instead of dropping them; default false (RFC 8289 §5, as Linux does).
    #[serde(default, skip_serializing_if = "is_false")]
    pub ecn: bool,
}

impl Default for CodelConfig {
    /// RFC 8289's defaults: target 5 ms, interval 100 ms, 1000 packets.
    fn default() -> Self {
        CodelConfig {
            limit: None,
            limit_bytes: None,
            target: d_target(),
            interval: d_interval(),
            ecn: false,
        }
    }
}

impl CodelConfig {
    /// Checks the limit, target and interval (RFC 8289 §4); keys relative to the queue table.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        Limit::check_keys(self.limit, self.limit_bytes)?;
        check_positive("target", self.target)?;
        check_positive("interval", self.interval)
    }

    /// The controller's parameters (RFC 8289 §4.2, §4.3).
    pub fn params(&self) -> CodelParams {
        CodelParams {
            target: self.target,
            interval: self.interval,
            ecn: self.ecn,
        }
    }

    /// The queue these settings describe (RFC 8289 §5); call [`CodelConfig::validate`] first.
    pub fn build(&self) -> Codel {
        let limit = Limit::from_keys(self.limit.or(Some(AQM_DEFAULT_LIMIT)), self.limit_bytes);
        Codel::new(self.params(), limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(uid: u64, ecn: Ecn) -> Packet {
        Packet {
            uid,
            size: 1000,
            ecn,
            ..Default::default()
        }
    }

    fn codel(ecn: bool) -> Codel {
        Codel::new(
            CodelParams {
                target: Dur::from_millis(5),
                interval: Dur::from_millis(100),
                ecn,
            },
            Limit::Packets(10_000),
        )
    }

    /// Runs a pipeline with one dequeue every `step`: before each dequeue the queue is
    /// topped up to `len(t)` packets (packets only enter, so a shorter target length
    /// drains it), so each head packet's sojourn is about `len · step`. Returns the
    /// times of drops and marks together, of drops alone, and the packets sent.
    fn pipeline(
        q: &mut Codel,
        step: Dur,
        until: SimTime,
        len: impl Fn(SimTime) -> u32,
        ecn: Ecn,
    ) -> (Vec<SimTime>, Vec<SimTime>, u64) {
        let mut d = Drops::default();
        let (mut now, mut uid, mut sent) = (SimTime::ZERO, 0, 0);
        let (mut events, mut dropped) = (vec![], vec![]);
        while now < until {
            while q.occupancy().packets < len(now) {
                q.enqueue(now, pkt(uid, ecn), &mut d);
                uid += 1;
            }
            if let Some(p) = q.dequeue(now, &mut d) {
                sent += 1;
                if p.ecn == Ecn::Ce && ecn == Ecn::Ect {
                    events.push(now);
                }
            }
            for _ in &d.dropped {
                events.push(now);
                dropped.push(now);
            }
            d.clear();
            now += step;
        }
        (events, dropped, sent)
    }

    #[test]
    fn control_law_spacing_is_interval_over_sqrt_count() {
        // RFC 8289 §3.3: 100, 70.7, 57.7, 50, 44.7 ms … between successive drops.
        let i = Dur::from_millis(100);
        let t0 = SimTime::from_secs(1);
        let ms = |k| (control_law(t0, i, k) - t0).as_secs_f64() * 1e3;
        assert!((ms(1) - 100.0).abs() < 1e-6);
        assert!((ms(2) - 70.710_678).abs() < 1e-5);
        assert!((ms(3) - 57.735_027).abs() < 1e-5);
        assert!((ms(4) - 50.0).abs() < 1e-6);

        // In a queue whose sojourn stays at 10 ms (100 packets, one sent per 100 µs),
        // the first drop comes one interval after the sojourn first exceeds target,
        // then the gaps follow the control law to the 100 µs step.
        let mut q = codel(false);
        let step = Dur::from_micros(100);
        let (drops, _, _) = pipeline(&mut q, step, SimTime::from_secs(2), |_| 100, Ecn::NotEct);
        assert!(drops.len() > 10, "{drops:?}");
        // The sojourn reaches 5 ms (target) at the 51st dequeue (t = 5.0 ms with the
        // first packets stamped at 0), so the first drop is due at 105.0 ms.
        let first = drops[0].as_secs_f64() * 1e3;
        assert!(
            (first - 105.0).abs() <= 0.1 + 1e-9,
            "first drop at {first} ms"
        );
        for (k, w) in drops.windows(2).enumerate() {
            let gap = (w[1] - w[0]).as_secs_f64() * 1e3;
            let want = 100.0 / ((k + 1) as f64).sqrt();
            assert!(
                (gap - want).abs() <= 0.1 + 1e-9,
                "gap {k}: {gap} ms, want {want} ms ({drops:?})"
            );
        }
        assert!(q.state().dropping());
        assert_eq!(q.state().count() as usize, drops.len());
    }

    #[test]
    fn no_drop_below_target_or_for_less_than_an_interval_above_it() {
        let step = Dur::from_micros(100);
        // 4 ms of sojourn (40 packets) for 3 s: below target, never a drop.
        let mut q = codel(false);
        let (drops, _, sent) = pipeline(&mut q, step, SimTime::from_secs(3), |_| 40, Ecn::NotEct);
        assert!(drops.is_empty() && sent > 29_000, "{drops:?}");

        // 10 ms of sojourn from 0 until `above`, then 2 ms: the sojourn is above target
        // from 5 ms (the 51st dequeue) until the long queue has drained past the head.
        let run = |above_ms: u64| {
            let mut q = codel(false);
            let until = SimTime::from_millis(above_ms);
            let len = move |t: SimTime| if t < until { 100 } else { 20 };
            pipeline(&mut q, step, SimTime::from_secs(3), len, Ecn::NotEct).1
        };
        // Above from 5.0 ms to 5 + 90 ms: less than one interval, no drop.
        let d = run(85);
        assert!(d.is_empty(), "{d:?}");
        // The same with the sojourn above target for longer than an interval: drops.
        let d = run(120);
        assert!(!d.is_empty());
        assert!(d[0] >= SimTime::from_millis(105));
    }

    #[test]
    fn ecn_marks_instead_of_dropping() {
        let step = Dur::from_micros(100);
        let mut q = codel(true);
        let (marks, dropped, sent) =
            pipeline(&mut q, step, SimTime::from_secs(2), |_| 100, Ecn::Ect);
        // Marks follow the same schedule as drops would.
        assert!(marks.len() > 10);
        let first = marks[0].as_secs_f64() * 1e3;
        assert!((first - 105.0).abs() <= 0.1 + 1e-9, "{first}");
        let gap = (marks[1] - marks[0]).as_secs_f64() * 1e3;
        assert!((gap - 100.0).abs() <= 0.1 + 1e-9, "{gap}");
        // Nothing was dropped: one packet sent per step, 99 left.
        assert!(dropped.is_empty());
        assert_eq!((sent, q.occupancy().packets), (20_000, 99));
        // Not ECN-capable: dropped even with ecn = true.
        let mut q = codel(true);
        let (_, drops, _) = pipeline(&mut q, step, SimTime::from_secs(1), |_| 100, Ecn::NotEct);
        assert!(!drops.is_empty());
    }

    #[test]
    fn limit_drops_the_arrival_and_conserves_packets() {
        let mut q = codel(false);
        q.limit = Limit::Packets(3);
        let mut d = Drops::default();
        for i in 0..5 {
            q.enqueue(SimTime::ZERO, pkt(i, Ecn::NotEct), &mut d);
        }
        assert_eq!(d.dropped.len(), 2);
        assert!(d.dropped.iter().all(|(_, c)| *c == DropCause::Overflow));
        assert_eq!(q.occupancy().packets, 3);
        // Dequeued long after: sojourn far above target, but only one interval later
        // may CoDel drop, so a short backlog drains whole.
        let mut out = 0;
        while q.dequeue(SimTime::from_secs(1), &mut d).is_some() {
            out += 1;
        }
        assert_eq!((out, d.dropped.len()), (3, 2));
    }

    /// Drives `q` with a random load (bursts of random sizes, flows and ECN capability,
    /// service at random moments) and checks that every packet CoDel dropped or marked
    /// had waited at least `target` (RFC 8289 §5.6: only a head packet at or above
    /// target may be dropped). Returns the CoDel drops and marks seen.
    fn never_below_target(q: &mut dyn Queue, target: Dur, rng: &mut crate::rng::RngStream) -> u64 {
        use std::collections::HashMap;
        let mut d = Drops {
            keep_marked: true,
            ..Default::default()
        };
        let (mut now, mut uid, mut codel) = (SimTime::ZERO, 0u64, 0u64);
        let mut stamp = HashMap::new();
        let flows = 1 + rng.below(20) as u32;
        while now < SimTime::from_secs(20) {
            // A burst every so often, heavier than the service on average.
            for _ in 0..rng.below(4) {
                let p = Packet {
                    uid,
                    flow: crate::packet::FlowId(rng.below(flows as u64) as u32),
                    size: 40 + rng.below(1461) as u32,
                    ecn: if rng.below(2) == 0 {
                        Ecn::Ect
                    } else {
                        Ecn::NotEct
                    },
                    ..Default::default()
                };
                stamp.insert(uid, now);
                uid += 1;
                q.enqueue(now, p, &mut d);
            }
            if rng.below(3) > 0 {
                q.dequeue(now, &mut d);
            }
            let codel_pkts = d.dropped.iter().chain(d.marked.iter());
            for (p, _) in codel_pkts.filter(|(_, c)| *c == DropCause::Codel) {
                let sojourn = now.saturating_since(stamp[&p.uid]);
                assert!(
                    sojourn >= target,
                    "uid {} sojourn {sojourn:?} < {target:?}",
                    p.uid
                );
                codel += 1;
            }
            d.clear();
            now += Dur::from_micros(50 + rng.below(2000));
        }
        codel
    }

    #[test]
    fn random_loads_never_drop_below_target() {
        use crate::queue::fq_codel::FqCodel;
        use crate::rng::RngStream;
        let mut rng = RngStream::from_seed(61);
        let (mut by_codel, mut by_fq) = (0, 0);
        for _ in 0..20 {
            let params = CodelParams {
                target: Dur::from_micros(100 + rng.below(30_000)),
                interval: Dur::from_micros(1_000 + rng.below(300_000)),
                ecn: rng.below(2) == 0,
            };
            let limit = 1 + rng.below(2_000) as u32;
            let mut q = Codel::new(params, Limit::Packets(limit));
            by_codel += never_below_target(&mut q, params.target, &mut rng);
            let (flows, quantum) = (1 + rng.below(64) as u32, 1 + rng.below(3_000) as u32);
            let mut q = FqCodel::new(params, flows, quantum, limit, RngStream::from_seed(7));
            by_fq += never_below_target(&mut q, params.target, &mut rng);
        }
        // The loads overload the queues: CoDel acts in both.
        assert!(by_codel > 100 && by_fq > 100, "{by_codel} {by_fq}");
    }
}

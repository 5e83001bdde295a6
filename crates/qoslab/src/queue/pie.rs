//! PIE: Proportional Integral controller Enhanced (Pan, Natarajan, Baker & White,
//! RFC 8033, 2017).
//!
//! Arrivals are dropped at random with probability `drop_prob` (RFC 8033 §4.1), which a
//! proportional-integral controller updates every `t_update` from the queueing delay
//! (§4.2): p = α·(qdelay − target) + β·(qdelay − qdelay_old), scaled down while
//! `drop_prob` is small (the auto-tuning of §4.2), capped at +0.02 per update once
//! `drop_prob` ≥ 0.1 (§5.5), decayed by 0.98 while the queue stays empty (§4.2), and
//! bounded to [0, 1]. A burst allowance of `max_burst` lets a burst through undropped
//! (§4.4). With `ecn`, an ECN-capable arrival is marked instead of dropped while
//! `drop_prob` ≤ `mark_ecnth` (§5.1).
//!
//! Choices where the RFC leaves room, each at the line it governs:
//! - The queueing delay is measured with timestamps (§4.3's alternative to the
//!   de-queue rate estimator of §5.2): the sojourn time of the packet last dequeued,
//!   or 0 when the queue is empty at the update.
//! - The update runs at every multiple of `t_update`; with time passed in, the updates
//!   due are applied in order when the queue is next touched (the queue cannot change
//!   between two calls, so each update sees what it would have seen on time).
//! - PIE is always active (§5.3's active/inactive states are optional and not
//!   implemented), and drops are not derandomized (§5.4, optional); the "small queue"
//!   safeguard of §4.1 compares the bytes queued with two of the largest packets seen.

use serde::{Deserialize, Serialize};

use super::codel::{check_positive, Stamped, AQM_DEFAULT_LIMIT};
use super::{DropCause, Drops, Limit, Occupancy, Queue};
use crate::config::ScenarioError;
use crate::packet::{Ecn, Packet};
use crate::rng::RngStream;
use crate::time::{Dur, SimTime};
use crate::units::Bytes;

/// PIE's parameters (RFC 8033 §4, §5.1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PieParams {
    /// QDELAY_REF, the target queueing delay (RFC 8033 §4.2).
    pub target: Dur,
    /// T_UPDATE, the period of the drop-probability update (RFC 8033 §4.2).
    pub t_update: Dur,
    /// α, weight of the delay's deviation from target [1/s] (RFC 8033 §4.2).
    pub alpha: f64,
    /// β, weight of the delay's change since the last update [1/s] (RFC 8033 §4.2).
    pub beta: f64,
    /// MAX_BURST, the burst allowance (RFC 8033 §4.4).
    pub max_burst: Dur,
    /// Mark ECN-capable packets CE instead of dropping them (RFC 8033 §5.1).
    pub ecn: bool,
    /// Above this drop probability ECN-capable packets are dropped, not marked (RFC 8033 §5.1).
    pub mark_ecnth: f64,
}

/// PIE's controller state (RFC 8033 §4.2, §4.4): probability, last delay, burst allowance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PieController {
    /// The drop probability, `drop_prob_` (RFC 8033 §4.2).
    pub drop_prob: f64,
    /// The delay at the previous update [s], `qdelay_old_` (RFC 8033 §4.2).
    pub qdelay_old: f64,
    /// The burst allowance left, `burst_allow_` (RFC 8033 §4.4).
    pub burst_allow: Dur,
}

impl PieController {
    /// A fresh controller: no drops, full burst allowance (RFC 8033 §4.4).
    pub fn new(p: &PieParams) -> Self {
        PieController {
            drop_prob: 0.0,
            qdelay_old: 0.0,
            burst_allow: p.max_burst,
        }
    }

    /// One periodic update with the current queueing delay `qdelay` [s] (RFC 8033 §4.2, §4.4, §5.5).
    pub fn update(&mut self, p: &PieParams, qdelay: f64) {
        let target = p.target.as_secs_f64();
        // §4.2: the PI step.
        let mut delta = p.alpha * (qdelay - target) + p.beta * (qdelay - self.qdelay_old);
        // §4.2: auto-tuning, smaller steps while the probability is small.
        let prob = self.drop_prob;
        delta /= if prob < 0.000_001 {
            2048.0
        } else if prob < 0.000_01 {
            512.0
        } else if prob < 0.000_1 {
            128.0
        } else if prob < 0.001 {
            32.0
        } else if prob < 0.01 {
            8.0
        } else if prob < 0.1 {
            2.0
        } else {
            1.0
        };
        // §5.5: cap the increase at 2 % once the probability is 10 % or more.
        if prob >= 0.1 && delta > 0.02 {
            delta = 0.02;
        }
        self.drop_prob += delta;
        // §4.2: decay exponentially while the queue stays empty.
        if qdelay == 0.0 && self.qdelay_old == 0.0 {
            self.drop_prob *= 0.98;
        }
        self.drop_prob = self.drop_prob.clamp(0.0, 1.0);
        // §4.4: the allowance shrinks by T_UPDATE per update, and is restored once the
        // congestion is over (no drops, delay under half the target twice running).
        self.burst_allow =
            if self.drop_prob == 0.0 && qdelay < target / 2.0 && self.qdelay_old < target / 2.0 {
                p.max_burst
            } else {
                Dur::from_nanos(
                    self.burst_allow
                        .as_nanos()
                        .saturating_sub(p.t_update.as_nanos()),
                )
            };
        self.qdelay_old = qdelay;
    }
}

/// A FIFO managed by PIE (RFC 8033 §4), with a tail-drop limit.
#[derive(Debug)]
pub struct Pie {
    params: PieParams,
    limit: Limit,
    buf: Stamped,
    ctl: PieController,
    /// When the next periodic update is due (RFC 8033 §4.2's T_UPDATE timer).
    next_update: SimTime,
    /// Sojourn time of the packet last dequeued (RFC 8033 §4.3, timestamps).
    last_sojourn: Dur,
    /// The largest packet offered so far [bytes].
    maxpacket: u32,
    rng: RngStream,
}

impl Pie {
    /// An empty PIE queue with `params` and a tail-drop `limit`, drawing from `rng` (RFC 8033 §4).
    pub fn new(params: PieParams, limit: Limit, rng: RngStream) -> Self {
        Pie {
            ctl: PieController::new(&params),
            next_update: SimTime::ZERO + params.t_update,
            params,
            limit,
            buf: Stamped::default(),
            last_sojourn: Dur::ZERO,
            maxpacket: 0,
            rng,
        }
    }

    /// The controller's state (RFC 8033 §4.2), for tests and samples.
    pub fn controller(&self) -> &PieController {
        &self.ctl
    }

    /// Applies the periodic updates due by `now` (RFC 8033 §4.2), in order.
    fn catch_up(&mut self, now: SimTime) {
        let t = self.params.t_update.as_nanos();
        while now >= self.next_update {
            // §4.3 with timestamps: the last dequeued packet's sojourn, 0 if empty.
            let qdelay = if self.buf.q.is_empty() {
                0.0
            } else {
                self.last_sojourn.as_secs_f64()
            };
            let quiet = PieController::new(&self.params);
            if qdelay == 0.0 && self.ctl == quiet {
                // An idle queue with a quiet controller stays so: skip the updates.
                let due = (now.as_nanos() - self.next_update.as_nanos()) / t + 1;
                self.next_update = SimTime::from_nanos(self.next_update.as_nanos() + due * t);
                break;
            }
            self.ctl.update(&self.params, qdelay);
            self.next_update += self.params.t_update;
        }
    }

    /// §4.1's random drop decision for an arrival, with its safeguards.
    fn drop_early(&mut self) -> bool {
        let half_target = self.params.target.as_secs_f64() / 2.0;
        // §4.1: no early drop while the delay is low and p moderate, or the queue small.
        if (self.ctl.qdelay_old < half_target && self.ctl.drop_prob < 0.2)
            || self.buf.bytes <= 2 * self.maxpacket as u64
        {
            return false;
        }
        self.rng.bernoulli(self.ctl.drop_prob)
    }
}

impl Queue for Pie {
    fn enqueue(&mut self, now: SimTime, mut pkt: Packet, drops: &mut Drops) {
        self.catch_up(now);
        self.maxpacket = self.maxpacket.max(pkt.size);
        if !self.limit.admits(self.buf.occupancy(), pkt.size) {
            return drops.push(pkt, DropCause::Overflow);
        }
        // §4.4: no random drop while burst allowance is left.
        if self.ctl.burst_allow == Dur::ZERO && self.drop_early() {
            // §5.1: mark instead while the probability is at most mark_ecnth.
            if self.params.ecn
                && matches!(pkt.ecn, Ecn::Ect | Ecn::Ce)
                && self.ctl.drop_prob <= self.params.mark_ecnth
            {
                pkt.ecn = Ecn::Ce;
                drops.mark_for(&pkt, DropCause::Pie);
            } else {
                return drops.push(pkt, DropCause::Pie);
            }
        }
        self.buf.push(now, pkt);
    }

    fn dequeue(&mut self, now: SimTime, _drops: &mut Drops) -> Option<Packet> {
        self.catch_up(now);
        let (stamp, p) = self.buf.pop()?;
        self.last_sojourn = now.saturating_since(stamp);
        Some(p)
    }

    fn occupancy(&self) -> Occupancy {
        self.buf.occupancy()
    }
}

fn d_target() -> Dur {
    Dur::from_millis(15)
}
fn d_t_update() -> Dur {
    Dur::from_millis(15)
}
fn d_alpha() -> f64 {
    0.125
}
fn d_beta() -> f64 {
    1.25
}
fn d_max_burst() -> Dur {
    Dur::from_millis(150)
}
fn d_mark_ecnth() -> f64 {
    0.1
}
fn is_false(b: &bool) -> bool {
    !*b
}

/// PIE's keys in a scenario (`kind = "pie"`, RFC 8033 §4 and §5.1).
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PieConfig {
    /// Tail-drop limit [packets]; default 1000 when `limit_bytes` is not given (RFC 8033 §4.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Tail-drop limit [bytes], instead of `limit` (RFC 8033 §4.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_bytes: Option<Bytes>,
    /// QDELAY_REF, the target delay; default 15 ms (RFC 8033 §4.2).
    #[serde(default = "d_target")]
    pub target: Dur,
    /// T_UPDATE, the update period; default 15 ms (RFC 8033 §4.2).
    #[serde(default = "d_t_update")]
    pub t_update: Dur,
    /// α [1/s]; default 0.125 (RFC 8033 §4.2).
    #[serde(default = "d_alpha")]
    pub alpha: f64,
    /// β [1/s]; default 1.25 (RFC 8033 §4.2).
    #[serde(default = "d_beta")]
    pub beta: f64,
    /// MAX_BURST, the burst allowance; default 150 ms (RFC 8033 §4.4).
    #[serde(default = "d_max_burst")]
    pub max_burst: Dur,
    /// Mark ECN-capable packets instead of dropping them; default false (RFC 8033 §5.1).
    #[serde(default, skip_serializing_if = "is_false")]
    pub ecn: bool,
    /// Drop probability above which ECN-capable packets are dropped; default 0.1 (RFC 8033 §5.1).
    #[serde(default = "d_mark_ecnth")]
    pub mark_ecnth: f64,
}

impl Default for PieConfig {
    /// RFC 8033's defaults: target 15 ms, T_UPDATE 15 ms, α 0.125, β 1.25, 150 ms burst.
    fn default() -> Self {
        PieConfig {
            limit: None,
            limit_bytes: None,
            target: d_target(),
            t_update: d_t_update(),
            alpha: d_alpha(),
            beta: d_beta(),
            max_burst: d_max_burst(),
            ecn: false,
            mark_ecnth: d_mark_ecnth(),
        }
    }
}

impl PieConfig {
    /// Checks every key (RFC 8033 §4, §5.1); keys are relative to the queue table.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        Limit::check_keys(self.limit, self.limit_bytes)?;
        check_positive("target", self.target)?;
        check_positive("t_update", self.t_update)?;
        for (key, v) in [("alpha", self.alpha), ("beta", self.beta)] {
            if !(v >= 0.0 && v.is_finite()) {
                return Err(ScenarioError::new(
                    key,
                    format!("expected {key} ≥ 0 [1/s] (RFC 8033 §4.2), found {v}"),
                ));
            }
        }
        if !(0.0..=1.0).contains(&self.mark_ecnth) {
            return Err(ScenarioError::new(
                "mark_ecnth",
                format!("expected mark_ecnth in [0, 1], found {}", self.mark_ecnth),
            ));
        }
        Ok(())
    }

    /// The controller's parameters (RFC 8033 §4).
    pub fn params(&self) -> PieParams {
        PieParams {
            target: self.target,
            t_update: self.t_update,
            alpha: self.alpha,
            beta: self.beta,
            max_burst: self.max_burst,
            ecn: self.ecn,
            mark_ecnth: self.mark_ecnth,
        }
    }

    /// The queue these settings describe (RFC 8033 §4), drawing from `rng`; call
    /// [`PieConfig::validate`] first.
    pub fn build(&self, rng: RngStream) -> Pie {
        let limit = Limit::from_keys(self.limit.or(Some(AQM_DEFAULT_LIMIT)), self.limit_bytes);
        Pie::new(self.params(), limit, rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> PieParams {
        PieConfig::default().params()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 + 1e-9 * b.abs()
    }

    #[test]
    fn probability_updates_follow_the_rfc_formula() {
        // α = 0.125, β = 1.25, target 15 ms; hand-computed from RFC 8033 §4.2.
        let p = params();
        let mut c = PieController::new(&p);
        // 30 ms: 0.125·0.015 + 1.25·0.030 = 0.039375, p < 1e-6 so /2048.
        c.update(&p, 0.030);
        assert!(close(c.drop_prob, 0.039_375 / 2048.0), "{c:?}");
        assert_eq!(c.burst_allow, Dur::from_millis(135));
        // 30 ms again: 0.001875, 1e-5 ≤ p < 1e-4 so /128.
        c.update(&p, 0.030);
        assert!(
            close(c.drop_prob, 0.039_375 / 2048.0 + 0.001_875 / 128.0),
            "{c:?}"
        );
        c.update(&p, 0.030);
        let p3 = 0.039_375 / 2048.0 + 2.0 * 0.001_875 / 128.0;
        assert!(close(c.drop_prob, p3), "{c:?}");
        // 0 ms: −0.001875 − 0.0375 = −0.039375, /128: below zero, bounded to 0.
        c.update(&p, 0.0);
        assert_eq!(c.drop_prob, 0.0);
        // The delay was 30 ms last time: the allowance still shrinks (4 updates).
        assert_eq!(c.burst_allow, Dur::from_millis(90));
        // 0 ms twice: the allowance is restored (§4.4).
        c.update(&p, 0.0);
        assert_eq!((c.drop_prob, c.burst_allow), (0.0, Dur::from_millis(150)));

        // Large probabilities: no scaling at p ≥ 0.1, and the +0.02 cap (§5.5).
        let mut c = PieController {
            drop_prob: 0.15,
            qdelay_old: 0.100,
            burst_allow: Dur::ZERO,
        };
        c.update(&p, 0.100); // 0.125·0.085 = 0.010625
        assert!(close(c.drop_prob, 0.160_625), "{c:?}");
        c.qdelay_old = 0.0;
        c.update(&p, 0.100); // 0.010625 + 0.125 = 0.135625, capped at 0.02
        assert!(close(c.drop_prob, 0.180_625), "{c:?}");
        // 0.05 ≤ p < 0.1 halves the step; the decay applies only at zero delay twice.
        let mut c = PieController {
            drop_prob: 0.05,
            qdelay_old: 0.0,
            burst_allow: Dur::ZERO,
        };
        c.update(&p, 0.0); // −0.001875 / 2 = −0.0009375, then × 0.98
        assert!(close(c.drop_prob, (0.05 - 0.000_937_5) * 0.98), "{c:?}");
    }

    /// Keeps the queue topped up to `len` packets before each dequeue, one per `step`:
    /// the head's sojourn is about `len · step`. Returns the times of early drops.
    fn pipeline(q: &mut Pie, step: Dur, until: SimTime, len: u32) -> Vec<SimTime> {
        let mut d = Drops::default();
        let (mut now, mut uid, mut out) = (SimTime::ZERO, 0u64, vec![]);
        while now < until {
            for _ in 0..3 {
                if q.occupancy().packets >= len {
                    break;
                }
                let p = Packet {
                    uid,
                    size: 1000,
                    ..Default::default()
                };
                uid += 1;
                q.enqueue(now, p, &mut d);
            }
            q.dequeue(now, &mut d);
            for (_, c) in &d.dropped {
                assert_eq!(*c, DropCause::Pie);
                out.push(now);
            }
            d.clear();
            now += step;
        }
        out
    }

    #[test]
    fn no_random_drops_during_the_burst_allowance() {
        // A controller already at p = 0.5 with a standing delay, and a full allowance:
        // nothing is dropped until 10 updates (150 ms) have used it up.
        let run = |max_burst_ms: u64| {
            let mut c = PieConfig {
                max_burst: Dur::from_millis(max_burst_ms),
                ..Default::default()
            };
            c.limit = Some(10_000);
            let mut q = c.build(RngStream::from_seed(5));
            q.ctl.drop_prob = 0.5;
            q.ctl.qdelay_old = 0.050;
            pipeline(
                &mut q,
                Dur::from_micros(100),
                SimTime::from_millis(400),
                500,
            )
        };
        let d = run(150);
        assert!(d.len() > 100, "{}", d.len());
        assert!(d[0] >= SimTime::from_millis(150), "{:?}", d[0]);
        assert!(d[0] < SimTime::from_millis(151), "{:?}", d[0]);
        // Without an allowance the same queue drops from the start.
        let d = run(0);
        assert!(d[0] < SimTime::from_millis(1), "{:?}", d[0]);
    }

    #[test]
    fn a_standing_queue_raises_p_and_ecn_marks_below_mark_ecnth() {
        // Sojourn 50 ms against a 15 ms target: p climbs and drops begin.
        let mut q = PieConfig {
            limit: Some(10_000),
            ..Default::default()
        }
        .build(RngStream::from_seed(9));
        let d = pipeline(&mut q, Dur::from_micros(100), SimTime::from_secs(3), 500);
        assert!(!d.is_empty() && q.controller().drop_prob > 0.0);

        // ECN: ECT arrivals are marked while p ≤ mark_ecnth, dropped above it.
        for (prob, marks) in [(0.05, true), (0.5, false)] {
            let mut q = PieConfig {
                ecn: true,
                max_burst: Dur::ZERO,
                ..Default::default()
            }
            .build(RngStream::from_seed(1));
            q.ctl.drop_prob = prob;
            q.ctl.qdelay_old = 0.050;
            let mut d = Drops::default();
            for uid in 0..200 {
                let p = Packet {
                    uid,
                    size: 1000,
                    ecn: Ecn::Ect,
                    ..Default::default()
                };
                q.enqueue(SimTime::ZERO, p, &mut d);
            }
            if marks {
                assert!(d.dropped.is_empty() && d.ecn_marked > 0, "{prob}");
            } else {
                assert!(!d.dropped.is_empty() && d.ecn_marked == 0, "{prob}");
            }
        }
    }
}

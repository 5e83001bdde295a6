//! RED: Random Early Detection (Floyd & Jacobson, "Random Early Detection Gateways for
//! Congestion Avoidance", IEEE/ACM ToN 1(4), 1993; "F&J" below), with the gentle
//! variant (Floyd, "Recommendation on using the gentle_ variant of RED", 2000) and ECN
//! marking (RFC 3168 §7).
//!
//! The pieces shared with multi-colour RED and ERED live here: [`RedParams`], the
//! average ([`Ewma`]) and the count-spaced decision ([`decide`]).
//!
//! Choices where the paper leaves room, each documented at the line it governs:
//! - `count` is the number of packets since the last mark *not counting this arrival*,
//!   so that the gap between marks is uniform on {1, …, 1/p_b} as F&J §7 derives.
//!   (Fig. 2 read literally, `count ← 0` on a mark and incremented before use, gives a
//!   gap uniform on {1, …, 1/p_b − 1} instead.)
//! - The idle decay counts `m` as a real number of mean-sized packet times, and after
//!   decaying restarts the idle clock at the arrival, so an arrival dropped at an empty
//!   queue does not make the next arrival decay the same idle period twice.
//! - Byte mode scales p_b by size / `mean_pkt_size` (F&J §4 write MaximumPacketSize;
//!   ns-2 uses its mean packet size): set `mean_pkt_size` to the MTU for F&J's literal
//!   rule.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::{DropCause, Drops, Limit, Occupancy, Queue};
use crate::config::ScenarioError;
use crate::packet::{Ecn, Packet};
use crate::rng::RngStream;
use crate::time::{Rate, SimTime};
use crate::units::Bytes;

/// RED thresholds and maximum early-drop probability; thresholds in packets, or in
/// bytes for a byte-mode queue.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RedParams {
    /// Below this average nothing is dropped early [packets or bytes].
    pub min_th: f64,
    /// At this average the early-drop probability reaches `max_p` [packets or bytes].
    pub max_th: f64,
    /// Early-drop probability at `max_th` (F&J §4 `max_p`), in (0, 1].
    pub max_p: f64,
}

impl RedParams {
    /// Base probability p_b for an average `avg` (F&J §4, Fig. 2), extended linearly
    /// from `max_p` at `max_th` to 1 at 2·`max_th` if `gentle`; `None` means a forced
    /// drop (avg ≥ max_th, or ≥ 2·max_th when gentle).
    pub fn base_prob(&self, avg: f64, gentle: bool) -> Option<f64> {
        if avg < self.min_th {
            Some(0.0)
        } else if avg < self.max_th {
            Some(self.max_p * (avg - self.min_th) / (self.max_th - self.min_th))
        } else if gentle && avg < 2.0 * self.max_th {
            // Gentle RED: p rises from max_p at max_th to 1 at 2·max_th.
            Some(self.max_p + (1.0 - self.max_p) * (avg - self.max_th) / self.max_th)
        } else {
            None
        }
    }
}

/// What RED decided for one arrival.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// No early action.
    Admit,
    /// Dropped (or ECN-marked) early at random.
    Early,
    /// Dropped because the average is past the forced-drop threshold.
    Forced,
}

/// The count-spaced RED decision (F&J §4 Fig. 2 and §7): p_b from the average,
/// multiplied by `scale` (byte mode, ERED), then p_a = p_b / (1 − count·p_b).
///
/// With `wait` (ns-2's `wait_`, ns-3's `Wait`, both on by default there): p_a = 0 until
/// count·p_b ≥ 1, then p_b / (2 − count·p_b), so the gap between marks is uniform on
/// [1/p_b, 2/p_b] — a mean of 1.5/p_b against F&J's ≈ 1/(2p_b).
pub(crate) fn decide(
    params: &RedParams,
    gentle: bool,
    wait: bool,
    avg: f64,
    scale: f64,
    count: &mut u32,
    rng: &mut RngStream,
) -> Verdict {
    if avg < params.min_th {
        // F&J Fig. 2: "else count ← −1" (our count is one higher, see the module doc).
        *count = 0;
        return Verdict::Admit;
    }
    let Some(pb) = params.base_prob(avg, gentle) else {
        *count = 0;
        return Verdict::Forced;
    };
    let pb = (pb * scale).min(1.0);
    // F&J §7: with p_a = p_b/(1 − n·p_b) for the (n+1)-th packet since the last mark,
    // the gap between marks is uniform on {1, …, 1/p_b}.
    let cp = *count as f64 * pb;
    let pa = if wait {
        if cp < 1.0 {
            0.0
        } else if cp < 2.0 {
            pb / (2.0 - cp)
        } else {
            1.0
        }
    } else if cp >= 1.0 {
        1.0
    } else {
        pb / (1.0 - cp)
    };
    if rng.bernoulli(pa) {
        *count = 0;
        Verdict::Early
    } else {
        *count += 1;
        Verdict::Admit
    }
}

/// RED's exponentially weighted moving average of the queue size, with the idle-time
/// decay of F&J §4 (Fig. 2: `m ← f(time − q_time)`, `avg ← (1 − w_q)^m avg`).
#[derive(Clone, Debug)]
pub(crate) struct Ewma {
    w_q: f64,
    avg: f64,
    /// When the measured queue last became empty (F&J's `q_time`).
    idle_since: SimTime,
    /// Transmission time of a mean-sized packet at the link rate [ns].
    typical_tx_ns: f64,
    /// The last idle decay computed, as `(m, (1 − w_q)^m)`: idle periods repeat
    /// (ACK clocking spaces arrivals at an empty queue evenly), and `powf` is a pure
    /// function, so a repeat reuses the factor bit for bit.
    last_decay: (f64, f64),
}

impl Ewma {
    /// An average of zero with weight `w_q`, idle since time zero.
    pub(crate) fn new(w_q: f64, link_rate: Rate, mean_pkt_size: u32) -> Self {
        let tx = link_rate.tx_time(mean_pkt_size.max(1)).as_nanos();
        Ewma {
            w_q,
            avg: 0.0,
            idle_since: SimTime::ZERO,
            typical_tx_ns: tx.max(1) as f64,
            last_decay: (0.0, 1.0),
        }
    }

    /// The current average.
    pub(crate) fn value(&self) -> f64 {
        self.avg
    }

    /// Updates the average for an arrival at `now` that finds `q` in the queue.
    pub(crate) fn on_arrival(&mut self, now: SimTime, q: f64) {
        if q > 0.0 {
            // F&J §4 Fig. 2: avg ← (1 − w_q)·avg + w_q·q.
            self.avg += self.w_q * (q - self.avg);
        } else {
            // F&J §4: m = idle time / transmission time of a typical packet.
            // An average of zero stays zero (the factor is finite): the common case of
            // a queue that never builds up (the ACK direction) computes nothing.
            if self.avg != 0.0 {
                if self.w_q >= 1.0 {
                    // No memory: the average is the queue, also after an idle period of
                    // zero length (where (1 − w_q)^0 would keep the old value).
                    self.avg = 0.0;
                } else {
                    let m = now.saturating_since(self.idle_since).as_nanos() as f64
                        / self.typical_tx_ns;
                    if m != self.last_decay.0 {
                        self.last_decay = (m, (1.0 - self.w_q).powf(m));
                    }
                    self.avg *= self.last_decay.1;
                }
            }
            // The idle period up to now is accounted for (see the module doc).
            self.idle_since = now;
        }
    }

    /// The measured queue became empty at `now`.
    pub(crate) fn on_empty(&mut self, now: SimTime) {
        self.idle_since = now;
    }
}

/// Settings of a RED queue (validated by [`RedConfig::validate`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RedSettings {
    /// Buffer limit; a byte limit makes the queue byte-mode (average and thresholds in
    /// bytes).
    pub limit: Limit,
    /// Thresholds and `max_p`, in the unit of `limit`.
    pub params: RedParams,
    /// EWMA weight of the average (F&J §6), in (0, 1].
    pub w_q: f64,
    /// Gentle variant: p rises from `max_p` to 1 between `max_th` and 2·`max_th`.
    pub gentle: bool,
    /// Mark ECN-capable packets CE instead of dropping them early (RFC 3168 §7).
    pub ecn: bool,
    /// ns-2/ns-3 "wait" spacing instead of F&J's (see [`decide`]).
    pub wait: bool,
    /// Mean packet size for the idle decay and byte-mode scaling [bytes].
    pub mean_pkt_size: u32,
    /// Forced drops (average past `max_th`, or 2·`max_th` when gentle) drop every
    /// packet; `false` with `ecn`: ECN-capable packets are marked instead (ns-3's
    /// `UseHardDrop` false), the buffer limit still drops.
    pub hard_drop: bool,
}

/// A FIFO managed by RED (F&J 1993).
#[derive(Debug)]
pub struct Red {
    s: RedSettings,
    ewma: Ewma,
    /// Packets since the last mark, per drop class (RED uses class 0; ERED 0 and 1).
    counts: [u32; 2],
    buf: VecDeque<Packet>,
    bytes: u64,
    rng: RngStream,
}

impl Red {
    /// An empty RED queue on a link of `link_rate` (for the idle decay), drawing from
    /// `rng`.
    pub fn new(settings: RedSettings, link_rate: Rate, rng: RngStream) -> Self {
        Red {
            ewma: Ewma::new(settings.w_q, link_rate, settings.mean_pkt_size),
            s: settings,
            counts: [0; 2],
            buf: VecDeque::new(),
            bytes: 0,
            rng,
        }
    }

    fn byte_mode(&self) -> bool {
        matches!(self.s.limit, Limit::Bytes(_))
    }

    /// Enqueues a copy of `pkt` with drop class `class` (its own count) and p_b
    /// multiplied by `scale`: the packet is copied once, into the buffer or the drops.
    #[inline(never)]
    pub(crate) fn enqueue_class(
        &mut self,
        now: SimTime,
        pkt: &Packet,
        drops: &mut Drops,
        class: usize,
        scale: f64,
    ) {
        let occ = self.occupancy();
        match self.judge(now, occ, pkt, class, scale) {
            Judged::Admit { marked } => {
                self.bytes += pkt.size as u64;
                self.buf.push_back(*pkt);
                if marked {
                    if let Some(p) = self.buf.back_mut() {
                        p.ecn = Ecn::Ce;
                        drops.mark(p);
                    }
                }
            }
            Judged::Drop { cause, marked } => {
                let mut p = *pkt;
                if marked {
                    p.ecn = Ecn::Ce;
                }
                drops.push(p, cause);
            }
        }
    }

    /// RED's decision for `pkt` arriving at `now` behind `occ` waiting (this queue's
    /// own buffer, or the packets its interface committed ahead, `world::ahead`):
    /// updates the average and the count, and admits, marks or drops. Drop class 0 and
    /// no scaling but byte mode's when called from outside the queue. Always inlined:
    /// it runs for every arrival at a RED queue.
    #[inline(always)]
    pub(crate) fn judge(
        &mut self,
        now: SimTime,
        occ: Occupancy,
        pkt: &Packet,
        class: usize,
        scale: f64,
    ) -> Judged {
        let (q, scale) = if self.byte_mode() {
            // F&J §4, byte mode: p_b ← p_b · PacketSize / (mean) packet size.
            let sz = pkt.size as f64 / self.s.mean_pkt_size.max(1) as f64;
            (occ.bytes as f64, scale * sz)
        } else {
            (occ.packets as f64, scale)
        };
        self.ewma.on_arrival(now, q);
        let v = decide(
            &self.s.params,
            self.s.gentle,
            self.s.wait,
            self.ewma.value(),
            scale,
            &mut self.counts[class],
            &mut self.rng,
        );
        let mut marked = false;
        match v {
            Verdict::Admit => {}
            Verdict::Early if self.s.ecn && matches!(pkt.ecn, Ecn::Ect | Ecn::Ce) => {
                marked = true;
            }
            Verdict::Early => {
                return Judged::Drop {
                    cause: DropCause::RedEarly,
                    marked: false,
                }
            }
            Verdict::Forced
                if !self.s.hard_drop && self.s.ecn && matches!(pkt.ecn, Ecn::Ect | Ecn::Ce) =>
            {
                marked = true;
            }
            Verdict::Forced => {
                return Judged::Drop {
                    cause: DropCause::RedForced,
                    marked: false,
                }
            }
        }
        if !self.s.limit.admits(occ, pkt.size) {
            // An overflow drops it (with the CE mark RED gave it), not counted as marked.
            return Judged::Drop {
                cause: DropCause::Overflow,
                marked,
            };
        }
        Judged::Admit { marked }
    }

    /// The packets waiting outside the buffer (committed ahead, `world::ahead`) ran out
    /// at `at`, when the last of them started: the idle time counts from then.
    #[inline]
    pub(crate) fn emptied_at(&mut self, at: SimTime) {
        self.ewma.on_empty(at);
    }
}

/// What [`Red::judge`] decided for one arrival.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Judged {
    /// Goes into the queue, marked CE if `marked`.
    Admit {
        /// RED marked it CE instead of dropping it early (ECN).
        marked: bool,
    },
    /// Discarded for `cause` (with the CE mark RED gave it first if `marked`).
    Drop {
        /// Why.
        cause: DropCause,
        /// Marked CE before an overflow dropped it.
        marked: bool,
    },
}

impl Red {
    /// [`Queue::dequeue`], handing the packet to `put` where it lies in the buffer.
    #[inline]
    pub fn dequeue_with<R>(&mut self, now: SimTime, put: impl FnOnce(&Packet) -> R) -> Option<R> {
        let p = self.buf.front()?;
        self.bytes -= p.size as u64;
        let r = put(p);
        self.buf.pop_front();
        if self.buf.is_empty() {
            self.ewma.on_empty(now);
        }
        Some(r)
    }
}

impl Queue for Red {
    fn enqueue(&mut self, now: SimTime, pkt: Packet, drops: &mut Drops) {
        self.enqueue_class(now, &pkt, drops, 0, 1.0);
    }

    fn dequeue(&mut self, now: SimTime, _drops: &mut Drops) -> Option<Packet> {
        let p = self.buf.pop_front()?;
        self.bytes -= p.size as u64;
        if self.buf.is_empty() {
            self.ewma.on_empty(now);
        }
        Some(p)
    }

    fn occupancy(&self) -> Occupancy {
        Occupancy {
            packets: self.buf.len() as u32,
            bytes: self.bytes,
        }
    }

    fn average(&self) -> Option<f64> {
        Some(self.ewma.value())
    }
}

fn d_min_th() -> f64 {
    5.0
}
fn d_max_th() -> f64 {
    15.0
}
fn d_max_p() -> f64 {
    0.1
}
pub(crate) fn d_w_q() -> f64 {
    0.002
}
pub(crate) fn d_mean_pkt_size() -> Bytes {
    Bytes(1000)
}
fn is_false(b: &bool) -> bool {
    !*b
}
fn is_true(b: &bool) -> bool {
    *b
}
fn d_true() -> bool {
    true
}

/// One RED curve in a scenario: `{ min_th, max_th, max_p }`, all three required (each
/// colour of the multi-colour queues has one).
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RedThresholds {
    /// Below this average nothing is dropped early [packets].
    pub min_th: f64,
    /// Average at which the probability reaches `max_p`; above it, forced drops [packets].
    pub max_th: f64,
    /// Early-drop probability at `max_th`, in (0, 1].
    pub max_p: f64,
}

impl RedThresholds {
    /// Thresholds from their three numbers.
    pub const fn new(min_th: f64, max_th: f64, max_p: f64) -> Self {
        RedThresholds {
            min_th,
            max_th,
            max_p,
        }
    }

    /// The curve as the mechanism takes it.
    pub fn params(&self) -> RedParams {
        RedParams {
            min_th: self.min_th,
            max_th: self.max_th,
            max_p: self.max_p,
        }
    }

    /// Checks the curve; `prefix` is `""` or `"dp1."` (the key of its table).
    pub fn validate(&self, prefix: &str) -> Result<(), ScenarioError> {
        if !(self.min_th >= 0.0 && self.min_th.is_finite()) {
            return Err(ScenarioError::new(
                format!("{prefix}min_th"),
                format!("expected min_th ≥ 0, found {}", self.min_th),
            ));
        }
        if !(self.max_th > self.min_th && self.max_th.is_finite()) {
            return Err(ScenarioError::new(
                format!("{prefix}max_th"),
                format!(
                    "thresholds out of order: expected max_th > min_th ({}), found {}",
                    self.min_th, self.max_th
                ),
            ));
        }
        check_unit_interval(&format!("{prefix}max_p"), self.max_p)
    }
}

/// Checks a key whose value must lie in (0, 1] (`max_p`, `w_q`).
pub(crate) fn check_unit_interval(key: &str, v: f64) -> Result<(), ScenarioError> {
    if v > 0.0 && v <= 1.0 {
        Ok(())
    } else {
        Err(ScenarioError::new(
            key,
            format!("expected {key} in (0, 1], found {v}"),
        ))
    }
}

/// Checks `mean_pkt_size` (an IP packet: 1 to 65535 bytes).
pub(crate) fn check_mean_pkt_size(b: Bytes) -> Result<(), ScenarioError> {
    if (1..=65_535).contains(&b.0) {
        Ok(())
    } else {
        Err(ScenarioError::new(
            "mean_pkt_size",
            format!("expected mean_pkt_size in 1..=65535 bytes, found {}", b.0),
        ))
    }
}

/// RED's keys in a scenario (`kind = "red"`); ERED's table is these plus `factor`.
///
/// Limits are `limit` [packets] or `limit_bytes` [bytes], never both; with neither,
/// 100 packets. Thresholds are in the unit of the limit: packets, or bytes when
/// `limit_bytes` is given (byte mode).
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RedConfig {
    /// Limit [packets]; default 100 when `limit_bytes` is not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Limit [bytes], instead of `limit`; makes RED byte-mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_bytes: Option<Bytes>,
    /// Minimum threshold [packets, or bytes in byte mode]; default 5.
    #[serde(default = "d_min_th")]
    pub min_th: f64,
    /// Maximum threshold [packets, or bytes in byte mode]; default 15.
    #[serde(default = "d_max_th")]
    pub max_th: f64,
    /// Early-drop probability at `max_th`, in (0, 1]; default 0.1.
    #[serde(default = "d_max_p")]
    pub max_p: f64,
    /// Weight of the average, in (0, 1]; default 0.002 (F&J §6).
    #[serde(default = "d_w_q")]
    pub w_q: f64,
    /// Gentle variant (p from max_p to 1 between max_th and 2·max_th); default false.
    #[serde(default, skip_serializing_if = "is_false")]
    pub gentle: bool,
    /// Mark ECN-capable packets instead of dropping them early; default false.
    #[serde(default, skip_serializing_if = "is_false")]
    pub ecn: bool,
    /// ns-2/ns-3 "wait" spacing: no early drop until 1/p_b packets since the last,
    /// then p_b/(2 − count·p_b), so gaps are uniform on [1/p_b, 2/p_b] (a third of
    /// F&J's early-drop rate at the same average); default false (F&J 1993).
    #[serde(default, skip_serializing_if = "is_false")]
    pub wait: bool,
    /// Mean packet size for idle decay and byte-mode scaling [bytes]; default 1000.
    #[serde(default = "d_mean_pkt_size")]
    pub mean_pkt_size: Bytes,
    /// Forced drops drop ECN-capable packets too; default true. `false` (needs `ecn`)
    /// marks them instead, as ns-3's `UseHardDrop` false, and allows `min_th = max_th`:
    /// with `w_q = 1` that is DCTCP's step marking at an instantaneous queue of K
    /// packets (RFC 8257 §3.1).
    #[serde(default = "d_true", skip_serializing_if = "is_true")]
    pub hard_drop: bool,
}

impl Default for RedConfig {
    /// F&J's example parameters: thresholds 5 and 15 packets, max_p 0.1, w_q 0.002.
    fn default() -> Self {
        RedConfig {
            limit: None,
            limit_bytes: None,
            min_th: d_min_th(),
            max_th: d_max_th(),
            max_p: d_max_p(),
            w_q: d_w_q(),
            gentle: false,
            ecn: false,
            wait: false,
            mean_pkt_size: d_mean_pkt_size(),
            hard_drop: true,
        }
    }
}

impl RedConfig {
    /// Checks every parameter; keys are relative to the queue table.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        Limit::check_keys(self.limit, self.limit_bytes)?;
        let curve = RedThresholds::new(self.min_th, self.max_th, self.max_p);
        if !self.hard_drop && !self.ecn {
            return Err(ScenarioError::new(
                "hard_drop",
                "expected hard_drop = false only with ecn = true (it marks instead of dropping)",
            ));
        }
        if !self.hard_drop && self.min_th == self.max_th {
            // A step: nothing below the threshold, a mark at or above it.
            RedThresholds::new(self.min_th, self.min_th + 1.0, self.max_p).validate("")?;
        } else {
            curve.validate("")?;
        }
        check_unit_interval("w_q", self.w_q)?;
        check_mean_pkt_size(self.mean_pkt_size)?;
        match Limit::from_keys(self.limit, self.limit_bytes) {
            Limit::Packets(n) if (n as f64) < curve.max_th => Err(ScenarioError::new(
                "limit",
                format!(
                    "expected limit ≥ max_th ({} packets) so RED acts before the buffer \
                     overflows, found {n}",
                    curve.max_th
                ),
            )),
            Limit::Bytes(b) if (b as f64) < curve.max_th => Err(ScenarioError::new(
                "limit_bytes",
                format!(
                    "expected limit_bytes ≥ max_th ({} bytes in byte mode) so RED acts \
                     before the buffer overflows, found {b}",
                    curve.max_th
                ),
            )),
            _ => Ok(()),
        }
    }

    /// The mechanism's settings; call [`RedConfig::validate`] first.
    pub fn settings(&self) -> RedSettings {
        RedSettings {
            limit: Limit::from_keys(self.limit, self.limit_bytes),
            params: RedThresholds::new(self.min_th, self.max_th, self.max_p).params(),
            w_q: self.w_q,
            gentle: self.gentle,
            ecn: self.ecn,
            wait: self.wait,
            mean_pkt_size: self.mean_pkt_size.0 as u32,
            hard_drop: self.hard_drop,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::time::Dur;

    pub(crate) fn pkt(uid: u64, size: u32) -> Packet {
        Packet {
            uid,
            size,
            ..Default::default()
        }
    }

    pub(crate) fn settings(limit: Limit, min_th: f64, max_th: f64, max_p: f64) -> RedSettings {
        RedSettings {
            limit,
            params: RedParams {
                min_th,
                max_th,
                max_p,
            },
            w_q: 0.002,
            gentle: false,
            ecn: false,
            wait: false,
            mean_pkt_size: 1000,
            hard_drop: true,
        }
    }

    /// Outcome counts of [`hold`].
    #[derive(Debug, Default)]
    pub(crate) struct Held {
        pub arrivals: u64,
        pub early: u64,
        pub forced: u64,
        pub marked: u64,
        pub gaps: Vec<u64>,
    }

    /// Fills `q` with `fill` packets of `size`, then offers `n` more arrivals of
    /// `size` (built by `mk`), dequeuing one packet for each admitted arrival so the
    /// queue (and, after warm-up, the average) stays at `fill`. The first `warm`
    /// arrivals are not counted.
    pub(crate) fn hold<Q: Queue>(
        q: &mut Q,
        fill: u32,
        size: u32,
        warm: u64,
        n: u64,
        mut mk: impl FnMut(u64) -> Packet,
    ) -> Held {
        let mut d = Drops::default();
        let t = SimTime::ZERO;
        for i in 0..fill {
            q.enqueue(t, pkt(i as u64, size), &mut d);
        }
        assert!(d.is_empty(), "prefill must not drop: {d:?}");
        let mut h = Held::default();
        let mut since = 0u64;
        for i in 0..warm + n {
            let mut p = mk(i);
            p.size = size;
            q.enqueue(t, p, &mut d);
            let counted = i >= warm;
            let dropped = d.dropped.first().map(|x| x.1);
            let acted = dropped.is_some() || d.ecn_marked > 0;
            if counted {
                h.arrivals += 1;
                since += 1;
                match dropped {
                    Some(DropCause::RedEarly) => h.early += 1,
                    Some(DropCause::RedForced) => h.forced += 1,
                    Some(c) => panic!("unexpected drop cause {c:?}"),
                    None => {}
                }
                h.marked += d.ecn_marked as u64;
                if acted {
                    h.gaps.push(since);
                    since = 0;
                }
            }
            if dropped.is_none() {
                q.dequeue(t, &mut d).unwrap();
            }
            d.clear();
        }
        h
    }

    /// Distribution of the gap X between marks with count spacing: p_a = p_b/(1 − n·p_b)
    /// for the (n+1)-th packet gives P(X = n) = p_b for n ≤ ⌊1/p_b⌋ (F&J §7), and the
    /// remaining mass 1 − ⌊1/p_b⌋·p_b at ⌊1/p_b⌋ + 1, where p_a reaches 1.
    pub(crate) fn gap_dist(pb: f64) -> Vec<f64> {
        let m = (1.0 / pb + 1e-9).floor() as usize;
        let mut d = vec![pb; m];
        let rest = 1.0 - m as f64 * pb;
        if rest > 1e-9 {
            d.push(rest);
        }
        d
    }

    /// Mean early-drop rate 1/E[X] with count spacing. When 1/p_b is an integer, X is
    /// uniform on {1, …, 1/p_b}, E[X] = (1 + 1/p_b)/2 and the rate is 2·p_b/(1 + p_b).
    pub(crate) fn spaced_rate(pb: f64) -> f64 {
        let ex: f64 = gap_dist(pb)
            .iter()
            .enumerate()
            .map(|(i, p)| (i + 1) as f64 * p)
            .sum();
        1.0 / ex
    }

    /// Asserts `got` marks in `n` arrivals is within `k` standard errors of the spaced
    /// rate for `pb` (renewal process: Var(count) ≈ n·Var X / E[X]³).
    pub(crate) fn assert_rate(got: u64, n: u64, pb: f64, k: f64) {
        let d = gap_dist(pb);
        let moment = |j: i32| -> f64 {
            d.iter()
                .enumerate()
                .map(|(i, p)| ((i + 1) as f64).powi(j) * p)
                .sum()
        };
        let ex = moment(1);
        let vx = moment(2) - ex * ex;
        let sd = (vx / (ex * ex * ex) / n as f64).sqrt();
        let rate = got as f64 / n as f64;
        let want = 1.0 / ex;
        assert!(
            (rate - want).abs() < k * sd,
            "rate {rate:.5} vs count-spaced {want:.5} (p_b = {pb}, sd {sd:.5})"
        );
    }

    #[test]
    fn spaced_rate_is_two_p_over_one_plus_p_for_integral_one_over_p() {
        for pb in [0.5, 0.25, 0.1, 0.05, 0.02] {
            assert!((spaced_rate(pb) - 2.0 * pb / (1.0 + pb)).abs() < 1e-12);
        }
        // 1/p_b = 2.5: P(X=1) = P(X=2) = 0.4, P(X=3) = 0.2, E[X] = 1.8.
        assert!((spaced_rate(0.4) - 1.0 / 1.8).abs() < 1e-12);
    }

    #[test]
    fn early_drop_rate_matches_count_spaced_formula() {
        // Average held at 10 between min_th 5 and max_th 15, max_p 0.1: p_b = 0.05.
        let mut q = Red::new(
            settings(Limit::Packets(100), 5.0, 15.0, 0.1),
            Rate::from_mbps(10),
            RngStream::from_seed(1),
        );
        let n = 200_000;
        let h = hold(&mut q, 10, 1000, 20_000, n, |i| pkt(1000 + i, 1000));
        assert!((q.average().unwrap() - 10.0).abs() < 1e-6);
        assert_eq!(h.forced, 0);
        // Uniform gaps on 1..=20: 2·0.05/1.05 = 0.0952, not 0.05 (geometric gaps) and
        // not 0.1 (Fig. 2's literal count order); the tolerance separates all three.
        assert_rate(h.early, n, 0.05, 5.0);
        assert!(h.gaps.iter().all(|&g| (1..=20).contains(&g)));
        let mean_gap = h.gaps.iter().sum::<u64>() as f64 / h.gaps.len() as f64;
        assert!((mean_gap - 10.5).abs() < 0.15, "{mean_gap}");
        assert!(h.gaps.contains(&20) && h.gaps.contains(&1));
    }

    #[test]
    fn wait_spacing_makes_gaps_uniform_between_one_and_two_over_p() {
        // p_b = 0.05 as above; with `wait` nothing drops until 20 packets have passed,
        // then the hazard 0.05/(2 − k·0.05) = 1/(20 − j) makes the gap uniform on
        // 21..=40 (mean 30.5): a third of F&J's early-drop rate at the same average.
        let mut s = settings(Limit::Packets(100), 5.0, 15.0, 0.1);
        s.wait = true;
        let mut q = Red::new(s, Rate::from_mbps(10), RngStream::from_seed(4));
        let n = 200_000;
        let h = hold(&mut q, 10, 1000, 20_000, n, |i| pkt(1000 + i, 1000));
        // The first gap started before counting began.
        let gaps = &h.gaps[1..];
        assert!(
            gaps.iter().all(|&g| (20..=41).contains(&g)),
            "{:?}",
            &gaps[..10]
        );
        // Expected mean from the hazard with the exact p_b of the held average (it sits
        // within 1e-6 of 10, so whether count·p_b reaches 1 at 20 is a rounding matter).
        let pb = 0.1 * (q.average().unwrap() - 5.0) / 10.0;
        let (mut survive, mut mean) = (1.0, 0.0);
        for k in 0..100u32 {
            let cp = k as f64 * pb;
            let hz = if cp < 1.0 {
                0.0
            } else if cp < 2.0 {
                pb / (2.0 - cp)
            } else {
                1.0
            };
            mean += survive * hz * (k + 1) as f64;
            survive *= 1.0 - hz;
        }
        assert!((29.5..=31.5).contains(&mean), "{mean}");
        let got = gaps.iter().sum::<u64>() as f64 / gaps.len() as f64;
        // ~6 500 gaps with sd 5.8: standard error 0.07.
        assert!((got - mean).abs() < 0.3, "{got} vs {mean}");
    }

    #[test]
    fn below_min_th_nothing_and_above_max_th_everything() {
        let mk = || {
            Red::new(
                settings(Limit::Packets(100), 5.0, 15.0, 0.1),
                Rate::from_mbps(10),
                RngStream::from_seed(2),
            )
        };
        let h = hold(&mut mk(), 4, 1000, 20_000, 10_000, |i| pkt(i, 1000));
        assert_eq!((h.early, h.forced), (0, 0));
        let h = hold(&mut mk(), 16, 1000, 20_000, 10_000, |i| pkt(i, 1000));
        assert_eq!((h.early, h.forced), (0, 10_000));
    }

    #[test]
    fn average_decays_over_idle_time() {
        // w_q = 1/2 so the numbers can be checked by hand; 1000 B at 10 Mb/s = 800 µs.
        let mut s = settings(Limit::Packets(100), 5.0, 15.0, 0.1);
        s.w_q = 0.5;
        let mut q = Red::new(s, Rate::from_mbps(10), RngStream::from_seed(3));
        let mut d = Drops::default();
        let t0 = SimTime::ZERO;
        for i in 0..3 {
            q.enqueue(t0, pkt(i, 1000), &mut d);
        }
        // Arrivals see q = 0 (idle since 0: m = 0), 1, 2: avg = 0, 0.5, 1.25.
        assert_eq!(q.average(), Some(1.25));
        let t1 = SimTime::from_millis(1);
        for _ in 0..3 {
            q.dequeue(t1, &mut d).unwrap();
        }
        // Idle for 4 typical packet times: avg = 1.25 · (1/2)^4 = 0.078125.
        let t2 = t1 + Dur::from_micros(4 * 800);
        q.enqueue(t2, pkt(3, 1000), &mut d);
        assert_eq!(q.average(), Some(0.078125));
        // Half a packet time later with the queue non-empty: plain EWMA with q = 1.
        q.enqueue(t2 + Dur::from_micros(400), pkt(4, 1000), &mut d);
        assert_eq!(q.average(), Some(0.078125 / 2.0 + 0.5));
        // A fractional idle period: 2.5 packet times → (1/2)^2.5.
        q.dequeue(t2, &mut d).unwrap();
        q.dequeue(t2, &mut d).unwrap();
        let a = q.average().unwrap();
        q.enqueue(t2 + Dur::from_micros(2000), pkt(5, 1000), &mut d);
        let want = a * 0.5f64.powf(2.5);
        assert!((q.average().unwrap() - want).abs() < 1e-12);
        assert!(d.is_empty());
    }

    #[test]
    fn gentle_region_and_its_forced_edge() {
        let mut s = settings(Limit::Packets(100), 5.0, 15.0, 0.1);
        s.gentle = true;
        let n = 100_000;
        // avg 20: p_b = 0.1 + 0.9·(20 − 15)/15 = 0.4; gaps 1, 2, 3 with probabilities
        // 0.4, 0.4, 0.2, so the rate is 1/1.8 (not 2p/(1+p): 1/p_b is not an integer).
        let mut q = Red::new(s, Rate::from_mbps(10), RngStream::from_seed(4));
        let h = hold(&mut q, 20, 1000, 20_000, n, |i| pkt(i, 1000));
        assert_eq!(h.forced, 0);
        assert_rate(h.early, n, 0.4, 5.0);
        // avg 31 > 2·max_th: forced, even when gentle (the average only approaches 30
        // from below when held at 30, hence 31).
        let mut q = Red::new(s, Rate::from_mbps(10), RngStream::from_seed(4));
        let h = hold(&mut q, 31, 1000, 20_000, 1000, |i| pkt(i, 1000));
        assert_eq!((h.early, h.forced), (0, 1000));
    }

    #[test]
    fn ecn_marks_early_and_still_drops_when_forced() {
        let mut s = settings(Limit::Packets(100), 5.0, 15.0, 0.1);
        s.ecn = true;
        let ect = |i| Packet {
            ecn: Ecn::Ect,
            ..pkt(i, 1000)
        };
        let n = 100_000;
        let mut q = Red::new(s, Rate::from_mbps(10), RngStream::from_seed(5));
        let h = hold(&mut q, 10, 1000, 20_000, n, ect);
        assert_eq!((h.early, h.forced), (0, 0));
        assert_rate(h.marked, n, 0.05, 5.0);
        // Marked packets leave with CE set.
        let mut d = Drops::default();
        let ce = (0..10)
            .filter(|_| q.dequeue(SimTime::ZERO, &mut d).unwrap().ecn == Ecn::Ce)
            .count();
        assert!(ce > 0);
        // Not-ECT packets are still dropped early.
        let mut q = Red::new(s, Rate::from_mbps(10), RngStream::from_seed(5));
        let h = hold(&mut q, 10, 1000, 20_000, n, |i| pkt(i, 1000));
        assert_eq!(h.marked, 0);
        assert_rate(h.early, n, 0.05, 5.0);
        // Above max_th ECT packets are dropped, not marked.
        let mut q = Red::new(s, Rate::from_mbps(10), RngStream::from_seed(5));
        let h = hold(&mut q, 16, 1000, 20_000, 1000, ect);
        assert_eq!((h.marked, h.forced), (0, 1000));
    }

    #[test]
    fn step_marking_at_an_instantaneous_threshold_with_hard_drop_off() {
        // DCTCP's marking (RFC 8257 §3.1) as ns-3's RED: min_th = max_th = K = 20,
        // w_q = 1, ECN, UseHardDrop false. An arrival finding ≥ 20 packets is marked.
        let c: RedConfig = toml::from_str(
            "limit = 30\nmin_th = 20\nmax_th = 20\nw_q = 1\nmax_p = 1\necn = true\nhard_drop = false",
        )
        .unwrap();
        c.validate().unwrap();
        let mut q = Red::new(c.settings(), Rate::from_mbps(10), RngStream::from_seed(8));
        let ect = |i| Packet {
            ecn: Ecn::Ect,
            ..pkt(i, 1000)
        };
        let mut d = Drops::default();
        let t = SimTime::ZERO;
        for i in 0..25 {
            q.enqueue(t, ect(i), &mut d);
        }
        assert_eq!(d.ecn_marked, 5, "arrivals 20..24 found 20..24 packets");
        assert!(d.dropped.is_empty());
        // A packet without ECT at or above K is dropped (forced).
        q.enqueue(t, pkt(99, 1000), &mut d);
        assert_eq!(d.dropped.last().map(|x| x.1), Some(DropCause::RedForced));
        // Down to 19 packets: the next arrival is not marked; the one after is.
        for _ in 0..6 {
            q.dequeue(t, &mut d).unwrap();
        }
        d.clear();
        q.enqueue(t, ect(100), &mut d);
        assert_eq!(d.ecn_marked, 0);
        q.enqueue(t, ect(101), &mut d);
        assert_eq!(d.ecn_marked, 1);
        // The buffer limit still drops, marked or not.
        d.clear();
        for i in 0..15 {
            q.enqueue(t, ect(200 + i), &mut d);
        }
        assert_eq!(d.dropped.len(), 6, "30 packets at most");
        // An empty queue at the very instant it emptied: the average is 0 again.
        while q.dequeue(t, &mut d).is_some() {}
        d.clear();
        q.enqueue(t, ect(300), &mut d);
        assert_eq!((d.ecn_marked, q.average()), (0, Some(0.0)));
        // With hard drops (the default) the same arrivals are dropped, not marked; and
        // equal thresholds are refused then, as is hard_drop = false without ECN.
        let hard = RedConfig {
            hard_drop: true,
            max_th: 21.0,
            ..c
        };
        let mut q = Red::new(
            hard.settings(),
            Rate::from_mbps(10),
            RngStream::from_seed(8),
        );
        let mut d = Drops::default();
        for i in 0..25 {
            q.enqueue(t, ect(i), &mut d);
        }
        assert_eq!((d.ecn_marked, d.dropped.len()), (0, 4));
        let e = RedConfig {
            hard_drop: true,
            ..c
        };
        assert_eq!(e.validate().unwrap_err().key, "max_th");
        let e = RedConfig { ecn: false, ..c };
        assert_eq!(e.validate().unwrap_err().key, "hard_drop");
    }

    #[test]
    fn byte_mode_averages_bytes_and_scales_by_size() {
        // Thresholds 2500..7500 B, max_p 0.1, mean 1000 B, occupancy held at 5000 B:
        // p_b = 0.05 · size/1000.
        let s = settings(Limit::Bytes(100_000), 2500.0, 7500.0, 0.1);
        let n = 200_000;
        let mut q = Red::new(s, Rate::from_mbps(10), RngStream::from_seed(6));
        let h = hold(&mut q, 10, 500, 20_000, n, |i| pkt(i, 500));
        assert!((q.average().unwrap() - 5000.0).abs() < 1e-6);
        assert_rate(h.early, n, 0.025, 5.0);
        let mut q = Red::new(s, Rate::from_mbps(10), RngStream::from_seed(6));
        let h = hold(&mut q, 2, 2500, 20_000, n, |i| pkt(i, 2500));
        assert!((q.average().unwrap() - 5000.0).abs() < 1e-6);
        assert_rate(h.early, n, 0.125, 5.0);
    }

    #[test]
    fn overflow_when_buffer_full_below_min_th() {
        // Limit 3 packets, thresholds far above: only tail drops.
        let s = settings(Limit::Packets(3), 50.0, 60.0, 0.1);
        let mut q = Red::new(s, Rate::from_mbps(10), RngStream::from_seed(7));
        let mut d = Drops::default();
        for i in 0..5 {
            q.enqueue(SimTime::ZERO, pkt(i, 100), &mut d);
        }
        let causes: Vec<_> = d.dropped.iter().map(|x| (x.0.uid, x.1)).collect();
        assert_eq!(
            causes,
            vec![(3, DropCause::Overflow), (4, DropCause::Overflow)]
        );
    }
}

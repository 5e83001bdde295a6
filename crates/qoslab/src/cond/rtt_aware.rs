//! RTT-aware three-colour markers for Assured Forwarding aggregates of many TCP
//! micro-flows (P3: Habib, Bhargava & Fahmy, ICC 2002, §III and Fig. 1).
//!
//! One marker conditions one aggregate at its edge. Every scheme measures the
//! aggregate's rate with a TSW estimator (RFC 2859 §3) and marks each packet DP0
//! (green), DP1 (yellow) or DP2 (red):
//!
//! - `standard`: TSW3CM (RFC 2859 §4) with CIR and PIR — P3's "standard conditioner".
//! - `rtt` (Nandy et al. 2000, P3 §II): above the target (CIR) a packet is out of
//!   profile with the probability of Fig. 1 line 4; an out-of-profile packet is DP2 with
//!   probability q = (minRTT/aggregateRTT)², DP1 otherwise.
//! - `rtt_rto` (P3 Fig. 1): the same with q = (minRTT/aggregateRTT)²·(minRTO/aggregateRTO).
//!   The aggregate holding both minima would get q = 1 (every out-of-profile packet DP2);
//!   P3 §III marks it "based on the ratio of its own RTT and RTO" instead: q = RTT/RTO of
//!   the aggregate itself. Which aggregate gets its own ratio is `rto_rule` ([`RtoRule`]):
//!   `min_rtt_aggregate` (the P3 reproduction's headline) the one holding the minimum
//!   RTT, whatever its RTO — P3 §III gives the rule's reason as "Otherwise, the right
//!   hand side of (9) may become 1 and all packets of the flow with minimum RTT will be
//!   marked as DP2", a harm to the minimum-RTT flow; `min_rtt_and_rto` only the one
//!   holding both minima, read literally, which has a cliff: with its RTO a little above
//!   another aggregate's, q jumps from RTT/RTO to minRTO/RTO ≈ 1. The basic `rtt` scheme
//!   keeps q = 1 for the minimum-RTT aggregate, which is the behaviour P3 §III says this
//!   rule avoids.
//!
//!   Both of the paper's readings are discontinuous along the RTT axis: the minimum-RTT
//!   aggregate gets q = RTT/RTO ≈ 0.1 while one a hair slower gets Fig. 1's
//!   q ≈ (minRTT/RTT)² ≈ 1, so a 5 % RTT difference between two aggregates decides a
//!   ≈ 4 × goodput split, and the faster one wins: the RTT bias P3 sets out to mitigate.
//!   `capped` (the library default) gives every aggregate q = min(Fig. 1's q,
//!   minRTT/minRTO): the exception's own ratio, taken from the group's minima, becomes a
//!   ceiling for the whole group. It is continuous in every aggregate's RTT and RTO (a
//!   minimum of continuous functions), never marks a longer-RTT aggregate harder than a
//!   shorter one with the same RTO (Fig. 1's q falls with RTT, the ceiling is shared),
//!   keeps P3 §III's promise (no aggregate's out-of-profile packets all DP2), and equals
//!   the paper's rule wherever Fig. 1's q is below the ceiling and for an aggregate
//!   holding both minima — e.g. P3 Fig. 4's 20 ms aggregate beside 100–200 ms ones.
//!   Aggregates within about √(minRTO/minRTT) of the minimum RTT (≈ 3 × at 20 ms and
//!   200 ms) share the ceiling instead of Fig. 1's steep (minRTT/RTT)².
//!
//! Small-window protection (`small_window = k`, Feroz et al., P3 §III "SW"): a TCP
//! packet whose micro-flow has cwnd < k segments is DP0. With `rtt` this is P3's
//! RTT-SW. A protected packet that would have been DP1/DP2 is owed: later packets of
//! the aggregate that would be DP0 (and are not themselves protected) carry the owed
//! colour until the debt in bytes is paid (P3 §VI: "the flow profile must still be
//! preserved by marking later packets yellow or red"). When most packets are protected
//! there are too few DP0 packets left to repay, so payback alone does not keep the
//! profile; with `protect_bound = "cir"` (default) a packet is protected only while the
//! aggregate's DP0 rate (a TSW estimate over `window` of the bytes leaving DP0, this
//! packet included) stays at or below CIR, so DP0 ≤ CIR holds over the TSW window.
//! `protect_bound = "none"` protects every small-window packet (payback only).
//!
//! Where RTT, RTO and cwnd come from: `rtt = "oracle"` / `rto = "oracle"` read what the
//! senders stamped on their segments ([`crate::packet::SenderView`]); the aggregate's
//! value is the mean over its micro-flows of their latest smoothed RTT (RTO). A fixed
//! duration instead gives the value directly. The minimum RTT and RTO over aggregates is
//! exchanged between the markers of one `group` (see [`Exchange`]) every `exchange`
//! interval.
//!
//! The probability of DP0 above the target: P3's Fig. 1 draws DP0 with probability
//! (1 − p)², p = (measured − target)/measured, while its text says a packet is DP1/DP2
//! "with probability p" (1 − p for DP0, as Nandy et al.). `dp0 = "figure"` (default)
//! follows the figure, `dp0 = "text"` the text.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};

use super::action::{mark, Codepoints};
use super::check::check_pir;
use super::tsw::{Tsw3cm, TswEstimator, TswSettings, DEFAULT_TSW_WINDOW};
use super::{Action, Conditioner, MeterAction};
use crate::config::ScenarioError;
use crate::packet::{Colour, Packet};
use crate::rng::RngStream;
use crate::time::{Dur, Rate, SimTime};

/// Which marking algorithm (P3 §II–III).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scheme {
    /// TSW3CM with CIR/PIR (RFC 2859; P3's standard conditioner).
    Standard,
    /// Nandy et al.'s RTT-aware marker: DP2 share ∝ (minRTT/RTT)².
    Rtt,
    /// P3 Fig. 1: DP2 share ∝ (minRTT/RTT)²·(minRTO/RTO).
    #[default]
    RttRto,
}

/// The probability of DP0 above the target (see the module doc).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dp0Rule {
    /// (1 − p)², as P3 Fig. 1 line 4 draws it.
    #[default]
    Figure,
    /// 1 − p, as P3 §III's text and Nandy et al.
    Text,
}

/// Which aggregate of an `rtt_rto` group is marked by its own RTT/RTO ratio (P3 §III;
/// module doc).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RtoRule {
    /// Every aggregate: q = min(Fig. 1's q, minRTT/minRTO over the group), continuous in
    /// every RTT and RTO (module doc); the library default.
    #[default]
    Capped,
    /// The aggregate holding the minimum RTT (as last published to the group): q =
    /// RTT/RTO, continuous in its RTO, discontinuous in the RTTs (P3 §III as the P3
    /// reproduction reads it).
    MinRttAggregate,
    /// Only an aggregate whose Fig. 1 q reaches 1 (both minima): q jumps from RTT/RTO to
    /// minRTO/RTO when its RTO rises past another aggregate's.
    MinRttAndRto,
}

/// What bounds small-window protection (P3 §VI; module doc).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProtectBound {
    /// Protect only while the aggregate's DP0 rate (TSW over `window`) stays ≤ CIR.
    #[default]
    Cir,
    /// Protect every small-window packet; only payback restores the profile.
    None,
}

/// Where an aggregate's RTT (or RTO) comes from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Source {
    /// Read from the senders ([`crate::packet::SenderView`]), averaged over micro-flows.
    #[default]
    Oracle,
    /// Measured at the marker from data segments and their returning ACKs ([`Passive`]).
    Passive,
    /// A fixed value.
    Fixed(Dur),
}

impl Serialize for Source {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Source::Oracle => s.serialize_str("oracle"),
            Source::Passive => s.serialize_str("passive"),
            Source::Fixed(d) => d.serialize(s),
        }
    }
}

const SOURCE_EXPECTED: &str = "\"oracle\", \"passive\" or a duration like \"100ms\"";

struct SourceVisitor;

impl<'de> Visitor<'de> for SourceVisitor {
    type Value = Source;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(SOURCE_EXPECTED)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Source, E> {
        match v {
            "oracle" => Ok(Source::Oracle),
            "passive" => Ok(Source::Passive),
            _ => crate::units::parse_dur(v)
                .map(Source::Fixed)
                .map_err(|e| E::custom(format!("expected {SOURCE_EXPECTED}: {e}"))),
        }
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Source, E> {
        if !(v > 0.0 && v.is_finite()) {
            return Err(E::custom(format!("expected {SOURCE_EXPECTED}, found {v}")));
        }
        Ok(Source::Fixed(Dur::from_secs_f64(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Source, E> {
        self.visit_f64(v as f64)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Source, E> {
        self.visit_f64(v as f64)
    }
}

impl<'de> Deserialize<'de> for Source {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(SourceVisitor)
    }
}

fn default_window() -> Dur {
    DEFAULT_TSW_WINDOW
}

/// The RTT-aware marker's keys in a scenario (`kind = "rtt_aware"`, P3).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RttAwareConfig {
    /// `standard`, `rtt` or `rtt_rto` (default).
    #[serde(default)]
    pub scheme: Scheme,
    /// Committed (target) rate of the aggregate.
    #[serde(deserialize_with = "crate::units::de_rate_or_zero")]
    pub cir: Rate,
    /// Peak rate (≥ CIR); required by `standard` (TSW3CM), unused by the others.
    #[serde(default)]
    pub pir: Option<Rate>,
    /// TSW estimator window (default 1 s).
    #[serde(default = "default_window")]
    pub window: Dur,
    /// Small-window protection: DP0 while the micro-flow's cwnd < k segments (0 = off).
    #[serde(default)]
    pub small_window: u32,
    /// Pay protected packets back by marking later ones (default true; P3 §VI).
    #[serde(default = "yes")]
    pub payback: bool,
    /// Bound on small-window protection: `"cir"` (default, DP0 rate ≤ CIR) or `"none"`.
    #[serde(default)]
    pub protect_bound: ProtectBound,
    /// How `rtt_rto` keeps the minimum-RTT aggregate off q = 1: `"capped"` (default,
    /// continuous), `"min_rtt_aggregate"` or `"min_rtt_and_rto"` (P3 §III; module doc).
    #[serde(default)]
    pub rto_rule: RtoRule,
    /// The aggregate's RTT: `"oracle"` (default), `"passive"` or a duration.
    #[serde(default)]
    pub rtt: Source,
    /// The aggregate's RTO: `"oracle"` (default), `"passive"` or a duration.
    #[serde(default)]
    pub rto: Source,
    /// Lower bound of the passive estimator's RTO (RFC 6298 §2.4; default 200 ms, as
    /// qoslab's TCP senders).
    #[serde(default = "default_min_rto")]
    pub min_rto: Dur,
    /// Passive estimator: each micro-flow's RTT is the minimum of its samples over this
    /// window (default 10 s), which leaves queueing out; 0 = its smoothed RTT (RFC 6298
    /// SRTT, queueing included).
    #[serde(default = "default_min_window")]
    pub min_window: Dur,
    /// Markers of one group share the minimum RTT and RTO over their aggregates.
    #[serde(default)]
    pub group: Option<String>,
    /// How often a marker publishes its RTT/RTO to the group and reads the minima
    /// (default 1 s; 0 = on every packet).
    #[serde(default = "default_exchange")]
    pub exchange: Dur,
    /// DP0 probability above the target: `figure` ((1 − p)², default) or `text` (1 − p).
    #[serde(default)]
    pub dp0: Dp0Rule,
    /// DSCP per colour.
    #[serde(default)]
    pub dscp: Codepoints,
}

fn yes() -> bool {
    true
}

fn default_min_rto() -> Dur {
    Dur::from_millis(200)
}

fn default_min_window() -> Dur {
    Dur::from_secs(10)
}

fn default_exchange() -> Dur {
    Dur::from_secs(1)
}

impl RttAwareConfig {
    /// Checks the rates, window and codepoints.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        if self.window == Dur::ZERO {
            return Err(ScenarioError::new(
                "window",
                "the TSW window must be positive",
            ));
        }
        match (self.scheme, self.pir) {
            (Scheme::Standard, None) => {
                return Err(ScenarioError::new(
                    "pir",
                    "the standard scheme (TSW3CM, RFC 2859) needs a peak rate `pir`",
                ))
            }
            (_, Some(pir)) => check_pir(self.cir, pir, "RFC 2859 §4")?,
            _ => {}
        }
        for (k, s) in [("rtt", self.rtt), ("rto", self.rto)] {
            if s == Source::Fixed(Dur::ZERO) {
                return Err(ScenarioError::new(
                    k,
                    format!("expected {SOURCE_EXPECTED}, found 0"),
                ));
            }
        }
        if self.min_rto == Dur::ZERO {
            return Err(ScenarioError::new(
                "min_rto",
                "the passive estimator's RTO floor must be positive",
            ));
        }
        if self.group.as_deref() == Some("") {
            return Err(ScenarioError::new("group", "a group name cannot be empty"));
        }
        self.dscp.validate()
    }

    /// The marker, drawing from `rng`; call [`RttAwareConfig::validate`] first.
    pub fn build(&self, rng: RngStream) -> RttAware {
        RttAware::new(self.clone(), rng)
    }
}

/// One member's slot in an [`Exchange`]: the aggregate RTT and RTO it last published [µs].
type Slot = Option<(u64, u64)>;

/// The minimum RTT and RTO over the aggregates of one group of markers (P3 §VI: "the
/// edge routers need to exchange this information"). Each member publishes its values
/// at most once per exchange interval and reads the minima at the same moment.
#[derive(Debug, Default)]
pub struct Exchange {
    slots: Mutex<Vec<Slot>>,
}

impl Exchange {
    /// Adds a member; returns its slot index.
    pub fn join(&self) -> usize {
        let mut s = self.slots.lock().expect("exchange lock");
        s.push(None);
        s.len() - 1
    }

    /// Publishes `mine` into slot `i` and returns the minimum RTT and RTO over every
    /// member that has published (each minimum on its own).
    pub fn publish(&self, i: usize, mine: Slot) -> Slot {
        let mut s = self.slots.lock().expect("exchange lock");
        s[i] = mine;
        let rtt = s.iter().flatten().map(|v| v.0).min()?;
        let rto = s.iter().flatten().map(|v| v.1).min()?;
        Some((rtt, rto))
    }
}

/// Mean of the micro-flows' latest smoothed RTT and RTO, from the senders' stamps.
#[derive(Clone, Debug, Default)]
struct OracleMean {
    latest: HashMap<u32, (u32, u32)>,
    sum_rtt: u64,
    sum_rto: u64,
}

impl OracleMean {
    fn update(&mut self, flow: u32, rtt_us: u32, rto_us: u32) {
        if let Some((r, o)) = self.latest.insert(flow, (rtt_us, rto_us)) {
            self.sum_rtt -= r as u64;
            self.sum_rto -= o as u64;
        }
        self.sum_rtt += rtt_us as u64;
        self.sum_rto += rto_us as u64;
    }

    fn mean(&self) -> Option<(u64, u64)> {
        let n = self.latest.len() as u64;
        (n > 0).then(|| (self.sum_rtt / n, self.sum_rto / n))
    }
}

/// One micro-flow as the passive estimator sees it.
#[derive(Clone, Debug)]
struct PassiveFlow {
    /// The node that sends its data (ACKs come from the other end).
    data_src: crate::packet::NodeId,
    /// End sequence numbers of unacknowledged, never retransmitted segments and when
    /// they passed the marker, in sending order.
    pending: std::collections::VecDeque<(u64, SimTime)>,
    /// Highest end sequence number sent, highest cumulative ACK seen.
    high_seq: u64,
    high_ack: u64,
    /// Highest end sequence number sent since the last retransmission: the top of the
    /// window the edge sees (reset to a retransmitted segment's end).
    flight_high: u64,
    /// RTT samples of the last `min_window` that may still be the minimum (increasing
    /// in time and in value: a monotonic deque).
    recent: std::collections::VecDeque<(SimTime, Dur)>,
    /// Largest payload seen (the micro-flow's segment size).
    mss: u32,
    est: crate::tcp::RttEstimator,
}

/// The passive RTT/RTO estimator of an edge marker (`rtt = "passive"`, P3 §VI's
/// "future work"): it must see both directions of its aggregate (`at = "<edge
/// router>"`). Per micro-flow it remembers when each segment's end sequence number
/// passed, and when a returning cumulative ACK covers it takes the elapsed time as one
/// RTT sample (the latest segment covered). Karn's rule: a segment that starts below the
/// highest sequence number already sent is a retransmission; it and every segment still
/// pending after it are never sampled. Samples are smoothed per micro-flow as RFC 6298
/// (SRTT, RTTVAR; RTO = max(SRTT + 4·RTTVAR, `min_rto`)); a micro-flow's RTT is the
/// minimum of its samples over the last `min_window` (its SRTT when that is 0), so
/// queueing, which inflates every sample but the least delayed, stays out as it does in
/// the propagation RTT the paper's markers compare. The aggregate's values are the mean
/// over micro-flows, as the oracle's. The RTT seen is from the marker to the receiver and
/// back: delay between sender and marker is not in it.
///
/// The window the edge sees (for small-window protection) is the data sent since the
/// last retransmission and not yet acknowledged: a retransmission means the sender's
/// window has just collapsed (to 1 segment after a timeout), so the estimate restarts
/// from the retransmitted segment instead of keeping the old highest sequence number.
#[derive(Clone, Debug)]
pub struct Passive {
    flows: HashMap<u32, PassiveFlow>,
    mean: OracleMean,
    min_rto: Dur,
    min_window: Dur,
    samples: u64,
}

/// The 32 bits a TCP sequence number has on the wire (RFC 9293 §3.4).
const SEQ_MASK: u64 = u32::MAX as u64;
/// Added to a micro-flow's first sequence number (see [`unwrap_seq`]).
const SEQ_LIFT: u64 = 1 << 32;

/// `x`'s 32 low bits read as the sequence number nearest `near` (serial-number
/// arithmetic, RFC 1982 §3.2 / RFC 9293 §3.4): real TCP numbers start at a random ISN
/// and wrap at 2³², so a live segment after the wrap has a smaller raw number than the
/// ones before it; the passive estimator keeps each micro-flow's numbers as 64-bit
/// values that keep growing across the wrap. The simulator's numbers (64-bit, from 0)
/// come out shifted by the same constant as the flow's first one, which changes no
/// difference.
fn unwrap_seq(x: u64, near: u64) -> u64 {
    let d = (x as u32).wrapping_sub(near as u32) as i32;
    near.wrapping_add_signed(d as i64)
}

/// What one packet is to the passive estimator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen {
    /// A data segment (or anything that is not a returning ACK): metered and marked.
    Data,
    /// A pure ACK travelling back to the data sender: neither metered nor marked.
    Ack,
}

impl Passive {
    /// An estimator with no micro-flow yet; `min_rto` floors every RTO; a micro-flow's
    /// RTT is the minimum sample over `min_window` (its SRTT when zero).
    pub fn new(min_rto: Dur, min_window: Dur) -> Self {
        Passive {
            flows: HashMap::new(),
            mean: OracleMean::default(),
            min_rto,
            min_window,
            samples: 0,
        }
    }

    /// Learns from `pkt` passing at `now`; says whether it is a returning ACK.
    pub fn observe(&mut self, now: SimTime, pkt: &Packet) -> Seen {
        let Some(h) = pkt.tcp() else {
            return Seen::Data;
        };
        let flow = pkt.flow.0;
        let ack_flag = h.flags & crate::packet::tcp_flags::ACK != 0;
        let syn = h.flags & crate::packet::tcp_flags::SYN != 0;
        if h.len == 0 {
            // Returning pure ACK (from the end that does not send the data).
            let back = match self.flows.get(&flow) {
                Some(f) => f.data_src != pkt.src,
                None => ack_flag && !syn,
            };
            if !(back && ack_flag) {
                return Seen::Data;
            }
            if let Some(f) = self.flows.get_mut(&flow) {
                let ack = unwrap_seq(h.ack, f.high_seq);
                f.high_ack = f.high_ack.max(ack);
                let mut covered = None;
                while f.pending.front().is_some_and(|&(end, _)| end <= ack) {
                    covered = f.pending.pop_front();
                }
                if let Some((_, sent)) = covered {
                    let r = now - sent;
                    f.est.sample(r);
                    self.samples += 1;
                    let us = |d: Dur| (d.as_nanos() / 1_000).min(u32::MAX as u64) as u32;
                    let rtt = if self.min_window == Dur::ZERO {
                        f.est.srtt().unwrap_or(r)
                    } else {
                        while f.recent.back().is_some_and(|&(_, v)| v >= r) {
                            f.recent.pop_back();
                        }
                        f.recent.push_back((now, r));
                        while f
                            .recent
                            .front()
                            .is_some_and(|&(t, _)| now - t > self.min_window)
                        {
                            f.recent.pop_front();
                        }
                        f.recent.front().map_or(r, |&(_, v)| v)
                    };
                    self.mean.update(flow, us(rtt).max(1), us(f.est.rto()));
                }
            }
            return Seen::Ack;
        }
        if self.flows.get(&flow).is_some_and(|f| f.data_src != pkt.src) {
            // Data from the other end of a two-way connection: its own sequence space
            // (another random ISN on real TCP), not this micro-flow's data. Its ACK field
            // is not read; pure ACKs carry the samples.
            return Seen::Data;
        }
        let min_rto = self.min_rto;
        // The first segment's number, lifted above 2³² so that earlier numbers stay
        // positive (only differences of sequence numbers matter here).
        let first = SEQ_LIFT | (h.seq & SEQ_MASK);
        let f = self.flows.entry(flow).or_insert_with(|| PassiveFlow {
            data_src: pkt.src,
            pending: Default::default(),
            high_seq: first,
            high_ack: first,
            flight_high: first,
            recent: Default::default(),
            mss: 0,
            est: crate::tcp::RttEstimator::new(
                min_rto,
                Dur::from_secs(1),
                Dur::from_secs(60),
                Dur::ZERO,
            ),
        });
        f.mss = f.mss.max(h.len);
        let seq = unwrap_seq(h.seq, f.high_seq);
        let end = seq + h.len as u64;
        if seq < f.high_seq {
            // Karn: ambiguous from here on.
            f.pending.retain(|&(e, _)| e <= seq);
            if seq <= f.high_ack {
                // It resends the oldest unacknowledged data (a timeout, a fast or a
                // partial-ACK retransmission): the window restarts at this segment.
                f.flight_high = end;
            } else {
                // Further segments resent after it (go-back-N) grow it again.
                f.flight_high = f.flight_high.max(end);
            }
        } else {
            f.pending.push_back((end, now));
            f.flight_high = f.flight_high.max(end);
        }
        f.high_seq = f.high_seq.max(end);
        Seen::Data
    }

    /// The mean over micro-flows of their smoothed RTT and RTO [µs], once sampled.
    pub fn mean(&self) -> Option<(u64, u64)> {
        self.mean.mean()
    }

    /// RTT samples taken so far.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// Micro-flows seen so far.
    pub fn flows(&self) -> usize {
        self.flows.len()
    }

    /// The micro-flow's data in flight since its last retransmission (highest sequence
    /// sent since then − highest ACK seen) in whole segments, rounded up: its window as
    /// the edge can see it.
    pub fn window_segs(&self, flow: u32) -> Option<u32> {
        let f = self.flows.get(&flow)?;
        let mss = f.mss.max(1) as u64;
        Some(f.flight_high.saturating_sub(f.high_ack).div_ceil(mss) as u32)
    }

    /// The smoothed RTT and RTO [µs] of one micro-flow, once sampled.
    pub fn flow(&self, flow: u32) -> Option<(u64, u64)> {
        let f = self.flows.get(&flow)?;
        let s = f.est.srtt()?;
        Some((s.as_nanos() / 1_000, f.est.rto().as_nanos() / 1_000))
    }
}

/// Packets marked by an [`RttAware`] marker, for tests and statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RttAwareCounts {
    /// Packets leaving DP0, DP1, DP2.
    pub colour: [u64; 3],
    /// Packets DP0 because their micro-flow's cwnd < k that would have been DP1/DP2.
    pub protected: u64,
    /// Packets marked DP1/DP2 to pay protected ones back.
    pub paid_back: u64,
    /// Small-window packets left DP1/DP2 because protecting them would have taken the
    /// DP0 rate above CIR (`protect_bound = "cir"`).
    pub refused: u64,
}

/// The RTT-aware marker of one aggregate (module doc; P3 Fig. 1).
#[derive(Clone, Debug)]
pub struct RttAware {
    /// Boxed: the marker is one variant of `AnyConditioner`, kept small.
    cfg: Box<RttAwareConfig>,
    est: TswEstimator,
    tsw3: Option<Tsw3cm>,
    rng: RngStream,
    oracle: OracleMean,
    passive: Option<Box<Passive>>,
    member: Option<(Arc<Exchange>, usize)>,
    next_exchange: SimTime,
    minima: Option<(u64, u64)>,
    /// What this marker published at the last exchange (with the minima read then).
    published: Option<(u64, u64)>,
    /// Whether it held the group's minimum RTT at the last exchange, and how many
    /// exchanges changed that (where the paper's own-ratio exception jumps).
    holder: Option<bool>,
    holder_changes: u32,
    /// TSW estimate of the bytes leaving DP0 (the protection bound).
    dp0_est: TswEstimator,
    /// Bytes owed as DP1 and as DP2 by protected packets.
    owed: [u64; 2],
    counts: RttAwareCounts,
    /// Whether the last packet through [`Conditioner::condition`] was metered (a
    /// returning ACK seen by the passive estimator is not).
    metered_last: bool,
}

impl RttAware {
    /// A marker; its estimator starts at CIR (RFC 2859 §3).
    pub fn new(cfg: RttAwareConfig, rng: RngStream) -> Self {
        let tsw3 = (cfg.scheme == Scheme::Standard).then(|| {
            Tsw3cm::new(
                TswSettings {
                    cir: cfg.cir,
                    pir: cfg.pir,
                    window: cfg.window,
                    action: MeterAction::Mark,
                    codepoints: cfg.dscp,
                    out_colour: Colour::Red,
                },
                rng.clone(),
            )
        });
        RttAware {
            est: TswEstimator::new(cfg.window, cfg.cir),
            tsw3,
            rng,
            oracle: OracleMean::default(),
            passive: [cfg.rtt, cfg.rto]
                .contains(&Source::Passive)
                .then(|| Box::new(Passive::new(cfg.min_rto, cfg.min_window))),
            member: None,
            next_exchange: SimTime::ZERO,
            minima: None,
            published: None,
            holder: None,
            holder_changes: 0,
            dp0_est: TswEstimator::new(cfg.window, Rate::from_bps(0)),
            owed: [0; 2],
            counts: RttAwareCounts::default(),
            metered_last: false,
            cfg: Box::new(cfg),
        }
    }

    /// Whether the last conditioned packet was metered and marked (false for a returning
    /// ACK seen by the passive estimator), so per-flow colour counts leave ACKs out.
    pub fn metered_last(&self) -> bool {
        self.metered_last
    }

    /// Replaces the random stream (a policy cloning a prototype per key).
    pub fn reseed(&mut self, rng: RngStream) {
        if let Some(t) = &mut self.tsw3 {
            t.reseed(rng.clone());
        }
        self.rng = rng;
    }

    /// The exchange group this marker belongs to, if any.
    pub fn group(&self) -> Option<&str> {
        self.cfg.group.as_deref()
    }

    /// Makes this marker a member of `ex` (the world links markers of one group).
    pub fn join(&mut self, ex: Arc<Exchange>) {
        let i = ex.join();
        self.member = Some((ex, i));
    }

    /// What the marker has done so far.
    pub fn counts(&self) -> RttAwareCounts {
        self.counts
    }

    /// The passive estimator, when `rtt` or `rto` is `"passive"`.
    pub fn passive(&self) -> Option<&Passive> {
        self.passive.as_deref()
    }

    /// The marker's configuration.
    pub fn config(&self) -> &RttAwareConfig {
        &self.cfg
    }

    /// The minimum RTT and RTO [µs] over its group as last read (its own values when it
    /// has no group), once known.
    pub fn minima(&self) -> Option<(u64, u64)> {
        self.minima
    }

    /// The RTT and RTO [µs] it published at its last exchange, once it has.
    pub fn published(&self) -> Option<(u64, u64)> {
        self.published
    }

    /// How many exchanges changed whether it held its group's minimum RTT.
    pub fn holder_changes(&self) -> u32 {
        self.holder_changes
    }

    /// The aggregate's RTT and RTO [µs] as the marker sees them now.
    pub fn aggregate(&self) -> Option<(u64, u64)> {
        let m = self.oracle.mean();
        let p = self.passive.as_deref().and_then(Passive::mean);
        let rtt = match self.cfg.rtt {
            Source::Fixed(d) => d.as_nanos() / 1_000,
            Source::Oracle => m?.0,
            Source::Passive => p?.0,
        };
        let rto = match self.cfg.rto {
            Source::Fixed(d) => d.as_nanos() / 1_000,
            Source::Oracle => m?.1,
            Source::Passive => p?.1,
        };
        Some((rtt, rto))
    }

    /// The share q of DP2 among out-of-profile packets (P3 Fig. 1 line 10).
    pub fn q(&self) -> f64 {
        let Some((rtt, rto)) = self.aggregate() else {
            return 1.0; // nothing known yet: as Nandy et al.'s marker for the minimum
        };
        let (min_rtt, min_rto) = self.minima.unwrap_or((rtt, rto));
        let r = (min_rtt as f64 / rtt.max(1) as f64).powi(2);
        let q = match self.cfg.scheme {
            Scheme::RttRto => r * (min_rto as f64 / rto.max(1) as f64),
            _ => r,
        };
        if self.cfg.scheme == Scheme::RttRto && self.cfg.rto_rule == RtoRule::Capped {
            // The group's own-ratio ceiling (module doc).
            return q.min(min_rtt as f64 / min_rto.max(1) as f64).min(1.0);
        }
        let own = self.cfg.scheme == Scheme::RttRto
            && match self.cfg.rto_rule {
                RtoRule::Capped => false,
                // The minimum-RTT aggregate, judged by what it published with the minima
                // it read (its RTT may have moved since).
                RtoRule::MinRttAggregate => match (self.minima, self.published) {
                    (Some((m, _)), Some((mine, _))) => mine <= m,
                    (Some((m, _)), None) => rtt <= m,
                    (None, _) => true,
                },
                RtoRule::MinRttAndRto => q >= 1.0,
            };
        if own {
            // Its own RTT/RTO ratio (P3 §III).
            (rtt as f64 / rto.max(1) as f64).min(1.0)
        } else {
            q.min(1.0)
        }
    }

    fn learn(&mut self, now: SimTime, pkt: &Packet) {
        if let Some(v) = pkt.tcp().map(|h| h.view).filter(|v| v.srtt_us > 0) {
            self.oracle.update(pkt.flow.0, v.srtt_us, v.rto_us);
        }
        if let Some((ex, i)) = &self.member {
            if now >= self.next_exchange {
                let mine = self.aggregate();
                self.minima = ex.publish(*i, mine);
                self.published = mine;
                if let (Some((m, _)), Some((me, _))) = (self.minima, mine) {
                    let h = me <= m;
                    if self.holder.is_some_and(|x| x != h) {
                        self.holder_changes += 1;
                    }
                    self.holder = Some(h);
                }
                self.next_exchange = now + self.cfg.exchange;
            }
        }
    }

    /// Fig. 1 above and below the target, or TSW3CM for the standard scheme.
    fn base_colour(&mut self, now: SimTime, size: u32) -> Colour {
        if let Some(t) = &mut self.tsw3 {
            return t.meter(now, size);
        }
        let measured = self.est.update(now, size);
        let target = self.cfg.cir.bytes_per_sec();
        if measured <= target {
            return Colour::Green;
        }
        let p = (measured - target) / measured;
        let dp0 = match self.cfg.dp0 {
            Dp0Rule::Figure => (1.0 - p) * (1.0 - p),
            Dp0Rule::Text => 1.0 - p,
        };
        if self.rng.bernoulli(dp0) {
            Colour::Green
        } else if self.rng.bernoulli(self.q()) {
            Colour::Red
        } else {
            Colour::Yellow
        }
    }

    /// The colour of `pkt` at `now` (module doc), with protection and payback; `None`
    /// for a returning ACK seen by a passive estimator (neither metered nor marked).
    pub fn meter_packet(&mut self, now: SimTime, pkt: &Packet) -> Option<Colour> {
        if let Some(p) = &mut self.passive {
            if p.observe(now, pkt) == Seen::Ack {
                return None;
            }
        }
        Some(self.meter(now, pkt))
    }

    /// The colour of `pkt` at `now` (module doc), with protection and payback.
    pub fn meter(&mut self, now: SimTime, pkt: &Packet) -> Colour {
        self.learn(now, pkt);
        let base = self.base_colour(now, pkt.size);
        let k = self.cfg.small_window;
        let small = k > 0
            && match &self.passive {
                // Passive: the window the edge sees is the data in flight.
                Some(p) => pkt.tcp().is_some() && p.window_segs(pkt.flow.0).unwrap_or(0) < k,
                None => pkt.tcp().is_some_and(|h| h.view.cwnd_segs < k),
            };
        // The bound: would DP0, this packet included, stay within CIR over the window?
        let within = |est: &TswEstimator| {
            let mut e = est.clone();
            e.update(now, pkt.size) <= self.cfg.cir.bytes_per_sec()
        };
        let protect = small
            && (base == Colour::Green
                || self.cfg.protect_bound == ProtectBound::None
                || within(&self.dp0_est));
        if small && !protect {
            self.counts.refused += 1;
        }
        let c = if protect {
            if base != Colour::Green {
                self.counts.protected += 1;
                if self.cfg.payback {
                    self.owed[base.index() - 1] += pkt.size as u64;
                }
            }
            Colour::Green
        } else if base == Colour::Green && self.owed.iter().any(|&o| o > 0) {
            // Pay DP2 debt first, then DP1.
            let i = if self.owed[1] > 0 { 1 } else { 0 };
            self.owed[i] = self.owed[i].saturating_sub(pkt.size as u64);
            self.counts.paid_back += 1;
            Colour::from_index(i + 1)
        } else {
            base
        };
        let dp0_bytes = if c == Colour::Green { pkt.size } else { 0 };
        self.dp0_est.update(now, dp0_bytes);
        self.counts.colour[c.index()] += 1;
        c
    }
}

impl Conditioner for RttAware {
    fn condition(&mut self, now: SimTime, pkt: &mut Packet) -> Action {
        let c = self.meter_packet(now, pkt);
        self.metered_last = c.is_some();
        if let Some(c) = c {
            mark(pkt, c, &self.cfg.dscp);
        }
        Action::Pass
    }
}

/// The paper's own-ratio exception is "near its jump" when the minimum-RTT aggregate's
/// q (its own RTT/RTO) is below the next aggregate's Fig. 1 q by more than this factor:
/// the exception then marks the faster aggregate less, inverting Fig. 1's order
/// by that much, and a small RTT change that swaps the two swaps the inversion.
pub const NEAR_JUMP: f64 = 2.0;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{FlowId, Header, SenderView, TcpHeader};

    fn cfg(text: &str) -> RttAwareConfig {
        let c: RttAwareConfig = toml::from_str(text).unwrap();
        c.validate().unwrap();
        c
    }

    fn seg(flow: u32, size: u32, cwnd: u32, rtt_ms: u32, rto_ms: u32) -> Packet {
        Packet {
            flow: FlowId(flow),
            size,
            hdr: Header::Tcp(TcpHeader {
                len: size - 40,
                view: SenderView {
                    cwnd_segs: cwnd,
                    srtt_us: rtt_ms * 1000,
                    rto_us: rto_ms * 1000,
                },
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// Sends `n` packets of 1000 B at `rate_bps` through `m` after a warm-up of the
    /// estimator; returns the fractions DP0, DP1, DP2 of the last `n`.
    fn fractions(m: &mut RttAware, rate_bps: f64, n: u64, cwnd: u32) -> [f64; 3] {
        let gap = 8000.0 / rate_bps; // seconds per 1000-byte packet
        let mut t = 0.0;
        for _ in 0..20_000 {
            m.meter(SimTime::from_secs_f64(t), &seg(1, 1000, cwnd, 100, 400));
            t += gap;
        }
        let mut c = [0u64; 3];
        for _ in 0..n {
            c[m.meter(SimTime::from_secs_f64(t), &seg(1, 1000, cwnd, 100, 400))
                .index()] += 1;
            t += gap;
        }
        c.map(|x| x as f64 / n as f64)
    }

    #[test]
    fn fig1_fractions_match_the_probabilities() {
        // Measured 4 Mb/s against a 2 Mb/s target: p = 1/2. Aggregate RTT 100 ms / RTO
        // 400 ms (oracle), group minima fixed at RTT 50 ms / RTO 200 ms:
        // q = (50/100)² · (200/400) = 1/8. DP0 = (1 − p)² = 1/4; DP1 = 3/4 · 7/8;
        // DP2 = 3/4 · 1/8.
        let ex = Arc::new(Exchange::default());
        let other = ex.join();
        ex.publish(other, Some((50_000, 200_000)));
        let mut m = RttAware::new(
            cfg("scheme = \"rtt_rto\"\ncir = \"2Mbps\"\nexchange = 0"),
            RngStream::from_seed(7),
        );
        m.join(ex.clone());
        let f = fractions(&mut m, 4e6, 200_000, 10);
        let want = [0.25, 0.75 * 0.875, 0.75 * 0.125];
        for i in 0..3 {
            assert!((f[i] - want[i]).abs() < 0.005, "{f:?} vs {want:?}");
        }
        assert!((m.q() - 0.125).abs() < 1e-9, "{}", m.q());
        // The text's rule: DP0 = 1 − p = 1/2.
        let ex2 = Arc::new(Exchange::default());
        let o2 = ex2.join();
        ex2.publish(o2, Some((50_000, 200_000)));
        let mut t = RttAware::new(
            cfg("scheme = \"rtt_rto\"\ncir = \"2Mbps\"\nexchange = 0\ndp0 = \"text\""),
            RngStream::from_seed(7),
        );
        t.join(ex2);
        let f = fractions(&mut t, 4e6, 200_000, 10);
        assert!((f[0] - 0.5).abs() < 0.005, "{f:?}");
        // Basic RTT-aware ignores the RTO: q = 1/4.
        let ex3 = Arc::new(Exchange::default());
        let o3 = ex3.join();
        ex3.publish(o3, Some((50_000, 200_000)));
        let mut b = RttAware::new(
            cfg("scheme = \"rtt\"\ncir = \"2Mbps\"\nexchange = 0"),
            RngStream::from_seed(7),
        );
        b.join(ex3);
        let f = fractions(&mut b, 4e6, 200_000, 10);
        assert!((f[2] / (f[1] + f[2]) - 0.25).abs() < 0.01, "{f:?}");
    }

    #[test]
    fn below_the_target_everything_is_dp0() {
        let mut m = RttAware::new(cfg("cir = \"2Mbps\""), RngStream::from_seed(1));
        let f = fractions(&mut m, 1.5e6, 10_000, 10);
        assert_eq!(f, [1.0, 0.0, 0.0]);
    }

    #[test]
    fn the_aggregate_with_both_minima_uses_its_own_rtt_over_rto() {
        // The basic scheme marks every out-of-profile packet of the minimum aggregate DP2.
        let b = RttAware::new(
            cfg("scheme = \"rtt\"\ncir = \"2Mbps\"\nrtt = \"100ms\"\nrto = \"400ms\""),
            RngStream::from_seed(1),
        );
        assert_eq!(b.q(), 1.0);
        // Alone in its group: q would be 1; P3 §III marks by its own RTT/RTO = 1/4.
        let mut m = RttAware::new(
            cfg("cir = \"2Mbps\"\nrtt = \"100ms\"\nrto = \"400ms\""),
            RngStream::from_seed(1),
        );
        assert!((m.q() - 0.25).abs() < 1e-12);
        let f = fractions(&mut m, 4e6, 100_000, 10);
        assert!((f[2] / (f[1] + f[2]) - 0.25).abs() < 0.01, "{f:?}");
    }

    #[test]
    fn small_windows_are_dp0_exactly_while_cwnd_below_k() {
        // Far above the target, almost nothing is DP0 … except packets of flows with
        // cwnd < 3, which are DP0 every time.
        let c = "scheme = \"rtt\"\ncir = \"1Mbps\"\nsmall_window = 3\npayback = false\nprotect_bound = \"none\"";
        let mut m = RttAware::new(cfg(c), RngStream::from_seed(3));
        let mut t = 0.0;
        for i in 0..50_000u32 {
            let cwnd = i % 6; // 0..5
            let col = m.meter(SimTime::from_secs_f64(t), &seg(i % 50, 1000, cwnd, 20, 200));
            if cwnd < 3 {
                assert_eq!(col, Colour::Green, "packet {i} cwnd {cwnd}");
            }
            t += 0.0008; // 10 Mb/s
        }
        let n = m.counts();
        assert!(n.protected > 10_000, "{n:?}");
        // cwnd ≥ 3 packets are marked as without protection: mostly DP1/DP2.
        assert!(n.colour[1] + n.colour[2] > 20_000, "{n:?}");
    }

    #[test]
    fn protected_packets_are_paid_back_so_the_profile_holds() {
        // Same load with and without protection of a third of the packets: with payback
        // the total number of DP1/DP2 packets stays within 1 % of the unprotected run.
        let run = |k: u32, payback: bool| {
            let c = format!(
                "scheme = \"rtt\"\ncir = \"6Mbps\"\nsmall_window = {k}\npayback = {payback}\nrtt = \"50ms\"\nrto = \"200ms\""
            );
            let mut m = RttAware::new(cfg(&c), RngStream::from_seed(5));
            let mut t = 0.0;
            for i in 0..200_000u32 {
                m.meter(
                    SimTime::from_secs_f64(t),
                    &seg(i % 30, 1000, 2 + i % 3, 50, 200),
                );
                t += 0.0008;
            }
            m.counts()
        };
        let none = run(0, true);
        let paid = run(3, true);
        let free = run(3, false);
        let out = |c: RttAwareCounts| (c.colour[1] + c.colour[2]) as f64;
        assert!(
            paid.protected > 10_000 && paid.paid_back > 10_000,
            "{paid:?}"
        );
        assert!(
            (out(paid) / out(none) - 1.0).abs() < 0.01,
            "{paid:?} vs {none:?}"
        );
        // Without payback the aggregate gets a third more DP0 than its profile.
        assert!(out(free) < 0.75 * out(none), "{free:?} vs {none:?}");
    }

    /// A marker of `scheme = "rtt_rto"` with fixed RTT and RTO [ms] and `extra` keys, in
    /// a group where another aggregate has published RTT 100 ms and RTO 200 ms.
    fn beside_200ms(rtt: u32, rto: u32, extra: &str) -> RttAware {
        let ex = Arc::new(Exchange::default());
        let other = ex.join();
        ex.publish(other, Some((100_000, 200_000)));
        let c = format!(
            "scheme = \"rtt_rto\"\ncir = \"2Mbps\"\nexchange = 0\nrtt = \"{rtt}ms\"\nrto = \"{rto}ms\"\n{extra}"
        );
        let mut m = RttAware::new(cfg(&c), RngStream::from_seed(11));
        m.join(ex);
        m
    }

    #[test]
    fn the_minimum_rtt_aggregate_keeps_its_own_ratio_across_another_aggregates_rto() {
        // The 20 ms aggregate holds the minimum RTT; the other's RTO is 200 ms. At RTO
        // 190 ms it holds both minima (q = 20/190); at 210 ms it no longer holds the
        // minimum RTO. The min_rtt_aggregate rule keeps q = own RTT/RTO = 20/210: q moves by 0.01.
        // Today's literal rule (both minima) jumps to (20/20)²·(200/210) = 0.95.
        let paper = "rto_rule = \"min_rtt_aggregate\"";
        let mut lo = beside_200ms(20, 190, paper);
        let mut hi = beside_200ms(20, 210, paper);
        let f_lo = fractions(&mut lo, 4e6, 100_000, 10);
        let f_hi = fractions(&mut hi, 4e6, 100_000, 10);
        assert!((lo.q() - 20.0 / 190.0).abs() < 1e-9, "{}", lo.q());
        assert!((hi.q() - 20.0 / 210.0).abs() < 1e-9, "{}", hi.q());
        // What the marker did: DP2 share of out-of-profile packets ≈ q on both sides.
        let dp2 = |f: [f64; 3]| f[2] / (f[1] + f[2]);
        assert!((dp2(f_lo) - 20.0 / 190.0).abs() < 0.01, "{f_lo:?}");
        assert!((dp2(f_hi) - 20.0 / 210.0).abs() < 0.01, "{f_hi:?}");
        assert!((dp2(f_lo) - dp2(f_hi)).abs() < 0.03, "{f_lo:?} {f_hi:?}");
        // The literal rule, kept as an option: the cliff.
        let old = "rto_rule = \"min_rtt_and_rto\"";
        let mut lo = beside_200ms(20, 190, old);
        let mut hi = beside_200ms(20, 210, old);
        let f_lo = fractions(&mut lo, 4e6, 100_000, 10);
        let f_hi = fractions(&mut hi, 4e6, 100_000, 10);
        assert!((lo.q() - 20.0 / 190.0).abs() < 1e-9, "{}", lo.q());
        assert!((hi.q() - 200.0 / 210.0).abs() < 1e-9, "{}", hi.q());
        assert!(dp2(f_hi) > 0.9 && dp2(f_lo) < 0.15, "{f_lo:?} {f_hi:?}");
        // An aggregate that does not hold the minimum RTT follows Fig. 1 either way:
        // (20/100)²·(200/210) for a 100 ms aggregate beside a 20 ms one.
        let ex = Arc::new(Exchange::default());
        let other = ex.join();
        ex.publish(other, Some((20_000, 200_000)));
        let c =
            "scheme = \"rtt_rto\"\ncir = \"2Mbps\"\nexchange = 0\nrtt = \"100ms\"\nrto = \"210ms\"\nrto_rule = \"min_rtt_aggregate\"";
        let mut m = RttAware::new(cfg(c), RngStream::from_seed(1));
        m.join(ex);
        m.meter(SimTime::ZERO, &seg(1, 1000, 5, 100, 210));
        assert!((m.q() - 0.04 * 200.0 / 210.0).abs() < 1e-9, "{}", m.q());
    }

    /// q of an `rtt_rto` marker with fixed RTT and RTO [µs] under `rule`, in a group where
    /// another aggregate published `other` (RTT, RTO) [µs].
    fn q_beside(rtt: u64, rto: u64, other: (u64, u64), rule: &str) -> f64 {
        let ex = Arc::new(Exchange::default());
        let o = ex.join();
        ex.publish(o, Some(other));
        let c = format!(
            "scheme = \"rtt_rto\"\ncir = \"2Mbps\"\nexchange = 0\nrtt = \"{}us\"\nrto = \"{}us\"\nrto_rule = \"{rule}\"",
            rtt, rto
        );
        let mut m = RttAware::new(cfg(&c), RngStream::from_seed(3));
        m.join(ex);
        m.meter(SimTime::ZERO, &seg(1, 1000, 5, 20, 200));
        m.q()
    }

    #[test]
    fn the_capped_rule_has_no_cliff_along_the_rtt_axis() {
        // One aggregate at 20 ms / 200 ms, the other's RTT swept 10–40 ms in 0.1 ms steps
        // (RTO 200 ms). The paper's rule jumps where the two RTTs cross (q of the swept one
        // from 0.1 to ≈ 1); the capped rule moves q by at most the step's share of the
        // ceiling, and never gives the slower aggregate the larger q.
        let other = (20_000, 200_000);
        let (mut prev, mut prev_paper) = (None::<f64>, None::<f64>);
        let mut paper_jump = 0.0f64;
        for i in 100..=400u64 {
            let rtt = i * 100;
            let q = q_beside(rtt, 200_000, other, "capped");
            let p = q_beside(rtt, 200_000, other, "min_rtt_aggregate");
            if let Some(v) = prev {
                assert!(
                    (q - v).abs() <= 0.1 * 100.0 / 20_000.0 + 1e-12,
                    "{rtt} µs: {v} → {q}"
                );
            }
            if let Some(v) = prev_paper {
                paper_jump = paper_jump.max((p - v).abs());
            }
            // The other aggregate's q in the same group, seen from its side.
            let q_other = q_beside(20_000, 200_000, (rtt, 200_000), "capped");
            if rtt > 20_000 {
                assert!(
                    q <= q_other + 1e-12,
                    "{rtt} µs: slower {q} > faster {q_other}"
                );
            } else {
                assert!(
                    q >= q_other - 1e-12,
                    "{rtt} µs: faster {q} < slower {q_other}"
                );
            }
            (prev, prev_paper) = (Some(q), Some(p));
        }
        assert!(paper_jump > 0.8, "the paper's rule's jump: {paper_jump}");
    }

    #[test]
    fn the_capped_rule_is_the_papers_away_from_the_jump() {
        // P3 Fig. 4's 100 and 200 ms aggregates beside the 20 ms one, RTOs 300 / 450 / 200
        // ms: Fig. 1's q is below the ceiling 20/200, so both rules give it; the 20 ms
        // aggregate (both minima) gets its own RTT/RTO under both.
        for (rtt, rto) in [(100_000, 300_000), (200_000, 450_000)] {
            let c = q_beside(rtt, rto, (20_000, 200_000), "capped");
            let p = q_beside(rtt, rto, (20_000, 200_000), "min_rtt_aggregate");
            assert!((c - p).abs() < 1e-12, "{rtt}: {c} vs {p}");
        }
        let c = q_beside(20_000, 200_000, (100_000, 300_000), "capped");
        let p = q_beside(20_000, 200_000, (100_000, 300_000), "min_rtt_aggregate");
        assert!(
            (c - 0.1).abs() < 1e-12 && (p - 0.1).abs() < 1e-12,
            "{c} {p}"
        );
        // Near the minimum they differ: 21 ms beside 20 ms gets the ceiling, not 0.91.
        let c = q_beside(21_000, 200_000, (20_000, 200_000), "capped");
        let p = q_beside(21_000, 200_000, (20_000, 200_000), "min_rtt_aggregate");
        assert!((c - 0.1).abs() < 1e-12, "{c}");
        assert!((p - (20.0f64 / 21.0).powi(2)).abs() < 1e-12, "{p}");
    }

    #[test]
    fn the_minimum_rtt_holder_is_judged_by_what_it_published() {
        // Exchange every 1 s, RTT and RTO from the senders. At 0 s the aggregate
        // publishes RTT 20 ms / RTO 300 ms beside another's 100 ms / 200 ms; by 0.5 s its
        // micro-flows report 21 ms. Still the minimum-RTT holder until the next exchange:
        // q = 21/300, not (20/21)²·(200/300) = 0.60.
        let ex = Arc::new(Exchange::default());
        let other = ex.join();
        ex.publish(other, Some((100_000, 200_000)));
        let mut m = RttAware::new(
            cfg("scheme = \"rtt_rto\"\ncir = \"2Mbps\"\nexchange = \"1s\"\nrto_rule = \"min_rtt_aggregate\""),
            RngStream::from_seed(1),
        );
        m.join(ex);
        m.meter(SimTime::ZERO, &seg(1, 1000, 5, 20, 300));
        assert!((m.q() - 20.0 / 300.0).abs() < 1e-9, "{}", m.q());
        m.meter(SimTime::from_millis(500), &seg(1, 1000, 5, 21, 300));
        assert!((m.q() - 21.0 / 300.0).abs() < 1e-9, "{}", m.q());
        // The literal rule on the same packets: q = (20/21)²·(200/300).
        let ex = Arc::new(Exchange::default());
        let other = ex.join();
        ex.publish(other, Some((100_000, 200_000)));
        let mut m = RttAware::new(
            cfg("scheme = \"rtt_rto\"\ncir = \"2Mbps\"\nexchange = \"1s\"\nrto_rule = \"min_rtt_and_rto\""),
            RngStream::from_seed(1),
        );
        m.join(ex);
        m.meter(SimTime::ZERO, &seg(1, 1000, 5, 20, 300));
        m.meter(SimTime::from_millis(500), &seg(1, 1000, 5, 21, 300));
        let want = (20.0f64 / 21.0).powi(2) * 200.0 / 300.0;
        assert!((m.q() - want).abs() < 1e-9, "{}", m.q());
    }

    /// 10 Mb/s of 1000-byte packets through a 2 Mb/s-CIR basic RTT marker with
    /// small-window protection, 80 % of them from micro-flows with cwnd < k; returns the
    /// counts, the DP0 rate ÷ CIR over the run after 20 s, and the largest DP0 rate ÷ CIR
    /// over any 1 s (the TSW window) after 20 s.
    fn mostly_small(extra: &str) -> (RttAwareCounts, f64, f64) {
        let c = format!(
            "scheme = \"rtt\"\ncir = \"2Mbps\"\nsmall_window = 8\nrtt = \"50ms\"\nrto = \"200ms\"\n{extra}"
        );
        let mut m = RttAware::new(cfg(&c), RngStream::from_seed(9));
        let (gap, n) = (0.0008, 100_000u32); // 80 s
        let mut per_s = vec![0u64; 80];
        for i in 0..n {
            let t = i as f64 * gap;
            let col = m.meter(
                SimTime::from_secs_f64(t),
                &seg(i % 40, 1000, i % 10, 50, 200),
            );
            if col == Colour::Green {
                per_s[t as usize] += 1000;
            }
        }
        let cir = 2e6 / 8.0;
        let after: Vec<f64> = per_s[20..].iter().map(|&b| b as f64 / cir).collect();
        let mean = after.iter().sum::<f64>() / after.len() as f64;
        (m.counts(), mean, after.iter().cloned().fold(0.0, f64::max))
    }

    #[test]
    fn protection_keeps_dp0_within_cir_when_most_packets_are_protected() {
        // P3 §VI: "the flow profile must still be preserved". With 80 % of the packets
        // from small windows and p = 0.8 above the target, payback alone has almost no
        // DP0 packets to repay with: DP0 runs at ~4 × CIR.
        let (free, free_mean, _) = mostly_small("protect_bound = \"none\"");
        let total: u64 = free.colour.iter().sum();
        assert!(free.protected as f64 >= 0.7 * total as f64, "{free:?}");
        assert!(free_mean > 3.0, "{free_mean}");
        assert_eq!(free.refused, 0);
        // The text's rule (`none`, P3's headline reading) still pays back: every packet
        // that is not from a small window and would have been DP0 repays debt, so the
        // only DP0 packets are the 80 000 small-window ones, and the debt is never
        // cleared (the profile is not kept).
        assert!(free.paid_back > 300, "{free:?}");
        assert!(free.colour[0].abs_diff(80_000) <= 100, "{free:?}");
        // The bound (default): DP0 at most CIR over the run and over every 1 s.
        let (b, mean, worst) = mostly_small("");
        assert!(mean <= 1.0 && mean > 0.9, "{mean} {b:?}");
        assert!(worst <= 1.05, "{worst}");
        // Protection still happens, up to the bound; the rest is refused.
        assert!(b.protected > 5_000 && b.refused > 50_000, "{b:?}");
        // The small-window packets that are DP0 are now paid for by the others.
        assert!(b.colour[0] < free.colour[0] / 3, "{b:?} {free:?}");
    }

    #[test]
    fn oracle_averages_the_latest_rtt_of_each_micro_flow() {
        let mut m = RttAware::new(cfg("cir = \"1Mbps\""), RngStream::from_seed(1));
        m.meter(SimTime::ZERO, &seg(1, 1000, 5, 20, 200));
        m.meter(SimTime::ZERO, &seg(2, 1000, 5, 60, 400));
        m.meter(SimTime::ZERO, &seg(1, 1000, 5, 40, 300)); // flow 1 again: replaces 20
        assert_eq!(m.aggregate(), Some((50_000, 350_000)));
        // A segment before any RTT sample (srtt 0) teaches nothing.
        m.meter(SimTime::ZERO, &seg(3, 1000, 1, 0, 3000));
        assert_eq!(m.aggregate(), Some((50_000, 350_000)));
    }

    #[test]
    fn exchange_publishes_at_most_once_per_interval() {
        let ex = Arc::new(Exchange::default());
        let other = ex.join();
        let mut m = RttAware::new(
            cfg("cir = \"1Mbps\"\nrtt = \"100ms\"\nrto = \"400ms\"\nexchange = \"1s\""),
            RngStream::from_seed(1),
        );
        m.join(ex.clone());
        m.meter(SimTime::ZERO, &seg(1, 1000, 5, 100, 400));
        assert!((m.q() - 0.25).abs() < 1e-12, "alone so far: own RTT/RTO");
        ex.publish(other, Some((50_000, 100_000)));
        m.meter(SimTime::from_millis(500), &seg(1, 1000, 5, 100, 400));
        assert!((m.q() - 0.25).abs() < 1e-12, "not yet read");
        m.meter(SimTime::from_secs(1), &seg(1, 1000, 5, 100, 400));
        assert!((m.q() - 0.25 * 0.25).abs() < 1e-12, "{}", m.q());
    }

    fn data(flow: u32, seq: u64) -> Packet {
        let mut p = seg(flow, 1040, 5, 0, 0);
        p.src = crate::packet::NodeId(1);
        p.tcp_mut().unwrap().seq = seq;
        p
    }

    fn ack(flow: u32, ack: u64) -> Packet {
        let mut p = seg(flow, 40, 0, 0, 0);
        p.src = crate::packet::NodeId(2);
        let h = p.tcp_mut().unwrap();
        h.len = 0;
        h.ack = ack;
        h.flags = crate::packet::tcp_flags::ACK;
        p
    }

    #[test]
    fn passive_estimator_returns_the_true_rtt_and_skips_retransmissions() {
        let ms = SimTime::from_millis;
        let mut p = Passive::new(Dur::from_millis(200), Dur::from_secs(10));
        // Flow 1: RTT exactly 30 ms on every segment; flow 2: 90 ms.
        for i in 0..50u64 {
            assert_eq!(p.observe(ms(100 * i), &data(1, i * 1000)), Seen::Data);
            assert_eq!(
                p.observe(ms(100 * i + 30), &ack(1, (i + 1) * 1000)),
                Seen::Ack
            );
            p.observe(ms(100 * i), &data(2, i * 1000));
            p.observe(ms(100 * i + 90), &ack(2, (i + 1) * 1000));
        }
        assert_eq!(p.flow(1).unwrap().0, 30_000);
        assert_eq!(p.flow(2).unwrap().0, 90_000);
        // Constant samples: RTTVAR decays, RTO = max(SRTT + 4·RTTVAR, 200 ms).
        assert_eq!(p.flow(1).unwrap().1, 200_000);
        assert_eq!(p.mean().unwrap().0, 60_000);
        assert_eq!(p.samples(), 100);
        // Flow 3: segment 0 is sent, lost, retransmitted 1 s later; segment 1 was sent
        // meanwhile. The ACK covering both comes 30 ms after the retransmission: the
        // original send times would give 1030 and 1010 ms, so neither may be sampled.
        p.observe(ms(0), &data(3, 0));
        p.observe(ms(20), &data(3, 1000));
        assert_eq!(p.window_segs(3), Some(2));
        p.observe(ms(1000), &data(3, 0)); // retransmission
        p.observe(ms(1030), &ack(3, 2000));
        assert_eq!(p.flow(3), None, "no sample from a retransmitted exchange");
        assert_eq!(p.window_segs(3), Some(0));
        // The next fresh segment is sampled again.
        p.observe(ms(2000), &data(3, 2000));
        p.observe(ms(2040), &ack(3, 3000));
        assert_eq!(p.flow(3).unwrap().0, 40_000);
    }

    #[test]
    fn passive_rtt_is_the_windowed_minimum_of_the_samples() {
        let ms = SimTime::from_millis;
        // One segment every 100 ms: 30 ms round trips for 1 s, then 80 ms (a queue) for
        // 14 s. The 10 s minimum holds 30 ms until the last 30 ms sample is 10 s old;
        // SRTT (min_window = 0) follows the queue within a second.
        let mut min = Passive::new(Dur::from_millis(200), Dur::from_secs(10));
        let mut srtt = Passive::new(Dur::from_millis(200), Dur::ZERO);
        for i in 0..150u64 {
            let r = if i < 10 { 30 } else { 80 };
            for p in [&mut min, &mut srtt] {
                p.observe(ms(100 * i), &data(1, i * 1000));
                p.observe(ms(100 * i + r), &ack(1, (i + 1) * 1000));
            }
            if i == 50 {
                assert_eq!(min.mean().unwrap().0, 30_000, "t = 5 s");
                let s = srtt.mean().unwrap().0;
                assert!((79_000..=80_000).contains(&s), "{s}");
            }
            if i == 109 {
                // Last 30 ms sample at 0.93 s; now 10.98 s: gone.
                assert_eq!(min.mean().unwrap().0, 80_000, "t = 10.9 s");
            }
        }
        // A lower sample is the minimum at once: 50 ms after 80 ms ones.
        min.observe(ms(15_000), &data(1, 150_000));
        min.observe(ms(15_050), &ack(1, 151_000));
        assert_eq!(min.mean().unwrap().0, 50_000);
        // The RTO still comes from the smoothed samples, not the minimum.
        assert_eq!(min.mean().unwrap().1, srtt.mean().unwrap().1);
    }

    #[test]
    fn passive_window_restarts_at_a_retransmission() {
        let ms = SimTime::from_millis;
        let mut p = Passive::new(Dur::from_millis(200), Dur::from_secs(10));
        // Ten segments in flight (0..10 000), the first two acknowledged: 8 in flight.
        for i in 0..10u64 {
            p.observe(ms(i), &data(1, i * 1000));
        }
        p.observe(ms(40), &ack(1, 2000));
        assert_eq!(p.window_segs(1), Some(8));
        // Timeout: the sender resends 2000 with cwnd 1. The edge sees 1 segment in flight
        // (the old estimate, highest sent − highest ACK, would still say 8).
        p.observe(ms(1000), &data(1, 2000));
        assert_eq!(p.window_segs(1), Some(1));
        // Its ACK, then slow start resends 3000 and 4000 (go-back-N): 2 in flight.
        p.observe(ms(1040), &ack(1, 3000));
        assert_eq!(p.window_segs(1), Some(0));
        p.observe(ms(1041), &data(1, 3000));
        p.observe(ms(1042), &data(1, 4000));
        assert_eq!(p.window_segs(1), Some(2));
        // An ACK that jumps past data the receiver had kept (up to 9000), then new data
        // (10 000, above everything sent): the estimate follows the new data.
        p.observe(ms(1080), &ack(1, 9000));
        assert_eq!(p.window_segs(1), Some(0));
        p.observe(ms(1081), &data(1, 9000));
        p.observe(ms(1082), &data(1, 10_000));
        assert_eq!(p.window_segs(1), Some(2));
        // A fast retransmit of 9000 with 11 000 and 12 000 sent meanwhile: 1, then new
        // data lifts it back to everything unacknowledged.
        p.observe(ms(1083), &data(1, 11_000));
        p.observe(ms(1084), &data(1, 12_000));
        assert_eq!(p.window_segs(1), Some(4));
        p.observe(ms(1120), &data(1, 9000));
        assert_eq!(p.window_segs(1), Some(1));
        p.observe(ms(1121), &data(1, 13_000));
        assert_eq!(p.window_segs(1), Some(5));
    }

    /// A live segment as Linux sends it: 1448 bytes of payload with timestamps in a
    /// 1500-byte packet, its 32-bit sequence number as it is on the wire.
    fn linux_data(seq: u64) -> Packet {
        let mut p = data(1, seq & SEQ_MASK);
        p.size = 1500;
        p.tcp_mut().unwrap().len = 1448;
        p
    }

    #[test]
    fn passive_estimator_follows_linux_sequence_numbers_across_the_wrap() {
        // Linux picks a random 32-bit ISN: here 2³² − 10·1448 − 100, so segment 10
        // crosses 2³² and the numbers on the wire fall back near 0. One segment every
        // 10 ms, RTT 40 ms, one ACK per two segments (delayed ACKs).
        let ms = SimTime::from_millis;
        let isn = (1u64 << 32) - 10 * 1448 - 100;
        let mut p = Passive::new(Dur::from_millis(200), Dur::from_secs(10));
        for k in 0..40u64 {
            if k >= 4 && (k - 4) % 2 == 1 {
                // The ACK of segments k − 5 and k − 4, sent 40 and 50 ms ago.
                let acked = (isn + (k - 3) * 1448) & SEQ_MASK;
                assert_eq!(p.observe(ms(10 * k), &ack(1, acked)), Seen::Ack);
            }
            p.observe(ms(10 * k), &linux_data(isn + k * 1448));
            assert!(p.window_segs(1).unwrap() <= 6, "segment {k}");
        }
        // Every ACK sampled 40 ms, before and after the wrap: none taken for a
        // retransmission, none for an old ACK.
        assert_eq!(p.samples(), 18);
        assert_eq!(p.flow(1).unwrap().0, 40_000);
        assert_eq!(p.mean().unwrap().0, 40_000);
        // In flight: sent up to segment 39, acknowledged up to 35 → 4 segments of 1448 B.
        assert_eq!(p.window_segs(1), Some(4));
        // A retransmission after the wrap is still one (Karn), and restarts the window.
        p.observe(ms(500), &linux_data(isn + 36 * 1448));
        assert_eq!(p.window_segs(1), Some(1));
        assert_eq!(
            unwrap_seq(5, SEQ_LIFT + SEQ_MASK - 5),
            SEQ_LIFT + SEQ_MASK + 6
        );
        assert_eq!(unwrap_seq(SEQ_MASK, SEQ_LIFT + 3), SEQ_LIFT - 1);
    }

    #[test]
    fn passive_estimator_ignores_data_from_the_other_end() {
        // A two-way connection: the far end's data has its own ISN (here near 2³²); it
        // must not move the near end's sequence state, window or samples.
        let ms = SimTime::from_millis;
        let mut p = Passive::new(Dur::from_millis(200), Dur::from_secs(10));
        p.observe(ms(0), &linux_data(1_000));
        p.observe(ms(10), &linux_data(1_000 + 1448));
        let mut back = linux_data((1 << 32) - 5_000);
        back.src = crate::packet::NodeId(2);
        assert_eq!(p.observe(ms(20), &back), Seen::Data);
        assert_eq!(p.window_segs(1), Some(2));
        assert_eq!(p.observe(ms(40), &ack(1, 1_000 + 2 * 1448)), Seen::Ack);
        assert_eq!(p.samples(), 1);
        assert_eq!(p.flow(1).unwrap().0, 30_000);
        assert_eq!(p.window_segs(1), Some(0));
    }

    #[test]
    fn passive_marker_neither_meters_nor_marks_acks() {
        let c = "cir = \"1Mbps\"\nrtt = \"passive\"\nrto = \"passive\"\nsmall_window = 3";
        let mut m = RttAware::new(cfg(c), RngStream::from_seed(1));
        let ms = SimTime::from_millis;
        assert_eq!(
            m.meter_packet(ms(0), &data(1, 0)).map(|c| c.index()),
            Some(0)
        );
        let mut a = ack(1, 1000);
        a.dscp = 7;
        assert_eq!(m.meter_packet(ms(50), &a), None);
        assert_eq!(m.condition(ms(50), &mut a), Action::Pass);
        assert!(!m.metered_last(), "an ACK is not counted as marked");
        assert_eq!(a.dscp, 7, "an ACK keeps its codepoint");
        let mut d = data(1, 1000);
        m.condition(ms(60), &mut d);
        assert!(m.metered_last());
        assert_eq!(m.counts().colour.iter().sum::<u64>(), 2);
        assert_eq!(m.aggregate(), Some((50_000, 200_000)));
    }

    #[test]
    fn config_errors_name_the_key() {
        let key = |t: &str| {
            toml::from_str::<RttAwareConfig>(t)
                .unwrap()
                .validate()
                .unwrap_err()
                .key
        };
        assert_eq!(key("scheme = \"standard\"\ncir = 1000"), "pir");
        assert_eq!(key("cir = 2000\npir = 1000"), "pir");
        assert_eq!(key("cir = 1000\nwindow = 0"), "window");
        assert_eq!(key("cir = 1000\ngroup = \"\""), "group");
        assert_eq!(key("cir = 1000\nrtt = \"passive\"\nmin_rto = 0"), "min_rto");
        let e = toml::from_str::<RttAwareConfig>("cir = 1000\nrtt = \"soon\"").unwrap_err();
        assert!(e.to_string().contains("oracle"), "{e}");
        let e = toml::from_str::<RttAwareConfig>("cir = 1000\nschem = \"rtt\"").unwrap_err();
        assert!(e.to_string().contains("schem"), "{e}");
        // The new keys: their values parse, a wrong value names the choices.
        let c = cfg(
            "cir = 1000\nrto_rule = \"min_rtt_and_rto\"\nprotect_bound = \"none\"\nmin_window = 0",
        );
        assert_eq!(c.rto_rule, RtoRule::MinRttAndRto);
        assert_eq!(c.protect_bound, ProtectBound::None);
        assert_eq!(c.min_window, Dur::ZERO);
        let d = cfg("cir = 1000");
        assert_eq!(
            (d.rto_rule, d.protect_bound, d.min_window),
            (RtoRule::Capped, ProtectBound::Cir, Dur::from_secs(10))
        );
        let e = toml::from_str::<RttAwareConfig>("cir = 1000\nrto_rule = \"min\"").unwrap_err();
        assert!(e.to_string().contains("min_rtt_aggregate"), "{e}");
        let e = toml::from_str::<RttAwareConfig>("cir = 1000\nprotect_bound = true").unwrap_err();
        assert!(
            e.to_string().contains("protect_bound") || e.to_string().contains("cir"),
            "{e}"
        );
    }
}

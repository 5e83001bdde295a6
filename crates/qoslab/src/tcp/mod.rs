//! TCP as pure state machines: a sender, a receiver, the RTO estimator (RFC 6298), the
//! SACK scoreboard (RFC 6675) and congestion control behind a trait ([`cc`]).
//!
//! Nothing here owns a clock or schedules events. Every method takes `now`; output
//! segments are pushed into a caller-provided `Vec<TcpHeader>`; each endpoint reports
//! `next_timer()` and the host calls `on_timer(now)` then (early or late calls are
//! safe: `on_timer` does nothing if nothing is due).
//!
//! ```text
//!   app ─► TcpSender ──data segments──► (network) ──► TcpReceiver ─► goodput
//!              ▲  │                                        │
//!              │  └─ cc::AnyCc (window growth/decrease)    │
//!              └────────────── ACKs (SACK, ECE) ◄──────────┘
//! ```
//!
//! Sequence numbers are 64-bit byte counts starting at 0 for the first data byte; the
//! SYN takes no sequence space, the FIN takes one (so a finite transfer of `n` bytes with
//! a handshake is complete when `n + 1` is acknowledged). The host wraps each header in a
//! [`crate::packet::Packet`] of `len + 40` bytes and sets the ECN bits as [`sends_ect`]
//! says (ECT on first transmissions of data when [`TcpConfig::ecn`] is set).
//!
//! Defaults and their provenance are documented on [`TcpConfig`]; the main ns-2
//! compatibility choices are: one RTT sample per window (BSD/ns-2 style timing with
//! Karn's rule), go-back-N after a timeout, the "bug_fix" guard against several fast
//! retransmits per window, and one ssthresh decrease per window for ECN and source quench.

pub mod cc;
mod receiver;
mod rto;
mod sack;
mod sender;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod testwire;

pub use receiver::TcpReceiver;
pub use rto::RttEstimator;
pub use sender::TcpSender;

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

use crate::config::ScenarioError;
use crate::packet::{TcpHeader, MAX_SACK_BLOCKS};
use crate::time::{Dur, SimTime};
use crate::units::Bytes;

/// Whether the host sends segment `h` with ECT(0) set: data from an ECN-capable sender
/// (`ecn`) travelling forward, never a retransmission (RFC 3168 §6.1.5: "the TCP data
/// sender MUST NOT set either ECT codepoint in the IP header of retransmitted data
/// packets"), never a pure ACK or SYN (§6.1.4, §6.1.1).
pub fn sends_ect(ecn: bool, h: &TcpHeader, reverse: bool) -> bool {
    ecn && !reverse && h.len > 0 && !h.retransmit
}

/// Loss-recovery flavour of the sender.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Variant {
    /// Fast retransmit, then slow start from one segment (no fast recovery).
    Tahoe,
    /// Fast retransmit and fast recovery (RFC 5681 §3.2); leaves recovery on any new ACK.
    Reno,
    /// Reno with partial-ACK handling (RFC 6582).
    #[default]
    NewReno,
    /// SACK scoreboard and pipe-based recovery (RFC 6675, RFC 2018).
    Sack,
}

/// How the retransmission timeout is estimated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RtoEstimator {
    /// RFC 6298: RTO = SRTT + max(G, 4·RTTVAR) in nanoseconds, G = `granularity`.
    #[default]
    Rfc6298,
    /// ns-2's `tcp.cc` estimator in whole ticks of `granularity` (`tcpTick_`): samples
    /// rounded to ticks (≥ 1), integer SRTT/RTTVAR, RTO = SRTT + 4·RTTVAR ≥ 2 ticks.
    Ns2,
}

/// How a SACK sender paces its sending during fast recovery.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Recovery {
    /// RFC 6675 §5: cwnd = ssthresh at once; send while `pipe` < cwnd.
    #[default]
    Rfc6675,
    /// Proportional Rate Reduction (RFC 6937, PRR-SSRB): cwnd falls to ssthresh in
    /// proportion to the data delivered during recovery (Linux's and ns-3's default).
    Prr,
}

/// What ssthresh halves after a loss or congestion signal.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Halve {
    /// RFC 5681 FlightSize, snd_max − snd_una, never above cwnd, for every variant (RFC
    /// 6675 §5 step 4.2 halves FlightSize for SACK too).
    #[default]
    Flight,
    /// For SACK, RFC 6675 `pipe` (FlightSize less what the receiver holds and what is
    /// deemed lost), never above cwnd: ns-3's `BytesInFlight`. Other variants: as `Flight`.
    Pipe,
    /// The window: min(cwnd, advertised window), cwnd before fast-recovery inflation
    /// (ns-2's `window()`, Linux's `snd_cwnd`).
    Window,
}

/// Where the sender's RTT samples come from (`tcp.rtt_samples`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RttSamples {
    /// One segment timed at a time, none from a retransmitted one (BSD and ns-2; Karn's
    /// rule, RFC 6298 §3): about one sample per RTT.
    #[default]
    Timed,
    /// Every ACK that cumulatively acknowledges or newly SACKs data sent only once
    /// (Linux's `tcp_clean_rtx_queue` and `tcp_sacktag_one`, RFC 6298 §3 allows more
    /// than one sample per RTT): the sample runs from the (last) send time of the lowest
    /// such segment newly acknowledged (not SACKed before), or else of the lowest newly
    /// SACKed; none when the cumulative ACK covers a retransmitted segment (Karn).
    EveryAck,
    /// As `every_ack`, and an ACK that advances the cumulative ACK without such a sample
    /// (retransmitted data acknowledged) samples from its timestamp echo, now − TSecr
    /// (RFC 7323 §4.1 RTTM, Linux's `tcp_ack_update_rtt` with timestamps).
    EveryAckTs,
}

/// What a sender does with an ICMP source quench about one of its segments.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QuenchResponse {
    /// Reduce the window as on an ECN echo, once per window of data (ns-2's
    /// `TcpAgent::quench(1)`; RFC 1122 §4.2.3.9 has TCP slow down on a quench).
    #[default]
    Halve,
    /// Ignore quenches (RFC 6633 deprecates host reaction; in ERUF, P2 §2, the quench
    /// is the edge router's signal).
    Ignore,
}

/// Which congestion-control algorithm drives the window (see [`cc`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum CcConfig {
    /// Standard AIMD (RFC 5681): +1 segment per RTT, halve on loss.
    #[default]
    Reno,
    /// Weighted AIMD (MulTCP; paper 004 §3.1): +w segments per RTT, decrease by 1/(2w).
    MulTcp {
        /// Weight w: the flow should get w times a standard flow's share.
        w: f64,
    },
    /// Aggregate-fair increase (paper 000 §5): +(rtt/rtt_av)² segments per RTT.
    AggregateFair {
        /// Average RTT of the aggregate (the host may update it with `set_rtt_av`).
        rtt_av: Dur,
        /// Which RTT of the connection scales its increase.
        rtt: AfRtt,
    },
    /// Constant Rate increase (paper 000 §5, its ref. [7]): +c·rtt² segments per RTT.
    ConstantRate {
        /// c [segments/s²]: the rate grows by c segments/s per second.
        c: f64,
    },
    /// CUBIC (RFC 9438): window W_cubic(t) = C·(t − K)³ + W_max, decrease to β.
    Cubic {
        /// C [segments/s³] (RFC 9438 §5.1: 0.4).
        c: f64,
        /// β_cubic, the multiplicative decrease factor (RFC 9438 §4.6: 0.7).
        beta: f64,
        /// Fast convergence (RFC 9438 §4.7), default on.
        fast_convergence: bool,
        /// HyStart++ (RFC 9406) in the initial slow start, default off.
        hystart: bool,
        /// The RTT the target looks ahead by: the smoothed RTT (RFC 9438 §4.2, default)
        /// or the least sample (Linux's and ns-3's `delay_min`); `rtt = "min"`.
        lead: AfRtt,
        /// W_est's α stays α_cubic after W_est passes cwnd_prior (Linux's and ns-3's
        /// `tcp_friendliness`), instead of RFC 9438 §4.3's α = 1; `w_est = "linux"`.
        w_est_linux: bool,
        /// W_cubic in whole segments, W_max ∓ ⌊C·|t − K|³⌋, as Linux's `bictcp_update`
        /// and ns-3's `TcpCubic::Update` compute it; `target = "linux"`.
        target_linux: bool,
    },
    /// DCTCP (RFC 8257): cut cwnd·(1 − α/2) per window with marks, α the estimated
    /// fraction of marked bytes; needs `ecn = true`, and a queue that marks at a
    /// threshold of its instantaneous length (RFC 8257 §3.1).
    Dctcp {
        /// Estimation gain g of α ← (1 − g)·α + g·F, in (0, 1] (RFC 8257 §3.3: 1/16).
        g: f64,
        /// α before the first window, in [0, 1] (Linux's and ns-3's default: 1).
        alpha_init: f64,
    },
}

/// The RTT that scales an aggregate-fair increase (P0 §5 writes rtt_i without saying
/// whether queueing counts), or that CUBIC's target looks ahead by (RFC 9438 §4.2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AfRtt {
    /// The smoothed RTT (queueing included); `rtt = "srtt"`.
    #[default]
    Smoothed,
    /// The smallest RTT sample so far, the base RTT; `rtt = "min"`.
    Min,
}

/// Congestion control as a table: `{ kind = "multcp", w = 4 }`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CcTable {
    kind: String,
    w: Option<f64>,
    rtt_av: Option<Dur>,
    c: Option<f64>,
    rtt: Option<String>,
    beta: Option<f64>,
    fast_convergence: Option<bool>,
    hystart: Option<bool>,
    w_est: Option<String>,
    target: Option<String>,
    g: Option<f64>,
    alpha_init: Option<f64>,
}

impl CcTable {
    fn into_config<E: de::Error>(self) -> Result<CcConfig, E> {
        let extra = |k: &str| E::custom(format!("key `{k}` does not apply to cc `{}`", self.kind));
        if self.c.is_some() && !matches!(self.kind.as_str(), "constant_rate" | "cubic") {
            return Err(extra("c"));
        }
        if self.kind != "cubic" {
            for (k, set) in [
                ("beta", self.beta.is_some()),
                ("fast_convergence", self.fast_convergence.is_some()),
                ("hystart", self.hystart.is_some()),
                ("w_est", self.w_est.is_some()),
                ("target", self.target.is_some()),
            ] {
                if set {
                    return Err(extra(k));
                }
            }
        }
        if self.kind != "dctcp" {
            for (k, set) in [
                ("g", self.g.is_some()),
                ("alpha_init", self.alpha_init.is_some()),
            ] {
                if set {
                    return Err(extra(k));
                }
            }
        }
        if self.rtt.is_some() && !matches!(self.kind.as_str(), "aggregate_fair" | "cubic") {
            return Err(extra("rtt"));
        }
        let rtt = match self.rtt.as_deref() {
            None | Some("srtt") => AfRtt::Smoothed,
            Some("min") => AfRtt::Min,
            Some(o) => {
                return Err(E::custom(format!(
                    "unknown rtt `{o}` of cc `{}`, expected \"srtt\" or \"min\"",
                    self.kind
                )))
            }
        };
        match self.kind.as_str() {
            "reno" => {
                if self.w.is_some() {
                    return Err(extra("w"));
                }
                if self.rtt_av.is_some() {
                    return Err(extra("rtt_av"));
                }
                Ok(CcConfig::Reno)
            }
            "multcp" => {
                if self.rtt_av.is_some() {
                    return Err(extra("rtt_av"));
                }
                let w = self
                    .w
                    .ok_or_else(|| E::custom("cc `multcp` needs a weight `w`"))?;
                Ok(CcConfig::MulTcp { w })
            }
            "aggregate_fair" => {
                if self.w.is_some() {
                    return Err(extra("w"));
                }
                let rtt_av = self
                    .rtt_av
                    .ok_or_else(|| E::custom("cc `aggregate_fair` needs `rtt_av`"))?;
                Ok(CcConfig::AggregateFair { rtt_av, rtt })
            }
            "constant_rate" => {
                if self.w.is_some() {
                    return Err(extra("w"));
                }
                if self.rtt_av.is_some() {
                    return Err(extra("rtt_av"));
                }
                let c = self
                    .c
                    .ok_or_else(|| E::custom("cc `constant_rate` needs `c` [segments/s²]"))?;
                Ok(CcConfig::ConstantRate { c })
            }
            "cubic" => {
                if self.w.is_some() {
                    return Err(extra("w"));
                }
                if self.rtt_av.is_some() {
                    return Err(extra("rtt_av"));
                }
                Ok(CcConfig::Cubic {
                    c: self.c.unwrap_or(cc::Cubic::C),
                    beta: self.beta.unwrap_or(cc::Cubic::BETA),
                    fast_convergence: self.fast_convergence.unwrap_or(true),
                    hystart: self.hystart.unwrap_or(false),
                    lead: rtt,
                    w_est_linux: match self.w_est.as_deref() {
                        None | Some("rfc9438") => false,
                        Some("linux") => true,
                        Some(o) => {
                            return Err(E::custom(format!(
                                "unknown w_est `{o}` of cc `cubic`, expected \"rfc9438\" or \"linux\""
                            )))
                        }
                    },
                    target_linux: match self.target.as_deref() {
                        None | Some("rfc9438") => false,
                        Some("linux") => true,
                        Some(o) => {
                            return Err(E::custom(format!(
                                "unknown target `{o}` of cc `cubic`, expected \"rfc9438\" or \"linux\""
                            )))
                        }
                    },
                })
            }
            "dctcp" => {
                if self.w.is_some() {
                    return Err(extra("w"));
                }
                if self.rtt_av.is_some() {
                    return Err(extra("rtt_av"));
                }
                Ok(CcConfig::Dctcp {
                    g: self.g.unwrap_or(1.0 / 16.0),
                    alpha_init: self.alpha_init.unwrap_or(1.0),
                })
            }
            other => Err(E::custom(format!(
                "unknown cc `{other}`, expected one of \"reno\", \"multcp\", \"aggregate_fair\", \"constant_rate\", \"cubic\", \"dctcp\""
            ))),
        }
    }
}

impl<'de> Deserialize<'de> for CcConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CcConfig;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("\"reno\" or a table like { kind = \"multcp\", w = 4 }")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<CcConfig, E> {
                CcTable {
                    kind: v.to_string(),
                    w: None,
                    rtt_av: None,
                    c: None,
                    rtt: None,
                    beta: None,
                    fast_convergence: None,
                    hystart: None,
                    w_est: None,
                    target: None,
                    g: None,
                    alpha_init: None,
                }
                .into_config()
            }
            fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<CcConfig, A::Error> {
                let t = CcTable::deserialize(de::value::MapAccessDeserializer::new(m))?;
                t.into_config()
            }
        }
        d.deserialize_any(V)
    }
}

/// Configuration of one TCP connection (both ends read it), as in a scenario file.
///
/// Defaults: NewReno, MSS 1460 B, `max_window` 64 segments (ns-2's `window_` default is
/// 20; 64 keeps common 10 Mb/s × 100 ms paths window-unlimited), initial window 2
/// segments (RFC 5681 §3.1), no delayed ACKs (as ns-2's `TCPSink`), delayed-ACK timeout
/// 200 ms, RTO min 200 ms / initial 1 s (RFC 6298 §2.1) / max 60 s, timer granularity
/// 10 ms (ns-2's `tcpTick_` since 2004), no ECN,
/// infinite receive buffer, 3 SACK blocks, no handshake, Reno AIMD, limited transmit for
/// NewReno and SACK (RFC 3042), RFC 6675 recovery pacing for SACK.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TcpConfig {
    /// Loss-recovery flavour.
    pub variant: Variant,
    /// Maximum segment size: payload bytes per full segment [bytes].
    pub mss: u32,
    /// Cap on the congestion window and on the receiver's advertised window [segments]
    /// (ns-2 `window_`).
    pub max_window: u32,
    /// Initial congestion window [segments].
    pub initial_window: u32,
    /// Receiver acknowledges every second full segment, or after `delack_timeout`.
    pub delayed_ack: bool,
    /// Longest a delayed ACK waits.
    pub delack_timeout: Dur,
    /// Lower bound of the retransmission timeout.
    pub min_rto: Dur,
    /// RTO before the first RTT sample.
    pub initial_rto: Dur,
    /// Upper bound of the (backed-off) RTO.
    pub max_rto: Dur,
    /// Clock granularity G of RFC 6298: RTO = SRTT + max(G, 4·RTTVAR). Default 10 ms
    /// (ns-2's `tcpTick_` since 2004); with G = 0 a path without RTT variance drives the RTO down to
    /// the RTT itself and every microsecond of jitter fires a spurious timeout.
    pub granularity: Dur,
    /// RTO estimator: `"rfc6298"` (default) or `"ns2"` (whole ticks of `granularity`).
    pub rto_estimator: RtoEstimator,
    /// ECN-capable (RFC 3168): first transmissions of data carry ECT (retransmissions do
    /// not, §6.1.5), the receiver echoes CE, the sender halves once per RTT.
    pub ecn: bool,
    /// Finite receive buffer [bytes]; `None` = the application reads everything at once.
    pub rcv_buffer: Option<Bytes>,
    /// SACK blocks per ACK (1..=3), used with `variant = "sack"`.
    pub sack_blocks: u8,
    /// SYN / SYN-ACK before data, FIN after a finite transfer.
    pub handshake: bool,
    /// Congestion control.
    pub cc: CcConfig,
    /// Limited transmit (RFC 3042): a new segment on each of the first two duplicate
    /// ACKs. `None`: on for NewReno and SACK (as Linux and ns-3), off for Tahoe and Reno.
    pub limited_transmit: Option<bool>,
    /// Fast-recovery pacing of the SACK variant: `"rfc6675"` (default) or `"prr"`.
    pub recovery: Recovery,
    /// What ssthresh halves after a loss: `"flight"` (default) or `"window"` (ns-2).
    pub halve: Halve,
    /// Reaction to ICMP source quench: `"halve"` (default; P2 §1: quenches "advise
    /// sources to reduce their sending rates") or `"ignore"`.
    pub on_quench: QuenchResponse,
    /// Appropriate byte counting (RFC 3465, Linux's rule): the window grows by the
    /// bytes each ACK acknowledges, not by one increment per ACK. Default off (ns-2).
    pub byte_counting: bool,
    /// Linux's quick-ACK mode (`tcp_incr_quickack`, `tcp_enter_quickack_mode`): with
    /// `delayed_ack`, the receiver ACKs every segment at once for its first ones (up to
    /// 16, at most half the advertised window in segments), again after a gap in the
    /// data longer than its RTO, 16 more after a duplicate segment, and 2 more after a
    /// CE mark it starts echoing or, with ECN, a segment without ECT (a retransmission).
    /// Default off (RFC 5681's every second segment only).
    pub quickack: bool,
    /// Linux's adaptive delayed-ACK timeout (`ato`): with `delayed_ack`, the timer starts
    /// at `delack_timeout` (Linux's 40 ms `TCP_ATO_MIN`) and follows the gaps between
    /// in-order segments (ato/2 + gap while the gap is under ato), doubles each time it
    /// fires, never above the receiver's RTO; armed for min(ato, max(handshake RTT,
    /// `delack_timeout`), 200 ms). Default off (a fixed `delack_timeout`).
    pub adaptive_delack: bool,
    /// A retransmission timeout that comes before the last window reduction has run its
    /// window of data (fast recovery not over, an ECN reduction's window not yet
    /// acknowledged, a backed-off retransmission of the same segment) keeps the ssthresh
    /// that reduction set, as Linux's `tcp_enter_loss` does; off, every timeout but a
    /// backoff halves again (with `halve = "window"` a backoff too, as ns-2). Default off.
    pub rto_keeps_ssthresh: bool,
    /// Linux's answer to a lost retransmission (SACK only): a timeout marks every
    /// unSACKed segment lost (`tcp_timeout_mark_lost`), and a retransmission is lost
    /// again once a segment sent after it is SACKed (RACK, RFC 8985 §6.2, with no
    /// reordering window in Loss and Recovery, `tcp_rack_reo_wnd`; a SACK of a
    /// retransmitted segment less than the least RTT after its resend does not count,
    /// `tcp_rack_advance`). After a timeout the sender then leaves the timeout's recovery
    /// for fast recovery (`tcp_fastretrans_alert`, `tcp_enter_recovery`) with ssthresh
    /// from the current window (`halve`'s rule, at most cwnd) and PRR from that window
    /// (`tcp_init_cwnd_reduction`), and resends the segment at once; in fast recovery the
    /// segment is resent within the recovery's window. Off, such a loss is found only by
    /// the next timeout. Default off.
    pub rto_lost_retransmit: bool,
    /// Where RTT samples come from: `"timed"` (default, one timed segment per RTT),
    /// `"every_ack"` or `"every_ack_ts"` (Linux's per-ACK samples, without and with
    /// timestamps; see [`RttSamples`]).
    pub rtt_samples: RttSamples,
    /// The fast retransmit leaves a running retransmission timer as it is (ns-3's
    /// `TcpSocketBase`: the timer runs on from the last new ACK, RFC 6298 §5.1 "if the
    /// timer is not running"); off, entering fast recovery restarts it, as Linux's
    /// `tcp_xmit_retransmit_queue` rearms it for the retransmitted head. Default off.
    pub fast_retransmit_keeps_timer: bool,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            variant: Variant::NewReno,
            mss: 1460,
            max_window: 64,
            initial_window: 2,
            delayed_ack: false,
            delack_timeout: Dur::from_millis(200),
            min_rto: Dur::from_millis(200),
            initial_rto: Dur::from_secs(1),
            max_rto: Dur::from_secs(60),
            granularity: Dur::from_millis(10),
            rto_estimator: RtoEstimator::Rfc6298,
            ecn: false,
            rcv_buffer: None,
            sack_blocks: MAX_SACK_BLOCKS as u8,
            handshake: false,
            cc: CcConfig::Reno,
            limited_transmit: None,
            recovery: Recovery::Rfc6675,
            halve: Halve::Flight,
            on_quench: QuenchResponse::Halve,
            byte_counting: false,
            quickack: false,
            adaptive_delack: false,
            rto_keeps_ssthresh: false,
            rto_lost_retransmit: false,
            rtt_samples: RttSamples::Timed,
            fast_retransmit_keeps_timer: false,
        }
    }
}

impl TcpConfig {
    /// Checks the values; the error names the offending key and what was expected.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        crate::ensure_scenario!(
            self.mss > 0,
            "mss",
            "expected a positive segment size [bytes], found 0"
        );
        crate::ensure_scenario!(
            self.mss <= 65_495,
            "mss",
            "expected a segment size of at most 65495 bytes, found {}",
            self.mss
        );
        crate::ensure_scenario!(
            self.max_window >= 1,
            "max_window",
            "expected a window of at least 1 segment, found 0"
        );
        crate::ensure_scenario!(
            (self.max_window as u64) * (self.mss as u64) <= u32::MAX as u64 / 2,
            "max_window",
            "expected max_window × mss below 2 GB, found {} segments of {} bytes",
            self.max_window,
            self.mss
        );
        crate::ensure_scenario!(
            self.initial_window >= 1,
            "initial_window",
            "expected at least 1 segment, found 0"
        );
        crate::ensure_scenario!(
            self.delack_timeout > Dur::ZERO || !self.delayed_ack,
            "delack_timeout",
            "expected a positive duration when delayed_ack is on"
        );
        crate::ensure_scenario!(
            self.min_rto > Dur::ZERO,
            "min_rto",
            "expected a positive duration"
        );
        crate::ensure_scenario!(
            self.initial_rto >= self.min_rto,
            "initial_rto",
            "expected at least min_rto ({}), found {}",
            self.min_rto,
            self.initial_rto
        );
        crate::ensure_scenario!(
            self.max_rto >= self.initial_rto,
            "max_rto",
            "expected at least initial_rto ({}), found {}",
            self.initial_rto,
            self.max_rto
        );
        if let Some(b) = self.rcv_buffer {
            crate::ensure_scenario!(
                b.0 >= self.mss as u64,
                "rcv_buffer",
                "expected at least one segment ({} bytes), found {}",
                self.mss,
                b.0
            );
        }
        crate::ensure_scenario!(
            (1..=MAX_SACK_BLOCKS as u8).contains(&self.sack_blocks),
            "sack_blocks",
            "expected 1 to {MAX_SACK_BLOCKS} blocks, found {}",
            self.sack_blocks
        );
        crate::ensure_scenario!(
            self.recovery == Recovery::Rfc6675 || self.variant == Variant::Sack,
            "recovery",
            "expected \"prr\" only with variant = \"sack\" (PRR paces recovery by SACKed data), found variant {:?}",
            self.variant
        );
        match self.cc {
            CcConfig::Reno => {}
            CcConfig::MulTcp { w } => crate::ensure_scenario!(
                w.is_finite() && w > 0.5,
                "cc.w",
                "expected a weight w > 0.5 (the decrease factor 1 − 1/(2w) must stay positive), found {w}"
            ),
            CcConfig::AggregateFair { rtt_av, .. } => crate::ensure_scenario!(
                rtt_av > Dur::ZERO,
                "cc.rtt_av",
                "expected a positive average RTT"
            ),
            CcConfig::ConstantRate { c } => crate::ensure_scenario!(
                c.is_finite() && c > 0.0,
                "cc.c",
                "expected a positive constant c [segments/s²], found {c}"
            ),
            CcConfig::Cubic { c, beta, .. } => {
                crate::ensure_scenario!(
                    c.is_finite() && c > 0.0,
                    "cc.c",
                    "expected a positive CUBIC constant C [segments/s³] (RFC 9438: 0.4), found {c}"
                );
                crate::ensure_scenario!(
                    beta > 0.0 && beta < 1.0,
                    "cc.beta",
                    "expected a decrease factor beta in (0, 1) (RFC 9438: 0.7), found {beta}"
                );
            }
            CcConfig::Dctcp { g, alpha_init } => {
                crate::ensure_scenario!(
                    g > 0.0 && g <= 1.0,
                    "cc.g",
                    "expected an estimation gain g in (0, 1] (RFC 8257: 1/16), found {g}"
                );
                crate::ensure_scenario!(
                    (0.0..=1.0).contains(&alpha_init),
                    "cc.alpha_init",
                    "expected an initial alpha in [0, 1] (a fraction of marked bytes), found {alpha_init}"
                );
                crate::ensure_scenario!(
                    self.ecn,
                    "ecn",
                    "cc \"dctcp\" reacts to ECN marks only (RFC 8257 §3): set ecn = true"
                );
            }
        }
        Ok(())
    }

    /// Whether limited transmit is on: the `limited_transmit` key, or the variant's
    /// default (NewReno and SACK).
    pub fn limited_transmit(&self) -> bool {
        self.limited_transmit
            .unwrap_or(matches!(self.variant, Variant::NewReno | Variant::Sack))
    }

    /// The window cap [bytes]: `max_window` segments of `mss` bytes.
    pub fn max_window_bytes(&self) -> u32 {
        self.max_window.saturating_mul(self.mss)
    }

    /// The name of the settings a TRC's TCP model depends on (P1 §4.1 fitted eq. 1 to
    /// one TCP, ns-2's SACK): `{variant}-{halve}-{lt|nolt}-{delack|nodelack}`, with
    /// `-prr` for PRR recovery and `-{cc}` for a congestion control other than Reno.
    /// Timers, MSS, windows and ECN do not enter (the fitted cycle is counted in RTTs
    /// and packets and has no timeouts; ECN picks the model's mode).
    pub fn model_name(&self) -> String {
        let variant = match self.variant {
            Variant::Tahoe => "tahoe",
            Variant::Reno => "reno",
            Variant::NewReno => "newreno",
            Variant::Sack => "sack",
        };
        let halve = match (self.halve, self.variant) {
            (Halve::Pipe, Variant::Sack) => "pipe",
            (Halve::Flight | Halve::Pipe, _) => "flight",
            (Halve::Window, _) => "window",
        };
        let lt = if self.limited_transmit() {
            "lt"
        } else {
            "nolt"
        };
        let ack = if self.delayed_ack {
            "delack"
        } else {
            "nodelack"
        };
        let mut name = format!("{variant}-{halve}-{lt}-{ack}");
        if self.recovery == Recovery::Prr {
            name += "-prr";
        }
        match self.cc {
            CcConfig::Reno => {}
            CcConfig::MulTcp { .. } => name += "-multcp",
            CcConfig::AggregateFair { .. } => name += "-aggregate_fair",
            CcConfig::ConstantRate { .. } => name += "-constant_rate",
            CcConfig::Cubic { .. } => name += "-cubic",
            CcConfig::Dctcp { .. } => name += "-dctcp",
        }
        name
    }
}

/// Where the sender is in its life and in loss recovery (for traces).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TcpState {
    /// Waiting for the SYN-ACK.
    SynSent,
    /// Sending normally (slow start or congestion avoidance).
    #[default]
    Open,
    /// Open, but duplicate ACKs or SACKed data show reordering or loss, not yet enough
    /// to enter recovery (Linux's `TCP_CA_Disorder`; only reported by probes).
    Disorder,
    /// Fast recovery (Reno, NewReno) or SACK recovery.
    Recovery,
    /// After a retransmission timeout, until everything sent before it is acknowledged.
    Loss,
    /// Everything (and the FIN, with a handshake) is acknowledged.
    Done,
}

impl TcpState {
    /// Lower-case name as in the `traces` table: `open`, `disorder`, `recovery`, …
    pub fn name(self) -> &'static str {
        match self {
            TcpState::SynSent => "syn_sent",
            TcpState::Open => "open",
            TcpState::Disorder => "disorder",
            TcpState::Recovery => "recovery",
            TcpState::Loss => "loss",
            TcpState::Done => "done",
        }
    }
}

/// Counters of one sender.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpSenderStats {
    /// Segments sent (data, SYN, FIN, window probes; retransmissions included).
    pub segments_sent: u64,
    /// Payload bytes sent, retransmissions included [bytes].
    pub bytes_sent: u64,
    /// Data segments sent again.
    pub retransmits: u64,
    /// Fast-retransmit events (entries into recovery, Tahoe's included).
    pub fast_retransmits: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// Duplicate ACKs received.
    pub dupacks: u64,
    /// Window reductions caused by ECN echo.
    pub ecn_reductions: u64,
    /// Window reductions caused by source quench.
    pub quench_reductions: u64,
    /// RTT samples taken.
    pub rtt_samples: u64,
    /// Payload bytes cumulatively acknowledged [bytes].
    pub bytes_acked: u64,
}

impl TcpSenderStats {
    /// Counters accumulated since `earlier` (e.g. the end of the warm-up).
    pub fn since(&self, earlier: &TcpSenderStats) -> TcpSenderStats {
        TcpSenderStats {
            segments_sent: self.segments_sent - earlier.segments_sent,
            bytes_sent: self.bytes_sent - earlier.bytes_sent,
            retransmits: self.retransmits - earlier.retransmits,
            fast_retransmits: self.fast_retransmits - earlier.fast_retransmits,
            timeouts: self.timeouts - earlier.timeouts,
            dupacks: self.dupacks - earlier.dupacks,
            ecn_reductions: self.ecn_reductions - earlier.ecn_reductions,
            quench_reductions: self.quench_reductions - earlier.quench_reductions,
            rtt_samples: self.rtt_samples - earlier.rtt_samples,
            bytes_acked: self.bytes_acked - earlier.bytes_acked,
        }
    }
}

/// A snapshot of the sender for traces.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TcpProbe {
    /// Congestion window [bytes].
    pub cwnd: u32,
    /// Slow-start threshold [bytes].
    pub ssthresh: u32,
    /// Smoothed RTT (`None` before the first sample).
    pub srtt: Option<Dur>,
    /// RTT variation (`None` before the first sample).
    pub rttvar: Option<Dur>,
    /// Current retransmission timeout, backoff included.
    pub rto: Dur,
    /// Bytes sent and not yet cumulatively acknowledged [bytes].
    pub in_flight: u64,
    /// Lowest unacknowledged byte.
    pub snd_una: u64,
    /// One past the highest byte sent.
    pub snd_max: u64,
    /// Life-cycle and recovery state.
    pub state: TcpState,
    /// Duplicate ACKs counted since the last new ACK.
    pub dupacks: u32,
    /// RFC 6675 `pipe` [bytes] (SACK only; `None` for the other variants).
    pub pipe: Option<u64>,
}

/// Earliest of two optional deadlines.
pub(crate) fn earliest(a: Option<SimTime>, b: Option<SimTime>) -> Option<SimTime> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

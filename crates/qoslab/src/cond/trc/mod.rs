//! TCP Rate Controller, TRC (P1: Dorfinger, Brandauer, Hofmann): a per-flow ingress
//! conditioner that gives one long-lived TCP flow a requested goodput by dropping
//! (or, in ECN mode, marking) every 1/p + E of its data packets and delaying the
//! others by RTT_TRC, with p and RTT_TRC chosen from a TCP model ([`model`]).
//!
//! ```text
//!  data packet of the controlled flow ─► slow start (Fig. 5)?
//!      yes: the (⌊W_max⌋+1)-th packet is dropped/marked; the others are paced at
//!           the target rate (queued until last release + payload·8/R)
//!      no:  (Fig. 1) every (1/p + E)-th packet is dropped/marked; the others wait
//!           RTT_TRC in the flow's delay buffer (FIFO, ⌈W_max⌉ packets)
//!  anything else (ACKs, other flows, SYN/FIN without payload) ─► passes untouched
//! ```
//!
//! Drop spacing: the n-th data packet since slow start ended is dropped when n reaches
//! the next multiple of 1/p + E, carried as a real number, so drops are exactly
//! 1/p + E packets apart on average and each gap is ⌊1/p + E⌋ or ⌈1/p + E⌉ (exactly
//! 1/p + E when that is an integer). Of each gap's packets one is dropped and one is
//! the retransmission of the previous drop, so 1/p new packets arrive per cycle, as
//! eq. 2 counts (E = 1 "compensates the drop in the last cycle", §4.2).
//!
//! Recovery lead (`recovery_lead`, default RTT_dev when the flow's RTO clock granularity
//! G is at most RTT_dev, else none, [`default_lead`]): from a controlled drop until the
//! dropped segment's retransmission has passed, the flow's packets wait RTT_TRC − L
//! instead of RTT_TRC, L = min(`recovery_lead`, RTT_TRC) (FIFO kept, so nothing is
//! reordered). The retransmission is recognised by its sequence number (at or below the
//! dropped one) and is never dropped: a drop falling due on it moves to the next new
//! packet (§4.1: "losses are exclusively controlled by the TRC and do not force any
//! timeout"). Why: the TRC holds the RTT so steady that RFC 6298's RTTVAR decays to a
//! few ms, so the RTO, SRTT + max(G, 4·RTTVAR), exceeds the RTT by little more than the
//! clock granularity G. The duplicate ACKs that detect the drop (a round later when the
//! drop was among the last packets of a round) and the retransmission race that timer
//! against the network's queueing jitter, which the operator bounds by RTT_dev (§4.4);
//! led by RTT_dev they win whenever the jitter stays within that bound. Packets sent
//! after the retransmission wait RTT_TRC again, and no RTT sample comes from the led
//! ones (the retransmission cancels the timing of every segment above it, Karn's rule),
//! so the RTT the model assumes is unchanged. `recovery_lead = "0s"` is Fig. 1 as printed.
//!
//! A TRC stage names its flow (`flow = "f1"`); the scenario builder binds it to the
//! flow and its path ([`TrcBinding`]): the MSS, and RTT_net (propagation both ways plus
//! the serialisation of one full data packet and one ACK on every hop) unless the file
//! gives `rtt_net`.

pub mod model;

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::{Action, Conditioner};
use crate::config::ScenarioError;
use crate::drop::DropCause;
use crate::packet::{Ecn, FlowId, Packet};
use crate::tcp::TcpConfig;
use crate::time::{Dur, Rate, SimTime};
use model::{TcpModel, TrcInputs, TrcParams};

fn default_rtt_dev() -> Dur {
    Dur::from_millis(10)
}
fn default_gput_error() -> f64 {
    0.05
}
fn default_rho() -> f64 {
    0.85
}
fn yes() -> bool {
    true
}

/// A TRC stage as written in a scenario file (`kind = "trc"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrcConfig {
    /// Name of the controlled flow (a TCP flow leaving through this chain).
    pub flow: String,
    /// Requested goodput R_req. Required unless `w_max` and `rtt_trc` are given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    /// RTT of the path without the TRC; default: computed from the flow's path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_net: Option<Dur>,
    /// Operator's bound on the RTT error (§4.4); default 10 ms.
    #[serde(default = "default_rtt_dev")]
    pub rtt_dev: Dur,
    /// Goodput error to compensate, a fraction (§4.4); default 0.05.
    #[serde(default = "default_gput_error")]
    pub gput_error: f64,
    /// RTT*_min; default rtt_dev / gput_error (eq. 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_min: Option<Dur>,
    /// Mark CE instead of dropping (E = 0); the flow must be ECN-capable.
    #[serde(default)]
    pub ecn: bool,
    /// `"fitted"` (default: the built-in model fitted to the flow's TCP settings),
    /// `"paper"` (eqs. 1–4 as published), or a fitted model: a built-in one's name, a
    /// model file's path or a name stored by `qoslab trc fit` ([`model::TcpModel`]); a
    /// model fitted to other TCP settings is refused ([`model::mismatches`]).
    #[serde(default)]
    pub model: TcpModel,
    /// Control slow start as in Fig. 5 (default true).
    #[serde(default = "yes")]
    pub slow_start: bool,
    /// Lead of the packets from a drop to its retransmission; default `rtt_dev`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_lead: Option<Dur>,
    /// Fixed W_max instead of Fig. 2 (with `rtt_trc`), e.g. to fit the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub w_max: Option<f64>,
    /// Fixed RTT_TRC instead of Fig. 2 (with `w_max`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_trc: Option<Dur>,
    /// Delay buffer [packets]; default ⌈W_max⌉. Arrivals beyond it are dropped
    /// (cause `cond_buffer_full`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer: Option<u32>,
    /// Admission: requested rates on any link of the path may total at most ρ·BW.
    #[serde(default = "default_rho")]
    pub rho: f64,
    /// Filled in by the scenario builder, never read from a file.
    #[serde(skip)]
    pub binding: Option<TrcBinding>,
}

/// The default recovery lead: RTT_dev for a TCP whose RTO clock granularity G is at
/// most RTT_dev (its RTO, SRTT + max(G, 4·RTTVAR), can then come within RTT_dev of the
/// steady RTT the TRC holds, so a deviation within the operator's bound can fire it),
/// none for a coarser clock (ns-2's 100 ms tick, the paper's TCP: the RTO stays more
/// than RTT_dev above the RTT, and Fig. 1 runs as printed).
pub fn default_lead(rtt_dev: Dur, granularity: Dur) -> Dur {
    if granularity <= rtt_dev {
        rtt_dev
    } else {
        Dur::ZERO
    }
}

/// What the scenario builder knows about a TRC's flow and path.
#[derive(Clone, Debug, PartialEq)]
pub struct TrcBinding {
    /// The controlled flow.
    pub flow: FlowId,
    /// Payload bytes per segment of the flow.
    pub mss: u32,
    /// The flow's TCP settings (the model must match them, [`model::mismatches`]).
    pub tcp: TcpConfig,
    /// The flow's RTO clock granularity G (`tcp.granularity`).
    pub granularity: Dur,
    /// RTT of the path without the TRC [ns]: `rtt_net` from the file, or computed.
    pub rtt_net: Dur,
}

fn err(key: &str, msg: impl Into<String>) -> ScenarioError {
    ScenarioError::new(key, msg)
}

impl TrcConfig {
    /// Checks what can be checked without the flow; keys relative to the stage.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        if self.flow.is_empty() {
            return Err(err("flow", "expected the name of the controlled TCP flow"));
        }
        match (self.w_max, self.rtt_trc) {
            (Some(w), Some(_)) => {
                if !(w.is_finite() && w >= 5.0) {
                    return Err(err(
                        "w_max",
                        format!("W_max must be at least 5 (P1 §4.3), found {w}"),
                    ));
                }
            }
            (Some(_), None) => return Err(err("rtt_trc", "w_max needs rtt_trc")),
            (None, Some(_)) => return Err(err("w_max", "rtt_trc needs w_max")),
            (None, None) => {
                if self.rate.is_none() {
                    return Err(err(
                        "rate",
                        "a TRC needs the requested rate (or fixed w_max and rtt_trc)",
                    ));
                }
            }
        }
        if let Some(r) = self.rate {
            if r.bps() == 0 {
                return Err(err("rate", "a rate must be positive, found 0"));
            }
        }
        if !(self.gput_error.is_finite() && (0.0..1.0).contains(&self.gput_error)) {
            return Err(err(
                "gput_error",
                format!("expected a fraction in [0, 1), found {}", self.gput_error),
            ));
        }
        if self.gput_error == 0.0 && self.rtt_min.is_none() {
            return Err(err(
                "gput_error",
                "gput_error = 0 makes RTT*_min = RTT_dev/gput_error infinite; give rtt_min",
            ));
        }
        if !(self.rho.is_finite() && self.rho > 0.0 && self.rho <= 1.0) {
            return Err(err(
                "rho",
                format!("expected a fraction in (0, 1], found {}", self.rho),
            ));
        }
        if self.buffer == Some(0) {
            return Err(err("buffer", "the delay buffer needs at least one packet"));
        }
        Ok(())
    }

    /// The recovery lead for a flow whose RTO clock granularity is `granularity`:
    /// `recovery_lead` if given, else [`default_lead`].
    pub fn lead(&self, granularity: Dur) -> Dur {
        self.recovery_lead
            .unwrap_or(default_lead(self.rtt_dev, granularity))
    }

    /// Whether the TRC runs the recovery lead by default for a TCP with RTO clock
    /// granularity `granularity`, for the model comparison (`None`: `recovery_lead` is
    /// set explicitly, the operator's choice, not compared).
    pub fn default_lead_on(&self, granularity: Dur) -> Option<bool> {
        match self.recovery_lead {
            Some(_) => None,
            None => Some(default_lead(self.rtt_dev, granularity) > Dur::ZERO),
        }
    }

    /// The parameters for a flow with TCP settings `tcp` over a path of `rtt_net`,
    /// keeping at least `lead` of delay for the recovery lead (drop mode; see
    /// [`model::parameters`]). A model error is at key `model`.
    pub fn parameters(
        &self,
        tcp: &TcpConfig,
        rtt_net: Dur,
        lead: Dur,
    ) -> Result<TrcParams, ScenarioError> {
        let mss = tcp.mss;
        let lead_on = self.default_lead_on(tcp.granularity);
        let rtt_net = rtt_net.as_secs_f64();
        if let (Some(w), Some(d)) = (self.w_max, self.rtt_trc) {
            // Fixed W_max and RTT_TRC (model fits): the prediction is informative only,
            // so a TCP without a fitted model gets the paper's law.
            let law = match self.model.law(tcp, lead_on, self.ecn) {
                Ok(l) => l,
                Err(m) if matches!(self.model, TcpModel::Named(_)) => return Err(err("model", m)),
                Err(_) => model::PAPER,
            };
            return Ok(model::fixed_parameters(
                w,
                d.as_secs_f64(),
                mss,
                rtt_net,
                law,
                self.ecn,
            ));
        }
        let law = self
            .model
            .law(tcp, lead_on, self.ecn)
            .map_err(|m| err("model", m))?;
        let rate = self.rate.expect("validated: rate or w_max + rtt_trc");
        model::parameters(&TrcInputs {
            rate: rate.bps() as f64,
            mss,
            rtt_net,
            rtt_dev: self.rtt_dev.as_secs_f64(),
            gput_error: self.gput_error,
            rtt_min_star: self.rtt_min.map(Dur::as_secs_f64),
            lead_room: lead.as_secs_f64(),
            law,
            ecn: self.ecn,
        })
        .map_err(|m| err("rate", m))
    }

    /// A warning when the TRC's model cannot promise P1's 3 % at the parameters `p` it
    /// chose for a flow with `tcp` ([`model::CycleTime::uncertainty`]): the request may
    /// be missed by the jump it names.
    pub fn model_warning(&self, tcp: &TcpConfig, p: &TrcParams) -> Option<String> {
        if self.w_max.is_some() {
            return None;
        }
        if self.ecn && tcp.delayed_ack {
            // Measured (docs/queues-and-conditioners.md#trc-models): at one W_max and
            // total RTT the cycle takes one of two lengths by the ACK timer's phase
            // (15.5 or 14.5 RTTs at W_max 22.5, 219 ms, as the access delay changes).
            return Some(format!(
                "TRC for flow {:?}: in ECN mode a TCP with delayed ACKs has two cycle lengths at one W_max and RTT (by the ACK timer's phase, up to 7 % apart), so the model cannot promise the request within P1's 3 %; drops (ecn = false) do not have this",
                self.flow
            ));
        }
        let law = self
            .model
            .law(tcp, self.default_lead_on(tcp.granularity), self.ecn)
            .ok()?;
        law.uncertainty(p.w_max, p.rtt).map(|why| {
            format!(
                "TRC for flow {:?}: {why}; the model cannot promise the request within P1's 3 % there",
                self.flow
            )
        })
    }

    /// Builds the conditioner; the stage must have been bound to its flow.
    pub fn build(&self) -> Result<Trc, ScenarioError> {
        self.validate()?;
        let b = self.binding.as_ref().ok_or_else(|| {
            err(
                "kind",
                "a TRC must be a stage of a [[conditioner]] chain (not inside a policy rule)",
            )
        })?;
        let lead = self.lead(b.granularity);
        let params = self.parameters(&b.tcp, b.rtt_net, lead)?;
        Ok(Trc::new(
            TrcSetup {
                flow: b.flow,
                params,
                ecn: self.ecn,
                slow_start: self.slow_start,
                lead: lead.min(Dur::from_secs_f64(params.rtt_trc)),
                buffer: self.buffer.unwrap_or(params.buffer),
            },
            b.rtt_net,
        ))
    }
}

/// Everything a [`Trc`] needs, resolved and computed (STYLE §6: config apart from state).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrcSetup {
    /// The controlled flow.
    pub flow: FlowId,
    /// p, W_max, RTT_TRC, target rate, … from Fig. 2 or fixed.
    pub params: TrcParams,
    /// Mark CE instead of dropping.
    pub ecn: bool,
    /// Control slow start (Fig. 5).
    pub slow_start: bool,
    /// Recovery lead L ≤ RTT_TRC (see the module doc); zero: Fig. 1 as printed.
    pub lead: Dur,
    /// Delay buffer [packets].
    pub buffer: u32,
}

/// What a TRC did, for the `trc` result table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TrcCounters {
    /// Data packets of the flow seen.
    pub packets: u64,
    /// Controlled drops.
    pub dropped: u64,
    /// Controlled CE marks (ECN mode).
    pub marked: u64,
    /// Drops because the delay buffer was full (should stay 0).
    pub buffer_full: u64,
    /// Most packets held at once.
    pub max_held: u32,
    /// When slow-start control ended [ns] (u64::MAX while it has not).
    pub slow_start_end: u64,
    /// Packets forwarded with the recovery lead (drop to retransmission).
    pub led: u64,
    /// Retransmissions of dropped segments seen (with the lead on).
    pub retransmissions: u64,
}

/// One flow's TRC: setup plus state.
#[derive(Clone, Debug)]
pub struct Trc {
    setup: TrcSetup,
    rtt_net: Dur,
    rtt_trc: Dur,
    /// Gap between paced packets per payload byte [ns/byte] in slow start.
    ns_per_byte: f64,
    in_slow_start: bool,
    /// Data packets since slow-start control ended (or since the start without it).
    n: u64,
    /// Arrival index (in `n`) at which the next drop falls, as a real number.
    next_drop: f64,
    /// Packets forwarded in slow start.
    ss_forwarded: u64,
    /// Release times of held packets, FIFO.
    held: VecDeque<SimTime>,
    last_release: SimTime,
    /// Sequence number of the last dropped segment while its retransmission has not
    /// been seen (the recovery lead applies).
    awaiting_rtx: Option<u64>,
    counters: TrcCounters,
}

impl Trc {
    /// A TRC in its initial state (slow start, empty buffer).
    pub fn new(setup: TrcSetup, rtt_net: Dur) -> Self {
        let p = &setup.params;
        Trc {
            rtt_net,
            rtt_trc: Dur::from_secs_f64(p.rtt_trc),
            ns_per_byte: 8e9 / p.target,
            in_slow_start: setup.slow_start,
            n: 0,
            next_drop: p.drop_every,
            ss_forwarded: 0,
            held: VecDeque::new(),
            last_release: SimTime::ZERO,
            awaiting_rtx: None,
            counters: TrcCounters {
                slow_start_end: if setup.slow_start { u64::MAX } else { 0 },
                ..Default::default()
            },
            setup,
        }
    }
    /// The setup (flow, parameters).
    pub fn setup(&self) -> &TrcSetup {
        &self.setup
    }
    /// RTT_net the parameters were computed for.
    pub fn rtt_net(&self) -> Dur {
        self.rtt_net
    }
    /// What it did so far.
    pub fn counters(&self) -> &TrcCounters {
        &self.counters
    }
    /// Packets in the delay buffer at `now`.
    pub fn held_at(&self, now: SimTime) -> usize {
        self.held.iter().filter(|&&t| t > now).count()
    }

    /// Drops the packet (segment `seq`), or marks it CE and delays it, in ECN mode.
    fn signal(&mut self, now: SimTime, pkt: &mut Packet, seq: u64) -> Action {
        if self.setup.ecn && pkt.ecn != Ecn::NotEct {
            pkt.ecn = Ecn::Ce;
            self.counters.marked += 1;
            self.hold(now, now + self.rtt_trc)
        } else {
            self.counters.dropped += 1;
            if self.setup.lead > Dur::ZERO {
                self.awaiting_rtx = Some(seq);
            }
            Action::Drop(DropCause::Controlled)
        }
    }

    /// The delay of a packet in congestion avoidance: RTT_TRC, less the lead from a
    /// drop until its retransmission (`seq` at or below the dropped segment) passed.
    fn delay(&mut self, seq: u64) -> Dur {
        match self.awaiting_rtx {
            Some(d) => {
                if seq <= d {
                    self.awaiting_rtx = None;
                    self.counters.retransmissions += 1;
                }
                self.counters.led += 1;
                self.rtt_trc - self.setup.lead
            }
            None => self.rtt_trc,
        }
    }

    /// Puts the packet in the delay buffer until `until` (FIFO: never before the last).
    fn hold(&mut self, now: SimTime, until: SimTime) -> Action {
        let release = until.max(self.last_release);
        if release <= now {
            self.last_release = now;
            return Action::Pass;
        }
        if self.held.len() >= self.setup.buffer as usize {
            self.counters.buffer_full += 1;
            return Action::Drop(DropCause::CondBufferFull);
        }
        self.last_release = release;
        self.held.push_back(release);
        self.counters.max_held = self.counters.max_held.max(self.held.len() as u32);
        Action::DelayUntil(release)
    }
}

impl Conditioner for Trc {
    fn condition(&mut self, now: SimTime, pkt: &mut Packet) -> Action {
        if pkt.flow != self.setup.flow {
            return Action::Pass;
        }
        let (len, seq) = match pkt.tcp() {
            Some(h) if h.len > 0 => (h.len, h.seq),
            _ => return Action::Pass, // ACKs, SYN/FIN, non-TCP
        };
        while self.held.front().is_some_and(|&t| t <= now) {
            self.held.pop_front();
        }
        self.counters.packets += 1;
        if self.in_slow_start {
            // Fig. 5: forward ⌊W_max⌋ packets paced at the target rate, then drop one.
            if self.ss_forwarded >= self.setup.params.w_max.floor() as u64 {
                self.in_slow_start = false;
                self.counters.slow_start_end = now.as_nanos();
                return self.signal(now, pkt, seq);
            }
            let gap = Dur::from_nanos((len as f64 * self.ns_per_byte).round() as u64);
            // The first packet leaves at once; each later one a payload's time at the
            // target rate after the one before it (or at once if that time has passed).
            let at = if self.ss_forwarded == 0 {
                now
            } else {
                (self.last_release + gap).max(now)
            };
            self.ss_forwarded += 1;
            return self.hold(now, at);
        }
        // Fig. 1: every (1/p + E)-th packet is dropped, the others wait RTT_TRC.
        self.n += 1;
        // Never the retransmission of a drop (with the lead on): the drop moves on.
        let rtx = self.awaiting_rtx.is_some_and(|d| seq <= d);
        if self.n as f64 >= self.next_drop && !rtx {
            self.next_drop += self.setup.params.drop_every;
            return self.signal(now, pkt, seq);
        }
        let d = self.delay(seq);
        self.hold(now, now + d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Header, TcpHeader};

    fn setup(w_max: f64, rtt_trc: f64, ecn: bool, slow_start: bool) -> TrcSetup {
        let params = model::fixed_parameters(w_max, rtt_trc, 1000, 0.003, model::PAPER, ecn);
        TrcSetup {
            flow: FlowId(3),
            params,
            ecn,
            slow_start,
            lead: Dur::ZERO,
            buffer: params.buffer,
        }
    }

    fn data(flow: u32) -> Packet {
        Packet {
            flow: FlowId(flow),
            size: 1040,
            ecn: Ecn::Ect,
            hdr: Header::Tcp(TcpHeader {
                len: 1000,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// Indices (1-based) of the packets that are dropped or marked.
    fn signalled(trc: &mut Trc, n: usize) -> Vec<usize> {
        let mut out = Vec::new();
        for i in 1..=n {
            let now = SimTime::from_millis(2 * i as u64);
            let mut p = data(3);
            match trc.condition(now, &mut p) {
                Action::Drop(DropCause::Controlled) => out.push(i),
                Action::Drop(c) => panic!("unexpected drop {c:?}"),
                _ if p.ecn == Ecn::Ce => out.push(i),
                _ => {}
            }
        }
        out
    }

    #[test]
    fn drops_are_exactly_1_over_p_plus_e_apart() {
        // W_max = 6.5: 1/p = 21.96875, E = 1 → spacing 22.96875: gaps of 22 and 23
        // whose running sum never strays from k·22.96875 by a packet.
        let mut t = Trc::new(setup(6.5, 0.01, false, false), Dur::from_millis(3));
        let d = signalled(&mut t, 100_000);
        for (k, &i) in d.iter().enumerate() {
            let ideal = (k + 1) as f64 * 22.96875;
            assert!((i as f64) >= ideal && (i as f64) < ideal + 1.0, "{k}: {i}");
        }
        assert!(d.windows(2).all(|w| matches!(w[1] - w[0], 22 | 23)));
        let mean = (d[d.len() - 1] - d[0]) as f64 / (d.len() - 1) as f64;
        assert!((mean - 22.96875).abs() < 1e-3, "{mean}");
        assert_eq!(t.counters().dropped as usize, d.len());
    }

    #[test]
    fn integer_spacing_is_exact() {
        // No half-integer W_max gives an integer 1/p + E, so set a spacing of 40.
        let mut s = setup(6.5, 0.01, false, false);
        s.params.drop_every = 40.0;
        let mut t = Trc::new(s, Dur::from_millis(3));
        let d = signalled(&mut t, 4000);
        assert_eq!(d.len(), 100);
        assert!(d.iter().enumerate().all(|(k, &i)| i == 40 * (k + 1)));
    }

    #[test]
    fn ecn_mode_marks_and_drops_nothing() {
        let mut t = Trc::new(setup(6.5, 0.01, true, true), Dur::from_millis(3));
        let d = signalled(&mut t, 10_000);
        assert_eq!(t.counters().dropped, 0);
        assert_eq!(t.counters().marked as usize, d.len());
        // Slow start: 6 forwarded, the 7th marked; then every 1/p = 21.96875.
        assert_eq!(d[0], 7);
        assert!(d.windows(2).all(|w| matches!(w[1] - w[0], 21 | 22)));
    }

    #[test]
    fn slow_start_forwards_floor_w_max_then_drops_and_paces() {
        // W_max = 8.5 → 8 packets paced at the target rate, the 9th dropped.
        let s = setup(8.5, 0.05, false, true);
        let gap = (1000.0 * 8e9 / s.params.target).round() as u64;
        let mut t = Trc::new(s, Dur::from_millis(3));
        let now = SimTime::from_millis(1);
        let mut rel = Vec::new();
        for _ in 0..8 {
            let mut p = data(3);
            match t.condition(now, &mut p) {
                Action::Pass => rel.push(now),
                Action::DelayUntil(r) => rel.push(r),
                a => panic!("{a:?}"),
            }
        }
        assert_eq!(rel[0], now);
        for w in rel.windows(2) {
            assert_eq!((w[1] - w[0]).as_nanos(), gap);
        }
        let mut p = data(3);
        assert_eq!(
            t.condition(now, &mut p),
            Action::Drop(DropCause::Controlled)
        );
        // Now in congestion avoidance: delayed by RTT_TRC, but never before the paced ones.
        let mut p = data(3);
        let later = SimTime::from_millis(2);
        let a = t.condition(later, &mut p);
        assert_eq!(
            a,
            Action::DelayUntil((later + Dur::from_millis(50)).max(rel[7]))
        );
    }

    #[test]
    fn acks_and_other_flows_pass_untouched() {
        let mut t = Trc::new(setup(6.5, 0.01, false, true), Dur::from_millis(3));
        for i in 0..1000u64 {
            let now = SimTime::from_micros(i);
            let mut other = data(4);
            let before = other;
            assert_eq!(t.condition(now, &mut other), Action::Pass);
            assert_eq!(other, before);
            let mut ack = data(3);
            ack.hdr = Header::Tcp(TcpHeader::default());
            ack.size = 40;
            assert_eq!(t.condition(now, &mut ack), Action::Pass);
        }
        assert_eq!(t.counters().packets, 0);
    }

    fn seg(seq: u64) -> Packet {
        let mut p = data(3);
        if let Header::Tcp(h) = &mut p.hdr {
            h.seq = seq;
        }
        p
    }

    #[test]
    fn recovery_lead_runs_from_a_drop_to_its_retransmission() {
        // Spacing 22.96875: the 23rd new segment is dropped. With a 10 ms lead the
        // segments after it wait RTT_TRC − 10 ms until the dropped one comes again,
        // which is neither dropped nor delayed more; after it RTT_TRC again.
        let mut s = setup(6.5, 0.05, false, false);
        s.lead = Dur::from_millis(10);
        let mut t = Trc::new(s, Dur::from_millis(3));
        let mut now = SimTime::from_millis(1);
        let mut delays = Vec::new();
        let send = |t: &mut Trc, seq: u64, now: SimTime| match t.condition(now, &mut seg(seq)) {
            Action::DelayUntil(r) => Some((r - now).as_nanos()),
            Action::Pass => Some(0),
            Action::Drop(_) => None,
        };
        for k in 0..22u64 {
            now += Dur::from_millis(100); // far apart: FIFO never binds
            assert_eq!(send(&mut t, 1000 * k, now), Some(50_000_000), "{k}");
        }
        now += Dur::from_millis(100);
        assert_eq!(send(&mut t, 22_000, now), None); // the drop
        for k in 23..26u64 {
            now += Dur::from_millis(100);
            delays.push(send(&mut t, 1000 * k, now));
        }
        assert_eq!(delays, vec![Some(40_000_000); 3]);
        // The retransmission: led too, and counted.
        now += Dur::from_millis(100);
        assert_eq!(send(&mut t, 22_000, now), Some(40_000_000));
        now += Dur::from_millis(100);
        assert_eq!(send(&mut t, 26_000, now), Some(50_000_000));
        assert_eq!(t.counters().led, 4);
        assert_eq!(t.counters().retransmissions, 1);
    }

    #[test]
    fn a_retransmission_is_never_dropped_with_the_lead_on() {
        // Make the drop fall due exactly on the retransmission: spacing 5 (1/p + E
        // set by hand); the drop at n = 5 (seq 4000), then n = 10 is the retransmission
        // of seq 4000 after four new segments: it passes and n = 11 is dropped instead.
        let mut s = setup(6.5, 0.05, false, false);
        s.params.drop_every = 5.0;
        s.lead = Dur::from_millis(10);
        let mut t = Trc::new(s, Dur::from_millis(3));
        let seqs = [
            0u64, 1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 4000, 9000,
        ];
        let mut dropped = Vec::new();
        for (i, &q) in seqs.iter().enumerate() {
            let now = SimTime::from_millis(100 * (i as u64 + 1));
            if let Action::Drop(_) = t.condition(now, &mut seg(q)) {
                dropped.push(q);
            }
        }
        assert_eq!(dropped, vec![4000, 9000]);
        // Fig. 1 as printed (no lead): the retransmission itself is dropped.
        let mut s = setup(6.5, 0.05, false, false);
        s.params.drop_every = 5.0;
        let mut t = Trc::new(s, Dur::from_millis(3));
        let mut dropped = Vec::new();
        for (i, &q) in seqs.iter().enumerate() {
            let now = SimTime::from_millis(100 * (i as u64 + 1));
            if let Action::Drop(_) = t.condition(now, &mut seg(q)) {
                dropped.push(q);
            }
        }
        assert_eq!(dropped, vec![4000, 4000]);
        assert_eq!(t.counters().led, 0);
    }

    #[test]
    fn recovery_lead_is_rtt_dev_capped_at_rtt_trc() {
        let cfg = |extra: &str| -> TrcConfig {
            toml::from_str(&format!("flow = \"f1\"\nrate = \"1Mbps\"\n{extra}")).unwrap()
        };
        let bind = |mut c: TrcConfig, rtt_net: Dur| {
            c.binding = Some(TrcBinding {
                flow: FlowId(0),
                mss: 1460,
                tcp: TcpConfig::default(),
                granularity: Dur::from_millis(10),
                rtt_net,
            });
            c.build().unwrap()
        };
        // 1 Mb/s at RTT_net 3 ms: RTT_TRC ≈ 0.2 s, lead = RTT_dev (10 ms, or as set).
        assert_eq!(
            bind(cfg(""), Dur::from_millis(3)).setup().lead,
            Dur::from_millis(10)
        );
        // G = 10 ms above RTT_dev = 4 ms: no lead; RTT_dev = 20 ms: a 20 ms lead.
        assert_eq!(
            bind(
                cfg("rtt_dev = \"4ms\"\nmodel = \"paper\""),
                Dur::from_millis(3)
            )
            .setup()
            .lead,
            Dur::ZERO
        );
        // … and the default TCP's model, fitted with the lead on, is refused then.
        let mut c = cfg("rtt_dev = \"4ms\"");
        c.binding = Some(TrcBinding {
            flow: FlowId(0),
            mss: 1460,
            tcp: TcpConfig::default(),
            granularity: Dur::from_millis(10),
            rtt_net: Dur::from_millis(3),
        });
        let e = c.build().unwrap_err();
        assert!(
            e.key == "model" && e.message.contains("tcp.granularity"),
            "{e:?}"
        );
        assert_eq!(
            bind(cfg("rtt_dev = \"20ms\""), Dur::from_millis(3))
                .setup()
                .lead,
            Dur::from_millis(20)
        );
        let c = bind(cfg("recovery_lead = \"0s\""), Dur::from_millis(3));
        assert_eq!(c.setup().lead, Dur::ZERO);
        // A coarse clock (G = 100 ms > RTT_dev, ns-2's tick) needs none: Fig. 1 as printed.
        assert_eq!(
            default_lead(Dur::from_millis(10), Dur::from_millis(100)),
            Dur::ZERO
        );
        assert_eq!(
            default_lead(Dur::from_millis(10), Dur::from_millis(10)),
            Dur::from_millis(10)
        );
        assert_eq!(
            default_lead(Dur::from_millis(20), Dur::from_millis(15)),
            Dur::from_millis(20)
        );
        // RTT_net 0.6 s: Fig. 2 as printed (no lead) gives RTT_TRC below 10 ms; with the
        // lead, RTT_min = RTT_net + 10 ms keeps RTT_TRC ≥ the lead, which stays whole.
        let printed = bind(cfg("recovery_lead = \"0s\""), Dur::from_millis(600));
        let short = Dur::from_secs_f64(printed.setup().params.rtt_trc);
        assert!(short < Dur::from_millis(10), "{short}");
        let far = bind(cfg(""), Dur::from_millis(600));
        let rtt_trc = Dur::from_secs_f64(far.setup().params.rtt_trc);
        assert!(rtt_trc >= Dur::from_millis(10), "{rtt_trc}");
        assert!((far.setup().params.rtt_min - 0.61).abs() < 1e-12);
        assert_eq!(far.setup().lead, Dur::from_millis(10));
        // ECN mode has no drop to lead: its RTT_min is Fig. 2's.
        let ecn = bind(cfg("ecn = true"), Dur::from_millis(600));
        assert!((ecn.setup().params.rtt_min - 0.6).abs() < 1e-12);
        // Fixed W_max and RTT_TRC (no search): RTT_TRC below 10 ms caps the lead.
        let fixed = bind(
            cfg("w_max = 10.5\nrtt_trc = \"4ms\""),
            Dur::from_millis(600),
        );
        assert_eq!(fixed.setup().lead, Dur::from_millis(4));
        assert!(toml::from_str::<TrcConfig>(
            "flow = \"f1\"\nrate = \"1Mbps\"\nrecovery_leed = \"1ms\""
        )
        .is_err());
    }

    #[test]
    fn buffer_never_exceeds_its_limit() {
        // Packets arriving faster than they leave: at most ⌈W_max⌉ held, extra dropped
        // with cond_buffer_full and counted.
        let mut t = Trc::new(setup(6.5, 1.0, false, false), Dur::from_millis(3));
        let mut full = 0;
        for i in 0..50u64 {
            let now = SimTime::from_micros(i);
            let mut p = data(3);
            if t.condition(now, &mut p) == Action::Drop(DropCause::CondBufferFull) {
                full += 1;
            }
            assert!(t.held_at(now) <= 7);
        }
        assert_eq!(t.counters().max_held, 7);
        assert_eq!(t.counters().buffer_full, full);
        assert!(full > 0);
    }
}

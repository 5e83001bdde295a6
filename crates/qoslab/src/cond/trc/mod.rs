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
//! A TRC stage names its flow (`flow = "f1"`); the scenario builder binds it to the
//! flow and its path ([`TrcBinding`]): the MSS, and RTT_net (propagation both ways plus
//! the serialisation of one full data packet and one ACK on every hop) unless the file
//! gives `rtt_net`.

mod fitted;
pub mod model;

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::{Action, Conditioner};
use crate::config::ScenarioError;
use crate::drop::DropCause;
use crate::packet::{Ecn, FlowId, Packet};
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
    /// `"fitted"` (default: the model fitted to the flow's TCP settings), `"paper"`
    /// (eqs. 1–4 as published) or the name of a fitted model ([`model::TcpModel`]).
    #[serde(default)]
    pub model: TcpModel,
    /// Control slow start as in Fig. 5 (default true).
    #[serde(default = "yes")]
    pub slow_start: bool,
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

/// What the scenario builder knows about a TRC's flow and path.
#[derive(Clone, Debug, PartialEq)]
pub struct TrcBinding {
    /// The controlled flow.
    pub flow: FlowId,
    /// Payload bytes per segment of the flow.
    pub mss: u32,
    /// The flow's TCP configuration ([`crate::tcp::TcpConfig::model_name`]).
    pub tcp: String,
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

    /// The parameters for a flow with `mss` and TCP configuration `tcp`
    /// ([`crate::tcp::TcpConfig::model_name`]) over a path of `rtt_net`.
    pub fn parameters(
        &self,
        mss: u32,
        tcp: &str,
        rtt_net: Dur,
    ) -> Result<TrcParams, ScenarioError> {
        let rtt_net = rtt_net.as_secs_f64();
        if let (Some(w), Some(d)) = (self.w_max, self.rtt_trc) {
            // Fixed W_max and RTT_TRC (model fits): the prediction is informative only,
            // so a TCP without a fitted model gets the paper's law.
            let law = match self.model.law(tcp, self.ecn) {
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
        let law = self.model.law(tcp, self.ecn).map_err(|m| err("model", m))?;
        let rate = self.rate.expect("validated: rate or w_max + rtt_trc");
        model::parameters(&TrcInputs {
            rate: rate.bps() as f64,
            mss,
            rtt_net,
            rtt_dev: self.rtt_dev.as_secs_f64(),
            gput_error: self.gput_error,
            rtt_min_star: self.rtt_min.map(Dur::as_secs_f64),
            law,
            ecn: self.ecn,
        })
        .map_err(|m| err("rate", m))
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
        let params = self.parameters(b.mss, &b.tcp, b.rtt_net)?;
        Ok(Trc::new(
            TrcSetup {
                flow: b.flow,
                params,
                ecn: self.ecn,
                slow_start: self.slow_start,
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

    /// Drops the packet, or marks it CE and delays it, in ECN mode.
    fn signal(&mut self, now: SimTime, pkt: &mut Packet) -> Action {
        if self.setup.ecn && pkt.ecn != Ecn::NotEct {
            pkt.ecn = Ecn::Ce;
            self.counters.marked += 1;
            self.hold(now, now + self.rtt_trc)
        } else {
            self.counters.dropped += 1;
            Action::Drop(DropCause::Controlled)
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
        let len = match pkt.tcp() {
            Some(h) if h.len > 0 => h.len,
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
                return self.signal(now, pkt);
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
        if self.n as f64 >= self.next_drop {
            self.next_drop += self.setup.params.drop_every;
            return self.signal(now, pkt);
        }
        self.hold(now, now + self.rtt_trc)
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

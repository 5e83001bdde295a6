//! ERUF edge regulation (Rangarajan & Acharya, "ERUF: Early Regulation of Unresponsive
//! Best-Effort Traffic", P2 §2): an edge router classifies the packets it sends towards
//! the core into flows (5-tuple) or aggregates (destination, or source–destination
//! pair), estimates each one's arrival rate, snoops the source quenches core routers
//! send back, and regulates a quenched flow with a token-bucket policer
//! ([`regulator`]) until its rate climbs back to the link rate.
//!
//! ```text
//!   packet to the core ─► classify ─► estimate rate ─► [regulator: police] ─► queue
//!   quench to a source ─► (world snoops it at the edge router) ─► Eruf::on_quench
//! ```
//!
//! The stage sits at the edge router's interface towards the core
//! (`iface = "edge->core"`); the scenario builder gives it that link's rate (the
//! removal threshold) and twice its propagation delay (the RTT estimate, P2 §2.1),
//! unless `link_rate` / `rtt` override them. P2's per-flow buffers with Longest Queue
//! Drop are that interface's queue (`queue = { kind = "lqd", … }`). Regulated packets
//! beyond the regulator's rate are dropped with cause `policed`.

pub mod estimator;
pub mod regulator;

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::{Action, Conditioner};
use crate::config::ScenarioError;
use crate::packet::{Header, NodeId, Packet, Proto, QuenchHeader};
use crate::queue::DropCause;
use crate::time::{Dur, Rate, SimTime};
use crate::units::Bytes;
use estimator::{Estimator, EwmaEstimator, WindowEstimator};
use regulator::{Increase, QuenchEffect, Regulator};

/// What one regulated unit is (P2 §2.1: "identify flows either by source-destination
/// pairs or by destination alone").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Aggregation {
    /// One flow per (source, destination, ports, protocol).
    #[default]
    Flow,
    /// One aggregate per destination.
    Destination,
    /// One aggregate per (source, destination) pair.
    Pair,
}

/// Which arrival-rate estimator the edge uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EstimatorName {
    /// The paper's window estimator (P2 footnote 1).
    #[default]
    Window,
    /// CSFQ's exponential averaging with constant `k`.
    Ewma,
}

/// Over which packets a unit's average packet size (the additive increase's step) is
/// taken (P2 footnote 3: "Edge routers keep track of the average packet size for each
/// flow that has a regulator in place").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AvgSize {
    /// Every packet since the unit's first.
    #[default]
    Lifetime,
    /// The packets since its regulator was installed (the lifetime average until the
    /// first of them).
    Regulated,
}

/// An `{ kind = "eruf", … }` stage as written in a scenario file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErufConfig {
    /// `"flow"` (5-tuple, default), `"destination"` or `"pair"`.
    #[serde(default)]
    pub aggregate: Aggregation,
    /// `"window"` (default) or `"ewma"`.
    #[serde(default)]
    pub estimator: EstimatorName,
    /// Largest window of the window estimator [packets]; default 16.
    #[serde(default = "default_max_window")]
    pub max_window: u32,
    /// Relative change at which the window estimator counts as converged; default 0.05.
    #[serde(default = "default_tolerance")]
    pub tolerance: f64,
    /// Averaging constant K of the EWMA estimator; default 100 ms (CSFQ's).
    #[serde(default = "default_k")]
    pub k: Dur,
    /// Regulator bucket depth [bytes]; default 3000 (two 1500-byte packets).
    #[serde(default = "default_burst")]
    pub burst: Bytes,
    /// RTT estimate; default 2 × the propagation delay of the stage's link.
    #[serde(default)]
    pub rtt: Option<Dur>,
    /// Rate at which a regulator is removed; default the stage's link rate.
    #[serde(default)]
    pub link_rate: Option<Rate>,
    /// Additive increase per quiet RTT estimate: `"packet_per_rtt"` (default) or
    /// `"bytes_per_second"` (P2 §2.1, see [`Increase`]).
    #[serde(default)]
    pub increase: Increase,
    /// Packets the average size is taken over: `"lifetime"` (default) or
    /// `"regulated"` (P2 footnote 3).
    #[serde(default)]
    pub avg_size: AvgSize,
}

fn default_max_window() -> u32 {
    16
}
fn default_tolerance() -> f64 {
    0.05
}
fn default_k() -> Dur {
    Dur::from_millis(100)
}
fn default_burst() -> Bytes {
    Bytes(3000)
}

impl ErufConfig {
    /// Checks the values; keys are relative to the stage's table.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        crate::ensure_scenario!(
            (1..=1024).contains(&self.max_window),
            "max_window",
            "expected 1 to 1024 packets, found {}",
            self.max_window
        );
        crate::ensure_scenario!(
            self.tolerance.is_finite() && self.tolerance >= 0.0,
            "tolerance",
            "expected a non-negative relative change, found {}",
            self.tolerance
        );
        crate::ensure_scenario!(self.k > Dur::ZERO, "k", "expected a positive duration");
        super::check::positive_size("burst", self.burst, "the regulator depth")?;
        if let Some(r) = self.rtt {
            crate::ensure_scenario!(r > Dur::ZERO, "rtt", "expected a positive duration");
        }
        if let Some(r) = self.link_rate {
            super::check::positive_rate("link_rate", r)?;
        }
        Ok(())
    }

    /// The stage, with placeholder link values until [`Eruf::bind_link`].
    pub fn build(&self) -> Eruf {
        Eruf {
            rtt: self.rtt.unwrap_or(Dur::ZERO),
            link_rate: self.link_rate.unwrap_or(Rate::from_bps(u64::MAX)),
            cfg: self.clone(),
            index: HashMap::new(),
            units: Vec::new(),
            counters: ErufCounters::default(),
        }
    }
}

/// What an ERUF stage did since the start of the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ErufCounters {
    /// Quenches seen passing the router.
    pub quenches: u64,
    /// Quenches about flows this stage never forwarded.
    pub unknown: u64,
    /// Regulators installed (first quench of an unregulated unit).
    pub installed: u64,
    /// Halvings of an installed regulator.
    pub decreased: u64,
    /// Quenches ignored within one RTT estimate of a decrease.
    pub ignored: u64,
    /// Regulators removed at the link rate.
    pub removed: u64,
    /// Packets dropped by regulators.
    pub policed: u64,
    /// Bytes dropped by regulators.
    pub policed_bytes: u64,
}

/// One flow or aggregate the edge has seen.
#[derive(Clone, Debug)]
pub struct Unit {
    /// Its classification key.
    pub key: u128,
    est: Estimator,
    packets: u64,
    bytes: u64,
    /// Packets and bytes since the regulator was installed.
    reg_packets: u64,
    reg_bytes: u64,
    reg: Option<Regulator>,
}

impl Unit {
    /// Average packet size so far [bytes].
    pub fn avg_size(&self) -> f64 {
        if self.packets == 0 {
            0.0
        } else {
            self.bytes as f64 / self.packets as f64
        }
    }
    /// Average packet size since the regulator was installed, or [`Unit::avg_size`]
    /// before the first such packet [bytes].
    pub fn avg_size_regulated(&self) -> f64 {
        if self.reg_packets == 0 {
            self.avg_size()
        } else {
            self.reg_bytes as f64 / self.reg_packets as f64
        }
    }
    /// Arrival-rate estimate [bit/s].
    pub fn arrival_rate(&self) -> f64 {
        self.est.rate()
    }
    /// The regulator, if one is installed.
    pub fn regulator(&self) -> Option<&Regulator> {
        self.reg.as_ref()
    }
}

/// An ERUF edge stage (P2 §2).
#[derive(Clone, Debug)]
pub struct Eruf {
    cfg: ErufConfig,
    rtt: Dur,
    link_rate: Rate,
    index: HashMap<u128, u32>,
    units: Vec<Unit>,
    counters: ErufCounters,
}

fn proto_code(p: Proto) -> u128 {
    match p {
        Proto::Tcp => 6,
        Proto::Udp => 17,
        Proto::Icmp => 1,
    }
}

impl Eruf {
    /// The configuration.
    pub fn config(&self) -> &ErufConfig {
        &self.cfg
    }

    /// Gives the stage its link: `rate` (removal threshold) and propagation `delay`
    /// (RTT estimate = 2 × delay, P2 §2.1); the scenario's overrides win.
    pub fn bind_link(&mut self, rate: Rate, delay: Dur) {
        self.link_rate = self.cfg.link_rate.unwrap_or(rate);
        self.rtt = self.cfg.rtt.unwrap_or(delay + delay);
    }

    /// RTT estimate in use.
    pub fn rtt(&self) -> Dur {
        self.rtt
    }

    /// Removal threshold in use.
    pub fn link_rate(&self) -> Rate {
        self.link_rate
    }

    /// Counters since the start of the run.
    pub fn counters(&self) -> &ErufCounters {
        &self.counters
    }

    /// Flows or aggregates seen, in order of first packet.
    pub fn units(&self) -> &[Unit] {
        &self.units
    }

    /// Regulators installed now.
    pub fn active(&self) -> usize {
        self.units.iter().filter(|u| u.reg.is_some()).count()
    }

    fn key(&self, src: NodeId, dst: NodeId, sp: u16, dp: u16, proto: Proto) -> u128 {
        let (s, d) = (src.0 as u128, dst.0 as u128);
        match self.cfg.aggregate {
            Aggregation::Flow => {
                s | d << 32 | (sp as u128) << 64 | (dp as u128) << 80 | proto_code(proto) << 96
            }
            Aggregation::Destination => d << 32 | 1 << 104,
            Aggregation::Pair => s | d << 32 | 2 << 104,
        }
    }

    fn new_estimator(&self) -> Estimator {
        match self.cfg.estimator {
            EstimatorName::Window => Estimator::Window(WindowEstimator::new(
                self.cfg.max_window as usize,
                self.cfg.tolerance,
            )),
            EstimatorName::Ewma => Estimator::Ewma(EwmaEstimator::new(self.cfg.k)),
        }
    }

    /// Applies due increases to unit `i`'s regulator; removes it at the link rate.
    fn advance(&mut self, now: SimTime, i: usize) {
        let (rtt, link, inc) = (self.rtt, self.link_rate, self.cfg.increase);
        let u = &mut self.units[i];
        let avg = match self.cfg.avg_size {
            AvgSize::Lifetime => u.avg_size(),
            AvgSize::Regulated => u.avg_size_regulated(),
        };
        if let Some(r) = &mut u.reg {
            if r.advance(now, rtt, avg, inc, link) {
                u.reg = None;
                self.counters.removed += 1;
            }
        }
    }

    /// A source quench about `q`'s flow passed the router at `now` (P2 §2.1): installs
    /// a regulator at half the unit's arrival rate, or halves it once per RTT estimate.
    pub fn on_quench(&mut self, now: SimTime, q: &QuenchHeader) {
        self.counters.quenches += 1;
        let key = self.key(
            q.orig_src,
            q.orig_dst,
            q.orig_src_port,
            q.orig_dst_port,
            q.orig_proto,
        );
        let Some(&i) = self.index.get(&key) else {
            self.counters.unknown += 1;
            return;
        };
        let i = i as usize;
        self.advance(now, i);
        let (rtt, depth) = (self.rtt, self.cfg.burst.0);
        let u = &mut self.units[i];
        match &mut u.reg {
            None => {
                u.reg = Some(Regulator::install(now, u.est.rate(), rtt, depth));
                (u.reg_packets, u.reg_bytes) = (0, 0);
                self.counters.installed += 1;
            }
            Some(r) => match r.on_quench(now, rtt) {
                QuenchEffect::Decreased => self.counters.decreased += 1,
                QuenchEffect::Ignored => self.counters.ignored += 1,
            },
        }
    }
}

impl Conditioner for Eruf {
    fn condition(&mut self, now: SimTime, pkt: &mut Packet) -> Action {
        if matches!(pkt.hdr, Header::Quench(_)) {
            return Action::Pass;
        }
        let key = self.key(pkt.src, pkt.dst, pkt.src_port, pkt.dst_port, pkt.proto());
        let i = match self.index.get(&key) {
            Some(&i) => i as usize,
            None => {
                let est = self.new_estimator();
                self.units.push(Unit {
                    key,
                    est,
                    packets: 0,
                    bytes: 0,
                    reg_packets: 0,
                    reg_bytes: 0,
                    reg: None,
                });
                let i = self.units.len() - 1;
                self.index.insert(key, i as u32);
                i
            }
        };
        {
            let u = &mut self.units[i];
            u.est.on_arrival(now, pkt.size);
            u.packets += 1;
            u.bytes += pkt.size as u64;
            if u.reg.is_some() {
                u.reg_packets += 1;
                u.reg_bytes += pkt.size as u64;
            }
        }
        self.advance(now, i);
        let admitted = match &mut self.units[i].reg {
            Some(r) => r.admit(now, pkt.size),
            None => true,
        };
        if admitted {
            return Action::Pass;
        }
        self.counters.policed += 1;
        self.counters.policed_bytes += pkt.size as u64;
        Action::Drop(DropCause::Policed)
    }
}

#[cfg(test)]
mod tests;

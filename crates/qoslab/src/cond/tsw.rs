//! Time Sliding Window rate estimator (Clark & Fang 1998; RFC 2859 §3) and the TSW
//! markers: TSW2CM (two colours, Clark & Fang 1998 / ns-2 `TSW2CM`) and TSW3CM
//! (RFC 2859 §4, "TSWTCM").
//!
//! The estimator works in bytes per second as a float: it is a model quantity, not
//! time, and the RFC defines it with a division. Time itself stays integer.

use serde::{Deserialize, Serialize};

use super::action::{mark, yellow, Codepoints, ColourName, MeterAction};
use super::check::{check_pir, positive_rate};
use super::{Action, Conditioner};
use crate::config::ScenarioError;
use crate::drop::DropCause;
use crate::packet::{Colour, Packet};
use crate::rng::RngStream;
use crate::time::{Dur, Rate, SimTime};

/// TSW rate estimator (RFC 2859 §3): a sliding window of length `AVG_INTERVAL`.
#[derive(Clone, Debug)]
pub struct TswEstimator {
    /// AVG_INTERVAL [s].
    win: f64,
    /// avg-rate [bytes/s].
    avg: f64,
    /// t-front [s].
    front: f64,
    /// Some packet has been accounted: `front` is meaningful.
    started: bool,
}

impl TswEstimator {
    /// An estimator with window `win` starting at `initial` (RFC 2859 §3 starts at CTR).
    ///
    /// RFC 2859 §3 sets t_front = 0, which assumes the meter starts at time 0. qoslab
    /// starts it at its first packet instead, so a meter created late (a policy's
    /// per-flow meter, a flow starting at 50 s) begins at its initial rate rather than
    /// at initial · win / (now + win).
    pub fn new(win: Dur, initial: Rate) -> Self {
        TswEstimator {
            win: win.as_secs_f64(),
            avg: initial.bytes_per_sec(),
            front: 0.0,
            started: false,
        }
    }
    /// Accounts a packet of `size` bytes at `now` (RFC 2859 §3):
    /// `avg = (avg·win + size) / (now − t_front + win); t_front = now`.
    #[inline]
    pub fn update(&mut self, now: SimTime, size: u32) -> f64 {
        let now = now.as_secs_f64();
        if !self.started {
            self.started = true;
            self.front = now;
        }
        let bytes_in_win = self.avg * self.win;
        self.avg = (bytes_in_win + size as f64) / (now - self.front + self.win);
        self.front = now;
        self.avg
    }
    /// The current estimate [bytes/s].
    pub fn rate(&self) -> f64 {
        self.avg
    }
}

/// Parameters of a TSW marker (two or three colours).
#[derive(Clone, Debug, PartialEq)]
pub struct TswSettings {
    /// Committed (target) rate: CIR / CTR [bit/s].
    pub cir: Rate,
    /// Peak rate: PIR / PTR [bit/s]; `None` for the two-colour marker.
    pub pir: Option<Rate>,
    /// Estimator window AVG_INTERVAL.
    pub window: Dur,
    /// Mark only, or also drop red.
    pub action: MeterAction,
    /// DSCP per colour.
    pub codepoints: Codepoints,
    /// Colour of out-of-profile packets in the two-colour marker.
    pub out_colour: Colour,
}

/// TSW2CM: green while the estimate is ≤ CIR, otherwise out-of-profile with probability
/// (avg − CIR)/avg (Clark & Fang 1998 §3; ns-2 `dsPolicy.cc` TSW2CM).
#[derive(Clone, Debug)]
pub struct Tsw2cm {
    cfg: TswSettings,
    est: TswEstimator,
    rng: RngStream,
}

impl Tsw2cm {
    /// A marker whose estimator starts at CIR.
    pub fn new(cfg: TswSettings, rng: RngStream) -> Self {
        let est = TswEstimator::new(cfg.window, cfg.cir);
        Tsw2cm { cfg, est, rng }
    }
    /// Replaces the random stream (used when a policy clones a prototype per key).
    pub fn reseed(&mut self, rng: RngStream) {
        self.rng = rng;
    }
    /// The colour of a packet of `size` bytes at `now`.
    pub fn meter(&mut self, now: SimTime, size: u32) -> Colour {
        let avg = self.est.update(now, size);
        let cir = self.cfg.cir.bytes_per_sec();
        if avg <= cir || !self.rng.bernoulli((avg - cir) / avg) {
            Colour::Green
        } else {
            self.cfg.out_colour
        }
    }
}

impl Conditioner for Tsw2cm {
    fn condition(&mut self, now: SimTime, pkt: &mut Packet) -> Action {
        let c = self.meter(now, pkt.size);
        finish(pkt, c, &self.cfg)
    }
}

/// TSW3CM (RFC 2859 §4): green/yellow/red with probabilities set by where the estimate
/// lies relative to CIR (CTR) and PIR (PTR).
#[derive(Clone, Debug)]
pub struct Tsw3cm {
    cfg: TswSettings,
    est: TswEstimator,
    rng: RngStream,
}

impl Tsw3cm {
    /// A marker whose estimator starts at CIR (RFC 2859 §3).
    pub fn new(cfg: TswSettings, rng: RngStream) -> Self {
        let est = TswEstimator::new(cfg.window, cfg.cir);
        Tsw3cm { cfg, est, rng }
    }
    /// Replaces the random stream (used when a policy clones a prototype per key).
    pub fn reseed(&mut self, rng: RngStream) {
        self.rng = rng;
    }
    /// The colour of a packet of `size` bytes at `now` (RFC 2859 §4).
    pub fn meter(&mut self, now: SimTime, size: u32) -> Colour {
        let avg = self.est.update(now, size);
        let cir = self.cfg.cir.bytes_per_sec();
        let pir = self.cfg.pir.unwrap_or(self.cfg.cir).bytes_per_sec();
        if avg <= cir {
            Colour::Green
        } else if avg <= pir {
            // P0 = (avg − CTR)/avg → yellow.
            if self.rng.bernoulli((avg - cir) / avg) {
                Colour::Yellow
            } else {
                Colour::Green
            }
        } else {
            // P1 = (avg − PTR)/avg → red; P2 = (PTR − CTR)/avg → yellow; else green.
            let u = self.rng.uniform();
            let p1 = (avg - pir) / avg;
            let p2 = (pir - cir) / avg;
            if u < p1 {
                Colour::Red
            } else if u < p1 + p2 {
                Colour::Yellow
            } else {
                Colour::Green
            }
        }
    }
}

impl Conditioner for Tsw3cm {
    fn condition(&mut self, now: SimTime, pkt: &mut Packet) -> Action {
        let c = self.meter(now, pkt.size);
        finish(pkt, c, &self.cfg)
    }
}

/// Marks the packet; police mode drops red (in the two-colour marker: anything not green).
#[inline]
fn finish(pkt: &mut Packet, c: Colour, cfg: &TswSettings) -> Action {
    mark(pkt, c, &cfg.codepoints);
    let out = c == Colour::Red || (cfg.pir.is_none() && c != Colour::Green);
    if out && cfg.action == MeterAction::Police {
        Action::Drop(DropCause::Policed)
    } else {
        Action::Pass
    }
}

/// Default TSW averaging window (our choice; RFC 2859 §3 leaves AVG_INTERVAL open).
pub const DEFAULT_TSW_WINDOW: Dur = Dur::from_secs(1);

fn default_window() -> Dur {
    DEFAULT_TSW_WINDOW
}

/// A two-colour marker's out-of-profile colour must differ from green (which would
/// mark every packet green).
pub(crate) fn check_out_colour(c: ColourName) -> Result<(), ScenarioError> {
    if c == ColourName::Green {
        return Err(ScenarioError::new(
            "out_colour",
            "out-of-profile packets cannot be green (every packet would be green): \
             expected \"yellow\" or \"red\"",
        ));
    }
    Ok(())
}

fn check_window(w: Dur) -> Result<(), ScenarioError> {
    if w == Dur::ZERO {
        return Err(ScenarioError::new(
            "window",
            "the TSW window must be positive",
        ));
    }
    Ok(())
}

/// The TSW two-colour marker's keys in a scenario (`kind = "tsw2cm"`, Clark & Fang
/// 1998).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tsw2cmConfig {
    /// Committed (target) rate.
    #[serde(deserialize_with = "crate::units::de_rate_or_zero")]
    pub cir: Rate,
    /// Estimator window AVG_INTERVAL (default 1 s).
    #[serde(default = "default_window")]
    pub window: Dur,
    /// `mark` (default) or `police` (drop out-of-profile).
    #[serde(default)]
    pub action: MeterAction,
    /// DSCP per colour.
    #[serde(default)]
    pub dscp: Codepoints,
    /// Colour of out-of-profile packets (default yellow).
    #[serde(default = "yellow")]
    pub out_colour: ColourName,
}

impl Tsw2cmConfig {
    /// Checks the rate, the window and the codepoints.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        check_window(self.window)?;
        check_out_colour(self.out_colour)?;
        self.dscp.validate()
    }

    /// The marker, drawing from `rng`; call [`Tsw2cmConfig::validate`] first.
    pub fn build(&self, rng: RngStream) -> Tsw2cm {
        Tsw2cm::new(
            TswSettings {
                cir: self.cir,
                pir: None,
                window: self.window,
                action: self.action,
                codepoints: self.dscp,
                out_colour: self.out_colour.into(),
            },
            rng,
        )
    }
}

/// The TSW three-colour marker's keys in a scenario (`kind = "tsw3cm"`, RFC 2859).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tsw3cmConfig {
    /// Committed target rate (CTR).
    #[serde(deserialize_with = "crate::units::de_rate_or_zero")]
    pub cir: Rate,
    /// Peak target rate (PTR, ≥ CIR).
    pub pir: Rate,
    /// Estimator window AVG_INTERVAL (default 1 s).
    #[serde(default = "default_window")]
    pub window: Dur,
    /// `mark` (default) or `police` (drop red).
    #[serde(default)]
    pub action: MeterAction,
    /// DSCP per colour.
    #[serde(default)]
    pub dscp: Codepoints,
}

impl Tsw3cmConfig {
    /// Checks the rates (PTR ≥ CTR, RFC 2859 §4), the window and the codepoints.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        positive_rate("pir", self.pir)?;
        check_pir(self.cir, self.pir, "RFC 2859 §4")?;
        check_window(self.window)?;
        self.dscp.validate()
    }

    /// The marker, drawing from `rng`; call [`Tsw3cmConfig::validate`] first.
    pub fn build(&self, rng: RngStream) -> Tsw3cm {
        Tsw3cm::new(
            TswSettings {
                cir: self.cir,
                pir: Some(self.pir),
                window: self.window,
                action: self.action,
                codepoints: self.dscp,
                out_colour: Colour::Red,
            },
            rng,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cbr(est: &mut TswEstimator, from_us: u64, to_us: u64, gap_us: u64, size: u32) {
        let mut t = from_us;
        while t < to_us {
            est.update(SimTime::from_micros(t), size);
            t += gap_us;
        }
    }

    #[test]
    fn estimator_starts_at_its_first_packet() {
        // Created at time 0, first packet at 50 s (a late flow, or a policy's per-flow
        // meter): the estimate starts from CIR, not from CIR · win / (50 s + win).
        let mut e = TswEstimator::new(Dur::from_secs(1), Rate::from_mbps(1));
        let avg = e.update(SimTime::from_secs(50), 1000);
        assert!((avg - 126_000.0).abs() < 1e-6, "{avg}");
        // Later packets slide the window from there, as RFC 2859 §3 says.
        let avg = e.update(SimTime::from_millis(50_500), 1000);
        assert!((avg - (126_000.0 + 1000.0) / 1.5).abs() < 1e-6, "{avg}");
    }

    #[test]
    fn green_out_colour_is_rejected() {
        let c: Tsw2cmConfig = toml::from_str("cir = 1000\nout_colour = \"green\"").unwrap();
        assert_eq!(c.validate().unwrap_err().key, "out_colour");
    }

    #[test]
    fn estimator_converges_to_cbr_rate() {
        // 1000 B every 1 ms = 1 MB/s; window 100 ms; starts at 0.5 MB/s (4 Mb/s).
        let mut e = TswEstimator::new(Dur::from_millis(100), Rate::from_mbps(4));
        cbr(&mut e, 0, 1_000_000, 1000, 1000);
        let err = (e.rate() - 1e6).abs() / 1e6;
        assert!(err < 0.02, "estimate {} B/s", e.rate());
    }

    #[test]
    fn estimator_tracks_a_step_within_the_window() {
        // Fixed point r = size/gap; per packet the error shrinks by W/(W+Δ), so after
        // one window (W/Δ packets) it is ≈ e⁻¹ ≈ 0.37 of the step, after 4 W ≈ 0.018.
        let w = 100_000; // µs
        let mut e = TswEstimator::new(Dur::from_micros(w), Rate::from_mbps(8));
        cbr(&mut e, 0, 2_000_000, 1000, 1000); // 1 MB/s
        let before = e.rate();
        assert!((before - 1e6).abs() / 1e6 < 0.02);
        cbr(&mut e, 2_000_000, 2_000_000 + w, 500, 1000); // step to 2 MB/s
        let frac = (e.rate() - before) / (2e6 - before);
        assert!(frac > 0.6 && frac < 0.7, "after one window: {frac}");
        cbr(&mut e, 2_000_000 + w, 2_000_000 + 4 * w, 500, 1000);
        assert!((e.rate() - 2e6).abs() / 2e6 < 0.02, "{}", e.rate());
    }

    fn tsw_cfg(pir: Option<Rate>) -> TswSettings {
        TswSettings {
            cir: Rate::from_mbps(1),
            pir,
            window: Dur::from_millis(100),
            action: MeterAction::Mark,
            codepoints: Codepoints::default(),
            out_colour: Colour::Yellow,
        }
    }

    #[test]
    fn tsw3cm_fractions_at_twice_cir() {
        // CBR at 2·CIR with PIR = 1.5·CIR: once the estimate settles at avg = 2·CIR,
        // RFC 2859 §4 gives P(red) = (avg − PIR)/avg = 0.5/2 = 0.25,
        // P(yellow) = (PIR − CIR)/avg = 0.5/2 = 0.25, P(green) = 1 − 0.5 = 0.5.
        // So green carries exactly CIR, green+yellow exactly PIR.
        let mut m = Tsw3cm::new(
            tsw_cfg(Some(Rate::from_kbps(1500))),
            RngStream::derive(1, "test/tsw3cm"),
        );
        // 2 Mb/s = 250 B/ms: 1000 B every 4 ms; 1 s warm-up, then 40 000 packets.
        let mut counts = [0usize; 3];
        for k in 0..40_250u64 {
            let mut p = Packet {
                size: 1000,
                ..Default::default()
            };
            assert_eq!(
                m.condition(SimTime::from_millis(4 * k), &mut p),
                Action::Pass
            );
            if k >= 250 {
                counts[p.colour.index()] += 1;
            }
        }
        let f: Vec<f64> = counts.iter().map(|&c| c as f64 / 40_000.0).collect();
        // Binomial σ ≈ 0.0025 at n = 40 000: allow 4σ.
        assert!((f[0] - 0.5).abs() < 0.01, "{f:?}");
        assert!((f[1] - 0.25).abs() < 0.01, "{f:?}");
        assert!((f[2] - 0.25).abs() < 0.01, "{f:?}");
    }

    #[test]
    fn tsw2cm_out_fraction_and_police() {
        // CBR at 2·CIR: P(out) = (avg − CIR)/avg = 0.5.
        let mut c = tsw_cfg(None);
        c.action = MeterAction::Police;
        let mut m = Tsw2cm::new(c, RngStream::derive(1, "test/tsw2cm"));
        let mut dropped = 0;
        for k in 0..20_250u64 {
            let mut p = Packet {
                size: 1000,
                ..Default::default()
            };
            let a = m.condition(SimTime::from_millis(4 * k), &mut p);
            if k >= 250 && a == Action::Drop(DropCause::Policed) {
                assert_eq!(p.colour, Colour::Yellow);
                dropped += 1;
            }
        }
        let f = dropped as f64 / 20_000.0;
        assert!((f - 0.5).abs() < 0.015, "{f}");
    }

    #[test]
    fn below_cir_everything_is_green() {
        let mut m = Tsw3cm::new(
            tsw_cfg(Some(Rate::from_kbps(1500))),
            RngStream::derive(1, "x"),
        );
        for k in 0..5000u64 {
            // 0.8 Mb/s: 1000 B every 10 ms.
            let mut p = Packet {
                size: 1000,
                ..Default::default()
            };
            m.condition(SimTime::from_millis(10 * k), &mut p);
            assert_eq!(p.colour, Colour::Green);
        }
    }
}

//! ERED: one FIFO managed by RED in which packets marked in profile are dropped early
//! less often than unmarked ones (P0 §5, after Feng et al., NOSSDAV 97).
//!
//! P0 (docs/bibliography.md; the qosmgr paragraph of its implementation section) says: "We
//! add a new queue discipline of ERED (an extension of RED) that assigns a lower drop
//! probability for a marked packet when queue length is greater than the threshold. By
//! default a marked packet has a 1.5 times lower drop probability." We read this as:
//! - the factor is a ratio, p_unmarked / p_marked = 1.5 (so p_marked = p_b / 1.5, not
//!   "150 % lower");
//! - the base is the unmarked packet: RED's configured curve (`max_p`) applies to
//!   unmarked (`in_profile == false`) packets, and marked packets get p_b / factor.
//!   Equivalently, unmarked packets are dropped `factor` times more often than marked
//!   ones, with the RED curve calibrated on the unmarked (best-effort) traffic.
//! - "when queue length is greater than the threshold": the scaling applies in the
//!   early-drop region; above `max_th` (2·`max_th` if gentle) both are force-dropped.
//!
//! Each class keeps its own RED `count`, so each sees F&J §7's uniform spacing with
//! its own p_b: the measured rates are 2p/(1+p) and 2(p/f)/(1+p/f), a ratio slightly
//! below f for p > 0 (1.476 at p = 0.05, f = 1.5).

use serde::{Deserialize, Serialize};

use super::red::{Red, RedConfig, RedSettings};
use super::{Drops, Occupancy, Queue};
use crate::config::ScenarioError;
use crate::packet::Packet;
use crate::rng::RngStream;
use crate::time::{Rate, SimTime};

/// RED with a lower early-drop probability for packets marked in profile (P0 §5).
#[derive(Debug)]
pub struct Ered {
    red: Red,
    factor: f64,
}

impl Ered {
    /// An empty ERED queue: RED with `settings` for unmarked packets, and p_b divided
    /// by `factor` (≥ 1; P0's default 1.5) for packets marked in profile.
    pub fn new(settings: RedSettings, factor: f64, link_rate: Rate, rng: RngStream) -> Self {
        Ered {
            red: Red::new(settings, link_rate, rng),
            factor,
        }
    }
}

impl Queue for Ered {
    fn enqueue(&mut self, now: SimTime, pkt: Packet, drops: &mut Drops) {
        if pkt.in_profile {
            self.red
                .enqueue_class(now, &pkt, drops, 1, 1.0 / self.factor);
        } else {
            self.red.enqueue_class(now, &pkt, drops, 0, 1.0);
        }
    }

    fn dequeue(&mut self, now: SimTime, drops: &mut Drops) -> Option<Packet> {
        self.red.dequeue(now, drops)
    }

    fn occupancy(&self) -> Occupancy {
        self.red.occupancy()
    }

    fn average(&self) -> Option<f64> {
        self.red.average()
    }
}

fn d_factor() -> f64 {
    1.5
}

/// ERED's keys in a scenario (`kind = "ered"`): RED's, whose curve applies to unmarked
/// packets, plus `factor`.
#[derive(Serialize, Clone, Copy, Debug, PartialEq)]
pub struct EredConfig {
    /// The RED keys (`limit`, `min_th`, `max_th`, `max_p`, `w_q`, …).
    #[serde(flatten)]
    pub red: RedConfig,
    /// p_unmarked / p_marked, ≥ 1; default 1.5 (P0: "a marked packet has a 1.5 times
    /// lower drop probability").
    pub factor: f64,
}

// Composition without `#[serde(flatten)]` on the way in: flatten would switch off
// `deny_unknown_fields`, and unknown keys must stay errors. `factor` is taken out of
// the table and the rest must be RED's keys.
impl<'de> Deserialize<'de> for EredConfig {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let mut v = crate::config::Value::deserialize(d)?;
        let factor = crate::config::take::<f64>(&mut v, "factor")
            .map_err(D::Error::custom)?
            .unwrap_or_else(d_factor);
        let red = crate::config::from_value::<RedConfig>(v)
            .map_err(|e| D::Error::custom(crate::config::also_expected(&e, &["factor"])))?;
        Ok(EredConfig { red, factor })
    }
}

impl EredConfig {
    /// Checks RED's keys and `factor`; keys are relative to the queue table.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        self.red.validate()?;
        if self.factor >= 1.0 && self.factor.is_finite() {
            Ok(())
        } else {
            Err(ScenarioError::new(
                "factor",
                format!(
                    "expected factor ≥ 1 (unmarked packets are dropped factor times more \
                     often than marked ones), found {}",
                    self.factor
                ),
            ))
        }
    }

    /// The queue for a link of `link_rate`; call [`EredConfig::validate`] first.
    pub fn build(&self, link_rate: Rate, rng: RngStream) -> Ered {
        Ered::new(self.red.settings(), self.factor, link_rate, rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::red::tests::{hold, pkt, settings, spaced_rate};
    use crate::queue::Limit;

    #[test]
    fn unmarked_dropped_more_often_by_the_factor() {
        // Average held at 10 in 5..15, max_p 0.1: p_b = 0.05 for unmarked packets,
        // 0.05/1.5 for marked ones. Half the arrivals are marked, at random.
        let s = settings(Limit::Packets(100), 5.0, 15.0, 0.1);
        let mut q = Ered::new(s, 1.5, Rate::from_mbps(10), RngStream::from_seed(11));
        let mut marks = RngStream::from_seed(12);
        let mut flags = |i: u64| {
            let m = marks.bernoulli(0.5);
            Packet {
                in_profile: m,
                ..pkt(i, 1000)
            }
        };
        // Count drops per class: the held loop of `red::tests::hold`, by hand.
        let mut d = Drops::default();
        let t = SimTime::ZERO;
        for i in 0..10 {
            q.enqueue(t, pkt(i, 1000), &mut d);
        }
        let (mut n, mut dropped) = ([0u64; 2], [0u64; 2]);
        for i in 0..420_000u64 {
            let p = flags(i);
            let c = p.in_profile as usize;
            q.enqueue(t, p, &mut d);
            let drop = !d.dropped.is_empty();
            if i >= 20_000 {
                n[c] += 1;
                dropped[c] += drop as u64;
            }
            if !drop {
                q.dequeue(t, &mut d).unwrap();
            }
            d.clear();
        }
        let r_unmarked = dropped[0] as f64 / n[0] as f64;
        let r_marked = dropped[1] as f64 / n[1] as f64;
        let want_u = spaced_rate(0.05);
        let want_m = spaced_rate(0.05 / 1.5);
        assert!(
            (r_unmarked - want_u).abs() < 0.003,
            "{r_unmarked} vs {want_u}"
        );
        assert!((r_marked - want_m).abs() < 0.003, "{r_marked} vs {want_m}");
        let ratio = r_unmarked / r_marked;
        // (1.5 + p)/(1 + p) = 1.476 with per-class spacing; ±0.08 is ~4 sd.
        assert!((ratio - 1.476).abs() < 0.08, "ratio {ratio}");
    }

    #[test]
    fn factor_one_is_plain_red_and_forced_drops_ignore_marks() {
        let s = settings(Limit::Packets(100), 5.0, 15.0, 0.1);
        let mut q = Ered::new(s, 1.0, Rate::from_mbps(10), RngStream::from_seed(13));
        let h = hold(&mut q, 10, 1000, 20_000, 200_000, |i| Packet {
            in_profile: i % 2 == 0,
            ..pkt(i, 1000)
        });
        let r = h.early as f64 / h.arrivals as f64;
        // Two classes each spaced with p_b 0.05: the overall rate is still 2p/(1+p).
        assert!((r - spaced_rate(0.05)).abs() < 0.003, "{r}");
        let mut q = Ered::new(s, 1.5, Rate::from_mbps(10), RngStream::from_seed(13));
        let h = hold(&mut q, 16, 1000, 20_000, 1000, |i| Packet {
            in_profile: true,
            ..pkt(i, 1000)
        });
        assert_eq!(h.forced, 1000);
    }
}

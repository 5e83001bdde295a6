//! Constant bit rate source (ns-2's Application/Traffic/CBR).

use serde::{Deserialize, Serialize};

use super::SourceStep;
use crate::config::ScenarioError;
use crate::rng::RngStream;
use crate::time::{Dur, Rate, SimTime};

/// Configuration of a CBR source, as written in a scenario's `cbr = {…}`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CbrConfig {
    /// Sending rate (bytes on the wire per second × 8).
    pub rate: Rate,
    /// Packet size on the wire, headers included [bytes, number or "1KB"]; default 1000.
    #[serde(default = "default_size", deserialize_with = "crate::units::bytes_u32")]
    pub size: u32,
    /// Random jitter of each interval, as a fraction: the gap is uniform in
    /// `interval·[1−jitter, 1+jitter]`; default 0 (strictly periodic).
    #[serde(default)]
    pub jitter: f64,
    /// Exponential gaps with the same mean instead (a Poisson source); default false.
    #[serde(default)]
    pub poisson: bool,
}

fn default_size() -> u32 {
    1000
}

impl CbrConfig {
    /// Checks the values; the error key is relative to the `cbr` table.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        super::check_udp_size(self.size)?;
        if self.poisson && self.jitter > 0.0 {
            return Err(ScenarioError::new(
                "jitter",
                "jitter and poisson exclude each other",
            ));
        }
        if !(0.0..1.0).contains(&self.jitter) {
            return Err(ScenarioError::new(
                "jitter",
                format!("expected a fraction in [0, 1), found {}", self.jitter),
            ));
        }
        Ok(())
    }
}

/// A CBR source: one packet of `size` bytes every `size·8/rate` seconds.
#[derive(Clone, Debug)]
pub struct Cbr {
    interval: Dur,
    jitter: f64,
    poisson: bool,
    stop: SimTime,
    rng: RngStream,
}

impl Cbr {
    /// A source that sends from its first timer until `stop`.
    pub fn new(cfg: &CbrConfig, stop: SimTime, rng: RngStream) -> Self {
        Cbr {
            interval: cfg.rate.tx_time(cfg.size),
            jitter: cfg.jitter,
            poisson: cfg.poisson,
            stop,
            rng,
        }
    }

    /// Sends one packet now (if before the stop time) and says when the next is due.
    pub fn on_timer(&mut self, now: SimTime) -> SourceStep {
        if now >= self.stop {
            return SourceStep {
                send: false,
                next: None,
            };
        }
        let gap = if self.poisson {
            Dur::from_secs_f64(self.rng.exponential(self.interval.as_secs_f64()))
        } else if self.jitter > 0.0 {
            self.interval
                .mul_f64(1.0 + self.jitter * (2.0 * self.rng.uniform() - 1.0))
        } else {
            self.interval
        };
        let next = now + gap;
        SourceStep {
            send: true,
            next: (next < self.stop).then_some(next),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strictly_periodic_until_stop() {
        let cfg = CbrConfig {
            rate: Rate::from_kbps(80),
            size: 1000,
            jitter: 0.0,
            poisson: false,
        };
        let mut c = Cbr::new(&cfg, SimTime::from_millis(250), RngStream::from_seed(1));
        let mut t = SimTime::ZERO;
        let mut sent = 0;
        loop {
            let s = c.on_timer(t);
            sent += s.send as u32;
            match s.next {
                Some(n) => {
                    assert_eq!(n - t, Dur::from_millis(100));
                    t = n;
                }
                None => break,
            }
        }
        assert_eq!(sent, 3); // at 0, 100, 200 ms
    }

    #[test]
    fn jitter_keeps_the_mean_rate() {
        let cfg = CbrConfig {
            rate: Rate::from_mbps(1),
            size: 1000,
            jitter: 0.5,
            poisson: false,
        };
        let mut c = Cbr::new(&cfg, SimTime::from_secs(100), RngStream::from_seed(3));
        let (mut t, mut n) = (SimTime::ZERO, 0u64);
        while let Some(next) = c.on_timer(t).next {
            t = next;
            n += 1;
        }
        // 1 Mb/s of 1000-byte packets = 125 packets/s → 12 500 in 100 s.
        assert!((n as f64 - 12_500.0).abs() < 250.0, "{n}");
    }

    #[test]
    fn validation_names_the_key() {
        let cfg = CbrConfig {
            rate: Rate::from_kbps(8),
            size: 10,
            jitter: 0.0,
            poisson: false,
        };
        assert_eq!(cfg.validate().unwrap_err().key, "size");
        let cfg = CbrConfig {
            rate: Rate::from_kbps(8),
            size: 100,
            jitter: 1.5,
            poisson: false,
        };
        assert_eq!(cfg.validate().unwrap_err().key, "jitter");
    }
}

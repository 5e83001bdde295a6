//! Constant bit rate source (ns-2's Application/Traffic/CBR), optionally with a rate
//! that changes at fixed intervals (the fluctuating background CBR of P4 §5.2).

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
    /// A new rate, uniform in `[min, max]`, every `every` (the first interval runs at
    /// `rate`); default none (the rate never changes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_change: Option<RateChange>,
}

/// A CBR rate that is redrawn at fixed intervals, as in `rate_change = {…}`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RateChange {
    /// Length of each interval at one rate.
    pub every: Dur,
    /// Lowest rate drawn.
    pub min: Rate,
    /// Highest rate drawn.
    pub max: Rate,
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
        if let Some(rc) = &self.rate_change {
            if rc.every == Dur::ZERO {
                return Err(ScenarioError::new(
                    "rate_change.every",
                    "expected a positive interval",
                ));
            }
            if rc.min.bps() == 0 {
                return Err(ScenarioError::new(
                    "rate_change.min",
                    "expected a positive rate",
                ));
            }
            if rc.max < rc.min {
                return Err(ScenarioError::new(
                    "rate_change.max",
                    format!("expected at least min ({}), found {}", rc.min, rc.max),
                ));
            }
        }
        Ok(())
    }
}

/// A CBR source: one packet of `size` bytes every `size·8/rate` seconds.
#[derive(Clone, Debug)]
pub struct Cbr {
    interval: Dur,
    size: u32,
    jitter: f64,
    poisson: bool,
    rate_change: Option<RateChange>,
    /// When the current rate interval ends (set at the first timer).
    next_change: Option<SimTime>,
    stop: SimTime,
    rng: RngStream,
}

impl Cbr {
    /// A source that sends from its first timer until `stop`.
    pub fn new(cfg: &CbrConfig, stop: SimTime, rng: RngStream) -> Self {
        Cbr {
            interval: cfg.rate.tx_time(cfg.size),
            size: cfg.size,
            jitter: cfg.jitter,
            poisson: cfg.poisson,
            rate_change: cfg.rate_change.clone(),
            next_change: None,
            stop,
            rng,
        }
    }

    /// The rate packets are sent at now (changes only with `rate_change`).
    pub fn rate_bps(&self) -> f64 {
        self.size as f64 * 8.0 / self.interval.as_secs_f64()
    }

    /// Draws a new rate for every interval boundary passed by `now`.
    fn change_rate(&mut self, now: SimTime) {
        let Some(rc) = &self.rate_change else { return };
        let (every, lo, hi) = (rc.every, rc.min.bps() as f64, rc.max.bps() as f64);
        let mut due = *self.next_change.get_or_insert(now + every);
        while now >= due {
            let bps = lo + (hi - lo) * self.rng.uniform();
            self.interval = Rate::from_bps(bps.round() as u64).tx_time(self.size);
            due += every;
        }
        self.next_change = Some(due);
    }

    /// Sends one packet now (if before the stop time) and says when the next is due.
    pub fn on_timer(&mut self, now: SimTime) -> SourceStep {
        if now >= self.stop {
            return SourceStep {
                send: false,
                next: None,
            };
        }
        self.change_rate(now);
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
            rate_change: None,
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
            rate_change: None,
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
            rate_change: None,
        };
        assert_eq!(cfg.validate().unwrap_err().key, "size");
        let cfg = CbrConfig {
            rate: Rate::from_kbps(8),
            size: 100,
            jitter: 1.5,
            poisson: false,
            rate_change: None,
        };
        assert_eq!(cfg.validate().unwrap_err().key, "jitter");
        let change = |every: Dur, min: u64, max: u64| CbrConfig {
            rate: Rate::from_kbps(500),
            size: 1000,
            jitter: 0.0,
            poisson: false,
            rate_change: Some(RateChange {
                every,
                min: Rate::from_kbps(min),
                max: Rate::from_kbps(max),
            }),
        };
        let key = |c: CbrConfig| c.validate().unwrap_err().key;
        assert_eq!(key(change(Dur::ZERO, 500, 3500)), "rate_change.every");
        assert_eq!(key(change(Dur::from_secs(1), 0, 3500)), "rate_change.min");
        assert_eq!(key(change(Dur::from_secs(1), 3500, 500)), "rate_change.max");
        assert!(change(Dur::from_secs(1), 500, 3500).validate().is_ok());
    }

    /// Packets sent in each whole second of a run from 0 to `secs`.
    fn per_second(c: &mut Cbr, secs: u64) -> Vec<u64> {
        let mut counts = vec![0u64; secs as usize];
        let mut t = SimTime::ZERO;
        loop {
            let s = c.on_timer(t);
            if s.send {
                counts[(t.as_secs_f64() as usize).min(secs as usize - 1)] += 1;
            }
            match s.next {
                Some(n) => t = n,
                None => return counts,
            }
        }
    }

    #[test]
    fn rate_change_redraws_the_rate_every_interval_within_its_bounds() {
        let cfg = CbrConfig {
            rate: Rate::from_kbps(500),
            size: 1000,
            jitter: 0.0,
            poisson: false,
            rate_change: Some(RateChange {
                every: Dur::from_secs(1),
                min: Rate::from_kbps(500),
                max: Rate::from_kbps(3500),
            }),
        };
        let mut c = Cbr::new(&cfg, SimTime::from_secs(200), RngStream::from_seed(5));
        let counts = per_second(&mut c, 200);
        // The first second runs at `rate` (500 kb/s = 62.5 packets of 1000 bytes).
        assert!((62..=63).contains(&counts[0]), "{}", counts[0]);
        // Each later second at one rate in [500 kb/s, 3.5 Mb/s] (±1 packet at the edges).
        let (lo, hi) = (*counts.iter().min().unwrap(), *counts.iter().max().unwrap());
        assert!(lo >= 61 && hi <= 439, "{lo}..{hi}");
        // Uniform draws: the mean is about 2 Mb/s (250 packets) and the rates spread.
        let mean = counts[1..].iter().sum::<u64>() as f64 / 199.0;
        assert!((mean - 250.0).abs() < 25.0, "{mean}");
        assert!(hi - lo > 250, "{lo}..{hi}");
        let changes = counts
            .windows(2)
            .filter(|w| w[0].abs_diff(w[1]) > 10)
            .count();
        assert!(changes > 150, "{changes}");
    }

    #[test]
    fn without_rate_change_the_rate_stays() {
        let cfg = CbrConfig {
            rate: Rate::from_kbps(800),
            size: 1000,
            jitter: 0.0,
            poisson: false,
            rate_change: None,
        };
        let mut c = Cbr::new(&cfg, SimTime::from_secs(10), RngStream::from_seed(5));
        assert!(per_second(&mut c, 10).iter().all(|&n| n == 100));
        assert_eq!(c.rate_bps(), 800_000.0);
    }
}

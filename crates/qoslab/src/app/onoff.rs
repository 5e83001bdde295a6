//! Pareto on/off source (ns-2's Application/Traffic/Pareto): CBR at `rate` during
//! on periods, silent during off periods; both lengths Pareto-distributed with the
//! same shape.

use serde::{Deserialize, Serialize};

use super::SourceStep;
use crate::config::ScenarioError;
use crate::rng::RngStream;
use crate::time::{Dur, Rate, SimTime};

/// Configuration of a Pareto on/off source, as written in `pareto = {…}`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ParetoConfig {
    /// Sending rate while on.
    pub rate: Rate,
    /// Mean on period.
    pub mean_on: Dur,
    /// Mean off period.
    pub mean_off: Dur,
    /// Pareto shape (> 1); default 1.5.
    #[serde(default = "default_shape")]
    pub shape: f64,
    /// Packet size on the wire, headers included [bytes, number or "1KB"]; default 1000.
    #[serde(default = "default_size", deserialize_with = "crate::units::bytes_u32")]
    pub size: u32,
}

fn default_shape() -> f64 {
    1.5
}
fn default_size() -> u32 {
    1000
}

impl ParetoConfig {
    /// Checks the values; the error key is relative to the `pareto` table.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        if !(self.shape > 1.0 && self.shape.is_finite()) {
            return Err(ScenarioError::new(
                "shape",
                format!(
                    "expected a Pareto shape > 1 (finite mean), found {}",
                    self.shape
                ),
            ));
        }
        if self.mean_on == Dur::ZERO {
            return Err(ScenarioError::new(
                "mean_on",
                "expected a positive mean on period",
            ));
        }
        super::check_udp_size(self.size)
    }
}

/// A Pareto on/off source.
#[derive(Clone, Debug)]
pub struct ParetoOnOff {
    cfg: ParetoConfig,
    interval: Dur,
    /// End of the current on period (or `None` while off / before the first).
    on_until: Option<SimTime>,
    stop: SimTime,
    rng: RngStream,
}

impl ParetoOnOff {
    /// A source that starts with an on period at its first timer and ends at `stop`.
    pub fn new(cfg: &ParetoConfig, stop: SimTime, rng: RngStream) -> Self {
        ParetoOnOff {
            cfg: cfg.clone(),
            interval: cfg.rate.tx_time(cfg.size),
            on_until: None,
            stop,
            rng,
        }
    }

    fn draw(&mut self, mean: Dur) -> Dur {
        Dur::from_secs_f64(self.rng.pareto(mean.as_secs_f64(), self.cfg.shape))
    }

    /// Sends when on; switches periods; says when the next packet or switch is due.
    pub fn on_timer(&mut self, now: SimTime) -> SourceStep {
        if now >= self.stop {
            return SourceStep {
                send: false,
                next: None,
            };
        }
        let until = match self.on_until {
            Some(u) if now < u => u,
            Some(_) => {
                // The on period is over: stay off, then start a new on period.
                self.on_until = None;
                let off = self.draw(self.cfg.mean_off);
                let next = now + off;
                return SourceStep {
                    send: false,
                    next: (next < self.stop).then_some(next),
                };
            }
            None => {
                let on = self.draw(self.cfg.mean_on);
                let u = now + on;
                self.on_until = Some(u);
                u
            }
        };
        let next = (now + self.interval).min(until);
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
    fn long_run_rate_is_duty_cycle_times_rate() {
        let cfg = ParetoConfig {
            rate: Rate::from_kbps(200),
            mean_on: Dur::from_secs(1),
            mean_off: Dur::from_secs(2),
            shape: 1.5,
            size: 500,
        };
        let stop = SimTime::from_secs(20_000);
        let mut s = ParetoOnOff::new(&cfg, stop, RngStream::from_seed(11));
        let (mut t, mut sent) = (SimTime::ZERO, 0u64);
        loop {
            let st = s.on_timer(t);
            sent += st.send as u64;
            match st.next {
                Some(n) => t = n,
                None => break,
            }
        }
        let rate = sent as f64 * 500.0 * 8.0 / 20_000.0;
        // Expected 200 kb/s × 1/3; heavy tails (shape 1.5) converge slowly: ±20 %.
        assert!((rate / (200_000.0 / 3.0) - 1.0).abs() < 0.2, "{rate}");
    }
}

//! Per-flow arrival-rate estimators of an ERUF edge (P2 §2.1 and its footnote 1).
//!
//! - [`WindowEstimator`]: the paper's estimator. The rate is the bytes of the last `n`
//!   packets over the time they took to arrive; the window `n` starts at one packet and
//!   grows by one packet per arrival until two successive estimates agree within a
//!   tolerance ("converged rapidly using windows with 4–7 packets"), then stays.
//! - [`EwmaEstimator`]: exponential averaging as in CSFQ (Stoica, Shenker & Zhang,
//!   SIGCOMM 1998, eq. 3): `r ← (1 − e^(−T/K))·l/T + e^(−T/K)·r` for a packet of `l`
//!   bytes arriving `T` after the previous one, with averaging constant `K`.

use std::collections::VecDeque;

use crate::time::{Dur, SimTime};

/// The paper's window estimator (P2 footnote 1).
#[derive(Clone, Debug)]
pub struct WindowEstimator {
    /// Recent arrivals (time, bytes), at most `window + 1`.
    recent: VecDeque<(SimTime, u32)>,
    /// Current window [packets].
    window: usize,
    /// Largest window [packets].
    max_window: usize,
    /// Relative change below which the estimate counts as converged.
    tolerance: f64,
    converged: bool,
    /// Last estimate [bit/s]; 0 before two arrivals.
    rate: f64,
}

impl WindowEstimator {
    /// A window of one packet growing to at most `max_window` (≥ 1).
    pub fn new(max_window: usize, tolerance: f64) -> Self {
        WindowEstimator {
            recent: VecDeque::with_capacity(max_window + 1),
            window: 1,
            max_window: max_window.max(1),
            tolerance,
            converged: false,
            rate: 0.0,
        }
    }

    /// A packet of `bytes` arrived at `now`.
    pub fn on_arrival(&mut self, now: SimTime, bytes: u32) {
        self.recent.push_back((now, bytes));
        while self.recent.len() > self.window + 1 {
            self.recent.pop_front();
        }
        let n = self.recent.len() - 1;
        if n == 0 {
            return;
        }
        let span = (now - self.recent[0].0).as_secs_f64();
        // The bytes of the last n packets arrived over the n gaps before them.
        let bytes: u64 = self.recent.iter().skip(1).map(|&(_, b)| b as u64).sum();
        if span <= 0.0 {
            return; // simultaneous arrivals (an aggregate): wait for a gap
        }
        let est = bytes as f64 * 8.0 / span;
        if !self.converged && n == self.window {
            let prev = self.rate;
            if prev > 0.0 && ((est - prev) / prev).abs() <= self.tolerance {
                self.converged = true;
            } else if self.window < self.max_window {
                self.window += 1;
            }
        }
        self.rate = est;
    }

    /// Current estimate [bit/s] (0 before two arrivals).
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// Current window [packets].
    pub fn window(&self) -> usize {
        self.window
    }
}

/// CSFQ's exponential averaging (Stoica et al. 1998, eq. 3).
#[derive(Clone, Debug)]
pub struct EwmaEstimator {
    k: f64,
    last: Option<SimTime>,
    rate: f64,
}

impl EwmaEstimator {
    /// Averaging constant `k` (CSFQ uses 100 ms).
    pub fn new(k: Dur) -> Self {
        EwmaEstimator {
            k: k.as_secs_f64(),
            last: None,
            rate: 0.0,
        }
    }

    /// A packet of `bytes` arrived at `now`.
    pub fn on_arrival(&mut self, now: SimTime, bytes: u32) {
        let bits = bytes as f64 * 8.0;
        if let Some(last) = self.last {
            let t = (now - last).as_secs_f64();
            if t > 0.0 {
                let w = (-t / self.k).exp();
                self.rate = (1.0 - w) * bits / t + w * self.rate;
            } else {
                // T → 0: (1 − e^(−T/K))/T → 1/K.
                self.rate += bits / self.k;
            }
        }
        self.last = Some(now);
    }

    /// Current estimate [bit/s] (0 before two arrivals).
    pub fn rate(&self) -> f64 {
        self.rate
    }
}

/// One of the two estimators.
#[derive(Clone, Debug)]
pub enum Estimator {
    /// The paper's window estimator.
    Window(WindowEstimator),
    /// CSFQ's exponential averaging.
    Ewma(EwmaEstimator),
}

impl Estimator {
    /// A packet of `bytes` arrived at `now`.
    pub fn on_arrival(&mut self, now: SimTime, bytes: u32) {
        match self {
            Estimator::Window(e) => e.on_arrival(now, bytes),
            Estimator::Ewma(e) => e.on_arrival(now, bytes),
        }
    }
    /// Current estimate [bit/s].
    pub fn rate(&self) -> f64 {
        match self {
            Estimator::Window(e) => e.rate(),
            Estimator::Ewma(e) => e.rate(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_estimator_converges_on_a_cbr_flow() {
        // 100-byte packets every 2 ms: 400 kb/s.
        let mut e = WindowEstimator::new(16, 0.05);
        for i in 0..20 {
            e.on_arrival(SimTime::from_millis(2 * i), 100);
        }
        assert!((e.rate() - 400_000.0).abs() < 1.0, "{}", e.rate());
        assert!(e.window() <= 3, "{}", e.window());
    }

    #[test]
    fn window_grows_on_a_bursty_flow_until_it_converges() {
        // Pairs of back-to-back packets every 10 ms: a window of one packet sees 0 or
        // huge gaps; a longer window averages them.
        let mut e = WindowEstimator::new(16, 0.1);
        for i in 0..200u64 {
            let t = SimTime::from_micros((i / 2) * 10_000 + (i % 2) * 100);
            e.on_arrival(t, 1000);
        }
        assert!(e.window() > 2, "{}", e.window());
        // 2000 bytes per 10 ms = 1.6 Mb/s, within the window's end effects.
        assert!((e.rate() / 1.6e6 - 1.0).abs() < 0.25, "{}", e.rate());
    }

    #[test]
    fn ewma_follows_a_rate_change_within_a_few_k() {
        let mut e = EwmaEstimator::new(Dur::from_millis(100));
        let mut t = 0u64;
        // 1 Mb/s for 1 s (125-byte packets every ms), then 250 kb/s for 1 s.
        for _ in 0..1000 {
            e.on_arrival(SimTime::from_micros(t), 125);
            t += 1000;
        }
        assert!((e.rate() / 1e6 - 1.0).abs() < 0.01, "{}", e.rate());
        for _ in 0..250 {
            e.on_arrival(SimTime::from_micros(t), 125);
            t += 4000;
        }
        assert!((e.rate() / 250e3 - 1.0).abs() < 0.01, "{}", e.rate());
    }
}

//! Retransmission timeout per RFC 6298: SRTT/RTTVAR, min/initial/max RTO, granularity
//! and exponential backoff. Samples come from the sender, which applies Karn's rule.
//!
//! Optionally ([`RttEstimator::ns2_ticks`]) the estimator of ns-2's `tcp.cc`
//! (`rtt_update` / `rtt_timeout`), which counts in whole ticks of `tcpTick_`: each
//! sample is rounded to the nearest tick and at least 1; SRTT is kept with 3 and
//! RTTVAR with 2 fractional bits in integers (so small decreases truncate away, as in
//! BSD); RTO = SRTT + 4·RTTVAR in ticks, at least 2 ticks. With a 100 ms tick (ns-2's
//! default until 2004) every sample below 150 ms counts as one tick, and the first
//! sample's RTTVAR (half of it) never decays: the RTO stays 3 ticks = 300 ms.

use crate::time::Dur;

/// RTT estimator and RTO computation (RFC 6298 §2), in integer nanoseconds.
#[derive(Clone, Debug)]
pub struct RttEstimator {
    srtt: Option<u64>,
    rttvar: u64,
    min_rto: Dur,
    max_rto: Dur,
    initial_rto: Dur,
    granularity: Dur,
    /// Backoff multiplier (1, 2, 4, …), RFC 6298 §5.5.
    backoff: u64,
    /// ns-2 mode: the tick [ns] (`granularity`), SRTT·8 and RTTVAR·4 in ticks.
    ns2: Option<Ns2Ticks>,
}

/// ns-2's integer estimator state (`t_srtt_`, `t_rttvar_`), in ticks.
#[derive(Clone, Copy, Debug)]
struct Ns2Ticks {
    tick: u64,
    srtt8: i64,
    rttvar4: i64,
}

impl RttEstimator {
    /// An estimator with no sample yet (RTO = `initial_rto`, RFC 6298 §2.1).
    pub fn new(min_rto: Dur, initial_rto: Dur, max_rto: Dur, granularity: Dur) -> Self {
        RttEstimator {
            srtt: None,
            rttvar: 0,
            min_rto,
            max_rto,
            initial_rto,
            granularity,
            backoff: 1,
            ns2: None,
        }
    }

    /// Switches to ns-2's whole-tick estimator with tick = the granularity (module doc).
    /// `min_rto` and `max_rto` still bound the result.
    pub fn ns2_ticks(mut self) -> Self {
        let tick = self.granularity.as_nanos().max(1);
        self.ns2 = Some(Ns2Ticks {
            tick,
            srtt8: 0,
            rttvar4: 0,
        });
        self
    }

    /// Takes one RTT measurement `r` (RFC 6298 §2.2–2.3) and clears the backoff, as the
    /// sample came from an unambiguous (never retransmitted) segment.
    pub fn sample(&mut self, r: Dur) {
        let r = r.as_nanos();
        if let Some(n) = &mut self.ns2 {
            // ns-2 tcp.cc rtt_update: t_rtt = int(r/tick + 0.5), at least 1.
            let t = ((r + n.tick / 2) / n.tick).max(1) as i64;
            if self.srtt.is_none() {
                n.srtt8 = t << 3;
                n.rttvar4 = t << 1;
            } else {
                let mut delta = t - (n.srtt8 >> 3);
                n.srtt8 += delta;
                if n.srtt8 <= 0 {
                    n.srtt8 = 1;
                }
                delta = delta.abs() - (n.rttvar4 >> 2);
                n.rttvar4 += delta;
                if n.rttvar4 <= 0 {
                    n.rttvar4 = 1;
                }
            }
            let tick = n.tick as f64;
            self.srtt = Some((n.srtt8 as f64 * tick / 8.0) as u64);
            self.rttvar = (n.rttvar4 as f64 * tick / 4.0) as u64;
            self.backoff = 1;
            return;
        }
        match self.srtt {
            None => {
                // §2.2: SRTT <- R, RTTVAR <- R/2.
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(s) => {
                // §2.3 with alpha = 1/8, beta = 1/4; RTTVAR first, using the old SRTT.
                self.rttvar = (3 * self.rttvar + s.abs_diff(r)) / 4;
                self.srtt = Some((7 * s + r) / 8);
            }
        }
        self.backoff = 1;
    }

    /// The RTO before backoff: SRTT + max(G, 4·RTTVAR), clamped to [min_rto, max_rto]
    /// (§2.2–2.5), or the initial RTO before any sample.
    pub fn base_rto(&self) -> Dur {
        let raw = match (self.srtt, self.ns2) {
            (None, _) => self.initial_rto,
            // ns-2 rtt_timeout: ((t_srtt >> 3) + t_rttvar) ticks, at least 2 ticks.
            (Some(_), Some(n)) => {
                let ticks = ((n.srtt8 >> 3) + n.rttvar4).max(2) as u64;
                Dur::from_nanos(ticks * n.tick)
            }
            (Some(s), None) => {
                Dur::from_nanos(s) + self.granularity.max(Dur::from_nanos(4 * self.rttvar))
            }
        };
        raw.max(self.min_rto).min(self.max_rto)
    }

    /// The RTO in force: the base RTO times the backoff, capped at `max_rto` (§5.5).
    pub fn rto(&self) -> Dur {
        self.base_rto()
            .saturating_mul(self.backoff)
            .min(self.max_rto)
    }

    /// Doubles the timeout after an expiry (§5.5), up to `max_rto`.
    pub fn back_off(&mut self) {
        if self.rto() < self.max_rto {
            self.backoff = self.backoff.saturating_mul(2);
        }
    }

    /// Smoothed RTT, if sampled.
    pub fn srtt(&self) -> Option<Dur> {
        self.srtt.map(Dur::from_nanos)
    }

    /// RTT variation, if sampled.
    pub fn rttvar(&self) -> Option<Dur> {
        self.srtt.map(|_| Dur::from_nanos(self.rttvar))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est() -> RttEstimator {
        RttEstimator::new(
            Dur::from_millis(200),
            Dur::from_secs(1),
            Dur::from_secs(60),
            Dur::ZERO,
        )
    }

    #[test]
    fn follows_rfc6298_on_a_hand_computed_sequence() {
        let mut e = est();
        assert_eq!(e.rto(), Dur::from_secs(1));
        // R = 400 ms: SRTT 400, RTTVAR 200, RTO 400 + 800 = 1200 ms.
        e.sample(Dur::from_millis(400));
        assert_eq!(e.srtt(), Some(Dur::from_millis(400)));
        assert_eq!(e.rttvar(), Some(Dur::from_millis(200)));
        assert_eq!(e.rto(), Dur::from_millis(1200));
        // R = 800: RTTVAR = 3/4·200 + 1/4·400 = 250; SRTT = 7/8·400 + 1/8·800 = 450;
        // RTO = 450 + 1000 = 1450 ms.
        e.sample(Dur::from_millis(800));
        assert_eq!(e.rttvar(), Some(Dur::from_millis(250)));
        assert_eq!(e.srtt(), Some(Dur::from_millis(450)));
        assert_eq!(e.rto(), Dur::from_millis(1450));
        // R = 450: RTTVAR = 187.5, SRTT = 450, RTO = 450 + 750 = 1200 ms.
        e.sample(Dur::from_millis(450));
        assert_eq!(e.rttvar(), Some(Dur::from_micros(187_500)));
        assert_eq!(e.srtt(), Some(Dur::from_millis(450)));
        assert_eq!(e.rto(), Dur::from_millis(1200));
    }

    #[test]
    fn min_rto_and_granularity_bound_the_rto() {
        let mut e = est();
        e.sample(Dur::from_millis(10));
        // 10 + 4·5 = 30 ms < min_rto.
        assert_eq!(e.rto(), Dur::from_millis(200));
        let mut g = RttEstimator::new(
            Dur::from_millis(1),
            Dur::from_secs(1),
            Dur::from_secs(60),
            Dur::from_millis(500),
        );
        g.sample(Dur::from_millis(10));
        // SRTT + max(G, 4·RTTVAR) = 10 + 500.
        assert_eq!(g.rto(), Dur::from_millis(510));
    }

    #[test]
    fn backoff_doubles_up_to_the_cap_and_a_sample_clears_it() {
        let mut e = est();
        let mut seen = vec![e.rto()];
        for _ in 0..8 {
            e.back_off();
            seen.push(e.rto());
        }
        let s: Vec<u64> = seen.iter().map(|d| d.as_nanos() / 1_000_000_000).collect();
        assert_eq!(s, vec![1, 2, 4, 8, 16, 32, 60, 60, 60]);
        e.sample(Dur::from_millis(100));
        assert_eq!(e.rto(), Dur::from_millis(300));
    }

    fn ns2(tick_ms: u64) -> RttEstimator {
        RttEstimator::new(
            Dur::from_millis(1),
            Dur::from_secs(3),
            Dur::from_secs(60),
            Dur::from_millis(tick_ms),
        )
        .ns2_ticks()
    }

    #[test]
    fn ns2_ticks_keep_the_rto_at_three_ticks_for_sub_tick_samples() {
        // 100 ms tick: 3 ms … 88 ms all count as 1 tick; SRTT 1, RTTVAR 1/2 tick that
        // never decays (2 >> 2 = 0): RTO = 1 + 2 = 3 ticks. The RFC 6298 estimator with
        // G = 100 ms and min 200 ms gives 200 ms on the same samples.
        let samples = [3, 11, 22, 44, 88];
        let mut e = ns2(100);
        let mut r = RttEstimator::new(
            Dur::from_millis(200),
            Dur::from_secs(3),
            Dur::from_secs(60),
            Dur::from_millis(100),
        );
        for ms in samples {
            e.sample(Dur::from_millis(ms));
            r.sample(Dur::from_millis(ms));
            assert_eq!(e.rto(), Dur::from_millis(300), "after {ms} ms");
        }
        assert_eq!(e.srtt(), Some(Dur::from_millis(100)));
        assert_eq!(r.rto(), Dur::from_millis(200));
    }

    #[test]
    fn ns2_ticks_follow_tcp_cc_integer_arithmetic() {
        let mut e = ns2(100);
        // 420 ms -> 4 ticks: srtt8 = 32, rttvar4 = 8, RTO = 4 + 8 = 12 ticks.
        e.sample(Dur::from_millis(420));
        assert_eq!(e.rto(), Dur::from_millis(1200));
        // 860 ms -> 9 ticks: delta 5, srtt8 = 37 (4.625 ticks); |5| - (8 >> 2) = 3,
        // rttvar4 = 11; RTO = (37 >> 3) + 11 = 15 ticks.
        e.sample(Dur::from_millis(860));
        assert_eq!(e.rto(), Dur::from_millis(1500));
        assert_eq!(e.srtt(), Some(Dur::from_micros(462_500)));
        assert_eq!(e.rttvar(), Some(Dur::from_micros(275_000)));
        // 10 ms tick, 3 ms samples: 1 tick each, RTO 3 ticks = 30 ms, and never below
        // 2 ticks; backoff doubles it.
        let mut f = ns2(10);
        f.sample(Dur::from_millis(3));
        assert_eq!(f.rto(), Dur::from_millis(30));
        f.back_off();
        assert_eq!(f.rto(), Dur::from_millis(60));
    }
}

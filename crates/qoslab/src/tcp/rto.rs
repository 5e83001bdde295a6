//! Retransmission timeout per RFC 6298: SRTT/RTTVAR, min/initial/max RTO, granularity
//! and exponential backoff. Samples come from the sender, which applies Karn's rule.

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
        }
    }

    /// Takes one RTT measurement `r` (RFC 6298 §2.2–2.3) and clears the backoff, as the
    /// sample came from an unambiguous (never retransmitted) segment.
    pub fn sample(&mut self, r: Dur) {
        let r = r.as_nanos();
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
        let raw = match self.srtt {
            None => self.initial_rto,
            Some(s) => Dur::from_nanos(s) + self.granularity.max(Dur::from_nanos(4 * self.rttvar)),
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
}

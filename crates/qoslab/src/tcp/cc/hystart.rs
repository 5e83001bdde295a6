//! HyStart++ (RFC 9406): leave slow start when the RTT rises, through a few rounds of
//! Conservative Slow Start (CSS) that grow a quarter as fast and undo the exit if the
//! RTT falls back.
//!
//! Rounds are delimited by sequence numbers as RFC 9406 §4.2 says: a round starts on an
//! ACK at or beyond `windowEnd`, and sets `windowEnd` to the highest byte sent so far
//! (SND.NXT; here the cumulative ACK plus the bytes still in flight). Each ACK's own RTT
//! ([`AckSample::ack_rtt`]) feeds the round's minimum.

use super::AckSample;
use crate::time::Dur;

/// RFC 9406 §4.3: lower bound of the delay-increase threshold.
pub const MIN_RTT_THRESH: Dur = Dur::from_millis(4);
/// RFC 9406 §4.3: upper bound of the delay-increase threshold.
pub const MAX_RTT_THRESH: Dur = Dur::from_millis(16);
/// RFC 9406 §4.3: the threshold is the last round's minimum RTT over this divisor.
pub const MIN_RTT_DIVISOR: u64 = 8;
/// RFC 9406 §4.3: RTT samples a round needs before its minimum is compared.
pub const N_RTT_SAMPLE: u32 = 8;
/// RFC 9406 §4.3: CSS grows the window this many times slower than slow start.
pub const CSS_GROWTH_DIVISOR: f64 = 4.0;
/// RFC 9406 §4.3: rounds of CSS before congestion avoidance.
pub const CSS_ROUNDS: u32 = 5;
/// RFC 9406 §4.3: cap on one ACK's slow-start increase [segments] for an unpaced sender
/// (qoslab's TCP does not pace).
pub const L: u32 = 8;

/// What the controller does with one slow-start ACK.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum HyStep {
    /// Grow the window by this many bytes (slow start or CSS).
    Grow(f64),
    /// CSS ran its `CSS_ROUNDS` rounds: set ssthresh to cwnd and enter congestion
    /// avoidance (RFC 9406 §4.2).
    EnterCa,
}

/// HyStart++ state of one connection's slow start.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HyStart {
    /// End of the current round (`windowEnd`); `None` before the first ACK.
    window_end: Option<u64>,
    /// `lastRoundMinRTT` (`None` = infinity).
    last_round_min: Option<Dur>,
    /// `currentRoundMinRTT` (`None` = infinity).
    current_round_min: Option<Dur>,
    /// `rttSampleCount` of the current round.
    samples: u32,
    /// In CSS: `cssBaselineMinRtt` and the rounds started in CSS so far.
    css: Option<(Dur, u32)>,
}

impl HyStart {
    /// Whether the sender is in Conservative Slow Start.
    pub fn in_css(&self) -> bool {
        self.css.is_some()
    }

    /// One ACK of new data in slow start (RFC 9406 §4.2), for a sender of segment
    /// size `mss`.
    pub fn on_ack(&mut self, ack: &AckSample, mss: u32) -> HyStep {
        if self.window_end.is_none_or(|e| ack.una >= e) {
            // A new round. The round CSS began in counts as its first.
            if let Some((_, rounds)) = self.css.as_mut() {
                *rounds += 1;
                if *rounds >= CSS_ROUNDS {
                    return HyStep::EnterCa;
                }
            }
            self.last_round_min = self.current_round_min;
            self.current_round_min = None;
            self.samples = 0;
            self.window_end = Some(ack.una + ack.in_flight as u64);
        }
        // cwnd += min(N, L·SMSS), divided by CSS_GROWTH_DIVISOR in CSS.
        let mut inc = ack.newly_acked.min(L * mss) as f64;
        if self.css.is_some() {
            inc /= CSS_GROWTH_DIVISOR;
        }
        if let Some(r) = ack.ack_rtt {
            self.current_round_min = Some(self.current_round_min.map_or(r, |m| m.min(r)));
            self.samples += 1;
        }
        if self.samples >= N_RTT_SAMPLE {
            if let (Some(cur), Some(last)) = (self.current_round_min, self.last_round_min) {
                match self.css {
                    None => {
                        let thresh = Dur::from_nanos(last.as_nanos() / MIN_RTT_DIVISOR)
                            .clamp(MIN_RTT_THRESH, MAX_RTT_THRESH);
                        if cur >= last + thresh {
                            self.css = Some((cur, 0));
                        }
                    }
                    Some((baseline, _)) => {
                        if cur < baseline {
                            // The RTT rise was spurious: back to slow start.
                            self.css = None;
                        }
                    }
                }
            }
        }
        HyStep::Grow(inc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1000;
    /// ACKs per synthetic round.
    const PER_ROUND: u64 = 20;

    /// ACK `i` (0-based) of round `r`: one segment each, the first of a round carrying
    /// a flight that ends exactly where the next round's first ACK acknowledges.
    fn ack(r: u64, i: u64, rtt_ms: u64) -> AckSample {
        AckSample {
            newly_acked: MSS,
            una: (r * PER_ROUND + i + 1) * MSS as u64,
            in_flight: PER_ROUND as u32 * MSS,
            ack_rtt: Some(Dur::from_millis(rtt_ms)),
            ..Default::default()
        }
    }

    /// Feeds rounds `from`, `from + 1`, … with these RTTs; returns every ACK's step.
    fn run(h: &mut HyStart, from: u64, rtts: &[u64]) -> Vec<HyStep> {
        let mut steps = vec![];
        for (r, &rtt) in rtts.iter().enumerate() {
            for i in 0..PER_ROUND {
                steps.push(h.on_ack(&ack(from + r as u64, i, rtt), MSS));
            }
        }
        steps
    }

    #[test]
    fn rtt_rise_above_threshold_enters_css_at_the_eighth_sample() {
        // Threshold: 100 ms / 8 = 12.5 ms (within 4..16 ms). 120 ≥ 112.5: exit.
        let mut h = HyStart::default();
        run(&mut h, 0, &[100, 100, 100]);
        assert!(!h.in_css());
        for i in 0..7 {
            assert_eq!(h.on_ack(&ack(3, i, 120), MSS), HyStep::Grow(MSS as f64));
            assert!(!h.in_css(), "sample {}", i + 1);
        }
        // The 8th sample of the round decides; its own increase is still slow start's.
        assert_eq!(h.on_ack(&ack(3, 7, 120), MSS), HyStep::Grow(MSS as f64));
        assert!(h.in_css());
        // CSS grows a quarter as fast.
        assert_eq!(
            h.on_ack(&ack(3, 8, 120), MSS),
            HyStep::Grow(MSS as f64 / 4.0)
        );
    }

    #[test]
    fn rtt_rise_below_threshold_stays_in_slow_start() {
        // 110 < 100 + 12.5 ms.
        let mut h = HyStart::default();
        let steps = run(&mut h, 0, &[100, 100, 100, 110, 110, 110]);
        assert!(!h.in_css());
        assert!(steps.iter().all(|s| *s == HyStep::Grow(MSS as f64)));
        // The threshold is at least MIN_RTT_THRESH: at 10 ms RTT, 10/8 ms → 4 ms.
        let mut h = HyStart::default();
        run(&mut h, 0, &[10, 10, 13]);
        assert!(!h.in_css());
        let mut h = HyStart::default();
        run(&mut h, 0, &[10, 10, 14]);
        assert!(h.in_css());
    }

    #[test]
    fn css_ends_in_congestion_avoidance_after_css_rounds() {
        let mut h = HyStart::default();
        run(&mut h, 0, &[100, 100, 100, 120]);
        assert!(h.in_css());
        // Rounds 4..7 are the 2nd..5th CSS rounds; the first ACK of round 8 starts the
        // 6th and ends CSS.
        let steps = run(&mut h, 4, &[120, 120, 120, 120]);
        assert!(steps.iter().all(|s| *s == HyStep::Grow(MSS as f64 / 4.0)));
        assert_eq!(h.on_ack(&ack(8, 0, 120), MSS), HyStep::EnterCa);
    }

    #[test]
    fn rtt_falling_below_the_baseline_resumes_slow_start() {
        let mut h = HyStart::default();
        run(&mut h, 0, &[100, 100, 100, 120]);
        assert!(h.in_css());
        run(&mut h, 4, &[119]);
        assert!(!h.in_css());
    }

    #[test]
    fn increase_is_capped_at_l_segments() {
        let mut h = HyStart::default();
        let mut a = ack(0, 0, 100);
        a.newly_acked = 20 * MSS;
        assert_eq!(h.on_ack(&a, MSS), HyStep::Grow((L * MSS) as f64));
    }
}

//! Constant Rate window increase (paper 000 §5, after its ref. [7]): in congestion
//! avoidance connection i adds c·rtt_i² segments per RTT, so that its sending rate grows
//! by c segments/s every second whatever its RTT. The aggregate-fair increase
//! ([`super::AggregateFair`]) is this with c = 1/rtt_av². Bounded to one segment per
//! ACK; decrease and slow start are Reno's; before the first RTT sample the increase is 1.

use super::{AckSample, CongestionControl, Window};
use crate::time::Dur;

/// Reno with the increase c·srtt² segments per RTT (c in segments/s²).
#[derive(Clone, Debug, PartialEq)]
#[repr(C)] // `w` first: at the same offset in every controller (see `AnyCc`)
pub struct ConstantRate {
    w: Window,
    c: f64,
}

impl ConstantRate {
    /// A controller with constant `c` [segments/s²], from window state `w`.
    pub fn new(w: Window, c: f64) -> Self {
        ConstantRate { w, c }
    }

    /// Increase per RTT [segments] for a connection whose RTT is `rtt`.
    pub fn increase_per_rtt(&self, rtt: Option<Dur>) -> f64 {
        rtt.map_or(1.0, |r| self.c * r.as_secs_f64() * r.as_secs_f64())
    }
}

impl CongestionControl for ConstantRate {
    fn name(&self) -> &'static str {
        "constant_rate"
    }
    fn cwnd(&self) -> u32 {
        self.w.cwnd()
    }
    fn ssthresh(&self) -> u32 {
        self.w.ssthresh()
    }
    fn on_ack(&mut self, ack: &AckSample) {
        let k = self.increase_per_rtt(ack.srtt);
        self.w.grow(ack.newly_acked, k);
    }
    fn ssthresh_after_loss(&self, in_flight: u32) -> u32 {
        self.w.reduced(in_flight, 0.5)
    }
    fn set_window(&mut self, cwnd: u32, ssthresh: u32) {
        self.w.set(cwnd, ssthresh)
    }
}

#[cfg(test)]
mod tests {
    use super::super::AggregateFair;
    use super::*;

    const MSS: u32 = 1000;

    /// cwnd after each of `acks` ACKs from 10 segments in congestion avoidance.
    fn trajectory(cc: &mut dyn CongestionControl, rtt_ms: u64, acks: usize) -> Vec<u32> {
        cc.set_window(10 * MSS, 10 * MSS);
        let s = AckSample {
            newly_acked: MSS,
            srtt: Some(Dur::from_millis(rtt_ms)),
            ..Default::default()
        };
        (0..acks)
            .map(|_| {
                cc.on_ack(&s);
                cc.cwnd()
            })
            .collect()
    }

    #[test]
    fn aggregate_fair_and_constant_rate_give_the_hand_computed_cwnd() {
        // rtt 200 ms, rtt_av 100 ms: (200/100)² = 4 segments per RTT, i.e. per ACK
        // 4·MSS²/cwnd: 10 000 → +400 = 10 400 → +384.62 = 10 784.62 → +370.90 =
        // 11 155.51 → +358.57 = 11 514.08 (floored by cwnd()).
        let want = vec![10_400, 10_784, 11_155, 11_514];
        let w = || Window::new(MSS, 2, 1000 * MSS);
        let mut af = AggregateFair::new(w(), Dur::from_millis(100));
        assert_eq!(trajectory(&mut af, 200, 4), want);
        // Constant Rate with c = 100 segments/s²: 100 · 0.2² = 4 segments per RTT.
        let mut cr = ConstantRate::new(w(), 100.0);
        assert_eq!(trajectory(&mut cr, 200, 4), want);
        // rtt 50 ms: (50/100)² = 1/4 segment per RTT: +25, +24.94, +24.88.
        let mut af = AggregateFair::new(w(), Dur::from_millis(100));
        assert_eq!(trajectory(&mut af, 50, 3), vec![10_025, 10_049, 10_074]);
        // rtt 400 ms: 16 segments per RTT would add 1 600 B per ACK: capped at one MSS.
        let mut af = AggregateFair::new(w(), Dur::from_millis(100));
        assert_eq!(trajectory(&mut af, 400, 2), vec![11_000, 12_000]);
        // Slow start is Reno's whatever the RTT: +1 MSS per ACK below ssthresh.
        let mut cr = ConstantRate::new(w(), 100.0);
        cr.set_window(2 * MSS, 8 * MSS);
        cr.on_ack(&AckSample {
            newly_acked: MSS,
            srtt: Some(Dur::from_millis(50)),
            ..Default::default()
        });
        assert_eq!(cr.cwnd(), 3 * MSS);
    }
}

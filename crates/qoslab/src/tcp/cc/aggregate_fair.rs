//! Aggregate-fair window increase for connections of one aggregate (paper 000, §5
//! "Adapting TCP Congestion Window").
//!
//! For fair sharing between connections of different RTTs, the congestion-avoidance
//! increase of connection i is f(rtt_i) = c·rtt_i² segments per RTT; choosing c so that
//! the aggregate is no more aggressive than one TCP with the aggregate's average RTT
//! gives c = 1/rtt_av², i.e. f(rtt_i) = (rtt_i / rtt_av)². Following the paper's ref. [7]
//! the increase is bounded to one segment per ACK. Decrease and slow start are Reno's.
//! `rtt_i` is the connection's smoothed RTT (queueing included) or, with `rtt = "min"`,
//! its smallest RTT sample (the base RTT); before the first sample the increase is 1.

use super::{AckSample, CongestionControl, Window};
use crate::tcp::AfRtt;
use crate::time::Dur;

/// Reno with the increase scaled by (srtt / rtt_av)².
#[derive(Clone, Debug, PartialEq)]
#[repr(C)] // `w` first: at the same offset in every controller (see `AnyCc`)
pub struct AggregateFair {
    w: Window,
    rtt_av: Dur,
    rtt: AfRtt,
    /// Smallest RTT sample so far.
    min_rtt: Option<Dur>,
}

impl AggregateFair {
    /// A controller for an aggregate of average RTT `rtt_av`, from window state `w`,
    /// scaling by the smoothed RTT.
    pub fn new(w: Window, rtt_av: Dur) -> Self {
        AggregateFair {
            w,
            rtt_av,
            rtt: AfRtt::Smoothed,
            min_rtt: None,
        }
    }

    /// The same, scaling by the RTT `rtt` says.
    pub fn with_rtt(mut self, rtt: AfRtt) -> Self {
        self.rtt = rtt;
        self
    }

    /// Increase per RTT [segments] for a connection whose RTT is `rtt` (paper 000 §5).
    pub fn increase_per_rtt(&self, rtt: Option<Dur>) -> f64 {
        match rtt {
            Some(r) if self.rtt_av > Dur::ZERO => {
                let x = r.as_secs_f64() / self.rtt_av.as_secs_f64();
                x * x
            }
            _ => 1.0,
        }
    }
}

impl CongestionControl for AggregateFair {
    fn name(&self) -> &'static str {
        "aggregate_fair"
    }
    fn cwnd(&self) -> u32 {
        self.w.cwnd()
    }
    fn ssthresh(&self) -> u32 {
        self.w.ssthresh()
    }
    fn on_ack(&mut self, ack: &AckSample) {
        if let Some(r) = ack.rtt {
            self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        }
        let rtt = match self.rtt {
            AfRtt::Smoothed => ack.srtt,
            AfRtt::Min => self.min_rtt,
        };
        let k = self.increase_per_rtt(rtt);
        self.w.grow(ack.newly_acked, k);
    }
    fn ssthresh_after_loss(&self, in_flight: u32) -> u32 {
        self.w.reduced(in_flight, 0.5)
    }
    fn set_window(&mut self, cwnd: u32, ssthresh: u32) {
        self.w.set(cwnd, ssthresh)
    }
    fn set_rtt_av(&mut self, rtt_av: Dur) {
        self.rtt_av = rtt_av;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1000;

    fn gain_over_one_window(rtt_ms: u64, rtt_av_ms: u64) -> f64 {
        let mut a = AggregateFair::new(
            Window::new(MSS, 2, 10_000 * MSS),
            Dur::from_millis(rtt_av_ms),
        );
        a.set_window(200 * MSS, 200 * MSS);
        let s = AckSample {
            newly_acked: MSS,
            srtt: Some(Dur::from_millis(rtt_ms)),
            ..Default::default()
        };
        for _ in 0..200 {
            a.on_ack(&s);
        }
        (a.cwnd() - 200 * MSS) as f64 / MSS as f64
    }

    #[test]
    fn increase_matches_rtt_ratio_squared() {
        for (rtt, av) in [(100, 100), (50, 100), (200, 100), (150, 100)] {
            let want = (rtt as f64 / av as f64).powi(2);
            let got = gain_over_one_window(rtt, av);
            assert!(
                (got - want).abs() < 0.03 * want + 0.02,
                "{rtt}/{av}: {got} vs {want}"
            );
        }
    }

    #[test]
    fn the_min_reading_scales_by_the_smallest_sample_not_the_smoothed_rtt() {
        // Samples 100 ms then 300 ms (queueing), srtt 250 ms, rtt_av 100 ms: the
        // smoothed reading grows by (2.5)² per RTT, the base-RTT reading by 1.
        let gain = |rtt: AfRtt| {
            let mut a =
                AggregateFair::new(Window::new(MSS, 2, 10_000 * MSS), Dur::from_millis(100))
                    .with_rtt(rtt);
            a.set_window(200 * MSS, 200 * MSS);
            let mut s = AckSample {
                newly_acked: MSS,
                rtt: Some(Dur::from_millis(100)),
                srtt: Some(Dur::from_millis(100)),
                ..Default::default()
            };
            a.on_ack(&s);
            let c0 = a.cwnd();
            s.rtt = Some(Dur::from_millis(300));
            s.srtt = Some(Dur::from_millis(250));
            for _ in 0..200 {
                a.on_ack(&s);
            }
            (a.cwnd() - c0) as f64 / MSS as f64
        };
        let (sm, mn) = (gain(AfRtt::Smoothed), gain(AfRtt::Min));
        assert!((sm - 6.25).abs() < 0.3, "{sm}");
        assert!((mn - 1.0).abs() < 0.05, "{mn}");
    }

    #[test]
    fn rtt_av_setter_changes_the_increase() {
        let mut a = AggregateFair::new(Window::new(MSS, 2, 100 * MSS), Dur::from_millis(100));
        let r = Some(Dur::from_millis(100));
        assert_eq!(a.increase_per_rtt(r), 1.0);
        a.set_rtt_av(Dur::from_millis(50));
        assert_eq!(a.increase_per_rtt(r), 4.0);
        assert_eq!(a.increase_per_rtt(None), 1.0);
    }
}

//! MulTCP, weighted AIMD: a flow of weight w behaves like w standard flows.
//!
//! Paper 004 (Hsieh, Kim, Sivakumar), §3.1 "Limitations of Weighted AIMD": "For a flow
//! with weight w, WAIMD modifies the increase (α) and decrease (β) parameters in AIMD to
//! be αw, and β/w respectively" (after Crowcroft & Oechslin's MulTCP, their ref. [3]).
//! With TCP's α = 1 segment per RTT and β = 1/2: increase w segments per RTT, decrease
//! to (1 − 1/(2w))·FlightSize on a loss. Slow start is the standard one.

use super::{AckSample, CongestionControl, Window};

/// Weighted AIMD with weight `w` (w = 1 is Reno).
#[derive(Clone, Debug, PartialEq)]
#[repr(C)] // `w` first: at the same offset in every controller (see `AnyCc`)
pub struct MulTcp {
    w: Window,
    weight: f64,
}

impl MulTcp {
    /// A controller of weight `weight` (> 0.5) starting from window state `w`.
    pub fn new(w: Window, weight: f64) -> Self {
        MulTcp { w, weight }
    }
    /// The weight w.
    pub fn weight(&self) -> f64 {
        self.weight
    }
}

impl CongestionControl for MulTcp {
    fn name(&self) -> &'static str {
        "multcp"
    }
    fn cwnd(&self) -> u32 {
        self.w.cwnd()
    }
    fn ssthresh(&self) -> u32 {
        self.w.ssthresh()
    }
    fn on_ack(&mut self, ack: &AckSample) {
        // Paper 004 §3.1: increase α·w per RTT.
        self.w.grow(ack.newly_acked, self.weight);
    }
    fn ssthresh_after_loss(&self, in_flight: u32) -> u32 {
        // Paper 004 §3.1: decrease parameter β/w, i.e. to (1 − β/w) of the window.
        self.w.reduced(in_flight, 1.0 - 0.5 / self.weight)
    }
    fn set_window(&mut self, cwnd: u32, ssthresh: u32) {
        self.w.set(cwnd, ssthresh)
    }
}

#[cfg(test)]
mod tests {
    use super::super::Reno;
    use super::*;

    const MSS: u32 = 1000;

    fn ack() -> AckSample {
        AckSample {
            newly_acked: MSS,
            ..Default::default()
        }
    }

    #[test]
    fn weight_one_equals_reno() {
        let mut m = MulTcp::new(Window::new(MSS, 2, 1000 * MSS), 1.0);
        let mut r = Reno::new(Window::new(MSS, 2, 1000 * MSS));
        m.set_window(3 * MSS, 8 * MSS);
        r.set_window(3 * MSS, 8 * MSS);
        for i in 0..500 {
            m.on_ack(&ack());
            r.on_ack(&ack());
            assert_eq!(m.cwnd(), r.cwnd(), "ack {i}");
        }
        for f in [MSS, 7 * MSS, 33 * MSS, 100 * MSS] {
            assert_eq!(m.ssthresh_after_loss(f), r.ssthresh_after_loss(f));
        }
    }

    #[test]
    fn weight_n_increases_n_times_faster_and_decreases_by_one_over_2n() {
        for n in [2.0, 4.0, 8.0] {
            let mut m = MulTcp::new(Window::new(MSS, 2, 10_000 * MSS), n);
            m.set_window(100 * MSS, 100 * MSS);
            // One window's worth of ACKs (100) adds ≈ n segments.
            for _ in 0..100 {
                m.on_ack(&ack());
            }
            let gained = (m.cwnd() - 100 * MSS) as f64 / MSS as f64;
            assert!((gained - n).abs() < 0.05 * n + 0.05, "w={n}: +{gained}");
            // Decrease by 1/(2n): 64 segments → 64·(1 − 1/(2n)).
            let expect = (64.0 * (1.0 - 0.5 / n)).floor() as u32 * MSS;
            assert_eq!(m.ssthresh_after_loss(64 * MSS), expect, "w={n}");
        }
    }
}

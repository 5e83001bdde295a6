//! Standard AIMD (RFC 5681): one segment per RTT in congestion avoidance, halve on loss.

use super::{AckSample, CongestionControl, Window};

/// Reno's window rules (the recovery flavour is the sender's [`super::super::Variant`]).
#[derive(Clone, Debug, PartialEq)]
#[repr(C)] // `w` first: at the same offset in every controller (see `AnyCc`)
pub struct Reno {
    w: Window,
}

impl Reno {
    /// A controller starting from window state `w`.
    pub fn new(w: Window) -> Self {
        Reno { w }
    }
}

impl CongestionControl for Reno {
    fn name(&self) -> &'static str {
        "reno"
    }
    fn cwnd(&self) -> u32 {
        self.w.cwnd()
    }
    fn ssthresh(&self) -> u32 {
        self.w.ssthresh()
    }
    fn on_ack(&mut self, ack: &AckSample) {
        // RFC 5681 §3.1: +1 SMSS per RTT in congestion avoidance.
        self.w.grow(ack.newly_acked, 1.0);
    }
    fn ssthresh_after_loss(&self, in_flight: u32) -> u32 {
        // RFC 5681 eq. 4: ssthresh = max(FlightSize / 2, 2·SMSS).
        self.w.reduced(in_flight, 0.5)
    }
    fn set_window(&mut self, cwnd: u32, ssthresh: u32) {
        self.w.set(cwnd, ssthresh)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1000;

    fn ack(n: u32) -> AckSample {
        AckSample {
            newly_acked: n,
            ..Default::default()
        }
    }

    #[test]
    fn slow_start_adds_one_segment_per_ack() {
        let mut r = Reno::new(Window::new(MSS, 2, 64 * MSS));
        r.on_ack(&ack(MSS));
        r.on_ack(&ack(MSS));
        assert_eq!(r.cwnd(), 4 * MSS);
        // A stretch ACK for 2 segments still adds one SMSS (RFC 5681 §3.1).
        r.on_ack(&ack(2 * MSS));
        assert_eq!(r.cwnd(), 5 * MSS);
    }

    #[test]
    fn congestion_avoidance_adds_one_segment_per_window() {
        let mut r = Reno::new(Window::new(MSS, 2, 64 * MSS));
        r.set_window(10 * MSS, 10 * MSS);
        for _ in 0..10 {
            r.on_ack(&ack(MSS));
        }
        // Σ mss²/cwnd over a window of ACKs ≈ 1 segment (a bit less as cwnd grows).
        assert!(
            r.cwnd() > 10 * MSS + 950 && r.cwnd() < 11 * MSS,
            "{}",
            r.cwnd()
        );
    }

    #[test]
    fn byte_counting_grows_one_segment_per_window_of_data_with_delayed_acks() {
        // A receiver ACKing every second segment: 5 ACKs of 2 segments per 10-segment
        // window. Per-ACK growth (RFC 5681) adds about half a segment; byte counting
        // (RFC 3465, Linux) one, as with an ACK per segment.
        let grow = |abc: bool| {
            let mut r = Reno::new(Window::new(MSS, 2, 64 * MSS).with_byte_counting(abc));
            r.set_window(10 * MSS, 10 * MSS);
            for _ in 0..5 {
                r.on_ack(&ack(2 * MSS));
            }
            r.cwnd()
        };
        assert!(grow(false) > 10 * MSS + 450 && grow(false) < 10 * MSS + 500);
        assert!(
            grow(true) > 10 * MSS + 950 && grow(true) < 11 * MSS,
            "{}",
            grow(true)
        );
    }

    #[test]
    fn byte_counting_slow_start_doubles_per_window_and_stops_at_ssthresh() {
        let mut r = Reno::new(Window::new(MSS, 10, 64 * MSS).with_byte_counting(true));
        r.set_window(10 * MSS, 15 * MSS);
        r.on_ack(&ack(2 * MSS));
        assert_eq!(r.cwnd(), 12 * MSS);
        // 4 segments acknowledged at cwnd 12, ssthresh 15: 3 to reach ssthresh, the
        // fourth counts in congestion avoidance (MSS · MSS / 15 MSS).
        r.on_ack(&ack(4 * MSS));
        assert_eq!(r.cwnd(), 15 * MSS + MSS / 15);
    }

    #[test]
    fn loss_halves_the_flight_in_whole_segments_minimum_two() {
        let r = Reno::new(Window::new(MSS, 2, 64 * MSS));
        assert_eq!(r.ssthresh_after_loss(20 * MSS), 10 * MSS);
        assert_eq!(r.ssthresh_after_loss(15 * MSS), 7 * MSS);
        assert_eq!(r.ssthresh_after_loss(MSS), 2 * MSS);
    }

    #[test]
    fn window_is_capped() {
        let mut r = Reno::new(Window::new(MSS, 2, 3 * MSS));
        for _ in 0..10 {
            r.on_ack(&ack(MSS));
        }
        assert_eq!(r.cwnd(), 3 * MSS);
    }
}

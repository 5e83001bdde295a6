//! DCTCP (RFC 8257): the sender estimates the fraction of its bytes that the network
//! marked CE and cuts its window in proportion to it.
//!
//! RFC 8257 §3.3: per observation window of about one RTT (it ends when an ACK passes
//! `WindowEnd`, the highest sequence number sent when the window began) the sender
//! counts the bytes acknowledged and the bytes acknowledged by ACKs with ECE, then
//! updates α ← (1 − g)·α + g·F with F the marked fraction, g = 1/16 by default. On
//! ECE it sets cwnd ← cwnd·(1 − α/2), at most once per window of data (§3.3; the
//! sender's RFC 3168 once-per-window rule and CWR apply). Loss is answered as
//! Reno (§3.5); the increase is Reno's, on ACKs with or without ECE, but not in the
//! window of data after a cut (Linux's CWR state).
//!
//! α starts at `alpha_init`, 1 by default: Linux's `dctcp_alpha_on_init` default
//! (1024/1024) and ns-3's `TcpDctcp::DctcpAlphaOnInit`, so the first marks halve the
//! window as standard ECN would until the estimate has learnt the marking rate. The
//! RFC leaves the initial value to the implementation.
//!
//! The receiver's side (an ECE that echoes each segment's CE state exactly, §3.2) is in
//! [`super::super::TcpReceiver`]; the marking (an instantaneous queue threshold, §3.1)
//! is the bottleneck's, see docs/queues-and-conditioners.md.

use super::{AckSample, CongestionControl, EcnAck, Window};

/// RFC 8257's sender: Reno's increase and loss response, the α-proportional ECN cut.
#[derive(Clone, Debug, PartialEq)]
#[repr(C)] // `w` first: at the same offset in every controller (see `AnyCc`)
pub struct Dctcp {
    w: Window,
    /// The rest, behind a pointer (as [`super::Cubic`]'s): inline it would widen every
    /// connection's controller (`AnyCc`) whatever the connection runs.
    s: Box<DctcpState>,
}

/// [`Dctcp`]'s state beside its window.
#[derive(Clone, Debug, PartialEq)]
struct DctcpState {
    /// Estimation gain g, in (0, 1].
    g: f64,
    /// `DCTCP.Alpha`, the estimated fraction of marked bytes, in [0, 1].
    alpha: f64,
    /// `DCTCP.WindowEnd`: the observation window ends at an ACK beyond it.
    window_end: u64,
    /// `DCTCP.BytesAcked` of the current observation window [bytes].
    bytes_acked: u64,
    /// `DCTCP.BytesMarked`: of those, acknowledged by ACKs with ECE [bytes].
    bytes_marked: u64,
}

impl Dctcp {
    /// A controller with gain `g` and initial α `alpha_init`, from window state `w`.
    /// The first observation window ends at the first ACK of data (`WindowEnd` starts
    /// at SND.NXT = 0, RFC 8257 §3.3).
    pub fn new(w: Window, g: f64, alpha_init: f64) -> Self {
        Dctcp {
            w,
            s: Box::new(DctcpState {
                g,
                alpha: alpha_init,
                window_end: 0,
                bytes_acked: 0,
                bytes_marked: 0,
            }),
        }
    }

    /// The current estimate α of the fraction of marked bytes.
    pub fn alpha(&self) -> f64 {
        self.s.alpha
    }
}

impl CongestionControl for Dctcp {
    fn name(&self) -> &'static str {
        "dctcp"
    }
    fn cwnd(&self) -> u32 {
        self.w.cwnd()
    }
    fn ssthresh(&self) -> u32 {
        self.w.ssthresh()
    }
    fn on_ack(&mut self, ack: &AckSample) {
        // RFC 8257 §3.3: the increase is the standard one (RFC 5681).
        self.w.grow(ack.newly_acked, 1.0);
    }
    fn on_ecn_ack(&mut self, ack: &EcnAck) {
        // RFC 8257 §3.3: count the bytes this ACK acknowledges, and them as marked if
        // it carries ECE.
        self.s.bytes_acked += ack.newly_acked as u64;
        if ack.ece {
            self.s.bytes_marked += ack.newly_acked as u64;
        }
        // The window ends at the ACK that reaches `WindowEnd` (Linux's
        // `dctcp_update_alpha`: `!before(snd_una, next_seq)`), so it holds exactly the
        // data sent before it began.
        if ack.snd_una < self.s.window_end || self.s.bytes_acked == 0 {
            return;
        }
        // F, α, the next window's end (SND.NXT: `snd_max`, the highest byte sent, as
        // Linux's snd_nxt, also after a timeout's go-back), counters reset.
        let f = self.s.bytes_marked as f64 / self.s.bytes_acked as f64;
        self.s.alpha = (1.0 - self.s.g) * self.s.alpha + self.s.g * f;
        self.s.window_end = ack.snd_max;
        self.s.bytes_acked = 0;
        self.s.bytes_marked = 0;
    }
    fn grows_on_ece(&self) -> bool {
        // The receiver echoes each segment's mark exactly (RFC 8257 §3.2), so an ECE
        // ACK is not a standing congestion signal; Linux grows on it as on any ACK
        // outside its CWR state (the sender holds cwnd for the window after a cut).
        true
    }
    fn ssthresh_after_loss(&self, in_flight: u32) -> u32 {
        // RFC 8257 §3.5: loss as a conventional TCP (RFC 5681 eq. 4).
        self.w.reduced(in_flight, 0.5)
    }
    fn ssthresh_after_signal(&self, _in_flight: u32) -> u32 {
        // RFC 8257 §3.3: cwnd ← cwnd·(1 − α/2). In whole segments as Linux's
        // `dctcp_ssthresh` (cwnd − ⌊cwnd·α/2⌋, at least 2): a small α at a small
        // window cuts nothing.
        let mss = self.w.mss().max(1);
        let segs = self.w.cwnd() / mss;
        let cut = (segs as f64 * self.s.alpha / 2.0).floor() as u32;
        segs.saturating_sub(cut).max(2) * mss
    }
    fn set_window(&mut self, cwnd: u32, ssthresh: u32) {
        self.w.set(cwnd, ssthresh)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1000;

    fn dctcp(alpha: f64) -> Dctcp {
        Dctcp::new(Window::new(MSS, 2, 1000 * MSS), 1.0 / 16.0, alpha)
    }

    /// One ACK of one segment at `*una` with a constant flight of `flight` segments.
    fn ack(d: &mut Dctcp, una: &mut u64, flight: u32, ece: bool) {
        *una += MSS as u64;
        d.on_ecn_ack(&EcnAck {
            newly_acked: MSS,
            ece,
            snd_una: *una,
            snd_max: *una + (flight * MSS) as u64,
        });
    }

    #[test]
    fn alpha_follows_the_marked_fraction_once_per_window() {
        let mut d = dctcp(1.0);
        let mut una = 0;
        // The first ACK closes window 0 (WindowEnd = SND.NXT = 0 at the start), F = 1:
        // α stays 1, and the next window ends at 2 segments further.
        ack(&mut d, &mut una, 2, true);
        assert_eq!(d.alpha(), 1.0);
        // Three windows of 2 segments, the first ACK of each marked: F = 0.5.
        // α: 1 → 31/32 → 481/512 → 7471/8192 (hand-computed, exact in binary).
        for want in [31.0 / 32.0, 481.0 / 512.0, 7471.0 / 8192.0] {
            ack(&mut d, &mut una, 2, true);
            assert_eq!(d.s.bytes_marked, MSS as u64, "inside the window α waits");
            ack(&mut d, &mut una, 2, false);
            assert_eq!(d.alpha(), want);
            assert_eq!((d.s.bytes_acked, d.s.bytes_marked), (0, 0));
        }
        // Windows of 10 segments, 5 marked, from α = 15/16 (an unmarked first ACK):
        // 15/16 → 233/256 → 3623/4096 → 56393/65536.
        let mut d = dctcp(1.0);
        let mut una = 0;
        ack(&mut d, &mut una, 10, false);
        assert_eq!(d.alpha(), 15.0 / 16.0);
        for want in [233.0 / 256.0, 3623.0 / 4096.0, 56393.0 / 65536.0] {
            for i in 0..10 {
                ack(&mut d, &mut una, 10, i % 2 == 0);
            }
            assert_eq!(d.alpha(), want);
        }
    }

    #[test]
    fn alpha_decays_without_marks_and_reaches_one_under_full_marking() {
        let mut d = dctcp(1.0);
        let mut una = 0;
        ack(&mut d, &mut una, 4, true);
        for _ in 0..3 * 4 {
            ack(&mut d, &mut una, 4, false);
        }
        assert_eq!(d.alpha(), (15.0f64 / 16.0).powi(3));
        let mut d = dctcp(0.0);
        let mut una = 0;
        for _ in 0..200 * 4 {
            ack(&mut d, &mut una, 4, true);
        }
        assert!(d.alpha() > 0.999_99, "{}", d.alpha());
    }

    #[test]
    fn ecn_cut_is_cwnd_times_one_minus_alpha_over_two_in_whole_segments() {
        let cut = |alpha: f64, segs: u32| {
            let mut d = dctcp(alpha);
            d.set_window(segs * MSS, 1000 * MSS);
            // The flight does not enter (RFC 8257 cuts cwnd).
            d.ssthresh_after_signal(MSS) / MSS
        };
        assert_eq!(cut(1.0, 10), 5, "α = 1 halves as RFC 3168");
        assert_eq!(cut(0.5, 10), 8, "10 − ⌊2.5⌋");
        assert_eq!(cut(0.25, 40), 35, "40 − 5");
        assert_eq!(cut(0.1, 10), 10, "⌊0.5⌋ = 0: no cut");
        assert_eq!(cut(1.0, 3), 2, "at least 2 segments");
        // Loss is Reno's: half the flight.
        let d = dctcp(0.1);
        assert_eq!(d.ssthresh_after_loss(20 * MSS), 10 * MSS);
    }
}

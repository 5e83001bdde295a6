//! Congestion control behind one small trait; the sender owns loss detection and
//! retransmission and tells the controller only what it needs.
//!
//! A controller holds the congestion window and ssthresh. It grows the window on new
//! ACKs ([`CongestionControl::on_ack`]) and *decides* the ssthresh after a congestion
//! event ([`CongestionControl::ssthresh_after_loss`]); the sender applies the decision
//! with [`CongestionControl::set_window`] (fast-recovery inflation, loss window after a
//! timeout, Tahoe's restart), so recovery logic stays in one place.
//!
//! The window is kept as a float number of bytes, like ns-2's `cwnd_` in packets, so
//! that congestion avoidance's `mss²/cwnd` per ACK accumulates exactly; the sender sees
//! it floored to whole bytes and sends only whole segments that fit.

mod aggregate_fair;
mod constant_rate;
mod cubic;
mod dctcp;
mod hystart;
mod multcp;
mod reno;

pub use aggregate_fair::AggregateFair;
pub use constant_rate::ConstantRate;
pub use cubic::Cubic;
pub use dctcp::Dctcp;
pub use multcp::MulTcp;
pub use reno::Reno;

use super::CcConfig;
use crate::time::{Dur, SimTime};

/// What the sender tells its congestion controller about one ACK of new data.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AckSample {
    /// When the ACK arrived.
    pub now: SimTime,
    /// Bytes newly acknowledged by this ACK [bytes].
    pub newly_acked: u32,
    /// Bytes still outstanding after this ACK [bytes].
    pub in_flight: u32,
    /// The RTT sample this ACK gave, if any (Karn's rule applied).
    pub rtt: Option<Dur>,
    /// The smoothed RTT after this ACK, if any sample exists.
    pub srtt: Option<Dur>,
    /// The cumulative ACK: the lowest unacknowledged byte after this ACK (HyStart++
    /// delimits its rounds by it, RFC 9406 §4.2).
    pub una: u64,
    /// This ACK's own RTT: now less the send time of the newest segment it newly
    /// acknowledges, unless that segment was ever retransmitted (Karn). Unlike `rtt`
    /// (one timed segment per window) there is one per ACK, as RFC 9406 §4.2 needs.
    pub ack_rtt: Option<Dur>,
}

/// A congestion event the sender tells its controller about, just before it applies
/// the reduction (the controller's window is still the one before it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CongestionEvent {
    /// Loss detected by duplicate ACKs or SACK (fast retransmit).
    Loss,
    /// Retransmission timeout.
    Timeout,
    /// ECN echo or source quench: a reduction without a loss.
    Signal,
}

/// What the sender tells its controller about every ACK that advances `snd_una`, in
/// any state (loss recovery included), with its ECN echo: DCTCP's marked-fraction
/// estimate counts them all (RFC 8257 §3.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EcnAck {
    /// Bytes newly acknowledged by this ACK [bytes].
    pub newly_acked: u32,
    /// The ACK carried ECE (the connection is ECN-capable).
    pub ece: bool,
    /// `snd_una` after this ACK.
    pub snd_una: u64,
    /// One past the highest byte sent (SND.NXT of RFC 8257, before any go-back).
    pub snd_max: u64,
}

/// A congestion-control algorithm; the sender owns loss detection and retransmission.
pub trait CongestionControl {
    /// Name used in scenario files and result tables, e.g. "reno", "multcp".
    fn name(&self) -> &'static str;
    /// Congestion window [bytes].
    fn cwnd(&self) -> u32;
    /// Slow-start threshold [bytes].
    fn ssthresh(&self) -> u32;
    /// New data was acknowledged outside loss recovery: grow the window.
    fn on_ack(&mut self, ack: &AckSample);
    /// The ssthresh [bytes] to use after a loss, given the flight size [bytes].
    fn ssthresh_after_loss(&self, in_flight: u32) -> u32;
    /// The ssthresh [bytes] after an explicit congestion signal (ECN echo, source
    /// quench); default: as after a loss (RFC 3168 §6.1.2).
    fn ssthresh_after_signal(&self, in_flight: u32) -> u32 {
        self.ssthresh_after_loss(in_flight)
    }
    /// The sender applies a recovery decision: sets both window and threshold [bytes].
    fn set_window(&mut self, cwnd: u32, ssthresh: u32);
    /// Updates the aggregate's average RTT (aggregate-fair only; others ignore it).
    fn set_rtt_av(&mut self, _rtt_av: Dur) {}
    /// A congestion event happens now, before its reduction is applied (CUBIC records
    /// W_max and ends its epoch, RFC 9438 §4.6–4.8); default: nothing.
    fn on_congestion_event(&mut self, _event: CongestionEvent) {}

    /// Every ACK that advances `snd_una`, with its ECE flag (DCTCP only; others ignore it).
    fn on_ecn_ack(&mut self, _ack: &EcnAck) {}
    /// Whether an ACK with ECE may still grow the window: RFC 3168 §6.1.2 says no (the
    /// default); DCTCP's receiver echoes each mark exactly (RFC 8257 §3.2), so yes, but
    /// not before the data sent before its last cut is acknowledged (Linux's CWR state).
    fn grows_on_ece(&self) -> bool {
        false
    }
    /// Whether the next ACK needs [`AckSample::ack_rtt`] (HyStart++ in CUBIC's slow
    /// start, RFC 9406 §4.2); default no, so the sender skips the per-ACK lookup.
    fn wants_ack_rtt(&self) -> bool {
        false
    }
}

/// Window state shared by the AIMD family: cwnd [bytes, fractional], ssthresh, cap.
#[derive(Clone, Debug, PartialEq)]
pub struct Window {
    cwnd: f64,
    ssthresh: u32,
    mss: u32,
    cap: u32,
    byte_counting: bool,
}

impl Window {
    /// Initial window of `iw` segments; ssthresh starts at the cap (RFC 5681 §3.1:
    /// "arbitrarily high", here the largest window the receiver may advertise).
    pub fn new(mss: u32, iw: u32, cap: u32) -> Self {
        Window {
            cwnd: (iw.saturating_mul(mss)).min(cap) as f64,
            ssthresh: cap,
            mss,
            cap,
            byte_counting: false,
        }
    }

    /// Grows by the bytes each ACK acknowledges instead of by the ACK (RFC 3465
    /// Appropriate Byte Counting, as Linux's `tcp_slow_start` and `tcp_cong_avoid_ai`
    /// count acknowledged segments): see [`Window::grow`].
    pub fn with_byte_counting(mut self, on: bool) -> Self {
        self.byte_counting = on;
        self
    }

    /// Congestion window [bytes], floored.
    pub fn cwnd(&self) -> u32 {
        self.cwnd as u32
    }

    /// Slow-start threshold [bytes].
    pub fn ssthresh(&self) -> u32 {
        self.ssthresh
    }

    /// Segment size [bytes].
    pub fn mss(&self) -> u32 {
        self.mss
    }

    /// Slow start (RFC 5681 §3.1: cwnd += min(N, SMSS)) below ssthresh; above it,
    /// congestion avoidance adding `segs_per_rtt` segments per window of ACKs
    /// (cwnd += segs_per_rtt · SMSS²/cwnd per ACK, RFC 5681 eq. 3 scaled), capped at
    /// one segment per ACK so the increase is never burstier than slow start.
    ///
    /// With byte counting (RFC 3465; Linux's `tcp_slow_start` / `tcp_cong_avoid_ai`)
    /// an ACK of N bytes counts N: slow start adds N up to ssthresh, and what is left
    /// over adds `segs_per_rtt` · SMSS · N / cwnd, so `segs_per_rtt` segments per
    /// window of *data* acknowledged, whether the receiver ACKs every segment or every
    /// second one (delayed ACKs halve the per-ACK rule's growth).
    pub fn grow(&mut self, newly_acked: u32, segs_per_rtt: f64) {
        let mss = self.mss as f64;
        if self.byte_counting {
            let mut acked = newly_acked as f64;
            let ss = self.ssthresh as f64;
            if self.cwnd < ss {
                let add = acked.min(ss - self.cwnd);
                self.cwnd += add;
                acked -= add;
            }
            if acked > 0.0 {
                self.cwnd += segs_per_rtt * mss * acked / self.cwnd.max(1.0);
            }
        } else if self.cwnd < self.ssthresh as f64 {
            self.cwnd += newly_acked.min(self.mss) as f64;
        } else {
            let inc = segs_per_rtt * mss * mss / self.cwnd.max(1.0);
            self.cwnd += inc.min(mss);
        }
        self.cwnd = self.cwnd.min(self.cap as f64);
    }

    /// Applies a sender decision.
    pub fn set(&mut self, cwnd: u32, ssthresh: u32) {
        self.cwnd = cwnd.min(self.cap) as f64;
        self.ssthresh = ssthresh;
    }

    /// `flight · factor` rounded down to whole segments, at least two segments
    /// (RFC 5681 eq. 4; ns-2 keeps ssthresh in whole packets, minimum 2).
    pub fn reduced(&self, in_flight: u32, factor: f64) -> u32 {
        let segs = (in_flight as f64 * factor / self.mss as f64).floor() as u32;
        segs.max(2) * self.mss
    }
}

/// The congestion controllers qoslab knows, dispatched by `match`.
///
/// `repr(u8)` with every controller `repr(C)` and its [`Window`] first puts the window
/// at the same offset in every variant, so `cwnd()` and `ssthresh()` (read for every
/// segment sent) compile to one load, without decoding which controller it is.
#[derive(Clone, Debug, PartialEq)]
#[repr(u8)]
pub enum AnyCc {
    /// Standard AIMD.
    Reno(Reno),
    /// Weighted AIMD.
    MulTcp(MulTcp),
    /// Aggregate-fair increase.
    AggregateFair(AggregateFair),
    /// Constant Rate increase.
    ConstantRate(ConstantRate),
    /// CUBIC (RFC 9438).
    Cubic(Cubic),
    /// DCTCP (RFC 8257).
    Dctcp(Dctcp),
}

impl AnyCc {
    /// The controller a configuration asks for, with segment size `mss`, initial window
    /// `iw` [segments], window cap `cap` [bytes] and byte counting on or off.
    pub fn new(cfg: &CcConfig, mss: u32, iw: u32, cap: u32, byte_counting: bool) -> Self {
        let w = Window::new(mss, iw, cap).with_byte_counting(byte_counting);
        match *cfg {
            CcConfig::Reno => AnyCc::Reno(Reno::new(w)),
            CcConfig::MulTcp { w: weight } => AnyCc::MulTcp(MulTcp::new(w, weight)),
            CcConfig::AggregateFair { rtt_av, rtt } => {
                AnyCc::AggregateFair(AggregateFair::new(w, rtt_av).with_rtt(rtt))
            }
            CcConfig::ConstantRate { c } => AnyCc::ConstantRate(ConstantRate::new(w, c)),
            CcConfig::Cubic {
                c,
                beta,
                fast_convergence,
                hystart,
                lead,
                w_est_linux,
                target_linux,
            } => AnyCc::Cubic(
                Cubic::new(w, c, beta, fast_convergence, hystart)
                    .with_linux(lead, w_est_linux)
                    .with_whole_target(target_linux),
            ),
            CcConfig::Dctcp { g, alpha_init } => AnyCc::Dctcp(Dctcp::new(w, g, alpha_init)),
        }
    }
}

macro_rules! dispatch {
    ($self:ident, $c:ident => $e:expr) => {
        match $self {
            AnyCc::Reno($c) => $e,
            AnyCc::MulTcp($c) => $e,
            AnyCc::AggregateFair($c) => $e,
            AnyCc::ConstantRate($c) => $e,
            AnyCc::Cubic($c) => $e,
            AnyCc::Dctcp($c) => $e,
        }
    };
}

impl CongestionControl for AnyCc {
    fn name(&self) -> &'static str {
        dispatch!(self, c => c.name())
    }
    fn cwnd(&self) -> u32 {
        dispatch!(self, c => c.cwnd())
    }
    fn ssthresh(&self) -> u32 {
        dispatch!(self, c => c.ssthresh())
    }
    fn on_ack(&mut self, ack: &AckSample) {
        dispatch!(self, c => c.on_ack(ack))
    }
    fn ssthresh_after_loss(&self, in_flight: u32) -> u32 {
        dispatch!(self, c => c.ssthresh_after_loss(in_flight))
    }
    fn ssthresh_after_signal(&self, in_flight: u32) -> u32 {
        dispatch!(self, c => c.ssthresh_after_signal(in_flight))
    }
    fn set_window(&mut self, cwnd: u32, ssthresh: u32) {
        dispatch!(self, c => c.set_window(cwnd, ssthresh))
    }
    fn set_rtt_av(&mut self, rtt_av: Dur) {
        dispatch!(self, c => c.set_rtt_av(rtt_av))
    }
    fn on_congestion_event(&mut self, event: CongestionEvent) {
        dispatch!(self, c => c.on_congestion_event(event))
    }
    // DCTCP alone overrides these two: the others answer without a dispatch.
    #[inline]
    fn on_ecn_ack(&mut self, ack: &EcnAck) {
        if let AnyCc::Dctcp(c) = self {
            c.on_ecn_ack(ack)
        }
    }
    #[inline]
    fn grows_on_ece(&self) -> bool {
        match self {
            AnyCc::Dctcp(c) => c.grows_on_ece(),
            _ => false,
        }
    }
    #[inline]
    fn wants_ack_rtt(&self) -> bool {
        match self {
            AnyCc::Cubic(c) => c.wants_ack_rtt(),
            _ => false,
        }
    }
}

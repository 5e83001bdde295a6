//! CUBIC (RFC 9438): after a congestion event the window follows
//! W_cubic(t) = C·(t − K)³ + W_max in time since congestion avoidance began, concave
//! up to the window of the last event and convex beyond it, never slower than a
//! Reno-friendly estimate; a loss reduces it to β_cubic = 0.7 of the flight.
//!
//! Windows in the formulas are in segments (cwnd / SMSS), times in seconds. Slow
//! start below ssthresh is Reno's (RFC 5681), or HyStart++ (RFC 9406) in the initial
//! slow start when enabled.
//!
//! Not implemented: §4.9's undo of spurious congestion events (the sender has no
//! undo), and §5.8's exclusion of application-limited periods from t (qoslab's bulk
//! senders are window-limited).

use super::hystart::{HyStart, HyStep};
use super::{AckSample, CongestionControl, CongestionEvent, Window};
use crate::tcp::AfRtt;
use crate::time::{Dur, SimTime};

/// One congestion-avoidance stage (RFC 9438 §4.1.2's `t_epoch`, `cwnd_epoch`, `K`,
/// `W_est`), begun on the first ACK in congestion avoidance after a congestion event.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Epoch {
    /// `t_epoch`: when the stage began.
    t0: SimTime,
    /// `K` [s]: when W_cubic reaches W_max.
    k: f64,
    /// W_max of this stage [segments].
    w_max: f64,
    /// `W_est` [segments]: the Reno-friendly estimate (§4.3).
    w_est: f64,
}

/// K = ∛((W_max − cwnd_epoch) / C) [s] (RFC 9438 §4.2, Figure 2), with the real cube
/// root, so that W_cubic(0) = cwnd_epoch also when the epoch starts above W_max.
pub fn cubic_k(w_max: f64, cwnd_epoch: f64, c: f64) -> f64 {
    ((w_max - cwnd_epoch) / c).cbrt()
}

/// W_cubic(t) = C·(t − K)³ + W_max [segments] (RFC 9438 §4.2, Figure 1).
pub fn w_cubic(t: f64, k: f64, w_max: f64, c: f64) -> f64 {
    c * (t - k).powi(3) + w_max
}

/// W_cubic(t) in whole segments: W_max − ⌊C·(K − t)³⌋ before K, W_max + ⌊C·(t − K)³⌋
/// after, as Linux (`bictcp_update`'s `bic_target`) and ns-3 (`TcpCubic::Update`)
/// compute it in integers. Within ∛(1/C) of K (1.36 s at C = 0.4) it is W_max itself.
pub fn w_cubic_whole(t: f64, k: f64, w_max: f64, c: f64) -> f64 {
    let d = (c * (t - k).abs().powi(3)).floor();
    if t < k {
        w_max - d
    } else {
        w_max + d
    }
}

/// CUBIC's window rules (the recovery flavour is the sender's [`super::super::Variant`]).
#[derive(Clone, Debug, PartialEq)]
#[repr(C)] // `w` first: at the same offset in every controller (see `AnyCc`)
pub struct Cubic {
    w: Window,
    /// The rest, behind a pointer: inline it would widen every connection's controller
    /// (`AnyCc`) to CUBIC's size whatever the connection runs.
    s: Box<CubicState>,
}

/// [`Cubic`]'s state beside its window.
#[derive(Clone, Debug, PartialEq)]
struct CubicState {
    c: f64,
    beta: f64,
    fast_convergence: bool,
    /// W_max [segments] (§4.1.2, §4.7): `None` before the first congestion event and
    /// after a timeout (§4.8), when the next stage takes its own cwnd_epoch.
    w_max: Option<f64>,
    /// `cwnd_prior` [segments]: cwnd when ssthresh was last set (§4.1.2).
    cwnd_prior: f64,
    epoch: Option<Epoch>,
    /// HyStart++ while the initial slow start lasts, if enabled.
    hystart: Option<HyStart>,
    /// The RTT the target looks ahead by: SRTT (§4.2) or the least sample.
    lead: AfRtt,
    /// The least RTT sample so far (Linux's and ns-3's `delay_min`), kept for `lead`.
    min_rtt: Option<Dur>,
    /// W_est grows by α_cubic throughout, as Linux's and ns-3's `tcp_friendliness` do.
    w_est_linux: bool,
    /// W_cubic in whole segments ([`w_cubic_whole`]), as Linux and ns-3 compute it.
    target_linux: bool,
}

impl Cubic {
    /// RFC 9438 §5.1: the default C [segments/s³].
    pub const C: f64 = 0.4;
    /// RFC 9438 §4.6: the default multiplicative decrease factor β_cubic.
    pub const BETA: f64 = 0.7;

    /// A controller with constant `c`, decrease factor `beta`, fast convergence on or
    /// off and HyStart++ on or off in the initial slow start, from window state `w`.
    pub fn new(w: Window, c: f64, beta: f64, fast_convergence: bool, hystart: bool) -> Self {
        Cubic {
            w,
            s: Box::new(CubicState {
                c,
                beta,
                fast_convergence,
                w_max: None,
                cwnd_prior: 0.0,
                epoch: None,
                hystart: hystart.then(HyStart::default),
                lead: AfRtt::Smoothed,
                min_rtt: None,
                w_est_linux: false,
                target_linux: false,
            }),
        }
    }

    /// With `on`, W_cubic is taken in whole segments ([`w_cubic_whole`]) as Linux's
    /// `bictcp_update` and ns-3's `TcpCubic::Update` truncate C·|t − K|³, so the curve
    /// stands at W_max from K − ∛(1/C) to K + ∛(1/C); off (the default), RFC 9438
    /// §4.2's real-valued W_cubic.
    pub fn with_whole_target(mut self, on: bool) -> Self {
        self.s.target_linux = on;
        self
    }

    fn w_cubic_at(&self, t: f64, e: &Epoch) -> f64 {
        if self.s.target_linux {
            w_cubic_whole(t, e.k, e.w_max, self.s.c)
        } else {
            w_cubic(t, e.k, e.w_max, self.s.c)
        }
    }

    /// Two of Linux's (`tcp_cubic.c`) and ns-3's (`TcpCubic`) departures from RFC 9438,
    /// each off by default: `lead = Min` reads the target at t + the least RTT sample
    /// (`bictcp_update`'s `t += delay_min`) instead of t + SRTT (§4.2); `w_est_linux`
    /// keeps W_est's α at α_cubic after W_est passes cwnd_prior (`tcp_friendliness`
    /// adds one segment per cwnd·(1 + β)/(3(1 − β)) acknowledged, always), where §4.3
    /// switches to α = 1.
    pub fn with_linux(mut self, lead: AfRtt, w_est_linux: bool) -> Self {
        self.s.lead = lead;
        self.s.w_est_linux = w_est_linux;
        self
    }

    /// W_max [segments], once a congestion event (or the first congestion-avoidance
    /// stage) has set it.
    pub fn w_max(&self) -> Option<f64> {
        self.s.w_max
    }

    /// K [s] of the current congestion-avoidance stage, if one has begun.
    pub fn k(&self) -> Option<f64> {
        self.s.epoch.map(|e| e.k)
    }

    /// The Reno-friendly estimate W_est [segments] of the current stage (§4.3).
    pub fn w_est(&self) -> Option<f64> {
        self.s.epoch.map(|e| e.w_est)
    }

    /// Whether HyStart++ has the sender in Conservative Slow Start.
    pub fn in_css(&self) -> bool {
        self.s.hystart.as_ref().is_some_and(HyStart::in_css)
    }

    /// α_cubic = 3(1 − β)/(1 + β) (§4.3): the Reno-friendly additive increase.
    pub fn alpha(&self) -> f64 {
        3.0 * (1.0 - self.s.beta) / (1.0 + self.s.beta)
    }

    fn cwnd_segs(&self) -> f64 {
        self.w.cwnd / self.w.mss as f64
    }

    /// Begins a congestion-avoidance stage at `now` (§4.2). Without a W_max (the first
    /// stage, after HyStart++'s exit, or after a timeout) K = 0 and W_max = cwnd_epoch,
    /// and cwnd_prior = cwnd (§4.8, §4.10). W_est starts at cwnd_epoch (§4.3).
    fn start_epoch(&mut self, now: SimTime) -> Epoch {
        let cwnd = self.cwnd_segs();
        let (w_max, k) = match self.s.w_max {
            Some(w_max) => (w_max, cubic_k(w_max, cwnd, self.s.c)),
            None => {
                self.s.w_max = Some(cwnd);
                self.s.cwnd_prior = cwnd;
                (cwnd, 0.0)
            }
        };
        Epoch {
            t0: now,
            k,
            w_max,
            w_est: cwnd,
        }
    }
}

impl CongestionControl for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }
    fn cwnd(&self) -> u32 {
        self.w.cwnd()
    }
    fn ssthresh(&self) -> u32 {
        self.w.ssthresh()
    }
    fn on_ack(&mut self, ack: &AckSample) {
        let mss = self.w.mss as f64;
        if let (AfRtt::Min, Some(r)) = (self.s.lead, ack.rtt) {
            self.s.min_rtt = Some(self.s.min_rtt.map_or(r, |m| m.min(r)));
        }
        if self.w.cwnd < self.w.ssthresh as f64 {
            match self.s.hystart.as_mut().map(|h| h.on_ack(ack, self.w.mss)) {
                // RFC 9406 §4.2.
                Some(HyStep::Grow(inc)) => {
                    self.w.cwnd = (self.w.cwnd + inc).min(self.w.cap as f64);
                }
                Some(HyStep::EnterCa) => {
                    self.w.ssthresh = self.w.cwnd();
                    self.s.hystart = None;
                }
                // RFC 9438 §4.10: Reno's slow start.
                None => self.w.grow(ack.newly_acked, 1.0),
            }
            return;
        }
        // Congestion avoidance. segments_acked counts as qoslab's Reno does: one per
        // ACK (RFC 5681's per-ACK rule), or the bytes acknowledged with byte counting
        // (RFC 3465), so that W_est tracks what Reno would do in the same setting.
        let acked = if self.w.byte_counting {
            ack.newly_acked as f64 / mss
        } else {
            1.0
        };
        let mut e = match self.s.epoch {
            Some(e) => e,
            None => self.start_epoch(ack.now),
        };
        let cwnd = self.cwnd_segs().max(1.0);
        let t = (ack.now - e.t0).as_secs_f64();
        let lead = match self.s.lead {
            AfRtt::Smoothed => ack.srtt,
            AfRtt::Min => self.s.min_rtt.or(ack.srtt),
        };
        let rtt = lead.map_or(0.0, |d| d.as_secs_f64());
        // §4.3: W_est grows by α_cubic per window of ACKs, α = 1 once it reaches
        // cwnd_prior (not with `w_est_linux`).
        let alpha = if e.w_est >= self.s.cwnd_prior && !self.s.w_est_linux {
            1.0
        } else {
            self.alpha()
        };
        e.w_est += alpha * acked / cwnd;
        let next = if self.w_cubic_at(t, &e) < e.w_est {
            // §4.3 Reno-friendly region: cwnd = W_est (never below the current cwnd).
            e.w_est.max(cwnd)
        } else {
            // §4.2: target = W_cubic(t + RTT) within [cwnd, 1.5·cwnd]; §4.4 (concave,
            // cwnd < W_max) and §4.5 (convex): cwnd += (target − cwnd)/cwnd per ACK.
            let target = self.w_cubic_at(t + rtt, &e).clamp(cwnd, 1.5 * cwnd);
            cwnd + (target - cwnd) / cwnd * acked
        };
        self.w.cwnd = (next * mss).min(self.w.cap as f64);
        self.s.epoch = Some(e);
    }
    fn ssthresh_after_loss(&self, in_flight: u32) -> u32 {
        // RFC 9438 §4.6: ssthresh = flight_size · β_cubic, at least 2 SMSS.
        self.w.reduced(in_flight, self.s.beta)
    }
    fn set_window(&mut self, cwnd: u32, ssthresh: u32) {
        self.w.set(cwnd, ssthresh)
    }
    fn wants_ack_rtt(&self) -> bool {
        self.s.hystart.is_some()
    }
    fn on_congestion_event(&mut self, event: CongestionEvent) {
        let cwnd = self.cwnd_segs();
        // HyStart++ ends with the first loss or ECN mark (RFC 9406 §4.2) and is not used
        // in later slow starts (§4.3); the congestion-avoidance stage ends.
        self.s.hystart = None;
        self.s.epoch = None;
        match event {
            // §4.8: the first stage after a timeout has K = 0 and W_max = cwnd_epoch.
            CongestionEvent::Timeout => self.s.w_max = None,
            CongestionEvent::Loss | CongestionEvent::Signal => {
                // §4.7 fast convergence: a window below the last W_max releases
                // bandwidth for new flows; §4.6: cwnd_prior = cwnd. The two compare in
                // whole segments, as Linux (`bictcp_recalc_ssthresh`) and ns-3
                // (`TcpCubic`) keep them: a loss at the window of the last one (a flow
                // alone on its path, every cycle ending where the buffer overflows) is
                // not "below" it by a fraction of a segment of growth.
                self.s.w_max = Some(match self.s.w_max {
                    Some(w_max) if self.s.fast_convergence && cwnd.floor() < w_max.floor() => {
                        cwnd * (1.0 + self.s.beta) / 2.0
                    }
                    _ => cwnd,
                });
                self.s.cwnd_prior = cwnd;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Dur;

    const MSS: u32 = 1000;

    fn cubic() -> Cubic {
        Cubic::new(
            Window::new(MSS, 2, 100_000 * MSS),
            Cubic::C,
            Cubic::BETA,
            true,
            false,
        )
    }

    /// A loss at `before` segments, recovered to β·before (as the sender does).
    fn after_loss(c: &mut Cubic, before: u32) {
        c.set_window(before * MSS, before * MSS);
        let ss = c.ssthresh_after_loss(before * MSS);
        c.on_congestion_event(CongestionEvent::Loss);
        c.set_window(ss, ss);
    }

    /// Rounds of ACKs from `t0`: each round of `rtt` carries one ACK per whole segment
    /// of cwnd, evenly spaced. Returns the time after the last round.
    fn rounds(c: &mut Cubic, t0: SimTime, rtt: Dur, n: usize) -> SimTime {
        let mut t = t0;
        for _ in 0..n {
            let acks = (c.cwnd() / MSS).max(1) as u64;
            let gap = Dur::from_nanos(rtt.as_nanos() / acks);
            for _ in 0..acks {
                c.on_ack(&AckSample {
                    now: t,
                    newly_acked: MSS,
                    srtt: Some(rtt),
                    ..Default::default()
                });
                t += gap;
            }
        }
        t
    }

    fn segs(c: &Cubic) -> f64 {
        c.w.cwnd / MSS as f64
    }

    #[test]
    fn k_and_the_window_function_at_0_k_2k() {
        // W_max = 100, cwnd_epoch = β·W_max = 70: K = ∛(30/0.4) = ∛75 ≈ 4.2172 s.
        let k = cubic_k(100.0, 70.0, Cubic::C);
        assert!((k - 4.2172).abs() < 1e-4, "{k}");
        assert!((k - 75f64.cbrt()).abs() < 1e-12);
        // W_cubic(0) = cwnd_epoch, W_cubic(K) = W_max, W_cubic(2K) = W_max + C·K³ = 130.
        assert!((w_cubic(0.0, k, 100.0, Cubic::C) - 70.0).abs() < 1e-9);
        assert!((w_cubic(k, k, 100.0, Cubic::C) - 100.0).abs() < 1e-9);
        assert!((w_cubic(2.0 * k, k, 100.0, Cubic::C) - 130.0).abs() < 1e-9);
        // The controller computes the same K on its first congestion-avoidance ACK.
        let mut c = cubic();
        after_loss(&mut c, 100);
        assert_eq!(c.w_max(), Some(100.0));
        rounds(&mut c, SimTime::ZERO, Dur::from_millis(200), 1);
        assert!((c.k().unwrap() - k).abs() < 1e-9);
    }

    #[test]
    fn loss_reduces_the_flight_to_beta() {
        let c = cubic();
        assert_eq!(c.ssthresh_after_loss(100 * MSS), 70 * MSS);
        assert_eq!(c.ssthresh_after_loss(15 * MSS), 10 * MSS); // 10.5 floored
        assert_eq!(c.ssthresh_after_loss(2 * MSS), 2 * MSS); // at least 2 SMSS
        let half = Cubic::new(Window::new(MSS, 2, 1000 * MSS), Cubic::C, 0.5, true, false);
        assert_eq!(half.ssthresh_after_loss(100 * MSS), 50 * MSS);
    }

    #[test]
    fn window_follows_the_cubic_curve_concave_then_convex() {
        // RTT 200 ms: the Reno-friendly estimate stays below the curve (70 + 0.53 per
        // RTT reaches only ≈ 81 by K), so cwnd follows W_cubic.
        let rtt = Dur::from_millis(200);
        let mut c = cubic();
        after_loss(&mut c, 100);
        let k = 75f64.cbrt();
        let mut t = SimTime::ZERO;
        let mut at = |c: &mut Cubic, until: f64| {
            while t.as_secs_f64() < until {
                t = rounds(c, t, rtt, 1);
            }
            (t.as_secs_f64(), segs(c))
        };
        for until in [1.0, k, 1.5 * k, 2.0 * k] {
            let (now, w) = at(&mut c, until);
            // cwnd aims one RTT ahead: between W_cubic(t) and W_cubic(t + RTT), within
            // a segment.
            let lo = w_cubic(now, k, 100.0, Cubic::C);
            let hi = w_cubic(now + 0.2, k, 100.0, Cubic::C);
            assert!(
                w > lo - 1.0 && w < hi + 1.0,
                "t={now}: {w} not in {lo}..{hi}"
            );
        }
        // Concave: it slows as it nears W_max (less gain in the second second than the
        // first); convex: it speeds up beyond.
        assert!(segs(&c) > 125.0);
    }

    #[test]
    fn target_is_clamped_to_one_and_a_half_cwnd() {
        // An ACK 20 s into the stage: W_cubic(20 s) ≫ 1.5·cwnd, so each ACK adds
        // (1.5·cwnd − cwnd)/cwnd = 0.5 segment.
        let mut c = cubic();
        after_loss(&mut c, 100);
        rounds(&mut c, SimTime::ZERO, Dur::from_millis(200), 1);
        let w0 = segs(&c);
        c.on_ack(&AckSample {
            now: SimTime::from_secs(20),
            newly_acked: MSS,
            srtt: Some(Dur::from_millis(200)),
            ..Default::default()
        });
        assert!((segs(&c) - (w0 + 0.5)).abs() < 1e-9, "{} vs {w0}", segs(&c));
    }

    #[test]
    fn fast_convergence_compares_whole_segments() {
        // A flow alone on its path loses where the buffer overflows, at the same window
        // every cycle; a fraction of a segment short of the last W_max is not "below"
        // it (Linux and ns-3 compare whole segments), else every other cycle would be
        // cut short by fast convergence.
        let mut c = Cubic::new(
            Window::new(MSS, 2, 1000 * MSS),
            Cubic::C,
            Cubic::BETA,
            true,
            false,
        );
        let loss_at = |c: &mut Cubic, segs: f64| {
            c.set_window((segs * MSS as f64) as u32, 70 * MSS);
            c.on_congestion_event(CongestionEvent::Loss);
            c.w_max().unwrap()
        };
        assert!((loss_at(&mut c, 100.6) - 100.6).abs() < 1e-9);
        // 100.2 < 100.6, but both are 100 whole segments: no fast convergence.
        assert!((loss_at(&mut c, 100.2) - 100.2).abs() < 1e-9);
        // 99.6 is a whole segment below: W_max = 99.6 · (1 + β)/2.
        assert!((loss_at(&mut c, 99.6) - 99.6 * 1.7 / 2.0).abs() < 1e-9);
    }

    #[test]
    fn fast_convergence_lowers_w_max() {
        for (fc, expect) in [(true, 90.0 * 1.7 / 2.0), (false, 90.0)] {
            let mut c = Cubic::new(
                Window::new(MSS, 2, 1000 * MSS),
                Cubic::C,
                Cubic::BETA,
                fc,
                false,
            );
            after_loss(&mut c, 100);
            assert_eq!(c.w_max(), Some(100.0));
            // The next loss comes at 90 < W_max = 100.
            after_loss(&mut c, 90);
            assert!((c.w_max().unwrap() - expect).abs() < 1e-9, "fc={fc}");
            // A loss above W_max keeps the window as W_max either way.
            after_loss(&mut c, 120);
            assert_eq!(c.w_max(), Some(120.0));
        }
    }

    #[test]
    fn reno_friendly_region_takes_over_at_small_rtt() {
        // W_max = 10, cwnd 7 after the loss, RTT 1 ms: K = ∛(3/0.4) ≈ 1.96 s and the
        // curve is still at W_cubic(0.1 s) ≈ 7.44 after 100 RTTs. W_est grows by
        // α = 0.3·3/1.7 ≈ 0.53 per RTT until it reaches cwnd_prior = 10 (≈ 5.7 RTTs),
        // then by 1: ≈ 7 + 3 + 94.3 ≈ 104 segments.
        let mut c = cubic();
        after_loss(&mut c, 10);
        assert_eq!(segs(&c), 7.0);
        rounds(&mut c, SimTime::ZERO, Dur::from_millis(1), 100);
        let k = cubic_k(10.0, 7.0, Cubic::C);
        assert!(w_cubic(0.1, k, 10.0, Cubic::C) < 7.5);
        // Rounds carry floor(cwnd) ACKs, so a round adds slightly less than α.
        assert!(segs(&c) > 100.0 && segs(&c) < 105.0, "{}", segs(&c));
        assert_eq!(c.cwnd(), (c.w_est().unwrap() * MSS as f64) as u32);
    }

    #[test]
    fn linux_w_est_keeps_alpha_cubic_past_cwnd_prior() {
        // As reno_friendly_region_takes_over_at_small_rtt, but W_est keeps α ≈ 0.53
        // after it reaches cwnd_prior = 10 (Linux's and ns-3's tcp_friendliness): about
        // 7 + 0.53·100 ≈ 60 segments after 100 RTTs instead of ≈ 104.
        let mut c = cubic().with_linux(AfRtt::Smoothed, true);
        after_loss(&mut c, 10);
        rounds(&mut c, SimTime::ZERO, Dur::from_millis(1), 100);
        assert!(segs(&c) > 55.0 && segs(&c) < 61.0, "{}", segs(&c));
        assert_eq!(c.cwnd(), (c.w_est().unwrap() * MSS as f64) as u32);
    }

    #[test]
    fn whole_segment_target_stands_at_w_max_within_cbrt_one_over_c_of_k() {
        // W_max = 100, K ≈ 4.217 s: C·(K − t)³ < 1 for K − t < ∛2.5 ≈ 1.357 s, where
        // Linux's integer bic_target is W_max already; the real curve is below it.
        let k = cubic_k(100.0, 70.0, Cubic::C);
        assert_eq!(w_cubic_whole(k - 1.3, k, 100.0, Cubic::C), 100.0);
        assert_eq!(w_cubic_whole(k + 1.3, k, 100.0, Cubic::C), 100.0);
        assert_eq!(w_cubic_whole(k - 1.4, k, 100.0, Cubic::C), 99.0);
        assert_eq!(w_cubic_whole(k + 2.0, k, 100.0, Cubic::C), 103.0); // 0.4·8 = 3.2
        assert_eq!(w_cubic_whole(0.0, k, 100.0, Cubic::C), 70.0);
        assert!(w_cubic(k - 1.3, k, 100.0, Cubic::C) < 99.2);
        // The controller: one ACK at K − 1.3 s without an SRTT (no look-ahead) aims at
        // 100 with the whole-segment target, at ≈ 99.12 without.
        for (whole, target) in [(true, 100.0), (false, w_cubic(k - 1.3, k, 100.0, Cubic::C))] {
            let mut c = cubic().with_whole_target(whole);
            after_loss(&mut c, 100);
            c.on_ack(&AckSample {
                newly_acked: MSS,
                ..Default::default()
            });
            let w0 = segs(&c);
            c.on_ack(&AckSample {
                now: SimTime::from_nanos(((k - 1.3) * 1e9) as u64),
                newly_acked: MSS,
                ..Default::default()
            });
            let want = w0 + (target - w0) / w0;
            assert!(
                (segs(&c) - want).abs() < 1e-6,
                "{whole}: {} vs {want}",
                segs(&c)
            );
        }
    }

    #[test]
    fn min_rtt_lead_reads_the_target_one_least_rtt_ahead() {
        // W_max = 100, cwnd 70, K ≈ 4.217 s. The first ACK carries an RTT sample of
        // 20 ms; SRTT is 1 s (a long queue). One ACK at t = 1 s adds
        // (W_cubic(1 + lead) − 70)/70: lead = SRTT by default, 20 ms with `rtt = "min"`.
        let k = cubic_k(100.0, 70.0, Cubic::C);
        for (lead, ahead) in [(AfRtt::Smoothed, 1.0), (AfRtt::Min, 0.02)] {
            let mut c = cubic().with_linux(lead, false);
            after_loss(&mut c, 100);
            let ack = |t: f64, rtt: Option<Dur>| AckSample {
                now: SimTime::from_nanos((t * 1e9) as u64),
                newly_acked: MSS,
                rtt,
                srtt: Some(Dur::from_secs(1)),
                ..Default::default()
            };
            c.on_ack(&ack(0.0, Some(Dur::from_millis(20))));
            let w0 = segs(&c);
            c.on_ack(&ack(1.0, None));
            let target = w_cubic(1.0 + ahead, k, 100.0, Cubic::C);
            let want = w0 + (target - w0) / w0;
            assert!(
                (segs(&c) - want).abs() < 1e-6,
                "{lead:?}: {} vs {want}",
                segs(&c)
            );
        }
    }

    #[test]
    fn timeout_restarts_the_curve_at_the_window_where_avoidance_begins() {
        let mut c = cubic();
        after_loss(&mut c, 100);
        rounds(&mut c, SimTime::ZERO, Dur::from_millis(200), 2);
        let ss = c.ssthresh_after_loss(80 * MSS);
        c.on_congestion_event(CongestionEvent::Timeout);
        c.set_window(MSS, ss);
        assert_eq!(c.w_max(), None);
        // Slow start (one segment per ACK) up to ssthresh = 56, then K = 0 and
        // W_max = cwnd_epoch (§4.8).
        let t = SimTime::from_secs(5);
        let ack = AckSample {
            now: t,
            newly_acked: MSS,
            srtt: Some(Dur::from_millis(200)),
            ..Default::default()
        };
        while c.cwnd() < ss {
            c.on_ack(&ack);
        }
        assert_eq!(c.cwnd(), 56 * MSS);
        assert_eq!(c.k(), None);
        let epoch_cwnd = segs(&c);
        c.on_ack(&ack);
        assert_eq!(c.k(), Some(0.0));
        assert_eq!(c.w_max(), Some(epoch_cwnd));
    }

    #[test]
    fn slow_start_below_ssthresh_is_renos() {
        let mut c = cubic();
        c.on_ack(&AckSample {
            newly_acked: MSS,
            ..Default::default()
        });
        assert_eq!(c.cwnd(), 3 * MSS);
        assert_eq!(c.k(), None);
    }

    #[test]
    fn hystart_leaves_slow_start_on_an_rtt_increase() {
        // Slow start at a 100 ms RTT, then 120 ms: HyStart++ enters CSS, then after
        // CSS_ROUNDS sets ssthresh = cwnd and starts congestion avoidance with K = 0.
        // Without it, slow start goes on (ssthresh stays at the cap).
        for on in [true, false] {
            let mut c = Cubic::new(
                Window::new(MSS, 10, 100_000 * MSS),
                Cubic::C,
                Cubic::BETA,
                true,
                on,
            );
            let (mut una, mut snd_max) = (0u64, 10 * MSS as u64);
            let mut t = SimTime::ZERO;
            let mut css_at = None;
            for _ in 0..3000 {
                una += MSS as u64;
                let rtt = if una > 60 * MSS as u64 { 120 } else { 100 };
                t += Dur::from_millis(1);
                c.on_ack(&AckSample {
                    now: t,
                    newly_acked: MSS,
                    in_flight: (snd_max - una) as u32,
                    una,
                    ack_rtt: Some(Dur::from_millis(rtt)),
                    srtt: Some(Dur::from_millis(rtt)),
                    ..Default::default()
                });
                if c.in_css() && css_at.is_none() {
                    css_at = Some((una / MSS as u64, c.cwnd()));
                }
                snd_max = snd_max.max(una + c.cwnd() as u64);
            }
            if on {
                // Rounds start at the ACKs of segments 1, 10, 28, 64 (windowEnd = the
                // highest byte sent). The round from 64 is the first with every RTT
                // at 120 ms ≥ 100 + 12.5 ms: CSS at its 8th ACK (segment 71), cwnd
                // 10 + 71 = 81. Five round starts later (136, 232, 352, 502, 690) CSS
                // ends, ssthresh = cwnd = 81 + (689 − 71)/4 = 235.5 segments.
                assert_eq!(css_at, Some((71, 81 * MSS)));
                assert_eq!(c.ssthresh(), 235_500);
                assert_eq!(c.k(), Some(0.0));
            } else {
                assert_eq!(css_at, None);
                assert_eq!(c.ssthresh(), 100_000 * MSS);
                assert_eq!(c.cwnd(), 3010 * MSS);
            }
        }
    }

    #[test]
    fn a_loss_ends_hystart() {
        let mut c = Cubic::new(
            Window::new(MSS, 10, 1000 * MSS),
            Cubic::C,
            Cubic::BETA,
            true,
            true,
        );
        assert!(c.s.hystart.is_some());
        c.on_congestion_event(CongestionEvent::Loss);
        assert!(c.s.hystart.is_none());
    }
}

/// CUBIC end to end over [`crate::tcp::testwire`], and its scenario keys.
#[cfg(test)]
mod wire_tests {
    use crate::rng::RngStream;
    use crate::tcp::cc::CongestionControl;
    use crate::tcp::testwire::{Loss, Path, Wire};
    use crate::tcp::{CcConfig, TcpConfig, Variant};
    use crate::time::{Rate, SimTime};

    const MSS: u32 = 1000;

    fn cubic(variant: Variant, hystart: bool) -> TcpConfig {
        TcpConfig {
            variant,
            mss: MSS,
            cc: CcConfig::Cubic {
                c: super::Cubic::C,
                beta: super::Cubic::BETA,
                fast_convergence: true,
                hystart,
                lead: crate::tcp::AfRtt::Smoothed,
                w_est_linux: false,
                target_linux: false,
            },
            ..Default::default()
        }
    }

    #[test]
    fn every_variant_delivers_every_byte_once_in_order_under_random_loss() {
        let total = 1_000_000;
        for v in [
            Variant::Tahoe,
            Variant::Reno,
            Variant::NewReno,
            Variant::Sack,
        ] {
            for (k, p) in [0.0, 0.01, 0.05].into_iter().enumerate() {
                for seed in 0..3u64 {
                    let c = TcpConfig {
                        delayed_ack: seed == 1,
                        handshake: seed == 2,
                        byte_counting: seed == 1,
                        ecn: seed == 2,
                        ..cubic(v, seed != 0)
                    };
                    let mut path = Path::delay(10);
                    path.rate = Some(Rate::from_mbps(10));
                    path.buffer = 30;
                    path.loss = Loss::Bernoulli(p, RngStream::derive(seed, &format!("cl{k}")));
                    if seed == 2 {
                        path.ce_seqs = (0..total / MSS as u64)
                            .step_by(97)
                            .map(|i| i * MSS as u64)
                            .collect();
                    }
                    let mut w = Wire::new(&c, Some(total), path);
                    w.start();
                    w.run(SimTime::from_secs(5000));
                    let what = format!("{v:?} p={p} seed={seed}");
                    assert!(w.snd.is_done(), "{what}: not done {:?}", w.snd.probe());
                    // Goodput counts only in-order bytes the receiver hands up, once.
                    assert_eq!(w.delivered, total, "{what}");
                    assert_eq!(w.rcv.rcv_nxt(), total, "{what}");
                    assert_eq!(w.snd.cc().name(), "cubic");
                }
            }
        }
    }

    #[test]
    fn cubic_grows_past_reno_on_a_long_fat_path_after_a_loss() {
        // 100 Mb/s, 100 ms RTT, a buffer of one BDP (≈ 833 segments): both lose in
        // slow start, then CUBIC returns to 0.7·W_max and climbs the curve while Reno
        // adds one segment per RTT from half. Over 30 s CUBIC delivers more.
        let goodput = |cc: CcConfig| {
            let c = TcpConfig {
                variant: Variant::Sack,
                mss: MSS,
                max_window: 4000,
                cc,
                ..Default::default()
            };
            let mut path = Path::delay(50);
            path.rate = Some(Rate::from_mbps(100));
            path.buffer = 400;
            let mut w = Wire::new(&c, None, path);
            w.start();
            w.run(SimTime::from_secs(30));
            w.goodput_between(SimTime::from_secs(5), SimTime::from_secs(30))
        };
        let reno = goodput(CcConfig::Reno);
        let cubic = goodput(cubic(Variant::Sack, false).cc);
        assert!(
            cubic as f64 > 1.05 * reno as f64,
            "cubic {cubic} vs reno {reno}"
        );
    }

    #[test]
    fn hystart_slows_slow_start_when_the_queue_builds() {
        // 10 Mb/s, 100 ms base RTT, 1040-byte packets (BDP ≈ 120), a deep buffer of
        // 1000 packets. Slow start doubles per round until the window passes BDP +
        // buffer ≈ 1120 and overflows within 3 s. HyStart++ sees the round that starts
        // at segment 512 begin with a queue of about 400 packets (RTT 214 ms against
        // 107 ms the round before, far above the 12.5 ms threshold), enters CSS at its
        // 8th ACK and grows a quarter as fast from there: no drop in the first 3 s.
        let run = |hystart: bool| {
            let c = TcpConfig {
                max_window: 2000,
                ..cubic(Variant::Sack, hystart)
            };
            let mut path = Path::delay(50);
            path.rate = Some(Rate::from_mbps(10));
            path.buffer = 1000;
            let mut w = Wire::new(&c, None, path);
            w.start();
            w.run(SimTime::from_secs(3));
            let css = matches!(w.snd.cc(), crate::tcp::cc::AnyCc::Cubic(c) if c.in_css());
            (w.drops, css)
        };
        let (drops_on, css_on) = run(true);
        let (drops_off, css_off) = run(false);
        assert_eq!((drops_on, css_on), (0, true));
        assert!(drops_off > 100 && !css_off, "{drops_off}");
    }

    #[test]
    fn scenario_keys_defaults_and_errors() {
        let c: TcpConfig = toml::from_str("cc = \"cubic\"").unwrap();
        assert_eq!(
            c.cc,
            CcConfig::Cubic {
                c: 0.4,
                beta: 0.7,
                fast_convergence: true,
                hystart: false,
                lead: crate::tcp::AfRtt::Smoothed,
                w_est_linux: false,
                target_linux: false,
            }
        );
        assert!(c.validate().is_ok());
        assert!(c.model_name().ends_with("-cubic"), "{}", c.model_name());
        let c: TcpConfig = toml::from_str(
            "cc = { kind = \"cubic\", c = 0.8, beta = 0.5, fast_convergence = false, hystart = true }",
        )
        .unwrap();
        assert_eq!(
            c.cc,
            CcConfig::Cubic {
                c: 0.8,
                beta: 0.5,
                fast_convergence: false,
                hystart: true,
                lead: crate::tcp::AfRtt::Smoothed,
                w_est_linux: false,
                target_linux: false,
            }
        );
        let c: TcpConfig = toml::from_str(
            "cc = { kind = \"cubic\", rtt = \"min\", w_est = \"linux\", target = \"linux\" }",
        )
        .unwrap();
        assert!(matches!(
            c.cc,
            CcConfig::Cubic {
                lead: crate::tcp::AfRtt::Min,
                w_est_linux: true,
                target_linux: true,
                ..
            }
        ));
        for bad in [
            "cc = { kind = \"cubic\", w_est = \"ns3\" }",
            "cc = { kind = \"cubic\", rtt = \"max\" }",
            "cc = { kind = \"cubic\", target = \"ns3\" }",
        ] {
            let e = toml::from_str::<TcpConfig>(bad).unwrap_err().to_string();
            assert!(e.contains("unknown"), "{bad}: {e}");
        }
        for (bad, key) in [
            ("cc = { kind = \"cubic\", beta = 1.0 }", "cc.beta"),
            ("cc = { kind = \"cubic\", beta = 0 }", "cc.beta"),
            ("cc = { kind = \"cubic\", c = 0 }", "cc.c"),
            ("cc = { kind = \"cubic\", c = -0.4 }", "cc.c"),
        ] {
            let c: TcpConfig = toml::from_str(bad).unwrap();
            assert_eq!(c.validate().unwrap_err().key, key, "{bad}");
        }
        // HyStart++ is CUBIC's here; other controllers refuse its keys by name.
        for bad in [
            "cc = { kind = \"reno\", hystart = true }",
            "cc = { kind = \"reno\", beta = 0.7 }",
            "cc = { kind = \"multcp\", w = 2, fast_convergence = true }",
            "cc = { kind = \"cubic\", w = 2 }",
            "cc = { kind = \"reno\", w_est = \"linux\" }",
            "cc = { kind = \"dctcp\", target = \"linux\" }",
            "cc = { kind = \"multcp\", w = 2, rtt = \"min\" }",
        ] {
            let e = toml::from_str::<TcpConfig>(bad).unwrap_err().to_string();
            assert!(e.contains("does not apply"), "{bad}: {e}");
        }
    }
}

//! An ERUF regulator: a token-bucket policer whose rate follows multiplicative decrease
//! on source quenches and additive increase without them (P2 §2.1).
//!
//! ```text
//!   first quench ─► installed at half the measured arrival rate
//!   quench at t ─► halve, unless within one RTT estimate of the last decrease (ignored)
//!   [t, t + RTT)      hold: no change
//!   t + 2·RTT, +3·RTT, …  + one average packet size per RTT estimate without a quench
//!   rate ≥ link rate ─► removed
//! ```
//!
//! "The bandwidth … is increased by one *average* packet size for every RTT estimate"
//! (P2 §2.1) has two readings ([`Increase`]): a window that grows by one average packet
//! per RTT estimate (`+8·avg/RTT` bit/s, as a TCP window grows by one segment per RTT),
//! or the bandwidth itself growing by one average packet size per second (`+8·avg`
//! bit/s).
//!
//! State changes are evaluated lazily at `now` (packet arrivals and quenches): no timer.

use serde::{Deserialize, Serialize};

use crate::time::{Dur, Rate, SimTime};

/// How much a regulator's bandwidth grows per quiet RTT estimate (P2 §2.1: "increased
/// by one *average* packet size for every RTT estimate").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Increase {
    /// One average packet per RTT estimate, as a window: `+8·avg/RTT` bit/s.
    #[default]
    PacketPerRtt,
    /// One average packet size per second: `+8·avg` bit/s (the words taken literally).
    BytesPerSecond,
}

impl Increase {
    /// The growth [bit/s] of one quiet RTT estimate `rtt` for packets of `avg` bytes.
    pub fn step(self, avg: f64, rtt: Dur) -> f64 {
        match self {
            Increase::PacketPerRtt => 8.0 * avg / rtt.as_secs_f64(),
            Increase::BytesPerSecond => 8.0 * avg,
        }
    }
}

/// What a quench did to a regulator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuenchEffect {
    /// The rate was halved.
    Decreased,
    /// Within one RTT estimate of the last decrease: ignored (P2 §2.1).
    Ignored,
}

/// A token-bucket regulator of one flow or aggregate.
#[derive(Clone, Debug)]
pub struct Regulator {
    /// Regulator bandwidth [bit/s].
    rate: f64,
    /// Bucket depth [bytes].
    depth: f64,
    /// Tokens [bytes].
    tokens: f64,
    /// Last refill.
    last: SimTime,
    /// Last decrease (or installation).
    decreased_at: SimTime,
    /// Next additive increase.
    next_increase: SimTime,
    /// Decreases so far (installation included).
    decreases: u64,
}

impl Regulator {
    /// Installed at `now` by a first quench, at half the measured `arrival` rate
    /// [bit/s], with a full bucket of `depth` bytes.
    pub fn install(now: SimTime, arrival: f64, rtt: Dur, depth: u64) -> Self {
        Regulator {
            rate: arrival / 2.0,
            depth: depth as f64,
            tokens: depth as f64,
            last: now,
            decreased_at: now,
            next_increase: now + rtt + rtt,
            decreases: 1,
        }
    }

    /// Regulator bandwidth [bit/s].
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// Decreases so far (the installation counts as one).
    pub fn decreases(&self) -> u64 {
        self.decreases
    }

    fn refill(&mut self, now: SimTime) {
        if now > self.last {
            let dt = (now - self.last).as_secs_f64();
            self.tokens = (self.tokens + dt * self.rate / 8.0).min(self.depth);
            self.last = now;
        }
    }

    /// Applies the increases due by `now` (one `inc` step for packets of `avg` bytes per
    /// quiet RTT estimate after the hold); true if the rate reached `link` and the
    /// regulator is to be removed.
    pub fn advance(&mut self, now: SimTime, rtt: Dur, avg: f64, inc: Increase, link: Rate) -> bool {
        self.refill(now);
        if now >= self.next_increase && rtt > Dur::ZERO {
            let k = 1 + (now - self.next_increase).as_nanos() / rtt.as_nanos();
            self.rate += k as f64 * inc.step(avg, rtt);
            self.next_increase += rtt.saturating_mul(k);
        }
        self.rate >= link.bps() as f64
    }

    /// A quench for this flow arrived at `now` (call [`Regulator::advance`] first).
    pub fn on_quench(&mut self, now: SimTime, rtt: Dur) -> QuenchEffect {
        self.refill(now);
        if now < self.decreased_at + rtt {
            return QuenchEffect::Ignored;
        }
        self.rate /= 2.0;
        self.decreased_at = now;
        self.next_increase = now + rtt + rtt;
        self.decreases += 1;
        QuenchEffect::Decreased
    }

    /// A packet of `bytes` arrives at `now`: true if it conforms (its tokens are taken).
    pub fn admit(&mut self, now: SimTime, bytes: u32) -> bool {
        self.refill(now);
        if self.tokens >= bytes as f64 {
            self.tokens -= bytes as f64;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RTT: Dur = Dur::from_millis(20);
    const LINK: Rate = Rate::from_kbps(1500);
    const W: Increase = Increase::PacketPerRtt;

    fn ms(t: u64) -> SimTime {
        SimTime::from_millis(t)
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6 * b.abs().max(1.0)
    }

    #[test]
    fn installs_at_half_the_arrival_rate() {
        let r = Regulator::install(ms(0), 800_000.0, RTT, 3000);
        assert_eq!(r.rate(), 400_000.0);
    }

    #[test]
    fn halves_once_per_rtt_under_a_burst_of_quenches() {
        let mut r = Regulator::install(ms(0), 800_000.0, RTT, 3000);
        // Ten quenches within the first RTT estimate: all ignored.
        for t in 1..=10 {
            r.advance(ms(t), RTT, 100.0, W, LINK);
            assert_eq!(r.on_quench(ms(t), RTT), QuenchEffect::Ignored);
        }
        assert_eq!(r.rate(), 400_000.0);
        // A quench every 5 ms from 20 ms to 99 ms: one decrease per 20 ms.
        let mut decreased = 0;
        for t in (20..100).step_by(5) {
            r.advance(ms(t), RTT, 100.0, W, LINK);
            if r.on_quench(ms(t), RTT) == QuenchEffect::Decreased {
                decreased += 1;
            }
        }
        assert_eq!(decreased, 4); // at 20, 40, 60, 80 ms
        assert_eq!(r.rate(), 400_000.0 / 16.0);
        assert_eq!(r.decreases(), 5);
    }

    #[test]
    fn grows_one_average_packet_per_quiet_rtt_after_a_hold() {
        let mut r = Regulator::install(ms(0), 800_000.0, RTT, 3000);
        let step = 8.0 * 100.0 / 0.020; // 40 kb/s per RTT estimate
                                        // Hold during [0, 2·RTT): no change.
        r.advance(ms(39), RTT, 100.0, W, LINK);
        assert!(close(r.rate(), 400_000.0), "{}", r.rate());
        r.advance(ms(40), RTT, 100.0, W, LINK);
        assert!(close(r.rate(), 400_000.0 + step), "{}", r.rate());
        // Three more quiet RTT estimates, evaluated at once.
        r.advance(ms(105), RTT, 100.0, W, LINK);
        assert!(close(r.rate(), 400_000.0 + 4.0 * step), "{}", r.rate());
        // A quench halves and restarts the hold.
        assert_eq!(r.on_quench(ms(110), RTT), QuenchEffect::Decreased);
        let after = (400_000.0 + 4.0 * step) / 2.0;
        r.advance(ms(149), RTT, 100.0, W, LINK);
        assert!(close(r.rate(), after), "{}", r.rate());
        r.advance(ms(150), RTT, 100.0, W, LINK);
        assert!(close(r.rate(), after + step), "{}", r.rate());
    }

    #[test]
    fn each_increase_reading_after_n_quiet_rtts_by_hand() {
        // Installed at 0 at 400 kb/s; 250-byte packets, RTT estimate 20 ms. The hold
        // ends at 40 ms; the n-th increase comes at 40 + 20·(n − 1) ms.
        // packet_per_rtt: 8·250/0.020 = 100 000 bit/s per step;
        // bytes_per_second: 8·250 = 2 000 bit/s per step.
        for (inc, step) in [
            (Increase::PacketPerRtt, 100_000.0),
            (Increase::BytesPerSecond, 2_000.0),
        ] {
            let mut r = Regulator::install(ms(0), 800_000.0, RTT, 3000);
            // 159 ms: six quiet RTT estimates after the hold (40, 60, …, 140 ms).
            r.advance(ms(159), RTT, 250.0, inc, Rate::from_mbps(100));
            assert!(
                close(r.rate(), 400_000.0 + 6.0 * step),
                "{inc:?} {}",
                r.rate()
            );
            // 160 ms: the seventh.
            r.advance(ms(160), RTT, 250.0, inc, Rate::from_mbps(100));
            assert!(
                close(r.rate(), 400_000.0 + 7.0 * step),
                "{inc:?} {}",
                r.rate()
            );
        }
        // By hand: 1 100 000 and 414 000 bit/s after seven.
        assert_eq!(
            Increase::PacketPerRtt.step(250.0, RTT) * 7.0 + 400_000.0,
            1_100_000.0
        );
        assert_eq!(
            Increase::BytesPerSecond.step(250.0, RTT) * 7.0 + 400_000.0,
            414_000.0
        );
    }

    #[test]
    fn bytes_per_second_takes_the_words_literally_and_is_slow_to_remove() {
        // 400 kb/s back to a 1.5 Mb/s link at +800 bit/s per 20 ms: 1375 increases,
        // the last at 40 + 1374·20 = 27 520 ms (window reading: 580 ms, test below).
        let inc = Increase::BytesPerSecond;
        let mut r = Regulator::install(ms(0), 800_000.0, RTT, 3000);
        assert!(!r.advance(ms(27_519), RTT, 100.0, inc, LINK));
        assert!(r.advance(ms(27_520), RTT, 100.0, inc, LINK));
    }

    #[test]
    fn removed_when_the_rate_reaches_the_link_rate() {
        let mut r = Regulator::install(ms(0), 800_000.0, RTT, 3000);
        // 400 kb/s + 40 kb/s per RTT: 1500 kb/s after 27.5 → 28 increases, the 28th at
        // 40 + 27·20 = 580 ms.
        assert!(!r.advance(ms(579), RTT, 100.0, W, LINK));
        assert!(r.advance(ms(580), RTT, 100.0, W, LINK));
        assert!(r.rate() >= 1_500_000.0);
    }

    #[test]
    fn polices_at_its_rate() {
        let mut r = Regulator::install(ms(0), 160_000.0, Dur::from_secs(100), 200);
        // 80 kb/s = 10 000 B/s; offered 100-byte packets every millisecond (800 kb/s)
        // for one second: 200 bytes of bucket + 10 000 bytes of tokens.
        let passed = (0..1000).filter(|&t| r.admit(ms(t), 100)).count();
        assert!((100..=102).contains(&passed), "{passed}");
    }
}

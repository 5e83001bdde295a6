//! Simulated time, durations and link rates, all in integer units.
//!
//! Time is `u64` nanoseconds since the start of the run: at 10 Gb/s a 1500-byte packet
//! takes 1.2 µs on the wire, so microseconds would be too coarse. Floats appear only
//! at the edges (parsing and reporting). [`Rate::tx_time`] is the one place where
//! serialisation delay is computed.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in simulated time [ns since the start of the run].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(u64);

/// A length of simulated time [ns].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Dur(u64);

/// A transmission rate [bit/s].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rate(u64);

const NS_PER_US: u64 = 1_000;
const NS_PER_MS: u64 = 1_000_000;
const NS_PER_S: u64 = 1_000_000_000;

impl SimTime {
    /// The start of the run.
    pub const ZERO: SimTime = SimTime(0);
    /// A time later than any event of a run (used as "never").
    pub const NEVER: SimTime = SimTime(u64::MAX);

    /// Time from nanoseconds.
    pub const fn from_nanos(ns: u64) -> Self {
        SimTime(ns)
    }
    /// Time from microseconds.
    pub const fn from_micros(us: u64) -> Self {
        SimTime(us * NS_PER_US)
    }
    /// Time from milliseconds.
    pub const fn from_millis(ms: u64) -> Self {
        SimTime(ms * NS_PER_MS)
    }
    /// Time from whole seconds.
    pub const fn from_secs(s: u64) -> Self {
        SimTime(s * NS_PER_S)
    }
    /// Time from (possibly fractional) seconds, rounded to the nearest nanosecond.
    pub fn from_secs_f64(s: f64) -> Self {
        SimTime(Dur::from_secs_f64(s).0)
    }
    /// Nanoseconds since the start.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Seconds since the start, as a float (for reporting only).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / NS_PER_S as f64
    }
    /// Time elapsed since `earlier`; zero if `earlier` is later.
    pub fn saturating_since(self, earlier: SimTime) -> Dur {
        Dur(self.0.saturating_sub(earlier.0))
    }
}

impl Dur {
    /// No time at all.
    pub const ZERO: Dur = Dur(0);
    /// The longest representable duration (used as "infinite").
    pub const MAX: Dur = Dur(u64::MAX);

    /// Duration from nanoseconds.
    pub const fn from_nanos(ns: u64) -> Self {
        Dur(ns)
    }
    /// Duration from microseconds.
    pub const fn from_micros(us: u64) -> Self {
        Dur(us * NS_PER_US)
    }
    /// Duration from milliseconds.
    pub const fn from_millis(ms: u64) -> Self {
        Dur(ms * NS_PER_MS)
    }
    /// Duration from whole seconds.
    pub const fn from_secs(s: u64) -> Self {
        Dur(s * NS_PER_S)
    }
    /// Duration from (possibly fractional) seconds, rounded to the nearest nanosecond;
    /// negative or NaN input gives zero.
    pub fn from_secs_f64(s: f64) -> Self {
        if s.is_nan() || s <= 0.0 {
            return Dur(0);
        }
        let ns = (s * NS_PER_S as f64).round();
        if ns >= u64::MAX as f64 {
            Dur(u64::MAX)
        } else {
            Dur(ns as u64)
        }
    }
    /// Length in nanoseconds.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Length in seconds, as a float (for reporting and models).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / NS_PER_S as f64
    }
    /// Multiplies by an integer, saturating at [`Dur::MAX`].
    pub fn saturating_mul(self, k: u64) -> Dur {
        Dur(self.0.saturating_mul(k))
    }
    /// Multiplies by a float factor (rounded); negative factors give zero.
    pub fn mul_f64(self, k: f64) -> Dur {
        Dur::from_secs_f64(self.as_secs_f64() * k)
    }
}

impl Rate {
    /// Rate from bits per second.
    pub const fn from_bps(bps: u64) -> Self {
        Rate(bps)
    }
    /// Rate from kilobits per second (10³).
    pub const fn from_kbps(k: u64) -> Self {
        Rate(k * 1_000)
    }
    /// Rate from megabits per second (10⁶).
    pub const fn from_mbps(m: u64) -> Self {
        Rate(m * 1_000_000)
    }
    /// Rate in bits per second.
    pub const fn bps(self) -> u64 {
        self.0
    }
    /// Rate in bytes per second, as a float.
    pub fn bytes_per_sec(self) -> f64 {
        self.0 as f64 / 8.0
    }
    /// Time to serialise `bytes` at this rate, rounded up to the next nanosecond.
    ///
    /// Exact whenever `bytes·8·10⁹` is a multiple of the rate (every common case:
    /// 1500 B at 10 Mb/s is exactly 1.2 ms). A zero rate never finishes ([`Dur::MAX`]).
    pub fn tx_time(self, bytes: u32) -> Dur {
        if self.0 == 0 {
            return Dur::MAX;
        }
        // bytes·8·10⁹ fits in u64 below 2³¹ bytes (every packet): 64-bit division is
        // several times cheaper than 128-bit, and this runs once per packet-hop.
        if bytes < (1 << 31) {
            return Dur((bytes as u64 * 8 * NS_PER_S).div_ceil(self.0));
        }
        let num = bytes as u128 * 8 * NS_PER_S as u128;
        Dur(num.div_ceil(self.0 as u128) as u64)
    }
    /// Bytes this rate carries in `d` (floor).
    pub fn bytes_in(self, d: Dur) -> u64 {
        (self.0 as u128 * d.0 as u128 / (8 * NS_PER_S as u128)) as u64
    }
}

impl Add<Dur> for SimTime {
    type Output = SimTime;
    fn add(self, d: Dur) -> SimTime {
        SimTime(self.0.saturating_add(d.0))
    }
}

impl AddAssign<Dur> for SimTime {
    fn add_assign(&mut self, d: Dur) {
        self.0 = self.0.saturating_add(d.0);
    }
}

impl Sub<SimTime> for SimTime {
    type Output = Dur;
    /// Time between two instants; saturates at zero if `rhs` is later.
    fn sub(self, rhs: SimTime) -> Dur {
        Dur(self.0.saturating_sub(rhs.0))
    }
}

impl Add for Dur {
    type Output = Dur;
    fn add(self, d: Dur) -> Dur {
        Dur(self.0.saturating_add(d.0))
    }
}

impl AddAssign for Dur {
    fn add_assign(&mut self, d: Dur) {
        self.0 = self.0.saturating_add(d.0);
    }
}

impl Sub for Dur {
    type Output = Dur;
    fn sub(self, d: Dur) -> Dur {
        Dur(self.0.saturating_sub(d.0))
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.9}s", self.as_secs_f64())
    }
}

impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 < NS_PER_MS {
            write!(f, "{}us", self.0 as f64 / NS_PER_US as f64)
        } else if self.0 < NS_PER_S {
            write!(f, "{}ms", self.0 as f64 / NS_PER_MS as f64)
        } else {
            write!(f, "{}s", self.as_secs_f64())
        }
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 >= 1_000_000 {
            write!(f, "{}Mbps", self.0 as f64 / 1e6)
        } else if self.0 >= 1_000 {
            write!(f, "{}kbps", self.0 as f64 / 1e3)
        } else {
            write!(f, "{}bps", self.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tx_time_is_exact_for_common_cases() {
        assert_eq!(Rate::from_mbps(10).tx_time(1500), Dur::from_micros(1200));
        assert_eq!(Rate::from_kbps(128).tx_time(100), Dur::from_micros(6250));
        assert_eq!(Rate::from_mbps(1000).tx_time(1500), Dur::from_nanos(12_000));
        assert_eq!(Rate::from_mbps(3).tx_time(1500), Dur::from_millis(4));
    }

    #[test]
    fn tx_time_rounds_up() {
        // 1 byte at 3 bit/s = 8/3 s = 2.666…e9 ns → rounded up.
        assert_eq!(Rate::from_bps(3).tx_time(1), Dur::from_nanos(2_666_666_667));
        assert_eq!(Rate::from_bps(0).tx_time(1), Dur::MAX);
        // The 128-bit path for huge sizes agrees with the 64-bit one.
        let big = u32::MAX;
        assert_eq!(Rate::from_bps(8).tx_time(big), Dur::from_secs(big as u64));
    }

    #[test]
    fn arithmetic_saturates() {
        assert_eq!(SimTime::NEVER + Dur::from_secs(1), SimTime::NEVER);
        assert_eq!(SimTime::from_secs(1) - SimTime::from_secs(2), Dur::ZERO);
        assert_eq!(Dur::from_secs_f64(-1.0), Dur::ZERO);
        assert_eq!(Dur::from_secs_f64(0.0015), Dur::from_micros(1500));
    }

    #[test]
    fn bytes_in_inverts_tx_time() {
        let r = Rate::from_mbps(10);
        assert_eq!(r.bytes_in(Dur::from_secs(1)), 1_250_000);
        assert_eq!(r.bytes_in(r.tx_time(1500)), 1500);
    }
}

//! ICMP source quench generation at routers (RFC 792 type 4; P2 §2): a router with
//! `source_quench` set sends one quench towards the source of every packet its queues
//! drop, within a per-router token bucket of quenches (RFC 1812 §4.3.2.8: ICMP error
//! messages must be rate-limited; P2 §1: "the generation of source quenches is suitably
//! rate-limited"), or for every drop with `rate = "unlimited"` (P2 §3: the authors'
//! ns-2 would "generate a source quench every time RED drops a packet").
//!
//! The quench is a real packet of `size` bytes (default 56: a 20-byte IP header, the
//! 8-byte ICMP header and the quoted 20-byte IP header plus the first 8 bytes of the
//! dropped datagram, RFC 792) sent from the router to the dropped packet's source,
//! through the reverse path's conditioners and queues. No quench is sent about a quench
//! (RFC 1812 §4.3.2.7: no ICMP error about an ICMP error).

use serde::Deserialize;

use crate::config::ScenarioError;
use crate::time::SimTime;
use crate::units::Bytes;

/// Bytes of a source quench on the wire: IP header (20) + ICMP header (8) + the quoted
/// IP header (20) and first 8 bytes of the dropped datagram (RFC 792).
pub const QUENCH_SIZE: u32 = 56;

/// The limiter's token rate: a number of quenches per second, or `"unlimited"` (a
/// quench for every drop, P2 §3).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum QuenchRate {
    /// At most this many quenches per second (with the bucket's bursts).
    PerSecond(f64),
    /// A quench for every drop; `burst` is then not used.
    Unlimited,
}

impl<'de> Deserialize<'de> for QuenchRate {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Repr {
            Number(f64),
            Word(String),
        }
        match Repr::deserialize(d)? {
            Repr::Number(x) => Ok(QuenchRate::PerSecond(x)),
            Repr::Word(w) if w == "unlimited" => Ok(QuenchRate::Unlimited),
            Repr::Word(w) => Err(serde::de::Error::custom(format!(
                "expected quenches per second or \"unlimited\", found {w:?}"
            ))),
        }
    }
}

/// A router's `source_quench = { rate = 100, burst = 1, size = 56 }` table.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceQuenchConfig {
    /// Token rate of the limiter [quenches/s], or `"unlimited"`.
    pub rate: QuenchRate,
    /// Bucket depth [quenches]: most quenches sent back to back; default 1.
    #[serde(default = "default_burst")]
    pub burst: u32,
    /// Size of a quench on the wire [bytes]; default 56 (see [`QUENCH_SIZE`]).
    #[serde(default = "default_size")]
    pub size: Bytes,
}

fn default_burst() -> u32 {
    1
}
fn default_size() -> Bytes {
    Bytes(QUENCH_SIZE as u64)
}

impl SourceQuenchConfig {
    /// Checks the values; keys are relative to the `source_quench` table.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        if let QuenchRate::PerSecond(r) = self.rate {
            crate::ensure_scenario!(
                r.is_finite() && r > 0.0,
                "rate",
                "expected a positive number of quenches per second or \"unlimited\", found {}",
                r
            );
        }
        crate::ensure_scenario!(
            self.burst >= 1,
            "burst",
            "expected a burst of at least 1 quench, found 0"
        );
        crate::ensure_scenario!(
            (28..=65_535).contains(&self.size.0),
            "size",
            "expected a quench size of 28 (IP + ICMP headers) to 65535 bytes, found {}",
            self.size.0
        );
        Ok(())
    }
}

/// Quenches a router sent and held back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QuenchCounters {
    /// Quenches sent.
    pub sent: u64,
    /// Drops that found the bucket empty (no quench sent).
    pub suppressed: u64,
}

/// A router's quench limiter: a token bucket of whole quenches.
#[derive(Clone, Debug)]
pub struct QuenchLimiter {
    cfg: SourceQuenchConfig,
    /// Tokens [quenches, fractional].
    tokens: f64,
    last: SimTime,
    /// What it did so far.
    pub counters: QuenchCounters,
}

impl QuenchLimiter {
    /// A full bucket.
    pub fn new(cfg: SourceQuenchConfig) -> Self {
        QuenchLimiter {
            tokens: cfg.burst as f64,
            cfg,
            last: SimTime::ZERO,
            counters: QuenchCounters::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &SourceQuenchConfig {
        &self.cfg
    }

    /// A packet was dropped at `now`: true if a quench may be sent (and counts it).
    pub fn allow(&mut self, now: SimTime) -> bool {
        let QuenchRate::PerSecond(rate) = self.cfg.rate else {
            self.counters.sent += 1;
            return true;
        };
        if now > self.last {
            let dt = (now - self.last).as_secs_f64();
            self.tokens = (self.tokens + dt * rate).min(self.cfg.burst as f64);
            self.last = now;
        }
        // A small tolerance: n tokens earned over n/rate seconds must make n quenches.
        if self.tokens >= 1.0 - 1e-9 {
            self.tokens -= 1.0;
            self.counters.sent += 1;
            true
        } else {
            self.counters.suppressed += 1;
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limiter(rate: f64, burst: u32) -> QuenchLimiter {
        QuenchLimiter::new(SourceQuenchConfig {
            rate: QuenchRate::PerSecond(rate),
            burst,
            size: Bytes(56),
        })
    }

    #[test]
    fn a_burst_of_drops_gets_at_most_the_bucket() {
        let mut q = limiter(10.0, 3);
        // 100 drops within one millisecond: the 3 tokens of the bucket only.
        let sent = (0..100)
            .filter(|i| q.allow(SimTime::from_micros(i * 10)))
            .count();
        assert_eq!(sent, 3);
        assert_eq!(q.counters.sent, 3);
        assert_eq!(q.counters.suppressed, 97);
    }

    #[test]
    fn sustained_drops_get_the_rate() {
        let mut q = limiter(50.0, 2);
        // A drop every millisecond for 10 s: 2 + 50·10 quenches at most.
        let sent = (0..10_000)
            .filter(|i| q.allow(SimTime::from_millis(*i)))
            .count();
        assert!(sent <= 2 + 500, "{sent}");
        assert!(sent >= 500, "{sent}");
    }

    #[test]
    fn unlimited_quenches_every_drop() {
        let mut q = QuenchLimiter::new(SourceQuenchConfig {
            rate: QuenchRate::Unlimited,
            burst: 1,
            size: Bytes(56),
        });
        // 137 drops within one millisecond: a bucket of 1 would have sent one.
        let sent = (0..137)
            .filter(|i| q.allow(SimTime::from_micros(i * 7)))
            .count();
        assert_eq!(sent, 137);
        assert_eq!(q.counters.sent, 137);
        assert_eq!(q.counters.suppressed, 0);
    }

    #[test]
    fn rate_parses_a_number_or_unlimited_only() {
        let c: SourceQuenchConfig = toml::from_str("rate = 100\nburst = 10").unwrap();
        assert_eq!(c.rate, QuenchRate::PerSecond(100.0));
        let c: SourceQuenchConfig = toml::from_str("rate = 12.5").unwrap();
        assert_eq!(c.rate, QuenchRate::PerSecond(12.5));
        let c: SourceQuenchConfig = toml::from_str("rate = \"unlimited\"").unwrap();
        assert_eq!(c.rate, QuenchRate::Unlimited);
        assert!(toml::from_str::<SourceQuenchConfig>("rate = \"infinite\"").is_err());
        assert!(toml::from_str::<SourceQuenchConfig>("rate = 1\nlimit = 2").is_err());
    }

    #[test]
    fn validation_names_the_key() {
        let ok = SourceQuenchConfig {
            rate: QuenchRate::PerSecond(1.0),
            burst: 1,
            size: Bytes(56),
        };
        ok.validate().unwrap();
        let e = |c: SourceQuenchConfig| c.validate().unwrap_err().key;
        assert_eq!(
            e(SourceQuenchConfig {
                rate: QuenchRate::PerSecond(0.0),
                ..ok
            }),
            "rate"
        );
        assert_eq!(e(SourceQuenchConfig { burst: 0, ..ok }), "burst");
        assert_eq!(
            e(SourceQuenchConfig {
                size: Bytes(10),
                ..ok
            }),
            "size"
        );
    }
}

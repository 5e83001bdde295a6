//! What meters do with their verdict: mark, police or shape (RFC 2475 §2.3.3), and the
//! pieces the mechanisms share (codepoints, the shaping timer, the scaled token unit).

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};

pub use crate::dscp::ColourName;
use crate::packet::{Colour, Packet};
use crate::time::{Dur, SimTime};

/// Token units per byte: a rate of `r` bit/s adds exactly `r` units per nanosecond, so
/// token arithmetic is exact in integers (1 byte = 8·10⁹ units).
pub(crate) const UNITS_PER_BYTE: i128 = 8_000_000_000;

/// DSCP written for each colour (RFC 2597 §6 AF codepoints; default AF11/AF12/AF13).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Codepoints {
    /// Codepoint of green (DP0) packets; AF11 = 10 by default.
    #[serde(deserialize_with = "crate::dscp::de_dscp")]
    pub green: u8,
    /// Codepoint of yellow (DP1) packets; AF12 = 12 by default.
    #[serde(deserialize_with = "crate::dscp::de_dscp")]
    pub yellow: u8,
    /// Codepoint of red (DP2) packets; AF13 = 14 by default.
    #[serde(deserialize_with = "crate::dscp::de_dscp")]
    pub red: u8,
}

impl Default for Codepoints {
    fn default() -> Self {
        Codepoints {
            green: 10,
            yellow: 12,
            red: 14,
        }
    }
}

impl Codepoints {
    /// The codepoint of `c`.
    pub fn of(&self, c: Colour) -> u8 {
        match c {
            Colour::Green => self.green,
            Colour::Yellow => self.yellow,
            Colour::Red => self.red,
        }
    }
}

/// Writes a marker's verdict into the packet: colour, DSCP, and `in_profile` (green ⇒ true).
#[inline]
pub fn mark(pkt: &mut Packet, c: Colour, cp: &Codepoints) {
    pkt.colour = c;
    pkt.dscp = cp.of(c);
    pkt.in_profile = c == Colour::Green;
}

/// What a colour meter (srTCM, trTCM, TSW) does with its verdict (RFC 2475 §2.3.3.2–3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MeterAction {
    /// Write colour and DSCP, forward everything.
    #[default]
    Mark,
    /// Mark, and drop red packets with cause `Policed`.
    Police,
}

/// When a shaper releases a held packet (P0 §3.2 "timer-based shaping").
///
/// Written in scenario files as `"exact"`, `"periodic"` (P0's default 15 ms), or a
/// duration (`"15ms"`, a number of seconds) for a periodic timer of that period.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ShapeTimer {
    /// Release at the packet's exact conformance time.
    #[default]
    Exact,
    /// One timer per aggregate ticking at multiples of the period [ns] from time zero;
    /// a held packet leaves at the first tick ≥ its conformance time.
    Periodic(Dur),
}

/// P0's default shaping timeout (§4: "a default shaping timeout of 15 ms").
pub const P0_SHAPING_PERIOD: Dur = Dur::from_millis(15);

impl ShapeTimer {
    /// The release time of a packet that conforms at `t`.
    #[inline]
    pub fn release_at(self, t: SimTime) -> SimTime {
        match self {
            ShapeTimer::Exact => t,
            ShapeTimer::Periodic(p) => {
                let p = p.as_nanos().max(1);
                SimTime::from_nanos(t.as_nanos().div_ceil(p).saturating_mul(p))
            }
        }
    }
}

impl Serialize for ShapeTimer {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ShapeTimer::Exact => s.serialize_str("exact"),
            ShapeTimer::Periodic(d) => d.serialize(s),
        }
    }
}

const TIMER_EXPECTED: &str = "\"exact\", \"periodic\" or a timer period like \"15ms\"";

struct ShapeTimerVisitor;

impl<'de> Visitor<'de> for ShapeTimerVisitor {
    type Value = ShapeTimer;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(TIMER_EXPECTED)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<ShapeTimer, E> {
        match v {
            "exact" => Ok(ShapeTimer::Exact),
            "periodic" => Ok(ShapeTimer::Periodic(P0_SHAPING_PERIOD)),
            _ => crate::units::parse_dur(v)
                .map(ShapeTimer::Periodic)
                .map_err(|e| E::custom(format!("expected {TIMER_EXPECTED}: {e}"))),
        }
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<ShapeTimer, E> {
        if !(v >= 0.0 && v.is_finite()) {
            return Err(E::custom(format!(
                "a timer period must be positive, found {v}"
            )));
        }
        Ok(ShapeTimer::Periodic(Dur::from_secs_f64(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<ShapeTimer, E> {
        self.visit_f64(v as f64)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<ShapeTimer, E> {
        self.visit_f64(v as f64)
    }
}

impl<'de> Deserialize<'de> for ShapeTimer {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ShapeTimerVisitor)
    }
}

/// The default colour of out-of-profile packets in two-colour markers.
pub(crate) fn yellow() -> ColourName {
    ColourName::Yellow
}

impl Codepoints {
    /// Checks that every codepoint fits DSCP's 6 bits; keys are `dscp.<colour>`.
    pub fn validate(&self) -> Result<(), crate::config::ScenarioError> {
        for (k, v) in [
            ("green", self.green),
            ("yellow", self.yellow),
            ("red", self.red),
        ] {
            if v > 63 {
                return Err(crate::config::ScenarioError::new(
                    format!("dscp.{k}"),
                    format!("a DSCP is 6 bits (0–63), found {v}"),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_codepoints_give_back_their_colour_in_the_rfc_table() {
        let t = crate::dscp::DscpTable::rfc();
        let cp = Codepoints::default();
        for c in [Colour::Green, Colour::Yellow, Colour::Red] {
            assert_eq!(t.colour(cp.of(c)), c);
        }
    }

    #[test]
    fn periodic_release_rounds_up_to_the_next_tick() {
        let t = ShapeTimer::Periodic(Dur::from_millis(15));
        assert_eq!(t.release_at(SimTime::ZERO), SimTime::ZERO);
        assert_eq!(
            t.release_at(SimTime::from_millis(1)),
            SimTime::from_millis(15)
        );
        assert_eq!(
            t.release_at(SimTime::from_millis(15)),
            SimTime::from_millis(15)
        );
        assert_eq!(
            t.release_at(SimTime::from_nanos(15_000_001)),
            SimTime::from_millis(30)
        );
        assert_eq!(
            ShapeTimer::Exact.release_at(SimTime::from_nanos(7)),
            SimTime::from_nanos(7)
        );
    }

    #[test]
    fn timer_parses_names_and_periods() {
        #[derive(Deserialize)]
        struct T {
            t: ShapeTimer,
        }
        let p = |s: &str| toml::from_str::<T>(s).map(|t| t.t);
        assert_eq!(p("t = \"exact\"").unwrap(), ShapeTimer::Exact);
        assert_eq!(
            p("t = \"periodic\"").unwrap(),
            ShapeTimer::Periodic(Dur::from_millis(15))
        );
        assert_eq!(
            p("t = \"10ms\"").unwrap(),
            ShapeTimer::Periodic(Dur::from_millis(10))
        );
        assert_eq!(
            p("t = 0.02").unwrap(),
            ShapeTimer::Periodic(Dur::from_millis(20))
        );
        assert!(p("t = \"sometimes\"").is_err());
    }
}

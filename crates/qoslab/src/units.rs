//! Quantities with units in scenario files: rates, durations and byte sizes.
//!
//! Each accepts a number in the base unit (bit/s, seconds, bytes) or a string with a
//! unit: `"10Mbps"`, `"1.5Mb/s"`, `"128kbps"`, `"1Gbps"`, `"2MBps"` (bytes per second);
//! `"10ms"`, `"1.5s"`, `"200us"`, `"5ns"`; `"64KB"`, `"1MiB"`, `"1500B"`. A lower-case
//! `b` is a bit, an upper-case `B` a byte, in rates as in sizes. Decimal prefixes are
//! powers of ten (k = 10³); `Ki`/`Mi` are powers of two.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

use crate::time::{Dur, Rate};

fn split_number(s: &str) -> Option<(f64, &str)> {
    let s = s.trim();
    let end = s
        .find(|c: char| {
            !(c.is_ascii_digit() || c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+')
        })
        .unwrap_or(s.len());
    // "1e3" is a number but "1ms"'s 'm' is a unit: retry without a trailing exponent.
    let (num, unit) = s.split_at(end);
    let v: f64 = num.parse().ok()?;
    Some((v, unit.trim()))
}

/// The multiplier of a rate unit to bit/s, or `None` if it is not one.
///
/// `b` is a bit and `B` a byte, as in sizes: `bps`, `b/s`, `bit/s` are bits per second,
/// `Bps`, `B/s` bytes per second (×8). Prefixes are decimal: `k`/`K` 10³, `M`/`m` 10⁶,
/// `G`/`g` 10⁹ (a milli-bit per second is not a rate anyone means).
fn rate_unit(unit: &str) -> Option<f64> {
    let (prefix, base) = match unit.char_indices().nth(1) {
        Some((i, _)) if matches!(&unit[..1], "k" | "K" | "m" | "M" | "g" | "G") => unit.split_at(i),
        _ => ("", unit),
    };
    let scale = match prefix {
        "" => 1.0,
        "k" | "K" => 1e3,
        "m" | "M" => 1e6,
        _ => 1e9,
    };
    let bits = match base {
        "" if prefix.is_empty() => 1.0,
        "bps" | "b/s" | "bit/s" => 1.0,
        "Bps" | "B/s" | "byte/s" => 8.0,
        _ => return None,
    };
    Some(scale * bits)
}

/// Parses a rate such as `"10Mbps"` (bit/s) or `"2MBps"` (bytes/s) into bit/s.
pub fn parse_rate(s: &str) -> Result<Rate, String> {
    let (v, unit) =
        split_number(s).ok_or_else(|| format!("expected a rate like \"10Mbps\", found {s:?}"))?;
    let mult = rate_unit(unit).ok_or_else(|| {
        format!(
            "unknown rate unit {unit:?} in {s:?} (bits per second: bps, kbps, Mbps, Gbps; \
             bytes per second: Bps, kBps, MBps, GBps)"
        )
    })?;
    let bps = v * mult;
    rate_from_f64(bps).ok_or_else(|| {
        if bps.is_finite() && bps > 0.0 {
            format!("expected a rate from 1 bit/s to below 1 Pbit/s (1e15 bit/s), found {s:?}")
        } else {
            format!("a rate must be positive and finite, found {s:?}")
        }
    })
}

fn rate_from_f64(bps: f64) -> Option<Rate> {
    ((1.0..1e15).contains(&bps)).then(|| Rate::from_bps(bps.round() as u64))
}

/// Parses a duration such as `"10ms"` (a bare number is seconds).
pub fn parse_dur(s: &str) -> Result<Dur, String> {
    let (v, unit) =
        split_number(s).ok_or_else(|| format!("expected a duration like \"10ms\", found {s:?}"))?;
    let mult = match unit {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "ns" => 1e-9,
        "min" => 60.0,
        _ => {
            return Err(format!(
                "unknown time unit {unit:?} in {s:?} (use s, ms, us or ns)"
            ))
        }
    };
    let secs = v * mult;
    dur_from_f64(secs).ok_or_else(|| {
        if secs.is_finite() && secs > 0.0 {
            format!("expected a duration below 1e9 s (about 31 years), found {s:?}")
        } else {
            format!("a duration must be zero or positive and finite, found {s:?}")
        }
    })
}

fn dur_from_f64(secs: f64) -> Option<Dur> {
    ((0.0..1e9).contains(&secs)).then(|| Dur::from_secs_f64(secs))
}

/// Parses a size such as `"64KB"` into bytes (a bare number is bytes).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let (v, unit) =
        split_number(s).ok_or_else(|| format!("expected a size like \"64KB\", found {s:?}"))?;
    let mult = match unit {
        "" | "B" => 1.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => {
            return Err(format!(
                "unknown size unit {unit:?} in {s:?} (use B, KB, MB, KiB or MiB)"
            ))
        }
    };
    let b = v * mult;
    if (0.0..1e18).contains(&b) {
        Ok(b.round() as u64)
    } else {
        Err(if b.is_finite() && b > 0.0 {
            format!("expected a size below 1e18 bytes, found {s:?}")
        } else {
            format!("a size must be zero or positive and finite, found {s:?}")
        })
    }
}

/// Reads a byte count (number or string with a unit) that must fit 32 bits, for
/// `#[serde(deserialize_with)]` on `u32` size fields.
pub fn bytes_u32<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    let b = Bytes::deserialize(d)?;
    u32::try_from(b.0).map_err(|_| {
        de::Error::custom(format!(
            "expected a size of at most 4294967295 bytes, found {}",
            b.0
        ))
    })
}

struct UnitVisitor<T> {
    what: &'static str,
    parse: fn(&str) -> Result<T, String>,
}

impl<'de, T> Visitor<'de> for UnitVisitor<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.what)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        (self.parse)(v).map_err(E::custom)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
        if v < 0.0 || !v.is_finite() {
            return Err(E::custom(format!("expected {}, found {v}", self.what)));
        }
        (self.parse)(&format!("{v}")).map_err(E::custom)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        if v < 0 {
            return Err(E::custom(format!("expected {}, found {v}", self.what)));
        }
        (self.parse)(&v.to_string()).map_err(E::custom)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        (self.parse)(&v.to_string()).map_err(E::custom)
    }
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UnitVisitor {
            what: "a positive rate: bit/s as a number, or a string like \"10Mbps\"",
            parse: parse_rate,
        })
    }
}

/// Reads a rate that may be zero (a meter's committed rate: CIR = 0 is a legitimate
/// profile, everything beyond the burst out of profile); serde `deserialize_with`.
pub fn de_rate_or_zero<'de, D: Deserializer<'de>>(d: D) -> Result<Rate, D::Error> {
    fn parse(s: &str) -> Result<Rate, String> {
        match split_number(s) {
            Some((v, unit)) if v == 0.0 && (unit.is_empty() || rate_unit(unit).is_some()) => {
                Ok(Rate::from_bps(0))
            }
            _ => parse_rate(s),
        }
    }
    d.deserialize_any(UnitVisitor {
        what: "a rate ≥ 0: bit/s as a number, or a string like \"10Mbps\"",
        parse,
    })
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UnitVisitor {
            what: "a duration: seconds as a number, or a string like \"10ms\"",
            parse: parse_dur,
        })
    }
}

/// A byte count read from a number or a string with a unit (`"64KB"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Bytes(pub u64);

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UnitVisitor {
            what: "a size: bytes as a number, or a string like \"64KB\"",
            parse: |s| parse_bytes(s).map(Bytes),
        })
    }
}

impl serde::Serialize for Rate {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.bps())
    }
}

impl serde::Serialize for Dur {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.as_secs_f64())
    }
}

impl serde::Serialize for Bytes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("10Mbps"), Ok(Rate::from_mbps(10)));
        assert_eq!(parse_rate("1.5Mb/s"), Ok(Rate::from_kbps(1500)));
        assert_eq!(parse_rate("128kbps"), Ok(Rate::from_kbps(128)));
        assert_eq!(parse_rate("8.89kbps"), Ok(Rate::from_bps(8890)));
        assert_eq!(parse_rate("1e6"), Ok(Rate::from_mbps(1)));
        assert!(parse_rate("-1Mbps").unwrap_err().contains("positive"));
        assert!(parse_rate("0").unwrap_err().contains("positive"));
        assert!(parse_rate("10 furlongs").unwrap_err().contains("unit"));
        // Bytes per second are bytes: 2 MB/s is 16 Mbit/s.
        assert_eq!(parse_rate("2MBps"), Ok(Rate::from_mbps(16)));
        assert_eq!(parse_rate("1kB/s"), Ok(Rate::from_kbps(8)));
        assert_eq!(parse_rate("125Bps"), Ok(Rate::from_kbps(1)));
        assert_eq!(parse_rate("10mbps"), Ok(Rate::from_mbps(10)));
        assert_eq!(parse_rate("1Mbit/s"), Ok(Rate::from_mbps(1)));
        assert!(parse_rate("2MBPS").unwrap_err().contains("MBps"));
        assert!(parse_rate("2M").unwrap_err().contains("unit"));
        assert!(parse_rate("1e16").unwrap_err().contains("below 1 Pbit/s"));
        assert!(parse_dur("1e10").unwrap_err().contains("below 1e9 s"));
        assert!(parse_bytes("1e19")
            .unwrap_err()
            .contains("below 1e18 bytes"));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_dur("10ms"), Ok(Dur::from_millis(10)));
        assert_eq!(parse_dur("1.5"), Ok(Dur::from_millis(1500)));
        assert_eq!(parse_dur("200us"), Ok(Dur::from_micros(200)));
        assert_eq!(parse_dur("0.5ms"), Ok(Dur::from_micros(500)));
        assert!(parse_dur("-1s").is_err());
        assert!(parse_dur("3 fortnights").unwrap_err().contains("unit"));
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_bytes("64KB"), Ok(64_000));
        assert_eq!(parse_bytes("1MiB"), Ok(1 << 20));
        assert_eq!(parse_bytes("1500"), Ok(1500));
    }

    #[test]
    fn serde_accepts_numbers_and_strings() {
        #[derive(Deserialize)]
        struct T {
            r: Rate,
            d: Dur,
            b: Bytes,
        }
        let t: T = toml::from_str("r = \"2Mbps\"\nd = 0.25\nb = \"2KiB\"").unwrap();
        assert_eq!(
            (t.r, t.d, t.b),
            (Rate::from_mbps(2), Dur::from_millis(250), Bytes(2048))
        );
        let t: T = toml::from_str("r = 5000\nd = \"1s\"\nb = 10").unwrap();
        assert_eq!(t.r, Rate::from_bps(5000));
        let e = toml::from_str::<T>("r = -5\nd = 1\nb = 1")
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("positive rate"), "{e}");
    }
}

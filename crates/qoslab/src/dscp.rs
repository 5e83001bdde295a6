//! DSCP codepoints, PHB names, and the per-node table that maps the DSCP on the wire to
//! a (class, drop precedence) pair.
//!
//! Queues (RIO-C/D, WRED) and colour-aware meters act on a packet's drop precedence,
//! and the drop precedence is what the node's table gives for the packet's DSCP: the
//! node re-derives [`Packet::colour`](crate::packet::Packet) from the DSCP before every
//! conditioner stage and before every queue. Defaults ([`DscpTable::rfc`]):
//!
//! | codepoints | class | drop precedence |
//! |---|---|---|
//! | AFx1 / AFx2 / AFx3 (RFC 2597 §6: 8x + 2y) | `AFx` | green / yellow / red |
//! | EF = 46 (RFC 3246) | `EF` | green |
//! | CS1–CS7 = 8n (RFC 2474 §4.2.2) | `CSn` | green |
//! | 0 (default, CS0) and every other codepoint (RFC 2474 §4.1) | `BE` | green |
//!
//! PHB names (`"EF"`, `"AF11"` … `"AF43"`, `"CS0"` … `"CS7"`, `"BE"`/`"DF"`) are accepted
//! wherever a scenario file takes a DSCP.
//!
//! It sits below `queue/` (whose class scheduler reads the table) and `cond/` (whose
//! markers and classifiers write and read codepoints), so neither imports the other.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};

use crate::config::ScenarioError;
use crate::packet::Colour;

/// A colour name in a scenario file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ColourName {
    /// DP0.
    Green,
    /// DP1.
    Yellow,
    /// DP2.
    Red,
}

impl From<ColourName> for Colour {
    fn from(c: ColourName) -> Colour {
        match c {
            ColourName::Green => Colour::Green,
            ColourName::Yellow => Colour::Yellow,
            ColourName::Red => Colour::Red,
        }
    }
}

/// Expedited Forwarding (RFC 3246).
pub const EF: u8 = 46;

/// The codepoint of a PHB name (case-insensitive): `BE`/`DF`/`CS0` = 0, `CSn` = 8n,
/// `AFxy` = 8x + 2y (x in 1..=4, y in 1..=3), `EF` = 46.
pub fn phb_codepoint(name: &str) -> Option<u8> {
    let n = name.to_ascii_uppercase();
    let b = n.as_bytes();
    match n.as_str() {
        "BE" | "DF" => Some(0),
        "EF" => Some(EF),
        _ if b.len() == 3 && &n[..2] == "CS" && (b'0'..=b'7').contains(&b[2]) => {
            Some(8 * (b[2] - b'0'))
        }
        _ if b.len() == 4
            && &n[..2] == "AF"
            && (b'1'..=b'4').contains(&b[2])
            && (b'1'..=b'3').contains(&b[3]) =>
        {
            Some(8 * (b[2] - b'0') + 2 * (b[3] - b'0'))
        }
        _ => None,
    }
}

const DSCP_EXPECTED: &str =
    "a DSCP (0–63) or a PHB name (\"BE\", \"EF\", \"AF11\" … \"AF43\", \"CS0\" … \"CS7\")";

struct DscpVisitor;

impl Visitor<'_> for DscpVisitor {
    type Value = u8;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(DSCP_EXPECTED)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<u8, E> {
        phb_codepoint(v).ok_or_else(|| E::custom(format!("expected {DSCP_EXPECTED}, found {v:?}")))
    }
    // Numbers up to 255 pass so `validate` can name the key of an out-of-range value.
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u8, E> {
        u8::try_from(v).map_err(|_| E::custom(format!("expected {DSCP_EXPECTED}, found {v}")))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u8, E> {
        u8::try_from(v).map_err(|_| E::custom(format!("expected {DSCP_EXPECTED}, found {v}")))
    }
}

/// Reads a DSCP given as a number or a PHB name (serde `deserialize_with`).
pub fn de_dscp<'de, D: Deserializer<'de>>(d: D) -> Result<u8, D::Error> {
    d.deserialize_any(DscpVisitor)
}

/// Reads an optional DSCP given as a number or a PHB name (serde `deserialize_with`).
pub fn de_opt_dscp<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u8>, D::Error> {
    de_dscp(d).map(Some)
}

/// Checks that `v` fits DSCP's 6 bits; the error names `key`.
pub fn check_dscp(key: &str, v: u8) -> Result<(), ScenarioError> {
    if v > 63 {
        return Err(ScenarioError::new(
            key,
            format!("a DSCP is 6 bits (0–63), found {v}"),
        ));
    }
    Ok(())
}

/// A set of DSCPs, written as a list of numbers and PHB names (`["EF", 40]`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DscpSet(pub u64);

impl DscpSet {
    /// True if `dscp` is in the set.
    #[inline]
    pub fn contains(self, dscp: u8) -> bool {
        dscp < 64 && self.0 & (1u64 << dscp) != 0
    }
    /// The codepoints in the set, ascending.
    pub fn iter(self) -> impl Iterator<Item = u8> {
        (0..64u8).filter(move |&d| self.contains(d))
    }
}

impl Serialize for DscpSet {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for DscpSet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct One(#[serde(deserialize_with = "de_dscp")] u8);
        let v: Vec<One> = Vec::deserialize(d)?;
        let mut set = 0u64;
        for One(x) in v {
            if x > 63 {
                return Err(de::Error::custom(format!(
                    "a DSCP is 6 bits (0–63), found {x}"
                )));
            }
            set |= 1u64 << x;
        }
        Ok(DscpSet(set))
    }
}

/// One override of a node's DSCP table, as written in a scenario file
/// (`dscp_map = [{ dscp = "AF12", colour = "red" }]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DscpMapEntry {
    /// The codepoint this entry maps.
    #[serde(deserialize_with = "de_dscp")]
    pub dscp: u8,
    /// Its class name (default: the RFC class, e.g. `"AF1"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// Its drop precedence (default: the RFC one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub colour: Option<ColourName>,
}

/// Index of colour "none" in per-colour drop counts: a packet whose codepoint carries
/// no drop precedence (best effort, EF, class selectors).
pub const NO_PRECEDENCE: usize = 3;

/// The drop precedence of each of the 64 codepoints: what queues and colour-aware
/// meters read (copied into every conditioner chain of a node).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DscpColours(pub [Colour; 64]);

impl Default for DscpColours {
    /// The RFC defaults (see the module doc). Every conditioner chain starts with one,
    /// so it is computed without the class names (formatting those for each chain was
    /// a quarter of a small run's start-up).
    fn default() -> Self {
        DscpColours(std::array::from_fn(|d| rfc_colour(d as u8)))
    }
}

impl DscpColours {
    /// The drop precedence of `dscp` (its low 6 bits).
    #[inline]
    pub fn of(&self, dscp: u8) -> Colour {
        self.0[(dscp & 63) as usize]
    }
}

/// A node's map from DSCP to (class, drop precedence).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DscpTable {
    /// Drop precedence per codepoint.
    pub colours: DscpColours,
    /// Class name per codepoint.
    pub classes: Vec<String>,
    /// The codepoints that carry a drop precedence: the AF codepoints and any the
    /// scenario gave a colour. Drops of the others (best effort, EF, class selectors)
    /// are counted as colour "none", never as green.
    pub precedence: DscpSet,
}

impl Default for DscpTable {
    fn default() -> Self {
        DscpTable::rfc()
    }
}

/// True if `d` is an AF codepoint (RFC 2597 §6: 8x + 2y, x in 1..=4, y in 1..=3).
fn is_af(d: u8) -> bool {
    (1..=4).contains(&(d / 8)) && matches!(d % 8, 2 | 4 | 6)
}

/// The RFC drop precedence of a codepoint: AFxy's y, green for every other.
fn rfc_colour(d: u8) -> Colour {
    if is_af(d) {
        Colour::from_index(((d % 8) / 2 - 1) as usize)
    } else {
        Colour::Green
    }
}

/// The RFC class and drop precedence of a codepoint (see the module doc).
fn rfc_entry(d: u8) -> (String, Colour) {
    let x = d / 8;
    let class = if d == EF {
        "EF".into()
    } else if is_af(d) {
        format!("AF{x}")
    } else if d != 0 && d.is_multiple_of(8) {
        format!("CS{x}")
    } else {
        "BE".into()
    };
    (class, rfc_colour(d))
}

impl DscpTable {
    /// The standard table: RFC 2597 AF, RFC 3246 EF, RFC 2474 class selectors, BE.
    pub fn rfc() -> Self {
        let mut colours = [Colour::Green; 64];
        let mut classes = Vec::with_capacity(64);
        let mut precedence = 0u64;
        for d in 0..64u8 {
            let (c, dp) = rfc_entry(d);
            colours[d as usize] = dp;
            classes.push(c);
            if is_af(d) {
                precedence |= 1u64 << d;
            }
        }
        DscpTable {
            colours: DscpColours(colours),
            classes,
            precedence: DscpSet(precedence),
        }
    }

    /// The RFC table with `entries` applied in order; errors name `[i].dscp` / `[i].class`.
    pub fn with_overrides(entries: &[DscpMapEntry]) -> Result<Self, ScenarioError> {
        let mut t = DscpTable::rfc();
        for (i, e) in entries.iter().enumerate() {
            check_dscp(&format!("[{i}].dscp"), e.dscp)?;
            if let Some(c) = &e.class {
                if c.is_empty() {
                    return Err(ScenarioError::new(
                        format!("[{i}].class"),
                        "expected a non-empty class name",
                    ));
                }
                t.classes[e.dscp as usize] = c.clone();
            }
            if let Some(c) = e.colour {
                t.colours.0[e.dscp as usize] = c.into();
                t.precedence.0 |= 1u64 << e.dscp;
            }
        }
        Ok(t)
    }

    /// The drop precedence of `dscp`.
    #[inline]
    pub fn colour(&self, dscp: u8) -> Colour {
        self.colours.of(dscp)
    }

    /// The index of `dscp`'s drop precedence in a per-colour count: green 0, yellow 1,
    /// red 2, and 3 ("none") for a codepoint without one (see
    /// [`DscpTable::precedence`]).
    #[inline]
    pub fn drop_colour_index(&self, dscp: u8) -> usize {
        if self.precedence.contains(dscp & 63) {
            self.colour(dscp).index()
        } else {
            NO_PRECEDENCE
        }
    }

    /// The class name of `dscp`.
    pub fn class(&self, dscp: u8) -> &str {
        &self.classes[(dscp & 63) as usize]
    }

    /// Every codepoint whose class is `name` (case-insensitive); empty if none.
    pub fn class_set(&self, name: &str) -> DscpSet {
        let mut s = 0u64;
        for (d, c) in self.classes.iter().enumerate() {
            if c.eq_ignore_ascii_case(name) {
                s |= 1u64 << d;
            }
        }
        DscpSet(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phb_names_give_the_rfc_codepoints() {
        // RFC 2597 §6 table, RFC 3246 §2.5, RFC 2474 §4.2.2.
        let want = [
            ("AF11", 10),
            ("AF12", 12),
            ("AF13", 14),
            ("AF21", 18),
            ("af22", 20),
            ("AF23", 22),
            ("AF31", 26),
            ("AF32", 28),
            ("AF33", 30),
            ("AF41", 34),
            ("AF42", 36),
            ("AF43", 38),
            ("EF", 46),
            ("be", 0),
            ("DF", 0),
            ("CS0", 0),
            ("CS1", 8),
            ("CS5", 40),
            ("CS7", 56),
        ];
        for (n, v) in want {
            assert_eq!(phb_codepoint(n), Some(v), "{n}");
        }
        for bad in ["AF14", "AF51", "AF10", "CS8", "E F", "", "AF1", "CS"] {
            assert_eq!(phb_codepoint(bad), None, "{bad}");
        }
    }

    #[test]
    fn default_colours_are_the_rfc_tables() {
        // Chains start from `DscpColours::default()`, nodes from the table: one map.
        assert_eq!(DscpColours::default(), DscpTable::rfc().colours);
        assert_eq!(DscpColours::default().of(12), Colour::Yellow);
    }

    #[test]
    fn rfc_table_maps_classes_and_drop_precedences() {
        let t = DscpTable::rfc();
        for x in 1..=4u8 {
            for (y, c) in [(1u8, Colour::Green), (2, Colour::Yellow), (3, Colour::Red)] {
                let d = 8 * x + 2 * y;
                assert_eq!((t.class(d), t.colour(d)), (format!("AF{x}").as_str(), c));
            }
        }
        assert_eq!((t.class(46), t.colour(46)), ("EF", Colour::Green));
        assert_eq!((t.class(0), t.colour(0)), ("BE", Colour::Green));
        assert_eq!((t.class(40), t.colour(40)), ("CS5", Colour::Green));
        // An unassigned codepoint gets the default PHB (RFC 2474 §4.1).
        assert_eq!((t.class(1), t.colour(1)), ("BE", Colour::Green));
        assert_eq!((t.class(11), t.colour(11)), ("BE", Colour::Green));
        assert_eq!(
            t.class_set("af1").iter().collect::<Vec<_>>(),
            vec![10, 12, 14]
        );
        // Only AF codepoints carry a drop precedence: best effort, EF and the class
        // selectors count as colour "none", never as green.
        assert_eq!(t.precedence.iter().count(), 12);
        for d in [0u8, 1, 8, 11, 40, 46] {
            assert_eq!(t.drop_colour_index(d), NO_PRECEDENCE, "{d}");
        }
        for (d, k) in [(10u8, 0), (20, 1), (38, 2)] {
            assert_eq!(t.drop_colour_index(d), k, "{d}");
        }
        // The markers' default codepoints (AF11/12/13) give back the colour they were
        // marked (cond::action's tests check it through `Codepoints` itself).
        for (dscp, c) in [(10, Colour::Green), (12, Colour::Yellow), (14, Colour::Red)] {
            assert_eq!(t.colour(dscp), c);
        }
    }

    #[test]
    fn overrides_change_one_entry_and_errors_name_the_key() {
        let e: Vec<DscpMapEntry> = toml::from_str::<toml::Table>(
            r#"m = [{ dscp = "AF12", colour = "red" }, { dscp = 46, class = "voice" }]"#,
        )
        .unwrap()["m"]
            .clone()
            .try_into()
            .unwrap();
        let t = DscpTable::with_overrides(&e).unwrap();
        assert_eq!(t.colour(12), Colour::Red);
        assert_eq!(t.class(12), "AF1");
        assert_eq!(t.class(46), "voice");
        assert_eq!(t.colour(10), Colour::Green);
        // A colour given to a codepoint without one makes its drops that colour; a
        // class alone does not.
        assert_eq!(t.drop_colour_index(12), 2);
        assert_eq!(t.drop_colour_index(46), NO_PRECEDENCE);
        let g: Vec<DscpMapEntry> = vec![DscpMapEntry {
            dscp: 0,
            class: None,
            colour: Some(ColourName::Green),
        }];
        assert_eq!(
            DscpTable::with_overrides(&g).unwrap().drop_colour_index(0),
            0
        );
        let bad = [DscpMapEntry {
            dscp: 64,
            class: None,
            colour: None,
        }];
        assert_eq!(DscpTable::with_overrides(&bad).unwrap_err().key, "[0].dscp");
    }

    #[test]
    fn sets_and_single_codepoints_parse_names_and_numbers() {
        #[derive(Deserialize, Debug)]
        struct T {
            #[serde(deserialize_with = "de_dscp")]
            d: u8,
            s: DscpSet,
        }
        let t: T = toml::from_str("d = \"AF41\"\ns = [\"EF\", 8, \"AF11\"]").unwrap();
        assert_eq!(t.d, 34);
        assert_eq!(t.s.iter().collect::<Vec<_>>(), vec![8, 10, 46]);
        let e = toml::from_str::<T>("d = \"XF\"\ns = []")
            .unwrap_err()
            .to_string();
        assert!(e.contains("PHB name"), "{e}");
        let e = toml::from_str::<T>("d = 1\ns = [64]")
            .unwrap_err()
            .to_string();
        assert!(e.contains("0–63"), "{e}");
    }
}

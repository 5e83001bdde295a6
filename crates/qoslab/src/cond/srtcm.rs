//! Single Rate Three Colour Marker (RFC 2697).
//!
//! Two buckets share one rate CIR: the committed bucket C (depth CBS) fills first and
//! its overflow goes to the excess bucket E (depth EBS) (RFC 2697 §3). Both start full.
//! Tokens are exact integer units, updated continuously rather than once per 1/CIR s:
//! the two agree on every whole byte.

use serde::{Deserialize, Serialize};

use super::action::{mark, Codepoints, MeterAction};
use super::check::positive_rate;
use super::token_bucket::Bucket;
use super::{Action, Conditioner};
use crate::config::ScenarioError;
use crate::packet::{Colour, Packet};
use crate::queue::DropCause;
use crate::time::{Rate, SimTime};
use crate::units::Bytes;

/// Parameters of an srTCM (RFC 2697 §2).
#[derive(Clone, Debug, PartialEq)]
pub struct SrtcmSettings {
    /// Committed Information Rate [bit/s].
    pub cir: Rate,
    /// Committed Burst Size [bytes].
    pub cbs: u64,
    /// Excess Burst Size [bytes].
    pub ebs: u64,
    /// Colour-aware mode (RFC 2697 §3): the packet's colour on arrival limits its result.
    pub colour_aware: bool,
    /// Mark only, or also drop red.
    pub action: MeterAction,
    /// DSCP per colour.
    pub codepoints: Codepoints,
}

/// An srTCM: config plus the two buckets.
#[derive(Clone, Debug)]
pub struct Srtcm {
    cfg: SrtcmSettings,
    c: Bucket,
    e: Bucket,
}

impl Srtcm {
    /// A marker with both buckets full (RFC 2697 §3).
    pub fn new(cfg: SrtcmSettings) -> Self {
        let c = Bucket::full(cfg.cir, cfg.cbs);
        let e = Bucket::full(cfg.cir, cfg.ebs);
        Srtcm { cfg, c, e }
    }

    /// The colour RFC 2697 §3 gives a packet of `size` bytes arriving at `now`
    /// pre-coloured `pre` (ignored when colour-blind); updates the buckets.
    pub fn meter(&mut self, now: SimTime, size: u32, pre: Colour) -> Colour {
        // Tokens earned go to C; what C cannot hold goes to E (RFC 2697 §3).
        let overflow = self.c.refill(now);
        self.e.add_units(overflow);
        let pre = if self.cfg.colour_aware {
            pre
        } else {
            Colour::Green
        };
        if pre == Colour::Green && self.c.has(size) {
            self.c.take(size);
            Colour::Green
        } else if pre != Colour::Red && self.e.has(size) {
            self.e.take(size);
            Colour::Yellow
        } else {
            Colour::Red
        }
    }
}

impl Conditioner for Srtcm {
    fn condition(&mut self, now: SimTime, pkt: &mut Packet) -> Action {
        let c = self.meter(now, pkt.size, pkt.colour);
        mark(pkt, c, &self.cfg.codepoints);
        if c == Colour::Red && self.cfg.action == MeterAction::Police {
            Action::Drop(DropCause::Policed)
        } else {
            Action::Pass
        }
    }
}

/// srTCM's keys in a scenario (`kind = "srtcm"`, RFC 2697).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SrtcmConfig {
    /// Committed Information Rate.
    pub cir: Rate,
    /// Committed Burst Size.
    pub cbs: Bytes,
    /// Excess Burst Size.
    pub ebs: Bytes,
    /// Colour-aware mode (default colour-blind).
    #[serde(default)]
    pub colour_aware: bool,
    /// `mark` (default) or `police` (drop red).
    #[serde(default)]
    pub action: MeterAction,
    /// DSCP per colour.
    #[serde(default)]
    pub dscp: Codepoints,
}

impl SrtcmConfig {
    /// Checks the rate, that not both bursts are zero, and the codepoints.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        positive_rate("cir", self.cir)?;
        if self.cbs.0 == 0 && self.ebs.0 == 0 {
            return Err(ScenarioError::new(
                "cbs",
                "CBS and EBS cannot both be zero (RFC 2697 §2)",
            ));
        }
        self.dscp.validate()
    }

    /// The mechanism's settings; call [`SrtcmConfig::validate`] first.
    pub fn settings(&self) -> SrtcmSettings {
        SrtcmSettings {
            cir: self.cir,
            cbs: self.cbs.0,
            ebs: self.ebs.0,
            colour_aware: self.colour_aware,
            action: self.action,
            codepoints: self.dscp,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Colour::{Green as G, Red as R, Yellow as Y};

    fn marker(aware: bool) -> Srtcm {
        // CIR = 8 kb/s = 1 byte per ms, CBS = 1000 B, EBS = 2000 B; 500-byte packets.
        Srtcm::new(SrtcmSettings {
            cir: Rate::from_kbps(8),
            cbs: 1000,
            ebs: 2000,
            colour_aware: aware,
            action: MeterAction::Mark,
            codepoints: Codepoints::default(),
        })
    }

    #[test]
    fn colour_blind_matches_rfc2697_by_hand() {
        // RFC 2697 §3, colour-blind: green if Tc ≥ B (Tc −= B); else yellow if Te ≥ B
        // (Te −= B); else red.   Tc, Te start full at 1000, 2000.
        //  t[ms]  Tc before   Te before   colour   Tc after  Te after
        //   0     1000        2000        G        500       2000
        //   0      500        2000        G          0       2000
        //   0        0        2000        Y          0       1500
        //   0        0        1500        Y          0       1000
        //   0        0        1000        Y          0        500
        //   0        0         500        Y          0          0
        //   0        0           0        R          0          0
        //  250     250           0        R        250          0
        //  500     500           0        G          0          0
        // 2500    2000 earned: Tc 0→1000, overflow 1000 → Te 1000
        //         1000        1000        G        500       1000
        // 2500     500        1000        G          0       1000
        // 2500       0        1000        Y          0        500
        // 2600     100         500        Y        100          0
        // 2600     100           0        R        100          0
        let mut m = marker(false);
        let seq = [
            (0, G),
            (0, G),
            (0, Y),
            (0, Y),
            (0, Y),
            (0, Y),
            (0, R),
            (250, R),
            (500, G),
            (2500, G),
            (2500, G),
            (2500, Y),
            (2600, Y),
            (2600, R),
        ];
        for (i, &(ms, want)) in seq.iter().enumerate() {
            // Pre-colour red: colour-blind mode must ignore it.
            let got = m.meter(SimTime::from_millis(ms), 500, R);
            assert_eq!(got, want, "packet {i} at {ms} ms");
        }
    }

    #[test]
    fn colour_aware_matches_rfc2697_by_hand() {
        // RFC 2697 §3, colour-aware: green if pre = G and Tc ≥ B; else yellow if
        // pre ∈ {G, Y} and Te ≥ B; else red.
        //  t[ms] pre  Tc    Te     colour  Tc   Te
        //   0    Y    1000  2000   Y       1000 1500   (yellow never uses Tc)
        //   0    R    1000  1500   R       1000 1500   (red stays red)
        //   0    G    1000  1500   G        500 1500
        //   0    G     500  1500   G          0 1500
        //   0    G       0  1500   Y          0 1000
        //   0    Y       0  1000   Y          0  500
        //   0    Y       0   500   Y          0    0
        //   0    G       0     0   R          0    0
        //  600   Y     600     0   R        600    0   (Tc has tokens, but Y may not use them)
        //  600   G     600     0   G        100    0
        let mut m = marker(true);
        let seq = [
            (0, Y, Y),
            (0, R, R),
            (0, G, G),
            (0, G, G),
            (0, G, Y),
            (0, Y, Y),
            (0, Y, Y),
            (0, G, R),
            (600, Y, R),
            (600, G, G),
        ];
        for (i, &(ms, pre, want)) in seq.iter().enumerate() {
            let mut p = Packet {
                size: 500,
                colour: pre,
                ..Default::default()
            };
            m.condition(SimTime::from_millis(ms), &mut p);
            assert_eq!(p.colour, want, "packet {i} at {ms} ms");
            assert_eq!(p.dscp, Codepoints::default().of(want));
            assert_eq!(p.in_profile, want == G);
        }
    }

    #[test]
    fn police_drops_red_only() {
        let mut m = marker(false);
        m.cfg.action = MeterAction::Police;
        let mut p = Packet {
            size: 1500,
            ..Default::default()
        };
        // 1500 B > CBS: never green; Te = 2000 → yellow once, then red (dropped).
        assert_eq!(m.condition(SimTime::ZERO, &mut p), Action::Pass);
        assert_eq!(p.colour, Y);
        assert_eq!(
            m.condition(SimTime::ZERO, &mut p),
            Action::Drop(DropCause::Policed)
        );
    }
}

//! Two Rate Three Colour Marker (RFC 2698).
//!
//! The peak bucket P (rate PIR, depth PBS) and the committed bucket C (rate CIR, depth
//! CBS) fill independently and start full (RFC 2698 §3). Tokens are exact integer units.

use serde::{Deserialize, Serialize};

use super::action::{mark, Codepoints, MeterAction};
use super::check::{check_pir, positive_rate, positive_size};
use super::token_bucket::Bucket;
use super::{Action, Conditioner};
use crate::config::ScenarioError;
use crate::drop::DropCause;
use crate::packet::{Colour, Packet};
use crate::time::{Rate, SimTime};
use crate::units::Bytes;

/// Parameters of a trTCM (RFC 2698 §2).
#[derive(Clone, Debug, PartialEq)]
pub struct TrtcmSettings {
    /// Committed Information Rate [bit/s].
    pub cir: Rate,
    /// Committed Burst Size [bytes].
    pub cbs: u64,
    /// Peak Information Rate [bit/s] (≥ CIR).
    pub pir: Rate,
    /// Peak Burst Size [bytes].
    pub pbs: u64,
    /// Colour-aware mode (RFC 2698 §3).
    pub colour_aware: bool,
    /// Mark only, or also drop red.
    pub action: MeterAction,
    /// DSCP per colour.
    pub codepoints: Codepoints,
}

/// A trTCM: config plus the two buckets.
#[derive(Clone, Debug)]
pub struct Trtcm {
    cfg: TrtcmSettings,
    p: Bucket,
    c: Bucket,
}

impl Trtcm {
    /// A marker with both buckets full (RFC 2698 §3).
    pub fn new(cfg: TrtcmSettings) -> Self {
        let p = Bucket::full(cfg.pir, cfg.pbs);
        let c = Bucket::full(cfg.cir, cfg.cbs);
        Trtcm { cfg, p, c }
    }

    /// The colour RFC 2698 §3 gives a packet of `size` bytes arriving at `now`
    /// pre-coloured `pre` (ignored when colour-blind); updates the buckets.
    pub fn meter(&mut self, now: SimTime, size: u32, pre: Colour) -> Colour {
        self.p.refill(now);
        self.c.refill(now);
        let pre = if self.cfg.colour_aware {
            pre
        } else {
            Colour::Green
        };
        if pre == Colour::Red || !self.p.has(size) {
            Colour::Red
        } else if pre == Colour::Yellow || !self.c.has(size) {
            self.p.take(size);
            Colour::Yellow
        } else {
            self.p.take(size);
            self.c.take(size);
            Colour::Green
        }
    }
}

impl Conditioner for Trtcm {
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

/// trTCM's keys in a scenario (`kind = "trtcm"`, RFC 2698).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrtcmConfig {
    /// Committed Information Rate.
    #[serde(deserialize_with = "crate::units::de_rate_or_zero")]
    pub cir: Rate,
    /// Committed Burst Size.
    pub cbs: Bytes,
    /// Peak Information Rate (≥ CIR).
    pub pir: Rate,
    /// Peak Burst Size.
    pub pbs: Bytes,
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

impl TrtcmConfig {
    /// Checks rates (PIR ≥ CIR, RFC 2698 §2), bursts and codepoints.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        positive_rate("pir", self.pir)?;
        check_pir(self.cir, self.pir, "RFC 2698 §2")?;
        positive_size("cbs", self.cbs, "CBS")?;
        positive_size("pbs", self.pbs, "PBS")?;
        self.dscp.validate()
    }

    /// The mechanism's settings; call [`TrtcmConfig::validate`] first.
    pub fn settings(&self) -> TrtcmSettings {
        TrtcmSettings {
            cir: self.cir,
            cbs: self.cbs.0,
            pir: self.pir,
            pbs: self.pbs.0,
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

    fn marker(aware: bool) -> Trtcm {
        // CIR = 8 kb/s (1 B/ms), CBS = 1000 B; PIR = 16 kb/s (2 B/ms), PBS = 2000 B.
        Trtcm::new(TrtcmSettings {
            cir: Rate::from_kbps(8),
            cbs: 1000,
            pir: Rate::from_kbps(16),
            pbs: 2000,
            colour_aware: aware,
            action: MeterAction::Mark,
            codepoints: Codepoints::default(),
        })
    }

    #[test]
    fn colour_blind_matches_rfc2698_by_hand() {
        // RFC 2698 §3, colour-blind: red if Tp < B; else yellow if Tc < B (Tp −= B);
        // else green (Tp −= B, Tc −= B). 500-byte packets; Tp, Tc start at 2000, 1000.
        //  t[ms]  Tp    Tc     colour  Tp    Tc
        //   0     2000  1000   G       1500   500
        //   0     1500   500   G       1000     0
        //   0     1000     0   Y        500     0
        //   0      500     0   Y          0     0
        //   0        0     0   R          0     0
        //  100     200   100   R        200   100   (Tp +200, Tc +100)
        //  250     500   250   Y          0   250   (Tp +300, Tc +150)
        //  500     500   500   G          0     0   (Tp +500, Tc +250)
        // 5000    2000  1000   G       1500   500   (both refill to their depth)
        let mut m = marker(false);
        let seq = [
            (0, G),
            (0, G),
            (0, Y),
            (0, Y),
            (0, R),
            (100, R),
            (250, Y),
            (500, G),
            (5000, G),
        ];
        for (i, &(ms, want)) in seq.iter().enumerate() {
            let got = m.meter(SimTime::from_millis(ms), 500, Y);
            assert_eq!(got, want, "packet {i} at {ms} ms");
        }
    }

    #[test]
    fn colour_aware_matches_rfc2698_by_hand() {
        // RFC 2698 §3, colour-aware: red if pre = R or Tp < B; else yellow if pre = Y
        // or Tc < B (Tp −= B); else green (Tp −= B, Tc −= B).
        //  t[ms] pre  Tp    Tc     colour  Tp    Tc
        //   0    R    2000  1000   R       2000  1000  (red stays red, takes nothing)
        //   0    Y    2000  1000   Y       1500  1000  (yellow never takes Tc)
        //   0    G    1500  1000   G       1000   500
        //   0    G    1000   500   G        500     0
        //   0    G     500     0   Y          0     0
        //   0    G       0     0   R          0     0
        //  250   G     500   250   Y          0   250
        //  500   Y     500   500   Y          0   500
        let mut m = marker(true);
        let seq = [
            (0, R, R),
            (0, Y, Y),
            (0, G, G),
            (0, G, G),
            (0, G, Y),
            (0, G, R),
            (250, G, Y),
            (500, Y, Y),
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
        }
    }
}

//! Single Rate Three Colour Marker (RFC 2697).
//!
//! Two buckets share one rate CIR: the committed bucket C (depth CBS) fills first and
//! its overflow goes to the excess bucket E (depth EBS) (RFC 2697 §3). Both start full.
//!
//! By default tokens are exact integer units added continuously (a fraction of a byte
//! at a time). RFC 2697 §3 instead adds whole tokens, CIR times a second, each to C if
//! Tc < CBS, else to E if Te < EBS. The two totals Tc + Te agree at every tick, but not
//! the split: with C full, the continuous model passes the fraction earned so far to E,
//! while the RFC gives the next whole token to C once a packet has taken from it. So a
//! packet can be green under one model and yellow under the other.
//! `tick_model = true` follows the RFC literally: one-byte tokens at the instants
//! k · 8/CIR s (CIR in bit/s) from time zero.

use serde::{Deserialize, Serialize};

use super::action::{mark, Codepoints, MeterAction};
use super::token_bucket::Bucket;
use super::{Action, Conditioner};
use crate::config::ScenarioError;
use crate::drop::DropCause;
use crate::packet::{Colour, Packet};
#[cfg(test)]
use crate::time::Dur;
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
    /// RFC 2697's per-tick token model instead of continuous refill.
    pub tick_model: bool,
}

/// RFC 2697's token counts in whole bytes, updated tick by tick.
#[derive(Clone, Debug)]
struct Ticks {
    tc: u64,
    te: u64,
    /// Ticks (tokens) generated from time zero up to the last update.
    done: u128,
}

/// An srTCM: config plus the two buckets.
#[derive(Clone, Debug)]
pub struct Srtcm {
    cfg: SrtcmSettings,
    c: Bucket,
    e: Bucket,
    ticks: Option<Ticks>,
}

impl Srtcm {
    /// A marker with both buckets full (RFC 2697 §3).
    pub fn new(cfg: SrtcmSettings) -> Self {
        let c = Bucket::full(cfg.cir, cfg.cbs);
        let e = Bucket::full(cfg.cir, cfg.ebs);
        let ticks = cfg.tick_model.then_some(Ticks {
            tc: cfg.cbs,
            te: cfg.ebs,
            done: 0,
        });
        Srtcm { cfg, c, e, ticks }
    }

    /// The RFC's tick model: tokens since the last update, each to C while Tc < CBS,
    /// then to E while Te < EBS (RFC 2697 §3); then the colour.
    fn meter_ticks(&mut self, now: SimTime, size: u32, pre: Colour) -> Colour {
        let (cbs, ebs) = (self.cfg.cbs, self.cfg.ebs);
        let t = self.ticks.as_mut().expect("tick model");
        // Ticks by `now`: one byte per 8/CIR s, i.e. floor(now[ns] · CIR / 8e9).
        let total = now.as_nanos() as u128 * self.cfg.cir.bps() as u128 / 8_000_000_000;
        let new = (total - t.done).min(u64::MAX as u128) as u64;
        t.done = total;
        let to_c = new.min(cbs - t.tc);
        t.tc += to_c;
        t.te = (t.te + (new - to_c)).min(ebs);
        let size = size as u64;
        if pre == Colour::Green && t.tc >= size {
            t.tc -= size;
            Colour::Green
        } else if pre != Colour::Red && t.te >= size {
            t.te -= size;
            Colour::Yellow
        } else {
            Colour::Red
        }
    }

    /// The colour RFC 2697 §3 gives a packet of `size` bytes arriving at `now`
    /// pre-coloured `pre` (ignored when colour-blind); updates the buckets.
    pub fn meter(&mut self, now: SimTime, size: u32, pre: Colour) -> Colour {
        let pre = if self.cfg.colour_aware {
            pre
        } else {
            Colour::Green
        };
        if self.ticks.is_some() {
            return self.meter_ticks(now, size, pre);
        }
        // Tokens earned go to C; what C cannot hold goes to E (RFC 2697 §3).
        let overflow = self.c.refill(now);
        self.e.add_units(overflow);
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
    #[serde(deserialize_with = "crate::units::de_rate_or_zero")]
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
    /// RFC 2697's whole-token tick model instead of continuous refill (default false).
    #[serde(default)]
    pub tick_model: bool,
}

impl SrtcmConfig {
    /// Checks the rate, that not both bursts are zero, and the codepoints.
    pub fn validate(&self) -> Result<(), ScenarioError> {
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
            tick_model: self.tick_model,
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
            tick_model: false,
        })
    }

    #[test]
    fn tick_model_differs_from_continuous_refill_as_documented() {
        // CIR = 8 kb/s: one token per ms (ticks at whole ms). CBS = 1000 B, EBS = 2000 B.
        // The models agree while C is below CBS and differ once C is full: then the
        // continuous model passes the fraction of a token earned so far to E, and the RFC
        // gives the next whole token to C if a packet took from C in between.
        let mut ticks = marker(false);
        ticks.cfg.tick_model = true;
        ticks.ticks = Some(Ticks {
            tc: 1000,
            te: 2000,
            done: 0,
        });
        let mut cont = marker(false);
        // Drain C and E at t = 0.
        for m in [&mut ticks, &mut cont] {
            assert_eq!(m.meter(SimTime::ZERO, 1000, G), G);
            assert_eq!(m.meter(SimTime::ZERO, 2000, G), Y);
        }
        // 1.5 ms later: continuous C = 1.5 B, ticks C = 1 B (ticks at 1 ms only).
        let t = SimTime::from_micros(1500);
        assert_eq!(cont.meter(t, 1, G), G); // C 1.5 → 0.5
        assert_eq!(ticks.meter(t, 1, G), G); // C 1 → 0
                                             // At 2 ms: continuous C = 0.5 + 0.5 = 1 B, ticks C = 0 + 1 = 1 B: they agree.
        let t = SimTime::from_micros(2000);
        assert_eq!(cont.meter(t, 1, G), G);
        assert_eq!(ticks.meter(t, 1, G), G);
        // … and differ once C is full: refill to full (1000 B takes 1 s), wait half a
        // token (continuous: to E), take 1 B from C, wait another half token.
        let full = SimTime::from_micros(1_002_000 + 1000);
        let (a, b) = (cont.meter(full, 0, G), ticks.meter(full, 0, G));
        assert_eq!((a, b), (G, G));
        let half = full + Dur::from_micros(500);
        assert_eq!(cont.meter(half, 1, G), G); // continuous: E got 0.5 B, C → 999
        assert_eq!(ticks.meter(half, 1, G), G); // ticks: no tick yet, C → 999
        let next = half + Dur::from_micros(500); // a tick instant
                                                 // Continuous C = 999.5 B (the other half went to E earlier); ticks C = 1000 B.
        assert_eq!(ticks.meter(next, 1000, G), G);
        assert_eq!(cont.meter(next, 1000, G), R);
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

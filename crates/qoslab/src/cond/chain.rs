//! A pipeline of conditioners applied in order (STYLE §7; RFC 2475 §2.3.3 Fig. 6:
//! classifier → meter → marker → shaper/dropper).
//!
//! # How the host drives a chain
//!
//! ```text
//!   arrival at now:   (a, s) = chain.condition_from(0, now, &mut pkt)
//!   a = Pass          → forward pkt (enqueue)
//!   a = Drop(cause)   → count (place, cause); stage s dropped it
//!   a = DelayUntil(t) → schedule Release { pkt, resume: s } at t
//!   Release at t:     (a, s) = chain.condition_from(resume, t, &mut pkt)  … same match
//!   timers:           schedule chain.next_timer(); at it call chain.on_timer(now)
//! ```
//!
//! A stage that delays a packet has already accepted it (a shaper has reserved its
//! tokens), so on release the packet must *not* pass that stage again: the host resumes
//! at the stage after it, with `now` = the release time. Later stages thus see the packet
//! when it actually leaves the earlier one, which is what a marker after a shaper must
//! see. The chain itself holds no packets.

use super::dscp::DscpColours;
use super::ConditionerConfig;
use super::{Action, AnyConditioner, Conditioner};
use crate::config::ScenarioError;
use crate::packet::{NodeId, Packet};
use crate::rng::RngStream;
use crate::time::SimTime;

/// Conditioners applied in order; see the module doc for how a host drives it.
#[derive(Clone, Debug, Default)]
pub struct Chain {
    stages: Vec<AnyConditioner>,
    /// The hosting node's DSCP → drop precedence map: before each stage the packet's
    /// colour is re-derived from its DSCP, so colour-aware meters act on the wire.
    colours: DscpColours,
    /// Per stage, per flow: packets and bytes the stage coloured green, yellow, red
    /// (`[g_pkts, g_bytes, y_pkts, y_bytes, r_pkts, r_bytes]`); empty for stages that
    /// do not colour (see [`AnyConditioner::verdict_colour`]).
    marked: Vec<Vec<[u64; 6]>>,
    /// `marked` as it was when the warm-up ended.
    marked_warm: Vec<Vec<[u64; 6]>>,
}

impl Chain {
    /// A chain of the given stages, applied first to last.
    pub fn new(stages: Vec<AnyConditioner>) -> Self {
        Chain {
            marked: vec![Vec::new(); stages.len()],
            marked_warm: Vec::new(),
            stages,
            colours: DscpColours::default(),
        }
    }

    /// The same chain, reading drop precedences through `colours` (the hosting node's
    /// DSCP table) instead of the RFC defaults.
    pub fn with_colours(mut self, colours: DscpColours) -> Self {
        self.colours = colours;
        self
    }

    /// Builds every stage; stage `i` gets its own stream derived from `rng` and `i`.
    /// Error keys are prefixed `[i].` (the host prefixes the table's path).
    pub fn build(
        cfgs: &[ConditionerConfig],
        resolve: &dyn Fn(&str) -> Option<NodeId>,
        mut rng: RngStream,
    ) -> Result<Chain, ScenarioError> {
        let base = rng.next_u64();
        let mut stages = Vec::with_capacity(cfgs.len());
        for (i, c) in cfgs.iter().enumerate() {
            let stage_rng = RngStream::derive(base, &format!("stage{i}"));
            let s = c.build(resolve, stage_rng).map_err(|mut e| {
                e.key = if e.key.is_empty() {
                    format!("[{i}]")
                } else {
                    format!("[{i}].{}", e.key)
                };
                e
            })?;
            stages.push(s);
        }
        Ok(Chain::new(stages))
    }

    /// Number of stages.
    pub fn len(&self) -> usize {
        self.stages.len()
    }

    /// True if the chain has no stage (every packet passes).
    pub fn is_empty(&self) -> bool {
        self.stages.is_empty()
    }

    /// The stages, for inspection.
    pub fn stages(&self) -> &[AnyConditioner] {
        &self.stages
    }

    /// Runs `pkt` through stages `start..` at `now`, stopping at the first stage that
    /// does not pass it. Returns that action and a stage index:
    /// - `Pass`: index = `len()` (went through everything);
    /// - `Drop(_)`: the index of the stage that dropped it;
    /// - `DelayUntil(t)`: the stage to resume at on release (the one after the delayer).
    #[inline]
    pub fn condition_from(
        &mut self,
        start: usize,
        now: SimTime,
        pkt: &mut Packet,
    ) -> (Action, usize) {
        for (i, s) in self.stages.iter_mut().enumerate().skip(start) {
            // The drop precedence is what the node's table says the DSCP on the wire is.
            pkt.colour = self.colours.of(pkt.dscp);
            let a = s.condition(now, pkt);
            if let Some(c) = s.verdict_colour(a, pkt) {
                let per_flow = &mut self.marked[i];
                let f = pkt.flow.0 as usize;
                if per_flow.len() <= f {
                    per_flow.resize(f + 1, [0; 6]);
                }
                per_flow[f][2 * c.index()] += 1;
                per_flow[f][2 * c.index() + 1] += pkt.size as u64;
            }
            match a {
                Action::Pass => {}
                Action::Drop(c) => return (Action::Drop(c), i),
                Action::DelayUntil(t) if t <= now => {}
                Action::DelayUntil(t) => return (Action::DelayUntil(t), i + 1),
            }
        }
        (Action::Pass, self.stages.len())
    }

    /// Freezes the colour counts: [`Chain::marked_since_warmup`] counts from here on.
    pub fn freeze_marked(&mut self) {
        self.marked_warm = self.marked.clone();
    }

    /// Packets and bytes each colouring stage gave each colour since the warm-up:
    /// `(stage, flow, [g_pkts, g_bytes, y_pkts, y_bytes, r_pkts, r_bytes])` for every
    /// (stage, flow) with a packet, in stage then flow order.
    pub fn marked_since_warmup(&self) -> Vec<(usize, u32, [u64; 6])> {
        let mut out = Vec::new();
        for (i, per_flow) in self.marked.iter().enumerate() {
            for (f, c) in per_flow.iter().enumerate() {
                let w = self
                    .marked_warm
                    .get(i)
                    .and_then(|v| v.get(f))
                    .copied()
                    .unwrap_or([0; 6]);
                let d: [u64; 6] = std::array::from_fn(|k| c[k] - w[k]);
                if d.iter().step_by(2).any(|&n| n > 0) {
                    out.push((i, f as u32, d));
                }
            }
        }
        out
    }

    /// Earliest `next_timer` over the stages.
    pub fn next_timer(&self) -> Option<SimTime> {
        self.stages.iter().filter_map(|s| s.next_timer()).min()
    }

    /// Calls `on_timer` on every stage whose timer is due at `now`.
    pub fn on_timer(&mut self, now: SimTime) {
        for s in &mut self.stages {
            if s.next_timer().is_some_and(|t| t <= now) {
                s.on_timer(now);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Colour;
    use crate::queue::DropCause;

    fn chain(text: &str) -> Chain {
        #[derive(serde::Deserialize)]
        struct T {
            c: Vec<ConditionerConfig>,
        }
        let t: T = toml::from_str(text).unwrap();
        Chain::build(&t.c, &|_| None, RngStream::from_seed(9)).unwrap()
    }

    #[test]
    fn delayed_packets_resume_after_the_delaying_stage() {
        // Shaper (1 Mb/s, 1000 B) then a marker (1 Mb/s, 1000 B). Two 1000 B packets
        // at t = 0: the first passes both. The second waits 8 ms at the shaper; if the
        // marker saw it at t = 0 it would be out of profile, but resumed at its release
        // (t = 8 ms) the marker has refilled and marks it green.
        let mut c = chain(
            r#"c = [
                { kind = "token_bucket", rate = "1Mbps", depth = 1000, action = "shape" },
                { kind = "token_bucket", rate = "1Mbps", depth = 1000 },
            ]"#,
        );
        let mut p = Packet {
            size: 1000,
            colour: Colour::Red,
            ..Default::default()
        };
        assert_eq!(
            c.condition_from(0, SimTime::ZERO, &mut p),
            (Action::Pass, 2)
        );
        assert_eq!(p.colour, Colour::Green);
        let mut q = Packet {
            size: 1000,
            dscp: 14, // AF13: red on the wire
            ..Default::default()
        };
        let t8 = SimTime::from_millis(8);
        assert_eq!(
            c.condition_from(0, SimTime::ZERO, &mut q),
            (Action::DelayUntil(t8), 1)
        );
        assert_eq!(q.colour, Colour::Red, "later stages not yet applied");
        assert_eq!(c.condition_from(1, t8, &mut q), (Action::Pass, 2));
        assert_eq!(q.colour, Colour::Green);
    }

    #[test]
    fn stops_at_the_first_drop() {
        // Policer (drops the second packet) before a marker: the marker never sees it.
        let mut c = chain(
            r#"c = [
                { kind = "token_bucket", rate = "1Mbps", depth = 1000, action = "police" },
                { kind = "srtcm", cir = "1Mbps", cbs = 1000, ebs = 0 },
            ]"#,
        );
        let mut p = Packet {
            size: 1000,
            ..Default::default()
        };
        assert_eq!(
            c.condition_from(0, SimTime::ZERO, &mut p),
            (Action::Pass, 2)
        );
        let mut q = p;
        q.colour = Colour::Red;
        q.dscp = 0;
        assert_eq!(
            c.condition_from(0, SimTime::ZERO, &mut q),
            (Action::Drop(DropCause::Policed), 0)
        );
        assert_eq!(q.dscp, 0, "the marker did not run");
    }

    #[test]
    fn colour_aware_meters_read_the_dscp_through_the_table() {
        // A colour-aware srTCM with plenty of tokens keeps a packet's colour: the colour
        // it reads is what the table gives the DSCP, not the packet's colour field.
        let text = r#"c = [ { kind = "srtcm", cir = "1Mbps", cbs = 10000, ebs = 10000, colour_aware = true } ]"#;
        let mut p = Packet {
            size: 100,
            dscp: 14, // AF13: red in the RFC table
            colour: Colour::Green,
            ..Default::default()
        };
        chain(text).condition_from(0, SimTime::ZERO, &mut p);
        assert_eq!((p.colour, p.dscp), (Colour::Red, 14));
        // A node whose table says AF13 is green: the meter sees green.
        let mut t = crate::cond::DscpTable::rfc();
        t.colours.0[14] = Colour::Green;
        let mut p = Packet {
            size: 100,
            dscp: 14,
            colour: Colour::Red,
            ..Default::default()
        };
        chain(text)
            .with_colours(t.colours)
            .condition_from(0, SimTime::ZERO, &mut p);
        assert_eq!((p.colour, p.dscp), (Colour::Green, 10));
    }

    #[test]
    fn build_errors_name_the_stage() {
        let cfgs: Vec<ConditionerConfig> = vec![
            toml::from_str("kind = \"delay\"\ndelay = \"1ms\"").unwrap(),
            toml::from_str("kind = \"trtcm\"\ncir = 2000\ncbs = 1\npir = 1000\npbs = 1").unwrap(),
        ];
        let e = Chain::build(&cfgs, &|_| None, RngStream::from_seed(1)).unwrap_err();
        assert_eq!(e.key, "[1].pir");
    }
}

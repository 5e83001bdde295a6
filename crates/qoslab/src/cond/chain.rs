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

use super::ConditionerConfig;
use super::{Action, AnyConditioner, Conditioner};
use crate::config::ScenarioError;
use crate::dscp::DscpColours;
use crate::packet::{NodeId, Packet};
use crate::rng::RngStream;
use crate::time::SimTime;

/// Conditioners applied in order; see the module doc for how a host drives it.
#[derive(Clone, Debug, Default)]
pub struct Chain {
    stages: Vec<AnyConditioner>,
    /// True if a stage may ask for timers (only policies do): the host skips asking
    /// a chain without.
    timed: bool,
    /// Per stage: the end of the run of consecutive TRC stages that starts there (the
    /// stage itself if it is no TRC). A TRC passes other flows' packets untouched, so a
    /// packet skips from a run's start to the TRC of its own flow (P1 puts one per flow
    /// in one chain) instead of asking each.
    trc_run_end: Vec<usize>,
    /// Per flow id: the TRC stages of that flow, ascending.
    trc_of_flow: Vec<Vec<usize>>,
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
        let trc_flow = |s: &AnyConditioner| match s {
            AnyConditioner::Trc(t) => Some(t.setup().flow.0 as usize),
            _ => None,
        };
        let mut trc_run_end: Vec<usize> = (0..stages.len()).collect();
        for i in (0..stages.len()).rev() {
            if trc_flow(&stages[i]).is_some() {
                trc_run_end[i] = trc_run_end.get(i + 1).copied().unwrap_or(i + 1).max(i + 1);
            }
        }
        let mut trc_of_flow: Vec<Vec<usize>> = Vec::new();
        for (i, s) in stages.iter().enumerate() {
            if let Some(f) = trc_flow(s) {
                if trc_of_flow.len() <= f {
                    trc_of_flow.resize_with(f + 1, Vec::new);
                }
                trc_of_flow[f].push(i);
            }
        }
        Chain {
            trc_run_end,
            trc_of_flow,
            timed: stages
                .iter()
                .any(|s| matches!(s, AnyConditioner::Policy(_))),
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
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.stages.is_empty()
    }

    /// The stages, for inspection.
    pub fn stages(&self) -> &[AnyConditioner] {
        &self.stages
    }

    /// The stages, for the world to link them after building (exchange groups).
    pub(crate) fn stages_mut(&mut self) -> &mut [AnyConditioner] {
        &mut self.stages
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
        let n = self.stages.len();
        let mut i = start;
        while i < n {
            // The drop precedence is what the node's table says the DSCP on the wire is.
            pkt.colour = self.colours.of(pkt.dscp);
            let end = self.trc_run_end[i];
            if end > i {
                // TRCs of other flows pass the packet untouched (and keep no state for
                // it): go straight to its own flow's TRC in this run, or past the run.
                let own = self.trc_of_flow.get(pkt.flow.0 as usize);
                i = own
                    .and_then(|v| v.iter().copied().find(|&j| j >= i && j < end))
                    .unwrap_or(end);
                if i == end {
                    continue;
                }
            }
            let s = &mut self.stages[i];
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
            i += 1;
        }
        (Action::Pass, n)
    }

    /// False if no stage ever asks for a timer (`next_timer` is always `None`).
    #[inline]
    pub fn has_timers(&self) -> bool {
        self.timed
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

    /// A source quench passed the hosting router at `now`: its ERUF stages snoop it
    /// (P2 §2.1).
    pub fn on_quench(&mut self, now: SimTime, q: &crate::packet::QuenchHeader) {
        for s in &mut self.stages {
            if let AnyConditioner::Eruf(e) = s {
                e.on_quench(now, q);
            }
        }
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
    use crate::drop::DropCause;
    use crate::packet::Colour;

    #[test]
    fn trc_runs_skip_other_flows_with_the_same_outcome() {
        // Jumping to a packet's own TRC must answer exactly what asking every stage in
        // turn answers, from any resume stage, with the packet left the same.
        use crate::cond::trc::{model, Trc, TrcSetup};
        use crate::cond::FixedDelay;
        use crate::packet::{Ecn, FlowId, Header, TcpHeader};
        use crate::time::Dur;
        let trc = |f: u32, w: f64| {
            let params = model::fixed_parameters(w, 0.01, 1000, 0.003, model::PAPER, f == 3);
            AnyConditioner::Trc(Trc::new(
                TrcSetup {
                    flow: FlowId(f),
                    params,
                    ecn: f == 3,
                    slow_start: f != 2,
                    lead: Dur::ZERO,
                    buffer: params.buffer,
                },
                Dur::from_millis(3),
            ))
        };
        let stages = vec![
            trc(1, 6.5),
            trc(2, 7.5),
            AnyConditioner::FixedDelay(FixedDelay::new(Dur::ZERO)),
            trc(3, 8.5),
            trc(1, 9.5),
            trc(0, 10.5),
        ];
        let mut fast = Chain::new(stages.clone());
        let mut slow = stages;
        let mut seen = [0usize; 3];
        for k in 0..20_000u64 {
            let now = SimTime::from_micros(300 * k);
            let mut p = Packet {
                flow: FlowId((k % 5) as u32),
                size: 1040,
                ecn: Ecn::Ect,
                dscp: (k % 64) as u8,
                hdr: Header::Tcp(TcpHeader {
                    len: if k % 7 == 0 { 0 } else { 1000 },
                    ..Default::default()
                }),
                ..Default::default()
            };
            let start = (k % 4) as usize;
            let mut q = p;
            let got = fast.condition_from(start, now, &mut p);
            let mut want = (Action::Pass, slow.len());
            for (i, s) in slow.iter_mut().enumerate().skip(start) {
                q.colour = fast.colours.of(q.dscp);
                match s.condition(now, &mut q) {
                    Action::Pass => {}
                    Action::Drop(c) => {
                        want = (Action::Drop(c), i);
                        break;
                    }
                    Action::DelayUntil(t) if t <= now => {}
                    Action::DelayUntil(t) => {
                        want = (Action::DelayUntil(t), i + 1);
                        break;
                    }
                }
            }
            assert_eq!(got, want, "packet {k}");
            assert_eq!(p, q, "packet {k}");
            seen[match got.0 {
                Action::Pass => 0,
                Action::Drop(_) => 1,
                Action::DelayUntil(_) => 2,
            }] += 1;
        }
        assert!(seen.iter().all(|&n| n > 100), "{seen:?}");
    }

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

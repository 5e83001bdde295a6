//! Conditioners: meters, markers, policers, shapers and droppers at a network edge
//! (RFC 2475 §2.3.3).
//!
//! A conditioner sees `(now, &mut Packet)` and answers an [`Action`]; it owns no clock
//! and schedules nothing. The node that hosts it turns `DelayUntil` into an event and
//! calls [`Conditioner::on_timer`] at [`Conditioner::next_timer`]. Conditioners can sit
//! at host egress, router ingress and router egress (see `net`).
//!
//! ```text
//!   packet ─► Chain: [ Policy: classify ─► per-key meter/marker/shaper ] ─► [ stage ] ─► queue
//! ```
//!
//! - [`classify`]: multi-field filters with ANY wildcards (P0 Table 1).
//! - [`policy`]: policy tables, per-flow or aggregate state created lazily per key.
//! - [`TokenBucket`] (P0 profile `<b, r, r_p, L_m>`; mark, police, shape),
//!   [`Srtcm`] (RFC 2697), [`Trtcm`] (RFC 2698), [`TswEstimator`], [`Tsw2cm`] and
//!   [`Tsw3cm`] (RFC 2859), [`FixedDelay`].
//! - [`Trc`]: P1's TCP rate controller (per-flow drops and delays from a TCP model).
//! - [`Chain`]: stages in order.
//! - [`ConditionerConfig`]: what scenario files say, one variant per family; each
//!   family's keys, checks and builder sit in its own file beside its mechanism
//!   ([`TokenBucketConfig`], [`SrtcmConfig`], …).
//!
//! Markers write `colour`, `dscp` (AF codepoints, default AF11/12/13) and `in_profile`
//! (green ⇒ true). Policing drops with `DropCause::Policed`; a full shaper buffer with
//! `DropCause::CondBufferFull`.

pub mod action;
mod chain;
mod check;
pub mod classify;
mod delay;
pub mod eruf;
pub mod policy;
mod remark;
pub mod rtt_aware;
mod srtcm;
mod token_bucket;
pub mod trc;
mod trtcm;
mod tsw;

pub use crate::dscp::{DscpColours, DscpMapEntry, DscpSet, DscpTable};
pub use action::{Codepoints, ColourName, MeterAction, ShapeTimer};
pub use chain::Chain;
pub use classify::{Filter, FilterConfig};
pub use delay::{DelayConfig, FixedDelay};
pub use eruf::{Eruf, ErufConfig};
pub use policy::{
    Aggregate, Policy, PolicyAction, PolicyConfig, PolicyRule, PolicyRuleConfig, ProfileConfig,
};
pub use remark::{SetDscp, SetDscpConfig};
pub use rtt_aware::{RttAware, RttAwareConfig};
pub use srtcm::{Srtcm, SrtcmConfig, SrtcmSettings};
pub(crate) use token_bucket::Bucket;
pub use token_bucket::{
    TbAction, TbActionName, TokenBucket, TokenBucketConfig, TokenBucketSettings,
};
pub use trc::{Trc, TrcConfig};
pub use trtcm::{Trtcm, TrtcmConfig, TrtcmSettings};
pub use tsw::{
    Tsw2cm, Tsw2cmConfig, Tsw3cm, Tsw3cmConfig, TswEstimator, TswSettings, DEFAULT_TSW_WINDOW,
};

use serde::{Deserialize, Serialize};

use crate::config::ScenarioError;
use crate::drop::DropCause;
use crate::packet::NodeId;
use crate::packet::Packet;
use crate::rng::RngStream;
use crate::time::SimTime;

/// What a conditioner decides for one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Forward now; the packet may have been re-marked in place.
    Pass,
    /// Discard, recording why.
    Drop(DropCause),
    /// Hold the packet until the given time (shaper, delay line), then forward it.
    DelayUntil(SimTime),
}

/// A meter, marker, policer or shaper at a network edge.
pub trait Conditioner {
    /// Decides the fate of `pkt` arriving at `now`; may set its colour/DSCP.
    fn condition(&mut self, now: SimTime, pkt: &mut Packet) -> Action;
    /// Earliest time this mechanism wants `on_timer`; `None` if never.
    fn next_timer(&self) -> Option<SimTime> {
        None
    }
    /// Runs the periodic part of the mechanism; the host calls it at `next_timer()`.
    fn on_timer(&mut self, _now: SimTime) {}
}

/// Every conditioner qoslab has; dispatch is one `match`.
#[derive(Clone, Debug)]
pub enum AnyConditioner {
    /// Hold every packet for a fixed time.
    FixedDelay(FixedDelay),
    /// Token bucket marker/policer/shaper (P0 §3.2).
    TokenBucket(TokenBucket),
    /// Single rate three colour marker (RFC 2697).
    Srtcm(Srtcm),
    /// Two rate three colour marker (RFC 2698).
    Trtcm(Trtcm),
    /// TSW two-colour marker (Clark & Fang 1998).
    Tsw2cm(Tsw2cm),
    /// TSW three-colour marker (RFC 2859).
    Tsw3cm(Tsw3cm),
    /// Policy table (P0 §2.1 Table 1).
    Policy(Policy),
    /// TCP rate controller (P1).
    Trc(Trc),
    /// Set the DSCP (re-marking).
    SetDscp(SetDscp),
    /// RTT-aware / RTT-RTO three-colour marker (P3).
    RttAware(RttAware),
    /// ERUF edge regulation of quenched flows (P2).
    Eruf(Box<Eruf>),
}

macro_rules! dispatch {
    ($self:expr, $c:ident => $e:expr) => {
        match $self {
            AnyConditioner::FixedDelay($c) => $e,
            AnyConditioner::TokenBucket($c) => $e,
            AnyConditioner::Srtcm($c) => $e,
            AnyConditioner::Trtcm($c) => $e,
            AnyConditioner::Tsw2cm($c) => $e,
            AnyConditioner::Tsw3cm($c) => $e,
            AnyConditioner::Policy($c) => $e,
            AnyConditioner::Trc($c) => $e,
            AnyConditioner::SetDscp($c) => $e,
            AnyConditioner::RttAware($c) => $e,
            AnyConditioner::Eruf($c) => $e,
        }
    };
}

impl AnyConditioner {
    /// Replaces the random stream of randomised mechanisms (TSW markers); others ignore it.
    pub fn reseed(&mut self, rng: RngStream) {
        match self {
            AnyConditioner::Tsw2cm(c) => c.reseed(rng),
            AnyConditioner::Tsw3cm(c) => c.reseed(rng),
            AnyConditioner::RttAware(c) => c.reseed(rng),
            _ => {}
        }
    }
}

impl AnyConditioner {
    /// The `kind` of the stage as written in a scenario (`"trtcm"`, `"set_dscp"`).
    pub fn kind(&self) -> &'static str {
        match self {
            AnyConditioner::FixedDelay(_) => "delay",
            AnyConditioner::TokenBucket(_) => "token_bucket",
            AnyConditioner::Srtcm(_) => "srtcm",
            AnyConditioner::Trtcm(_) => "trtcm",
            AnyConditioner::Tsw2cm(_) => "tsw2cm",
            AnyConditioner::Tsw3cm(_) => "tsw3cm",
            AnyConditioner::Policy(_) => "policy",
            AnyConditioner::Trc(_) => "trc",
            AnyConditioner::SetDscp(_) => "set_dscp",
            AnyConditioner::RttAware(_) => "rtt_aware",
            AnyConditioner::Eruf(_) => "eruf",
        }
    }

    /// The colour a metering stage gave `pkt` with its verdict `a` (for the colour
    /// statistics); `None` for stages that do not meter (delay, shaper, TRC,
    /// set_dscp) and for packets a meter held. A marker's colour is the one it wrote;
    /// a policer's is green for what it passed and red for what it dropped (RFC 2475
    /// §2.3.3.3: in and out of profile).
    pub fn verdict_colour(&self, a: Action, pkt: &Packet) -> Option<crate::packet::Colour> {
        use crate::packet::Colour;
        let police_only = match self {
            AnyConditioner::TokenBucket(t) => match t.action() {
                token_bucket::TbAction::Mark => false,
                token_bucket::TbAction::Police => true,
                token_bucket::TbAction::Shape { .. } => return None,
            },
            AnyConditioner::Srtcm(_)
            | AnyConditioner::Trtcm(_)
            | AnyConditioner::Tsw2cm(_)
            | AnyConditioner::Tsw3cm(_) => false,
            // A returning ACK seen by a passive estimator is neither metered nor marked.
            AnyConditioner::RttAware(r) if !r.metered_last() => return None,
            AnyConditioner::RttAware(_) => false,
            AnyConditioner::Policy(p) => return p.last_conditioner()?.verdict_colour(a, pkt),
            _ => return None,
        };
        match a {
            Action::Pass if police_only => Some(Colour::Green),
            Action::Pass => Some(pkt.colour),
            Action::Drop(DropCause::Policed) => Some(Colour::Red),
            _ => None,
        }
    }
}

impl Conditioner for AnyConditioner {
    #[inline]
    fn condition(&mut self, now: SimTime, pkt: &mut Packet) -> Action {
        dispatch!(self, c => c.condition(now, pkt))
    }
    fn next_timer(&self) -> Option<SimTime> {
        dispatch!(self, c => c.next_timer())
    }
    fn on_timer(&mut self, now: SimTime) {
        dispatch!(self, c => c.on_timer(now))
    }
}

/// One conditioner as written in a scenario file; `kind` selects the family (read
/// through [`crate::config::Tagged`], so errors name the exact key). The dispatch of
/// configurations, as [`AnyConditioner`] is of mechanisms.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self", rename_all = "snake_case", deny_unknown_fields)]
pub enum ConditionerConfig {
    /// Token bucket `<b, r, r_p, L_m>` (P0 §3.2) as marker, policer or shaper.
    TokenBucket(TokenBucketConfig),
    /// srTCM (RFC 2697).
    Srtcm(SrtcmConfig),
    /// trTCM (RFC 2698).
    Trtcm(TrtcmConfig),
    /// TSW two-colour marker (Clark & Fang 1998).
    Tsw2cm(Tsw2cmConfig),
    /// TSW three-colour marker (RFC 2859).
    Tsw3cm(Tsw3cmConfig),
    /// Fixed delay line.
    Delay(DelayConfig),
    /// Policy table (P0 §2.1 Table 1).
    Policy(PolicyConfig),
    /// TCP rate controller for one flow (P1); see `cond::trc`.
    Trc(TrcConfig),
    /// Set the DSCP of every packet, or of those carrying listed codepoints.
    SetDscp(SetDscpConfig),
    /// RTT-aware / RTT-RTO three-colour marker for an aggregate (P3); see `cond::rtt_aware`.
    RttAware(RttAwareConfig),
    /// ERUF edge regulation of quenched flows (P2); see `cond::eruf`.
    Eruf(ErufConfig),
}

impl crate::config::Tagged for ConditionerConfig {
    const WHAT: &'static str = "conditioner";
    const KINDS: &'static [&'static str] = &[
        "token_bucket",
        "srtcm",
        "trtcm",
        "tsw2cm",
        "tsw3cm",
        "delay",
        "policy",
        "trc",
        "set_dscp",
        "rtt_aware",
        "eruf",
    ];
    fn read_external<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        ConditionerConfig::deserialize(d)
    }
    fn write_external<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ConditionerConfig::serialize(self, s)
    }
}

impl<'de> Deserialize<'de> for ConditionerConfig {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        crate::config::read_tagged(d)
    }
}

impl Serialize for ConditionerConfig {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        crate::config::write_tagged(self, s)
    }
}

impl ConditionerConfig {
    /// Checks values serde cannot: zero rates and depths, PIR < CIR, codepoints, policy
    /// rule shape. Keys are relative to this conditioner's table.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        match self {
            ConditionerConfig::TokenBucket(c) => c.validate(),
            ConditionerConfig::Srtcm(c) => c.validate(),
            ConditionerConfig::Trtcm(c) => c.validate(),
            ConditionerConfig::Tsw2cm(c) => c.validate(),
            ConditionerConfig::Tsw3cm(c) => c.validate(),
            ConditionerConfig::Delay(_) => Ok(()),
            ConditionerConfig::Policy(c) => c.validate(),
            ConditionerConfig::Trc(c) => c.validate(),
            ConditionerConfig::SetDscp(c) => c.validate(),
            ConditionerConfig::RttAware(c) => c.validate(),
            ConditionerConfig::Eruf(c) => c.validate(),
        }
    }

    /// Validates and builds the conditioner; `resolve` maps node names in filters to
    /// nodes (an unknown name is an error naming its key); `rng` is this conditioner's
    /// own stream (STYLE §9).
    pub fn build(
        &self,
        resolve: &dyn Fn(&str) -> Option<NodeId>,
        rng: RngStream,
    ) -> Result<AnyConditioner, ScenarioError> {
        self.validate()?;
        Ok(match self {
            ConditionerConfig::TokenBucket(c) => {
                AnyConditioner::TokenBucket(TokenBucket::new(c.settings()))
            }
            ConditionerConfig::Srtcm(c) => AnyConditioner::Srtcm(Srtcm::new(c.settings())),
            ConditionerConfig::Trtcm(c) => AnyConditioner::Trtcm(Trtcm::new(c.settings())),
            ConditionerConfig::Tsw2cm(c) => AnyConditioner::Tsw2cm(c.build(rng)),
            ConditionerConfig::Tsw3cm(c) => AnyConditioner::Tsw3cm(c.build(rng)),
            ConditionerConfig::Delay(c) => AnyConditioner::FixedDelay(FixedDelay::new(c.delay)),
            ConditionerConfig::Policy(c) => AnyConditioner::Policy(c.build(resolve, rng)?),
            ConditionerConfig::Trc(c) => AnyConditioner::Trc(c.build()?),
            ConditionerConfig::SetDscp(c) => AnyConditioner::SetDscp(c.build()),
            ConditionerConfig::RttAware(c) => AnyConditioner::RttAware(c.build(rng)),
            ConditionerConfig::Eruf(c) => AnyConditioner::Eruf(Box::new(c.build())),
        })
    }

    /// Binds flow names in filters (`filter = { flow = "…" }`) to flows through
    /// `lookup`, and address prefixes to the nodes whose address (`addrs`, by node) is
    /// in them; keys are relative to this conditioner's table.
    pub fn bind_flows(
        &mut self,
        lookup: &dyn Fn(&str) -> Option<crate::packet::FlowId>,
        addrs: &[[u8; 4]],
    ) -> Result<(), ScenarioError> {
        if let ConditionerConfig::Policy(p) = self {
            for (i, r) in p.rules.iter_mut().enumerate() {
                let key = format!("rules[{i}].filter");
                r.filter.bind_flow(&key, lookup)?;
                r.filter.bind_addresses(&key, addrs)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::{Dur, Rate};
    use crate::units::Bytes;

    fn parse(text: &str) -> Result<ConditionerConfig, String> {
        toml::from_str::<ConditionerConfig>(text).map_err(|e| e.to_string())
    }

    fn no_nodes(_: &str) -> Option<NodeId> {
        None
    }

    #[test]
    fn token_bucket_from_the_issue_example() {
        let c = parse(
            r#"kind = "token_bucket"
               rate = "640kbps"
               depth = "16KB"
               action = "shape"
               timer = "15ms""#,
        )
        .unwrap();
        c.validate().unwrap();
        match &c {
            ConditionerConfig::TokenBucket(t) => {
                assert_eq!(t.rate, Rate::from_kbps(640));
                assert_eq!(t.depth, Bytes(16_000));
                assert_eq!(t.action, TbActionName::Shape);
                assert_eq!(t.timer, Some(ShapeTimer::Periodic(Dur::from_millis(15))));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            c.build(&no_nodes, RngStream::from_seed(1)).unwrap(),
            AnyConditioner::TokenBucket(_)
        ));
        // Inline-table form, as inside a list of conditioners.
        #[derive(Deserialize)]
        struct T {
            egress: Vec<ConditionerConfig>,
        }
        let t: T = toml::from_str(
            r#"egress = [
                { kind = "token_bucket", rate = "640kbps", depth = "16KB", action = "shape", timer = "15ms" },
                { kind = "tsw3cm", cir = "2Mbps", pir = "3Mbps", window = "100ms" },
                { kind = "delay", delay = "5ms" },
            ]"#,
        )
        .unwrap();
        assert_eq!(t.egress.len(), 3);
    }

    #[test]
    fn every_listed_kind_is_a_variant() {
        use crate::config::Tagged;
        for k in ConditionerConfig::KINDS {
            // Not an unknown kind: at worst a missing key of that kind.
            let e = parse(&format!("kind = \"{k}\"")).err().unwrap_or_default();
            assert!(!e.contains("unknown conditioner kind"), "{k}: {e}");
        }
    }

    #[test]
    fn unknown_keys_and_kinds_are_rejected() {
        let e = parse("kind = \"srtcm\"\ncir = 1000\ncbs = 100\nebs = 100\nrte = 5").unwrap_err();
        assert!(e.contains("unknown field") && e.contains("rte"), "{e}");
        let e = parse("kind = \"token_bucket\"\nrate = 1000\ndepth = 10\ndscp = { gren = 1 }")
            .unwrap_err();
        assert!(e.contains("gren"), "{e}");
        let e = parse("kind = \"leaky\"\nrate = 1").unwrap_err();
        assert!(e.contains("unknown conditioner kind \"leaky\""), "{e}");
        let e = parse(
            "kind = \"policy\"\n[[rules]]\nprofile = { rate = 1000, burst = 10 }\naction = \"shape\"\nactive = 1",
        )
        .unwrap_err();
        assert!(e.contains("active"), "{e}");
        let e = parse("kind = \"trtcm\"\ncir = 1000\ncbs = 100\npir = 2000").unwrap_err();
        assert!(e.contains("missing field") && e.contains("pbs"), "{e}");
    }

    #[test]
    fn validation_errors_name_the_key() {
        let key = |text: &str| parse(text).unwrap().validate().unwrap_err().key;
        assert_eq!(
            key("kind = \"trtcm\"\ncir = \"2Mbps\"\ncbs = 100\npir = \"1Mbps\"\npbs = 100"),
            "pir"
        );
        assert_eq!(
            key("kind = \"tsw3cm\"\ncir = \"2Mbps\"\npir = \"1Mbps\""),
            "pir"
        );
        assert_eq!(
            key("kind = \"token_bucket\"\nrate = 1000\ndepth = 0"),
            "depth"
        );
        assert_eq!(
            key("kind = \"token_bucket\"\nrate = 1000\ndepth = 10\ntimer = \"15ms\""),
            "timer"
        );
        assert_eq!(
            key("kind = \"token_bucket\"\nrate = 2000\ndepth = 10\npeak = 1000"),
            "peak"
        );
        assert_eq!(key("kind = \"srtcm\"\ncir = 1000\ncbs = 0\nebs = 0"), "cbs");
        assert_eq!(
            key("kind = \"trtcm\"\ncir = 1000\ncbs = 0\npir = 1000\npbs = 1"),
            "cbs"
        );
        assert_eq!(
            key("kind = \"srtcm\"\ncir = 1000\ncbs = 1\nebs = 0\ndscp = { red = 64 }"),
            "dscp.red"
        );
        assert_eq!(key("kind = \"tsw2cm\"\ncir = 1000\nwindow = 0"), "window");
        assert_eq!(key("kind = \"policy\"\nrules = []"), "rules");
        let pol = "kind = \"policy\"\n[[rules]]\n";
        assert_eq!(
            key(&format!(
                "{pol}profile = {{ rate = 1000, burst = 0 }}\naction = \"shape\""
            )),
            "rules[0].profile.burst"
        );
        assert_eq!(
            key(&format!("{pol}profile = {{ rate = 1000, burst = 10 }}")),
            "rules[0].action"
        );
        assert_eq!(key(&format!("{pol}filter = {{}}")), "rules[0].profile");
        assert_eq!(
            key(&format!(
                "{pol}conditioner = {{ kind = \"trtcm\", cir = 2000, cbs = 1, pir = 1000, pbs = 1 }}"
            )),
            "rules[0].conditioner.pir"
        );
        assert_eq!(
            key(&format!(
                "{pol}filter = {{ dscp = 99 }}\nprofile = {{ rate = 1000, burst = 10 }}\naction = \"police\""
            )),
            "rules[0].filter.dscp"
        );
        // Serde already refuses a zero rate in a file; validate guards configs built in code.
        assert!(parse("kind = \"token_bucket\"\nrate = 0\ndepth = 10").is_err());
    }

    #[test]
    fn zero_cir_is_a_legitimate_meter_profile() {
        // CIR = 0: the committed bucket never refills. srTCM: CBS, then EBS worth of
        // packets, then red for good; trTCM with PIR > 0: never green beyond CBS.
        let mut m = parse("kind = \"srtcm\"\ncir = 0\ncbs = 1000\nebs = 1000")
            .unwrap()
            .build(&no_nodes, RngStream::from_seed(1))
            .unwrap();
        let colours: Vec<_> = (0..4u64)
            .map(|s| {
                let mut p = Packet {
                    size: 1000,
                    ..Default::default()
                };
                m.condition(SimTime::from_secs(s * 100), &mut p);
                p.colour
            })
            .collect();
        use crate::packet::Colour::{Green, Red, Yellow};
        assert_eq!(colours, vec![Green, Yellow, Red, Red]);
        for text in [
            "kind = \"trtcm\"\ncir = \"0bps\"\ncbs = 100\npir = \"1Mbps\"\npbs = 100",
            "kind = \"tsw2cm\"\ncir = 0",
            "kind = \"tsw3cm\"\ncir = 0\npir = 1000",
        ] {
            parse(text).unwrap().validate().unwrap();
        }
        // A TSW2CM with CIR = 0 marks every packet out of profile.
        let mut m = parse("kind = \"tsw2cm\"\ncir = 0")
            .unwrap()
            .build(&no_nodes, RngStream::from_seed(1))
            .unwrap();
        for i in 0..100 {
            let mut p = Packet {
                size: 500,
                ..Default::default()
            };
            m.condition(SimTime::from_millis(i), &mut p);
            assert_eq!(p.colour, Yellow);
        }
        // Negative or malformed rates are still errors; a zero peak rate too.
        assert!(parse("kind = \"srtcm\"\ncir = -1\ncbs = 1\nebs = 1").is_err());
        assert!(parse("kind = \"srtcm\"\ncir = \"0 parsecs\"\ncbs = 1\nebs = 1").is_err());
        assert!(parse("kind = \"trtcm\"\ncir = 0\ncbs = 1\npir = 0\npbs = 1").is_err());
    }

    #[test]
    fn unknown_node_in_a_filter_is_an_error_naming_the_key() {
        let c = parse(
            "kind = \"policy\"\n[[rules]]\nfilter = { src = \"server\", dst = \"mars\" }\nprofile = { rate = 1000, burst = 10 }\naction = \"police\"",
        )
        .unwrap();
        let resolve = |n: &str| (n == "server").then_some(NodeId(0));
        let e = c.build(&resolve, RngStream::from_seed(1)).unwrap_err();
        assert_eq!(e.key, "rules[0].filter.dst");
        assert!(e.message.contains("mars"), "{}", e.message);
    }

    #[test]
    fn configs_round_trip_through_json() {
        let c = parse(
            "kind = \"policy\"\n[[rules]]\nfilter = { src = \"server\", src_port = 80 }\nprofile = { rate = \"1Mbps\", peak = \"2Mbps\", burst = \"20KB\" }\naction = \"shape\"\ntimer = \"periodic\"\naggregate = \"per_flow\"\nactive_from = \"10s\"",
        )
        .unwrap();
        let json = serde_json::to_string(&c).unwrap();
        let back: ConditionerConfig = serde_json::from_str(&json).unwrap();
        assert_eq!(back, c, "{json}");
    }
}

//! Conditioner configuration as users write it in scenario files, its validation, and
//! the builder that turns it into an [`AnyConditioner`].
//!
//! ```toml
//! egress = [
//!   { kind = "token_bucket", rate = "640kbps", depth = "16KB", action = "shape", timer = "15ms" },
//!   { kind = "trtcm", cir = "2Mbps", cbs = "10KB", pir = "3Mbps", pbs = "20KB" },
//! ]
//! ```
//!
//! Error keys are relative to the conditioner's table (`"pir"`, `"rules[0].filter.dst"`);
//! the scenario layer prefixes the table's own path.

use serde::{Deserialize, Serialize};

use super::action::{Codepoints, MeterAction, ShapeTimer};
use super::policy::{default_mtu, PolicyAction, PolicyRule, PolicyRuleConfig};
use super::token_bucket::{TbAction, TokenBucketConfig};
use super::trc::TrcConfig;
use super::trtcm::TrtcmConfig;
use super::tsw::TswConfig;
use super::{
    AnyConditioner, FixedDelay, Policy, Srtcm, SrtcmConfig, TokenBucket, Trtcm, Tsw2cm, Tsw3cm,
};
use crate::error::ScenarioError;
use crate::packet::{Colour, NodeId};
use crate::rng::RngStream;
use crate::scenario::Bytes;
use crate::time::{Dur, Rate, SimTime};

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

fn yellow() -> ColourName {
    ColourName::Yellow
}

/// What a token bucket does with non-conforming packets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TbActionName {
    /// Mark conforming green/in profile, others `out_colour` (P0 "police and mark").
    #[default]
    Mark,
    /// Drop non-conforming packets.
    Police,
    /// Hold non-conforming packets until they conform.
    Shape,
}

/// Default TSW averaging window (our choice; RFC 2859 §3 leaves AVG_INTERVAL open).
pub const DEFAULT_TSW_WINDOW: Dur = Dur::from_secs(1);

fn default_window() -> Dur {
    DEFAULT_TSW_WINDOW
}

/// One conditioner as written in a scenario file; `kind` selects the mechanism (read
/// through [`crate::de::Tagged`], so errors name the exact key).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self", rename_all = "snake_case", deny_unknown_fields)]
pub enum ConditionerConfig {
    /// Token bucket `<b, r, r_p, L_m>` (P0 §3.2) as marker, policer or shaper.
    TokenBucket {
        /// Token rate r.
        rate: Rate,
        /// Bucket depth b.
        depth: Bytes,
        /// Peak rate r_p; its bucket holds one `mtu`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        peak: Option<Rate>,
        /// L_m, the peak bucket's depth (default 1500 B).
        #[serde(default = "default_mtu")]
        mtu: Bytes,
        /// `mark` (default), `police` or `shape`.
        #[serde(default)]
        action: TbActionName,
        /// Shaping timer: `"exact"` (default), `"periodic"` (15 ms) or a period.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timer: Option<ShapeTimer>,
        /// Shaper buffer limit (default unlimited).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        buffer: Option<Bytes>,
        /// DSCP per colour when marking (default AF11/AF12/AF13).
        #[serde(default)]
        dscp: Codepoints,
        /// Colour of non-conforming packets when marking (default yellow).
        #[serde(default = "yellow")]
        out_colour: ColourName,
    },
    /// srTCM (RFC 2697).
    Srtcm {
        /// Committed Information Rate.
        cir: Rate,
        /// Committed Burst Size.
        cbs: Bytes,
        /// Excess Burst Size.
        ebs: Bytes,
        /// Colour-aware mode (default colour-blind).
        #[serde(default)]
        colour_aware: bool,
        /// `mark` (default) or `police` (drop red).
        #[serde(default)]
        action: MeterAction,
        /// DSCP per colour.
        #[serde(default)]
        dscp: Codepoints,
    },
    /// trTCM (RFC 2698).
    Trtcm {
        /// Committed Information Rate.
        cir: Rate,
        /// Committed Burst Size.
        cbs: Bytes,
        /// Peak Information Rate (≥ CIR).
        pir: Rate,
        /// Peak Burst Size.
        pbs: Bytes,
        /// Colour-aware mode (default colour-blind).
        #[serde(default)]
        colour_aware: bool,
        /// `mark` (default) or `police` (drop red).
        #[serde(default)]
        action: MeterAction,
        /// DSCP per colour.
        #[serde(default)]
        dscp: Codepoints,
    },
    /// TSW two-colour marker (Clark & Fang 1998).
    Tsw2cm {
        /// Committed (target) rate.
        cir: Rate,
        /// Estimator window AVG_INTERVAL (default 1 s).
        #[serde(default = "default_window")]
        window: Dur,
        /// `mark` (default) or `police` (drop out-of-profile).
        #[serde(default)]
        action: MeterAction,
        /// DSCP per colour.
        #[serde(default)]
        dscp: Codepoints,
        /// Colour of out-of-profile packets (default yellow).
        #[serde(default = "yellow")]
        out_colour: ColourName,
    },
    /// TSW three-colour marker (RFC 2859).
    Tsw3cm {
        /// Committed target rate (CTR).
        cir: Rate,
        /// Peak target rate (PTR, ≥ CIR).
        pir: Rate,
        /// Estimator window AVG_INTERVAL (default 1 s).
        #[serde(default = "default_window")]
        window: Dur,
        /// `mark` (default) or `police` (drop red).
        #[serde(default)]
        action: MeterAction,
        /// DSCP per colour.
        #[serde(default)]
        dscp: Codepoints,
    },
    /// Fixed delay line.
    Delay {
        /// How long every packet is held.
        delay: Dur,
    },
    /// Policy table (P0 §2.1 Table 1).
    Policy {
        /// Rules, tried in order; the first active match takes the packet.
        rules: Vec<PolicyRuleConfig>,
    },
    /// TCP rate controller for one flow (P1); see `cond::trc`.
    Trc(TrcConfig),
}

impl crate::de::Tagged for ConditionerConfig {
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
        crate::de::read_tagged(d)
    }
}

impl Serialize for ConditionerConfig {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        crate::de::write_tagged(self, s)
    }
}

fn err(key: impl Into<String>, msg: impl Into<String>) -> ScenarioError {
    ScenarioError::new(key, msg)
}

fn prefixed(prefix: &str, mut e: ScenarioError) -> ScenarioError {
    e.key = if e.key.is_empty() {
        prefix.trim_end_matches('.').to_string()
    } else {
        format!("{prefix}{}", e.key)
    };
    e
}

fn positive_rate(key: &str, r: Rate) -> Result<(), ScenarioError> {
    if r.bps() == 0 {
        return Err(err(key, "a rate must be positive, found 0"));
    }
    Ok(())
}

fn positive_size(key: &str, b: Bytes, what: &str) -> Result<(), ScenarioError> {
    if b.0 == 0 {
        return Err(err(key, format!("{what} must be positive, found 0 bytes")));
    }
    Ok(())
}

fn check_codepoints(cp: &Codepoints) -> Result<(), ScenarioError> {
    for (k, v) in [("green", cp.green), ("yellow", cp.yellow), ("red", cp.red)] {
        if v > 63 {
            return Err(err(
                format!("dscp.{k}"),
                format!("a DSCP is 6 bits (0–63), found {v}"),
            ));
        }
    }
    Ok(())
}

fn check_pir(cir: Rate, pir: Rate, rfc: &str) -> Result<(), ScenarioError> {
    if pir < cir {
        return Err(err(
            "pir",
            format!("PIR ({pir}) must be at least CIR ({cir}) ({rfc})"),
        ));
    }
    Ok(())
}

impl ConditionerConfig {
    /// Checks values serde cannot: zero rates and depths, PIR < CIR, codepoints, policy
    /// rule shape. Keys are relative to this conditioner's table.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        match self {
            ConditionerConfig::TokenBucket {
                rate,
                depth,
                peak,
                mtu,
                action,
                timer,
                buffer,
                dscp,
                ..
            } => {
                positive_rate("rate", *rate)?;
                positive_size("depth", *depth, "the bucket depth b")?;
                if let Some(p) = peak {
                    positive_rate("peak", *p)?;
                    if p < rate {
                        return Err(err(
                            "peak",
                            format!("the peak rate ({p}) must be at least the rate ({rate})"),
                        ));
                    }
                    positive_size("mtu", *mtu, "L_m (the peak bucket depth)")?;
                }
                if *action != TbActionName::Shape {
                    if timer.is_some() {
                        return Err(err("timer", "a timer is only used with action = \"shape\""));
                    }
                    if buffer.is_some() {
                        return Err(err(
                            "buffer",
                            "a buffer is only used with action = \"shape\"",
                        ));
                    }
                }
                if let Some(ShapeTimer::Periodic(p)) = timer {
                    if *p == Dur::ZERO {
                        return Err(err("timer", "a periodic timer needs a positive period"));
                    }
                }
                check_codepoints(dscp)
            }
            ConditionerConfig::Srtcm {
                cir,
                cbs,
                ebs,
                dscp,
                ..
            } => {
                positive_rate("cir", *cir)?;
                if cbs.0 == 0 && ebs.0 == 0 {
                    return Err(err("cbs", "CBS and EBS cannot both be zero (RFC 2697 §2)"));
                }
                check_codepoints(dscp)
            }
            ConditionerConfig::Trtcm {
                cir,
                cbs,
                pir,
                pbs,
                dscp,
                ..
            } => {
                positive_rate("cir", *cir)?;
                positive_rate("pir", *pir)?;
                check_pir(*cir, *pir, "RFC 2698 §2")?;
                positive_size("cbs", *cbs, "CBS")?;
                positive_size("pbs", *pbs, "PBS")?;
                check_codepoints(dscp)
            }
            ConditionerConfig::Tsw2cm {
                cir, window, dscp, ..
            } => {
                positive_rate("cir", *cir)?;
                if *window == Dur::ZERO {
                    return Err(err("window", "the TSW window must be positive"));
                }
                check_codepoints(dscp)
            }
            ConditionerConfig::Tsw3cm {
                cir,
                pir,
                window,
                dscp,
                ..
            } => {
                positive_rate("cir", *cir)?;
                positive_rate("pir", *pir)?;
                check_pir(*cir, *pir, "RFC 2859 §4")?;
                if *window == Dur::ZERO {
                    return Err(err("window", "the TSW window must be positive"));
                }
                check_codepoints(dscp)
            }
            ConditionerConfig::Delay { .. } => Ok(()),
            ConditionerConfig::Trc(t) => t.validate(),
            ConditionerConfig::Policy { rules } => {
                if rules.is_empty() {
                    return Err(err("rules", "a policy needs at least one rule"));
                }
                for (i, r) in rules.iter().enumerate() {
                    let pre = format!("rules[{i}].");
                    validate_rule(r).map_err(|e| prefixed(&pre, e))?;
                }
                Ok(())
            }
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
            ConditionerConfig::TokenBucket {
                rate,
                depth,
                peak,
                mtu,
                action,
                timer,
                buffer,
                dscp,
                out_colour,
            } => AnyConditioner::TokenBucket(TokenBucket::new(TokenBucketConfig {
                rate: *rate,
                depth: depth.0,
                peak: *peak,
                mtu: mtu.0,
                action: match action {
                    TbActionName::Mark => TbAction::Mark,
                    TbActionName::Police => TbAction::Police,
                    TbActionName::Shape => TbAction::Shape {
                        timer: timer.unwrap_or_default(),
                        buffer: buffer.map(|b| b.0),
                    },
                },
                codepoints: *dscp,
                out_colour: (*out_colour).into(),
            })),
            ConditionerConfig::Srtcm {
                cir,
                cbs,
                ebs,
                colour_aware,
                action,
                dscp,
            } => AnyConditioner::Srtcm(Srtcm::new(SrtcmConfig {
                cir: *cir,
                cbs: cbs.0,
                ebs: ebs.0,
                colour_aware: *colour_aware,
                action: *action,
                codepoints: *dscp,
            })),
            ConditionerConfig::Trtcm {
                cir,
                cbs,
                pir,
                pbs,
                colour_aware,
                action,
                dscp,
            } => AnyConditioner::Trtcm(Trtcm::new(TrtcmConfig {
                cir: *cir,
                cbs: cbs.0,
                pir: *pir,
                pbs: pbs.0,
                colour_aware: *colour_aware,
                action: *action,
                codepoints: *dscp,
            })),
            ConditionerConfig::Tsw2cm {
                cir,
                window,
                action,
                dscp,
                out_colour,
            } => AnyConditioner::Tsw2cm(Tsw2cm::new(
                TswConfig {
                    cir: *cir,
                    pir: None,
                    window: *window,
                    action: *action,
                    codepoints: *dscp,
                    out_colour: (*out_colour).into(),
                },
                rng,
            )),
            ConditionerConfig::Tsw3cm {
                cir,
                pir,
                window,
                action,
                dscp,
            } => AnyConditioner::Tsw3cm(Tsw3cm::new(
                TswConfig {
                    cir: *cir,
                    pir: Some(*pir),
                    window: *window,
                    action: *action,
                    codepoints: *dscp,
                    out_colour: Colour::Red,
                },
                rng,
            )),
            ConditionerConfig::Delay { delay } => {
                AnyConditioner::FixedDelay(FixedDelay::new(*delay))
            }
            ConditionerConfig::Trc(t) => AnyConditioner::Trc(t.build()?),
            ConditionerConfig::Policy { rules } => {
                let mut built = Vec::with_capacity(rules.len());
                for (i, r) in rules.iter().enumerate() {
                    let pre = format!("rules[{i}].");
                    built.push(build_rule(r, resolve).map_err(|e| prefixed(&pre, e))?);
                }
                AnyConditioner::Policy(Policy::new(built, rng))
            }
        })
    }
}

/// The conditioner config a rule stands for: its `conditioner`, or a token bucket from
/// its P0 `profile` + `action`.
fn rule_inner(r: &PolicyRuleConfig) -> Result<ConditionerConfig, ScenarioError> {
    match (&r.profile, &r.conditioner) {
        (Some(_), Some(_)) => Err(err(
            "conditioner",
            "give either profile + action or conditioner, not both",
        )),
        (None, None) => Err(err(
            "profile",
            "a rule needs a profile + action (P0 Table 1) or a conditioner",
        )),
        (None, Some(c)) => {
            if r.action.is_some() || r.buffer.is_some() || r.timer != ShapeTimer::Exact {
                return Err(err(
                    "action",
                    "action, timer and buffer go with profile; put them inside conditioner",
                ));
            }
            if matches!(**c, ConditionerConfig::Policy { .. }) {
                return Err(err("conditioner", "a policy cannot nest another policy"));
            }
            Ok((**c).clone())
        }
        (Some(p), None) => {
            let action = r.action.ok_or_else(|| {
                err(
                    "action",
                    "a profile needs an action: \"police_and_mark\", \"police\" or \"shape\"",
                )
            })?;
            if action != PolicyAction::Shape && (r.buffer.is_some() || r.timer != ShapeTimer::Exact)
            {
                return Err(err(
                    "timer",
                    "timer and buffer are only used with action = \"shape\"",
                ));
            }
            Ok(ConditionerConfig::TokenBucket {
                rate: p.rate,
                depth: p.burst,
                peak: p.peak,
                mtu: p.mtu,
                action: match action {
                    PolicyAction::PoliceAndMark => TbActionName::Mark,
                    PolicyAction::Police => TbActionName::Police,
                    PolicyAction::Shape => TbActionName::Shape,
                },
                timer: (action == PolicyAction::Shape).then_some(r.timer),
                buffer: r.buffer,
                dscp: Codepoints::default(),
                out_colour: ColourName::Yellow,
            })
        }
    }
}

fn validate_rule(r: &PolicyRuleConfig) -> Result<(), ScenarioError> {
    r.filter.validate("filter")?;
    let inner = rule_inner(r)?;
    let pre = if r.conditioner.is_some() {
        "conditioner."
    } else {
        "profile."
    };
    inner.validate().map_err(|e| {
        // Profile fields have their own names in the rule.
        let mut e = prefixed(pre, e);
        if pre == "profile." {
            e.key = e
                .key
                .replace("profile.depth", "profile.burst")
                .replace("profile.timer", "timer")
                .replace("profile.buffer", "buffer");
        }
        e
    })
}

fn build_rule(
    r: &PolicyRuleConfig,
    resolve: &dyn Fn(&str) -> Option<NodeId>,
) -> Result<PolicyRule, ScenarioError> {
    let filter = r.filter.build("filter", resolve)?;
    let inner = rule_inner(r)?;
    // The prototype's stream is replaced per key by the policy.
    let prototype = inner.build(resolve, RngStream::from_seed(0))?;
    Ok(PolicyRule {
        filter,
        aggregate: r.aggregate,
        active_from: SimTime::ZERO + r.active_from,
        prototype,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
            ConditionerConfig::TokenBucket {
                rate,
                depth,
                action,
                timer,
                ..
            } => {
                assert_eq!(*rate, Rate::from_kbps(640));
                assert_eq!(*depth, Bytes(16_000));
                assert_eq!(*action, TbActionName::Shape);
                assert_eq!(*timer, Some(ShapeTimer::Periodic(Dur::from_millis(15))));
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

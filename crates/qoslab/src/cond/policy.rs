//! Policy tables (P0 §2.1, Table 1): filter → traffic profile → conditioning action,
//! with state per flow or per aggregate.
//!
//! The first rule whose filter matches and whose activation time has come takes the
//! packet; a packet no rule takes passes untouched. Each rule keeps a prototype of its
//! meter/marker/shaper and clones it lazily, the first time a packet of a new key
//! (flow, destination, source–destination pair, or the whole rule) arrives.
//!
//! A rule with `active_from = t` binds flows that already exist: classification is per
//! packet, so every packet from `t` on is matched, whenever its flow began (P0 §6: a new
//! policy tags existing sockets that match).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use serde::{Deserialize, Serialize};

use super::action::{Codepoints, ColourName, ShapeTimer};
use super::check::prefixed;
use super::classify::{Filter, FilterConfig};
use super::token_bucket::{default_mtu, TbActionName, TokenBucketConfig};
use super::{Action, AnyConditioner, Conditioner, ConditionerConfig};
use crate::config::ScenarioError;
use crate::packet::{NodeId, Packet};
use crate::rng::RngStream;
use crate::time::{Dur, Rate, SimTime};
use crate::units::Bytes;

/// Which packets of a rule share one state instance (P0 §3.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Aggregate {
    /// One instance per flow (P0 "partitioned", one bucket per connection).
    PerFlow,
    /// One per destination node (per client).
    PerDestination,
    /// One per (source, destination) pair.
    PerPair,
    /// One for everything the rule matches (P0 "common bucket").
    #[default]
    PerPolicy,
}

impl Aggregate {
    #[inline]
    fn key(self, p: &Packet) -> u64 {
        match self {
            Aggregate::PerFlow => p.flow.0 as u64,
            Aggregate::PerDestination => p.dst.0 as u64,
            Aggregate::PerPair => ((p.src.0 as u64) << 32) | p.dst.0 as u64,
            Aggregate::PerPolicy => 0,
        }
    }
}

/// P0 Table 1's traffic profile `(average rate, peak rate, burst)`, i.e. `<b, r, r_p, L_m>`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileConfig {
    /// Average (token) rate r.
    pub rate: Rate,
    /// Peak rate r_p (optional); its bucket holds one `mtu`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak: Option<Rate>,
    /// Burst: bucket depth b.
    pub burst: Bytes,
    /// L_m: largest packet, the peak bucket's depth (default 1500 B).
    #[serde(default = "default_mtu")]
    pub mtu: Bytes,
}

/// P0 Table 1's traffic conditioning column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicyAction {
    /// In-profile packets marked (green, in profile), others sent unmarked (P0 §3.2).
    PoliceAndMark,
    /// Out-of-profile packets dropped.
    Police,
    /// Out-of-profile packets held until they conform.
    Shape,
}

/// One row of a policy table, as written in a scenario file.
///
/// Either `profile` + `action` (P0 Table 1) or `conditioner` (any meter/marker/shaper
/// config except a nested policy) says what to do with matching packets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyRuleConfig {
    /// Which packets the rule takes.
    #[serde(default)]
    pub filter: FilterConfig,
    /// P0 traffic profile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<ProfileConfig>,
    /// P0 conditioning action for `profile`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<PolicyAction>,
    /// Shaping timer for `action = "shape"` (default exact).
    #[serde(default)]
    pub timer: ShapeTimer,
    /// Shaper buffer for `action = "shape"` (default unlimited).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer: Option<Bytes>,
    /// Any other conditioner, instead of `profile` + `action`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditioner: Option<Box<ConditionerConfig>>,
    /// How state is shared (default: one per policy).
    #[serde(default)]
    pub aggregate: Aggregate,
    /// When the rule is installed (default: from the start).
    #[serde(default)]
    pub active_from: Dur,
}

/// A hasher for integer keys (Fibonacci hashing; keys are never attacker-chosen here).
#[derive(Default)]
pub(crate) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(8) ^ *b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, k: u64) {
        self.0 = (self.0 ^ k).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// One compiled rule with its lazily created instances.
#[derive(Clone, Debug)]
struct Rule {
    filter: Filter,
    aggregate: Aggregate,
    active_from: SimTime,
    proto: Box<AnyConditioner>,
    seed: u64,
    index: HashMap<u64, usize, BuildHasherDefault<KeyHasher>>,
    inst: Vec<AnyConditioner>,
}

/// A compiled policy table (P0 §2.1 Table 1).
#[derive(Clone, Debug)]
pub struct Policy {
    rules: Vec<Rule>,
    /// The rule that took the last packet offered (for the colour statistics).
    last_rule: Option<usize>,
}

/// A compiled rule before it joins a [`Policy`]: filter, sharing, activation time and
/// the prototype conditioner cloned per key.
#[derive(Debug)]
pub struct PolicyRule {
    /// Which packets the rule takes.
    pub filter: Filter,
    /// How state is shared.
    pub aggregate: Aggregate,
    /// When the rule starts taking packets.
    pub active_from: SimTime,
    /// The conditioner cloned for each new key.
    pub prototype: AnyConditioner,
}

impl Policy {
    /// A policy table; `rng` seeds the per-key streams (each key's stream depends only on
    /// the rule index and the key, not on arrival order).
    pub fn new(rules: Vec<PolicyRule>, mut rng: RngStream) -> Self {
        let rules = rules
            .into_iter()
            .map(|r| Rule {
                filter: r.filter,
                aggregate: r.aggregate,
                active_from: r.active_from,
                proto: Box::new(r.prototype),
                seed: rng.next_u64(),
                index: HashMap::default(),
                inst: Vec::new(),
            })
            .collect();
        Policy {
            rules,
            last_rule: None,
        }
    }

    /// The conditioner of the rule that took the last packet offered (`None`: no rule
    /// took it).
    pub fn last_conditioner(&self) -> Option<&AnyConditioner> {
        self.last_rule.map(|i| &*self.rules[i].proto)
    }

    /// Number of state instances rule `rule` has created so far.
    pub fn instances(&self, rule: usize) -> usize {
        self.rules.get(rule).map_or(0, |r| r.inst.len())
    }

    /// Index of the rule that takes `pkt` at `now`, if any.
    #[inline]
    pub fn classify(&self, now: SimTime, pkt: &Packet) -> Option<usize> {
        self.rules
            .iter()
            .position(|r| now >= r.active_from && r.filter.matches(pkt))
    }
}

impl Conditioner for Policy {
    fn condition(&mut self, now: SimTime, pkt: &mut Packet) -> Action {
        self.last_rule = self.classify(now, pkt);
        let Some(i) = self.last_rule else {
            return Action::Pass;
        };
        let rule = &mut self.rules[i];
        let key = rule.aggregate.key(pkt);
        let slot = match rule.index.get(&key) {
            Some(&s) => s,
            None => {
                let mut c = (*rule.proto).clone();
                c.reseed(RngStream::from_seed(
                    rule.seed ^ key.wrapping_mul(0xD1B5_4A32_D192_ED03),
                ));
                rule.inst.push(c);
                rule.index.insert(key, rule.inst.len() - 1);
                rule.inst.len() - 1
            }
        };
        rule.inst[slot].condition(now, pkt)
    }

    fn next_timer(&self) -> Option<SimTime> {
        self.rules
            .iter()
            .flat_map(|r| r.inst.iter())
            .filter_map(|c| c.next_timer())
            .min()
    }

    fn on_timer(&mut self, now: SimTime) {
        for c in self.rules.iter_mut().flat_map(|r| r.inst.iter_mut()) {
            if c.next_timer().is_some_and(|t| t <= now) {
                c.on_timer(now);
            }
        }
    }
}

/// A policy table's keys in a scenario (`kind = "policy"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyConfig {
    /// Rules, tried in order; the first active match takes the packet.
    pub rules: Vec<PolicyRuleConfig>,
}

impl PolicyConfig {
    /// Checks every rule's shape, filter and conditioner; keys are `rules[i]. …`.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        if self.rules.is_empty() {
            return Err(ScenarioError::new(
                "rules",
                "a policy needs at least one rule",
            ));
        }
        for (i, r) in self.rules.iter().enumerate() {
            let pre = format!("rules[{i}].");
            validate_rule(r).map_err(|e| prefixed(&pre, e))?;
        }
        Ok(())
    }

    /// The policy; `resolve` maps node names in filters to nodes (an unknown name is an
    /// error naming its key); `rng` is the policy's own stream.
    pub fn build(
        &self,
        resolve: &dyn Fn(&str) -> Option<NodeId>,
        rng: RngStream,
    ) -> Result<Policy, ScenarioError> {
        let mut built = Vec::with_capacity(self.rules.len());
        for (i, r) in self.rules.iter().enumerate() {
            let pre = format!("rules[{i}].");
            built.push(build_rule(r, resolve).map_err(|e| prefixed(&pre, e))?);
        }
        Ok(Policy::new(built, rng))
    }
}

/// The conditioner config a rule stands for: its `conditioner`, or a token bucket from
/// its P0 `profile` + `action`.
fn rule_inner(r: &PolicyRuleConfig) -> Result<ConditionerConfig, ScenarioError> {
    let err = ScenarioError::new;
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
            if matches!(**c, ConditionerConfig::Policy(_)) {
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
            Ok(ConditionerConfig::TokenBucket(TokenBucketConfig {
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
                coarse: false,
            }))
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
    use crate::drop::DropCause;
    use crate::packet::{Colour, FlowId, NodeId};

    fn resolve(name: &str) -> Option<NodeId> {
        match name {
            "server" => Some(NodeId(0)),
            n => n.strip_prefix('c').and_then(|i| i.parse().ok()).map(NodeId),
        }
    }

    fn policy(toml_text: &str) -> Policy {
        let cfg: ConditionerConfig = toml::from_str(toml_text).unwrap();
        cfg.validate().unwrap();
        match cfg.build(&resolve, RngStream::from_seed(1)).unwrap() {
            AnyConditioner::Policy(p) => p,
            other => panic!("not a policy: {other:?}"),
        }
    }

    fn pkt(flow: u32, dst: u32) -> Packet {
        Packet {
            flow: FlowId(flow),
            src: NodeId(0),
            dst: NodeId(dst),
            dst_port: 5000,
            size: 1000,
            ..Default::default()
        }
    }

    const TB_RULE: &str = r#"
        kind = "policy"
        [[rules]]
        filter = { src = "server" }
        profile = { rate = "800kbps", burst = "10KB" }
        action = "police_and_mark"
    "#;

    #[test]
    fn aggregation_keys_decide_how_many_instances_exist() {
        // n = 4 flows, all to client c1: per flow → 4 instances, per destination → 1.
        // Then 4 flows to 4 clients: per destination → 4, per pair → 4, per policy → 1.
        let run = |agg: &str, dst_of: &dyn Fn(u32) -> u32| {
            let mut p = policy(&format!("{TB_RULE}aggregate = \"{agg}\"\n"));
            for f in 0..4 {
                let mut pk = pkt(f, dst_of(f));
                p.condition(SimTime::ZERO, &mut pk);
            }
            p.instances(0)
        };
        assert_eq!(run("per_flow", &|_| 1), 4);
        assert_eq!(run("per_destination", &|_| 1), 1);
        assert_eq!(run("per_destination", &|f| f + 1), 4);
        assert_eq!(run("per_pair", &|f| f + 1), 4);
        assert_eq!(run("per_pair", &|_| 1), 1);
        assert_eq!(run("per_policy", &|f| f + 1), 1);
    }

    #[test]
    fn per_flow_state_is_independent_per_policy_state_is_shared() {
        // Bucket of 10 KB: 10 packets of 1000 B are green. Two flows, 10 packets each
        // at t = 0: per flow both get 10 green; shared, only 10 in total are green.
        let greens = |agg: &str| {
            let mut p = policy(&format!("{TB_RULE}aggregate = \"{agg}\"\n"));
            let mut g = 0;
            for f in 0..2 {
                for _ in 0..10 {
                    let mut pk = pkt(f, 1);
                    p.condition(SimTime::ZERO, &mut pk);
                    g += pk.in_profile as u32;
                }
            }
            g
        };
        assert_eq!(greens("per_flow"), 20);
        assert_eq!(greens("per_policy"), 10);
    }

    #[test]
    fn non_matching_packets_pass_untouched() {
        let mut p = policy(TB_RULE);
        let mut pk = pkt(0, 1);
        pk.src = NodeId(3);
        pk.dscp = 46;
        let before = pk;
        assert_eq!(p.condition(SimTime::ZERO, &mut pk), Action::Pass);
        assert_eq!(pk, before);
        assert_eq!(p.instances(0), 0);
    }

    #[test]
    fn policy_installed_at_t_binds_an_existing_flow_from_t_on() {
        // Rule: police at 80 kb/s (10 KB/s), burst 2 KB, from t = 1 s. Flow 7 sends
        // 1000 B every 10 ms (800 kb/s) from t = 0: untouched before 1 s; from 1 s on
        // the policer takes it: 2 packets of burst, then one in ten conforms.
        let mut p = policy(
            r#"
            kind = "policy"
            [[rules]]
            filter = { src = "server", dst = "c1", dst_port = 5000 }
            profile = { rate = "80kbps", burst = "2KB" }
            action = "police"
            aggregate = "per_flow"
            active_from = "1s"
            "#,
        );
        let mut before = 0;
        let mut dropped_after = 0;
        let mut passed_after = 0;
        for k in 0..200u64 {
            let t = SimTime::from_millis(10 * k);
            let mut pk = pkt(7, 1);
            let a = p.condition(t, &mut pk);
            if t < SimTime::from_secs(1) {
                assert_eq!(a, Action::Pass);
                before += 1;
            } else if a == Action::Drop(DropCause::Policed) {
                dropped_after += 1;
            } else {
                passed_after += 1;
            }
        }
        assert_eq!(before, 100);
        assert_eq!(p.instances(0), 1);
        // From 1.00 s to 1.99 s the bucket earns 9 900 B on top of its 2 000 B burst:
        // 11 packets pass (1.00, 1.01, then 1.11, 1.21, …, 1.91), 89 are dropped.
        assert_eq!((passed_after, dropped_after), (11, 89));
    }

    #[test]
    fn first_matching_rule_wins_and_inner_can_be_any_meter() {
        let mut p = policy(
            r#"
            kind = "policy"
            [[rules]]
            filter = { dst = "c2" }
            conditioner = { kind = "trtcm", cir = "8kbps", cbs = 1000, pir = "16kbps", pbs = 2000 }
            [[rules]]
            filter = {}
            profile = { rate = "1Mbps", burst = "100KB" }
            action = "police_and_mark"
            "#,
        );
        let mut a = pkt(0, 2);
        a.size = 1500;
        // trTCM: 1500 > CBS → yellow.
        p.condition(SimTime::ZERO, &mut a);
        assert_eq!(a.colour, Colour::Yellow);
        let mut b = pkt(0, 1);
        p.condition(SimTime::ZERO, &mut b);
        assert_eq!((b.colour, b.in_profile), (Colour::Green, true));
        assert_eq!((p.instances(0), p.instances(1)), (1, 1));
    }
}

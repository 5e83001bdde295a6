//! Validation across keys (names, connectivity, times) and the world builder.

use std::collections::HashMap;

use super::model::Scenario;
use super::trc::{self, Place};
use crate::cond::{Chain, ConditionerConfig};
use crate::config::ScenarioError;
use crate::net::{Hook, Iface, IfaceCounters, IfaceId, Node, NodeCounters, NodeKind, Routes};
use crate::packet::NodeId;
use crate::queue::{ClassContext, QueueConfig};
use crate::rng::RngStream;
use crate::time::SimTime;
use crate::world::{DropLog, RecordPlan, World};

/// `e` with its key placed under `prefix`.
pub(super) fn at(prefix: String, e: ScenarioError) -> ScenarioError {
    let key = if e.key.is_empty() {
        prefix
    } else {
        format!("{prefix}.{}", e.key)
    };
    ScenarioError::new(key, e.message)
}

fn check_prob(key: String, p: f64) -> Result<(), ScenarioError> {
    if (0.0..=1.0).contains(&p) {
        Ok(())
    } else {
        Err(ScenarioError::new(
            key,
            format!("expected a probability in [0, 1], found {p}"),
        ))
    }
}

/// Name tables shared by the build steps.
pub(super) struct Names<'a> {
    /// Nodes by name.
    pub(super) nodes: HashMap<&'a str, NodeId>,
    /// Interfaces by name.
    pub(super) ifaces: HashMap<String, IfaceId>,
    /// Flows by name, to their index.
    pub(super) flows: HashMap<&'a str, usize>,
}

impl Names<'_> {
    /// The node called `name`, or an error at `key` listing the nodes there are.
    pub(super) fn node(&self, key: String, name: &str) -> Result<NodeId, ScenarioError> {
        self.nodes.get(name).copied().ok_or_else(|| {
            let mut known: Vec<&str> = self.nodes.keys().copied().collect();
            known.sort_unstable();
            ScenarioError::new(
                key,
                format!("no node named {name:?} (nodes: {})", known.join(", ")),
            )
        })
    }
}

/// Validates `sc` and builds the world it describes.
pub fn build(sc: &Scenario) -> Result<World, ScenarioError> {
    let mut w = world_for(sc)?;
    let mut names = Names {
        nodes: HashMap::new(),
        ifaces: HashMap::new(),
        flows: HashMap::new(),
    };
    nodes(sc, &mut w, &mut names)?;
    links(sc, &mut w, &mut names)?;
    let dests = super::flows::flows(sc, &mut w, &mut names)?;
    routes(sc, &mut w, &dests)?;
    conditioners(sc, &mut w, &names)?;
    super::eruf::bind(sc, &mut w, &names.ifaces)?;
    super::qosmgr::build(sc, &mut w, &|n| names.nodes.get(n).copied())?;
    record(sc, &mut w, &names)?;
    w.capture_plan = crate::capture::resolve(&sc.capture, &w.ifaces, &w.flows)?;
    Ok(w)
}

/// An empty world with the run's times, after checking them.
fn world_for(sc: &Scenario) -> Result<World, ScenarioError> {
    if sc.duration == crate::time::Dur::ZERO {
        return Err(ScenarioError::new(
            "duration",
            "expected a positive duration, found 0",
        ));
    }
    if sc.warmup >= sc.duration {
        return Err(ScenarioError::new(
            "warmup",
            format!(
                "expected a warm-up shorter than the duration ({}), found {}",
                sc.duration, sc.warmup
            ),
        ));
    }
    if sc.max_events == Some(0) {
        return Err(ScenarioError::new(
            "max_events",
            "expected a positive number of events (leave it out for no limit), found 0",
        ));
    }
    let end = SimTime::ZERO + sc.duration;
    let mut w = World::new(end, SimTime::ZERO + sc.warmup);
    w.max_events = sc.max_events.unwrap_or(u64::MAX);
    Ok(w)
}

/// Nodes, with unique non-empty names.
fn nodes<'a>(sc: &'a Scenario, w: &mut World, names: &mut Names<'a>) -> Result<(), ScenarioError> {
    for (i, n) in sc.node.iter().enumerate() {
        if n.name.is_empty() {
            return Err(ScenarioError::new(
                format!("node[{i}].name"),
                "expected a non-empty name",
            ));
        }
        if names
            .nodes
            .insert(n.name.as_str(), NodeId(i as u32))
            .is_some()
        {
            return Err(ScenarioError::new(
                format!("node[{i}].name"),
                format!("duplicate node name {:?}", n.name),
            ));
        }
        let dscp = crate::cond::DscpTable::with_overrides(&n.dscp_map).map_err(|e| {
            let key = crate::config::join(&format!("node[{i}].dscp_map"), &e.key);
            ScenarioError::new(key, e.message)
        })?;
        let addr = match &n.address {
            None => crate::capture::wire::ipv4(NodeId(i as u32)),
            Some(a) => crate::cond::classify::parse_ipv4(a).ok_or_else(|| {
                ScenarioError::new(
                    format!("node[{i}].address"),
                    format!("expected an IPv4 address such as \"10.1.2.3\", found {a:?}"),
                )
            })?,
        };
        if let Some(p) = n.pos.filter(|p| !p.iter().all(|v| v.is_finite())) {
            return Err(ScenarioError::new(
                format!("node[{i}].pos"),
                format!("expected two finite numbers [x, y], found {p:?}"),
            ));
        }
        w.nodes.push(Node {
            addr,
            dscp,
            name: n.name.clone(),
            kind: n.kind,
            ifaces: Vec::new(),
            host_egress: Hook::default(),
            ingress: Hook::default(),
            counters: NodeCounters::default(),
            quench: super::eruf::quench_of(n, i)?,
        });
    }
    // Addresses are unique (a default may collide with one given elsewhere).
    let mut seen: HashMap<[u8; 4], usize> = HashMap::new();
    for (i, n) in w.nodes.iter().enumerate() {
        if let Some(first) = seen.insert(n.addr, i) {
            let [a, b, c, d] = n.addr;
            let k = if sc.node[i].address.is_some() {
                i
            } else {
                first
            };
            return Err(ScenarioError::new(
                format!("node[{k}].address"),
                format!(
                    "address {a}.{b}.{c}.{d} is also node {:?}'s (every node needs its own; \
                     unset addresses are 10.0.0.0 + index + 1)",
                    w.nodes[if k == i { first } else { i }].name
                ),
            ));
        }
    }
    Ok(())
}

/// Links: two interfaces each, with their queues and loss models.
fn links(sc: &Scenario, w: &mut World, names: &mut Names) -> Result<(), ScenarioError> {
    for (i, l) in sc.link.iter().enumerate() {
        let a = names.node(format!("link[{i}].a"), &l.a)?;
        let b = names.node(format!("link[{i}].b"), &l.b)?;
        if a == b {
            return Err(ScenarioError::new(
                format!("link[{i}].b"),
                "a link must join two different nodes",
            ));
        }
        check_prob(format!("link[{i}].loss"), l.loss)?;
        let dirs = [
            (
                a,
                b,
                l.rate,
                &l.queue_a_to_b,
                "queue_a_to_b",
                l.loss_a_to_b,
                "loss_a_to_b",
            ),
            (
                b,
                a,
                l.rate_b_to_a.unwrap_or(l.rate),
                &l.queue_b_to_a,
                "queue_b_to_a",
                l.loss_b_to_a,
                "loss_b_to_a",
            ),
        ];
        for (from, to, rate, q_override, q_key, loss_override, loss_key) in dirs {
            let (qcfg, qkey) = match (q_override, &l.queue) {
                (Some(q), _) => (q.clone(), format!("link[{i}].{q_key}")),
                (None, Some(q)) => (q.clone(), format!("link[{i}].queue")),
                (None, None) => (QueueConfig::default(), format!("link[{i}].queue")),
            };
            qcfg.validate().map_err(|e| at(qkey.clone(), e))?;
            let loss = loss_override.unwrap_or(l.loss);
            check_prob(format!("link[{i}].{loss_key}"), loss)?;
            let name = format!(
                "{}->{}",
                sc.node[from.0 as usize].name, sc.node[to.0 as usize].name
            );
            let id = IfaceId(w.ifaces.len() as u32);
            if names.ifaces.insert(name.clone(), id).is_some() {
                return Err(ScenarioError::new(
                    format!("link[{i}]"),
                    format!("a second link {name} (parallel links are not supported)"),
                ));
            }
            let seed = sc.seed;
            let addrs: Vec<[u8; 4]> = w.nodes.iter().map(|n| n.addr).collect();
            let ctx = ClassContext {
                addrs: &addrs,
                table: &w.nodes[from.0 as usize].dscp,
                nodes: &|n| names.nodes.get(n).copied(),
                flows: &|n| {
                    sc.flow
                        .iter()
                        .position(|f| f.name == n)
                        .map(|k| crate::packet::FlowId(k as u32))
                },
            };
            let queue = qcfg
                .build_in(
                    rate,
                    RngStream::derive(seed, &format!("queue/{name}")),
                    &ctx,
                )
                .map_err(|e| ScenarioError::new(crate::config::join(&qkey, &e.key), e.message))?;
            w.ifaces.push(Iface {
                queue,
                loss_rng: RngStream::derive(seed, &format!("loss/{name}")),
                name,
                node: from,
                peer: to,
                rate,
                delay: l.delay,
                framing: l.framing,
                egress: Hook::default(),
                ingress: Hook::default(),
                loss,
                busy_until: SimTime::ZERO,
                tx_pending: false,
                on_wire: Default::default(),
                arrive_pending: false,
                counters: IfaceCounters::default(),
                cut: Default::default(),
                ahead: Default::default(),
            });
            w.nodes[from.0 as usize].ifaces.push(id);
        }
    }
    Ok(())
}

/// Static routes; every flow must have a path both ways.
fn routes(sc: &Scenario, w: &mut World, dests: &[NodeId]) -> Result<(), ScenarioError> {
    let node_ifaces: Vec<Vec<IfaceId>> = w.nodes.iter().map(|n| n.ifaces.clone()).collect();
    w.routes = Routes::compute(w.nodes.len(), &w.ifaces, &node_ifaces, dests);
    for (i, f) in w.flows.iter().enumerate() {
        if !w.routes.reachable(f.src, f.dst, &w.ifaces) {
            return Err(ScenarioError::new(
                format!("flow[{i}].to"),
                format!("no route from {:?} to {:?}", sc.flow[i].from, sc.flow[i].to),
            ));
        }
        if !w.routes.reachable(f.dst, f.src, &w.ifaces) {
            return Err(ScenarioError::new(
                format!("flow[{i}].from"),
                format!(
                    "no route back from {:?} to {:?}",
                    sc.flow[i].to, sc.flow[i].from
                ),
            ));
        }
    }
    Ok(())
}

/// Conditioner chains at their places (TRC stages bound to their flows first, P1).
fn conditioners(sc: &Scenario, w: &mut World, names: &Names) -> Result<(), ScenarioError> {
    let resolve = |name: &str| names.nodes.get(name).copied();
    let mut trcs = Vec::new();
    // P1 §3: one TRC per flow (two would each drop and delay by the full model).
    let mut trc_of: HashMap<String, String> = HashMap::new();
    for (i, c) in sc.conditioner.iter().enumerate() {
        let key = |k: &str| format!("conditioner[{i}].{k}");
        if let Some(f) = &c.iface_in {
            input_chain(sc, w, names, i, c, f)?;
            continue;
        }
        // TRC stages are bound to their flow and path first (P1).
        let mut stages = c.stages.clone();
        let place = match (&c.at, &c.iface) {
            (Some(n), None) => names.nodes.get(n.as_str()).map(|&id| Place::Node(id)),
            (None, Some(f)) => names.ifaces.get(f.as_str()).map(|&id| Place::Iface(id)),
            _ => None, // reported below
        };
        let flow_id = |n: &str| names.flows.get(n).map(|&k| crate::packet::FlowId(k as u32));
        let addrs: Vec<[u8; 4]> = w.nodes.iter().map(|n| n.addr).collect();
        for (j, s) in stages.iter_mut().enumerate() {
            s.bind_flows(&flow_id, &addrs).map_err(|e| {
                let key = crate::config::join(&format!("conditioner[{i}].stages[{j}]"), &e.key);
                ScenarioError::new(key, e.message)
            })?;
            if let (ConditionerConfig::Trc(t), Some(place)) = (s, place) {
                let k = format!("conditioner[{i}].stages[{j}]");
                if let Some(first) = trc_of.insert(t.flow.clone(), k.clone()) {
                    return Err(ScenarioError::new(
                        format!("{k}.flow"),
                        format!(
                            "flow `{}` already has a TRC at {first}; a flow gets one TRC \
                             (P1 §3), remove one of them",
                            t.flow
                        ),
                    ));
                }
                trcs.push(trc::bind(t, &k, place, w, sc)?);
            }
        }
        let chain = Chain::build(
            &stages,
            &resolve,
            RngStream::derive(sc.seed, &format!("conditioner/{i}")),
        )
        .map_err(|e| ScenarioError::new(format!("conditioner[{i}].stages{}", e.key), e.message))?;
        // Stages read drop precedences through the hosting node's DSCP table.
        let host = match place {
            Some(Place::Node(n)) => Some(n),
            Some(Place::Iface(f)) => Some(w.ifaces[f.0 as usize].node),
            None => None,
        };
        let chain = match host {
            Some(n) => chain.with_colours(w.nodes[n.0 as usize].dscp.colours),
            None => chain,
        };
        let hook = match (&c.at, &c.iface) {
            (Some(n), None) => {
                let id = names.node(key("at"), n)?;
                let node = &mut w.nodes[id.0 as usize];
                match node.kind {
                    NodeKind::Host => &mut node.host_egress,
                    NodeKind::Router => &mut node.ingress,
                }
            }
            (None, Some(f)) => {
                let id = names.ifaces.get(f.as_str()).copied().ok_or_else(|| {
                    ScenarioError::new(
                        key("iface"),
                        format!("no interface named {f:?} (interfaces are named \"a->b\")"),
                    )
                })?;
                &mut w.ifaces[id.0 as usize].egress
            }
            _ => {
                return Err(ScenarioError::new(
                    key("at"),
                    "expected exactly one of `at` (a node), `iface` or `iface_in` (\"a->b\")",
                ))
            }
        };
        if !hook.is_empty() {
            return Err(ScenarioError::new(
                format!("conditioner[{i}]"),
                "a second conditioner chain at the same place; put all stages in one chain",
            ));
        }
        *hook = Hook::new(chain);
    }
    link_exchanges(w);
    let admitted = trc::admit(&trcs, w, sc)?;
    w.warnings = admitted.warnings;
    w.queue_rule = admitted.queue_rule;
    w.warnings.extend(multcp_warnings(sc));
    w.warnings.extend(super::plausible::warnings(sc));
    Ok(())
}

/// A MulTCP flow of weight > 1 over Reno or Tahoe: its w-segment increases overflow a
/// queue by several packets at once, and Reno's fast recovery repairs one loss per
/// window, so most recoveries end in a timeout and the flow gets *less* than a unit
/// flow (P4 §3.1's burstiness; the invariant `multcp-monotone` found 9 of 60 draws
/// inverted with Reno). NewReno or SACK repair several losses per window.
fn multcp_warnings(sc: &Scenario) -> Vec<String> {
    use crate::tcp::{CcConfig, Variant};
    sc.flow
        .iter()
        .filter_map(|f| {
            let t = f.tcp()?;
            match (t.cc, t.variant) {
                (CcConfig::MulTcp { w }, Variant::Reno | Variant::Tahoe) if w > 1.0 => {
                    Some(format!(
                        "flow `{}`: MulTCP (w = {w}) over {:?} loses several packets per \
                         overflow and recovers one per window, so it may get less than a \
                         unit flow; use variant \"newreno\" or \"sack\"",
                        f.name, t.variant
                    ))
                }
                _ => None,
            }
        })
        .collect()
}

/// Joins the RTT-aware markers of each `group` into one exchange of minimum RTT and RTO
/// (P3 §VI), in node then interface order so membership is deterministic.
fn link_exchanges(w: &mut World) {
    use crate::cond::rtt_aware::Exchange;
    use crate::cond::AnyConditioner;
    let mut groups: HashMap<String, std::sync::Arc<Exchange>> = HashMap::new();
    let chains = w
        .nodes
        .iter_mut()
        .flat_map(|n| [&mut n.host_egress, &mut n.ingress])
        .chain(
            w.ifaces
                .iter_mut()
                .flat_map(|f| [&mut f.egress, &mut f.ingress]),
        );
    for hook in chains {
        for s in hook.chain.stages_mut() {
            if let AnyConditioner::RttAware(m) = s {
                if let Some(g) = m.group() {
                    let ex = groups.entry(g.to_string()).or_default().clone();
                    m.join(ex);
                }
            }
        }
    }
}

/// A chain placed by input interface (`iface_in = "a->b"`): packets router b receives
/// over that link.
fn input_chain(
    sc: &Scenario,
    w: &mut World,
    names: &Names,
    i: usize,
    c: &super::model::CondPlacement,
    f: &str,
) -> Result<(), ScenarioError> {
    let key = |k: &str| format!("conditioner[{i}].{k}");
    if c.at.is_some() || c.iface.is_some() {
        return Err(ScenarioError::new(
            key("iface_in"),
            "expected exactly one of `at` (a node), `iface` or `iface_in` (\"a->b\")",
        ));
    }
    let id = names.ifaces.get(f).copied().ok_or_else(|| {
        ScenarioError::new(
            key("iface_in"),
            format!("no interface named {f:?} (interfaces are named \"a->b\")"),
        )
    })?;
    let peer = w.ifaces[id.0 as usize].peer;
    if w.nodes[peer.0 as usize].kind != NodeKind::Router {
        return Err(ScenarioError::new(
            key("iface_in"),
            format!(
                "{f:?} ends at host {:?}: input-interface chains sit at routers (a host's \
                 chain is `at = \"host\"`, for what it sends)",
                w.nodes[peer.0 as usize].name
            ),
        ));
    }
    let mut stages = c.stages.clone();
    let flow_id = |n: &str| names.flows.get(n).map(|&k| crate::packet::FlowId(k as u32));
    let addrs: Vec<[u8; 4]> = w.nodes.iter().map(|n| n.addr).collect();
    for (j, s) in stages.iter_mut().enumerate() {
        let k = format!("conditioner[{i}].stages[{j}]");
        if matches!(s, ConditionerConfig::Trc(_)) {
            return Err(ScenarioError::new(
                k,
                "a TRC sits at a host, a router (`at`) or an interface (`iface`), not at \
                 `iface_in`",
            ));
        }
        s.bind_flows(&flow_id, &addrs)
            .map_err(|e| ScenarioError::new(crate::config::join(&k, &e.key), e.message))?;
    }
    let resolve = |name: &str| names.nodes.get(name).copied();
    let chain = Chain::build(
        &stages,
        &resolve,
        RngStream::derive(sc.seed, &format!("conditioner/{i}")),
    )
    .map_err(|e| ScenarioError::new(format!("conditioner[{i}].stages{}", e.key), e.message))?
    .with_colours(w.nodes[peer.0 as usize].dscp.colours);
    let hook = &mut w.ifaces[id.0 as usize].ingress;
    if !hook.is_empty() {
        return Err(ScenarioError::new(
            format!("conditioner[{i}]"),
            "a second conditioner chain at the same place; put all stages in one chain",
        ));
    }
    *hook = Hook::new(chain);
    Ok(())
}

/// Most samples a series or a sampled queue may take over a run.
const MAX_SAMPLES: u64 = 10_000_000;

/// What the run records: sampled queues, traced flows.
fn record(sc: &Scenario, w: &mut World, names: &Names) -> Result<(), ScenarioError> {
    for (k, d, used) in [
        ("interval", sc.record.interval, true),
        (
            "queue_interval",
            sc.record.queue_interval,
            !sc.record.queues.is_empty(),
        ),
    ] {
        if d == crate::time::Dur::ZERO {
            return Err(ScenarioError::new(
                format!("record.{k}"),
                "expected a positive interval, found 0",
            ));
        }
        // One event and one row (per flow or queue) per interval: a nanosecond interval
        // over a long run would never finish.
        let samples = sc.duration.as_nanos() / d.as_nanos();
        if used && samples > MAX_SAMPLES {
            let least = crate::time::Dur::from_nanos(sc.duration.as_nanos() / MAX_SAMPLES);
            return Err(ScenarioError::new(
                format!("record.{k}"),
                format!(
                    "expected an interval of at least {least} (at most {MAX_SAMPLES} samples \
                     over the {} run), found {d}",
                    sc.duration
                ),
            ));
        }
    }
    let mut queues = Vec::new();
    for (i, name) in sc.record.queues.iter().enumerate() {
        let id = names.ifaces.get(name.as_str()).copied().ok_or_else(|| {
            let mut known: Vec<&str> = names.ifaces.keys().map(String::as_str).collect();
            known.sort_unstable();
            ScenarioError::new(
                format!("record.queues[{i}]"),
                format!(
                    "no interface named {name:?} (interfaces: {})",
                    known.join(", ")
                ),
            )
        })?;
        queues.push(id);
    }
    for (i, t) in sc.record.traces.iter().enumerate() {
        if !names.flows.contains_key(t.as_str()) {
            return Err(ScenarioError::new(
                format!("record.traces[{i}]"),
                format!("no flow named {t:?}"),
            ));
        }
    }
    if sc.record.drop_events_limit == 0 {
        return Err(ScenarioError::new(
            "record.drop_events_limit",
            "expected at least 1 row, found 0 (to log no drops, leave record.drop_events false)",
        ));
    }
    w.recorded.drop_log = sc
        .record
        .drop_events
        .then(|| Box::new(DropLog::new(sc.record.drop_events_limit as usize)));
    w.plan = RecordPlan {
        interval: sc.record.interval,
        queues,
        queue_interval: sc.record.queue_interval,
    };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passive_aggregate_rtt_is_close_to_the_senders_in_a_small_world() {
        // 10 NewReno flows s → e → r → d; nearly all delay is past the edge e, where a
        // passive and an oracle marker sit (`at = "e"` sees data and ACKs).
        let mut t = String::from(
            "name = \"passive\"\nduration = \"20s\"\nseed = 3\n\
             [[node]]\nname = \"s\"\n[[node]]\nname = \"d\"\n\
             [[node]]\nname = \"e\"\nkind = \"router\"\n[[node]]\nname = \"r\"\nkind = \"router\"\n\
             [[link]]\na = \"s\"\nb = \"e\"\nrate = \"10Mbps\"\ndelay = \"1ms\"\n\
             [[link]]\na = \"e\"\nb = \"r\"\nrate = \"2Mbps\"\ndelay = \"5ms\"\n\
             [[link]]\na = \"r\"\nb = \"d\"\nrate = \"10Mbps\"\ndelay = \"30ms\"\n\
             [[conditioner]]\nat = \"e\"\nstages = [\n\
             { kind = \"rtt_aware\", cir = \"1Mbps\", rtt = \"passive\", rto = \"passive\" },\n\
             { kind = \"rtt_aware\", cir = \"1Mbps\" },\n]\n",
        );
        for i in 0..10 {
            t += &format!(
                "[[flow]]\nname = \"f{i}\"\nfrom = \"s\"\nto = \"d\"\nstart_jitter = \"2s\"\n\
                 tcp = {{ mss = 1000, max_window = 20 }}\n"
            );
        }
        let sc = crate::scenario::parse(&t, crate::scenario::Format::Toml).unwrap();
        let mut w = build(&sc).unwrap();
        w.run().unwrap();
        let e = w
            .nodes
            .iter()
            .find(|n| !n.ingress.chain.stages().is_empty())
            .unwrap();
        let m: Vec<&crate::cond::RttAware> = e
            .ingress
            .chain
            .stages()
            .iter()
            .map(|s| match s {
                crate::cond::AnyConditioner::RttAware(m) => m,
                _ => unreachable!(),
            })
            .collect();
        let (pr, po) = m[0].aggregate().unwrap();
        let (or, oo) = m[1].aggregate().unwrap();
        assert!(m[0].passive().unwrap().samples() > 1000);
        // The passive RTT misses only the 2 ms round trip between sender and edge.
        assert!(
            (pr as f64 / or as f64 - 1.0).abs() < 0.2,
            "passive {pr} µs, oracle {or} µs"
        );
        assert!(
            (po as f64 / oo as f64 - 1.0).abs() < 0.2,
            "passive {po} µs, oracle {oo} µs"
        );
        // Propagation alone is 72 ms: queueing at the 2 Mb/s link adds to both.
        assert!(pr > 70_000, "{pr}");
        eprintln!("passive {pr}/{po} µs, oracle {or}/{oo} µs");
    }
}

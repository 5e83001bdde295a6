//! Building P1's TRC stages: binding each to its flow and path, and the admission rules
//! of P1 §4.4 (this needs the built world, so it is part of building a scenario, not of
//! the mechanism in `cond::trc`):
//! Σ requested rates ≤ ρ·BW on every link of a path (an error), and core queues of at
//! least 50 + max W_max/2 packets (a warning).

use super::Scenario;
use crate::cond::trc::{TrcBinding, TrcConfig};
use crate::config::ScenarioError;
use crate::net::{IfaceId, NodeKind};
use crate::packet::{FlowId, NodeId, TCP_IP_HEADER};
use crate::queue::{DropTailConfig, QueueConfig};
use crate::time::Dur;
use crate::world::World;

/// Where a chain sits, as far as binding cares.
#[derive(Clone, Copy, Debug)]
pub enum Place {
    /// A host's egress or a router's ingress.
    Node(NodeId),
    /// Before an interface's queue.
    Iface(IfaceId),
}

/// A bound TRC, remembered for the admission check.
#[derive(Clone, Debug)]
pub struct Placed {
    /// Key path of the stage, e.g. `conditioner[0].stages[2]`.
    pub key: String,
    /// Requested rate [bit/s] (`None` with fixed w_max / rtt_trc: not admitted).
    pub rate: Option<f64>,
    /// ρ of this TRC.
    pub rho: f64,
    /// W_max its parameters chose.
    pub w_max: f64,
    /// Interfaces of the flow's forward path.
    pub path: Vec<IfaceId>,
    /// Where the model cannot promise the request ([`TrcConfig::model_warning`]).
    pub warning: Option<String>,
}

/// Interfaces from `src` to `dst` along the static routes.
pub fn path(w: &World, src: NodeId, dst: NodeId) -> Vec<IfaceId> {
    let mut out = Vec::new();
    let mut at = src;
    while at != dst && out.len() <= w.ifaces.len() {
        let Some(f) = w.routes.next_hop(at, dst) else {
            break;
        };
        out.push(f);
        at = w.ifaces[f.0 as usize].peer;
    }
    out
}

/// RTT of a path without the TRC: propagation both ways, one full data packet
/// serialised on every forward hop and one ACK on every reverse hop (no queueing).
pub fn rtt_net(w: &World, fwd: &[IfaceId], back: &[IfaceId], mss: u32) -> Dur {
    let mut d = Dur::ZERO;
    for f in fwd {
        let i = &w.ifaces[f.0 as usize];
        d += i.delay + i.rate.tx_time(mss + TCP_IP_HEADER);
    }
    for f in back {
        let i = &w.ifaces[f.0 as usize];
        d += i.delay + i.rate.tx_time(TCP_IP_HEADER);
    }
    d
}

fn err(key: String, msg: String) -> ScenarioError {
    ScenarioError::new(key, msg)
}

/// Cycles a run should measure for a TRC flow's goodput to be its cycle mean within a
/// few per cent (a partial cycle weighs 1/n).
const MIN_CYCLES: f64 = 10.0;

/// Resolves a TRC stage's flow and path, fills in its [`TrcBinding`], checks that the
/// flow passes `place`, is TCP, is ECN-capable in ECN mode and has a window above
/// W_max (§3), and returns what admission needs. `key` is the stage's key path.
pub fn bind(
    t: &mut TrcConfig,
    key: &str,
    place: Place,
    w: &World,
    sc: &Scenario,
) -> Result<Placed, ScenarioError> {
    t.validate()
        .map_err(|e| err(format!("{key}.{}", e.key), e.message))?;
    let Some(fi) = w.flows.iter().position(|f| f.name == t.flow) else {
        let known: Vec<&str> = w.flows.iter().map(|f| f.name.as_str()).collect();
        return Err(err(
            format!("{key}.flow"),
            format!("no flow named {:?} (flows: {})", t.flow, known.join(", ")),
        ));
    };
    let flow = &w.flows[fi];
    let Some(tcp) = sc.flow[fi].tcp() else {
        return Err(err(
            format!("{key}.flow"),
            format!("flow {:?} is not a TCP flow; a TRC controls TCP", t.flow),
        ));
    };
    let fwd = path(w, flow.src, flow.dst);
    let back = path(w, flow.dst, flow.src);
    let passes = match place {
        Place::Node(n) => {
            n == flow.src
                || (w.nodes[n.0 as usize].kind == NodeKind::Router
                    && fwd.iter().any(|f| w.ifaces[f.0 as usize].node == n))
        }
        Place::Iface(i) => fwd.contains(&i),
    };
    if !passes {
        return Err(err(
            format!("{key}.flow"),
            format!(
                "flow {:?} does not pass this chain: place its TRC at the sender host, \
                 or at a router or interface on its path",
                t.flow
            ),
        ));
    }
    if t.ecn && !tcp.ecn {
        return Err(err(
            format!("{key}.ecn"),
            format!(
                "ECN mode marks instead of dropping: flow {:?} must set tcp.ecn = true",
                t.flow
            ),
        ));
    }
    let rtt = t
        .rtt_net
        .unwrap_or_else(|| rtt_net(w, &fwd, &back, tcp.mss));
    let params = t
        .parameters(tcp, rtt, t.lead(tcp.granularity))
        .map_err(|e| {
            let msg = if e.key == "model" {
                format!("flow {:?}: {}", t.flow, e.message)
            } else {
                e.message
            };
            err(format!("{key}.{}", e.key), msg)
        })?;
    if (tcp.max_window as f64) < params.w_max.ceil() {
        return Err(err(
            format!("flow[{fi}].tcp.max_window"),
            format!(
                "the TRC at {key} sets W_max = {} for flow {:?}, but its window is capped \
                 at {} segments; the receiver window must exceed W_max (P1 §3): set \
                 max_window ≥ {}",
                params.w_max,
                t.flow,
                tcp.max_window,
                params.w_max.ceil()
            ),
        ));
    }
    let mut warning = t.model_warning(tcp, &params);
    // The claim is about the mean over whole cycles: a measurement of a few cycles can
    // miss it by a part of a cycle (MSS 9000 at 20 kb/s over 300 s: 2.5 cycles, 0.65 ×).
    let cycle_s = params.p.recip() / params.w_avg.max(1e-9) * params.rtt;
    let measured = (sc.duration.as_secs_f64() - sc.warmup.as_secs_f64()).max(0.0);
    if t.w_max.is_none() && measured < 0.99 * MIN_CYCLES * cycle_s && warning.is_none() {
        warning = Some(format!(
            "TRC for flow {:?}: the run measures {:.1} of its cycles ({:.1} s each, after \
             the warm-up); its goodput is a mean over whole cycles, so a run this short \
             can miss the request: measure at least {MIN_CYCLES} cycles ({:.0} s)",
            t.flow,
            measured / cycle_s,
            cycle_s,
            MIN_CYCLES * cycle_s
        ));
    }
    t.binding = Some(TrcBinding {
        flow: FlowId(fi as u32),
        mss: tcp.mss,
        tcp: tcp.clone(),
        granularity: tcp.granularity,
        rtt_net: rtt,
    });
    Ok(Placed {
        key: key.to_string(),
        rate: t.rate.filter(|_| t.w_max.is_none()).map(|r| r.bps() as f64),
        rho: t.rho,
        w_max: params.w_max,
        path: fwd,
        warning,
    })
}

/// A queue's capacity in packets, for the core-queue rule (byte limits count
/// 1500-byte packets); `None` for disciplines without a single limit.
fn limit_packets(q: &QueueConfig) -> Option<u64> {
    match q {
        QueueConfig::DropTail(DropTailConfig {
            limit_bytes: Some(b),
            ..
        }) => Some(b.0 / 1500),
        QueueConfig::DropTail(DropTailConfig { limit, .. }) => Some(limit.unwrap_or(100) as u64),
        _ => None,
    }
}

/// The queue config of interface `f` as the scenario gives it.
fn queue_of(w: &World, sc: &Scenario, f: IfaceId) -> QueueConfig {
    let i = &w.ifaces[f.0 as usize];
    let (a, b) = (
        &w.nodes[i.node.0 as usize].name,
        &w.nodes[i.peer.0 as usize].name,
    );
    for l in &sc.link {
        if &l.a == a && &l.b == b {
            return l
                .queue_a_to_b
                .clone()
                .or(l.queue.clone())
                .unwrap_or_default();
        }
        if &l.a == b && &l.b == a {
            return l
                .queue_b_to_a
                .clone()
                .or(l.queue.clone())
                .unwrap_or_default();
        }
    }
    QueueConfig::default()
}

/// What [`admit`] found: its warnings, and for each queue-rule warning the interface it
/// is about and its index in `warnings`.
pub struct Admitted {
    /// Warnings in scenario order (the TRCs' own, then the queue rule's).
    pub warnings: Vec<String>,
    /// The queue-rule warnings' interfaces and indices in `warnings`.
    pub queue_rule: Vec<(IfaceId, usize)>,
}

/// P1 §4.4: refuses Σ R_req > ρ·BW on any interface (error at the `rate` key of the
/// TRC that crosses the limit), and returns warnings for core queues (router to
/// router, or router egress on paths with no router-to-router hop) and the sender's
/// egress smaller than 50 + max W_max/2 packets of the TRC flows crossing them.
pub fn admit(placed: &[Placed], w: &World, sc: &Scenario) -> Result<Admitted, ScenarioError> {
    let n = w.ifaces.len();
    let mut sum = vec![0.0f64; n];
    let mut rho = vec![1.0f64; n];
    let mut wmax = vec![0.0f64; n];
    let mut core = vec![false; n];
    for p in placed {
        let is_router = |id: NodeId| w.nodes[id.0 as usize].kind == NodeKind::Router;
        let r2r: Vec<IfaceId> = p
            .path
            .iter()
            .copied()
            .filter(|f| {
                let i = &w.ifaces[f.0 as usize];
                is_router(i.node) && is_router(i.peer)
            })
            .collect();
        let checked: Vec<IfaceId> = if r2r.is_empty() {
            p.path
                .iter()
                .copied()
                .filter(|f| is_router(w.ifaces[f.0 as usize].node))
                .collect()
        } else {
            r2r
        };
        for f in checked {
            core[f.0 as usize] = true;
        }
        // The sender's own egress too: the TRC releases up to a window at once into it
        // (W_max 208 overflowed a 100-packet access queue at 8.5 Mb/s: 0.88 × the request).
        if let Some(first) = p.path.first() {
            core[first.0 as usize] = true;
        }
        for f in &p.path {
            let k = f.0 as usize;
            wmax[k] = wmax[k].max(p.w_max);
            let Some(r) = p.rate else { continue };
            sum[k] += r;
            rho[k] = rho[k].min(p.rho);
            let bw = w.ifaces[k].rate.bps() as f64;
            if sum[k] > rho[k] * bw * (1.0 + 1e-12) {
                return Err(err(
                    format!("{}.rate", p.key),
                    format!(
                        "admission refused: TRC requests crossing {} total {:.0} bit/s, \
                         above ρ·BW = {} × {} bit/s = {:.0} bit/s (P1 §4.4)",
                        w.ifaces[k].name,
                        sum[k],
                        rho[k],
                        bw,
                        rho[k] * bw
                    ),
                ));
            }
        }
    }
    let mut warnings: Vec<String> = placed.iter().filter_map(|p| p.warning.clone()).collect();
    let mut queue_rule = Vec::new();
    for k in 0..n {
        if !core[k] {
            continue;
        }
        let need = 50.0 + wmax[k] / 2.0;
        if let Some(lim) = limit_packets(&queue_of(w, sc, IfaceId(k as u32))) {
            if (lim as f64) < need {
                queue_rule.push((IfaceId(k as u32), warnings.len()));
                warnings.push(format!(
                    "queue of {} holds {lim} packets, below 50 + max W_max/2 = {need} for \
                     the TRC flows crossing it (P1 §4.4): packets may be dropped in the \
                     network instead of by the TRC",
                    w.ifaces[k].name
                ));
            }
        }
    }
    Ok(Admitted {
        warnings,
        queue_rule,
    })
}

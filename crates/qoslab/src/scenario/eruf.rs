//! P2 (ERUF) pieces of the builder: routers' `source_quench` tables and the link each
//! `eruf` stage regulates towards.

use std::collections::HashMap;

use super::model::{NodeSpec, Scenario};
use crate::cond::{AnyConditioner, ConditionerConfig};
use crate::config::ScenarioError;
use crate::net::quench::QuenchLimiter;
use crate::net::{IfaceId, NodeKind};
use crate::world::World;

/// The quench limiter of node `i`, if its `source_quench` is set (routers only).
pub(super) fn quench_of(n: &NodeSpec, i: usize) -> Result<Option<QuenchLimiter>, ScenarioError> {
    let Some(c) = &n.source_quench else {
        return Ok(None);
    };
    let key = format!("node[{i}].source_quench");
    if n.kind != NodeKind::Router {
        return Err(ScenarioError::new(
            key,
            format!(
                "{:?} is a host; source quenches are sent by routers (kind = \"router\")",
                n.name
            ),
        ));
    }
    c.validate()
        .map_err(|e| ScenarioError::new(crate::config::join(&key, &e.key), e.message))?;
    Ok(Some(QuenchLimiter::new(*c)))
}

/// Gives every `eruf` stage the rate and delay of its interface's link (P2 §2.1: the
/// RTT estimate is twice the propagation delay of the next link towards the congested
/// router). A stage placed elsewhere than at an interface needs both `rtt` and
/// `link_rate`.
pub(super) fn bind(
    sc: &Scenario,
    w: &mut World,
    ifaces: &HashMap<String, IfaceId>,
) -> Result<(), ScenarioError> {
    for (i, c) in sc.conditioner.iter().enumerate() {
        let iface = c.iface.as_deref().and_then(|f| ifaces.get(f).copied());
        for (j, s) in c.stages.iter().enumerate() {
            let ConditionerConfig::Eruf(e) = s else {
                continue;
            };
            if iface.is_none() && (e.rtt.is_none() || e.link_rate.is_none()) {
                return Err(ScenarioError::new(
                    format!("conditioner[{i}].stages[{j}]"),
                    "an eruf stage sits at the edge router's interface towards the core \
                     (`iface = \"edge->core\"`), which gives its RTT estimate and link rate; \
                     elsewhere give both `rtt` and `link_rate`",
                ));
            }
        }
        let Some(id) = iface else { continue };
        let f = &mut w.ifaces[id.0 as usize];
        let (rate, delay) = (f.rate, f.delay);
        for s in f.egress.chain.stages_mut() {
            if let AnyConditioner::Eruf(e) = s {
                e.bind_link(rate, delay);
            }
        }
    }
    Ok(())
}

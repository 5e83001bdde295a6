//! Conditioner chains: the `colours` table (what each metering stage coloured, per
//! flow) and the stages of one kind with where each sits, for the tables of TRC and
//! RTT-marker stages.

use super::table::names;
use super::{Column, Table};
use crate::world::World;

/// Packets and bytes each metering stage coloured green, yellow and red, per flow
/// (after the warm-up): one row per (chain, stage, flow) with a packet; `None` if no
/// chain meters. `place` is the chain's node or interface and `at` where it sits:
/// `host` (what a host sends), `router` (what a router receives), `iface` (before an
/// interface's queue) or `iface_in` (what a router receives over one interface).
pub(super) fn colours_table(w: &World) -> Option<Table> {
    let chains = w
        .nodes
        .iter()
        .flat_map(|n| {
            let at = match n.kind {
                crate::net::NodeKind::Host => "host",
                crate::net::NodeKind::Router => "router",
            };
            [
                (n.name.as_str(), at, &n.host_egress),
                (n.name.as_str(), at, &n.ingress),
            ]
        })
        .chain(w.ifaces.iter().flat_map(|f| {
            [
                (f.name.as_str(), "iface", &f.egress),
                (f.name.as_str(), "iface_in", &f.ingress),
            ]
        }));
    let mut rows = Vec::new();
    for (place, at, h) in chains {
        for (stage, flow, c) in h.chain.marked_since_warmup() {
            // Live mode meters traffic of no flow too (pings: its flow id is one past the
            // flows'); the table is per flow.
            if (flow as usize) < w.flows.len() {
                rows.push((place, at, stage, h.chain.stages()[stage].kind(), flow, c));
            }
        }
    }
    if rows.is_empty() {
        return None;
    }
    let mut t = Table::default();
    t.push("place", names(rows.iter().map(|r| r.0).collect()));
    t.push("at", names(rows.iter().map(|r| r.1).collect()));
    t.push(
        "stage",
        Column::Int(rows.iter().map(|r| r.2 as i64).collect()),
    );
    t.push("kind", names(rows.iter().map(|r| r.3).collect()));
    t.push(
        "flow",
        Column::Int(rows.iter().map(|r| r.4 as i64).collect()),
    );
    t.push(
        "name",
        names(
            rows.iter()
                .map(|r| w.flows[r.4 as usize].name.as_str())
                .collect(),
        ),
    );
    let cols = [
        "green_pkts",
        "green_bytes",
        "yellow_pkts",
        "yellow_bytes",
        "red_pkts",
        "red_bytes",
    ];
    for (k, name) in cols.iter().enumerate() {
        t.push(
            name,
            Column::Int(rows.iter().map(|r| r.5[k] as i64).collect()),
        );
    }
    Some(t)
}

/// The conditioner stages `pick` selects, with the name of where each sits: in what a
/// host sends or a node receives (the node's name), before an interface's queue (the
/// interface's name), or in what a router receives over one interface (the interface's
/// name and ` (in)`, a chain placed by `iface_in`).
pub(super) fn stages_where<'a, T>(
    w: &'a World,
    pick: impl Fn(&'a crate::cond::AnyConditioner) -> Option<&'a T>,
) -> Vec<(String, &'a T)> {
    let nodes = w.nodes.iter().flat_map(|n| {
        [
            (n.name.clone(), &n.host_egress),
            (n.name.clone(), &n.ingress),
        ]
    });
    let ifaces = w.ifaces.iter().flat_map(|f| {
        [
            (f.name.clone(), &f.egress),
            (format!("{} (in)", f.name), &f.ingress),
        ]
    });
    nodes
        .chain(ifaces)
        .flat_map(|(place, h)| {
            h.chain
                .stages()
                .iter()
                .filter_map(&pick)
                .map(move |c| (place.clone(), c))
        })
        .collect()
}

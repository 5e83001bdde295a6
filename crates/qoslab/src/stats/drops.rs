//! Drops: the `drops` table (packets and bytes by place and cause) and the
//! `drop_events` table (one row per packet dropped or marked).

use super::table::names;
use super::{Column, Table};
use crate::queue::DropCause;
use crate::world::{DropAt, DropEvent, HookAt, World};

/// The `drops` table: packets and bytes dropped after the warm-up, one row per place
/// and cause with a drop; nodes first, then interfaces.
pub(super) fn drops_table(w: &World) -> Table {
    let places = w
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            (
                n.name.as_str(),
                "node",
                n.counters.drops.since(&w.warm.nodes[i].drops),
            )
        })
        .chain(w.ifaces.iter().enumerate().map(|(i, f)| {
            (
                f.name.as_str(),
                "iface",
                f.counters.drops.since(&w.warm.ifaces[i].drops),
            )
        }));
    let (mut place, mut kind, mut cause, mut pk, mut by) = (vec![], vec![], vec![], vec![], vec![]);
    for (name, k, d) in places {
        for c in DropCause::ALL {
            if d.packets[c.index()] > 0 {
                place.push(name.to_string());
                kind.push(k);
                cause.push(c.name());
                pk.push(d.packets[c.index()] as i64);
                by.push(d.bytes[c.index()] as i64);
            }
        }
    }
    let mut t = Table::default();
    t.push("place", Column::Str(place));
    t.push("place_kind", names(kind));
    t.push("cause", names(cause));
    t.push("packets", Column::Int(pk));
    t.push("bytes", Column::Int(by));
    t
}

/// The `drop_events` table (`record.drop_events = true`): one row per packet dropped or
/// marked CE after the warm-up, in event order, up to `record.drop_events_limit` rows.
/// `place` and `place_kind` are the `drops` table's (a conditioner's drop counts at its
/// node); `node` is where it happened and `iface` the interface (empty at a host's or
/// router's own chain and for no route); `at` is `queue`, `link` (random loss), `host`,
/// `router`, `iface`, `iface_in` (a conditioner chain, as in `colours`) or `route`.
/// `colour` is the drop precedence the node's DSCP table gives the codepoint (`none`
/// for one without), except `red` for a policer's drop (its meter's verdict).
pub(super) fn drop_events_table(w: &World) -> Option<Table> {
    let log = w.recorded.drop_log.as_deref()?;
    let ev = &log.events;
    let places: Vec<_> = ev.iter().map(|e| drop_place(w, e.at)).collect();
    let mut t = Table::default();
    t.push(
        "t",
        Column::Float(ev.iter().map(|e| e.t.as_secs_f64()).collect()),
    );
    t.push(
        "flow",
        Column::Int(
            ev.iter()
                .map(|e| e.flow.map_or(-1, |f| f.0 as i64))
                .collect(),
        ),
    );
    t.push(
        "name",
        names(
            ev.iter()
                .map(|e| {
                    e.flow
                        .and_then(|f| w.flows.get(f.0 as usize))
                        .map_or("", |f| f.name.as_str())
                })
                .collect(),
        ),
    );
    place_columns(w, &places, &mut t);
    marking_columns(w, ev, &places, &mut t);
    t.push("cause", names(ev.iter().map(|e| e.cause.name()).collect()));
    t.push(
        "action",
        names(
            ev.iter()
                .map(|e| if e.marked { "mark" } else { "drop" })
                .collect(),
        ),
    );
    t.push(
        "size",
        Column::Int(ev.iter().map(|e| e.size as i64).collect()),
    );
    t.push(
        "uid",
        Column::Int(ev.iter().map(|e| e.uid as i64).collect()),
    );
    Some(t)
}

/// Where a drop happened: (node, interface, whether the `drops` table counts it at the
/// interface, the `at` column's value).
type Place = (usize, Option<usize>, bool, &'static str);

/// The place of a drop `a` in `w`.
fn drop_place(w: &World, a: DropAt) -> Place {
    match a {
        DropAt::Queue(f) => (
            w.ifaces[f.0 as usize].node.0 as usize,
            Some(f.0 as usize),
            true,
            "queue",
        ),
        DropAt::Link(f) => (
            w.ifaces[f.0 as usize].node.0 as usize,
            Some(f.0 as usize),
            true,
            "link",
        ),
        DropAt::Route(n) => (n.0 as usize, None, false, "route"),
        DropAt::Hook(HookAt::HostEgress(n)) => (n.0 as usize, None, false, "host"),
        DropAt::Hook(HookAt::Ingress(n)) => (n.0 as usize, None, false, "router"),
        DropAt::Hook(HookAt::Egress(f)) => (
            w.ifaces[f.0 as usize].node.0 as usize,
            Some(f.0 as usize),
            false,
            "iface",
        ),
        DropAt::Hook(HookAt::IngressIface(f)) => (
            w.ifaces[f.0 as usize].peer.0 as usize,
            Some(f.0 as usize),
            false,
            "iface_in",
        ),
    }
}

/// The `drop_events` columns of where each drop happened: `node`, `iface`, `place`,
/// `place_kind` and `at`.
fn place_columns(w: &World, places: &[Place], t: &mut Table) {
    t.push(
        "node",
        names(places.iter().map(|p| w.nodes[p.0].name.as_str()).collect()),
    );
    t.push(
        "iface",
        names(
            places
                .iter()
                .map(|p| p.1.map_or("", |f| w.ifaces[f].name.as_str()))
                .collect(),
        ),
    );
    t.push(
        "place",
        names(
            places
                .iter()
                .map(|p| match (p.2, p.1) {
                    (true, Some(f)) => w.ifaces[f].name.as_str(),
                    _ => w.nodes[p.0].name.as_str(),
                })
                .collect(),
        ),
    );
    t.push(
        "place_kind",
        names(
            places
                .iter()
                .map(|p| if p.2 { "iface" } else { "node" })
                .collect(),
        ),
    );
    t.push("at", names(places.iter().map(|p| p.3).collect()));
}

/// The `drop_events` columns of each dropped packet's marking: `dscp`, and the `class`
/// and `colour` the DSCP table of the node where it was dropped gives it.
fn marking_columns(w: &World, ev: &[DropEvent], places: &[Place], t: &mut Table) {
    const COLOURS: [&str; 4] = ["green", "yellow", "red", "none"];
    t.push(
        "dscp",
        Column::Int(ev.iter().map(|e| e.dscp as i64).collect()),
    );
    t.push(
        "class",
        names(
            ev.iter()
                .zip(places)
                .map(|(e, p)| w.nodes[p.0].dscp.class(e.dscp))
                .collect(),
        ),
    );
    t.push(
        "colour",
        names(
            ev.iter()
                .zip(places)
                .map(|(e, p)| match e.cause {
                    DropCause::Policed => "red",
                    _ => COLOURS[w.nodes[p.0].dscp.drop_colour_index(e.dscp)],
                })
                .collect(),
        ),
    );
}

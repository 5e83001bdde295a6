//! Static shortest-path routing by propagation delay.
//!
//! For each destination in use, a Dijkstra from the destination over reversed links
//! gives every node's distance to it; a node's next hop is the interface minimising
//! (link delay + neighbour's distance, hop count, interface index). The last two keys
//! break ties deterministically, so equal-cost paths never depend on hash order.
//!
//! A *leaf* (a node with a single link, like most hosts) needs no table of its own:
//! every path to it ends with its neighbour's link, so routes to the leaf are routes to
//! the neighbour plus that last hop. A dumbbell of 1000 hosts thus keeps two tables,
//! not 2000, which makes building fast and lookups cache-friendly.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::{Iface, IfaceId};
use crate::packet::NodeId;

const NONE: u32 = u32::MAX;

/// Networks up to this many nodes also get a dense (node, destination) → interface
/// table (at most 4 MiB), so a hop's routing is one load instead of a leaf check, a
/// slot lookup and a table lookup.
const DENSE_MAX_NODES: usize = 1024;

/// Next-hop tables for the destinations the run uses.
#[derive(Debug, Default)]
pub struct Routes {
    n: usize,
    /// `table[d]`: for destination slot d, the next interface at every node.
    table: Vec<Vec<u32>>,
    /// Destination node → slot in `table` (NONE if not routed).
    slot: Vec<u32>,
    /// Leaf destination → (its neighbour, the neighbour's interface to it).
    leaf: Vec<Option<(NodeId, u32)>>,
    /// `dense[at * n + dst]`: the next interface (NONE if none), for networks of at
    /// most [`DENSE_MAX_NODES`] nodes; empty otherwise.
    dense: Vec<u32>,
}

impl Routes {
    /// Computes routes towards each node in `dests` over the given interfaces.
    pub fn compute(
        n_nodes: usize,
        ifaces: &[Iface],
        node_ifaces: &[Vec<IfaceId>],
        dests: &[NodeId],
    ) -> Routes {
        // Incoming interfaces per node, for the reverse search.
        let mut incoming: Vec<Vec<u32>> = vec![Vec::new(); n_nodes];
        for (i, f) in ifaces.iter().enumerate() {
            incoming[f.peer.0 as usize].push(i as u32);
        }
        let mut routes = Routes {
            n: n_nodes,
            table: Vec::new(),
            slot: vec![NONE; n_nodes],
            leaf: vec![None; n_nodes],
            dense: Vec::new(),
        };
        // Leaves: one interface out and one in (one duplex link) to a non-leaf.
        let is_leaf = |u: usize| node_ifaces[u].len() == 1 && incoming[u].len() == 1;
        let mut full: Vec<NodeId> = Vec::new();
        for &d in dests {
            let du = d.0 as usize;
            if is_leaf(du) {
                let f_in = incoming[du][0];
                let r = ifaces[f_in as usize].node;
                if !is_leaf(r.0 as usize) {
                    routes.leaf[du] = Some((r, f_in));
                    full.push(r);
                    continue;
                }
            }
            full.push(d);
        }
        let mut dist: Vec<(u64, u32)> = vec![(u64::MAX, u32::MAX); n_nodes];
        let mut heap = BinaryHeap::new();
        for d in full {
            if routes.slot[d.0 as usize] != NONE {
                continue;
            }
            dist.fill((u64::MAX, u32::MAX));
            dist[d.0 as usize] = (0, 0);
            heap.push(Reverse((0u64, 0u32, d.0)));
            while let Some(Reverse((du, hu, u))) = heap.pop() {
                if (du, hu) > dist[u as usize] {
                    continue;
                }
                for &fi in &incoming[u as usize] {
                    let f = &ifaces[fi as usize];
                    let v = f.node.0 as usize;
                    let cand = (du + f.delay.as_nanos(), hu + 1);
                    if cand < dist[v] {
                        dist[v] = cand;
                        heap.push(Reverse((cand.0, cand.1, v as u32)));
                    }
                }
            }
            let mut next = vec![NONE; n_nodes];
            for (u, outs) in node_ifaces.iter().enumerate() {
                if u == d.0 as usize {
                    continue;
                }
                let mut best: Option<((u64, u32), u32)> = None;
                for &IfaceId(fi) in outs {
                    let f = &ifaces[fi as usize];
                    let (dv, hv) = dist[f.peer.0 as usize];
                    if dv == u64::MAX {
                        continue;
                    }
                    let key = (dv + f.delay.as_nanos(), hv + 1);
                    if best.is_none_or(|(bk, bf)| (key, fi) < (bk, bf)) {
                        best = Some((key, fi));
                    }
                }
                if let Some((_, fi)) = best {
                    next[u] = fi;
                }
            }
            routes.slot[d.0 as usize] = routes.table.len() as u32;
            routes.table.push(next);
        }
        if n_nodes <= DENSE_MAX_NODES {
            let mut dense = vec![NONE; n_nodes * n_nodes];
            for at in 0..n_nodes {
                for dst in 0..n_nodes {
                    if let Some(IfaceId(f)) = routes.search(NodeId(at as u32), NodeId(dst as u32)) {
                        dense[at * n_nodes + dst] = f;
                    }
                }
            }
            routes.dense = dense;
        }
        routes
    }

    /// The interface `at` sends on towards `dst`, if there is a path.
    #[inline]
    pub fn next_hop(&self, at: NodeId, dst: NodeId) -> Option<IfaceId> {
        let (a, d) = (at.0 as usize, dst.0 as usize);
        // With d < n, the index lies inside the n × n table exactly when a < n, and an
        // empty table (a large network) has nothing inside.
        if d < self.n {
            if let Some(&f) = self.dense.get(a * self.n + d) {
                return (f != NONE).then_some(IfaceId(f));
            }
        }
        self.search(at, dst)
    }

    /// [`Self::next_hop`] from the per-destination tables (what the dense table holds).
    #[inline]
    fn search(&self, at: NodeId, mut dst: NodeId) -> Option<IfaceId> {
        if let Some((r, f_in)) = *self.leaf.get(dst.0 as usize)? {
            if at == r {
                return Some(IfaceId(f_in));
            }
            if at == dst {
                return None;
            }
            dst = r;
        }
        let s = *self.slot.get(dst.0 as usize)?;
        if s == NONE {
            return None;
        }
        let f = self.table[s as usize][at.0 as usize];
        (f != NONE).then_some(IfaceId(f))
    }

    /// True if `src` can reach `dst` (following next hops, loop-free by construction).
    pub fn reachable(&self, src: NodeId, dst: NodeId, ifaces: &[Iface]) -> bool {
        let mut at = src;
        for _ in 0..=self.n {
            if at == dst {
                return true;
            }
            match self.next_hop(at, dst) {
                Some(f) => at = ifaces[f.0 as usize].peer,
                None => return false,
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::{Hook, IfaceCounters};
    use crate::queue::{AnyQueue, DropTail, Limit};
    use crate::rng::RngStream;
    use crate::time::{Dur, Rate, SimTime};

    /// Routers 0–3 (a chain 0–1–2 with a shortcut 0–2, and 3 hanging off 2) and hosts
    /// 4 (on 0), 5 (on 2) and 6 (on 1): leaves and non-leaves, equal and unequal paths.
    fn network() -> (usize, Vec<Iface>, Vec<Vec<IfaceId>>) {
        let links = [
            (4, 0, 1),
            (0, 1, 5),
            (1, 2, 1),
            (0, 2, 2),
            (2, 5, 1),
            (1, 6, 1),
            (2, 3, 1),
        ];
        let n = 7;
        let mut ifaces = Vec::new();
        let mut node_ifaces = vec![Vec::new(); n];
        for (a, b, ms) in links {
            for (from, to) in [(a, b), (b, a)] {
                node_ifaces[from].push(IfaceId(ifaces.len() as u32));
                ifaces.push(Iface {
                    node: NodeId(from as u32),
                    peer: NodeId(to as u32),
                    framing: 0,
                    tx_pending: false,
                    arrive_pending: false,
                    rate: Rate::from_bps(10_000_000),
                    delay: Dur::from_millis(ms),
                    busy_until: SimTime::ZERO,
                    loss: 0.0,
                    on_wire: Default::default(),
                    counters: IfaceCounters::default(),
                    cut: Default::default(),
                    ahead: Default::default(),
                    egress: Hook::default(),
                    ingress: Hook::default(),
                    queue: AnyQueue::DropTail(DropTail::new(Limit::Packets(10))),
                    loss_rng: RngStream::derive(1, "loss"),
                    name: format!("{from}->{to}"),
                });
            }
        }
        (n, ifaces, node_ifaces)
    }

    #[test]
    fn dense_table_gives_the_searched_next_hops() {
        let (n, ifaces, node_ifaces) = network();
        let dests: Vec<NodeId> = [4, 5, 6, 1].map(NodeId).to_vec();
        let r = Routes::compute(n, &ifaces, &node_ifaces, &dests);
        assert_eq!(r.dense.len(), n * n, "a small network gets the dense table");
        let mut routed = 0;
        // Destinations past the last node too: the network has no route to them.
        for at in (0..n as u32).map(NodeId) {
            for dst in (0..n as u32 + 2).map(NodeId) {
                let searched = r.search(at, dst);
                assert_eq!(r.next_hop(at, dst), searched, "{at:?} → {dst:?}");
                routed += searched.is_some() as usize;
            }
        }
        // Every other node reaches the four destinations and routers 0 and 2 (whose
        // tables serve their leaves 4 and 5): the comparison above was not all `None`.
        assert_eq!(routed, 6 * (n - 1));
        // The shortcut (2 ms) beats the chain (5 + 1 ms) from router 0 towards host 5.
        let f = r.next_hop(NodeId(0), NodeId(5)).unwrap();
        assert_eq!(ifaces[f.0 as usize].peer, NodeId(2));
        assert!(r.reachable(NodeId(4), NodeId(6), &ifaces));
    }
}

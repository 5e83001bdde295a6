//! Static shortest-path routing by propagation delay.
//!
//! For each destination in use, a Dijkstra from the destination over reversed links
//! gives every node's distance to it; a node's next hop is the interface minimising
//! (link delay + neighbour's distance, hop count, interface index). The last two keys
//! break ties deterministically, so equal-cost paths never depend on hash order.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::{Iface, IfaceId};
use crate::packet::NodeId;

const NONE: u32 = u32::MAX;

/// Next-hop tables for the destinations the run uses.
#[derive(Debug, Default)]
pub struct Routes {
    n: usize,
    /// `table[d]`: for destination slot d, the next interface at every node.
    table: Vec<Vec<u32>>,
    /// Destination node → slot in `table` (NONE if not routed).
    slot: Vec<u32>,
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
        };
        let mut dist: Vec<(u64, u32)> = vec![(u64::MAX, u32::MAX); n_nodes];
        let mut heap = BinaryHeap::new();
        for &d in dests {
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
        routes
    }

    /// The interface `at` sends on towards `dst`, if there is a path.
    #[inline]
    pub fn next_hop(&self, at: NodeId, dst: NodeId) -> Option<IfaceId> {
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

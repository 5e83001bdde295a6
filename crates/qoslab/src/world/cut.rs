//! Cut-through: a packet bound for an idle link behind a router that does nothing but
//! route it goes on that link when it leaves the previous one, with no event of its
//! own at the router.
//!
//! Most hops of a TCP dumbbell are of this kind: every data packet reaches the far
//! router over the bottleneck and leaves on its receiver's idle access link, every ACK
//! the same at the near router. The router's handling is fully determined when the
//! packet starts on the feeding link `L` if (checked once per run, [`World::plan_cut`])
//! the next link `M` has exactly one feeding link (`L`), the router originates nothing
//! onto `M` (no source quenches) and runs no conditioner on the way (no chain at `L`'s
//! ingress, the router's ingress or `M`'s egress), and (checked per packet) `M` has no
//! random loss, nothing from `L` bound for `M` is still on `L`'s wire the ordinary way,
//! and `M` will be idle with an empty queue that passes the packet straight through
//! when the packet reaches the router. Nothing else can reach `M` before then, so the
//! packet's times on `M` are those the router would give it.
//!
//! The router's and `M`'s counters are those of the ordinary path at every time anyone
//! reads them: they are counted when the packet reaches `M`'s far end, or by
//! [`World::settle_cut`] (warm-up snapshot, end of the run) for packets that reached
//! the router by then. What changes is only the event count, and the place in the
//! event order of `M`'s arrival events (the order of simultaneous events that do not
//! touch each other).

use super::*;

impl World {
    /// Decides, for this run, which interfaces take pre-forwarded packets and from
    /// which feeding interface (see the module comment); none with packet capture or
    /// in wall-clock mode, where every hop is observed as it happens.
    pub(super) fn plan_cut(&mut self) {
        for f in &mut self.ifaces {
            f.cut = Default::default();
        }
        self.cut_on = false;
        if !self.cut_through || self.capture.is_some() || self.wall.is_some() {
            return;
        }
        // Feeders of each interface leaving a router: the interfaces the packets of
        // every flow (data and ACKs) and every source quench come in on before they
        // leave on it; `None` is a packet the router itself originates.
        let mut feeders: Vec<Vec<Option<IfaceId>>> = vec![Vec::new(); self.ifaces.len()];
        let quench_from: Vec<NodeId> = (self.nodes.iter().enumerate())
            .filter(|(_, n)| n.quench.is_some())
            .map(|(i, _)| NodeId(i as u32))
            .collect();
        let mut pairs: Vec<(NodeId, NodeId)> = Vec::new();
        for f in &self.flows {
            pairs.push((f.src, f.dst));
            pairs.push((f.dst, f.src));
            for &r in &quench_from {
                pairs.push((r, f.src));
                pairs.push((r, f.dst));
            }
        }
        for (from, to) in pairs {
            let (mut at, mut came_in) = (from, None);
            let mut hops = 0;
            while at != to && hops <= self.ifaces.len() {
                let Some(out) = self.routes.next_hop(at, to) else {
                    break;
                };
                if self.nodes[at.0 as usize].kind == NodeKind::Router {
                    let fs = &mut feeders[out.0 as usize];
                    if !fs.contains(&came_in) {
                        fs.push(came_in);
                    }
                }
                came_in = Some(out);
                at = self.ifaces[out.0 as usize].peer;
                hops += 1;
            }
        }
        for (m, fs) in feeders.iter().enumerate() {
            let &[Some(l)] = fs.as_slice() else { continue };
            let router = self.ifaces[m].node;
            let n = &self.nodes[router.0 as usize];
            let plain = matches!(self.ifaces[m].queue, crate::queue::AnyQueue::DropTail(_))
                && n.quench.is_none()
                && n.ingress.is_empty()
                && self.ifaces[l.0 as usize].ingress.is_empty()
                && self.ifaces[m].egress.is_empty()
                && self.ifaces[m].loss == 0.0;
            if plain {
                self.ifaces[m].cut.from = Some(l);
                self.ifaces[l.0 as usize].cut.feeds = true;
                self.cut_on = true;
            }
        }
    }

    /// The packet in slot `p`, just put on `l` (no random loss), reaches `l`'s router
    /// at `at`: true if it went straight on to its next link (cut-through), false if it
    /// goes on `l`'s wire the ordinary way.
    #[inline(never)]
    pub(super) fn try_cut(&mut self, l: IfaceId, at: SimTime, p: Slot) -> bool {
        let router = self.ifaces[l.0 as usize].peer;
        let pkt = &self.pool[p];
        if pkt.dst == router {
            return false;
        }
        let Some(m) = self.routes.next_hop(router, pkt.dst) else {
            return false;
        };
        let mi = m.0 as usize;
        if self.ifaces[mi].cut.from != Some(l) {
            return false;
        }
        let colour = self.nodes[router.0 as usize].dscp.colour(pkt.dscp);
        let quench = matches!(pkt.hdr, Header::Quench(_));
        let f = &mut self.ifaces[mi];
        let free = f.cut.pending == 0 && !f.tx_pending && f.busy_until <= at;
        if quench || !free || !f.queue.passes_when_empty(&self.pool[p]) {
            // The router handles it at `at`, and every later packet from `l` bound
            // here after it.
            f.cut.pending += 1;
            return false;
        }
        self.pool[p].colour = colour;
        let size = self.pool[p].size;
        let f = &mut self.ifaces[mi];
        let done = at + f.rate.tx_time(size + f.framing);
        f.busy_until = done;
        f.cut.deferred.push_back((at, p));
        let arrive = done + f.delay;
        self.wire_push(m, arrive, p);
        if self.ifaces[mi].cut.feeds {
            // It reaches `m`'s router the ordinary way (one cut per packet).
            self.cut_sent(m, p);
        }
        true
    }

    /// The packet in slot `p` goes on `l`'s wire the ordinary way: a link `l` cuts
    /// through to that it is bound for waits for it (see [`Self::cut_arrived`]).
    fn cut_sent(&mut self, l: IfaceId, p: Slot) {
        let router = self.ifaces[l.0 as usize].peer;
        let dst = self.pool[p].dst;
        if dst == router {
            return;
        }
        if let Some(m) = self.routes.next_hop(router, dst) {
            let c = &mut self.ifaces[m.0 as usize].cut;
            if c.from == Some(l) {
                c.pending += 1;
            }
        }
    }

    /// A packet from `l` reached `l`'s router the ordinary way: if it is bound for a
    /// link `l` cuts through to, that link no longer waits for it.
    #[inline(never)]
    pub(super) fn cut_arrived(&mut self, l: IfaceId, p: Slot) {
        let router = self.ifaces[l.0 as usize].peer;
        let dst = self.pool[p].dst;
        if dst == router {
            return;
        }
        if let Some(m) = self.routes.next_hop(router, dst) {
            let c = &mut self.ifaces[m.0 as usize].cut;
            if c.from == Some(l) {
                c.pending -= 1;
            }
        }
    }

    /// The packet in slot `p` came off `m`'s wire: if it was pre-forwarded, the
    /// router's and `m`'s counters take it now (unless [`Self::settle_cut`] did).
    #[inline]
    pub(super) fn cut_landed(&mut self, m: IfaceId, p: Slot) {
        let c = &mut self.ifaces[m.0 as usize].cut;
        if c.deferred.front().is_some_and(|&(_, q)| q == p) {
            c.deferred.pop_front();
            if c.counted > 0 {
                c.counted -= 1;
            } else {
                self.count_cut(m, p);
            }
        }
    }

    /// Counts every pre-forwarded packet not counted yet that reached its router
    /// before `now` (and at `now` too if `at_now`), as the ordinary path would have by
    /// then: the warm-up's end runs before arrivals at its own time (it was scheduled
    /// first), the end of the run after them.
    pub(super) fn settle_cut(&mut self, now: SimTime, at_now: bool) {
        if !self.cut_on {
            return;
        }
        for m in 0..self.ifaces.len() {
            loop {
                let c = &self.ifaces[m].cut;
                match c.deferred.get(c.counted as usize) {
                    Some(&(at, p)) if at < now || (at_now && at == now) => {
                        self.ifaces[m].cut.counted += 1;
                        self.count_cut(IfaceId(m as u32), p);
                    }
                    _ => break,
                }
            }
        }
    }

    /// The counters the router and `m` would have changed for the packet in slot `p`.
    fn count_cut(&mut self, m: IfaceId, p: Slot) {
        let size = self.pool[p].size as u64;
        let f = &mut self.ifaces[m.0 as usize];
        f.counters.arrived += 1;
        f.counters.arrived_bytes += size;
        f.counters.departed += 1;
        f.counters.departed_bytes += size;
        let n = &mut self.nodes[f.node.0 as usize].counters;
        n.received += 1;
        n.forwarded += 1;
        self.hops += 1;
    }
}

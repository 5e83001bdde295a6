//! Forwarding: hosts hand packets to the network, routers route them, interfaces queue
//! and transmit them, links carry them; every drop is counted here.

use super::*;

impl World {
    /// A host hands a packet to the network: it goes into the pool, where it stays
    /// until it is delivered, dropped or queued.
    #[inline(always)]
    pub(super) fn send_from_host(&mut self, now: SimTime, pkt: Packet) {
        let node = pkt.src;
        self.nodes[node.0 as usize].counters.originated += 1;
        let p = self.pool.put(pkt);
        let at = HookAt::HostEgress(node);
        if self.run_hook(now, at, 0, p) {
            self.route_out(now, node, p);
        }
    }

    /// The packet in slot `p` came off `iface` at its far end.
    pub(super) fn arrive(&mut self, now: SimTime, iface: IfaceId, p: Slot) {
        if let Some(c) = self.capture.as_deref_mut() {
            c.on_rx(now, iface, &self.pool[p], &self.routes);
        }
        let node = self.ifaces[iface.0 as usize].peer;
        if self.cut_on && self.ifaces[iface.0 as usize].cut.feeds {
            self.cut_arrived(iface, p);
        }
        let n = &mut self.nodes[node.0 as usize];
        n.counters.received += 1;
        if self.pool[p].dst == node {
            n.counters.delivered += 1;
            // Its journey ends: the transport reads it while it sends new packets.
            let pkt = self.pool.take(p);
            if let Some(w) = (self.wall.as_deref_mut()).filter(|w| w.is_external(pkt.flow)) {
                w.out.push(pkt);
                self.count_external_delivery(node, &pkt);
                self.external_ack(now, node, &pkt);
                return;
            }
            self.deliver(now, node, &pkt);
            return;
        }
        if n.kind == NodeKind::Router {
            if let Header::Quench(q) = &self.pool[p].hdr {
                let q = *q;
                self.snoop_quench(now, node, &q);
            }
            // Chains by input interface first, then the router's own.
            if !self.run_hook(now, HookAt::IngressIface(iface), 0, p) {
                return;
            }
            let at = HookAt::Ingress(node);
            if !self.run_hook(now, at, 0, p) {
                return;
            }
        }
        self.route_out(now, node, p);
    }

    /// Routes the packet in slot `p` out of `node`.
    #[inline]
    pub(super) fn route_out(&mut self, now: SimTime, node: NodeId, p: Slot) {
        let Some(iface) = self.routes.next_hop(node, self.pool[p].dst) else {
            self.drop_at_node(now, node, p, DropCause::NoRoute, DropAt::Route(node));
            return;
        };
        let at = HookAt::Egress(iface);
        if self.run_hook(now, at, 0, p) {
            self.enqueue(now, iface, p);
        }
    }

    /// Continues a packet's journey after the hook at `at` let it through.
    pub(super) fn after_hook(&mut self, now: SimTime, at: HookAt, p: Slot) {
        match at {
            HookAt::HostEgress(n) | HookAt::Ingress(n) => self.route_out(now, n, p),
            HookAt::Egress(f) => self.enqueue(now, f, p),
            HookAt::IngressIface(f) => {
                let n = self.ifaces[f.0 as usize].peer;
                if self.run_hook(now, HookAt::Ingress(n), 0, p) {
                    self.route_out(now, n, p);
                }
            }
        }
    }

    /// Offers the packet in slot `p` to the queue of `iface`.
    #[inline]
    pub(super) fn enqueue(&mut self, now: SimTime, iface: IfaceId, p: Slot) {
        let fi = iface.0 as usize;
        let node = self.ifaces[fi].node;
        let n = &mut self.nodes[node.0 as usize];
        n.counters.forwarded += 1;
        // Queues act on the drop precedence the node's table gives the DSCP on the wire.
        let pkt = &mut self.pool[p];
        pkt.colour = n.dscp.colour(pkt.dscp);
        let f = &mut self.ifaces[fi];
        f.counters.arrived += 1;
        f.counters.arrived_bytes += pkt.size as u64;
        // An idle transmitter behind an empty FIFO: the queue would hand the packet
        // straight back, so it goes on the link without the two copies through it (most
        // hops of a run, all on the access links and the ACK path).
        if !f.tx_pending && f.busy_until <= now && f.queue.passes_when_empty(pkt) {
            self.transmit(now, iface, p);
            return;
        }
        if f.ahead.on {
            self.enqueue_ahead(now, iface, p);
            return;
        }
        f.queue.enqueue_copy(now, &self.pool[p], &mut self.drops);
        self.pool.free(p);
        self.account_queue_drops(now, iface);
        let f = &mut self.ifaces[fi];
        if !f.tx_pending {
            if f.busy_until <= now {
                self.start_tx(now, iface);
            } else {
                // The transmitter is busy and no one will pull this packet: ask to.
                f.tx_pending = true;
                let t = f.busy_until;
                self.q.schedule_forget(t, Event::TxDone { iface });
            }
        }
    }

    pub(super) fn start_tx(&mut self, now: SimTime, iface: IfaceId) {
        let fi = iface.0 as usize;
        let pool = &mut self.pool;
        let out = (self.ifaces[fi].queue).dequeue_with(now, &mut self.drops, |pkt| pool.put(*pkt));
        self.account_queue_drops(now, iface);
        if let Some(p) = out {
            self.transmit(now, iface, p);
        }
    }

    /// Puts the packet in slot `p`, just taken from the queue at `iface` (or passed
    /// straight through it), on the link.
    #[inline(always)]
    pub(super) fn transmit(&mut self, now: SimTime, iface: IfaceId, p: Slot) {
        let fi = iface.0 as usize;
        let pkt = &self.pool[p];
        if let Some(c) = self.capture.as_deref_mut() {
            c.on_tx(now, iface, pkt, &self.routes);
        }
        let size = pkt.size;
        let f = &mut self.ifaces[fi];
        f.counters.departed += 1;
        f.counters.departed_bytes += size as u64;
        // The link also carries its framing overhead (0 unless the scenario sets it).
        let tx = f.rate.tx_time(size + f.framing);
        let done = now + tx;
        let lost = f.loss > 0.0 && f.loss_rng.bernoulli(f.loss);
        let arrive = done + f.delay;
        self.hops += 1;
        f.busy_until = done;
        // Only a backlogged queue needs an event when the transmitter frees; an idle
        // one is served directly by the next enqueue (most hops of a run never queue).
        if f.queue.occupancy().packets > 0 {
            f.tx_pending = true;
            self.q.schedule_forget(done, Event::TxDone { iface });
        }
        if lost {
            self.ifaces[fi]
                .counters
                .drops
                .add(DropCause::RandomLoss, size);
            let pkt = self.pool.take(p);
            self.count_flow_drop(&pkt);
            if let Some(c) = self.capture.as_deref_mut() {
                c.on_drop(now, iface, &pkt, &self.routes);
            }
            if let Some(log) = self.recorded.drop_log.as_deref_mut() {
                let at = DropAt::Link(iface);
                log.record(DropEvent::of(now, at, &pkt, DropCause::RandomLoss, false));
            }
        } else {
            self.onto_wire(iface, arrive, p);
        }
    }

    /// Sends the packet in slot `p`, transmitted on `iface`, to the link's far end at
    /// `arrive`, or straight on beyond the router there (cut-through, `world::cut`).
    #[inline(always)]
    pub(super) fn onto_wire(&mut self, iface: IfaceId, arrive: SimTime, p: Slot) {
        if self.cut_on && self.ifaces[iface.0 as usize].cut.feeds && self.try_cut(iface, arrive, p)
        {
            return;
        }
        self.wire_push(iface, arrive, p);
    }

    /// Puts the packet in slot `p` on `iface`'s wire, to arrive at its far end at
    /// `arrive`. Packets on a link arrive in the order they were sent, so the link keeps
    /// them in a FIFO and only its head has an event: the event heap holds one entry
    /// per busy link instead of one per packet in flight.
    #[inline(always)]
    pub(super) fn wire_push(&mut self, iface: IfaceId, arrive: SimTime, p: Slot) {
        let f = &mut self.ifaces[iface.0 as usize];
        f.on_wire.push_back((arrive, p));
        if !f.arrive_pending {
            f.arrive_pending = true;
            self.q.schedule_forget(arrive, Event::Arrive { iface });
        }
    }

    /// Counts what the last queue operation at `iface` dropped or marked, and sends the
    /// router's source quenches. Runs after every enqueue and dequeue, so the common
    /// nothing-to-count case stays inline and the counting lives out of line.
    #[inline]
    pub(super) fn account_queue_drops(&mut self, now: SimTime, iface: IfaceId) {
        if !self.drops.is_empty() {
            self.count_queue_drops(now, iface);
        }
    }

    #[inline(never)]
    fn count_queue_drops(&mut self, now: SimTime, iface: IfaceId) {
        let mut drops = std::mem::take(&mut self.drops);
        let f = &mut self.ifaces[iface.0 as usize];
        let table = &self.nodes[f.node.0 as usize].dscp;
        f.counters.ecn_marked += drops.ecn_marked as u64;
        for (p, cause) in &drops.dropped {
            f.counters.drops.add(*cause, p.size);
            f.counters.dropped_by_colour[table.drop_colour_index(p.dscp)] += 1;
            f.counters.dropped_by_profile[p.in_profile as usize] += 1;
        }
        for (p, _) in &drops.dropped {
            self.count_flow_drop(p);
        }
        if let Some(c) = self.capture.as_deref_mut() {
            for (p, _) in &drops.dropped {
                c.on_drop(now, iface, p, &self.routes);
            }
        }
        if let Some(log) = self.recorded.drop_log.as_deref_mut() {
            let at = DropAt::Queue(iface);
            for (p, cause) in &drops.dropped {
                log.record(DropEvent::of(now, at, p, *cause, false));
            }
            // A queue marks where it would have dropped early (RED, CoDel, PIE).
            for (p, cause) in &drops.marked {
                log.record(DropEvent::of(now, at, p, *cause, true));
            }
        }
        let node = self.ifaces[iface.0 as usize].node;
        let mut quenches = std::mem::take(&mut self.quench_out);
        self.quenches_for(now, node, &drops.dropped, &mut quenches);
        drops.clear();
        self.drops = drops;
        if !quenches.is_empty() {
            self.send_quenches(now, node, &mut quenches);
        }
        self.quench_out = quenches;
    }

    /// Counts a packet a real host sent (live mode) in its flow's counters: data from
    /// the flow's source, anything else from its destination as an ACK.
    pub(super) fn count_external_send(&mut self, pkt: &Packet) {
        let Some(f) = self.flows.get_mut(pkt.flow.0 as usize) else {
            return;
        };
        if pkt.src == f.src {
            f.counters.pkts_sent += 1;
            f.counters.bytes_sent += pkt.size as u64;
        } else {
            f.counters.acks_sent += 1;
        }
    }

    /// Counts a packet delivered to a real host (live mode) in its flow's counters.
    #[cold]
    fn count_external_delivery(&mut self, node: NodeId, pkt: &Packet) {
        let Some(f) = self.flows.get_mut(pkt.flow.0 as usize) else {
            return;
        };
        let data = match &pkt.hdr {
            Header::Udp(_) => true,
            Header::Tcp(h) => h.len > 0 && node == f.dst,
            Header::Quench(_) => false,
        };
        if data {
            f.counters.pkts_delivered += 1;
            f.delivered_dscps.0 |= 1u64 << (pkt.dscp & 63);
            if pkt.in_profile {
                f.counters.in_profile_delivered_bytes += pkt.size as u64;
            }
        }
    }

    /// An ACK delivered to a real host (live mode) that sends a QoS-managed flow: the
    /// manager's `ack` trigger (and `dupack` when the cumulative ACK did not move and
    /// the segment carries no data, SYN or FIN), as an ACK reaching the sender's TCP
    /// is in the simulator (P0 §4.1, §6.3). Whether TCP then sent data is not visible
    /// here, so `sent` is taken as true (the `idle_ack` trigger is refused live).
    #[inline]
    fn external_ack(&mut self, now: SimTime, node: NodeId, pkt: &Packet) {
        if self.qos.is_none() {
            return;
        }
        let Header::Tcp(h) = &pkt.hdr else { return };
        let i = pkt.flow.0 as usize;
        if h.flags & crate::packet::tcp_flags::ACK == 0
            || self.flows.get(i).is_none_or(|f| f.src != node)
        {
            return;
        }
        let w = self
            .wall
            .as_deref_mut()
            .expect("external delivery has wall state");
        let plain = h.len == 0
            && h.flags & (crate::packet::tcp_flags::SYN | crate::packet::tcp_flags::FIN) == 0;
        let dup = plain && w.last_ack.get(i).copied().flatten() == Some(h.ack);
        if let Some(a) = w.last_ack.get_mut(i) {
            *a = Some(h.ack);
        }
        self.qos_ack(now, pkt.flow, dup, true);
    }

    pub(super) fn count_flow_drop(&mut self, pkt: &Packet) {
        if !matches!(pkt.hdr, Header::Quench(_)) {
            if let Some(f) = self.flows.get_mut(pkt.flow.0 as usize) {
                f.counters.drops += 1;
            }
        }
    }

    /// Drops the packet in slot `p` at `node` (outside its queues) at `now`, freeing the
    /// slot; `at` says where in the node (for the drop log).
    pub(super) fn drop_at_node(
        &mut self,
        now: SimTime,
        node: NodeId,
        p: Slot,
        cause: DropCause,
        at: DropAt,
    ) {
        let pkt = self.pool.take(p);
        self.nodes[node.0 as usize]
            .counters
            .drops
            .add(cause, pkt.size);
        self.count_flow_drop(&pkt);
        if let Some(log) = self.recorded.drop_log.as_deref_mut() {
            log.record(DropEvent::of(now, at, &pkt, cause, false));
        }
    }
}

//! The world: hosts the mechanisms and runs the event loop.
//!
//! Mechanisms (queues, conditioners, sources, transports) only answer decisions; the
//! world turns them into events. A packet's life:
//!
//! ```text
//! source ─► send_from_host ─► host egress hook ─► route_out ─► iface egress hook
//!        ─► enqueue ─► (transmitter idle?) start_tx ─► TxDone + Arrive(after delay)
//! Arrive ─► router: ingress hook ─► route_out …   host: deliver (or forward)
//! ```

use crate::app::{Cbr, ParetoOnOff, UdpSink};
use crate::cond::{Action, Conditioner};
use crate::engine::EventQueue;
use crate::error::RunError;
use crate::net::{Hook, Iface, IfaceCounters, IfaceId, Node, NodeCounters, NodeKind, Routes};
use crate::packet::{FlowId, Header, NodeId, Packet, Proto, UdpHeader};
use crate::queue::{DropCause, Drops, Queue};
use crate::time::{Dur, SimTime};

/// Where a conditioner chain sits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookAt {
    /// Every packet a host sends, before routing.
    HostEgress(NodeId),
    /// Every packet a router receives, before routing.
    Ingress(NodeId),
    /// Packets routed to an interface, before its queue.
    Egress(IfaceId),
}

/// Something that happens at a point in simulated time.
#[derive(Debug)]
enum Event {
    /// A packet sent on `iface` reaches the node at its far end.
    Arrive { iface: IfaceId, pkt: Packet },
    /// `iface` finished serialising a packet.
    TxDone { iface: IfaceId },
    /// A conditioner's hold on a packet ended: continue the chain after `stage`.
    Released { at: HookAt, stage: u16, pkt: Packet },
    /// A conditioner asked for its timer.
    CondTimer { at: HookAt, stage: u16 },
    /// A flow's source wants attention.
    Source { flow: FlowId },
    /// The warm-up ends: totals start here.
    WarmupEnd,
    /// Record the per-flow goodput series.
    SeriesSample,
    /// Record queue occupancies.
    QueueSample,
}

/// A flow's application and transport state.
#[derive(Debug)]
pub enum FlowApp {
    /// CBR over UDP.
    Cbr {
        /// The source.
        src: Cbr,
        /// The sink at the receiver.
        sink: UdpSink,
        /// Next datagram number.
        seq: u64,
        /// Packet size on the wire.
        size: u32,
    },
    /// Pareto on/off over UDP.
    Pareto {
        /// The source.
        src: ParetoOnOff,
        /// The sink at the receiver.
        sink: UdpSink,
        /// Next datagram number.
        seq: u64,
        /// Packet size on the wire.
        size: u32,
    },
}

impl FlowApp {
    /// Short name of the kind, as in result tables.
    pub fn kind(&self) -> &'static str {
        match self {
            FlowApp::Cbr { .. } => "cbr",
            FlowApp::Pareto { .. } => "pareto",
        }
    }
}

/// Per-flow counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowCounters {
    /// Packets the source sent (retransmissions included).
    pub pkts_sent: u64,
    /// Bytes the source sent on the wire.
    pub bytes_sent: u64,
    /// Packets of the flow delivered at its destination.
    pub pkts_delivered: u64,
    /// Goodput: application bytes delivered in order, duplicates excluded.
    pub goodput_bytes: u64,
    /// Packets of the flow dropped anywhere.
    pub drops: u64,
}

impl FlowCounters {
    fn since(&self, e: &FlowCounters) -> FlowCounters {
        FlowCounters {
            pkts_sent: self.pkts_sent - e.pkts_sent,
            bytes_sent: self.bytes_sent - e.bytes_sent,
            pkts_delivered: self.pkts_delivered - e.pkts_delivered,
            goodput_bytes: self.goodput_bytes - e.goodput_bytes,
            drops: self.drops - e.drops,
        }
    }
}

/// A flow between two hosts.
#[derive(Debug)]
pub struct Flow {
    /// Name from the scenario.
    pub name: String,
    /// Sending host.
    pub src: NodeId,
    /// Receiving host.
    pub dst: NodeId,
    /// Source port (classification).
    pub src_port: u16,
    /// Destination port (classification).
    pub dst_port: u16,
    /// When the source starts.
    pub start: SimTime,
    /// Application and transport.
    pub app: FlowApp,
    /// Counters since the start of the run.
    pub counters: FlowCounters,
}

impl Flow {
    /// Counters accumulated after the warm-up (flow `i` of `warm`).
    pub fn counters_since(&self, warm: &Snapshot, i: usize) -> FlowCounters {
        warm.flows
            .get(i)
            .map_or(self.counters, |w| self.counters.since(w))
    }
}

/// What the run records, resolved from the scenario.
#[derive(Debug, Default)]
pub struct RecordPlan {
    /// Series interval.
    pub interval: Dur,
    /// Interfaces sampled.
    pub queues: Vec<IfaceId>,
    /// Queue sampling interval.
    pub queue_interval: Dur,
}

/// Recorded series, filled as the run goes.
#[derive(Debug, Default)]
pub struct Recorded {
    /// (flow, t [ns], cumulative goodput bytes).
    pub series: Vec<(u32, u64, u64)>,
    /// (iface, t [ns], packets, bytes, average).
    pub queue_samples: Vec<(u32, u64, u32, u64, f64)>,
}

/// Counters frozen when the warm-up ended.
#[derive(Debug, Default, Clone)]
pub struct Snapshot {
    /// Per node.
    pub nodes: Vec<NodeCounters>,
    /// Per interface.
    pub ifaces: Vec<IfaceCounters>,
    /// Per flow.
    pub flows: Vec<FlowCounters>,
}

/// A built network with its flows, ready to run.
#[derive(Debug)]
pub struct World {
    q: EventQueue<Event>,
    /// Nodes, indexed by `NodeId`.
    pub nodes: Vec<Node>,
    /// Interfaces, indexed by `IfaceId`.
    pub ifaces: Vec<Iface>,
    /// Static routes.
    pub routes: Routes,
    /// Flows, indexed by `FlowId`.
    pub flows: Vec<Flow>,
    /// End of the run.
    pub end: SimTime,
    /// End of the warm-up.
    pub warmup: SimTime,
    /// Event budget.
    pub max_events: u64,
    /// Packet transmissions on links so far (packet-hops).
    pub hops: u64,
    /// What to record.
    pub plan: RecordPlan,
    /// What was recorded.
    pub recorded: Recorded,
    /// Counters at the end of the warm-up (zeros if there is none).
    pub warm: Snapshot,
    next_uid: u64,
    drops: Drops,
}

impl World {
    /// An empty world; `scenario::build` fills it.
    pub fn new(end: SimTime, warmup: SimTime) -> Self {
        World {
            q: EventQueue::new(),
            nodes: Vec::new(),
            ifaces: Vec::new(),
            routes: Routes::default(),
            flows: Vec::new(),
            end,
            warmup,
            max_events: u64::MAX,
            hops: 0,
            plan: RecordPlan::default(),
            recorded: Recorded::default(),
            warm: Snapshot::default(),
            next_uid: 0,
            drops: Drops::default(),
        }
    }

    /// Events processed so far.
    pub fn events(&self) -> u64 {
        self.q.events_processed()
    }

    fn snapshot(&self) -> Snapshot {
        Snapshot {
            nodes: self.nodes.iter().map(|n| n.counters).collect(),
            ifaces: self.ifaces.iter().map(|f| f.counters).collect(),
            flows: self.flows.iter().map(|f| f.counters).collect(),
        }
    }

    /// Runs the simulation from the start to its end time.
    pub fn run(&mut self) -> Result<(), RunError> {
        self.start();
        self.resume()
    }

    /// Schedules the initial events (flow starts, warm-up end, samplers).
    fn start(&mut self) {
        self.warm = self.snapshot();
        for i in 0..self.flows.len() {
            let start = self.flows[i].start;
            self.q.schedule_forget(
                start,
                Event::Source {
                    flow: FlowId(i as u32),
                },
            );
        }
        if self.warmup > SimTime::ZERO {
            self.q.schedule_forget(self.warmup, Event::WarmupEnd);
        }
        if self.plan.interval > Dur::ZERO {
            self.q
                .schedule_forget(SimTime::ZERO + self.plan.interval, Event::SeriesSample);
        }
        if !self.plan.queues.is_empty() && self.plan.queue_interval > Dur::ZERO {
            self.q.schedule_forget(SimTime::ZERO, Event::QueueSample);
        }
    }

    /// Runs events until the end time (which a caller may have moved later).
    pub fn resume(&mut self) -> Result<(), RunError> {
        while let Some((now, ev)) = self.q.pop_until(self.end) {
            if self.q.events_processed() > self.max_events {
                return Err(RunError::EventBudget(self.max_events, now.as_secs_f64()));
            }
            self.handle(now, ev);
        }
        Ok(())
    }

    fn handle(&mut self, now: SimTime, ev: Event) {
        match ev {
            Event::Arrive { iface, pkt } => self.arrive(now, iface, pkt),
            Event::TxDone { iface } => {
                self.ifaces[iface.0 as usize].busy = false;
                self.start_tx(now, iface);
            }
            Event::Released { at, stage, mut pkt } => {
                self.node_of_hook_mut(at).held -= 1;
                if self.run_hook(now, at, stage as usize + 1, &mut pkt) {
                    self.after_hook(now, at, pkt);
                }
            }
            Event::CondTimer { at, stage } => self.cond_timer(now, at, stage as usize),
            Event::Source { flow } => self.source(now, flow),
            Event::WarmupEnd => self.warm = self.snapshot(),
            Event::SeriesSample => {
                let t = now.as_nanos();
                for (i, f) in self.flows.iter().enumerate() {
                    self.recorded
                        .series
                        .push((i as u32, t, f.counters.goodput_bytes));
                }
                self.q
                    .schedule_forget(now + self.plan.interval, Event::SeriesSample);
            }
            Event::QueueSample => {
                let t = now.as_nanos();
                for &f in &self.plan.queues {
                    let q = &self.ifaces[f.0 as usize].queue;
                    let occ = q.occupancy();
                    let avg = q.average().unwrap_or(f64::NAN);
                    self.recorded
                        .queue_samples
                        .push((f.0, t, occ.packets, occ.bytes, avg));
                }
                self.q
                    .schedule_forget(now + self.plan.queue_interval, Event::QueueSample);
            }
        }
    }

    // ---- sources -------------------------------------------------------------------

    fn source(&mut self, now: SimTime, flow: FlowId) {
        let f = &mut self.flows[flow.0 as usize];
        let (step, seq, size) = match &mut f.app {
            FlowApp::Cbr { src, seq, size, .. } => (src.on_timer(now), seq, *size),
            FlowApp::Pareto { src, seq, size, .. } => (src.on_timer(now), seq, *size),
        };
        if let Some(next) = step.next {
            self.q.schedule_forget(next, Event::Source { flow });
        }
        if step.send {
            let hdr = Header::Udp(UdpHeader { seq: *seq });
            *seq += 1;
            let pkt = self.new_packet(flow, size, Proto::Udp, hdr, now);
            self.send_from_host(now, pkt);
        }
    }

    /// A fresh packet of `flow` from its source to its destination.
    fn new_packet(
        &mut self,
        flow: FlowId,
        size: u32,
        proto: Proto,
        hdr: Header,
        now: SimTime,
    ) -> Packet {
        let f = &mut self.flows[flow.0 as usize];
        f.counters.pkts_sent += 1;
        f.counters.bytes_sent += size as u64;
        let uid = self.next_uid;
        self.next_uid += 1;
        Packet {
            uid,
            flow,
            src: f.src,
            dst: f.dst,
            src_port: f.src_port,
            dst_port: f.dst_port,
            proto,
            size,
            created: now,
            hdr,
            ..Default::default()
        }
    }

    // ---- forwarding ----------------------------------------------------------------

    /// A host hands a packet to the network.
    fn send_from_host(&mut self, now: SimTime, mut pkt: Packet) {
        let node = pkt.src;
        self.nodes[node.0 as usize].counters.originated += 1;
        let at = HookAt::HostEgress(node);
        if self.run_hook(now, at, 0, &mut pkt) {
            self.route_out(now, node, pkt);
        }
    }

    fn arrive(&mut self, now: SimTime, iface: IfaceId, mut pkt: Packet) {
        let node = self.ifaces[iface.0 as usize].peer;
        let n = &mut self.nodes[node.0 as usize];
        n.counters.received += 1;
        if pkt.dst == node {
            n.counters.delivered += 1;
            self.deliver(now, node, pkt);
            return;
        }
        if n.kind == NodeKind::Router {
            let at = HookAt::Ingress(node);
            if !self.run_hook(now, at, 0, &mut pkt) {
                return;
            }
        }
        self.route_out(now, node, pkt);
    }

    fn route_out(&mut self, now: SimTime, node: NodeId, mut pkt: Packet) {
        let Some(iface) = self.routes.next_hop(node, pkt.dst) else {
            self.drop_at_node(node, &pkt, DropCause::NoRoute);
            return;
        };
        let at = HookAt::Egress(iface);
        if self.run_hook(now, at, 0, &mut pkt) {
            self.enqueue(now, iface, pkt);
        }
    }

    /// Continues a packet's journey after the hook at `at` let it through.
    fn after_hook(&mut self, now: SimTime, at: HookAt, pkt: Packet) {
        match at {
            HookAt::HostEgress(n) | HookAt::Ingress(n) => self.route_out(now, n, pkt),
            HookAt::Egress(f) => self.enqueue(now, f, pkt),
        }
    }

    fn enqueue(&mut self, now: SimTime, iface: IfaceId, pkt: Packet) {
        let fi = iface.0 as usize;
        let node = self.ifaces[fi].node;
        self.nodes[node.0 as usize].counters.forwarded += 1;
        let f = &mut self.ifaces[fi];
        f.counters.arrived += 1;
        f.counters.arrived_bytes += pkt.size as u64;
        f.queue.enqueue(now, pkt, &mut self.drops);
        self.account_queue_drops(iface);
        if !self.ifaces[fi].busy {
            self.start_tx(now, iface);
        }
    }

    fn start_tx(&mut self, now: SimTime, iface: IfaceId) {
        let fi = iface.0 as usize;
        let pkt = self.ifaces[fi].queue.dequeue(now, &mut self.drops);
        self.account_queue_drops(iface);
        let Some(pkt) = pkt else { return };
        let f = &mut self.ifaces[fi];
        f.busy = true;
        f.counters.departed += 1;
        f.counters.departed_bytes += pkt.size as u64;
        let tx = f.rate.tx_time(pkt.size);
        let done = now + tx;
        let lost = f.loss > 0.0 && f.loss_rng.bernoulli(f.loss);
        let arrive = done + f.delay;
        self.hops += 1;
        self.q.schedule_forget(done, Event::TxDone { iface });
        if lost {
            self.ifaces[fi]
                .counters
                .drops
                .add(DropCause::RandomLoss, pkt.size);
            self.count_flow_drop(&pkt);
        } else {
            self.q.schedule_forget(arrive, Event::Arrive { iface, pkt });
        }
    }

    fn account_queue_drops(&mut self, iface: IfaceId) {
        if self.drops.is_empty() {
            return;
        }
        let mut drops = std::mem::take(&mut self.drops);
        let f = &mut self.ifaces[iface.0 as usize];
        f.counters.ecn_marked += drops.ecn_marked as u64;
        for (p, cause) in &drops.dropped {
            f.counters.drops.add(*cause, p.size);
        }
        for (p, _) in &drops.dropped {
            self.count_flow_drop(p);
        }
        drops.clear();
        self.drops = drops;
    }

    fn count_flow_drop(&mut self, pkt: &Packet) {
        if !matches!(pkt.hdr, Header::Quench(_)) {
            if let Some(f) = self.flows.get_mut(pkt.flow.0 as usize) {
                f.counters.drops += 1;
            }
        }
    }

    fn drop_at_node(&mut self, node: NodeId, pkt: &Packet, cause: DropCause) {
        self.nodes[node.0 as usize]
            .counters
            .drops
            .add(cause, pkt.size);
        self.count_flow_drop(pkt);
    }

    // ---- conditioner hooks ---------------------------------------------------------

    fn hook_mut(&mut self, at: HookAt) -> &mut Hook {
        match at {
            HookAt::HostEgress(n) => &mut self.nodes[n.0 as usize].host_egress,
            HookAt::Ingress(n) => &mut self.nodes[n.0 as usize].ingress,
            HookAt::Egress(f) => &mut self.ifaces[f.0 as usize].egress,
        }
    }

    fn hook_node(&self, at: HookAt) -> NodeId {
        match at {
            HookAt::HostEgress(n) | HookAt::Ingress(n) => n,
            HookAt::Egress(f) => self.ifaces[f.0 as usize].node,
        }
    }

    fn node_of_hook_mut(&mut self, at: HookAt) -> &mut NodeCounters {
        let n = self.hook_node(at);
        &mut self.nodes[n.0 as usize].counters
    }

    /// Runs the chain at `at` from `stage` on; true if the packet passes the whole
    /// chain now (false: dropped, or held until a `Released` event).
    fn run_hook(&mut self, now: SimTime, at: HookAt, stage: usize, pkt: &mut Packet) -> bool {
        let n_stages = self.hook_mut(at).stages.len();
        for s in stage..n_stages {
            let action = self.hook_mut(at).stages[s].condition(now, pkt);
            self.arm_cond_timer(at, s);
            match action {
                Action::Pass => {}
                Action::Drop(cause) => {
                    let node = self.hook_node(at);
                    self.drop_at_node(node, pkt, cause);
                    return false;
                }
                Action::DelayUntil(t) => {
                    self.node_of_hook_mut(at).held += 1;
                    self.q.schedule_forget(
                        t,
                        Event::Released {
                            at,
                            stage: s as u16,
                            pkt: *pkt,
                        },
                    );
                    return false;
                }
            }
        }
        true
    }

    fn arm_cond_timer(&mut self, at: HookAt, stage: usize) {
        let h = self.hook_mut(at);
        if let Some(t) = h.stages[stage].next_timer() {
            if t < h.armed[stage] {
                h.armed[stage] = t;
                self.q.schedule_forget(
                    t,
                    Event::CondTimer {
                        at,
                        stage: stage as u16,
                    },
                );
            }
        }
    }

    fn cond_timer(&mut self, now: SimTime, at: HookAt, stage: usize) {
        let h = self.hook_mut(at);
        if h.armed[stage] != now {
            return; // superseded by an earlier timer that already ran
        }
        h.armed[stage] = SimTime::NEVER;
        if h.stages[stage].next_timer().is_some_and(|t| t <= now) {
            h.stages[stage].on_timer(now);
        }
        self.arm_cond_timer(at, stage);
    }

    // ---- delivery ------------------------------------------------------------------

    fn deliver(&mut self, now: SimTime, _node: NodeId, pkt: Packet) {
        let Some(f) = self.flows.get_mut(pkt.flow.0 as usize) else {
            return;
        };
        f.counters.pkts_delivered += 1;
        match (&mut f.app, &pkt.hdr) {
            (FlowApp::Cbr { sink, .. }, Header::Udp(h))
            | (FlowApp::Pareto { sink, .. }, Header::Udp(h)) => {
                let new = sink.on_packet(now, &pkt, h.seq);
                f.counters.goodput_bytes += new;
            }
            _ => {}
        }
    }
}

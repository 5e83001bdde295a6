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
use crate::cond::Action;
use crate::engine::EventQueue;
use crate::error::RunError;
use crate::net::{Hook, Iface, IfaceCounters, IfaceId, Node, NodeCounters, NodeKind, Routes};
use crate::packet::{Ecn, TcpHeader, TCP_IP_HEADER};
use crate::packet::{FlowId, Header, NodeId, Packet, Proto, UdpHeader};
use crate::queue::{DropCause, Drops, Queue};
use crate::tcp::{TcpProbe, TcpReceiver, TcpSender};
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
    /// The first packet propagating on `iface` reaches the node at its far end.
    Arrive { iface: IfaceId },
    /// `iface` finished serialising a packet.
    TxDone { iface: IfaceId },
    /// A conditioner's hold on a packet ended: continue the chain at stage `resume`.
    Released { at: HookAt, resume: u16, slot: u32 },
    /// A conditioner chain asked for its timer.
    CondTimer { at: HookAt },
    /// A flow's source wants attention.
    Source { flow: FlowId },
    /// A TCP endpoint's timer (sender or receiver) may be due.
    TcpTimer { flow: FlowId, receiver: bool },
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
    /// A TCP connection.
    Tcp(Box<TcpFlow>),
}

/// The two ends of a TCP connection and their timer bookkeeping.
#[derive(Debug)]
pub struct TcpFlow {
    /// The sending end (at the flow's source).
    pub snd: TcpSender,
    /// The receiving end (at the flow's destination).
    pub rcv: TcpReceiver,
    /// Data segments carry ECT.
    pub ecn: bool,
    /// The receiving application reads at once (finite receive buffers drain).
    pub app_reads: bool,
    /// Record the sender's state on change.
    pub traced: bool,
    /// Time of the sender's pending timer event (NEVER if none).
    pub snd_armed: SimTime,
    /// Time of the receiver's pending timer event (NEVER if none).
    pub rcv_armed: SimTime,
    /// Last traced (cwnd, ssthresh), to record only changes.
    pub last_trace: (u32, u32),
}

impl FlowApp {
    /// Short name of the kind, as in result tables.
    pub fn kind(&self) -> &'static str {
        match self {
            FlowApp::Cbr { .. } => "cbr",
            FlowApp::Pareto { .. } => "pareto",
            FlowApp::Tcp(_) => "tcp",
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
    /// Packets of the flow dropped anywhere (data and ACKs).
    pub drops: u64,
    /// Packets the receiver sent back (TCP ACKs).
    pub acks_sent: u64,
}

impl FlowCounters {
    fn since(&self, e: &FlowCounters) -> FlowCounters {
        FlowCounters {
            pkts_sent: self.pkts_sent - e.pkts_sent,
            bytes_sent: self.bytes_sent - e.bytes_sent,
            pkts_delivered: self.pkts_delivered - e.pkts_delivered,
            goodput_bytes: self.goodput_bytes - e.goodput_bytes,
            drops: self.drops - e.drops,
            acks_sent: self.acks_sent - e.acks_sent,
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
    /// (flow, t [ns], TCP sender probe) on every change of cwnd or ssthresh.
    pub traces: Vec<(u32, u64, TcpProbe)>,
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
    /// Stops the run when set (checked every 65 536 events).
    pub interrupt: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
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
    /// Capture points from the scenario, validated (nothing is written without `capture`).
    pub capture_plan: Vec<crate::capture::CapturePoint>,
    /// Open capture files; `None` (the usual case) costs one check per packet-hop.
    pub capture: Option<Box<crate::capture::Capturer>>,
    /// Warnings about the scenario found while building it (e.g. P1's core-queue rule).
    pub warnings: Vec<String>,
    next_uid: u64,
    drops: Drops,
    tcp_out: Vec<TcpHeader>,
    held: PacketSlab,
}

/// Packets held by conditioners, in reusable slots: events refer to them by index so
/// that events stay small (a packet is 144 bytes; an event is 16).
#[derive(Debug, Default)]
struct PacketSlab {
    slots: Vec<Packet>,
    free: Vec<u32>,
}

impl PacketSlab {
    fn put(&mut self, pkt: Packet) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = pkt;
                i
            }
            None => {
                self.slots.push(pkt);
                (self.slots.len() - 1) as u32
            }
        }
    }

    fn take(&mut self, slot: u32) -> Packet {
        self.free.push(slot);
        self.slots[slot as usize]
    }
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
            interrupt: None,
            hops: 0,
            plan: RecordPlan::default(),
            recorded: Recorded::default(),
            warm: Snapshot::default(),
            capture_plan: Vec::new(),
            capture: None,
            warnings: Vec::new(),
            next_uid: 0,
            drops: Drops::default(),
            tcp_out: Vec::new(),
            held: PacketSlab::default(),
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
            let n = self.q.events_processed();
            if n > self.max_events {
                return Err(RunError::EventBudget(self.max_events, now.as_secs_f64()));
            }
            if n & 0xffff == 0
                && self
                    .interrupt
                    .as_ref()
                    .is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed))
            {
                return Err(RunError::Interrupted(now.as_secs_f64()));
            }
            self.handle(now, ev);
        }
        Ok(())
    }

    fn handle(&mut self, now: SimTime, ev: Event) {
        match ev {
            Event::Arrive { iface } => {
                let f = &mut self.ifaces[iface.0 as usize];
                let (_, pkt) = f
                    .on_wire
                    .pop_front()
                    .expect("an Arrive event has a packet on the wire");
                match f.on_wire.front() {
                    Some(&(t, _)) => self.q.schedule_forget(t, Event::Arrive { iface }),
                    None => f.arrive_pending = false,
                }
                self.arrive(now, iface, pkt);
            }
            Event::TxDone { iface } => {
                self.ifaces[iface.0 as usize].tx_pending = false;
                self.start_tx(now, iface);
            }
            Event::Released { at, resume, slot } => {
                let mut pkt = self.held.take(slot);
                self.node_of_hook_mut(at).held -= 1;
                if self.run_hook(now, at, resume as usize, &mut pkt) {
                    self.after_hook(now, at, pkt);
                }
            }
            Event::CondTimer { at } => self.cond_timer(now, at),
            Event::Source { flow } => self.source(now, flow),
            Event::TcpTimer { flow, receiver } => self.tcp_timer(now, flow, receiver),
            Event::WarmupEnd => {
                self.warm = self.snapshot();
                for f in &mut self.flows {
                    if let FlowApp::Cbr { sink, .. } | FlowApp::Pareto { sink, .. } = &mut f.app {
                        sink.reset_delay();
                    }
                }
            }
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
            FlowApp::Tcp(t) => {
                let mut out = std::mem::take(&mut self.tcp_out);
                t.snd.start(now, &mut out);
                self.tcp_send(now, flow, false, &mut out);
                self.tcp_out = out;
                self.tcp_rearm(flow, false);
                return;
            }
        };
        if let Some(next) = step.next {
            self.q.schedule_forget(next, Event::Source { flow });
        }
        if step.send {
            let hdr = Header::Udp(UdpHeader { seq: *seq });
            *seq += 1;
            let pkt = self.new_packet(flow, size, Proto::Udp, hdr, now, false);
            self.send_from_host(now, pkt);
        }
    }

    /// A fresh packet of `flow`, from its source (or, `reverse`, from its destination).
    fn new_packet(
        &mut self,
        flow: FlowId,
        size: u32,
        proto: Proto,
        hdr: Header,
        now: SimTime,
        reverse: bool,
    ) -> Packet {
        let f = &mut self.flows[flow.0 as usize];
        let (src, dst, src_port, dst_port) = if reverse {
            f.counters.acks_sent += 1;
            (f.dst, f.src, f.dst_port, f.src_port)
        } else {
            f.counters.pkts_sent += 1;
            f.counters.bytes_sent += size as u64;
            (f.src, f.dst, f.src_port, f.dst_port)
        };
        let uid = self.next_uid;
        self.next_uid += 1;
        Packet {
            uid,
            flow,
            src,
            dst,
            src_port,
            dst_port,
            proto,
            size,
            created: now,
            hdr,
            ..Default::default()
        }
    }

    // ---- TCP -----------------------------------------------------------------------

    /// Sends the segments in `out` (emptying it): data from the source, or
    /// (`reverse`) ACKs from the destination.
    fn tcp_send(&mut self, now: SimTime, flow: FlowId, reverse: bool, out: &mut Vec<TcpHeader>) {
        let ecn = matches!(&self.flows[flow.0 as usize].app, FlowApp::Tcp(t) if t.ecn);
        for h in out.drain(..) {
            let size = h.len + TCP_IP_HEADER;
            let data = h.len > 0;
            let mut pkt = self.new_packet(flow, size, Proto::Tcp, Header::Tcp(h), now, reverse);
            if ecn && data && !reverse {
                pkt.ecn = Ecn::Ect;
            }
            self.send_from_host(now, pkt);
        }
    }

    /// Schedules a timer event if the endpoint's deadline is earlier than the one armed.
    fn tcp_rearm(&mut self, flow: FlowId, receiver: bool) {
        let FlowApp::Tcp(t) = &mut self.flows[flow.0 as usize].app else {
            return;
        };
        let (next, armed) = if receiver {
            (t.rcv.next_timer(), &mut t.rcv_armed)
        } else {
            (t.snd.next_timer(), &mut t.snd_armed)
        };
        if let Some(n) = next {
            if n < *armed {
                *armed = n;
                self.q
                    .schedule_forget(n, Event::TcpTimer { flow, receiver });
            }
        }
    }

    fn tcp_timer(&mut self, now: SimTime, flow: FlowId, receiver: bool) {
        let mut out = std::mem::take(&mut self.tcp_out);
        if let FlowApp::Tcp(t) = &mut self.flows[flow.0 as usize].app {
            let armed = if receiver {
                &mut t.rcv_armed
            } else {
                &mut t.snd_armed
            };
            if *armed == now {
                *armed = SimTime::NEVER;
                if receiver {
                    t.rcv.on_timer(now, &mut out);
                } else {
                    t.snd.on_timer(now, &mut out);
                }
            }
            // else: superseded by an earlier timer that already ran
        }
        self.tcp_send(now, flow, receiver, &mut out);
        self.tcp_out = out;
        if !receiver {
            self.trace(now, flow);
        }
        self.tcp_rearm(flow, receiver);
    }

    /// Records the sender's state if traced and cwnd or ssthresh changed.
    fn trace(&mut self, now: SimTime, flow: FlowId) {
        let FlowApp::Tcp(t) = &mut self.flows[flow.0 as usize].app else {
            return;
        };
        if !t.traced {
            return;
        }
        let p = t.snd.probe();
        if (p.cwnd, p.ssthresh) != t.last_trace {
            t.last_trace = (p.cwnd, p.ssthresh);
            self.recorded.traces.push((flow.0, now.as_nanos(), p));
        }
    }

    fn tcp_deliver(&mut self, now: SimTime, pkt: &Packet, h: &TcpHeader) {
        let flow = pkt.flow;
        let mut out = std::mem::take(&mut self.tcp_out);
        let f = &mut self.flows[flow.0 as usize];
        let to_receiver = pkt.dst == f.dst;
        if let FlowApp::Tcp(t) = &mut f.app {
            if to_receiver {
                let new = t.rcv.on_segment(now, h, pkt.ecn == Ecn::Ce, &mut out);
                if t.app_reads {
                    t.rcv.app_read(now, u64::MAX, &mut out);
                }
                f.counters.goodput_bytes += new;
            } else {
                t.snd.on_ack(now, h, &mut out);
            }
        }
        self.tcp_send(now, flow, to_receiver, &mut out);
        self.tcp_out = out;
        if !to_receiver {
            self.trace(now, flow);
        }
        self.tcp_rearm(flow, to_receiver);
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
        if let Some(c) = self.capture.as_deref_mut() {
            c.on_rx(now, iface, &pkt, &self.routes);
        }
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

    fn start_tx(&mut self, now: SimTime, iface: IfaceId) {
        let fi = iface.0 as usize;
        let pkt = self.ifaces[fi].queue.dequeue(now, &mut self.drops);
        self.account_queue_drops(iface);
        let Some(pkt) = pkt else { return };
        if let Some(c) = self.capture.as_deref_mut() {
            c.on_tx(now, iface, &pkt, &self.routes);
        }
        let f = &mut self.ifaces[fi];
        f.counters.departed += 1;
        f.counters.departed_bytes += pkt.size as u64;
        let tx = f.rate.tx_time(pkt.size);
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
                .add(DropCause::RandomLoss, pkt.size);
            self.count_flow_drop(&pkt);
        } else {
            // Packets on a link arrive in the order they were sent, so the link keeps
            // them in a FIFO and only its head has an event: the event heap holds one
            // entry per busy link instead of one per packet in flight.
            let f = &mut self.ifaces[fi];
            f.on_wire.push_back((arrive, pkt));
            if !f.arrive_pending {
                f.arrive_pending = true;
                self.q.schedule_forget(arrive, Event::Arrive { iface });
            }
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
    #[inline]
    fn run_hook(&mut self, now: SimTime, at: HookAt, stage: usize, pkt: &mut Packet) -> bool {
        let h = self.hook_mut(at);
        if h.chain.is_empty() {
            return true;
        }
        let (action, resume) = h.chain.condition_from(stage, now, pkt);
        self.arm_cond_timer(at);
        match action {
            Action::Pass => true,
            Action::Drop(cause) => {
                let node = self.hook_node(at);
                self.drop_at_node(node, pkt, cause);
                false
            }
            Action::DelayUntil(t) => {
                self.node_of_hook_mut(at).held += 1;
                let resume = resume as u16;
                let slot = self.held.put(*pkt);
                self.q
                    .schedule_forget(t, Event::Released { at, resume, slot });
                false
            }
        }
    }

    fn arm_cond_timer(&mut self, at: HookAt) {
        let h = self.hook_mut(at);
        if let Some(t) = h.chain.next_timer() {
            if t < h.armed {
                h.armed = t;
                self.q.schedule_forget(t, Event::CondTimer { at });
            }
        }
    }

    fn cond_timer(&mut self, now: SimTime, at: HookAt) {
        let h = self.hook_mut(at);
        if h.armed != now {
            return; // superseded by an earlier timer that already ran
        }
        h.armed = SimTime::NEVER;
        h.chain.on_timer(now);
        self.arm_cond_timer(at);
    }

    // ---- delivery ------------------------------------------------------------------

    fn deliver(&mut self, now: SimTime, node: NodeId, pkt: Packet) {
        let Some(f) = self.flows.get_mut(pkt.flow.0 as usize) else {
            return;
        };
        match (&mut f.app, &pkt.hdr) {
            (FlowApp::Cbr { sink, .. }, Header::Udp(h))
            | (FlowApp::Pareto { sink, .. }, Header::Udp(h)) => {
                f.counters.pkts_delivered += 1;
                let new = sink.on_packet(now, &pkt, h.seq);
                f.counters.goodput_bytes += new;
            }
            (FlowApp::Tcp(_), Header::Tcp(h)) => {
                if node == f.dst {
                    f.counters.pkts_delivered += 1;
                }
                let h = *h;
                self.tcp_deliver(now, &pkt, &h);
            }
            (FlowApp::Tcp(t), Header::Quench(_)) => t.snd.on_source_quench(now),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn events_stay_small() {
        // The event slab is copied on every schedule and pop: keep payloads out of it.
        assert!(
            std::mem::size_of::<super::Event>() <= 16,
            "{}",
            std::mem::size_of::<super::Event>()
        );
    }
}

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

use crate::cond::Action;
use crate::engine::{EventQueue, Lateness, WallClock};
use crate::net::{Hook, Iface, IfaceCounters, IfaceId, Node, NodeCounters, NodeKind, Routes};
use crate::net::{PacketPool, Slot};
use crate::packet::{Ecn, TcpHeader, TCP_IP_HEADER};
use crate::packet::{FlowId, Header, NodeId, Packet, UdpHeader};
use crate::queue::{DropCause, Drops, Queue};
use crate::tcp::{TcpProbe, TcpSenderStats};
use crate::time::{Dur, SimTime};

mod ahead;
mod cut;
pub mod drop_log;
mod forward;
mod hooks;
mod ptcp;
mod qos;
mod quench;
mod stripe;
mod transport;
mod web;

pub use drop_log::{DropAt, DropEvent, DropLog};
pub use qos::QosSet;

pub use crate::flow::{Flow, FlowApp, FlowCounters, TcpApp, TcpFlow, Writer};

/// A run failed after the scenario was accepted (a bug or a resource limit).
#[derive(Clone, Debug, thiserror::Error, PartialEq)]
pub enum RunError {
    /// The run was interrupted (Ctrl-C) at the given simulated time [s].
    #[error("interrupted at t={0}s")]
    Interrupted(f64),
    /// The run exceeded its event budget (a guard against runaway scenarios).
    #[error("event budget of {0} events exhausted at t={1}s")]
    EventBudget(u64, f64),
    /// An internal invariant broke; the message says which.
    #[error("internal error: {0}")]
    Internal(String),
}

/// Where a conditioner chain sits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookAt {
    /// Every packet a host sends, before routing.
    HostEgress(NodeId),
    /// Every packet a router receives, before routing.
    Ingress(NodeId),
    /// Packets routed to an interface, before its queue.
    Egress(IfaceId),
    /// Packets a router receives over one interface (its peer's ingress), before the
    /// router's own ingress chain.
    IngressIface(IfaceId),
}

/// Something that happens at a point in simulated time.
#[derive(Clone, Copy, Debug)]
enum Event {
    /// The first packet propagating on `iface` reaches the node at its far end.
    Arrive { iface: IfaceId },
    /// `iface` finished serialising a packet.
    TxDone { iface: IfaceId },
    /// A conditioner's hold on a packet ended: continue the chain at stage `resume`.
    Released { at: HookAt, resume: u16, slot: u32 },
    /// The first packet of the hook's delay FIFO for stage `resume` is due.
    ReleasedFifo { at: HookAt, resume: u16 },
    /// A conditioner chain asked for its timer.
    CondTimer { at: HookAt },
    /// A flow's source wants attention.
    Source { flow: FlowId },
    /// A TCP endpoint's timer (sender or receiver) may be due.
    TcpTimer { flow: FlowId, receiver: bool },
    /// A timer of one end of one connection of a flow's application, which has its own
    /// connections ([`TcpApp`]): a web flow's (P3 §V.D) by its client port, the end as
    /// `crate::app::web::WebEnd`; a striped flow's (P4 §2) or a pTCP flow's pipe (P4 §4)
    /// by its subflow index, the end 0 (sender) or 1 (receiver).
    AppTimer { flow: FlowId, conn: u16, end: u8 },
    /// A QoS manager's shaping timer (P0).
    QosTimer { mgr: u32 },
    /// The warm-up ends: totals start here.
    WarmupEnd,
    /// Record the per-flow goodput series.
    SeriesSample,
    /// Record queue occupancies.
    QueueSample,
}

/// Names of the kinds [`World::events_by_kind`] counts, in its order.
pub const EVENT_KINDS: [&str; 6] = [
    "arrive",
    "tx_done",
    "release",
    "tcp_timer",
    "timer",
    "other",
];

impl Event {
    /// Index of the event's kind in [`EVENT_KINDS`].
    #[inline(always)]
    fn kind(&self) -> usize {
        match self {
            Event::Arrive { .. } => 0,
            Event::TxDone { .. } => 1,
            Event::Released { .. } | Event::ReleasedFifo { .. } => 2,
            Event::TcpTimer { .. } => 3,
            Event::CondTimer { .. } | Event::AppTimer { .. } | Event::QosTimer { .. } => 4,
            Event::Source { .. } | Event::WarmupEnd | Event::SeriesSample | Event::QueueSample => 5,
        }
    }
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
    /// (iface, t [ns], class, [green, yellow, red] averages) of the multi-colour RED
    /// queues among the sampled interfaces (see `AnyQueue::colour_averages`).
    pub colour_samples: Vec<(u32, u64, Option<u32>, [f64; 3])>,
    /// (flow, t [ns], TCP sender probe) on every change of cwnd, ssthresh or state.
    pub traces: Vec<(u32, u64, TcpProbe)>,
    /// Every drop and CE mark after the warm-up (`record.drop_events`), up to its limit.
    pub drop_log: Option<Box<DropLog>>,
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
    /// Per flow: the TCP sender's counters (zeros for UDP flows).
    pub tcp: Vec<TcpSenderStats>,
    /// Per interface: its classes' counters (empty unless it has per-class queues).
    pub classes: Vec<Vec<crate::queue::ClassCounters>>,
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
    /// P1 §4.4's queue-rule warnings: the interface each one is about and its index in
    /// `warnings`, so the run's summary can add what the queue dropped.
    pub queue_rule: Vec<(IfaceId, usize)>,
    /// P0's server-side QoS managers, if the scenario has any.
    pub qos: Option<Box<QosSet>>,
    /// State of a wall-clock run (`None` in the simulator).
    pub wall: Option<Box<WallState>>,
    /// Packets may cut through routers that only route them (`world::cut`) and DropTail
    /// interfaces commit transmissions ahead (`world::ahead`); on by default: off, every
    /// router hop and every end of a transmission with a packet waiting is an event of
    /// its own, with the same results wherever no two events coincide to the nanosecond
    /// (`docs/architecture.md`).
    pub cut_through: bool,
    /// Some interface takes pre-forwarded packets this run (see `world::cut`).
    cut_on: bool,
    /// Interfaces with committed packets still without a key (`world::ahead`).
    ahead_keyless: Vec<u32>,
    /// The earliest key whose passing gives one of them its key (`u128::MAX`: none).
    ahead_watch: u128,
    next_uid: u64,
    /// Events handled so far, by kind ([`EVENT_KINDS`]).
    by_kind: [u64; EVENT_KINDS.len()],
    drops: Drops,
    tcp_out: Vec<TcpHeader>,
    quench_out: Vec<Packet>,
    /// Every packet in the network (on links, held by conditioners, being forwarded),
    /// written once: the rest refers to it by slot.
    pool: PacketPool,
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
            queue_rule: Vec::new(),
            qos: None,
            wall: None,
            cut_through: true,
            cut_on: false,
            ahead_keyless: Vec::new(),
            ahead_watch: u128::MAX,
            next_uid: 0,
            by_kind: [0; EVENT_KINDS.len()],
            drops: Drops::default(),
            tcp_out: Vec::new(),
            quench_out: Vec::new(),
            pool: PacketPool::default(),
        }
    }

    /// Events processed so far.
    pub fn events(&self) -> u64 {
        self.q.events_processed()
    }

    /// Events handled so far by kind, in the order of [`EVENT_KINDS`] (they sum to
    /// [`Self::events`]).
    pub fn events_by_kind(&self) -> [u64; EVENT_KINDS.len()] {
        self.by_kind
    }

    /// Events waiting in the event heap now.
    pub fn pending_events(&self) -> usize {
        self.q.pending()
    }

    /// The packets in the network now (on links and held by conditioners).
    pub fn packet_pool(&self) -> &PacketPool {
        &self.pool
    }

    fn snapshot(&self) -> Snapshot {
        Snapshot {
            nodes: self.nodes.iter().map(|n| n.counters).collect(),
            ifaces: self.ifaces.iter().map(|f| f.counters).collect(),
            flows: self.flows.iter().map(|f| f.counters).collect(),
            tcp: self
                .flows
                .iter()
                .map(|f| match &f.app {
                    FlowApp::Tcp(t) => *t.snd.stats(),
                    _ => TcpSenderStats::default(),
                })
                .collect(),
            classes: self
                .ifaces
                .iter()
                .map(|f| match &f.queue {
                    crate::queue::AnyQueue::Classes(s) => {
                        s.class_counters().map(|(_, c)| *c).collect()
                    }
                    _ => Vec::new(),
                })
                .collect(),
        }
    }

    /// Runs the simulation from the start to its end time.
    pub fn run(&mut self) -> Result<(), RunError> {
        self.start();
        self.resume()
    }

    /// Schedules the initial events (flow starts, warm-up end, samplers); in live mode
    /// only the simulated flows' sources start (real programs send the others).
    fn start(&mut self) {
        self.plan_cut();
        self.plan_ahead();
        self.warm = self.snapshot();
        // Queues hand over the packets they mark only when someone logs them.
        self.drops.keep_marked = self.recorded.drop_log.is_some();
        for i in 0..self.flows.len() {
            if self
                .wall
                .as_deref()
                .is_some_and(|w| w.is_external(FlowId(i as u32)))
            {
                continue; // a real host sends it (live mode)
            }
            let start = self.flows[i].start;
            self.q.schedule_forget(
                start,
                Event::Source {
                    flow: FlowId(i as u32),
                },
            );
        }
        if self.warmup > SimTime::ZERO {
            self.q.schedule_timer(self.warmup, Event::WarmupEnd);
        }
        if self.plan.interval > Dur::ZERO {
            self.q
                .schedule_timer(SimTime::ZERO + self.plan.interval, Event::SeriesSample);
        }
        if !self.plan.queues.is_empty() && self.plan.queue_interval > Dur::ZERO {
            self.q.schedule_timer(SimTime::ZERO, Event::QueueSample);
        }
    }

    /// Runs events until the end time (which a caller may have moved later: the counts
    /// go on, but packets committed ahead were given their keys at the old end, so a run
    /// resumed past it may order coincident events otherwise than one run to the later
    /// end; only the engine's benches and allocation test resume).
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
            if self.ahead_watch < self.q.current_key() {
                self.stamp_ahead();
            }
            self.handle(now, ev);
        }
        // Packets that cut through routers are counted there as they would have been.
        self.settle_cut(self.end, true);
        self.settle_ahead(true);
        Ok(())
    }

    /// Runs the world against the wall clock (docs/live.md): sleeps in
    /// `io.wait` until the next event is due or input is ready, runs every event due by
    /// the clock at its scheduled time, recording how late it ran, and hands packets
    /// read from `io` to the network at their hosts. With `external`, the flows' own
    /// sources do not run and packets reaching their destination host go to
    /// `io.deliver` instead of the simulated transports (live mode); without, the run
    /// is the simulated one, only paced by the clock (its results equal a virtual run's).
    pub fn run_wall(&mut self, io: &mut dyn WallIo, external: bool) -> Result<(), RunError> {
        let flows = vec![external; self.flows.len()];
        self.run_wall_with(io, flows, external)
    }

    /// [`Self::run_wall`] with the switch per flow: flow `i` is external (a real host
    /// sends it and its packets at their destination go to `io.deliver`) when
    /// `external[i]`, else simulated (its source starts on the wall clock and its
    /// packets reach its own transport, crossing the same links and queues as the
    /// external flows'); packets of no flow (numbered past the flows, read from `io`)
    /// go to `io.deliver` when `other` (docs/live.md, "qoslab's own transports in a live
    /// run").
    pub fn run_wall_with(
        &mut self,
        io: &mut dyn WallIo,
        mut external: Vec<bool>,
        other: bool,
    ) -> Result<(), RunError> {
        let clock = WallClock::start();
        external.resize(self.flows.len(), other);
        self.wall = Some(Box::new(WallState {
            external,
            external_other: other,
            by_iface: vec![Lateness::default(); self.ifaces.len()],
            other: Lateness::default(),
            out: Vec::new(),
            injected: 0,
            last_ack: vec![None; self.flows.len()],
        }));
        self.start();
        let mut inbox = Vec::new();
        loop {
            let t = clock.now();
            self.run_due(&clock, t.min(self.end), io);
            if t >= self.end {
                return Ok(());
            }
            let stop = io.stop()
                || (self.interrupt.as_ref())
                    .is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed));
            if stop {
                return Err(RunError::Interrupted(t.as_secs_f64()));
            }
            // Each packet enters the network at the time it was read (its `created`),
            // not at `t`: under load the events above can take milliseconds, and a
            // packet stamped with the loop's start would cross its links that much early
            // (an RTT below the path's). The events due before it run first.
            io.read(&clock, &mut inbox);
            inbox.sort_by_key(|p| p.created);
            for pkt in inbox.drain(..) {
                let at = pkt.created;
                if at >= self.end {
                    continue; // read after the end: the run does not carry it
                }
                self.run_due(&clock, at, io);
                let w = self.wall.as_deref_mut().expect("wall state");
                w.injected += 1;
                if w.is_external(pkt.flow) {
                    self.count_external_send(&pkt);
                    // A data segment the host's TCP released goes through its
                    // aggregate's QoS manager, if any (P0 §4.1; `qos_send`).
                    let from_source =
                        (self.flows.get(pkt.flow.0 as usize)).is_some_and(|f| f.src == pkt.src);
                    if from_source && matches!(&pkt.hdr, Header::Tcp(h) if h.len > 0) {
                        self.qos_send(at, pkt);
                        self.flush_wall(io);
                        continue;
                    }
                }
                self.send_from_host(at, pkt);
                self.flush_wall(io);
            }
            let next = self.q.peek_time().unwrap_or(SimTime::NEVER).min(self.end);
            io.wait(&clock, next);
        }
    }

    /// Runs every event due by `until`, each at its scheduled time, recording how late
    /// (on `clock`) it ran and handing delivered packets to `io`.
    fn run_due(&mut self, clock: &WallClock, until: SimTime, io: &mut dyn WallIo) {
        while let Some((at, ev)) = self.q.pop_until(until) {
            let late = clock.now().saturating_since(at);
            let w = self.wall.as_deref_mut().expect("wall state set above");
            match ev {
                Event::Arrive { iface } => w.by_iface[iface.0 as usize].record(late),
                _ => w.other.record(late),
            }
            self.handle(at, ev);
            self.flush_wall(io);
        }
    }

    /// Hands the packets delivered to hosts since the last call to `io`.
    #[inline]
    fn flush_wall(&mut self, io: &mut dyn WallIo) {
        let now = self.q.now();
        if let Some(w) = self.wall.as_deref_mut() {
            for pkt in w.out.drain(..) {
                io.deliver(now, &pkt);
            }
        }
    }

    /// Runs one event: packets, transmitters, held packets and TCP timers here (most
    /// events of a run), the rest in [`Self::handle_rare`].
    fn handle(&mut self, now: SimTime, ev: Event) {
        self.by_kind[ev.kind()] += 1;
        match ev {
            Event::Arrive { iface } => {
                let f = &mut self.ifaces[iface.0 as usize];
                let (_, p) = f
                    .on_wire
                    .pop_front()
                    .expect("an Arrive event has a packet on the wire");
                match f.on_wire.front() {
                    Some(&(t, _)) => self.q.schedule_forget(t, Event::Arrive { iface }),
                    None => f.arrive_pending = false,
                }
                if !f.cut.deferred.is_empty() {
                    self.cut_landed(iface, p);
                }
                self.arrive(now, iface, p);
            }
            Event::TxDone { iface } => {
                self.ifaces[iface.0 as usize].tx_pending = false;
                self.start_tx(now, iface);
            }
            Event::Released { at, resume, slot } => {
                let p = Slot(slot);
                self.node_of_hook_mut(at).held -= 1;
                if self.run_hook(now, at, resume as usize, p) {
                    self.after_hook(now, at, p);
                }
            }
            Event::ReleasedFifo { at, resume } => {
                let fifo = &mut self.hook_mut(at).delayed[resume as usize];
                let (_, p) = fifo.pop_front().expect("a release has a held packet");
                if let Some(&(key, _)) = fifo.front() {
                    self.q
                        .schedule_reserved(key, Event::ReleasedFifo { at, resume });
                }
                self.node_of_hook_mut(at).held -= 1;
                if self.run_hook(now, at, resume as usize, p) {
                    self.after_hook(now, at, p);
                }
            }
            Event::TcpTimer { flow, receiver } => self.tcp_timer(now, flow, receiver),
            _ => self.handle_rare(now, ev),
        }
    }

    /// The events that are not a packet's or a TCP timer's: out of line, so that
    /// their handlers' locals (snapshots, samples, sources' packets) do not enlarge the
    /// frame every packet event pays for (it was 10 KiB, probed page by page).
    #[inline(never)]
    fn handle_rare(&mut self, now: SimTime, ev: Event) {
        match ev {
            Event::Arrive { .. }
            | Event::TxDone { .. }
            | Event::Released { .. }
            | Event::ReleasedFifo { .. }
            | Event::TcpTimer { .. } => unreachable!("handled in World::handle"),
            Event::CondTimer { at } => self.cond_timer(now, at),
            Event::Source { flow } => self.source(now, flow),
            Event::QosTimer { mgr } => self.qos_timer(now, mgr),
            Event::AppTimer { flow, conn, end } => {
                let FlowApp::Tcp(t) = &self.flows[flow.0 as usize].app else {
                    return;
                };
                match t.app {
                    TcpApp::Web(_) => self.web_timer(now, flow, conn, end),
                    TcpApp::Stripe(_) => self.stripe_timer(now, flow, conn as u8, end),
                    TcpApp::Ptcp(_) => self.ptcp_timer(now, flow, conn as u8, end),
                    TcpApp::Bulk | TcpApp::Writes(_) | TcpApp::Telnet(_) => {}
                }
            }
            Event::WarmupEnd => {
                self.settle_cut(now, false);
                self.settle_ahead(false);
                self.warm = self.snapshot();
                if let Some(log) = self.recorded.drop_log.as_deref_mut() {
                    log.restart();
                }
                for n in &mut self.nodes {
                    n.host_egress.chain.freeze_marked();
                    n.ingress.chain.freeze_marked();
                }
                for f in &mut self.ifaces {
                    f.egress.chain.freeze_marked();
                    f.ingress.chain.freeze_marked();
                }
                for f in &mut self.flows {
                    f.delivered_dscps = crate::cond::DscpSet(0);
                    if let FlowApp::Cbr { sink, .. } | FlowApp::Pareto { sink, .. } = &mut f.app {
                        sink.reset_delay();
                    }
                    if let Some(d) = &mut f.delays {
                        **d = Default::default();
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
                    .schedule_timer(now + self.plan.interval, Event::SeriesSample);
            }
            Event::QueueSample => {
                let t = now.as_nanos();
                let mut by_colour = Vec::new();
                for k in 0..self.plan.queues.len() {
                    let f = self.plan.queues[k];
                    // Transmissions whose TxDone sorts before the sample have started.
                    let ahead = self.ahead_started(f.0 as usize, self.q.current_key());
                    let q = &self.ifaces[f.0 as usize].queue;
                    let mut occ = q.occupancy();
                    occ.packets += ahead.packets;
                    occ.bytes += ahead.bytes;
                    let avg = q.average().unwrap_or(f64::NAN);
                    self.recorded
                        .queue_samples
                        .push((f.0, t, occ.packets, occ.bytes, avg));
                    q.colour_averages(&mut by_colour);
                    for (class, a) in by_colour.drain(..) {
                        self.recorded.colour_samples.push((f.0, t, class, a));
                    }
                }
                self.q
                    .schedule_timer(now + self.plan.queue_interval, Event::QueueSample);
            }
        }
    }
}

/// Input and output of a wall-clock run ([`World::run_wall`]): live mode's TUN
/// devices, or a test's script.
pub trait WallIo {
    /// Blocks until `until` on `clock` or until input is ready, whichever is first.
    fn wait(&mut self, clock: &WallClock, until: SimTime);
    /// Appends the packets that arrived since the last call (each with its `src` host
    /// and flow set) to `into`, each with `created` set to the time on `clock` it was
    /// read: the time it enters the network.
    fn read(&mut self, clock: &WallClock, into: &mut Vec<Packet>);
    /// Takes a packet the network delivered to its destination host (`pkt.dst`) at `now`.
    fn deliver(&mut self, now: SimTime, pkt: &Packet);
    /// True when the run should stop early (a signal).
    fn stop(&self) -> bool {
        false
    }
}

/// What a wall-clock run keeps beside the world ([`World::run_wall`]).
#[derive(Debug, Default)]
pub struct WallState {
    /// Per flow: a real host sends it and its packets at their destination go out (to
    /// `WallIo::deliver`), not to its transport; else qoslab's own endpoints run it.
    pub external: Vec<bool>,
    /// Packets of no flow (numbered past the flows) go out too.
    pub external_other: bool,
    /// Lateness of the releases off each interface's link (its `Arrive` events).
    pub by_iface: Vec<Lateness>,
    /// Lateness of every other event.
    pub other: Lateness,
    /// Delivered packets not yet handed out.
    pub out: Vec<Packet>,
    /// Packets read from the outside and handed to the network.
    pub injected: u64,
    /// Per flow: the last cumulative ACK delivered to its source (duplicate-ACK
    /// detection for the QoS managers' `dupack` trigger).
    pub last_ack: Vec<Option<u64>>,
}

impl WallState {
    /// Whether `flow`'s packets at their destination go out to `WallIo::deliver`.
    #[inline]
    pub fn is_external(&self, flow: FlowId) -> bool {
        (self.external.get(flow.0 as usize).copied()).unwrap_or(self.external_other)
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

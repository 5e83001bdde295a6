//! The network: nodes, interfaces (one per link direction) and static routes.
//!
//! A duplex link is two interfaces, one at each end; each interface owns its output
//! queue, its rate and propagation delay, and an optional egress conditioner chain.
//! Routing is static, computed once when the world is built.

mod pool;
pub mod quench;
mod route;

pub use pool::{PacketPool, Slot};
pub use route::Routes;

use std::collections::VecDeque;

use crate::cond::{Chain, DscpTable};
use crate::engine::ReservedKey;
use crate::packet::NodeId;
use crate::queue::{AnyQueue, DropCause};
use crate::rng::RngStream;
use crate::time::{Dur, Rate, SimTime};

/// Index of an interface (one direction of a link) in the world.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IfaceId(pub u32);

/// What a node is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// An end system: runs applications and transports; forwards only its own traffic.
    #[default]
    Host,
    /// A router: forwards, with ingress and per-interface egress conditioners.
    Router,
}

/// A conditioner chain at one place, with the time of its pending timer event.
#[derive(Debug, Default)]
pub struct Hook {
    /// The stages, applied in order.
    pub chain: Chain,
    /// Time of the chain's timer event already scheduled (NEVER if none).
    pub armed: SimTime,
    /// Packets the chain holds (their slots in the world's pool), per stage to resume
    /// at, in release order, each with the place in the event order its release took
    /// when it was held: only the first of each FIFO has an event (a TRC holds every
    /// packet of its flow).
    pub delayed: Vec<VecDeque<(ReservedKey, Slot)>>,
}

impl Hook {
    /// A hook running `chain`, with no timer armed.
    pub fn new(chain: Chain) -> Self {
        Hook {
            delayed: (0..=chain.len()).map(|_| VecDeque::new()).collect(),
            chain,
            armed: SimTime::NEVER,
        }
    }
    /// True if the hook has no stage (packets pass untouched).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.chain.is_empty()
    }
}

/// A node of the network.
///
/// Laid out in declaration order (`repr(C)`), what every packet it handles reads first:
/// its kind, counters and DSCP table, then its hooks.
#[derive(Debug)]
#[repr(C)]
pub struct Node {
    /// Host or router.
    pub kind: NodeKind,
    /// IPv4 address: what captures write and prefix filters match.
    pub addr: [u8; 4],
    /// Packet counters (conservation: see [`NodeCounters`]).
    pub counters: NodeCounters,
    /// DSCP → (class, drop precedence): what its queues and colour-aware meters read.
    pub dscp: DscpTable,
    /// Conditioners applied to every packet a host sends, before routing.
    pub host_egress: Hook,
    /// Conditioners applied to every packet a router receives, before routing.
    pub ingress: Hook,
    /// Source quench generation on queue drops (routers with `source_quench`, P2 §2).
    pub quench: Option<quench::QuenchLimiter>,
    /// Outgoing interfaces, in scenario order.
    pub ifaces: Vec<IfaceId>,
    /// Name from the scenario.
    pub name: String,
}

/// What happened to the packets a node handled.
///
/// Conservation: `received + originated = forwarded + delivered + drops + held`,
/// where `held` is the number of packets waiting in the node's conditioners.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeCounters {
    /// Packets that arrived from links.
    pub received: u64,
    /// Packets its applications and transports sent.
    pub originated: u64,
    /// Packets handed to one of its interfaces' queues.
    pub forwarded: u64,
    /// Packets delivered to its applications and transports.
    pub delivered: u64,
    /// Packets held by its conditioners right now.
    pub held: u64,
    /// Drops outside interface queues (conditioners, no route), by cause.
    pub drops: DropCounters,
}

/// Packets and bytes dropped, per cause.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DropCounters {
    /// Packets per cause, indexed by [`DropCause::index`].
    pub packets: [u64; DropCause::ALL.len()],
    /// Bytes per cause.
    pub bytes: [u64; DropCause::ALL.len()],
}

impl DropCounters {
    /// Counts one dropped packet.
    pub fn add(&mut self, cause: DropCause, size: u32) {
        self.packets[cause.index()] += 1;
        self.bytes[cause.index()] += size as u64;
    }
    /// All packets dropped, whatever the cause.
    pub fn total_packets(&self) -> u64 {
        self.packets.iter().sum()
    }
    /// Counters accumulated since `earlier`.
    pub fn since(&self, earlier: &DropCounters) -> DropCounters {
        let mut d = *self;
        for i in 0..d.packets.len() {
            d.packets[i] -= earlier.packets[i];
            d.bytes[i] -= earlier.bytes[i];
        }
        d
    }
}

/// Arrival, departure and drop counts of one interface's queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IfaceCounters {
    /// Packets offered to the queue.
    pub arrived: u64,
    /// Bytes offered to the queue.
    pub arrived_bytes: u64,
    /// Packets put on the wire.
    pub departed: u64,
    /// Bytes put on the wire.
    pub departed_bytes: u64,
    /// Packets marked CE by the queue.
    pub ecn_marked: u64,
    /// Drops by cause (queue drops, and random loss on the link).
    pub drops: DropCounters,
    /// Queue drops by the drop precedence the node's DSCP table gives the packet
    /// (green, yellow, red), and of packets whose codepoint has none (best effort, EF,
    /// class selectors) as the fourth, "none" (queues treat those as green).
    pub dropped_by_colour: [u64; 4],
    /// Queue drops of in-profile (marked) and out-of-profile (unmarked) packets, the
    /// distinction ERED decides by (P0 §4.1): [unmarked, marked].
    pub dropped_by_profile: [u64; 2],
}

impl IfaceCounters {
    /// Counters accumulated since `earlier`.
    pub fn since(&self, earlier: &IfaceCounters) -> IfaceCounters {
        IfaceCounters {
            arrived: self.arrived - earlier.arrived,
            arrived_bytes: self.arrived_bytes - earlier.arrived_bytes,
            departed: self.departed - earlier.departed,
            departed_bytes: self.departed_bytes - earlier.departed_bytes,
            ecn_marked: self.ecn_marked - earlier.ecn_marked,
            drops: self.drops.since(&earlier.drops),
            dropped_by_colour: [0, 1, 2, 3]
                .map(|k| self.dropped_by_colour[k] - earlier.dropped_by_colour[k]),
            dropped_by_profile: [0, 1]
                .map(|k| self.dropped_by_profile[k] - earlier.dropped_by_profile[k]),
        }
    }
}

/// One direction of a link: a queue feeding a transmitter.
///
/// Laid out in declaration order (`repr(C)`) with what every hop reads first: the
/// scalars of the transmitter and the wire, cut-through's and committed transmissions'
/// state, the counters, the queue, then the hooks, so a hop touches a few adjacent
/// cache lines (each interface starting a line) instead of lines spread over the whole
/// struct (1,344 bytes).
#[derive(Debug)]
#[repr(C, align(64))]
pub struct Iface {
    /// The node that sends on it.
    pub node: NodeId,
    /// The node at the other end.
    pub peer: NodeId,
    /// Bytes of link-layer framing added to every packet on the wire (serialisation
    /// time only; packet sizes, queues and counters stay in IP bytes).
    pub framing: u32,
    /// A `TxDone` event is scheduled to serve the queue.
    pub tx_pending: bool,
    /// An `Arrive` event is scheduled for the head of `on_wire`.
    pub arrive_pending: bool,
    /// Transmission rate.
    pub rate: Rate,
    /// Propagation delay.
    pub delay: Dur,
    /// When the transmitter finishes the packet it is sending (in the past if idle).
    pub busy_until: SimTime,
    /// Probability that a packet put on the wire is lost (random loss model).
    pub loss: f64,
    /// Packets propagating on the link (their slots in the world's pool), with their
    /// arrival times (FIFO).
    pub on_wire: VecDeque<(SimTime, Slot)>,
    /// Cut-through through its router (see `world::cut`): set when a run starts.
    pub cut: CutThrough,
    /// Transmissions committed ahead (see `world::ahead`): set when a run starts.
    pub ahead: Ahead,
    /// Counters since the start of the run.
    pub counters: IfaceCounters,
    /// The output queue.
    pub queue: AnyQueue,
    /// Conditioners applied before the queue (router egress).
    pub egress: Hook,
    /// Conditioners applied to packets arriving over this interface at its peer
    /// router, before the router's own ingress chain.
    pub ingress: Hook,
    /// The stream the loss model draws from.
    pub loss_rng: RngStream,
    /// `"a->b"`.
    pub name: String,
}

/// An interface's part in cut-through (see `world::cut`): packets from one feeding
/// interface put on it, when it is idle, as they leave the feeder.
#[derive(Debug, Default)]
pub struct CutThrough {
    /// The only interface feeding this one, when its router does nothing else with
    /// the packets (`None`: no packet cuts through to it).
    pub from: Option<IfaceId>,
    /// Some interface is fed by this one only (this is its `from`).
    pub feeds: bool,
    /// Packets from `from` bound here that go the ordinary way and have not reached
    /// the router yet: while there are any, none cuts through.
    pub pending: u32,
    /// Packets that cut through and are still on the wire, with the time each reached
    /// the router (in wire order).
    pub deferred: VecDeque<(SimTime, Slot)>,
    /// How many of `deferred`, from its front, the counters already hold.
    pub counted: u32,
}

/// An interface's transmissions committed ahead (see `world::ahead`): packets admitted
/// behind its busy transmitter, already on the wire, that have not started yet.
#[derive(Debug)]
pub struct Ahead {
    /// This interface commits ahead this run.
    pub on: bool,
    /// Each committed packet not yet counted as started, in start order.
    pub waiting: VecDeque<Committed>,
    /// Bytes in `waiting`.
    pub bytes: u64,
    /// How many of `waiting`, from its back, have no key yet ([`Committed::UNSET`]).
    pub unset: u32,
    /// The key at whose passing the first packet without a key gets one (the key of
    /// the packet before it), or [`Committed::UNSET`] if every packet has its key.
    pub watch: u128,
    /// The key of a `TxDone` the ordinary path has pending at `busy_until` with no
    /// packet to start (an arrival dropped behind the busy transmitter scheduled it), or
    /// [`Committed::UNSET`]; `tx_pending` is set while it may not have run.
    pub spare: u128,
}

/// A packet committed ahead (`world::ahead`) that has not started.
#[derive(Clone, Copy, Debug)]
pub struct Committed {
    /// When its transmission starts.
    pub start: SimTime,
    /// Its size [bytes].
    pub size: u32,
    /// The place in the event order, `start << 64 | seq`, of the `TxDone` event that
    /// would start it on the ordinary path, or [`Self::UNSET`] until that event's
    /// place is known (it is taken when the packet before it starts).
    pub key: u128,
}

impl Committed {
    /// The key of a packet whose `TxDone` place is not known yet.
    pub const UNSET: u128 = u128::MAX;
}

impl Default for Ahead {
    fn default() -> Self {
        Ahead {
            on: false,
            waiting: VecDeque::new(),
            bytes: 0,
            unset: 0,
            watch: Committed::UNSET,
            spare: Committed::UNSET,
        }
    }
}

impl Iface {
    /// Packets and bytes its queue holds, committed packets that have not started
    /// included (as of the last time they were settled).
    pub fn occupancy(&self) -> crate::queue::Occupancy {
        use crate::queue::Queue;
        let mut o = self.queue.occupancy();
        o.packets += self.ahead.waiting.len() as u32;
        o.bytes += self.ahead.bytes;
        o
    }
}

//! Server-side QoS manager (P0 §4.1, §6): rate control of aggregates of a host's TCP
//! connections, invoked only when TCP's window allows a transmission.
//!
//! A manager binds the TCP flows of its host that match a filter (P0 Table 1) to one
//! aggregate with a profile `<b, r_m, r_p, L_m>` and an action:
//!
//! ```text
//!  TCP output (window open) ─► manager ─► police_and_mark: in-profile packets marked,
//!                                         others unmarked; all go now
//!                              shape:     conforming packet of a connection with
//!                                         nothing waiting goes now, others wait in
//!                                         the connection's FIFO for a trigger
//!  triggers: the aggregate's periodic timer (15 ms), an ACK on the connection, and
//!  (P0 §6.3) an ACK on a connection with nothing to send, duplicate ACKs, an
//!  application write on a connection whose window is closed, a new connection
//! ```
//!
//! On a trigger that serves the whole aggregate, waiting connections are served in the
//! scheme's order (P0 §4.2.2): `sequential` (list order), `fcfs` (earliest to become
//! non-compliant first; a connection served but still waiting becomes non-compliant
//! again at that time), `fcfs_first` (the time it first became non-compliant is kept
//! while it waits), `lru` (least recently given a token first) or `rotating` (list
//! order starting after the connection served last); a served
//! connection sends every waiting packet its tokens cover. The tokens come from a
//! [`TokenShare`]: partitioned buckets, a common bucket or logical partitions.
//!
//! Packets wait after TCP released them, so their wait is part of TCP's RTT samples
//! (P0's ns-2 agent kept them in TCP instead); see `docs/papers/p0.md`.

pub mod sharing;

use std::collections::VecDeque;

use serde::Deserialize;

use crate::cond::action::P0_SHAPING_PERIOD;
use crate::cond::{FilterConfig, PolicyAction, ProfileConfig};
use crate::packet::{Colour, FlowId, Packet};
use crate::time::{Dur, SimTime};
pub use sharing::{Scheme, TokenShare};

/// Order in which a common bucket serves waiting connections (P0 §4.2.2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// List order: connection 0 first, always.
    Sequential,
    /// The connection that became non-compliant earliest first; a connection served
    /// but still waiting becomes non-compliant again at that time.
    #[default]
    Fcfs,
    /// FCFS by the time a connection *first* became non-compliant (P0 §4.2.2: "ordered
    /// based on the time when they first became non-compliant"): the time is kept
    /// until the connection has nothing waiting.
    FcfsFirst,
    /// The connection least recently given a token first.
    Lru,
    /// List order starting after the connection served last (round robin): a
    /// sequential scan in which no list position is favoured (a neutral order).
    Rotating,
}

/// How bucket depth is split among connections (partitioned, logical).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DepthSplit {
    /// b_i = b/n.
    Equal,
    /// b_i = b·rtt_i/Σrtt_j (P0 §4.2.1, §4.2.3).
    Rtt,
}

/// The sharing scheme as written in a scenario file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SharingName {
    /// One bucket per connection.
    Partitioned,
    /// One common bucket.
    Common,
    /// Common bucket with logical partitions.
    Logical,
}

/// What prompts the manager to send waiting packets (P0 §4.1, §6.2–6.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// TCP's output routine (window open): a new packet may go at once if it conforms.
    Send,
    /// An ACK on a connection sends that connection's waiting packets.
    Ack,
    /// An ACK on a connection with nothing to send serves the aggregate (§6.3 i).
    IdleAck,
    /// A duplicate ACK serves the aggregate (§6.3 ii).
    Dupack,
    /// The aggregate's periodic shaping timer (always on).
    Timer,
    /// The application wrote on a connection whose window is closed: the aggregate is
    /// served (§6.3 iii; the writing connection itself cannot send).
    ClosedSend,
    /// A connection of the aggregate opened: the aggregate is served (§6.3 iv).
    NewConn,
}

impl Trigger {
    /// All triggers, in the order of [`ConnCounters::released`].
    pub const ALL: [Trigger; 7] = [
        Trigger::Send,
        Trigger::Ack,
        Trigger::IdleAck,
        Trigger::Dupack,
        Trigger::Timer,
        Trigger::ClosedSend,
        Trigger::NewConn,
    ];

    /// Name in scenario files and result tables.
    pub fn name(self) -> &'static str {
        match self {
            Trigger::Send => "send",
            Trigger::Ack => "ack",
            Trigger::IdleAck => "idle_ack",
            Trigger::Dupack => "dupack",
            Trigger::Timer => "timer",
            Trigger::ClosedSend => "closed_send",
            Trigger::NewConn => "new_conn",
        }
    }
}

fn default_triggers() -> Vec<Trigger> {
    vec![Trigger::Send, Trigger::Ack]
}
fn default_period() -> Dur {
    P0_SHAPING_PERIOD
}

/// A QoS manager in a scenario file (`[[qosmgr]]`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QosMgrConfig {
    /// Name in result tables; default `qosmgr<i>`.
    #[serde(default)]
    pub name: Option<String>,
    /// Host whose TCP connections are controlled.
    pub at: String,
    /// Which of the host's TCP flows form the aggregate (P0 Table 1).
    #[serde(default)]
    pub filter: FilterConfig,
    /// The aggregate's profile `(rate, peak, burst, mtu)`.
    pub profile: ProfileConfig,
    /// `shape` or `police_and_mark`.
    pub action: PolicyAction,
    /// `partitioned`, `common` or `logical`.
    pub sharing: SharingName,
    /// Depth split for partitioned (default equal) and logical (default rtt) buckets.
    #[serde(default)]
    pub depth: Option<DepthSplit>,
    /// Service order of a common bucket (default fcfs).
    #[serde(default)]
    pub order: Option<Order>,
    /// Shaping timer period; default 15 ms (P0 §4.1).
    #[serde(default = "default_period")]
    pub period: Dur,
    /// Triggers besides the timer; default `["send", "ack"]`.
    #[serde(default = "default_triggers")]
    pub triggers: Vec<Trigger>,
    /// When the policy is installed; it binds connections already open (P0 §6.1).
    #[serde(default)]
    pub active_from: Dur,
}

/// What the manager did for one connection.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ConnCounters {
    /// Packets that went through the manager.
    pub packets: u64,
    /// Bytes that went through the manager.
    pub bytes: u64,
    /// Bytes marked in profile (police-and-mark).
    pub marked_bytes: u64,
    /// Packets released, per trigger in [`Trigger::ALL`] order.
    pub released: [u64; 7],
    /// Packets that had to wait.
    pub held: u64,
    /// Sum of the waits of held packets [ns].
    pub wait_ns: u128,
    /// Most packets waiting at once.
    pub max_waiting: usize,
}

/// One connection of an aggregate.
#[derive(Clone, Debug)]
pub struct Conn {
    /// The TCP flow.
    pub flow: FlowId,
    /// Base RTT used for its depth share.
    pub rtt: Dur,
    queue: VecDeque<(SimTime, Packet)>,
    since: SimTime,
    last_token: SimTime,
    /// Counters.
    pub counters: ConnCounters,
}

/// A built manager: the aggregate's connections, tokens and timer.
#[derive(Clone, Debug)]
pub struct QosManager {
    /// Name in result tables.
    pub name: String,
    action: PolicyAction,
    share: TokenShare,
    order: Order,
    period: Dur,
    triggers: [bool; 7],
    active_from: SimTime,
    /// The aggregate's connections, in list order.
    pub conns: Vec<Conn>,
    waiting: usize,
    /// Where the next rotating scan starts (after the connection served last).
    rotate: usize,
    /// Timer events the world scheduled and ran.
    pub ticks: u64,
    /// The tick the world has scheduled (`NEVER`: none).
    pub armed: SimTime,
}

impl QosManager {
    /// A manager for `flows` with base RTTs `rtts`; `share` holds its tokens.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        name: String,
        action: PolicyAction,
        share: TokenShare,
        order: Order,
        period: Dur,
        triggers: &[Trigger],
        active_from: Dur,
        flows: &[(FlowId, Dur)],
    ) -> Self {
        let mut on = [false; 7];
        on[Trigger::Timer as usize] = true;
        for t in triggers {
            on[*t as usize] = true;
        }
        QosManager {
            name,
            action,
            share,
            order,
            period,
            triggers: on,
            active_from: SimTime::ZERO + active_from,
            conns: flows
                .iter()
                .map(|&(flow, rtt)| Conn {
                    flow,
                    rtt,
                    queue: VecDeque::new(),
                    since: SimTime::NEVER,
                    last_token: SimTime::ZERO,
                    counters: ConnCounters::default(),
                })
                .collect(),
            waiting: 0,
            rotate: 0,
            ticks: 0,
            armed: SimTime::NEVER,
        }
    }

    /// The tokens (for tables and tests).
    pub fn share(&self) -> &TokenShare {
        &self.share
    }

    /// Packets waiting in all connections.
    pub fn waiting(&self) -> usize {
        self.waiting
    }

    /// TCP's output released `pkt` of connection `i`: it goes now (pushed to `out`,
    /// marked if policing) or waits for a trigger.
    pub fn on_send(&mut self, now: SimTime, i: usize, mut pkt: Packet, out: &mut Vec<Packet>) {
        if now < self.active_from {
            out.push(pkt);
            return;
        }
        let size = pkt.size;
        let c = &mut self.conns[i];
        c.counters.packets += 1;
        c.counters.bytes += size as u64;
        if self.action != PolicyAction::Shape {
            // Police and mark (P0 §4.1): in-profile packets marked, the rest unmarked.
            if self.share.conforms(now, i, size) {
                self.share.take(i, size);
                pkt.colour = Colour::Green;
                pkt.in_profile = true;
                c.counters.marked_bytes += size as u64;
            } else {
                pkt.in_profile = false;
            }
            out.push(pkt);
            return;
        }
        if c.queue.is_empty()
            && self.triggers[Trigger::Send as usize]
            && self.share.conforms(now, i, size)
        {
            self.share.take(i, size);
            c.last_token = now;
            c.counters.released[Trigger::Send as usize] += 1;
            out.push(pkt);
            return;
        }
        if c.queue.is_empty() {
            c.since = now;
        }
        c.queue.push_back((now, pkt));
        c.counters.held += 1;
        c.counters.max_waiting = c.counters.max_waiting.max(c.queue.len());
        self.waiting += 1;
    }

    /// An ACK reached connection `i`; `dup` if it was a duplicate, `sent` if TCP
    /// sent new data on it. Releases what the enabled triggers allow.
    pub fn on_ack(&mut self, now: SimTime, i: usize, dup: bool, sent: bool, out: &mut Vec<Packet>) {
        if self.waiting == 0 {
            return;
        }
        if self.triggers[Trigger::Ack as usize] && !self.conns[i].queue.is_empty() {
            self.serve(now, i, Trigger::Ack, out);
        }
        if self.triggers[Trigger::Dupack as usize] && dup {
            self.serve_all(now, Trigger::Dupack, out);
        } else if self.triggers[Trigger::IdleAck as usize]
            && !sent
            && self.conns[i].queue.is_empty()
        {
            self.serve_all(now, Trigger::IdleAck, out);
        }
    }

    /// An aggregate-wide trigger on connection `i` (`ClosedSend`: its application wrote
    /// while its window was closed; `NewConn`: it opened): if enabled, checks the
    /// aggregate's tokens and serves the waiting connections in the scheme's order
    /// (P0 §6.3 steps a and b). Other triggers are ignored here.
    pub fn on_event(&mut self, now: SimTime, i: usize, why: Trigger, out: &mut Vec<Packet>) {
        debug_assert!(i < self.conns.len());
        if !matches!(why, Trigger::ClosedSend | Trigger::NewConn)
            || !self.triggers[why as usize]
            || self.waiting == 0
            || now < self.active_from
        {
            return;
        }
        self.serve_all(now, why, out);
    }

    /// The shaping timer fired: serve the aggregate in the scheme's order.
    pub fn on_tick(&mut self, now: SimTime, out: &mut Vec<Packet>) {
        self.ticks += 1;
        self.serve_all(now, Trigger::Timer, out);
    }

    /// The next tick (a multiple of the period after `now`) if packets are waiting.
    pub fn next_tick(&self, now: SimTime) -> Option<SimTime> {
        if self.waiting == 0 {
            return None;
        }
        let p = self.period.as_nanos().max(1);
        Some(SimTime::from_nanos((now.as_nanos() / p + 1) * p))
    }

    /// Serves every waiting connection in the order of the scheme.
    fn serve_all(&mut self, now: SimTime, why: Trigger, out: &mut Vec<Packet>) {
        let mut order: Vec<usize> = (0..self.conns.len())
            .filter(|&i| !self.conns[i].queue.is_empty())
            .collect();
        if self.share.scheme() == Scheme::Common {
            let n = self.conns.len();
            match self.order {
                Order::Sequential => {}
                Order::Fcfs | Order::FcfsFirst => order.sort_by_key(|&i| (self.conns[i].since, i)),
                Order::Lru => order.sort_by_key(|&i| (self.conns[i].last_token, i)),
                Order::Rotating => {
                    let r = self.rotate;
                    order.sort_by_key(|&i| (i + n - r) % n);
                }
            }
        }
        for i in order {
            let before = out.len();
            self.serve(now, i, why, out);
            if out.len() > before {
                self.rotate = (i + 1) % self.conns.len();
            }
        }
    }

    /// Sends connection `i`'s waiting packets while its tokens cover the head. A
    /// connection that sent some but still has packets waiting became non-compliant
    /// again now: FCFS puts it behind those waiting longer (FCFS-first keeps its time).
    fn serve(&mut self, now: SimTime, i: usize, why: Trigger, out: &mut Vec<Packet>) {
        let keep = self.order == Order::FcfsFirst;
        let c = &mut self.conns[i];
        let mut sent = false;
        while let Some(&(t0, ref p)) = c.queue.front() {
            if !self.share.conforms(now, i, p.size) {
                if sent && !keep {
                    c.since = now;
                }
                return;
            }
            sent = true;
            self.share.take(i, p.size);
            let (_, p) = c.queue.pop_front().expect("front exists");
            c.last_token = now;
            c.counters.released[why as usize] += 1;
            c.counters.wait_ns += (now - t0).as_nanos() as u128;
            self.waiting -= 1;
            out.push(p);
        }
        c.since = SimTime::NEVER;
    }
}

#[cfg(test)]
mod tests;

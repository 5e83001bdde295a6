//! The per-packet drop and mark log (`record.drop_events = true`): one entry per packet
//! a queue, a link, a conditioner or routing discarded, and per packet a queue marked CE
//! instead, written where the world counts it (the interface's, node's and flow's
//! counters), with the time of the event that did it.
//!
//! Off unless the scenario asks for it, and bounded when on: a congested run drops
//! millions of packets, so at most `record.drop_events_limit` entries are kept and the
//! rest only counted ([`DropLog::left_out`]). Entries start when the warm-up ends, as the
//! counters' totals do, so the log and the `drops`, `queues` and `flows` tables count
//! the same packets.

use super::HookAt;
use crate::net::IfaceId;
use crate::packet::{FlowId, Header, NodeId, Packet};
use crate::queue::DropCause;
use crate::time::SimTime;

/// Where a packet was dropped or marked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropAt {
    /// An interface's output queue (drops and CE marks).
    Queue(IfaceId),
    /// An interface's link: random loss on the wire.
    Link(IfaceId),
    /// A conditioner chain.
    Hook(HookAt),
    /// A node with no route to the packet's destination.
    Route(NodeId),
}

/// One packet dropped or marked CE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DropEvent {
    /// When.
    pub t: SimTime,
    /// Where.
    pub at: DropAt,
    /// The flow its drop counts in (`None`: a source quench, which counts in no flow).
    pub flow: Option<FlowId>,
    /// Its DiffServ codepoint at that moment.
    pub dscp: u8,
    /// Its size on the wire [bytes].
    pub size: u32,
    /// Why: the drop's cause; for a mark, the RED decision that marked it (`RedEarly`).
    pub cause: DropCause,
    /// Marked CE and kept, not dropped.
    pub marked: bool,
    /// The packet's id, unique within the run.
    pub uid: u64,
}

impl DropEvent {
    /// The entry for `pkt`, dropped (or marked: `marked`) at `at` at `t` for `cause`.
    pub fn of(t: SimTime, at: DropAt, pkt: &Packet, cause: DropCause, marked: bool) -> Self {
        DropEvent {
            t,
            at,
            flow: (!matches!(pkt.hdr, Header::Quench(_))).then_some(pkt.flow),
            dscp: pkt.dscp,
            size: pkt.size,
            cause,
            marked,
            uid: pkt.uid,
        }
    }
}

/// The log: entries in the order they happened, up to a limit.
#[derive(Clone, Debug, Default)]
pub struct DropLog {
    /// Entries kept, in event order.
    pub events: Vec<DropEvent>,
    /// Most entries kept; later ones are only counted.
    pub limit: usize,
    /// Entries not kept because the log was full.
    pub left_out: u64,
}

impl DropLog {
    /// An empty log keeping at most `limit` entries.
    pub fn new(limit: usize) -> Self {
        DropLog {
            events: Vec::new(),
            limit,
            left_out: 0,
        }
    }
    /// Keeps `ev`, or counts it as left out if the log is full.
    #[inline]
    pub fn record(&mut self, ev: DropEvent) {
        if self.events.len() < self.limit {
            self.events.push(ev);
        } else {
            self.left_out += 1;
        }
    }
    /// Forgets every entry (the warm-up ended), keeping the limit.
    pub fn restart(&mut self) {
        self.events.clear();
        self.left_out = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(uid: u64) -> DropEvent {
        DropEvent {
            t: SimTime::ZERO,
            at: DropAt::Route(NodeId(0)),
            flow: Some(FlowId(0)),
            dscp: 0,
            size: 1000,
            cause: DropCause::NoRoute,
            marked: false,
            uid,
        }
    }

    #[test]
    fn an_entry_takes_at_most_the_documented_48_bytes() {
        // docs/scenario-format.md: "every row costs under 50 bytes while the run lasts"
        assert!(std::mem::size_of::<DropEvent>() <= 48);
    }

    #[test]
    fn a_full_log_counts_what_it_leaves_out_and_restarts_empty() {
        let mut log = DropLog::new(2);
        for uid in 0..5 {
            log.record(entry(uid));
        }
        assert_eq!(log.events.iter().map(|e| e.uid).collect::<Vec<_>>(), [0, 1]);
        assert_eq!(log.left_out, 3);
        log.restart();
        assert!(log.events.is_empty() && log.left_out == 0 && log.limit == 2);
        log.record(entry(9));
        assert_eq!(log.events[0].uid, 9);
    }
}

//! Flows: what a scenario's `[[flow]]` becomes in a run — two hosts, ports, the
//! application and transport state, and the counters. Below the world (which drives
//! flows) and the capture (which names their packets); above the sources and TCP.

use crate::app::{Cbr, ParetoOnOff, UdpSink};
use crate::packet::NodeId;
use crate::tcp::{TcpReceiver, TcpSender, TcpState};
use crate::time::SimTime;

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
    /// Last traced (cwnd, ssthresh, state), to record only changes.
    pub last_trace: (u32, u32, TcpState),
    /// What writes on the connection.
    pub app: TcpApp,
    /// The connection was opened (its first `Source` event ran).
    pub started: bool,
    /// A finite transfer (`bytes` given): listed in the `transfers` table.
    pub finite: bool,
    /// When a finite transfer was fully acknowledged (NEVER: not yet).
    pub done_at: SimTime,
}

/// The application of a TCP flow (one of them, as the scenario's
/// [`crate::scenario::TcpAppSpec`]).
///
/// `repr(u8)`: a plain tag byte, so telling the bulk and writer applications (every
/// segment of a dumbbell) from the ones with their own connections is one compare;
/// without it the tag lives in the niche of `Writer::left` and costs a decode.
#[derive(Debug)]
#[repr(u8)]
pub enum TcpApp {
    /// Everything handed to TCP at the start (a bulk transfer).
    Bulk,
    /// Periodic writes.
    Writes(Writer),
    /// The Telnet application writing on the connection (P3 §V.D).
    Telnet(Box<crate::app::Telnet>),
    /// The web application (P3 §V.D): its model and its per-object connections; the
    /// flow's own `snd` and `rcv` stay unused.
    Web(Box<crate::app::web::WebFlow>),
    /// The striping application and its connections (P4 §2); the flow's own `snd` and
    /// `rcv` stay unused.
    Stripe(Box<crate::app::Stripe>),
    /// The pTCP connection (P4 §4): its engine and pipes; the flow's own `snd` and `rcv`
    /// stay unused.
    Ptcp(Box<crate::app::Ptcp>),
}

impl TcpApp {
    /// The Telnet application, if it is one.
    pub fn telnet(&self) -> Option<&crate::app::Telnet> {
        match self {
            TcpApp::Telnet(x) => Some(x),
            _ => None,
        }
    }

    /// The web application, if it is one.
    pub fn web(&self) -> Option<&crate::app::web::WebFlow> {
        match self {
            TcpApp::Web(x) => Some(x),
            _ => None,
        }
    }

    /// The web application, if it is one, to change.
    pub fn web_mut(&mut self) -> Option<&mut crate::app::web::WebFlow> {
        match self {
            TcpApp::Web(x) => Some(x),
            _ => None,
        }
    }

    /// The striping application, if it is one.
    pub fn stripe(&self) -> Option<&crate::app::Stripe> {
        match self {
            TcpApp::Stripe(x) => Some(x),
            _ => None,
        }
    }

    /// The striping application, if it is one, to change.
    pub fn stripe_mut(&mut self) -> Option<&mut crate::app::Stripe> {
        match self {
            TcpApp::Stripe(x) => Some(x),
            _ => None,
        }
    }

    /// The pTCP connection, if it is one.
    pub fn ptcp(&self) -> Option<&crate::app::Ptcp> {
        match self {
            TcpApp::Ptcp(x) => Some(x),
            _ => None,
        }
    }

    /// The pTCP connection, if it is one, to change.
    pub fn ptcp_mut(&mut self) -> Option<&mut crate::app::Ptcp> {
        match self {
            TcpApp::Ptcp(x) => Some(x),
            _ => None,
        }
    }
}

/// An application writing `size` bytes every `every` on a TCP connection.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Writer {
    /// Bytes per write.
    pub size: u64,
    /// Time between writes.
    pub every: crate::time::Dur,
    /// Bytes still to write (`None`: writes forever).
    pub left: Option<u64>,
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
    /// Wire bytes of in-profile (marked) data packets delivered at the destination:
    /// P0 §4.1's compliant traffic as it arrives, not as it was marked at the sender.
    pub in_profile_delivered_bytes: u64,
}

impl FlowCounters {
    /// The counts accumulated since the snapshot `e`.
    pub(crate) fn since(&self, e: &FlowCounters) -> FlowCounters {
        FlowCounters {
            pkts_sent: self.pkts_sent - e.pkts_sent,
            bytes_sent: self.bytes_sent - e.bytes_sent,
            pkts_delivered: self.pkts_delivered - e.pkts_delivered,
            goodput_bytes: self.goodput_bytes - e.goodput_bytes,
            drops: self.drops - e.drops,
            acks_sent: self.acks_sent - e.acks_sent,
            in_profile_delivered_bytes: self.in_profile_delivered_bytes
                - e.in_profile_delivered_bytes,
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
    /// DSCP of the packets the source sends.
    pub dscp: u8,
    /// DSCP of the packets the destination sends back.
    pub ack_dscp: u8,
    /// When the source starts.
    pub start: SimTime,
    /// Application and transport.
    pub app: FlowApp,
    /// Counters since the start of the run.
    pub counters: FlowCounters,
    /// One-way delays of its data packets (`record.delays`), since the warm-up.
    pub delays: Option<Box<crate::stats::delay::DelayStats>>,
    /// DSCPs of its data packets delivered at the destination since the warm-up (bit d
    /// set: a packet arrived carrying DSCP d), for goodput per class.
    pub delivered_dscps: crate::cond::DscpSet,
}

#[cfg(test)]
mod tests {
    /// A connection's two ends and bookkeeping stay within their budget (see the
    /// per-connection budgets in `tcp`'s tests: every byte here is walked per segment).
    #[test]
    fn tcp_flow_stays_within_its_budget() {
        let size = std::mem::size_of::<super::TcpFlow>();
        assert!(
            size <= 800,
            "TcpFlow is {size} bytes, over its budget of 800"
        );
    }
}

//! Packets and their headers.
//!
//! A [`Packet`] is a plain value (no heap data); the world keeps in-flight packets in
//! a reusable pool (`net::PacketPool`) and moves them by slot, so the steady state
//! allocates nothing per packet. Sizes are bytes on the wire including all
//! headers; TCP sequence numbers count payload bytes, as real TCP does.

use crate::time::SimTime;

/// Index of a node (host or router) in the world.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub u32);

/// Index of a flow (a sender–receiver pair with its application) in the world.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FlowId(pub u32);

/// Drop precedence of a packet (AF DP0/DP1/DP2; "green/yellow/red").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Colour {
    /// DP0: in profile, dropped last.
    #[default]
    Green = 0,
    /// DP1: between committed and peak profile.
    Yellow = 1,
    /// DP2: out of profile, dropped first.
    Red = 2,
}

impl Colour {
    /// Index 0, 1, 2 for per-colour arrays.
    pub fn index(self) -> usize {
        self as usize
    }
    /// Colour from an index 0..=2 (anything larger is red).
    pub fn from_index(i: usize) -> Colour {
        match i {
            0 => Colour::Green,
            1 => Colour::Yellow,
            _ => Colour::Red,
        }
    }
}

/// The two ECN bits of the IP header (RFC 3168).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Ecn {
    /// The transport does not do ECN.
    #[default]
    NotEct,
    /// ECN-capable transport, not marked.
    Ect,
    /// Congestion experienced: marked by a router instead of dropped.
    Ce,
}

/// Transport protocol of a packet, for classification.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Proto {
    /// TCP segment.
    #[default]
    Tcp,
    /// UDP datagram.
    Udp,
    /// ICMP message (source quench).
    Icmp,
}

/// TCP flag bits.
pub mod tcp_flags {
    /// Synchronise: opens a connection.
    pub const SYN: u8 = 0x02;
    /// Finish: the sender has no more data.
    pub const FIN: u8 = 0x01;
    /// The ack field is valid.
    pub const ACK: u8 = 0x10;
    /// ECN echo: the receiver saw a CE mark (RFC 3168).
    pub const ECE: u8 = 0x40;
    /// Congestion window reduced (RFC 3168).
    pub const CWR: u8 = 0x80;
}

/// One SACK block: bytes [start, end) held by the receiver above the cumulative ACK.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SackBlock {
    /// First byte held [byte sequence].
    pub start: u64,
    /// One past the last byte held [byte sequence].
    pub end: u64,
}

/// Most SACK blocks one ACK carries (RFC 2018 with timestamps: 3).
pub const MAX_SACK_BLOCKS: usize = 3;

/// The SACK blocks of one TCP header, stored compactly: each block as its two edges'
/// offsets above the header's cumulative `ack` (RFC 2018 §3: blocks describe data
/// held above the cumulative ACK), 32 bits each, as on the wire. Read and written
/// only through [`TcpHeader::sack_blocks`] and [`TcpHeader::set_sack`]; an unused
/// slot has end offset 0 (a real block ends at least one byte above `ack`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SackList([(u32, u32); MAX_SACK_BLOCKS]);

/// A TCP header, with sequence numbers as 64-bit byte counts (no wrap-around).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpHeader {
    /// Sequence number of the first payload byte.
    pub seq: u64,
    /// Cumulative acknowledgement: next byte expected (valid with [`tcp_flags::ACK`]).
    pub ack: u64,
    /// Payload length [bytes].
    pub len: u32,
    /// Flag bits, see [`tcp_flags`].
    pub flags: u8,
    /// Advertised receive window [bytes].
    pub wnd: u32,
    /// SACK blocks (see [`TcpHeader::sack_blocks`], [`TcpHeader::set_sack`]).
    pub sack: SackList,
    /// Timestamp value: the sender's clock when sent (RFC 7323 style, for RTT samples).
    pub ts_val: SimTime,
    /// Timestamp echo: the `ts_val` of the segment this ACK answers.
    pub ts_ecr: SimTime,
    /// True if this segment carries data sent before (for statistics and traces only).
    pub retransmit: bool,
    /// Sub-flow / pipe index (pTCP, striping); 0 for ordinary flows.
    pub subflow: u8,
    /// pTCP data sequence number (P4 §4.2, the pTCP header): on a data segment the
    /// stream offset of the bytes it carries, on an ACK the receiving engine's cumulative
    /// data acknowledgement (next stream byte expected). 0 for ordinary flows.
    pub dsn: u64,
    /// The sender's state when it sent this segment; not on the wire (see
    /// [`SenderView`]).
    pub view: SenderView,
}

impl TcpHeader {
    /// The SACK blocks this header carries, in the order they were set.
    pub fn sack_blocks(&self) -> impl Iterator<Item = SackBlock> {
        let ack = self.ack;
        self.sack
            .0
            .into_iter()
            .take_while(|&(_, end)| end != 0)
            .map(move |(s, e)| SackBlock {
                start: ack + s as u64,
                end: ack + e as u64,
            })
    }

    /// How many SACK blocks this header carries.
    pub fn nsack(&self) -> usize {
        self.sack.0.iter().take_while(|&&(_, end)| end != 0).count()
    }

    /// Replaces the SACK blocks by the first [`MAX_SACK_BLOCKS`] of `blocks` that can be
    /// carried, in order; set `ack` first, the blocks are stored relative to it. A block
    /// that is empty, starts below `ack` or ends more than 4 GiB above it is left out
    /// (as a block that does not fit the option space is); returns how many were kept.
    pub fn set_sack(&mut self, blocks: &[SackBlock]) -> usize {
        let mut n = 0;
        self.sack = SackList::default();
        for b in blocks {
            if n == MAX_SACK_BLOCKS {
                break;
            }
            let (Some(s), Some(e)) = (b.start.checked_sub(self.ack), b.end.checked_sub(self.ack))
            else {
                continue;
            };
            let (Ok(s), Ok(e)) = (u32::try_from(s), u32::try_from(e)) else {
                continue;
            };
            if e <= s {
                continue;
            }
            self.sack.0[n] = (s, e);
            n += 1;
        }
        n
    }
}

/// What a TCP sender knew when it sent a segment: its congestion window, smoothed RTT
/// and RTO. Not part of the wire format (pcap captures leave it out): it is the
/// "oracle" RTT/RTO/cwnd source of edge conditioners that read the senders (P3 §III,
/// §VI), stamped here so a conditioner anywhere on the path reads it without a lookup.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SenderView {
    /// Congestion window in whole segments (cwnd ÷ MSS, rounded down).
    pub cwnd_segs: u32,
    /// Smoothed RTT [µs]; 0 before the first sample.
    pub srtt_us: u32,
    /// Retransmission timeout estimate, without backoff (RFC 6298 §2) [µs].
    pub rto_us: u32,
}

/// A UDP header with a sequence number so sinks can count loss and reordering.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UdpHeader {
    /// Datagram number within its flow, from 0.
    pub seq: u64,
}

/// An ICMP source quench (RFC 792, type 4), quoting the packet that was dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QuenchHeader {
    /// Flow of the dropped packet.
    pub orig_flow: FlowId,
    /// Source of the dropped packet.
    pub orig_src: NodeId,
    /// Destination of the dropped packet.
    pub orig_dst: NodeId,
    /// The router that dropped it.
    pub reporter: NodeId,
    /// Source port of the dropped packet (quoted in the ICMP payload).
    pub orig_src_port: u16,
    /// Destination port of the dropped packet (quoted in the ICMP payload).
    pub orig_dst_port: u16,
    /// Protocol of the dropped packet.
    pub orig_proto: Proto,
}

/// The transport-level header of a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Header {
    /// UDP datagram.
    Udp(UdpHeader),
    /// TCP segment.
    Tcp(TcpHeader),
    /// ICMP source quench.
    Quench(QuenchHeader),
}

impl Default for Header {
    fn default() -> Self {
        Header::Udp(UdpHeader::default())
    }
}

/// Bytes of IPv4 + TCP headers without options (what a segment adds to its payload).
pub const TCP_IP_HEADER: u32 = 40;
/// Bytes of IPv4 + UDP headers.
pub const UDP_IP_HEADER: u32 = 28;

/// The largest UDP datagram on the wire [bytes]: an IPv4 packet's total length is 16 bits.
pub const MAX_UDP_SIZE: u32 = 65_535;

/// A packet in flight.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Packet {
    /// Unique within a run, in order of creation.
    pub uid: u64,
    /// The flow it belongs to (quenches carry the flow of the packet they report).
    pub flow: FlowId,
    /// Sending node.
    pub src: NodeId,
    /// Destination node.
    pub dst: NodeId,
    /// Source port (for classification).
    pub src_port: u16,
    /// Destination port (for classification).
    pub dst_port: u16,
    /// Size on the wire, all headers included [bytes].
    pub size: u32,
    /// When the source handed it to the network (for one-way delay).
    pub created: SimTime,
    /// DiffServ code point (6 bits).
    pub dscp: u8,
    /// Drop precedence set by a marker.
    pub colour: Colour,
    /// ECN bits.
    pub ecn: Ecn,
    /// True if an edge marked it in profile (P0's police-and-mark; ERED).
    pub in_profile: bool,
    /// Transport header.
    pub hdr: Header,
}

impl Packet {
    /// Transport protocol (for classification), which the header variant decides.
    #[inline]
    pub fn proto(&self) -> Proto {
        match &self.hdr {
            Header::Tcp(_) => Proto::Tcp,
            Header::Udp(_) => Proto::Udp,
            Header::Quench(_) => Proto::Icmp,
        }
    }
    /// The TCP header, if this is a TCP segment.
    pub fn tcp(&self) -> Option<&TcpHeader> {
        match &self.hdr {
            Header::Tcp(h) => Some(h),
            _ => None,
        }
    }
    /// The TCP header, mutable, if this is a TCP segment.
    pub fn tcp_mut(&mut self) -> Option<&mut TcpHeader> {
        match &mut self.hdr {
            Header::Tcp(h) => Some(h),
            _ => None,
        }
    }
    /// Application payload carried [bytes] (TCP payload, or UDP size less headers).
    pub fn payload(&self) -> u32 {
        match &self.hdr {
            Header::Tcp(h) => h.len,
            Header::Udp(_) => self.size.saturating_sub(UDP_IP_HEADER),
            Header::Quench(_) => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packet_stays_small() {
        // Packets are copied several times per hop (event slots, queues, hooks). Up to
        // 128 bytes the compiler inlines a copy as eight 16-byte moves; above, x86-64
        // calls memmove, which took a tenth or more of the heaviest P1 Table 1 run at 160
        // bytes. 128 = 40 bytes of top-level fields + an 88-byte TcpHeader, with the
        // Header tag kept in the spare values of its `retransmit` bool (no tag word).
        let size = std::mem::size_of::<Packet>();
        assert!(size <= 128, "Packet is {size} bytes, more than 128");
    }

    fn block(start: u64, end: u64) -> SackBlock {
        SackBlock { start, end }
    }

    #[test]
    fn sack_blocks_round_trip_relative_to_ack() {
        let mut h = TcpHeader {
            ack: 10_000_000_000, // above 4 GiB: offsets, not absolute edges, are 32-bit
            ..Default::default()
        };
        assert_eq!(h.nsack(), 0);
        let b = [
            block(10_000_003_000, 10_000_004_000),
            block(10_000_000_001, 10_000_001_000),
            block(10_000_009_000, 10_000_009_500),
            block(10_000_020_000, 10_000_021_000),
        ];
        // At most MAX_SACK_BLOCKS, the first ones, in the order given.
        assert_eq!(h.set_sack(&b), 3);
        assert_eq!(h.nsack(), 3);
        assert_eq!(h.sack_blocks().collect::<Vec<_>>(), b[..3]);
        // Setting again replaces, it does not append.
        assert_eq!(h.set_sack(&b[3..]), 1);
        assert_eq!(h.sack_blocks().collect::<Vec<_>>(), b[3..]);
        assert_eq!(h.set_sack(&[]), 0);
        assert_eq!(h.sack_blocks().count(), 0);
    }

    #[test]
    fn sack_blocks_that_do_not_fit_are_left_out() {
        let mut h = TcpHeader {
            ack: 1_000,
            ..Default::default()
        };
        let ok = block(2_000, 3_000);
        let top = block(1_000 + u32::MAX as u64 - 10, 1_000 + u32::MAX as u64);
        let b = [
            block(500, 1_500),                         // starts below ack
            block(2_000, 1_000 + u32::MAX as u64 + 1), // ends more than 4 GiB above
            block(5_000, 5_000),                       // empty
            ok,
            top,
        ];
        assert_eq!(h.set_sack(&b), 2);
        assert_eq!(h.sack_blocks().collect::<Vec<_>>(), [ok, top]);
    }

    #[test]
    fn protocol_by_header() {
        let mut p = Packet::default();
        assert_eq!(p.proto(), Proto::Udp);
        p.hdr = Header::Tcp(TcpHeader::default());
        assert_eq!(p.proto(), Proto::Tcp);
        p.hdr = Header::Quench(QuenchHeader::default());
        assert_eq!(p.proto(), Proto::Icmp);
    }

    #[test]
    fn payload_by_header() {
        let mut p = Packet {
            size: 1028,
            ..Default::default()
        };
        assert_eq!(p.payload(), 1000);
        p.hdr = Header::Tcp(TcpHeader {
            len: 960,
            ..Default::default()
        });
        assert_eq!(p.payload(), 960);
    }
}

//! Real headers for simulated packets: Ethernet II + IPv4 + TCP / UDP / ICMP, with valid
//! checksums and zero payload bytes.
//!
//! Addressing is made up but stable: node `n` has MAC `02:00:` + `n` (big-endian, 4
//! bytes; locally administered) and IPv4 address `10.0.0.0 + n + 1`.
//!
//! Lengths: the simulator's `Packet::size` counts 40 bytes of IP + TCP header (20 + 8
//! for UDP). Every TCP segment here carries a timestamp option (12 bytes: NOP, NOP, TS)
//! and ACKs with SACK blocks a SACK option (4 + 8·n bytes). The TCP payload length
//! on the wire is the segment's payload exactly, so sequence analysis stays right; the
//! option bytes are added on top: IPv4 total length = `size + option bytes`.
//! UDP and ICMP lengths equal `size` (ICMP: at least its 56 bytes of headers and quote).

use crate::packet::{tcp_flags, Ecn, FlowId, Header, NodeId, Packet, Proto};
use crate::time::SimTime;

/// Bytes of an Ethernet II header.
pub const ETH_LEN: usize = 14;
/// Bytes of an IPv4 header without options.
pub const IP_LEN: usize = 20;
/// Longest header block [`serialise`] writes (Ethernet + IPv4 + TCP with 40 option bytes).
pub const MAX_HDR: usize = ETH_LEN + IP_LEN + 60;
/// Initial TTL of every packet; routers on the path each take one off.
pub const TTL: u8 = 64;
/// Window advertised by a flow's data sender, which receives no data (qoslab leaves its
/// window field 0): the largest unscaled TCP window.
pub const SENDER_WINDOW: u16 = 65_535;

/// The made-up MAC address of node `n`.
pub fn mac(n: NodeId) -> [u8; 6] {
    let b = n.0.to_be_bytes();
    [0x02, 0x00, b[0], b[1], b[2], b[3]]
}

/// The made-up IPv4 address of node `n` (`10.0.0.1` for node 0).
pub fn ipv4(n: NodeId) -> [u8; 4] {
    (0x0A00_0000u32
        .wrapping_add(n.0 & 0x00FF_FFFF)
        .wrapping_add(1))
    .to_be_bytes()
}

/// Initial sequence number of one direction of flow `f` (`reverse`: the receiver's).
///
/// A fixed mix of the flow index (SplitMix64 finaliser), so runs are reproducible and
/// flows do not share sequence space.
pub fn isn(f: FlowId, reverse: bool) -> u32 {
    let mut z = (f.0 as u64) << 1 | reverse as u64;
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) as u32
}

/// What the serialiser needs to know about a flow beyond the packet itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowInfo {
    /// The flow's sending host (segments from it are the "forward" direction).
    pub src: NodeId,
    /// Source port of the forward direction.
    pub src_port: u16,
    /// Destination port of the forward direction.
    pub dst_port: u16,
    /// Transport of the flow's packets.
    pub proto: Proto,
}

/// Per-hop facts of one captured packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hop {
    /// Node sending on the link (Ethernet source).
    pub from: NodeId,
    /// Node at the far end (Ethernet destination).
    pub to: NodeId,
    /// IPv4 TTL as the packet is on this link.
    pub ttl: u8,
}

/// Internet checksum accumulator (RFC 1071): 16-bit one's-complement sum.
#[derive(Clone, Copy, Debug, Default)]
pub struct Checksum(u32);

impl Checksum {
    /// Adds bytes (an odd trailing byte is padded with zero, as RFC 1071 says).
    pub fn add(&mut self, bytes: &[u8]) {
        let mut it = bytes.chunks_exact(2);
        for w in &mut it {
            self.0 += u16::from_be_bytes([w[0], w[1]]) as u32;
        }
        if let [b] = it.remainder() {
            self.0 += (*b as u32) << 8;
        }
        self.fold();
    }
    /// Adds one 16-bit word.
    pub fn add_u16(&mut self, w: u16) {
        self.0 += w as u32;
        self.fold();
    }
    fn fold(&mut self) {
        while self.0 > 0xFFFF {
            self.0 = (self.0 & 0xFFFF) + (self.0 >> 16);
        }
    }
    /// The checksum field value: the complement of the sum.
    pub fn finish(self) -> u16 {
        !(self.0 as u16)
    }
}

/// IPv4 header checksum of a 20-byte header whose checksum field is zero.
pub fn ipv4_checksum(h: &[u8]) -> u16 {
    let mut c = Checksum::default();
    c.add(h);
    c.finish()
}

fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}
fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_be_bytes());
}

/// TCP timestamp clock: microseconds of simulated time, wrapping at 2³² (RFC 7323 allows
/// any monotone clock; a fine one keeps the simulator's RTT samples visible).
fn ts_clock(t: SimTime) -> u32 {
    (t.as_nanos() / 1_000) as u32
}

fn ecn_bits(e: Ecn) -> u8 {
    match e {
        Ecn::NotEct => 0,
        Ecn::Ect => 2, // ECT(0)
        Ecn::Ce => 3,
    }
}

fn ip_proto(p: Proto) -> u8 {
    match p {
        Proto::Tcp => 6,
        Proto::Udp => 17,
        Proto::Icmp => 1,
    }
}

/// Writes an IPv4 header at `b[0..20]` (checksum included).
#[allow(clippy::too_many_arguments)]
fn ipv4_header(
    b: &mut [u8],
    tos: u8,
    total: u16,
    ident: u16,
    ttl: u8,
    proto: u8,
    src: [u8; 4],
    dst: [u8; 4],
) {
    b[0] = 0x45;
    b[1] = tos;
    put16(b, 2, total);
    put16(b, 4, ident);
    put16(b, 6, 0x4000); // don't fragment
    b[8] = ttl;
    b[9] = proto;
    put16(b, 10, 0);
    b[12..16].copy_from_slice(&src);
    b[16..20].copy_from_slice(&dst);
    let c = ipv4_checksum(&b[..20]);
    put16(b, 10, c);
}

/// Checksum of a transport segment over the IPv4 pseudo-header, `hdr` and `payload`
/// zero bytes (which add nothing to the sum but count in the length).
fn transport_checksum(src: [u8; 4], dst: [u8; 4], proto: u8, hdr: &[u8], payload: u32) -> u16 {
    let mut c = Checksum::default();
    c.add(&src);
    c.add(&dst);
    c.add_u16(proto as u16);
    let len = hdr.len() as u32 + payload;
    c.add_u16((len >> 16) as u16);
    c.add_u16(len as u16);
    c.add(hdr);
    c.finish()
}

/// Serialises the headers of `pkt` into `buf` (at least [`MAX_HDR`] bytes).
///
/// Returns `(header bytes written, frame length)`: the frame is the header followed by
/// `frame − header` zero payload bytes.
pub fn serialise(pkt: &Packet, hop: Hop, flow: &FlowInfo, buf: &mut [u8]) -> (usize, u32) {
    serialise_with(pkt, hop, flow, &[], buf)
}

/// As [`serialise`], with node `n`'s IPv4 address `addrs[n]` (the default [`ipv4`]
/// for nodes beyond `addrs`).
pub fn serialise_with(
    pkt: &Packet,
    hop: Hop,
    flow: &FlowInfo,
    addrs: &[[u8; 4]],
    buf: &mut [u8],
) -> (usize, u32) {
    let ipv4 = |n: NodeId| addrs.get(n.0 as usize).copied().unwrap_or_else(|| ipv4(n));
    // Ethernet II.
    buf[0..6].copy_from_slice(&mac(hop.to));
    buf[6..12].copy_from_slice(&mac(hop.from));
    put16(buf, 12, 0x0800);
    let (src, dst) = (ipv4(pkt.src), ipv4(pkt.dst));
    let tos = (pkt.dscp & 0x3F) << 2 | ecn_bits(pkt.ecn);
    let ident = pkt.uid as u16;
    let ip = ETH_LEN;
    let l4 = ETH_LEN + IP_LEN;
    let (hdr_end, ip_total, proto) = match &pkt.hdr {
        Header::Tcp(h) => {
            let fwd = pkt.src == flow.src;
            let (my_isn, peer_isn) = (isn(pkt.flow, !fwd), isn(pkt.flow, fwd));
            // The SYN takes sequence number ISN; data byte k is ISN + 1 + k (qoslab's SYN
            // takes no sequence space, a real one takes one).
            let syn = h.flags & tcp_flags::SYN != 0;
            let seq = my_isn.wrapping_add(!syn as u32).wrapping_add(h.seq as u32);
            let has_ack = h.flags & tcp_flags::ACK != 0;
            let ack = if has_ack {
                peer_isn.wrapping_add(1).wrapping_add(h.ack as u32)
            } else {
                0
            };
            let t = &mut buf[l4..];
            put16(t, 0, pkt.src_port);
            put16(t, 2, pkt.dst_port);
            put32(t, 4, seq);
            put32(t, 8, ack);
            t[13] = h.flags;
            let wnd = if fwd && h.wnd == 0 {
                SENDER_WINDOW
            } else {
                h.wnd.min(65_535) as u16
            };
            put16(t, 14, wnd);
            put16(t, 16, 0);
            put16(t, 18, 0);
            // Options: NOP NOP TS(10) [NOP NOP SACK(2 + 8n)].
            let mut o = 20;
            t[o..o + 4].copy_from_slice(&[1, 1, 8, 10]);
            put32(t, o + 4, ts_clock(h.ts_val));
            put32(t, o + 8, ts_clock(h.ts_ecr));
            o += 12;
            let n = h.nsack();
            if n > 0 {
                t[o..o + 4].copy_from_slice(&[1, 1, 5, 2 + 8 * n as u8]);
                o += 4;
                for s in h.sack_blocks() {
                    // SACK edges name bytes of the peer's (the data sender's) stream.
                    put32(t, o, peer_isn.wrapping_add(1).wrapping_add(s.start as u32));
                    put32(
                        t,
                        o + 4,
                        peer_isn.wrapping_add(1).wrapping_add(s.end as u32),
                    );
                    o += 8;
                }
            }
            t[12] = ((o / 4) as u8) << 4;
            let opts = (o - 20) as u32;
            let ip_total = pkt.size.max(crate::packet::TCP_IP_HEADER) + opts;
            let payload = ip_total - IP_LEN as u32 - o as u32;
            let c = transport_checksum(src, dst, 6, &t[..o], payload);
            put16(t, 16, c);
            (l4 + o, ip_total, 6)
        }
        Header::Udp(_) => {
            let ip_total = pkt.size.max(crate::packet::UDP_IP_HEADER);
            let udp_len = ip_total - IP_LEN as u32;
            let t = &mut buf[l4..];
            put16(t, 0, pkt.src_port);
            put16(t, 2, pkt.dst_port);
            put16(t, 4, udp_len.min(65_535) as u16);
            put16(t, 6, 0);
            let c = transport_checksum(src, dst, 17, &t[..8], udp_len - 8);
            // RFC 768: a computed zero is sent as all ones.
            put16(t, 6, if c == 0 { 0xFFFF } else { c });
            (l4 + 8, ip_total, 17)
        }
        Header::Quench(q) => {
            // RFC 792 source quench: type 4, code 0, 4 unused bytes, then the original
            // datagram's IP header and its first 8 bytes (ports; the rest unknown → 0).
            let ip_total = pkt.size.max((IP_LEN + 8 + IP_LEN + 8) as u32);
            let t = &mut buf[l4..];
            t[0] = 4;
            t[1] = 0;
            t[2..8].fill(0);
            let fwd = q.orig_src == flow.src;
            let (sp, dp) = if fwd {
                (flow.src_port, flow.dst_port)
            } else {
                (flow.dst_port, flow.src_port)
            };
            let op = ip_proto(flow.proto);
            let orig_len = match flow.proto {
                Proto::Tcp => crate::packet::TCP_IP_HEADER,
                _ => crate::packet::UDP_IP_HEADER,
            } as u16;
            ipv4_header(
                &mut t[8..28],
                0,
                orig_len,
                0,
                hop.ttl,
                op,
                ipv4(q.orig_src),
                ipv4(q.orig_dst),
            );
            t[28..36].fill(0);
            put16(t, 28, sp);
            put16(t, 30, dp);
            let mut c = Checksum::default();
            c.add(&t[..36]);
            put16(t, 2, c.finish());
            (l4 + 36, ip_total, 1)
        }
    };
    let total16 = ip_total.min(65_535) as u16;
    let ipb = &mut buf[ip..ip + IP_LEN];
    ipv4_header(ipb, tos, total16, ident, hop.ttl, proto, src, dst);
    (hdr_end, ETH_LEN as u32 + ip_total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{SackBlock, TcpHeader, UdpHeader};

    #[test]
    fn ipv4_checksum_of_the_textbook_header() {
        // The worked example of RFC 1071 discussions / Wikipedia "IPv4 header checksum":
        // 4500 0073 0000 4000 4011 [b861] c0a8 0001 c0a8 00c7.
        let h: [u8; 20] = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(ipv4_checksum(&h), 0xb861);
        // A header with its checksum in place sums to all ones.
        let mut full = h;
        full[10] = 0xb8;
        full[11] = 0x61;
        assert_eq!(ipv4_checksum(&full), 0);
    }

    #[test]
    fn tcp_checksum_by_hand() {
        // 10.0.0.1:1024 → 10.0.0.2:5001, seq 1, ack 0, SYN, window 0x1000, no payload.
        let src = [10, 0, 0, 1];
        let dst = [10, 0, 0, 2];
        let mut h = [0u8; 20];
        put16(&mut h, 0, 1024);
        put16(&mut h, 2, 5001);
        put32(&mut h, 4, 1);
        h[12] = 5 << 4;
        h[13] = tcp_flags::SYN;
        put16(&mut h, 14, 0x1000);
        // Words: pseudo 0a00 0001 0a00 0002 0006 0014, header 0400 1389 0000 0001
        // 0000 0000 5002 1000 0000 0000. Sum 0x8ba9 (no carry); complement 0x7456.
        assert_eq!(transport_checksum(src, dst, 6, &h, 0), 0x7456);
        // Payload zeros change only the length word: 0x0078, sum 0x8c0d → 0x73f2.
        assert_eq!(transport_checksum(src, dst, 6, &h, 100), 0x73f2);
    }

    fn tcp_pkt(h: TcpHeader, size: u32) -> Packet {
        Packet {
            uid: 0x1_2345,
            flow: FlowId(0),
            src: NodeId(2),
            dst: NodeId(3),
            src_port: 1024,
            dst_port: 5001,
            size,
            dscp: 10,
            ecn: Ecn::Ect,
            hdr: Header::Tcp(h),
            ..Default::default()
        }
    }

    const HOP: Hop = Hop {
        from: NodeId(2),
        to: NodeId(0),
        ttl: 64,
    };

    fn flow() -> FlowInfo {
        FlowInfo {
            src: NodeId(2),
            src_port: 1024,
            dst_port: 5001,
            proto: Proto::Tcp,
        }
    }

    /// Verifies the checksums of a serialised frame the way a receiver would.
    fn verify(buf: &[u8], hdr: usize, frame: u32) {
        let ip = &buf[ETH_LEN..ETH_LEN + IP_LEN];
        assert_eq!(ipv4_checksum(ip), 0, "IPv4 checksum");
        let total = u16::from_be_bytes([ip[2], ip[3]]) as u32;
        assert_eq!(total + ETH_LEN as u32, frame);
        let l4 = &buf[ETH_LEN + IP_LEN..hdr];
        let mut c = Checksum::default();
        c.add(&ip[12..20]);
        c.add_u16(ip[9] as u16);
        c.add_u16((total - IP_LEN as u32) as u16);
        c.add(l4);
        assert_eq!(c.finish(), 0, "transport checksum");
    }

    #[test]
    fn data_segment_bytes() {
        let h = TcpHeader {
            seq: 1460,
            len: 1460,
            flags: tcp_flags::ACK,
            ts_val: SimTime::from_nanos(2_000_000),
            ..Default::default()
        };
        let mut buf = [0u8; MAX_HDR];
        let (n, frame) = serialise(&tcp_pkt(h, 1500), HOP, &flow(), &mut buf);
        assert_eq!(n, ETH_LEN + IP_LEN + 32);
        assert_eq!(frame, 14 + 1500 + 12);
        assert_eq!(&buf[0..6], &[2, 0, 0, 0, 0, 0]);
        assert_eq!(&buf[6..12], &[2, 0, 0, 0, 0, 2]);
        // TOS: AF11 (10) << 2 | ECT(0).
        assert_eq!(buf[15], 10 << 2 | 2);
        assert_eq!(&buf[18..20], &0x2345u16.to_be_bytes());
        assert_eq!(buf[22], 64);
        assert_eq!(buf[23], 6);
        assert_eq!(&buf[26..30], &[10, 0, 0, 3]);
        assert_eq!(&buf[30..34], &[10, 0, 0, 4]);
        let t = &buf[34..];
        let seq = u32::from_be_bytes([t[4], t[5], t[6], t[7]]);
        assert_eq!(seq, isn(FlowId(0), false).wrapping_add(1 + 1460));
        assert_eq!(t[12], 8 << 4);
        assert_eq!(&t[14..16], &SENDER_WINDOW.to_be_bytes());
        assert_eq!(&t[20..24], &[1, 1, 8, 10]);
        assert_eq!(u32::from_be_bytes([t[24], t[25], t[26], t[27]]), 2000);
        verify(&buf, n, frame);
    }

    #[test]
    fn ack_with_sack_blocks() {
        let mut h = TcpHeader {
            ack: 1460,
            flags: tcp_flags::ACK,
            wnd: 100_000,
            ts_ecr: SimTime::from_nanos(5_000),
            ..Default::default()
        };
        let sack = [
            SackBlock {
                start: 2920,
                end: 4380,
            },
            SackBlock {
                start: 5840,
                end: 7300,
            },
        ];
        assert_eq!(h.set_sack(&sack), 2);
        let mut p = tcp_pkt(h, 40);
        p.src = NodeId(3);
        p.dst = NodeId(2);
        p.src_port = 5001;
        p.dst_port = 1024;
        let mut buf = [0u8; MAX_HDR];
        let (n, frame) = serialise(&p, HOP, &flow(), &mut buf);
        // 20 + 12 (TS) + 4 + 16 (two blocks) = 52 bytes of TCP header, no payload.
        assert_eq!(n, ETH_LEN + IP_LEN + 52);
        assert_eq!(frame as usize, n);
        let t = &buf[34..];
        assert_eq!(t[12], 13 << 4);
        assert_eq!(
            &t[14..16],
            &[0xff, 0xff],
            "windows above 64 KiB are clamped"
        );
        let base = isn(FlowId(0), false).wrapping_add(1);
        let ack = u32::from_be_bytes([t[8], t[9], t[10], t[11]]);
        assert_eq!(ack, base.wrapping_add(1460));
        assert_eq!(&t[32..36], &[1, 1, 5, 18]);
        let l = u32::from_be_bytes([t[36], t[37], t[38], t[39]]);
        assert_eq!(l, base.wrapping_add(2920));
        verify(&buf, n, frame);
    }

    #[test]
    fn udp_and_quench_checksums() {
        let p = Packet {
            src: NodeId(0),
            dst: NodeId(1),
            src_port: 7,
            dst_port: 9,
            size: 1000,
            hdr: Header::Udp(UdpHeader { seq: 3 }),
            ..Default::default()
        };
        let mut buf = [0u8; MAX_HDR];
        let (n, frame) = serialise(&p, HOP, &flow(), &mut buf);
        assert_eq!((n, frame), (42, 1014));
        verify(&buf, n, frame);

        let q = Packet {
            src: NodeId(5),
            dst: NodeId(2),
            size: 56,
            hdr: Header::Quench(crate::packet::QuenchHeader {
                orig_flow: FlowId(0),
                orig_src: NodeId(2),
                orig_dst: NodeId(3),
                reporter: NodeId(5),
                ..Default::default()
            }),
            ..Default::default()
        };
        let (n, frame) = serialise(&q, HOP, &flow(), &mut buf);
        assert_eq!((n, frame), (14 + 56, 14 + 56));
        assert_eq!(ipv4_checksum(&buf[14..34]), 0);
        assert_eq!(ipv4_checksum(&buf[42..62]), 0, "quoted header checksum");
        let mut c = Checksum::default();
        c.add(&buf[34..70]);
        assert_eq!(c.finish(), 0, "ICMP checksum");
        assert_eq!(&buf[34..36], &[4, 0]);
        assert_eq!(&buf[62..64], &1024u16.to_be_bytes());
    }
}

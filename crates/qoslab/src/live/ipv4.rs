//! Real IPv4 packets ⇄ qoslab packets: the live datapath's adapter
//! (docs/live.md). Parsing reads the 5-tuple, DSCP, ECN, size and the TCP header fields the
//! mechanisms look at; writing back puts the DSCP and a CE mark into the bytes with the
//! header checksum fixed incrementally (RFC 1624 eqn. 3).

use std::collections::HashMap;

use crate::packet::{Ecn, FlowId, Header, NodeId, Packet, TcpHeader, UdpHeader};
use crate::time::SimTime;

/// IP protocol number of TCP.
pub const PROTO_TCP: u8 = 6;
/// IP protocol number of UDP.
pub const PROTO_UDP: u8 = 17;
/// IP protocol number of ICMP.
pub const PROTO_ICMP: u8 = 1;

/// What the datapath needs from an IPv4 packet's headers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ipv4Info {
    /// Source address.
    pub src: [u8; 4],
    /// Destination address.
    pub dst: [u8; 4],
    /// IP protocol number.
    pub proto: u8,
    /// Source port (0 unless TCP or UDP).
    pub src_port: u16,
    /// Destination port (0 unless TCP or UDP).
    pub dst_port: u16,
    /// DiffServ code point (the TOS byte's upper six bits).
    pub dscp: u8,
    /// The two ECN bits as they are on the wire (0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE).
    pub ecn_bits: u8,
    /// Total length [bytes].
    pub size: u32,
    /// TCP only: sequence number, ACK number, payload length, flags, window.
    pub tcp: Option<(u32, u32, u32, u8, u16)>,
}

/// Why a packet cannot enter the datapath.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reject {
    /// Not IPv4 (e.g. IPv6).
    NotIpv4,
    /// Shorter than its headers say, or a bad header length.
    Truncated,
    /// The destination is not one of the scenario's hosts.
    UnknownDestination,
}

/// Parses the headers of an IPv4 packet.
pub fn parse(b: &[u8]) -> Result<Ipv4Info, Reject> {
    if b.is_empty() || b[0] >> 4 != 4 {
        return Err(Reject::NotIpv4);
    }
    let ihl = (b[0] & 0x0f) as usize * 4;
    if ihl < 20 || b.len() < ihl {
        return Err(Reject::Truncated);
    }
    let total = u16::from_be_bytes([b[2], b[3]]) as usize;
    if total < ihl || total > b.len() {
        return Err(Reject::Truncated);
    }
    let mut info = Ipv4Info {
        src: [b[12], b[13], b[14], b[15]],
        dst: [b[16], b[17], b[18], b[19]],
        proto: b[9],
        dscp: b[1] >> 2,
        ecn_bits: b[1] & 3,
        size: total as u32,
        ..Default::default()
    };
    // Only the first fragment carries the ports.
    let first_fragment = u16::from_be_bytes([b[6], b[7]]) & 0x1fff == 0;
    let l4 = &b[ihl..total];
    if first_fragment && (info.proto == PROTO_TCP || info.proto == PROTO_UDP) && l4.len() >= 4 {
        info.src_port = u16::from_be_bytes([l4[0], l4[1]]);
        info.dst_port = u16::from_be_bytes([l4[2], l4[3]]);
    }
    if first_fragment && info.proto == PROTO_TCP {
        if l4.len() < 20 {
            return Err(Reject::Truncated);
        }
        let doff = (l4[12] >> 4) as usize * 4;
        if doff < 20 || doff > l4.len() {
            return Err(Reject::Truncated);
        }
        let seq = u32::from_be_bytes([l4[4], l4[5], l4[6], l4[7]]);
        let ack = u32::from_be_bytes([l4[8], l4[9], l4[10], l4[11]]);
        let wnd = u16::from_be_bytes([l4[14], l4[15]]);
        info.tcp = Some((seq, ack, (l4.len() - doff) as u32, l4[13], wnd));
    }
    Ok(info)
}

/// The ECN codepoint qoslab's mechanisms see for the wire bits.
pub fn ecn_of(bits: u8) -> Ecn {
    match bits & 3 {
        0 => Ecn::NotEct,
        3 => Ecn::Ce,
        _ => Ecn::Ect,
    }
}

/// One's-complement sum step of RFC 1624 eqn. 3: `HC' = ~(~HC + ~m + m')`.
fn csum_replace(hc: u16, old: u16, new: u16) -> u16 {
    let mut sum = (!hc as u32) + (!old as u32 & 0xffff) + new as u32;
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The IPv4 header checksum computed from scratch (for tests and checks).
pub fn header_checksum(b: &[u8]) -> u16 {
    let ihl = (b[0] & 0x0f) as usize * 4;
    let mut sum = 0u32;
    for i in (0..ihl).step_by(2) {
        if i != 10 {
            sum += u16::from_be_bytes([b[i], b[i + 1]]) as u32;
        }
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Writes `dscp` and, if `ecn` is CE, the CE mark into the packet's TOS byte, fixing
/// the header checksum; an ECT(1) or ECT(0) mark the mechanisms did not change stays
/// as it was. Returns true if a byte changed.
pub fn write_back(b: &mut [u8], dscp: u8, ecn: Ecn) -> bool {
    let old_tos = b[1];
    let ecn_bits = match ecn {
        Ecn::Ce => 3,
        // A mechanism never clears a mark; keep the sender's bits.
        _ => old_tos & 3,
    };
    let new_tos = (dscp & 0x3f) << 2 | ecn_bits;
    if new_tos == old_tos {
        return false;
    }
    let old_word = u16::from_be_bytes([b[0], old_tos]);
    let new_word = u16::from_be_bytes([b[0], new_tos]);
    let hc = u16::from_be_bytes([b[10], b[11]]);
    let fixed = csum_replace(hc, old_word, new_word);
    b[1] = new_tos;
    b[10..12].copy_from_slice(&fixed.to_be_bytes());
    true
}

/// (protocol, source address, source port, destination address, destination port).
type FiveTuple = (u8, [u8; 4], u16, [u8; 4], u16);

/// Maps addresses to the scenario's hosts and 5-tuples to its flows.
#[derive(Clone, Debug, Default)]
pub struct FlowMap {
    hosts: HashMap<[u8; 4], NodeId>,
    flows: HashMap<FiveTuple, FlowId>,
    /// Servers whose clients connect from any port (web flows): (protocol, server
    /// address, server port, client address).
    servers: HashMap<(u8, [u8; 4], u16, [u8; 4]), FlowId>,
    /// The flow id given to traffic that is none of the scenario's flows (ping, …):
    /// one past the last flow.
    pub other: FlowId,
}

impl FlowMap {
    /// A map over `hosts` (address, node) with `other` for unmatched traffic.
    pub fn new(hosts: impl IntoIterator<Item = ([u8; 4], NodeId)>, other: FlowId) -> Self {
        FlowMap {
            hosts: hosts.into_iter().collect(),
            flows: HashMap::new(),
            servers: HashMap::new(),
            other,
        }
    }

    /// Adds a flow's 5-tuple (data direction); its reverse direction maps to it too.
    pub fn add_flow(&mut self, proto: u8, src: ([u8; 4], u16), dst: ([u8; 4], u16), f: FlowId) {
        self.flows.insert((proto, src.0, src.1, dst.0, dst.1), f);
        self.flows.insert((proto, dst.0, dst.1, src.0, src.1), f);
    }

    /// Adds a server at `server` whose client at address `client` connects from any
    /// port (a web flow: one connection per object, each from a port of the client's
    /// kernel): both directions of every such connection map to `f`. An exact 5-tuple
    /// of [`FlowMap::add_flow`] is looked up first.
    pub fn add_server(&mut self, proto: u8, server: ([u8; 4], u16), client: [u8; 4], f: FlowId) {
        self.servers.insert((proto, server.0, server.1, client), f);
    }

    /// The flow of a packet with this 5-tuple, if it is one of the scenario's.
    fn flow_of(&self, key: FiveTuple) -> Option<FlowId> {
        let (proto, src, sport, dst, dport) = key;
        self.flows
            .get(&key)
            .or_else(|| self.servers.get(&(proto, src, sport, dst)))
            .or_else(|| self.servers.get(&(proto, dst, dport, src)))
            .copied()
    }

    /// The host with address `a`.
    pub fn host(&self, a: [u8; 4]) -> Option<NodeId> {
        self.hosts.get(&a).copied()
    }

    /// A qoslab packet for real bytes parsed as `info`, entering at host `from`.
    pub fn packet(
        &self,
        info: &Ipv4Info,
        from: NodeId,
        uid: u64,
        now: SimTime,
    ) -> Result<Packet, Reject> {
        let dst = self.host(info.dst).ok_or(Reject::UnknownDestination)?;
        let key = (info.proto, info.src, info.src_port, info.dst, info.dst_port);
        let flow = self.flow_of(key).unwrap_or(self.other);
        let hdr = match info.tcp {
            Some((seq, ack, len, flags, wnd)) => Header::Tcp(TcpHeader {
                seq: seq as u64,
                ack: ack as u64,
                len,
                flags,
                wnd: wnd as u32,
                ..Default::default()
            }),
            None => Header::Udp(UdpHeader::default()),
        };
        Ok(Packet {
            uid,
            flow,
            src: from,
            dst,
            src_port: info.src_port,
            dst_port: info.dst_port,
            size: info.size,
            created: now,
            dscp: info.dscp,
            ecn: ecn_of(info.ecn_bits),
            hdr,
            ..Default::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A TCP/IPv4 packet with a correct header checksum and `payload` bytes.
    fn tcp_packet(tos: u8, payload: usize, flags: u8) -> Vec<u8> {
        let total = 20 + 32 + payload;
        let mut b = vec![0u8; total];
        b[0] = 0x45;
        b[1] = tos;
        b[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        b[4..6].copy_from_slice(&0x1234u16.to_be_bytes());
        b[6] = 0x40; // DF
        b[8] = 64;
        b[9] = PROTO_TCP;
        b[12..16].copy_from_slice(&[10, 0, 0, 3]);
        b[16..20].copy_from_slice(&[10, 0, 0, 7]);
        let t = &mut b[20..];
        t[0..2].copy_from_slice(&1025u16.to_be_bytes());
        t[2..4].copy_from_slice(&5001u16.to_be_bytes());
        t[4..8].copy_from_slice(&0xfffffff0u32.to_be_bytes());
        t[8..12].copy_from_slice(&77u32.to_be_bytes());
        t[12] = 8 << 4; // 32-byte header: timestamps
        t[13] = flags;
        t[14..16].copy_from_slice(&502u16.to_be_bytes());
        let c = header_checksum(&b);
        b[10..12].copy_from_slice(&c.to_be_bytes());
        b
    }

    #[test]
    fn parses_the_five_tuple_and_tcp_fields() {
        let b = tcp_packet(0x28 << 2 | 2, 1448, 0x18 | 0x40);
        let i = parse(&b).unwrap();
        assert_eq!(i.src, [10, 0, 0, 3]);
        assert_eq!(i.dst, [10, 0, 0, 7]);
        assert_eq!((i.proto, i.src_port, i.dst_port), (PROTO_TCP, 1025, 5001));
        assert_eq!((i.dscp, i.ecn_bits, i.size), (0x28, 2, 1500));
        // Payload is the total less both headers (32 bytes of TCP with options).
        assert_eq!(i.tcp, Some((0xfffffff0, 77, 1448, 0x58, 502)));
        assert_eq!(ecn_of(i.ecn_bits), Ecn::Ect);
        assert_eq!(ecn_of(1), Ecn::Ect);
        assert_eq!(ecn_of(3), Ecn::Ce);
    }

    #[test]
    fn rejects_what_is_not_a_whole_ipv4_packet() {
        let b = tcp_packet(0, 10, 0x10);
        assert_eq!(parse(&b[..30]), Err(Reject::Truncated));
        let mut v6 = b.clone();
        v6[0] = 0x60;
        assert_eq!(parse(&v6), Err(Reject::NotIpv4));
        assert_eq!(parse(&[]), Err(Reject::NotIpv4));
        let mut short_ihl = b.clone();
        short_ihl[0] = 0x44;
        assert_eq!(parse(&short_ihl), Err(Reject::Truncated));
    }

    #[test]
    fn write_back_fixes_the_checksum_incrementally() {
        // Every TOS change, from every start: the incremental fix equals a full recount.
        for old in [0u8, 1, 2, 3, 0xb8, 0x2a, 0xff, 0x48] {
            for dscp in [0u8, 10, 12, 14, 46, 63] {
                for ecn in [Ecn::NotEct, Ecn::Ect, Ecn::Ce] {
                    let mut b = tcp_packet(old, 100, 0x10);
                    let changed = write_back(&mut b, dscp, ecn);
                    let want_ecn = if ecn == Ecn::Ce { 3 } else { old & 3 };
                    assert_eq!(b[1], dscp << 2 | want_ecn);
                    assert_eq!(changed, b[1] != old);
                    let c = u16::from_be_bytes([b[10], b[11]]);
                    assert_eq!(c, header_checksum(&b), "old {old:#x} dscp {dscp} {ecn:?}");
                }
            }
        }
    }

    #[test]
    fn flows_map_both_directions_and_others_go_to_the_spare_id() {
        let mut m = FlowMap::new(
            [([10, 0, 0, 3], NodeId(2)), ([10, 0, 0, 7], NodeId(5))],
            FlowId(4),
        );
        m.add_flow(
            PROTO_TCP,
            ([10, 0, 0, 3], 1025),
            ([10, 0, 0, 7], 5001),
            FlowId(1),
        );
        let data = parse(&tcp_packet(0, 1448, 0x10)).unwrap();
        let p = m
            .packet(&data, NodeId(2), 9, SimTime::from_nanos(3))
            .unwrap();
        assert_eq!(
            (p.flow, p.src, p.dst, p.size, p.uid),
            (FlowId(1), NodeId(2), NodeId(5), 1500, 9)
        );
        assert_eq!(p.tcp().unwrap().len, 1448);
        // The ACK direction (addresses and ports swapped) is the same flow.
        let mut ack = data;
        std::mem::swap(&mut ack.src, &mut ack.dst);
        std::mem::swap(&mut ack.src_port, &mut ack.dst_port);
        assert_eq!(
            m.packet(&ack, NodeId(5), 10, SimTime::ZERO).unwrap().flow,
            FlowId(1)
        );
        // Another port: not the flow.
        let mut other = data;
        other.src_port = 1026;
        assert_eq!(
            m.packet(&other, NodeId(2), 11, SimTime::ZERO).unwrap().flow,
            FlowId(4)
        );
        let mut nowhere = data;
        nowhere.dst = [10, 9, 9, 9];
        assert_eq!(
            m.packet(&nowhere, NodeId(2), 12, SimTime::ZERO),
            Err(Reject::UnknownDestination)
        );
    }

    #[test]
    fn a_servers_clients_from_any_port_map_to_its_flow() {
        let mut m = FlowMap::new(
            [([10, 0, 0, 3], NodeId(2)), ([10, 0, 0, 7], NodeId(5))],
            FlowId(4),
        );
        // The server is 10.0.0.3:1025, its client 10.0.0.7 (any port).
        m.add_server(PROTO_TCP, ([10, 0, 0, 3], 1025), [10, 0, 0, 7], FlowId(1));
        let mut from_server = parse(&tcp_packet(0, 1448, 0x10)).unwrap();
        for port in [5001, 40_000, 60_999] {
            from_server.dst_port = port;
            let p = m.packet(&from_server, NodeId(2), 1, SimTime::ZERO).unwrap();
            assert_eq!(p.flow, FlowId(1), "{port}");
            let mut to_server = from_server;
            std::mem::swap(&mut to_server.src, &mut to_server.dst);
            std::mem::swap(&mut to_server.src_port, &mut to_server.dst_port);
            let p = m.packet(&to_server, NodeId(5), 2, SimTime::ZERO).unwrap();
            assert_eq!(p.flow, FlowId(1), "{port}");
        }
        // Another server port, or UDP: not the flow.
        let mut other = from_server;
        other.src_port = 1026;
        assert_eq!(
            m.packet(&other, NodeId(2), 3, SimTime::ZERO).unwrap().flow,
            FlowId(4)
        );
        let mut udp = from_server;
        udp.proto = PROTO_UDP;
        assert_eq!(
            m.packet(&udp, NodeId(2), 4, SimTime::ZERO).unwrap().flow,
            FlowId(4)
        );
    }
}

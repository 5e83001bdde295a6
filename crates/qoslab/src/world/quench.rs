//! Source quenches in the world (P2 §2): routers with a quench limiter answer their
//! queues' drops with ICMP source quench packets towards the dropped packet's source,
//! and routers a quench passes let their ERUF stages snoop it.

use super::*;
use crate::packet::QuenchHeader;

impl World {
    /// Router `node` dropped `dropped` from a queue at `now`: one quench per drop the
    /// limiter allows (never about a quench), pushed onto `out`.
    pub(super) fn quenches_for(
        &mut self,
        now: SimTime,
        node: NodeId,
        dropped: &[(Packet, DropCause)],
        out: &mut Vec<Packet>,
    ) {
        let Some(lim) = self.nodes[node.0 as usize].quench.as_mut() else {
            return;
        };
        let size = lim.config().size.0 as u32;
        for (p, _) in dropped {
            if matches!(p.hdr, Header::Quench(_)) || !lim.allow(now) {
                continue;
            }
            let uid = self.next_uid;
            self.next_uid += 1;
            out.push(Packet {
                uid,
                flow: p.flow,
                src: node,
                dst: p.src,
                size,
                created: now,
                hdr: Header::Quench(QuenchHeader {
                    orig_flow: p.flow,
                    orig_src: p.src,
                    orig_dst: p.dst,
                    reporter: node,
                    orig_src_port: p.src_port,
                    orig_dst_port: p.dst_port,
                    orig_proto: p.proto(),
                }),
                ..Default::default()
            });
        }
    }

    /// Sends the quenches router `node` generated, through its routing, conditioners
    /// and queues like any packet it originates; its own ERUF stages snoop them first.
    pub(super) fn send_quenches(&mut self, now: SimTime, node: NodeId, out: &mut Vec<Packet>) {
        for q in out.drain(..) {
            // The router's own ERUF stages learn of its drops as a passing quench would
            // tell them (an edge router that is also congested).
            if let Header::Quench(h) = &q.hdr {
                let h = *h;
                self.snoop_quench(now, node, &h);
            }
            self.nodes[node.0 as usize].counters.originated += 1;
            let p = self.pool.put(q);
            self.route_out(now, node, p);
        }
    }

    /// A quench passes router `node`: its ERUF stages (at its interfaces and its
    /// ingress) snoop it.
    pub(super) fn snoop_quench(&mut self, now: SimTime, node: NodeId, q: &QuenchHeader) {
        let n = &mut self.nodes[node.0 as usize];
        n.ingress.chain.on_quench(now, q);
        for k in 0..self.nodes[node.0 as usize].ifaces.len() {
            let f = self.nodes[node.0 as usize].ifaces[k];
            self.ifaces[f.0 as usize].egress.chain.on_quench(now, q);
        }
    }
}

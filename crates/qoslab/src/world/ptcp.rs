//! pTCP flows (P4 §4) in the world: the engine's start, its pipes' segments
//! (demultiplexed by `subflow`), their timers, and in-order delivery to the receiving
//! application (the flow's goodput).

use super::*;
use crate::app::ptcp::{RECEIVER, SENDER};

impl World {
    /// Opens the pipes; without a handshake they ask for data at once.
    pub(super) fn ptcp_source(&mut self, now: SimTime, flow: FlowId) {
        let mut out = std::mem::take(&mut self.tcp_out);
        if let FlowApp::Tcp(t) = &mut self.flows[flow.0 as usize].app {
            t.started = true;
            if let Some(pt) = t.app.ptcp_mut() {
                pt.start(now, &mut out);
            }
        }
        self.ptcp_send(now, flow, false, &mut out);
        self.tcp_out = out;
    }

    /// A segment of a pTCP flow reached `node`: a data segment at the receiving engine
    /// (its in-order bytes count as goodput) or an ACK at the sending engine.
    pub(super) fn ptcp_deliver(&mut self, now: SimTime, node: NodeId, pkt: &Packet, h: &TcpHeader) {
        let mut out = std::mem::take(&mut self.tcp_out);
        let f = &mut self.flows[pkt.flow.0 as usize];
        let to_receiver = node == f.dst;
        if let FlowApp::Tcp(t) = &mut f.app {
            if let Some(pt) = t.app.ptcp_mut() {
                let p = h.subflow as usize;
                if p < pt.pipes.len() {
                    if to_receiver {
                        f.counters.goodput_bytes +=
                            pt.on_segment(now, p, h, pkt.ecn == Ecn::Ce, &mut out);
                    } else {
                        pt.on_ack(now, p, h, &mut out);
                    }
                    if t.done_at == SimTime::NEVER && pt.is_done() {
                        t.done_at = now;
                    }
                }
            }
        }
        self.ptcp_send(now, pkt.flow, to_receiver, &mut out);
        self.tcp_out = out;
    }

    /// A timer of pipe `pipe`'s sender or receiver may be due.
    pub(super) fn ptcp_timer(&mut self, now: SimTime, flow: FlowId, pipe: u8, end: u8) {
        let mut out = std::mem::take(&mut self.tcp_out);
        if let FlowApp::Tcp(t) = &mut self.flows[flow.0 as usize].app {
            if let Some(pt) = t.app.ptcp_mut() {
                let p = pipe as usize;
                if pt.pipes[p].armed[end as usize] == now {
                    pt.pipes[p].armed[end as usize] = SimTime::NEVER;
                    pt.on_timer(now, p, end, &mut out);
                    if t.done_at == SimTime::NEVER && pt.is_done() {
                        t.done_at = now;
                    }
                }
                // else: superseded by an earlier timer that already ran
            }
        }
        self.ptcp_send(now, flow, end == RECEIVER, &mut out);
        self.tcp_out = out;
    }

    /// Sends the segments in `out` (`reverse`: ACKs from the receiving host) and re-arms
    /// the pipes' timers.
    fn ptcp_send(&mut self, now: SimTime, flow: FlowId, reverse: bool, out: &mut Vec<TcpHeader>) {
        let ecn = matches!(&self.flows[flow.0 as usize].app, FlowApp::Tcp(t) if t.ecn);
        for h in out.drain(..) {
            let size = h.len + TCP_IP_HEADER;
            let ect = crate::tcp::sends_ect(ecn, &h, reverse);
            let mut pkt = self.new_packet(flow, size, Header::Tcp(h), now, reverse);
            if ect {
                pkt.ecn = Ecn::Ect;
            }
            self.send_from_host(now, pkt);
        }
        self.ptcp_rearm(flow);
    }

    /// Schedules the pipes' timers that are earlier than the ones armed.
    fn ptcp_rearm(&mut self, flow: FlowId) {
        let FlowApp::Tcp(t) = &mut self.flows[flow.0 as usize].app else {
            return;
        };
        let Some(pt) = t.app.ptcp_mut() else {
            return;
        };
        for (p, k) in pt.pipes.iter_mut().enumerate() {
            for (end, next) in [(SENDER, k.snd.next_timer()), (RECEIVER, k.rcv.next_timer())] {
                if let Some(n) = next {
                    if n < k.armed[end as usize] {
                        k.armed[end as usize] = n;
                        self.q.schedule_timer(
                            n,
                            Event::AppTimer {
                                flow,
                                conn: p as u16,
                                end,
                            },
                        );
                    }
                }
            }
        }
    }
}

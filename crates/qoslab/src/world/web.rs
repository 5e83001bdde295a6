//! Web flows (P3 §V.D) in the world: the model's timers, one connection per object, and
//! the demultiplexing of their segments by the client's port and the TCP half
//! ([`crate::app::web::WebConn`]). The flow's source is the server, its destination the
//! client; server → client packets carry the flow's DSCP, client → server ones its ACK
//! DSCP.

use super::*;
use crate::app::web::{WebConn, WebEnd};

impl World {
    /// The web model's timer: start what is due, open a connection per object.
    pub(super) fn web_source(&mut self, now: SimTime, flow: FlowId) {
        let FlowApp::Tcp(t) = &mut self.flows[flow.0 as usize].app else {
            return;
        };
        t.started = true;
        let Some(wf) = t.app.web_mut() else {
            return;
        };
        if wf.armed == now {
            wf.armed = SimTime::NEVER;
        }
        let mut launch = Vec::new();
        wf.model.on_timer(now, &mut launch);
        let request = wf.model.request_bytes();
        let mut opened = Vec::new();
        for o in launch {
            let port = wf.new_port();
            let mut c = WebConn::new(o, &wf.tcp, request, wf.model.objects[o].bytes);
            let mut out = Vec::new();
            c.open(now, &mut out);
            wf.model.objects[o].syns = c.syns;
            wf.conns.insert(port, c);
            opened.push((port, out));
        }
        for (port, mut out) in opened {
            self.web_send(now, flow, port, false, &mut out);
            self.web_rearm(flow, port);
        }
        self.web_rearm_model(flow);
    }

    /// Schedules the model's next timer if it is earlier than the one armed.
    fn web_rearm_model(&mut self, flow: FlowId) {
        let FlowApp::Tcp(t) = &mut self.flows[flow.0 as usize].app else {
            return;
        };
        let Some(wf) = t.app.web_mut() else {
            return;
        };
        if let Some(n) = wf.model.next_timer() {
            if n < wf.armed {
                wf.armed = n;
                self.q.schedule_forget(n, Event::Source { flow });
            }
        }
    }

    /// Sends `out` from the client (`to_client` false) or the server on connection `port`.
    fn web_send(
        &mut self,
        now: SimTime,
        flow: FlowId,
        port: u16,
        to_client: bool,
        out: &mut Vec<TcpHeader>,
    ) {
        for h in out.drain(..) {
            let size = h.len + TCP_IP_HEADER;
            let mut pkt = self.new_packet(flow, size, Header::Tcp(h), now, !to_client);
            if to_client {
                pkt.dst_port = port;
            } else {
                pkt.src_port = port;
            }
            self.send_from_host(now, pkt);
        }
    }

    /// Schedules the timers of connection `port`'s ends that are earlier than armed.
    fn web_rearm(&mut self, flow: FlowId, port: u16) {
        let FlowApp::Tcp(t) = &mut self.flows[flow.0 as usize].app else {
            return;
        };
        let Some(wf) = t.app.web_mut() else {
            return;
        };
        let Some(c) = wf.conns.get_mut(&port) else {
            return;
        };
        for end in WebEnd::ALL {
            if let Some(n) = c.next_timer(end) {
                if n < c.armed[end as usize] {
                    c.armed[end as usize] = n;
                    self.q.schedule_forget(
                        n,
                        Event::AppTimer {
                            flow,
                            conn: port,
                            end: end as u8,
                        },
                    );
                }
            }
        }
    }

    /// A timer of one end of connection `port` may be due.
    pub(super) fn web_timer(&mut self, now: SimTime, flow: FlowId, port: u16, end: u8) {
        let end = WebEnd::ALL[end as usize];
        let FlowApp::Tcp(t) = &mut self.flows[flow.0 as usize].app else {
            return;
        };
        let Some(wf) = t.app.web_mut() else {
            return;
        };
        let Some(c) = wf.conns.get_mut(&port) else {
            return; // the connection finished meanwhile
        };
        if c.armed[end as usize] != now {
            return; // superseded by an earlier timer that already ran
        }
        c.armed[end as usize] = SimTime::NEVER;
        let mut out = Vec::new();
        c.on_timer(now, end, &mut out);
        let obj = c.object;
        wf.model.objects[obj].syns = c.syns;
        // what the client sends goes to the server and vice versa
        let to_client = !WebConn::at_client_side(end);
        self.web_send(now, flow, port, to_client, &mut out);
        self.web_rearm(flow, port);
    }

    /// A segment of a web flow arrived at `node` (the client or the server).
    pub(super) fn web_deliver(&mut self, now: SimTime, node: NodeId, pkt: &Packet, h: &TcpHeader) {
        let flow = pkt.flow;
        let f = &mut self.flows[flow.0 as usize];
        let at_client = node == f.dst;
        let FlowApp::Tcp(t) = &mut f.app else {
            return;
        };
        let Some(wf) = t.app.web_mut() else {
            return;
        };
        let port = if at_client {
            pkt.dst_port
        } else {
            pkt.src_port
        };
        let Some(c) = wf.conns.get_mut(&port) else {
            return; // a late segment of a finished connection
        };
        let ce = pkt.ecn == Ecn::Ce;
        let mut out = Vec::new();
        let mut received = false;
        if at_client {
            let new = c.at_client(now, h, ce, &mut out);
            let obj = c.object;
            wf.model.objects[obj].syns = c.syns;
            if new > 0 {
                f.counters.goodput_bytes += new;
                wf.model.on_received(now, obj, new);
                received = true;
            }
        } else {
            c.at_server(now, h, ce, &mut out);
        }
        let finished = c.finished();
        self.web_send(now, flow, port, !at_client, &mut out);
        self.web_rearm(flow, port);
        if finished {
            if let FlowApp::Tcp(t) = &mut self.flows[flow.0 as usize].app {
                if let Some(wf) = t.app.web_mut() {
                    wf.conns.remove(&port);
                }
            }
        }
        if received {
            // the object (and its page) may be complete: the next page's timer
            self.web_rearm_model(flow);
        }
    }
}

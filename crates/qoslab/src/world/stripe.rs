//! Striped flows (P4 §2) in the world: the striping application's writes and reads,
//! its w connections' segments (demultiplexed by `subflow`) and their timers.

use super::*;

/// Which end of a striped connection a timer belongs to (index into `armed`).
const SENDER: u8 = 0;
const RECEIVER: u8 = 1;

impl World {
    /// Opens the connections and writes the first blocks.
    pub(super) fn stripe_source(&mut self, now: SimTime, flow: FlowId) {
        let FlowApp::Tcp(t) = &mut self.flows[flow.0 as usize].app else {
            return;
        };
        t.started = true;
        let Some(st) = t.app.stripe_mut() else {
            return;
        };
        let mut outs = vec![Vec::new(); st.conns.len()];
        for (c, conn) in st.conns.iter_mut().enumerate() {
            conn.snd.start(now, &mut outs[c]);
        }
        st.write(now, &mut outs);
        self.stripe_send_all(now, flow, false, &mut outs);
    }

    /// A segment of a striped flow reached `node`: its receiver (data) or its sender
    /// (ACK); the application then reads or writes what it can.
    pub(super) fn stripe_deliver(
        &mut self,
        now: SimTime,
        node: NodeId,
        pkt: &Packet,
        h: &TcpHeader,
    ) {
        let f = &mut self.flows[pkt.flow.0 as usize];
        let to_receiver = node == f.dst;
        let FlowApp::Tcp(t) = &mut f.app else {
            return;
        };
        let Some(st) = t.app.stripe_mut() else {
            return;
        };
        let c = h.subflow as usize;
        if c >= st.conns.len() {
            return;
        }
        let mut outs = vec![Vec::new(); st.conns.len()];
        if to_receiver {
            st.conns[c]
                .rcv
                .on_segment(now, h, pkt.ecn == Ecn::Ce, &mut outs[c]);
            f.counters.goodput_bytes += st.read(now, &mut outs);
        } else {
            st.conns[c].snd.on_ack(now, h, &mut outs[c]);
            st.write(now, &mut outs);
        }
        if t.done_at == SimTime::NEVER && st.is_done() {
            t.done_at = now;
        }
        self.stripe_send_all(now, pkt.flow, to_receiver, &mut outs);
    }

    /// A timer of connection `conn`'s sender or receiver may be due.
    pub(super) fn stripe_timer(&mut self, now: SimTime, flow: FlowId, conn: u8, end: u8) {
        let FlowApp::Tcp(t) = &mut self.flows[flow.0 as usize].app else {
            return;
        };
        let Some(st) = t.app.stripe_mut() else {
            return;
        };
        let c = conn as usize;
        let mut outs = vec![Vec::new(); st.conns.len()];
        let k = &mut st.conns[c];
        if k.armed[end as usize] != now {
            return; // superseded by an earlier timer that already ran
        }
        k.armed[end as usize] = SimTime::NEVER;
        if end == SENDER {
            k.snd.on_timer(now, &mut outs[c]);
        } else {
            k.rcv.on_timer(now, &mut outs[c]);
        }
        self.stripe_send_all(now, flow, end == RECEIVER, &mut outs);
    }

    /// Sends every connection's segments (`reverse`: ACKs from the receiving host) and
    /// re-arms every connection's timers.
    fn stripe_send_all(
        &mut self,
        now: SimTime,
        flow: FlowId,
        reverse: bool,
        outs: &mut [Vec<TcpHeader>],
    ) {
        let ecn = matches!(&self.flows[flow.0 as usize].app, FlowApp::Tcp(t) if t.ecn);
        for (c, out) in outs.iter_mut().enumerate() {
            for mut h in out.drain(..) {
                h.subflow = c as u8;
                let ect = crate::tcp::sends_ect(ecn, &h, reverse);
                if reverse {
                    if let FlowApp::Tcp(t) = &mut self.flows[flow.0 as usize].app {
                        if let Some(st) = t.app.stripe_mut() {
                            let k = &mut st.conns[c];
                            k.zero_windows += (h.wnd == 0) as u64;
                            k.small_windows += (h.wnd < k.rcv.mss()) as u64;
                        }
                    }
                }
                let size = h.len + TCP_IP_HEADER;
                let mut pkt = self.new_packet(flow, size, Header::Tcp(h), now, reverse);
                if ect {
                    pkt.ecn = Ecn::Ect;
                }
                self.send_from_host(now, pkt);
            }
        }
        self.stripe_rearm(flow);
    }

    /// Schedules the connections' timers that are earlier than the ones armed.
    fn stripe_rearm(&mut self, flow: FlowId) {
        let FlowApp::Tcp(t) = &mut self.flows[flow.0 as usize].app else {
            return;
        };
        let Some(st) = t.app.stripe_mut() else {
            return;
        };
        for (c, k) in st.conns.iter_mut().enumerate() {
            for (end, next) in [(SENDER, k.snd.next_timer()), (RECEIVER, k.rcv.next_timer())] {
                if let Some(n) = next {
                    if n < k.armed[end as usize] {
                        k.armed[end as usize] = n;
                        self.q.schedule_timer(
                            n,
                            Event::AppTimer {
                                flow,
                                conn: c as u16,
                                end,
                            },
                        );
                    }
                }
            }
        }
    }
}

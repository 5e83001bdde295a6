//! Sources and transport endpoints hosted at the hosts: CBR/Pareto timers, TCP
//! segments and timers, and delivery to sinks and receivers.

use super::*;

impl World {
    pub(super) fn source(&mut self, now: SimTime, flow: FlowId) {
        let f = &mut self.flows[flow.0 as usize];
        let (step, seq, size) = match &mut f.app {
            FlowApp::Cbr { src, seq, size, .. } => (src.on_timer(now), seq, *size),
            FlowApp::Pareto { src, seq, size, .. } => (src.on_timer(now), seq, *size),
            FlowApp::Tcp(t) if matches!(t.app, TcpApp::Web(_)) => {
                return self.web_source(now, flow)
            }
            FlowApp::Tcp(t) if matches!(t.app, TcpApp::Stripe(_)) => {
                return self.stripe_source(now, flow)
            }
            FlowApp::Tcp(t) if matches!(t.app, TcpApp::Ptcp(_)) => {
                return self.ptcp_source(now, flow)
            }
            FlowApp::Tcp(t) => {
                let mut out = std::mem::take(&mut self.tcp_out);
                let opened = !t.started;
                if opened {
                    t.started = true;
                    t.snd.start(now, &mut out);
                }
                // The application's write (if it writes over time), then the next one.
                let mut closed_send = false;
                if let TcpApp::Writes(wr) = &mut t.app {
                    let size = wr.left.map_or(wr.size, |l| l.min(wr.size));
                    wr.left = wr.left.map(|l| l - size);
                    let before = out.iter().filter(|h| h.len > 0).count();
                    t.snd.app_write(now, size, &mut out);
                    // Nothing new went out although data waits: the window is closed.
                    closed_send =
                        out.iter().filter(|h| h.len > 0).count() == before && t.snd.window_closed();
                    if wr.left == Some(0) {
                        t.snd.app_close(now, &mut out);
                    } else {
                        self.q
                            .schedule_forget(now + wr.every, Event::Source { flow });
                    }
                }
                if let TcpApp::Telnet(tn) = &mut t.app {
                    let step = tn.on_timer(now);
                    let before = out.iter().filter(|h| h.len > 0).count();
                    t.snd.app_write(now, step.write as u64, &mut out);
                    closed_send =
                        out.iter().filter(|h| h.len > 0).count() == before && t.snd.window_closed();
                    match step.next {
                        Some(n) => self.q.schedule_forget(n, Event::Source { flow }),
                        None => t.snd.app_close(now, &mut out),
                    }
                }
                if opened && self.qos.is_some() {
                    self.qos_event(now, flow, crate::qosmgr::Trigger::NewConn);
                }
                if closed_send && self.qos.is_some() {
                    self.qos_event(now, flow, crate::qosmgr::Trigger::ClosedSend);
                }
                self.tcp_send(now, flow, false, &mut out);
                self.tcp_out = out;
                self.tcp_rearm(flow, false);
                return;
            }
        };
        if let Some(next) = step.next {
            self.q.schedule_forget(next, Event::Source { flow });
        }
        if step.send {
            let hdr = Header::Udp(UdpHeader { seq: *seq });
            *seq += 1;
            let pkt = self.new_packet(flow, size, hdr, now, false);
            self.send_from_host(now, pkt);
        }
    }

    /// A fresh packet of `flow`, from its source (or, `reverse`, from its destination).
    #[inline(always)]
    pub(super) fn new_packet(
        &mut self,
        flow: FlowId,
        size: u32,
        hdr: Header,
        now: SimTime,
        reverse: bool,
    ) -> Packet {
        let f = &mut self.flows[flow.0 as usize];
        if reverse {
            f.counters.acks_sent += 1;
        } else {
            f.counters.pkts_sent += 1;
            f.counters.bytes_sent += size as u64;
        }
        let ends = Ends::of(f, reverse);
        self.stamp_packet(flow, &ends, size, hdr, now)
    }

    /// A packet of `flow` between `ends`, with the next packet number.
    #[inline(always)]
    fn stamp_packet(
        &mut self,
        flow: FlowId,
        ends: &Ends,
        size: u32,
        hdr: Header,
        now: SimTime,
    ) -> Packet {
        let uid = self.next_uid;
        self.next_uid += 1;
        Packet {
            uid,
            flow,
            src: ends.src,
            dst: ends.dst,
            src_port: ends.src_port,
            dst_port: ends.dst_port,
            size,
            created: now,
            dscp: ends.dscp,
            hdr,
            ..Default::default()
        }
    }

    // ---- TCP -----------------------------------------------------------------------

    /// Sends the segments in `out` (emptying it): data from the source, or
    /// (`reverse`) ACKs from the destination. As [`World::new_packet`] for each, but the
    /// flow is looked up once: its counters count all the segments at once (only the
    /// statistics read them), and each packet is built from its segment in place.
    pub(super) fn tcp_send(
        &mut self,
        now: SimTime,
        flow: FlowId,
        reverse: bool,
        out: &mut Vec<TcpHeader>,
    ) {
        if out.is_empty() {
            return;
        }
        let f = &mut self.flows[flow.0 as usize];
        let ecn = matches!(&f.app, FlowApp::Tcp(t) if t.ecn);
        if reverse {
            f.counters.acks_sent += out.len() as u64;
        } else {
            f.counters.pkts_sent += out.len() as u64;
            let bytes: u64 = out.iter().map(|h| (h.len + TCP_IP_HEADER) as u64).sum();
            f.counters.bytes_sent += bytes;
        }
        let ends = Ends::of(f, reverse);
        let qos = !reverse && self.qos.is_some();
        for h in out.iter() {
            let mut pkt =
                self.stamp_packet(flow, &ends, h.len + TCP_IP_HEADER, Header::Tcp(*h), now);
            if crate::tcp::sends_ect(ecn, h, reverse) {
                pkt.ecn = Ecn::Ect;
            }
            if qos && h.len > 0 {
                self.qos_send(now, pkt);
            } else {
                self.send_from_host(now, pkt);
            }
        }
        out.clear();
    }

    /// Schedules a timer event if the endpoint's deadline is earlier than the one armed.
    /// Inlined: it runs after every segment, and only rarely schedules anything.
    #[inline(always)]
    pub(super) fn tcp_rearm(&mut self, flow: FlowId, receiver: bool) {
        let FlowApp::Tcp(t) = &mut self.flows[flow.0 as usize].app else {
            return;
        };
        let (next, armed) = if receiver {
            (t.rcv.next_timer(), &mut t.rcv_armed)
        } else {
            (t.snd.next_timer(), &mut t.snd_armed)
        };
        if let Some(n) = next {
            if n < *armed {
                *armed = n;
                self.tcp_arm(n, flow, receiver);
            }
        }
    }

    /// Schedules the endpoint's timer event at `at` (out of line: the rare case of
    /// [`World::tcp_rearm`]).
    #[inline(never)]
    fn tcp_arm(&mut self, at: SimTime, flow: FlowId, receiver: bool) {
        self.q
            .schedule_timer(at, Event::TcpTimer { flow, receiver });
    }

    pub(super) fn tcp_timer(&mut self, now: SimTime, flow: FlowId, receiver: bool) {
        let mut out = std::mem::take(&mut self.tcp_out);
        if let FlowApp::Tcp(t) = &mut self.flows[flow.0 as usize].app {
            let armed = if receiver {
                &mut t.rcv_armed
            } else {
                &mut t.snd_armed
            };
            if *armed == now {
                *armed = SimTime::NEVER;
                if receiver {
                    t.rcv.on_timer(now, &mut out);
                } else {
                    t.snd.on_timer(now, &mut out);
                }
            }
            // else: superseded by an earlier timer that already ran
        }
        self.tcp_send(now, flow, receiver, &mut out);
        self.tcp_out = out;
        if !receiver {
            self.trace(now, flow);
        }
        self.tcp_rearm(flow, receiver);
    }

    /// Records the sender's state if traced and cwnd, ssthresh or the state changed.
    pub(super) fn trace(&mut self, now: SimTime, flow: FlowId) {
        let FlowApp::Tcp(t) = &mut self.flows[flow.0 as usize].app else {
            return;
        };
        if !t.traced {
            return;
        }
        let p = t.snd.probe();
        if (p.cwnd, p.ssthresh, p.state) != t.last_trace {
            t.last_trace = (p.cwnd, p.ssthresh, p.state);
            self.recorded.traces.push((flow.0, now.as_nanos(), p));
        }
    }

    pub(super) fn tcp_deliver(&mut self, now: SimTime, pkt: &Packet, h: &TcpHeader) {
        let flow = pkt.flow;
        let mut out = std::mem::take(&mut self.tcp_out);
        let f = &mut self.flows[flow.0 as usize];
        let to_receiver = pkt.dst == f.dst;
        let mut dup = false;
        if let FlowApp::Tcp(t) = &mut f.app {
            if to_receiver {
                let new = t.rcv.on_segment(now, h, pkt.ecn == Ecn::Ce, &mut out);
                if t.app_reads {
                    t.rcv.app_read(now, u64::MAX, &mut out);
                }
                f.counters.goodput_bytes += new;
                if let TcpApp::Telnet(tn) = &mut t.app {
                    tn.on_delivered(now, new);
                }
            } else {
                let dupacks = t.snd.stats().dupacks;
                t.snd.on_ack(now, h, &mut out);
                dup = t.snd.stats().dupacks > dupacks;
                if t.done_at == SimTime::NEVER && t.snd.is_done() {
                    t.done_at = now;
                }
            }
        }
        if !to_receiver && self.qos.is_some() {
            let sent = out.iter().any(|h| h.len > 0);
            self.qos_ack(now, flow, dup, sent);
        }
        self.tcp_send(now, flow, to_receiver, &mut out);
        self.tcp_out = out;
        if !to_receiver {
            self.trace(now, flow);
        }
        self.tcp_rearm(flow, to_receiver);
    }

    pub(super) fn deliver(&mut self, now: SimTime, node: NodeId, pkt: &Packet) {
        let Some(f) = self.flows.get_mut(pkt.flow.0 as usize) else {
            return;
        };
        // Data packets at the flow's destination (not ACKs, not quenches).
        let data = match &pkt.hdr {
            Header::Udp(_) => true,
            Header::Tcp(h) => h.len > 0 && node == f.dst,
            Header::Quench(_) => false,
        };
        if data {
            f.delivered_dscps.0 |= 1u64 << (pkt.dscp & 63);
            if pkt.in_profile {
                f.counters.in_profile_delivered_bytes += pkt.size as u64;
            }
            if let Some(d) = &mut f.delays {
                d.add(now - pkt.created);
            }
        }
        match (&mut f.app, &pkt.hdr) {
            (FlowApp::Cbr { sink, .. }, Header::Udp(h))
            | (FlowApp::Pareto { sink, .. }, Header::Udp(h)) => {
                f.counters.pkts_delivered += 1;
                let new = sink.on_packet(now, pkt, h.seq);
                f.counters.goodput_bytes += new;
            }
            (FlowApp::Tcp(t), Header::Tcp(h)) => {
                if node == f.dst {
                    f.counters.pkts_delivered += 1;
                }
                match t.app {
                    TcpApp::Web(_) => self.web_deliver(now, node, pkt, h),
                    TcpApp::Stripe(_) => self.stripe_deliver(now, node, pkt, h),
                    TcpApp::Ptcp(_) => self.ptcp_deliver(now, node, pkt, h),
                    _ => self.tcp_deliver(now, pkt, h),
                }
            }
            // A quench about a data segment reaches the sender; one about an ACK the
            // receiver, which has no window to reduce.
            (FlowApp::Tcp(t), Header::Quench(_)) if node == f.src => t.snd.on_source_quench(now),
            _ => {}
        }
    }
}

/// A packet's addresses, ports and DSCP: those of its flow's source, or (ACKs, `reverse`)
/// of its destination.
struct Ends {
    src: NodeId,
    dst: NodeId,
    src_port: u16,
    dst_port: u16,
    dscp: u8,
}

impl Ends {
    /// The ends of `f`'s packets in one direction.
    #[inline(always)]
    fn of(f: &Flow, reverse: bool) -> Self {
        if reverse {
            Ends {
                src: f.dst,
                dst: f.src,
                src_port: f.dst_port,
                dst_port: f.src_port,
                dscp: f.ack_dscp,
            }
        } else {
            Ends {
                src: f.src,
                dst: f.dst,
                src_port: f.src_port,
                dst_port: f.dst_port,
                dscp: f.dscp,
            }
        }
    }
}

//! P0's server-side QoS managers: the TCP data segments of bound flows pass through
//! their aggregate's manager when TCP's window lets them out (see `qosmgr`).

use super::*;
use crate::qosmgr::{QosManager, Trigger};

/// The QoS managers of a world and which flow belongs to which.
#[derive(Debug, Default)]
pub struct QosSet {
    /// Managers, indexed by the `mgr` of their timer events.
    pub managers: Vec<QosManager>,
    /// Per flow: (manager, connection index), or `None` if unmanaged.
    pub of_flow: Vec<Option<(u32, u32)>>,
    out: Vec<Packet>,
}

impl QosSet {
    /// Managers with their flows bound (`of_flow` is filled from the managers).
    pub fn new(managers: Vec<QosManager>, n_flows: usize) -> Self {
        let mut of_flow = vec![None; n_flows];
        for (m, mgr) in managers.iter().enumerate() {
            for (c, conn) in mgr.conns.iter().enumerate() {
                of_flow[conn.flow.0 as usize] = Some((m as u32, c as u32));
            }
        }
        QosSet {
            managers,
            of_flow,
            out: Vec::new(),
        }
    }
}

impl World {
    fn qos_bound(&self, flow: FlowId) -> Option<(u32, u32)> {
        self.qos
            .as_deref()
            .and_then(|q| q.of_flow.get(flow.0 as usize).copied().flatten())
    }

    /// A data segment TCP sends: through the flow's manager if it has one, else out.
    pub(super) fn qos_send(&mut self, now: SimTime, pkt: Packet) {
        let Some((m, c)) = self.qos_bound(pkt.flow) else {
            self.send_from_host(now, pkt);
            return;
        };
        let q = self.qos.as_deref_mut().expect("bound flows have a set");
        let mut out = std::mem::take(&mut q.out);
        q.managers[m as usize].on_send(now, c as usize, pkt, &mut out);
        self.qos_flush(now, m, out);
    }

    /// An ACK reached the sender of `flow` (`dup`: duplicate; `sent`: TCP sent data).
    pub(super) fn qos_ack(&mut self, now: SimTime, flow: FlowId, dup: bool, sent: bool) {
        let Some((m, c)) = self.qos_bound(flow) else {
            return;
        };
        let q = self.qos.as_deref_mut().expect("bound flows have a set");
        let mut out = std::mem::take(&mut q.out);
        q.managers[m as usize].on_ack(now, c as usize, dup, sent, &mut out);
        self.qos_flush(now, m, out);
    }

    /// Connection `flow` opened (`NewConn`) or its application wrote while its window
    /// was closed (`ClosedSend`): P0 §6.3 triggers (iv) and (iii).
    pub(super) fn qos_event(&mut self, now: SimTime, flow: FlowId, why: Trigger) {
        let Some((m, c)) = self.qos_bound(flow) else {
            return;
        };
        let q = self.qos.as_deref_mut().expect("bound flows have a set");
        let mut out = std::mem::take(&mut q.out);
        q.managers[m as usize].on_event(now, c as usize, why, &mut out);
        self.qos_flush(now, m, out);
    }

    pub(super) fn qos_timer(&mut self, now: SimTime, m: u32) {
        let q = self
            .qos
            .as_deref_mut()
            .expect("timer of an existing manager");
        let mgr = &mut q.managers[m as usize];
        if mgr.armed != now {
            return; // superseded
        }
        mgr.armed = SimTime::NEVER;
        let mut out = std::mem::take(&mut q.out);
        mgr.on_tick(now, &mut out);
        self.qos_flush(now, m, out);
    }

    /// Sends what manager `m` released and arms its timer if packets still wait.
    fn qos_flush(&mut self, now: SimTime, m: u32, mut out: Vec<Packet>) {
        for p in out.drain(..) {
            self.send_from_host(now, p);
        }
        let q = self.qos.as_deref_mut().expect("manager exists");
        q.out = out;
        let mgr = &mut q.managers[m as usize];
        if let Some(t) = mgr.next_tick(now) {
            if t < mgr.armed {
                mgr.armed = t;
                self.q.schedule_forget(t, Event::QosTimer { mgr: m });
            }
        }
    }
}

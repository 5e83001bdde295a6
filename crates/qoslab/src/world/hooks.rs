//! Conditioner chains at host egress, router ingress and router egress: running them,
//! holding packets they delay, and their timers.

use super::*;

impl World {
    #[inline]
    pub(super) fn hook_mut(&mut self, at: HookAt) -> &mut Hook {
        match at {
            HookAt::HostEgress(n) => &mut self.nodes[n.0 as usize].host_egress,
            HookAt::Ingress(n) => &mut self.nodes[n.0 as usize].ingress,
            HookAt::Egress(f) => &mut self.ifaces[f.0 as usize].egress,
            HookAt::IngressIface(f) => &mut self.ifaces[f.0 as usize].ingress,
        }
    }

    pub(super) fn hook_node(&self, at: HookAt) -> NodeId {
        match at {
            HookAt::HostEgress(n) | HookAt::Ingress(n) => n,
            HookAt::Egress(f) => self.ifaces[f.0 as usize].node,
            HookAt::IngressIface(f) => self.ifaces[f.0 as usize].peer,
        }
    }

    pub(super) fn node_of_hook_mut(&mut self, at: HookAt) -> &mut NodeCounters {
        let n = self.hook_node(at);
        &mut self.nodes[n.0 as usize].counters
    }

    /// True if the hook at `at` has no stage: every packet passes it untouched.
    #[inline(always)]
    fn hook_is_empty(&self, at: HookAt) -> bool {
        match at {
            HookAt::HostEgress(n) => self.nodes[n.0 as usize].host_egress.is_empty(),
            HookAt::Ingress(n) => self.nodes[n.0 as usize].ingress.is_empty(),
            HookAt::Egress(f) => self.ifaces[f.0 as usize].egress.is_empty(),
            HookAt::IngressIface(f) => self.ifaces[f.0 as usize].ingress.is_empty(),
        }
    }

    /// Runs the chain at `at` from `stage` on; true if the packet passes the whole
    /// chain now (false: dropped, or held until a `Released` event).
    ///
    /// Most hooks of a run are empty (every router has three per packet): that check
    /// is inlined into the forwarding path, with the chain itself out of line.
    #[inline(always)]
    pub(super) fn run_hook(&mut self, now: SimTime, at: HookAt, stage: usize, p: Slot) -> bool {
        self.hook_is_empty(at) || self.run_chain(now, at, stage, p)
    }

    /// [`Self::run_hook`] on a hook with stages.
    #[inline(never)]
    fn run_chain(&mut self, now: SimTime, at: HookAt, stage: usize, p: Slot) -> bool {
        // The chain reads and changes the packet where it waits, in the pool.
        let h = match at {
            HookAt::HostEgress(n) => &mut self.nodes[n.0 as usize].host_egress,
            HookAt::Ingress(n) => &mut self.nodes[n.0 as usize].ingress,
            HookAt::Egress(f) => &mut self.ifaces[f.0 as usize].egress,
            HookAt::IngressIface(f) => &mut self.ifaces[f.0 as usize].ingress,
        };
        let (action, resume) = h.chain.condition_from(stage, now, &mut self.pool[p]);
        // Only chains with a policy ever ask for a timer (a TRC chain never does).
        if h.chain.has_timers() {
            self.arm_cond_timer(at);
        }
        match action {
            Action::Pass => true,
            Action::Drop(cause) => {
                let node = self.hook_node(at);
                self.drop_at_node(now, node, p, cause, DropAt::Hook(at));
                false
            }
            Action::DelayUntil(t) => {
                self.node_of_hook_mut(at).held += 1;
                // The release takes its place in the event order now; packets released
                // in that order wait in the stage's FIFO with only the first in the
                // heap (the same run, event for event, with a heap a FIFO smaller).
                let key = self.q.reserve(t);
                let fifo = &mut self.hook_mut(at).delayed[resume];
                let resume = resume as u16;
                match fifo.back() {
                    Some(&(last, _)) if last > key => {
                        // Out of order (a shaper per key in a policy): its own event.
                        let slot = p.0;
                        self.q
                            .schedule_reserved(key, Event::Released { at, resume, slot });
                    }
                    last => {
                        let first = last.is_none();
                        fifo.push_back((key, p));
                        if first {
                            self.q
                                .schedule_reserved(key, Event::ReleasedFifo { at, resume });
                        }
                    }
                }
                false
            }
        }
    }

    pub(super) fn arm_cond_timer(&mut self, at: HookAt) {
        let h = self.hook_mut(at);
        if !h.chain.has_timers() {
            return;
        }
        if let Some(t) = h.chain.next_timer() {
            if t < h.armed {
                h.armed = t;
                self.q.schedule_timer(t, Event::CondTimer { at });
            }
        }
    }

    pub(super) fn cond_timer(&mut self, now: SimTime, at: HookAt) {
        let h = self.hook_mut(at);
        if h.armed != now {
            return; // superseded by an earlier timer that already ran
        }
        h.armed = SimTime::NEVER;
        h.chain.on_timer(now);
        self.arm_cond_timer(at);
    }
}

//! The datapath's I/O: the hosts' TUN devices read into the world and written from it,
//! the bytes of the packets in flight, and the counters the run's tables report.

use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::pcap::LivePcap;
use super::writer::Writer;
use crate::engine::{Lateness, WallClock};
use crate::live::ipv4::{self, FlowMap, PROTO_UDP};
use crate::live::sys;
use crate::packet::{Ecn, NodeId, Packet};
use crate::time::{Dur, SimTime};
use crate::world::WallIo;

/// Packets whose bytes the datapath keeps while the world carries them (a ring: a
/// packet still in the network after this many newer ones lost its bytes).
const RING: usize = 1 << 16;
/// Bytes each ring slot holds without growing: the TUN's MTU (1500) and room to spare.
const SLOT: usize = 2048;
/// Packets read from one host per round of the loop.
const BATCH: usize = 64;

/// One host's TUN and counters.
pub(super) struct HostIo {
    /// The host's node.
    pub(super) node: NodeId,
    /// Its TUN device.
    fd: OwnedFd,
    /// Packets read from the TUN.
    pub(super) rx: u64,
    /// Packets written to the TUN.
    pub(super) tx: u64,
    /// Writes to the TUN that failed.
    pub(super) tx_failed: u64,
    /// Packets read that were not IPv4 or not mappable to the network.
    pub(super) rejected: u64,
    /// Bytes read from the TUN.
    pub(super) rx_bytes: u64,
    /// Bytes written to the TUN.
    pub(super) tx_bytes: u64,
    /// Since when the TUN has held more packets than one read round takes (a standing
    /// queue in front of the host's link).
    pub(super) backlog_since: Option<SimTime>,
    /// How long the TUN was backlogged in all [ns].
    pub(super) backlog_ns: u64,
}

impl HostIo {
    /// A host's counters, all zero.
    pub(super) fn new(node: NodeId, fd: OwnedFd) -> HostIo {
        HostIo {
            node,
            fd,
            rx: 0,
            tx: 0,
            tx_failed: 0,
            rejected: 0,
            rx_bytes: 0,
            tx_bytes: 0,
            backlog_since: None,
            backlog_ns: 0,
        }
    }
}

/// The datapath's I/O: the hosts' TUN devices and the bytes of the packets in flight.
pub(super) struct TunIo {
    /// The hosts' TUN devices and counters.
    pub(super) hosts: Vec<HostIo>,
    /// Per node: its index in `hosts` (hosts only).
    host_of_node: Vec<Option<usize>>,
    /// One `poll` entry per host, in host order.
    pollfds: Vec<libc::pollfd>,
    /// The flows' 5-tuples and the hosts' addresses.
    pub(super) map: FlowMap,
    /// (uid, bytes) of the packets in flight, by uid modulo [`RING`].
    ring: Vec<(u64, Vec<u8>)>,
    /// The uid the next packet read gets.
    next_uid: u64,
    /// Where a packet is read into.
    buf: Vec<u8>,
    /// Packets whose bytes were overwritten in the ring before delivery.
    pub(super) ring_lost: u64,
    /// Per flow (+ one for other traffic): packets delivered with CE, TCP ACKs with ECE.
    pub(super) ce_delivered: Vec<u64>,
    /// Per flow (+ one for other traffic): TCP ACKs from the receiver with ECE.
    pub(super) ece_acks: Vec<u64>,
    /// Lateness of the TUN writes behind the delivery's scheduled time.
    pub(super) write_late: Lateness,
    /// `[live] pcap`: the delivered packets' bytes, stamped with their delivery time.
    pub(super) pcap: Option<LivePcap>,
    /// The run's clock, once the loop first waited.
    clock_now: Option<WallClock>,
    /// `[live] spin` [ns]: closer than this to the next event, poll without sleeping.
    spin_ns: u64,
    /// Set to stop the run early.
    stop: Option<Arc<AtomicBool>>,
    /// Each flow's destination host (+ none for other traffic).
    flow_dst: Vec<NodeId>,
    /// Wall time the loop spent with nothing due (asleep, or spinning before an
    /// event) [ns]: the rest of the run it was working or behind.
    pub(super) idle_ns: u64,
    /// What one sleep costs this thread in CPU [ns] ([`sys::sleep_cost_ns`]): a wait no
    /// longer than this polls the hosts without sleeping (a sleep would cost as much CPU
    /// and wake late). 0: every wait longer than `[live] spin` sleeps.
    pub(super) sleep_cost_ns: u64,
    /// Waits that slept (armed a timer).
    pub(super) sleeps: u64,
    /// The time the loop spent polling without sleeping [ns] (part of `idle_ns`).
    pub(super) polled_ns: u64,
    /// The last wait ended on a poll that found a host readable: its `revents` say which
    /// hosts to read (the others would only answer EAGAIN).
    polled_ready: bool,
    /// How late the thread woke from a sleep that ran to its timeout, behind the time
    /// it asked for: the machine's wake-up latency, which `[live] spin` hides.
    pub(super) wake_late: Lateness,
    /// Traffic that is none of the scenario's flows (the user's programs, pings), per
    /// 5-tuple as the datapath saw it.
    pub(super) conns: BTreeMap<ConnKey, ConnStats>,
    /// The thread that writes delivered packets to the hosts' TUNs on another CPU, if
    /// started ([`TunIo::start_writer`]); without it the loop writes them itself.
    writer: Option<Writer>,
    /// The loop thread's CPUs before [`TunIo::start_writer`] pinned it, to restore.
    loop_cpus: Option<Vec<usize>>,
    /// CPU time the writer thread used [ns] (0 without one).
    pub(super) writer_cpu_ns: u64,
    /// Whether a writer thread did the TUN writes.
    pub(super) wrote_apart: bool,
}

/// (protocol, source address, source port, destination address, destination port).
pub(super) type ConnKey = (u8, [u8; 4], u16, [u8; 4], u16);

/// Packets and bytes of one 5-tuple through the datapath.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct ConnStats {
    /// Packets read from the sending host.
    pub(super) read: u64,
    /// Their bytes.
    pub(super) read_bytes: u64,
    /// Packets written to the receiving host.
    pub(super) delivered: u64,
    /// Their bytes.
    pub(super) delivered_bytes: u64,
    /// TCP or UDP payload bytes delivered (retransmissions included).
    pub(super) payload_delivered: u64,
}

/// The 5-tuple of a parsed packet.
fn conn_key(i: &ipv4::Ipv4Info) -> ConnKey {
    (i.proto, i.src, i.src_port, i.dst, i.dst_port)
}

/// Payload bytes of a parsed TCP segment or UDP datagram (0 for others).
fn payload(i: &ipv4::Ipv4Info) -> u64 {
    match (i.tcp, i.proto) {
        (Some(t), _) => t.2 as u64,
        (None, PROTO_UDP) => (i.size as u64).saturating_sub(28),
        _ => 0,
    }
}

impl TunIo {
    /// The datapath over `hosts` (their TUN devices), with `flow_dst` the destination
    /// host of each of the scenario's flows.
    pub(super) fn new(
        hosts: Vec<HostIo>,
        host_of_node: Vec<Option<usize>>,
        map: FlowMap,
        mut flow_dst: Vec<NodeId>,
        pcap: Option<LivePcap>,
        spin_ns: u64,
        stop: Option<Arc<AtomicBool>>,
    ) -> TunIo {
        let nflows = flow_dst.len();
        flow_dst.push(NodeId(u32::MAX));
        TunIo {
            pollfds: hosts
                .iter()
                .map(|h| libc::pollfd {
                    fd: h.fd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                })
                .collect(),
            hosts,
            host_of_node,
            map,
            // Each slot holds a full-size packet from the start: no allocation (and no
            // page faults) per packet read while the clock runs.
            ring: (0..RING)
                .map(|_| (u64::MAX, Vec::with_capacity(SLOT)))
                .collect(),
            next_uid: 0,
            buf: vec![0; 65_536],
            ring_lost: 0,
            ce_delivered: vec![0; nflows + 1],
            ece_acks: vec![0; nflows + 1],
            write_late: Lateness::default(),
            pcap,
            clock_now: None,
            spin_ns,
            stop,
            flow_dst,
            idle_ns: 0,
            sleep_cost_ns: 0,
            sleeps: 0,
            polled_ns: 0,
            polled_ready: false,
            wake_late: Lateness::default(),
            conns: BTreeMap::new(),
            writer: None,
            loop_cpus: None,
            writer_cpu_ns: 0,
            wrote_apart: false,
        }
    }

    /// With a second CPU the calling thread (the event loop) may use, pins the loop to
    /// the CPU it is on and starts the TUN writer ([`super::writer`]) on the others, so
    /// that the receiving hosts' kernels run there; true if it did. Without one (or if
    /// the thread cannot start) the loop keeps writing itself.
    pub(super) fn start_writer(&mut self) -> bool {
        if self.writer.is_some() {
            return true;
        }
        let (Some(all), Some(cpu)) = (sys::affinity(), sys::current_cpu()) else {
            return false;
        };
        let others: Vec<usize> = all.iter().copied().filter(|&c| c != cpu).collect();
        if others.is_empty() || sys::set_affinity(&[cpu]).is_err() {
            return false;
        }
        let fds = self.hosts.iter().map(|h| h.fd.as_raw_fd()).collect();
        self.writer = Writer::start(fds, others);
        if self.writer.is_none() {
            let _ = sys::set_affinity(&all);
            return false;
        }
        self.loop_cpus = Some(all);
        self.wrote_apart = true;
        true
    }

    /// Ends the TUN writer, if any, once it has written everything delivered: its
    /// counts go to the hosts' and its lateness to `write_late`; the loop thread may run
    /// on its former CPUs again.
    pub(super) fn finish_writer(&mut self) {
        let Some(w) = self.writer.take() else { return };
        let t = w.finish();
        for (i, h) in self.hosts.iter_mut().enumerate() {
            h.tx += t.tx.get(i).copied().unwrap_or(0);
            h.tx_bytes += t.tx_bytes.get(i).copied().unwrap_or(0);
            h.tx_failed += t.tx_failed.get(i).copied().unwrap_or(0);
        }
        self.write_late.merge(&t.late);
        self.writer_cpu_ns += t.cpu_ns;
        if let Some(all) = self.loop_cpus.take() {
            let _ = sys::set_affinity(&all);
        }
    }
    /// Ends the hosts' backlogs still open at the run's `end`, counting them up to it.
    pub(super) fn close_backlogs(&mut self, end: SimTime) {
        for h in &mut self.hosts {
            if let Some(from) = h.backlog_since.take() {
                h.backlog_ns += end.saturating_since(from).as_nanos();
            }
        }
    }

    /// Reads at most [`BATCH`] packets from host `h` into `into` (a bounded batch per
    /// host per round, so one busy host cannot starve events); returns how many it read.
    fn read_batch(&mut self, h: usize, clock: &WallClock, into: &mut Vec<Packet>) -> usize {
        let mut got = 0;
        for _ in 0..BATCH {
            let fd = self.hosts[h].fd.as_raw_fd();
            let n = match sys::read_packet(fd, &mut self.buf) {
                Ok(Some(n)) => n,
                _ => break,
            };
            got += 1;
            // Stamped as it is read: the time it enters the network.
            self.take_packet(h, n, clock.now(), into);
        }
        got
    }

    /// Hands the `n` bytes just read from host `h` to the world as a packet entering the
    /// network at `now`, its bytes kept in the ring; counts what is not IPv4 as rejected.
    fn take_packet(&mut self, h: usize, n: usize, now: SimTime, into: &mut Vec<Packet>) {
        let host = &mut self.hosts[h];
        host.rx += 1;
        host.rx_bytes += n as u64;
        let b = &self.buf[..n];
        let Ok(info) = ipv4::parse(b) else {
            host.rejected += 1;
            return;
        };
        let uid = self.next_uid;
        let Ok(pkt) = self.map.packet(&info, host.node, uid, now) else {
            host.rejected += 1;
            return;
        };
        self.next_uid += 1;
        if pkt.flow == self.map.other {
            let c = self.conns.entry(conn_key(&info)).or_default();
            c.read += 1;
            c.read_bytes += n as u64;
        }
        if let Some((_, _, _, flags, _)) = info.tcp {
            let f = pkt.flow.0 as usize;
            let from_receiver = self.flow_dst.get(f) == Some(&pkt.src);
            if flags & 0x40 != 0 && flags & 0x02 == 0 && from_receiver {
                self.ece_acks[f] += 1;
            }
        }
        let slot = &mut self.ring[uid as usize % RING];
        slot.0 = uid;
        slot.1.clear();
        slot.1.extend_from_slice(b);
        into.push(pkt);
    }

    /// Host `h`'s backlog after a round: a `full` batch left packets waiting in the TUN,
    /// a standing queue in front of the host's link, until a round drains it.
    fn note_backlog(&mut self, h: usize, full: bool, now: SimTime) {
        let host = &mut self.hosts[h];
        match (full, host.backlog_since) {
            (true, None) => host.backlog_since = Some(now),
            (false, Some(from)) => {
                host.backlog_ns += now.saturating_since(from).as_nanos();
                host.backlog_since = None;
            }
            _ => {}
        }
    }
}

impl WallIo for TunIo {
    /// Waits until `until` (at most 50 ms), polling the hosts or sleeping.
    fn wait(&mut self, clock: &WallClock, until: SimTime) {
        self.clock_now = Some(*clock);
        self.polled_ready = false;
        let now = clock.now();
        // Wake at least every 50 ms to see a stop request.
        let limit = Dur::from_millis(50).as_nanos();
        let ns = until.as_nanos().saturating_sub(now.as_nanos()).min(limit);
        if ns == 0 {
            return;
        }
        // A wait within `spin`, or no longer than a sleep would cost this thread in CPU,
        // polls the hosts until the event instead: no more CPU than sleeping it, and
        // without the wake-up's latency.
        if ns <= self.spin_ns.max(self.sleep_cost_ns) {
            let mut ready = false;
            let mut t;
            loop {
                if sys::poll_in(&mut self.pollfds, Some(0)) {
                    ready = true;
                }
                t = clock.now();
                if ready || t.saturating_since(now).as_nanos() >= ns {
                    break;
                }
                std::hint::spin_loop();
            }
            let polled = t.saturating_since(now).as_nanos();
            self.idle_ns += polled;
            self.polled_ns += polled;
            self.polled_ready = ready;
            return;
        }
        // Sleep, waking `spin` early: the next wait polls the hosts until it is due.
        let asked = ns - self.spin_ns;
        self.sleeps += 1;
        let woke = sys::poll_in(&mut self.pollfds, Some(asked));
        self.polled_ready = woke;
        let slept = clock.now().saturating_since(now);
        self.idle_ns += slept.as_nanos();
        if !woke {
            let over = slept.as_nanos().saturating_sub(asked);
            self.wake_late.record(Dur::from_nanos(over));
        }
    }

    /// Reads a bounded batch from each host with packets waiting.
    fn read(&mut self, clock: &WallClock, into: &mut Vec<Packet>) {
        let only_ready = std::mem::take(&mut self.polled_ready);
        for h in 0..self.hosts.len() {
            // Right after a poll, a host it found empty is left for the next round (a
            // packet that came since waits a few µs; it enters the network when read).
            if only_ready && self.pollfds[h].revents == 0 && self.hosts[h].backlog_since.is_none() {
                continue;
            }
            let got = self.read_batch(h, clock, into);
            self.note_backlog(h, got == BATCH, clock.now());
        }
    }

    /// Writes a delivered packet's bytes (DSCP and CE written back) to its host's TUN.
    fn deliver(&mut self, now: SimTime, pkt: &Packet) {
        // With a writer, it measures how late each write began.
        if let (Some(c), None) = (&self.clock_now, &self.writer) {
            self.write_late.record(c.now().saturating_since(now));
        }
        let slot = &mut self.ring[pkt.uid as usize % RING];
        if slot.0 != pkt.uid {
            self.ring_lost += 1;
            return;
        }
        ipv4::write_back(&mut slot.1, pkt.dscp, pkt.ecn);
        if pkt.flow == self.map.other {
            if let Ok(info) = ipv4::parse(&slot.1) {
                let c = self.conns.entry(conn_key(&info)).or_default();
                c.delivered += 1;
                c.delivered_bytes += slot.1.len() as u64;
                c.payload_delivered += payload(&info);
            }
        }
        if pkt.ecn == Ecn::Ce {
            let last = self.ce_delivered.len() - 1;
            self.ce_delivered[(pkt.flow.0 as usize).min(last)] += 1;
        }
        let Some(h) = self.host_of_node.get(pkt.dst.0 as usize).copied().flatten() else {
            return;
        };
        if let Some(p) = &mut self.pcap {
            p.record(now, &slot.1);
        }
        if let Some(w) = &mut self.writer {
            w.send(h, &slot.1, now, self.clock_now);
            return;
        }
        let host = &mut self.hosts[h];
        if sys::write_packet(host.fd.as_raw_fd(), &slot.1) {
            host.tx += 1;
            host.tx_bytes += slot.1.len() as u64;
        } else {
            host.tx_failed += 1;
        }
    }

    /// Whether the run was asked to stop early.
    fn stop(&self) -> bool {
        self.stop
            .as_ref()
            .is_some_and(|s| s.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::FlowId;
    use std::time::Duration;
    /// A non-blocking datagram socket pair: one end stands for a host's TUN device, the
    /// other for the host's kernel writing to and reading from it.
    fn socket_pair() -> (OwnedFd, OwnedFd) {
        use std::os::fd::FromRawFd;
        let mut fds = [0; 2];
        // SAFETY: socketpair writes two descriptors into `fds`.
        let r = unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        };
        assert_eq!(r, 0, "socketpair: {}", std::io::Error::last_os_error());
        // SAFETY: fresh descriptors we own.
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
    }

    /// A UDP/IPv4 packet from `src` to `dst` with 100 payload bytes.
    fn udp_packet(src: [u8; 4], dst: [u8; 4]) -> Vec<u8> {
        let total = 20 + 8 + 100;
        let mut b = vec![0u8; total];
        b[0] = 0x45;
        b[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        b[8] = 64;
        b[9] = PROTO_UDP;
        b[12..16].copy_from_slice(&src);
        b[16..20].copy_from_slice(&dst);
        let c = ipv4::header_checksum(&b);
        b[10..12].copy_from_slice(&c.to_be_bytes());
        b[20..22].copy_from_slice(&4000u16.to_be_bytes());
        b[22..24].copy_from_slice(&5000u16.to_be_bytes());
        b[24..26].copy_from_slice(&108u16.to_be_bytes());
        b
    }

    /// A datapath over `n` hosts (10.0.0.1, 10.0.0.2, …) on socket pairs, no flows; with
    /// the hosts' ends of the pairs.
    fn tun_io(n: u8) -> (TunIo, Vec<OwnedFd>) {
        let (mut devs, mut ends) = (Vec::new(), Vec::new());
        for i in 0..n {
            let (dev, end) = socket_pair();
            devs.push(HostIo::new(NodeId(i as u32), dev));
            ends.push(end);
        }
        let map = FlowMap::new(
            (0..n).map(|i| ([10, 0, 0, i + 1], NodeId(i as u32))),
            FlowId(0),
        );
        let nodes = (0..n as usize).map(Some).collect();
        let io = TunIo::new(devs, nodes, map, Vec::new(), None, 0, None);
        (io, ends)
    }

    #[test]
    fn a_wait_shorter_than_a_sleep_costs_polls_instead_of_sleeping() {
        let (mut io, ends) = tun_io(1);
        let clock = WallClock::start();
        let us = Dur::from_micros;
        // A sleep costs 10 s here: a 20 ms wait polls the host to its end, never sleeps
        // (the waits are long enough that a loaded machine cannot make them 0).
        io.sleep_cost_ns = 10_000_000_000;
        let t0 = clock.now();
        io.wait(&clock, t0 + us(20_000));
        assert!(clock.now() >= t0 + us(20_000));
        assert_eq!(io.sleeps, 0);
        assert!(io.polled_ns > 0 && io.idle_ns == io.polled_ns);
        assert!(!io.polled_ready);
        // A packet waiting ends the poll: the loop reads it.
        let pkt = udp_packet([10, 0, 0, 1], [10, 0, 0, 1]);
        assert!(sys::write_packet(ends[0].as_raw_fd(), &pkt));
        io.wait(&clock, clock.now() + Dur::from_secs(1));
        assert!(io.polled_ready);
        assert_eq!(io.sleeps, 0);
        let mut got = Vec::new();
        io.read(&clock, &mut got);
        assert_eq!(got.len(), 1);
        // Without the measured cost (0), the same wait sleeps.
        io.sleep_cost_ns = 0;
        io.wait(&clock, clock.now() + us(20_000));
        assert_eq!(io.sleeps, 1);
    }

    #[test]
    fn after_a_poll_only_the_hosts_it_found_readable_are_read() {
        let (mut io, ends) = tun_io(2);
        let clock = WallClock::start();
        io.sleep_cost_ns = 10_000_000_000;
        // Each ring slot holds a full packet from the start: reading does not allocate.
        assert!(io.ring.iter().all(|(_, b)| b.capacity() >= SLOT));
        let slot0 = io.ring[0].1.as_ptr();
        let (a, b) = ([10, 0, 0, 1], [10, 0, 0, 2]);
        assert!(sys::write_packet(ends[0].as_raw_fd(), &udp_packet(a, b)));
        io.wait(&clock, clock.now() + Dur::from_secs(1));
        assert!(io.polled_ready);
        // Host b's packet comes after the poll: this round reads a's only (no EAGAIN
        // read of b) …
        assert!(sys::write_packet(ends[1].as_raw_fd(), &udp_packet(b, a)));
        let mut got = Vec::new();
        io.read(&clock, &mut got);
        assert_eq!(got.iter().map(|p| p.src).collect::<Vec<_>>(), [NodeId(0)]);
        assert_eq!(io.ring[0].1.as_ptr(), slot0);
        assert_eq!(io.ring[0].1.len(), 128);
        // … and a round that did not begin with a poll (an event was due) reads every
        // host.
        io.wait(&clock, clock.now());
        assert!(!io.polled_ready);
        io.read(&clock, &mut got);
        assert_eq!(
            got.iter().map(|p| p.src).collect::<Vec<_>>(),
            [NodeId(0), NodeId(1)]
        );
        assert_eq!((io.hosts[0].rx, io.hosts[1].rx), (1, 1));
    }

    #[test]
    fn a_writer_thread_writes_the_delivered_packets_in_order_and_counts_them() {
        let (mut io, ends) = tun_io(2);
        let clock = WallClock::start();
        io.sleep_cost_ns = 10_000_000_000;
        let (a, b) = ([10, 0, 0, 1], [10, 0, 0, 2]);
        for i in 0..50u8 {
            let mut p = udp_packet(a, b);
            p[28] = i;
            assert!(sys::write_packet(ends[0].as_raw_fd(), &p));
        }
        io.wait(&clock, clock.now() + Dur::from_secs(1));
        let mut got = Vec::new();
        io.read(&clock, &mut got);
        assert_eq!(got.len(), 50);
        let cpus = sys::affinity();
        // On a machine with one CPU there is no writer: the loop writes, with the same
        // results.
        let apart = io.start_writer();
        assert_eq!(apart, cpus.as_ref().is_some_and(|c| c.len() > 1));
        if apart {
            // The loop is pinned to its CPU meanwhile.
            assert_eq!(sys::affinity().map(|c| c.len()), Some(1));
        }
        for p in &got {
            io.deliver(clock.now(), p);
        }
        io.finish_writer();
        assert_eq!(sys::affinity(), cpus);
        assert_eq!(io.wrote_apart, apart);
        // Every packet reached b, in the order delivered, and is counted once.
        let mut buf = [0u8; 2048];
        for i in 0..50u8 {
            let n = sys::read_packet(ends[1].as_raw_fd(), &mut buf).unwrap();
            assert_eq!(n, Some(128));
            assert_eq!(buf[28], i);
        }
        assert_eq!(
            sys::read_packet(ends[1].as_raw_fd(), &mut buf).unwrap(),
            None
        );
        assert_eq!((io.hosts[1].tx, io.hosts[1].tx_bytes), (50, 50 * 128));
        assert_eq!((io.hosts[0].tx, io.hosts[1].tx_failed), (0, 0));
        assert_eq!(io.write_late.count(), 50);
        // A second finish changes nothing.
        io.finish_writer();
        assert_eq!(io.hosts[1].tx, 50);
    }

    /// The TUN datapath with a busy event loop: the first delivery takes 50 ms (as a
    /// loaded machine's events can), and the host sends its second packet as it starts.
    struct BusyLoop {
        io: TunIo,
        host_a: OwnedFd,
        first: Vec<u8>,
        second: Vec<u8>,
        sent_first: bool,
        /// (delivery time, the packet's `created`) of each delivered packet.
        delivered: Vec<(SimTime, SimTime)>,
    }

    impl WallIo for BusyLoop {
        fn wait(&mut self, clock: &WallClock, until: SimTime) {
            self.io.wait(clock, until);
        }
        fn read(&mut self, clock: &WallClock, into: &mut Vec<Packet>) {
            if !self.sent_first {
                self.sent_first = true;
                assert!(sys::write_packet(self.host_a.as_raw_fd(), &self.first));
            }
            self.io.read(clock, into);
        }
        fn deliver(&mut self, now: SimTime, pkt: &Packet) {
            self.io.deliver(now, pkt);
            self.delivered.push((now, pkt.created));
            if self.delivered.len() == 1 {
                assert!(sys::write_packet(self.host_a.as_raw_fd(), &self.second));
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    #[test]
    fn a_packet_enters_the_network_when_it_is_read_not_when_the_loop_began() {
        // a — b, 10 ms one way. The second packet waits in a's device while the loop is
        // busy for 50 ms: it must cross the link after it was read, so it reaches b at
        // least 50 + 10 ms after the first (stamped at the loop's start, it would arrive
        // 10 ms after the first, before the datapath had even seen it).
        let text = "duration = \"0.3s\"\n[[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n\
                    [[link]]\na = \"a\"\nb = \"b\"\nrate = \"100Mbps\"\ndelay = \"10ms\"\n";
        let sc = crate::scenario::parse(text, crate::scenario::Format::Toml).unwrap();
        let mut w = crate::scenario::build(&sc).unwrap();
        let hosts = [NodeId(0), NodeId(1)];
        let node_ifaces: Vec<Vec<crate::net::IfaceId>> =
            w.nodes.iter().map(|n| n.ifaces.clone()).collect();
        w.routes = crate::net::Routes::compute(w.nodes.len(), &w.ifaces, &node_ifaces, &hosts);
        let (addr_a, addr_b) = (w.nodes[0].addr, w.nodes[1].addr);
        let (dev_a, host_a) = socket_pair();
        let (dev_b, _host_b) = socket_pair();
        let io_hosts: Vec<HostIo> = [(NodeId(0), dev_a), (NodeId(1), dev_b)]
            .into_iter()
            .map(|(node, fd)| HostIo::new(node, fd))
            .collect();
        let map = FlowMap::new([(addr_a, NodeId(0)), (addr_b, NodeId(1))], FlowId(0));
        let io = TunIo::new(
            io_hosts,
            vec![Some(0), Some(1)],
            map,
            Vec::new(),
            None,
            0,
            None,
        );
        let mut busy = BusyLoop {
            io,
            host_a,
            first: udp_packet(addr_a, addr_b),
            second: udp_packet(addr_a, addr_b),
            sent_first: false,
            delivered: Vec::new(),
        };
        w.run_wall(&mut busy, true).unwrap();
        let d = &busy.delivered;
        assert_eq!(d.len(), 2, "{d:?}");
        let ms = Dur::from_millis;
        // Each packet crossed the link after it was read …
        assert!(
            d[0].0 >= d[0].1 + ms(10) && d[1].0 >= d[1].1 + ms(10),
            "{d:?}"
        );
        // … and the second was read after the busy 50 ms, not before them.
        assert!(d[1].1 >= d[0].0 + ms(50), "{d:?}");
        assert!(d[1].0 >= d[0].0 + ms(60), "{d:?}");
        assert_eq!(busy.io.hosts[1].tx, 2);
        // Traffic of no flow is counted per 5-tuple as it is read and as it is delivered
        // (`live_conns`): two 128-byte datagrams of 100 payload bytes each.
        let conns: Vec<_> = busy.io.conns.iter().collect();
        assert_eq!(conns.len(), 1, "{conns:?}");
        let (key, c) = conns[0];
        assert_eq!(*key, (PROTO_UDP, addr_a, 4000, addr_b, 5000));
        assert_eq!((c.read, c.read_bytes), (2, 256), "{c:?}");
        assert_eq!(
            (c.delivered, c.delivered_bytes, c.payload_delivered),
            (2, 256, 200),
            "{c:?}"
        );
    }
}

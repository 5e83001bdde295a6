//! pTCP over a small simulated path: a FIFO bottleneck (rate, buffer) and a delay each
//! way, with random or chosen losses of data packets. Every bind is checked for window
//! room by the engine itself (a debug assertion and `binds_without_room`).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use super::*;
use crate::rng::RngStream;
use crate::tcp::Variant;
use crate::time::Dur;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// A data packet leaves the bottleneck (index into `Net::wire`).
    Data(usize),
    /// An ACK reaches the sender.
    Ack(usize),
    /// Pipe timer (pipe, end).
    Timer(usize, u8),
    /// The application writes (bytes).
    Write(u64),
}

/// A data packet as sent: time, pipe, header.
#[derive(Clone, Copy, Debug)]
struct Sent {
    t: SimTime,
    h: TcpHeader,
    dropped: bool,
}

struct Net {
    pt: Ptcp,
    now: SimTime,
    q: BinaryHeap<Reverse<(SimTime, u64, Ev)>>,
    n: u64,
    /// Serialisation time of a full packet; one-way delay.
    tx: Dur,
    delay: Dur,
    /// Bottleneck: when it is free, and packets waiting (buffer limit).
    free_at: SimTime,
    queued: VecDeque<SimTime>,
    buffer: usize,
    loss: f64,
    rng: RngStream,
    /// Drop the first transmission of the data packet on this pipe with this virtual seq.
    drop_one: Option<(u8, u64)>,
    /// Drop the first packet carrying stream offset `dsn`.
    drop_dsn: Option<u64>,
    wire: Vec<TcpHeader>,
    /// Every data packet sent, in order.
    sent: Vec<Sent>,
}

impl Net {
    /// A loss-free 10 Mb/s path of 20 ms one way with a 100-packet buffer (seed 1), for
    /// tests that drop one chosen packet.
    fn clean(pt: Ptcp) -> Self {
        Net::new(pt, 10.0, 20, 100, 0.0, 1)
    }

    /// The one packet the test dropped.
    fn lost(&self) -> Sent {
        self.sent
            .iter()
            .find(|s| s.dropped)
            .copied()
            .expect("one packet dropped")
    }

    fn new(pt: Ptcp, rate_mbps: f64, delay_ms: u64, buffer: usize, loss: f64, seed: u64) -> Self {
        Net {
            pt,
            now: SimTime::ZERO,
            q: BinaryHeap::new(),
            n: 0,
            tx: Dur::from_secs_f64(1500.0 * 8.0 / (rate_mbps * 1e6)),
            delay: Dur::from_millis(delay_ms),
            free_at: SimTime::ZERO,
            queued: VecDeque::new(),
            buffer,
            loss,
            rng: RngStream::from_seed(seed),
            drop_one: None,
            drop_dsn: None,
            wire: Vec::new(),
            sent: Vec::new(),
        }
    }

    fn at(&mut self, t: SimTime, e: Ev) {
        self.n += 1;
        self.q.push(Reverse((t, self.n, e)));
    }

    /// Puts the engines' output on the path, re-arms timers.
    fn send(&mut self, out: &mut Vec<TcpHeader>, reverse: bool) {
        for h in out.drain(..) {
            if reverse {
                let i = self.wire.len();
                self.wire.push(h);
                let t = self.now + self.delay;
                self.at(t, Ev::Ack(i));
                continue;
            }
            let mut dropped = h.len > 0 && self.rng.bernoulli(self.loss);
            if let Some((p, s)) = self.drop_one {
                if h.subflow == p && h.seq == s && h.flags & tcp_flags::SYN == 0 {
                    dropped = true;
                    self.drop_one = None;
                }
            }
            if self.drop_dsn.is_some_and(|d| h.len > 0 && h.dsn == d) {
                dropped = true;
                self.drop_dsn = None;
            }
            while self.queued.front().is_some_and(|&d| d <= self.now) {
                self.queued.pop_front();
            }
            if self.queued.len() >= self.buffer {
                dropped = true;
            }
            self.sent.push(Sent {
                t: self.now,
                h,
                dropped,
            });
            if dropped {
                continue;
            }
            let start = self.free_at.max(self.now);
            self.free_at = start + self.tx;
            self.queued.push_back(self.free_at);
            let i = self.wire.len();
            self.wire.push(h);
            let t = self.free_at + self.delay;
            self.at(t, Ev::Data(i));
        }
        for p in 0..self.pt.pipes.len() {
            for (end, next) in [
                (SENDER, self.pt.pipes[p].snd.next_timer()),
                (RECEIVER, self.pt.pipes[p].rcv.next_timer()),
            ] {
                if let Some(n) = next {
                    if n < self.pt.pipes[p].armed[end as usize] {
                        self.pt.pipes[p].armed[end as usize] = n;
                        self.at(n, Ev::Timer(p, end));
                    }
                }
            }
        }
    }

    fn run(&mut self, until: SimTime) {
        let mut out = Vec::new();
        if self.now == SimTime::ZERO {
            self.pt.start(SimTime::ZERO, &mut out);
            self.send(&mut out, false);
        }
        while let Some(Reverse((t, _, e))) = self.q.pop() {
            if t > until {
                self.q.push(Reverse((t, 0, e)));
                break;
            }
            self.now = t;
            match e {
                Ev::Data(i) => {
                    let h = self.wire[i];
                    self.pt
                        .on_segment(t, h.subflow as usize, &h, false, &mut out);
                    self.send(&mut out, true);
                }
                Ev::Ack(i) => {
                    let h = self.wire[i];
                    self.pt.on_ack(t, h.subflow as usize, &h, &mut out);
                    self.send(&mut out, false);
                }
                Ev::Timer(p, end) => {
                    if self.pt.pipes[p].armed[end as usize] != t {
                        continue;
                    }
                    self.pt.pipes[p].armed[end as usize] = SimTime::NEVER;
                    self.pt.on_timer(t, p, end, &mut out);
                    self.send(&mut out, end == RECEIVER);
                }
                Ev::Write(b) => {
                    self.pt.app_write(t, b, &mut out);
                    self.send(&mut out, false);
                }
            }
            if self.pt.is_done() {
                break;
            }
        }
    }
}

fn sack() -> TcpConfig {
    TcpConfig {
        variant: Variant::Sack,
        mss: 1000,
        ..TcpConfig::default()
    }
}

fn cfg(w: u32, buf: u64) -> PtcpConfig {
    PtcpConfig {
        pipes: w,
        send_buffer: Bytes(buf),
        recv_buffer: Bytes(buf),
        binding: PtcpBinding::Unbind,
        redundant_after_timeout: false,
        fast_reassign: true,
    }
}

/// The application's view: delivered ranges are contiguous from 0 to `n`.
fn assert_stream(pt: &Ptcp, n: u64, at: &str) {
    let log = pt.rcv.log.as_ref().expect("log on");
    let mut next = 0;
    for &(a, b) in log {
        assert_eq!(
            a, next,
            "{at}: delivery out of order or twice: {a}..{b} after {next}"
        );
        assert!(b > a, "{at}");
        next = b;
    }
    assert_eq!(next, n, "{at}: the application got {next} of {n} bytes");
    assert_eq!(pt.rcv.app_bytes, n, "{at}");
}

#[test]
fn every_byte_reaches_the_application_once_and_in_order_under_random_loss() {
    let n = 400_017;
    for w in [1, 2, 10] {
        for seed in [1, 2] {
            let at = format!("w = {w}, seed {seed}");
            let mut pt = Ptcp::new(&cfg(w, 64_000), &sack(), Some(n));
            pt.rcv.log = Some(Vec::new());
            let mut net = Net::new(pt, 10.0, 20, 40, 0.03, seed);
            net.run(SimTime::from_secs(600));
            let pt = &net.pt;
            assert!(pt.is_done(), "{at}: transfer finished");
            assert_stream(pt, n, &at);
            let s = pt.engine.stats;
            assert!(s.binds >= n / 1000, "{at}: {s:?}");
            assert_eq!(s.binds_without_room, 0, "{at}: bound without window room");
            let rtx: u64 = pt.pipes.iter().map(|p| p.snd.stats().retransmits).sum();
            assert!(rtx > 0, "{at}: losses happened");
            if w > 1 {
                assert!(s.reassigns > 0, "{at}: {s:?}");
                assert!(pt.pipes.iter().all(|p| p.stats.data_bytes > 0), "{at}");
            } else {
                assert_eq!(s.reassigns + s.redundant, 0, "{at}: no other pipe");
            }
        }
    }
}

#[test]
fn pipes_with_handshakes_and_delayed_acks_open_carry_and_close() {
    let tcp = TcpConfig {
        handshake: true,
        delayed_ack: true,
        ..sack()
    };
    let mut pt = Ptcp::new(&cfg(3, 32_000), &tcp, Some(150_500));
    pt.rcv.log = Some(Vec::new());
    let mut net = Net::new(pt, 10.0, 20, 40, 0.02, 5);
    net.run(SimTime::from_secs(600));
    assert!(
        net.pt.is_done(),
        "every pipe closed with its FIN acknowledged"
    );
    assert_stream(&net.pt, 150_500, "handshake");
    assert!(net.pt.pipes.iter().all(|p| p.established && p.closed));
    let syns = net
        .sent
        .iter()
        .filter(|s| s.h.flags & tcp_flags::SYN != 0)
        .count();
    assert!(syns >= 3, "{syns}");
}

#[test]
fn data_is_bound_only_to_pipes_with_window_room() {
    // Small windows, a small buffer and heavy loss: many binds in every pipe state.
    let tcp = TcpConfig {
        max_window: 6,
        ..sack()
    };
    let mut net = Net::new(
        Ptcp::new(&cfg(5, 20_000), &tcp, Some(300_000)),
        2.0,
        30,
        8,
        0.05,
        7,
    );
    let mut binds = 0;
    let mut checked = 0;
    // Step through the run; at every step each pipe's bound-but-unsent data is zero,
    // and no pipe holds more virtual data in flight than its window allows.
    let mut t = SimTime::ZERO;
    while !net.pt.is_done() && t < SimTime::from_secs(600) {
        t += Dur::from_millis(5);
        net.run(t);
        for p in &net.pt.pipes {
            assert!(p.pending.is_none(), "a chunk bound to a pipe waits unsent");
            checked += 1;
        }
        binds = net.pt.engine.stats.binds;
    }
    assert!(net.pt.is_done());
    assert!(binds >= 300 && checked > 0);
    assert_eq!(net.pt.engine.stats.binds_without_room, 0);
}

#[test]
fn a_fast_reassigned_segment_goes_on_another_pipe_before_its_pipe_times_out() {
    let mut net = Net::clean(Ptcp::new(&cfg(2, 200_000), &sack(), Some(200_000)));
    // Drop pipe 0's 20th virtual segment once.
    net.drop_one = Some((0, 19_000));
    net.run(SimTime::from_secs(60));
    assert!(net.pt.is_done());
    let lost = net.lost();
    assert_eq!(lost.h.subflow, 0);
    let resent = net
        .sent
        .iter()
        .find(|s| s.t >= lost.t && s.h.subflow == 1 && s.h.len > 0 && s.h.dsn == lost.h.dsn)
        .copied()
        .expect("its data went on pipe 1");
    // Pipe 0's RTO when it sent the segment: at least min_rto (200 ms), above the RTT.
    let rto = Dur::from_micros(lost.h.view.rto_us as u64).max(Dur::from_millis(200));
    assert!(
        resent.t < lost.t + rto,
        "re-sent at {:?}, lost at {:?}, RTO {:?}",
        resent.t,
        lost.t,
        rto
    );
    assert!(net.pt.engine.stats.reassigns >= 1);
    assert_eq!(net.pt.pipes[0].snd.stats().timeouts, 0);
}

#[test]
fn without_fast_reassign_lost_data_waits_for_its_own_pipe() {
    // The ablation twin of the test above (`fast_reassign = false`): nothing is presumed
    // lost, and the data's first copy after the loss is pipe 0's own retransmission.
    let c = PtcpConfig {
        fast_reassign: false,
        ..cfg(2, 200_000)
    };
    let mut pt = Ptcp::new(&c, &sack(), Some(200_000));
    pt.rcv.log = Some(Vec::new());
    let mut net = Net::clean(pt);
    net.drop_one = Some((0, 19_000));
    net.run(SimTime::from_secs(60));
    assert!(net.pt.is_done());
    assert_stream(&net.pt, 200_000, "no fast reassign");
    let lost = net.lost();
    assert_eq!(net.pt.engine.stats.reassigns, 0);
    let first = net
        .sent
        .iter()
        .find(|s| s.t > lost.t && s.h.len > 0 && s.h.dsn == lost.h.dsn)
        .copied()
        .expect("the data went again");
    assert_eq!(first.h.subflow, 0, "its own pipe resent it first");
    let d = toml::from_str::<PtcpConfig>("pipes = 3").unwrap();
    assert!(d.fast_reassign, "on by default");
    let d = toml::from_str::<PtcpConfig>("pipes = 3\nfast_reassign = false").unwrap();
    assert!(!d.fast_reassign);
}

#[test]
fn a_fast_retransmitted_segments_data_also_goes_on_a_second_pipe() {
    // Kept bound: unbound, fast reassign (which comes first) has already taken the
    // data off the segment and its fast retransmission is hollow.
    let c = PtcpConfig {
        binding: PtcpBinding::Keep,
        ..cfg(3, 200_000)
    };
    let mut net = Net::clean(Ptcp::new(&c, &sack(), Some(300_000)));
    net.drop_one = Some((1, 30_000));
    net.run(SimTime::from_secs(60));
    assert!(net.pt.is_done());
    let lost = net.lost();
    assert_eq!(net.pt.pipes[1].snd.stats().fast_retransmits, 1);
    let fast_rtx = net
        .sent
        .iter()
        .find(|s| s.t > lost.t && s.h.subflow == 1 && s.h.seq == lost.h.seq)
        .copied()
        .expect("pipe 1 retransmitted it");
    assert_eq!(
        fast_rtx.h.dsn, lost.h.dsn,
        "the retransmission carries the same data"
    );
    let others = net
        .sent
        .iter()
        .filter(|s| s.t > lost.t && s.h.subflow != 1 && s.h.len > 0 && s.h.dsn == lost.h.dsn)
        .count();
    assert!(others >= 1, "the data also went on another pipe");
}

/// Pipe 0's 20th virtual segment dropped once on a clean path (w = 2), with `binding`:
/// the run, and every later transmission of that virtual segment on pipe 0.
fn reassigned_once(binding: PtcpBinding) -> (Net, Vec<Sent>) {
    let c = PtcpConfig {
        binding,
        ..cfg(2, 200_000)
    };
    let mut pt = Ptcp::new(&c, &sack(), Some(200_000));
    pt.rcv.log = Some(Vec::new());
    let mut net = Net::clean(pt);
    net.drop_one = Some((0, 19_000));
    net.run(SimTime::from_secs(60));
    assert!(net.pt.is_done());
    assert_stream(&net.pt, 200_000, "reassigned once");
    let lost = net.lost();
    let again = net
        .sent
        .iter()
        .filter(|s| s.t > lost.t && s.h.subflow == 0 && s.h.seq == lost.h.seq)
        .copied()
        .collect();
    (net, again)
}

#[test]
fn an_unbound_retransmission_carries_no_duplicate_data() {
    // Fast reassign presumes the chunk lost before pipe 0 retransmits its virtual
    // segment; unbound (P4 §4.1), that retransmission is hollow, the chunk goes on
    // pipe 1 and the receiver gets the data once.
    let (net, again) = reassigned_once(PtcpBinding::Unbind);
    assert!(net.pt.engine.stats.reassigns >= 1);
    assert!(
        !again.is_empty(),
        "pipe 0 retransmitted the virtual segment"
    );
    assert!(
        again.iter().all(|s| s.h.len == 0),
        "hollow: {:?}",
        again.iter().map(|s| s.h.len).collect::<Vec<_>>()
    );
    assert!(net.pt.engine.stats.unbinds >= 1);
    assert_eq!(net.pt.rcv.duplicates, 0, "no duplicate data arrived");
    // Kept bound, the same retransmission carries the chunk a second time.
    let (net, again) = reassigned_once(PtcpBinding::Keep);
    let lost = net.lost();
    assert!(
        again.iter().any(|s| s.h.len > 0 && s.h.dsn == lost.h.dsn),
        "kept bound, the retransmission carries the data again"
    );
    assert_eq!(net.pt.engine.stats.unbinds, 0);
    assert!(net.pt.rcv.duplicates >= 1, "a duplicate arrived");
}

#[test]
fn a_timeout_is_not_redundantly_striped_by_default() {
    // The last chunk is lost (as below): only its own pipe resends it.
    let n = 50_000;
    let mut net = Net::clean(Ptcp::new(&cfg(2, 100_000), &sack(), Some(n)));
    net.drop_dsn = Some(n - 1000);
    net.run(SimTime::from_secs(60));
    assert!(net.pt.is_done());
    let lost = net.lost();
    assert_eq!(
        net.pt.pipes[lost.h.subflow as usize].snd.stats().timeouts,
        1
    );
    assert_eq!(net.pt.engine.stats.redundant, 0);
    assert!(net
        .sent
        .iter()
        .filter(|s| s.t > lost.t && s.h.len > 0 && s.h.dsn == lost.h.dsn)
        .all(|s| s.h.subflow == lost.h.subflow));
}

#[test]
fn data_its_pipe_resends_after_a_timeout_also_goes_on_another_pipe() {
    // The last chunk is lost: nothing sent later is acknowledged, so no fast reassign
    // and no fast retransmit; its pipe times out, and with `redundant_after_timeout`
    // redundant striping sends the chunk on the other pipe too.
    let n = 50_000;
    let c = PtcpConfig {
        redundant_after_timeout: true,
        ..cfg(2, 100_000)
    };
    let mut pt = Ptcp::new(&c, &sack(), Some(n));
    pt.rcv.log = Some(Vec::new());
    let mut net = Net::clean(pt);
    net.drop_dsn = Some(n - 1000);
    net.run(SimTime::from_secs(60));
    assert!(net.pt.is_done());
    assert_stream(&net.pt, n, "tail loss");
    let lost = net.lost();
    let a = lost.h.subflow as usize;
    assert_eq!(net.pt.pipes[a].snd.stats().timeouts, 1);
    assert_eq!(net.pt.engine.stats.reassigns, 0);
    assert_eq!(net.pt.engine.stats.redundant, 1);
    let copies: Vec<u8> = net
        .sent
        .iter()
        .filter(|s| s.t > lost.t && s.h.len > 0 && s.h.dsn == lost.h.dsn)
        .map(|s| s.h.subflow)
        .collect();
    assert!(
        copies.contains(&lost.h.subflow),
        "its pipe resent it: {copies:?}"
    );
    assert!(
        copies.iter().any(|&p| p != lost.h.subflow),
        "and another pipe: {copies:?}"
    );
}

#[test]
fn redundant_striping_queues_a_retransmitted_chunk_for_another_pipe_only() {
    let mut e = Engine::new(1000, 2, 10_000, 10_000, Some(3000));
    assert_eq!(e.send(0), Answer::Data(0));
    let t = e.next_tx();
    e.transmitted(0, 0, t);
    e.redundant(0);
    // Pipe 0 itself is not given it again; pipe 1 is, before new data.
    assert_eq!(e.send(0), Answer::Data(1));
    assert_eq!(e.send(1), Answer::Data(0));
    assert_eq!(e.stats.redundant, 1);
    // Acknowledged data is never queued.
    e.ack_chunk(2);
    let t = e.next_tx();
    e.transmitted(2, 0, t);
    e.redundant(2);
    assert_eq!(e.send(1), Answer::Freeze);
}

#[test]
fn fast_reassign_presumes_a_chunk_lost_after_three_later_acknowledged_sends() {
    let mut e = Engine::new(1000, 2, 10_000, 10_000, None);
    let mut tx = Vec::new();
    for c in 0..5 {
        assert_eq!(e.send((c % 2) as u16), Answer::Data(c));
        let t = e.next_tx();
        e.transmitted(c, (c % 2) as u16, t);
        tx.push(t);
    }
    // Chunks 1..=3 arrive; chunk 0 (pipe 0) is still out.
    for c in 1..3 {
        e.ack_chunk(c);
        e.acked_tx(tx[c as usize]);
        assert_eq!(e.presume_lost(), 0, "only {c} later sends acknowledged");
    }
    e.ack_chunk(3);
    e.acked_tx(tx[3]);
    assert_eq!(e.presume_lost(), 1);
    assert_eq!(e.send(0), Answer::Data(5), "not back on its own pipe");
    assert_eq!(
        e.send(1),
        Answer::Data(0),
        "reassigned to pipe 1 before new data"
    );
    assert_eq!(e.stats.reassigns, 1);
}

#[test]
fn a_pipe_with_window_but_no_data_freezes_and_resumes_when_the_application_writes() {
    let mut pt = Ptcp::new(&cfg(2, 100_000), &sack(), None);
    pt.engine = Engine::new(1000, 2, 100_000, 100_000, None).app_limited();
    pt.rcv.log = Some(Vec::new());
    let mut net = Net::clean(pt);
    net.at(SimTime::from_secs(1), Ev::Write(3_000));
    net.run(SimTime::from_millis(500));
    // Nothing written yet: both pipes asked, got FREEZE and sent nothing.
    assert!(net.pt.pipes.iter().all(|p| p.frozen));
    assert_eq!(net.pt.engine.stats.freezes, 2);
    assert!(net.sent.is_empty(), "{} packets sent", net.sent.len());
    net.run(SimTime::from_secs(2));
    // The write resumed them: the data went out at once and arrived.
    assert!(net.pt.engine.stats.resumes >= 1);
    let first = net.sent.iter().find(|s| s.h.len > 0).expect("data sent");
    assert_eq!(first.t, SimTime::from_secs(1));
    assert_eq!(net.pt.rcv.app_bytes, 3_000);
    assert!(
        net.pt.pipes.iter().all(|p| p.frozen),
        "frozen again, no data left"
    );
}

#[test]
fn the_receive_buffer_limits_what_is_bound() {
    // A 4-segment receive buffer: the stream never runs more than 4 KB past the data ACK.
    let mut pt = Ptcp::new(&cfg(4, 4_000), &sack(), Some(100_000));
    pt.rcv.log = Some(Vec::new());
    let mut net = Net::new(pt, 10.0, 20, 100, 0.02, 3);
    net.run(SimTime::from_secs(600));
    assert!(net.pt.is_done());
    assert_stream(&net.pt, 100_000, "small buffer");
    assert!(net.pt.rcv.max_held <= 3_000, "{}", net.pt.rcv.max_held);
    assert_eq!(net.pt.rcv.refused, 0, "the sender kept to the window");
}

#[test]
fn bad_values_name_the_key() {
    let mut c = cfg(0, 64_000);
    assert_eq!(c.validate(1460).unwrap_err().key, "pipes");
    c.pipes = 256;
    assert_eq!(c.validate(1460).unwrap_err().key, "pipes");
    c.pipes = 2;
    c.recv_buffer = Bytes(1000);
    assert_eq!(c.validate(1460).unwrap_err().key, "recv_buffer");
    let e = toml::from_str::<PtcpConfig>("pipes = 2\nbuffer = 3")
        .unwrap_err()
        .to_string();
    assert!(e.contains("send_buffer"), "{e}");
    let d = toml::from_str::<PtcpConfig>("pipes = 3").unwrap();
    assert_eq!((d.send_buffer.0, d.recv_buffer.0), (256_000, 256_000));
    assert_eq!(d.binding, PtcpBinding::Unbind);
    assert!(!d.redundant_after_timeout);
    let d = toml::from_str::<PtcpConfig>(
        "pipes = 3\nbinding = \"keep\"\nredundant_after_timeout = true",
    )
    .unwrap();
    assert_eq!(d.binding, PtcpBinding::Keep);
    assert!(d.redundant_after_timeout);
    let e = toml::from_str::<PtcpConfig>("pipes = 3\nbinding = \"rebind\"")
        .unwrap_err()
        .to_string();
    assert!(e.contains("unbind") && e.contains("keep"), "{e}");
}

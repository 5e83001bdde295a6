//! Test harness: one sender and one receiver joined by a simple path, driven by a tiny
//! event loop over [`EventQueue`].
//!
//! ```text
//!   sender ─► [loss model] ─► [DropTail buffer ─► bottleneck rate] ─► delay ─► receiver
//!   sender ◄──────────────── delay ◄── [ACK loss] ◄──────────────────────────── receiver
//! ```
//!
//! Timers follow the host contract: after every call the endpoint's `next_timer()` is
//! read, and an event is scheduled if it is earlier than the one already armed; stale
//! timer events still call `on_timer`, which must then do nothing.

use std::collections::{BTreeSet, VecDeque};

use super::{TcpConfig, TcpReceiver, TcpSender};
use crate::engine::EventQueue;
use crate::packet::{TcpHeader, TCP_IP_HEADER};
use crate::rng::RngStream;
use crate::time::{Dur, Rate, SimTime};

/// Which data-direction packets the path loses.
#[derive(Clone, Debug)]
pub enum Loss {
    /// Nothing.
    None,
    /// Each packet independently with probability `p`.
    Bernoulli(f64, RngStream),
    /// With probability `p` a burst starts and drops `len` consecutive packets.
    Burst {
        /// Probability a burst starts at a packet.
        p: f64,
        /// Packets per burst.
        len: u32,
        /// Random stream.
        rng: RngStream,
        /// Packets still to drop in the current burst.
        left: u32,
    },
    /// The first transmission of the data segments starting at these bytes.
    SeqOnce(BTreeSet<u64>),
    /// Every data segment sent in `[from, to)`: an outage.
    Outage(SimTime, SimTime),
    /// An outage of the given length from the first segment carrying CWR: every data
    /// segment in it is lost (`Some(end)` once it started).
    CwrOutage(Dur, Option<SimTime>),
}

impl Loss {
    fn drops(&mut self, now: SimTime, h: &TcpHeader) -> bool {
        match self {
            Loss::None => false,
            Loss::Bernoulli(p, rng) => rng.bernoulli(*p),
            Loss::Burst { p, len, rng, left } => {
                if *left > 0 {
                    *left -= 1;
                    true
                } else if rng.bernoulli(*p) {
                    *left = len.saturating_sub(1);
                    true
                } else {
                    false
                }
            }
            Loss::SeqOnce(set) => h.len > 0 && !h.retransmit && set.remove(&h.seq),
            Loss::Outage(from, to) => h.len > 0 && *from <= now && now < *to,
            Loss::CwrOutage(len, end) => {
                if end.is_none() && h.flags & crate::packet::tcp_flags::CWR != 0 {
                    *end = Some(now + *len);
                }
                h.len > 0 && end.is_some_and(|e| now < e)
            }
        }
    }
}

/// The path between the two ends.
#[derive(Clone, Debug)]
pub struct Path {
    /// One-way propagation delay, each direction.
    pub delay: Dur,
    /// Bottleneck rate in the data direction (`None`: infinitely fast).
    pub rate: Option<Rate>,
    /// DropTail buffer in front of the bottleneck [packets].
    pub buffer: usize,
    /// Losses in the data direction (before the buffer).
    pub loss: Loss,
    /// ACK loss probability and its stream.
    pub ack_loss: Option<(f64, RngStream)>,
    /// Data segments (by first byte) marked CE on their first transmission.
    pub ce_seqs: BTreeSet<u64>,
}

impl Path {
    /// A lossless path with the given one-way delay and no bottleneck.
    pub fn delay(ms: u64) -> Self {
        Path {
            delay: Dur::from_millis(ms),
            rate: None,
            buffer: 1000,
            loss: Loss::None,
            ack_loss: None,
            ce_seqs: BTreeSet::new(),
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Ev {
    /// A data-direction segment reaches the bottleneck.
    Enqueue(TcpHeader),
    /// The bottleneck finished serialising its head packet.
    TxDone,
    /// A segment reaches the receiver (with its CE mark).
    ToRcv(TcpHeader, bool),
    /// An ACK reaches the sender.
    ToSnd(TcpHeader),
    SndTimer,
    RcvTimer,
    /// The application reads from a finite receive buffer.
    AppRead,
}

/// A sender and a receiver over a [`Path`].
pub struct Wire {
    q: EventQueue<Ev>,
    /// The sender under test.
    pub snd: TcpSender,
    /// The receiver under test.
    pub rcv: TcpReceiver,
    path: Path,
    fifo: VecDeque<(TcpHeader, bool)>,
    busy: bool,
    snd_armed: Option<SimTime>,
    rcv_armed: Option<SimTime>,
    buf: Vec<TcpHeader>,
    /// Goodput bytes returned by the receiver, in total.
    pub delivered: u64,
    /// (time, cumulative goodput) at every delivery.
    pub goodput: Vec<(SimTime, u64)>,
    /// Data-carrying segments that reached the receiver.
    pub data_arrivals: u64,
    /// ACKs the receiver sent.
    pub acks_sent: u64,
    /// (time, ack) of every ACK the receiver sent.
    pub ack_log: Vec<(SimTime, u64)>,
    /// When the receiver sent an ACK with ECE.
    pub ece_log: Vec<SimTime>,
    /// Packets the path dropped (loss model or buffer overflow).
    pub drops: u64,
    /// Wire bytes the bottleneck transmitted, with their completion times.
    pub link_log: Vec<(SimTime, u32)>,
    /// (time, cwnd) after every ACK the sender processed.
    pub cwnd_log: Vec<(SimTime, u32)>,
    /// Application reads: every `period`, at most `bytes`.
    pub app_reader: Option<(Dur, u64)>,
}

impl Wire {
    /// A connection configured by `cfg` sending `bytes` (`None`: infinite) over `path`.
    pub fn new(cfg: &TcpConfig, bytes: Option<u64>, path: Path) -> Self {
        cfg.validate().expect("valid test config");
        Wire {
            q: EventQueue::new(),
            snd: TcpSender::new(cfg, bytes),
            rcv: TcpReceiver::new(cfg),
            path,
            fifo: VecDeque::new(),
            busy: false,
            snd_armed: None,
            rcv_armed: None,
            buf: Vec::new(),
            delivered: 0,
            goodput: Vec::new(),
            data_arrivals: 0,
            acks_sent: 0,
            ack_log: Vec::new(),
            ece_log: Vec::new(),
            drops: 0,
            link_log: Vec::new(),
            cwnd_log: Vec::new(),
            app_reader: None,
        }
    }

    /// Starts the sender at time zero.
    pub fn start(&mut self) {
        let mut out = std::mem::take(&mut self.buf);
        self.snd.start(SimTime::ZERO, &mut out);
        self.after_sender(SimTime::ZERO, &mut out);
        self.buf = out;
        if let Some((p, _)) = self.app_reader {
            self.q.schedule_forget(SimTime::ZERO + p, Ev::AppRead);
        }
    }

    /// Runs until the sender is done (plus the last ACKs draining) or `until`.
    pub fn run(&mut self, until: SimTime) -> SimTime {
        while let Some((now, ev)) = self.q.pop_until(until) {
            self.step(now, ev);
            if self.snd.is_done() {
                return now;
            }
        }
        self.q.now()
    }

    /// The path's loss model, as it stands now.
    pub fn path_loss(&self) -> &Loss {
        &self.path.loss
    }

    /// Runs until `until` whatever happens.
    pub fn run_all(&mut self, until: SimTime) {
        while let Some((now, ev)) = self.q.pop_until(until) {
            self.step(now, ev);
        }
    }

    fn step(&mut self, now: SimTime, ev: Ev) {
        let mut out = std::mem::take(&mut self.buf);
        out.clear();
        match ev {
            Ev::Enqueue(h) => {
                if self.fifo.len() >= self.path.buffer {
                    self.drops += 1;
                } else {
                    let ce = !h.retransmit && h.len > 0 && self.path.ce_seqs.remove(&h.seq);
                    self.fifo.push_back((h, ce));
                    if !self.busy {
                        self.start_tx(now);
                    }
                }
            }
            Ev::TxDone => {
                let (h, ce) = self.fifo.pop_front().expect("head packet");
                self.link_log.push((now, h.len + TCP_IP_HEADER));
                self.q
                    .schedule_forget(now + self.path.delay, Ev::ToRcv(h, ce));
                self.busy = false;
                if !self.fifo.is_empty() {
                    self.start_tx(now);
                }
            }
            Ev::ToRcv(h, ce) => {
                if h.len > 0 {
                    self.data_arrivals += 1;
                }
                let n = self.rcv.on_segment(now, &h, ce, &mut out);
                self.count(now, n);
                self.after_receiver(now, &mut out);
            }
            Ev::ToSnd(h) => {
                self.snd.on_ack(now, &h, &mut out);
                self.cwnd_log.push((now, self.snd.probe().cwnd));
                self.after_sender(now, &mut out);
            }
            Ev::SndTimer => {
                if self.snd_armed == Some(now) {
                    self.snd_armed = None;
                }
                self.snd.on_timer(now, &mut out);
                self.after_sender(now, &mut out);
            }
            Ev::RcvTimer => {
                if self.rcv_armed == Some(now) {
                    self.rcv_armed = None;
                }
                self.rcv.on_timer(now, &mut out);
                self.after_receiver(now, &mut out);
            }
            Ev::AppRead => {
                if let Some((p, b)) = self.app_reader {
                    self.rcv.app_read(now, b, &mut out);
                    self.after_receiver(now, &mut out);
                    self.q.schedule_forget(now + p, Ev::AppRead);
                }
            }
        }
        self.buf = out;
    }

    fn count(&mut self, now: SimTime, n: u64) {
        if n > 0 {
            self.delivered += n;
            self.goodput.push((now, self.delivered));
        }
    }

    fn start_tx(&mut self, now: SimTime) {
        let (h, _) = self.fifo.front().expect("head");
        let size = h.len + TCP_IP_HEADER;
        let d = self.path.rate.map_or(Dur::ZERO, |r| r.tx_time(size));
        self.busy = true;
        self.q.schedule_forget(now + d, Ev::TxDone);
    }

    fn after_sender(&mut self, now: SimTime, out: &mut Vec<TcpHeader>) {
        for h in out.drain(..) {
            if self.path.loss.drops(now, &h) {
                self.drops += 1;
                continue;
            }
            if self.path.rate.is_some() {
                self.q.schedule_forget(now, Ev::Enqueue(h));
            } else {
                let ce = !h.retransmit && h.len > 0 && self.path.ce_seqs.remove(&h.seq);
                self.q
                    .schedule_forget(now + self.path.delay, Ev::ToRcv(h, ce));
            }
        }
        if let Some(t) = self.snd.next_timer() {
            if self.snd_armed.is_none_or(|a| t < a) {
                self.snd_armed = Some(t);
                self.q.schedule_forget(t, Ev::SndTimer);
            }
        }
    }

    fn after_receiver(&mut self, now: SimTime, out: &mut Vec<TcpHeader>) {
        for h in out.drain(..) {
            self.acks_sent += 1;
            self.ack_log.push((now, h.ack));
            if h.flags & crate::packet::tcp_flags::ECE != 0 {
                self.ece_log.push(now);
            }
            if let Some((p, rng)) = &mut self.path.ack_loss {
                if rng.bernoulli(*p) {
                    continue;
                }
            }
            self.q.schedule_forget(now + self.path.delay, Ev::ToSnd(h));
        }
        if let Some(t) = self.rcv.next_timer() {
            if self.rcv_armed.is_none_or(|a| t < a) {
                self.rcv_armed = Some(t);
                self.q.schedule_forget(t, Ev::RcvTimer);
            }
        }
    }

    /// Payload bytes delivered in `[from, to)` [bytes].
    pub fn goodput_between(&self, from: SimTime, to: SimTime) -> u64 {
        let at = |t: SimTime| {
            let i = self.goodput.partition_point(|&(x, _)| x < t);
            if i == 0 {
                0
            } else {
                self.goodput[i - 1].1
            }
        };
        at(to) - at(from)
    }

    /// Wire bytes the bottleneck sent in `[from, to)` [bytes].
    pub fn link_bytes_between(&self, from: SimTime, to: SimTime) -> u64 {
        self.link_log
            .iter()
            .filter(|&&(t, _)| t >= from && t < to)
            .map(|&(_, b)| b as u64)
            .sum()
    }
}

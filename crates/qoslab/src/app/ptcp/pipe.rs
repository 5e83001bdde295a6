//! A TCP-v pipe (P4 §4): an ordinary TCP sender and receiver (congestion control, loss
//! recovery, RTO, delayed ACKs: the flow's `tcp` settings) over *virtual* segments of one
//! MSS each, which carry whatever data the engine binds to them. The pipe keeps, per
//! virtual segment not yet acknowledged, the chunk bound to it and the number of its
//! latest transmission (the paper's `bindings`).

use std::collections::VecDeque;

use crate::packet::TcpHeader;
use crate::tcp::cc::CongestionControl;
use crate::tcp::{TcpConfig, TcpReceiver, TcpSender};
use crate::time::SimTime;

/// The chunk a virtual segment carries and its latest transmission.
#[derive(Clone, Copy, Debug)]
pub struct Binding {
    /// The chunk (stream index); `None` if the segment was never bound.
    pub chunk: Option<u64>,
    /// Number of the segment's latest transmission.
    pub tx: u64,
    /// Selectively acknowledged.
    pub sacked: bool,
}

/// Counters of one pipe.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PipeStats {
    /// Stream bytes sent on the pipe (first sends and repeats).
    pub data_bytes: u64,
    /// Times the engine froze the pipe (FREEZE answered).
    pub freezes: u64,
    /// Sum and number of congestion-window samples [segments], one per ACK.
    pub cwnd_sum: f64,
    /// Number of samples in `cwnd_sum`.
    pub cwnd_n: u64,
}

/// One TCP-v pipe of a pTCP connection (both ends).
#[derive(Clone, Debug)]
pub struct Pipe {
    /// The sending TCP-v.
    pub snd: TcpSender,
    /// The receiving TCP-v (no buffer of its own: the engine holds the data).
    pub rcv: TcpReceiver,
    /// Pending timer events of the sender and the receiver (NEVER if none).
    pub armed: [SimTime; 2],
    /// `established()` was reported.
    pub established: bool,
    /// `close()` was called.
    pub closing: bool,
    /// `closed()` was reported.
    pub closed: bool,
    /// Frozen: had window room, the engine had nothing to bind.
    pub frozen: bool,
    /// Virtual segment index of `bindings[0]`.
    vbase: u64,
    bindings: VecDeque<Binding>,
    /// The chunk `send()` handed over, bound when its segment leaves.
    pub pending: Option<u64>,
    /// Counters.
    pub stats: PipeStats,
}

impl Pipe {
    /// A pipe configured by `tcp` (its receive buffer is virtual: the engine's counts).
    pub fn new(tcp: &TcpConfig) -> Self {
        let mut v = tcp.clone();
        v.rcv_buffer = None;
        Pipe {
            snd: TcpSender::new_app_limited(&v),
            rcv: TcpReceiver::new(&v),
            armed: [SimTime::NEVER; 2],
            established: false,
            closing: false,
            closed: false,
            frozen: false,
            vbase: 0,
            bindings: VecDeque::new(),
            pending: None,
            stats: PipeStats::default(),
        }
    }

    /// `open()` (P4 §4.2): enter the state machine (SYN with a handshake).
    pub fn open(&mut self, now: SimTime, out: &mut Vec<TcpHeader>) {
        self.snd.start(now, out);
    }

    /// `close()` (P4 §4.2): no more data; FIN with a handshake once all is acknowledged.
    pub fn close(&mut self, now: SimTime, out: &mut Vec<TcpHeader>) {
        self.closing = true;
        self.snd.app_close(now, out);
    }

    /// `receive()` (P4 §4.2) at the sending end: an ACK (pTCP header already taken off).
    pub fn receive(&mut self, now: SimTime, ack: &TcpHeader, out: &mut Vec<TcpHeader>) {
        self.snd.on_ack(now, ack, out);
        let mss = self.snd.mss().max(1) as f64;
        self.stats.cwnd_sum += self.snd.cc().cwnd() as f64 / mss;
        self.stats.cwnd_n += 1;
    }

    /// `resume()` (P4 §4.2): the engine has data again; the pipe leaves the frozen state
    /// and asks for it (the caller runs the `send()` calls).
    pub fn resume(&mut self) {
        self.frozen = false;
    }

    /// Virtual segment index of sequence number `seq`.
    fn index(&self, seq: u64) -> u64 {
        seq / self.snd.mss().max(1) as u64
    }

    /// A data segment at `seq` leaves as transmission `tx`: the chunk it carries (a new
    /// segment takes the pending chunk).
    pub fn bind(&mut self, seq: u64, tx: u64) -> Option<u64> {
        let k = self.index(seq);
        let top = self.vbase + self.bindings.len() as u64;
        if k >= top {
            let chunk = self.pending.take();
            self.bindings.push_back(Binding {
                chunk,
                tx,
                sacked: false,
            });
            chunk
        } else if k >= self.vbase {
            let b = &mut self.bindings[(k - self.vbase) as usize];
            b.tx = tx;
            b.chunk
        } else {
            None
        }
    }

    /// Unbinds chunk `c` from every virtual segment of this pipe it is bound to (P4
    /// §4.1 restriping): their retransmissions will be hollow. Returns how many.
    pub fn unbind(&mut self, c: u64) -> u64 {
        let mut n = 0;
        for b in self.bindings.iter_mut().filter(|b| b.chunk == Some(c)) {
            b.chunk = None;
            n += 1;
        }
        n
    }

    /// Bindings of virtual segments newly acknowledged by cumulative ACK `ack` and SACK
    /// blocks `sack`: their chunks and transmission numbers, pushed to `acked`.
    pub fn acknowledged(&mut self, ack: &TcpHeader, acked: &mut Vec<(Option<u64>, u64)>) {
        let mss = self.snd.mss().max(1) as u64;
        while !self.bindings.is_empty() && (self.vbase + 1) * mss <= ack.ack {
            let b = self.bindings.pop_front().expect("non-empty");
            self.vbase += 1;
            if !b.sacked {
                acked.push((b.chunk, b.tx));
            }
        }
        for s in ack.sack_blocks() {
            let from = s.start.div_ceil(mss).max(self.vbase);
            let to = (s.end / mss).min(self.vbase + self.bindings.len() as u64);
            for k in from..to {
                let b = &mut self.bindings[(k - self.vbase) as usize];
                if !b.sacked {
                    b.sacked = true;
                    acked.push((b.chunk, b.tx));
                }
            }
        }
    }
}

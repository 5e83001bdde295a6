//! pTCP (P4 §4): one connection of weight w made of w TCP-v pipes between the same two
//! hosts. Each pipe runs ordinary TCP congestion control and loss recovery on *virtual*
//! segments (P4 §4.1 "Decoupled Functionality"); the engine owns the send and receive
//! buffers, binds data to a pipe's virtual segment only when that pipe's window has
//! room and it transmits (§4.1 "Congestion Window Based Striping"), re-sends data
//! presumed lost on another pipe once three later transmissions are acknowledged on any
//! pipe ("fast reassign", §4.1 "Dynamic Reassignment", unbinding it from the segment
//! it was on), also sends the data of a fast-retransmitted segment on another pipe
//! (§4.1 "Redundant Striping"; after a timeout too with `redundant_after_timeout`),
//! and delivers the stream in order to the receiving application.
//!
//! The engine/pipe interface of P4 §4.2 (Fig. 4):
//!
//! | call | from → to | here |
//! |---|---|---|
//! | `open()` | engine → pipe | [`Pipe::open`] |
//! | `close()` | engine → pipe | [`Pipe::close`] |
//! | `established()` | pipe → engine | [`Ptcp::established`] |
//! | `closed()` | pipe → engine | [`Ptcp::closed`] |
//! | `receive()` | engine → pipe | [`Pipe::receive`] (ACKs), [`Ptcp::on_segment`] (virtual segments) |
//! | `send()` | pipe → engine | [`Engine::send`]: [`Answer::Data`] or [`Answer::Freeze`] |
//! | `resume()` | engine → pipe | [`Pipe::resume`], from [`Ptcp::resume`] |
//!
//! On the wire a segment keeps its pipe's virtual sequence numbers (`seq`, `ack`, SACK
//! blocks) and index (`subflow`); the pTCP header is [`TcpHeader::dsn`]: the stream
//! offset of the data carried, or on ACKs the receiving engine's data ACK, whose
//! advertised window (`wnd`) is the engine's receive buffer. A virtual segment is one
//! MSS; the packet carries only the bytes bound to it (`len`), none if what it was bound
//! to is already acknowledged ("hollow"; the virtual segment still has to reach the
//! receiving pipe).
//!
//! A retransmitted virtual segment carries its chunk again only while that chunk is
//! unacknowledged and still bound to it: fast reassign unbinds the chunk from the
//! segments it was on (`binding = "unbind"`, the default; `"keep"` leaves it bound), so
//! their retransmissions are hollow. An acknowledgement of a virtual segment must mean
//! its chunk arrived, so a segment is never rebound to different data.

mod engine;
mod pipe;
mod reassembly;
#[cfg(test)]
mod tests;

pub use engine::{Again, Answer, Carry, Engine, EngineStats};
pub use pipe::{Binding, Pipe, PipeStats};
pub use reassembly::Reassembly;

use serde::Deserialize;

use crate::config::ScenarioError;
use crate::packet::{tcp_flags, TcpHeader};
use crate::tcp::TcpConfig;
use crate::time::SimTime;
use crate::units::Bytes;

/// Index of the sender's timer in [`Pipe::armed`].
pub const SENDER: u8 = 0;
/// Index of the receiver's timer in [`Pipe::armed`].
pub const RECEIVER: u8 = 1;

/// What a fast-reassigned chunk's first virtual segment carries when its pipe
/// retransmits that segment later.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum PtcpBinding {
    /// Restriping unbinds the chunk from its virtual segment (P4 §4.1 "Dynamic
    /// Reassignment": "unbinds application data bound to a virtual segment, so as to
    /// rebind it to another"): the segment's retransmission is hollow.
    #[default]
    Unbind,
    /// The chunk stays bound to its first virtual segment too: the segment's
    /// retransmission carries it again while it is unacknowledged (a duplicate if the
    /// reassigned copy arrives as well).
    Keep,
}

/// `ptcp = { pipes = 10, send_buffer = "256KB", recv_buffer = "256KB" }`.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PtcpConfig {
    /// Number of TCP-v pipes w, the weight (1..=255).
    pub pipes: u32,
    /// The connection's send buffer: written and not yet acknowledged bytes; default 256 KB.
    #[serde(default = "default_buffer")]
    pub send_buffer: Bytes,
    /// The connection's receive buffer (out-of-order data waits here); default 256 KB.
    #[serde(default = "default_buffer")]
    pub recv_buffer: Bytes,
    /// Fast reassign unbinds the chunk from its first virtual segment (`unbind`,
    /// default, P4 §4.1) or leaves it bound there too (`keep`).
    #[serde(default)]
    pub binding: PtcpBinding,
    /// Also stripe redundantly the data a pipe resends after a timeout; off by default:
    /// P4 §4.1 stripes only fast retransmissions ("there is no need to redundantly
    /// stripe the first segment of the recently-stalled pipe").
    #[serde(default)]
    pub redundant_after_timeout: bool,
    /// Fast reassign (P4 §4.1 "Dynamic Reassignment"): data whose latest transmission
    /// precedes three acknowledged transmissions moves to another pipe; on by default.
    /// Off (`false`) is the ablation twin: lost data waits for its own pipe's recovery.
    #[serde(default = "default_true")]
    pub fast_reassign: bool,
}

fn default_true() -> bool {
    true
}

fn default_buffer() -> Bytes {
    Bytes(256_000)
}

impl PtcpConfig {
    /// Checks the values against the pipes' segment size `mss`; the error names the key.
    pub fn validate(&self, mss: u32) -> Result<(), ScenarioError> {
        crate::ensure_scenario!(
            (1..=255).contains(&self.pipes),
            "pipes",
            "expected 1 to 255 pipes, found {}",
            self.pipes
        );
        for (b, k) in [
            (self.send_buffer, "send_buffer"),
            (self.recv_buffer, "recv_buffer"),
        ] {
            crate::ensure_scenario!(
                b.0 >= mss as u64,
                k,
                "expected at least one segment ({mss} bytes), found {}",
                b.0
            );
            crate::ensure_scenario!(
                b.0 <= 1 << 30,
                k,
                "expected at most 1 GB, found {} bytes",
                b.0
            );
        }
        Ok(())
    }
}

/// One pTCP connection: both engines and the pipes (both ends).
#[derive(Clone, Debug)]
pub struct Ptcp {
    /// The configuration.
    pub cfg: PtcpConfig,
    /// The sending engine.
    pub engine: Engine,
    /// The pipes, by subflow index.
    pub pipes: Vec<Pipe>,
    /// The receiving engine's buffer.
    pub rcv: Reassembly,
    mss: u32,
    /// Virtual window every pipe sender sees (the engine does the flow control).
    cap: u32,
    /// Where the next `resume()` round starts (rotates, so no pipe is favoured).
    next_resume: usize,
    tmp: Vec<TcpHeader>,
    acked: Vec<(Option<u64>, u64)>,
    lost: Vec<u64>,
}

impl Ptcp {
    /// A connection of `cfg.pipes` pipes configured by `tcp`, sending `bytes` (unlimited
    /// if `None`).
    pub fn new(cfg: &PtcpConfig, tcp: &TcpConfig, bytes: Option<u64>) -> Self {
        let w = cfg.pipes as usize;
        Ptcp {
            cfg: *cfg,
            engine: Engine::new(
                tcp.mss,
                w as u16,
                cfg.send_buffer.0,
                cfg.recv_buffer.0,
                bytes,
            ),
            pipes: vec![Pipe::new(tcp); w],
            rcv: Reassembly::new(cfg.recv_buffer.0),
            mss: tcp.mss,
            cap: tcp.max_window_bytes(),
            next_resume: 0,
            tmp: Vec::new(),
            acked: Vec::new(),
            lost: Vec::new(),
        }
    }

    /// Opens every pipe (segments to `out`, each with its pipe's `subflow`).
    pub fn start(&mut self, now: SimTime, out: &mut Vec<TcpHeader>) {
        for p in 0..self.pipes.len() {
            let mut tmp = std::mem::take(&mut self.tmp);
            self.pipes[p].open(now, &mut tmp);
            self.emit(p, &mut tmp, false, out);
            self.tmp = tmp;
            if !self.pipes[p].snd.opening() {
                self.established(now, p, out);
            }
        }
    }

    /// `established()` (P4 §4.2): pipe `p` reached ESTABLISHED; it asks for data.
    pub fn established(&mut self, now: SimTime, p: usize, out: &mut Vec<TcpHeader>) {
        self.pipes[p].established = true;
        self.pump(now, p, out);
    }

    /// `closed()` (P4 §4.2): pipe `p` finished.
    pub fn closed(&mut self, p: usize) {
        self.pipes[p].closed = true;
    }

    /// Pipe `p`'s `send()` calls while its window has room: each answer is a chunk,
    /// written as one MSS to the pipe, which sends it at once as one new virtual segment,
    /// or FREEZE, which freezes the pipe.
    fn pump(&mut self, now: SimTime, p: usize, out: &mut Vec<TcpHeader>) {
        let mut tmp = std::mem::take(&mut self.tmp);
        loop {
            let pipe = &mut self.pipes[p];
            if !pipe.established || pipe.closing || !pipe.snd.can_send_new() {
                break;
            }
            match self.engine.send(p as u16) {
                Answer::Freeze => {
                    let pipe = &mut self.pipes[p];
                    if !pipe.frozen {
                        pipe.frozen = true;
                        pipe.stats.freezes += 1;
                        self.engine.stats.freezes += 1;
                    }
                    break;
                }
                Answer::Data(c) => {
                    let pipe = &mut self.pipes[p];
                    pipe.frozen = false;
                    pipe.pending = Some(c);
                    self.engine.stats.binds += 1;
                    pipe.snd.app_write(now, self.mss as u64, &mut tmp);
                    self.emit(p, &mut tmp, false, out);
                    if self.pipes[p].pending.is_some() {
                        // Window-based striping broken: bound without room to send.
                        self.engine.stats.binds_without_room += 1;
                        debug_assert!(false, "pTCP bound data to a pipe without window room");
                        break;
                    }
                }
            }
        }
        self.tmp = tmp;
    }

    /// `resume()` (P4 §4.2) of frozen pipes while the engine has something to send.
    pub fn resume(&mut self, now: SimTime, out: &mut Vec<TcpHeader>) {
        let w = self.pipes.len();
        for i in 0..w {
            if !self.engine.has_work() {
                break;
            }
            let p = (self.next_resume + i) % w;
            if self.pipes[p].frozen {
                self.pipes[p].resume();
                self.engine.stats.resumes += 1;
                self.pump(now, p, out);
            }
        }
        self.next_resume = (self.next_resume + 1) % w;
    }

    /// Segments `segs` that pipe `p`'s sender put out go to `out` with their pTCP header:
    /// data segments carry what their binding says (`rtx_redundant`: the first
    /// retransmission is a fast retransmit or a timeout's, redundantly striped).
    fn emit(
        &mut self,
        p: usize,
        segs: &mut Vec<TcpHeader>,
        rtx_redundant: bool,
        out: &mut Vec<TcpHeader>,
    ) {
        let mut redundant = rtx_redundant;
        for mut h in segs.drain(..) {
            h.subflow = p as u8;
            h.dsn = 0;
            if h.flags & (tcp_flags::SYN | tcp_flags::FIN) != 0 || h.len == 0 {
                out.push(h);
                continue;
            }
            let tx = self.engine.next_tx();
            let chunk = self.pipes[p].bind(h.seq, tx);
            match self.engine.carry(chunk) {
                Carry::Data { dsn, len, again } => {
                    h.dsn = dsn;
                    h.len = len;
                    h.retransmit = again;
                    let c = chunk.expect("data has a chunk");
                    // Redundant striping unless a copy already went on another pipe since.
                    let mine = self.engine.last_pipe(c) == Some(p as u16);
                    self.engine.transmitted(c, p as u16, tx);
                    self.pipes[p].stats.data_bytes += len as u64;
                    if redundant && again {
                        redundant = false;
                        if mine {
                            self.engine.redundant(c);
                        }
                    }
                }
                Carry::Hollow => {
                    h.len = 0;
                    self.engine.stats.hollow += 1;
                }
            }
            out.push(h);
        }
    }

    /// The sending end takes an ACK of pipe `p`: the pTCP header (data ACK, window) to the
    /// engine, the virtual acknowledgements to the chunks, then `receive()` to the pipe,
    /// its `send()` calls, fast reassign, and `close()` once everything is acknowledged.
    pub fn on_ack(&mut self, now: SimTime, p: usize, h: &TcpHeader, out: &mut Vec<TcpHeader>) {
        if h.flags & tcp_flags::ACK != 0 && h.flags & tcp_flags::SYN == 0 {
            self.engine.peer(h.dsn, h.wnd);
            let mut acked = std::mem::take(&mut self.acked);
            self.pipes[p].acknowledged(h, &mut acked);
            for (c, tx) in acked.drain(..) {
                if let Some(c) = c {
                    self.engine.ack_chunk(c);
                }
                self.engine.acked_tx(tx);
            }
            self.acked = acked;
            if self.cfg.fast_reassign {
                self.engine.presume_lost();
            }
            let mut lost = std::mem::take(&mut self.lost);
            self.engine.take_presumed(&mut lost);
            if self.cfg.binding == PtcpBinding::Unbind {
                // Restriping (§4.1): data presumed lost leaves the segments it was
                // bound to and waits, unbound, for a pipe that asks.
                for c in lost.drain(..) {
                    let n: u64 = self.pipes.iter_mut().map(|q| q.unbind(c)).sum();
                    self.engine.stats.unbinds += n;
                }
            }
            lost.clear();
            self.lost = lost;
        }
        let mut v = *h;
        v.wnd = self.cap;
        v.dsn = 0;
        let mut tmp = std::mem::take(&mut self.tmp);
        let pipe = &mut self.pipes[p];
        let before = (pipe.snd.stats().fast_retransmits, pipe.snd.stats().timeouts);
        pipe.receive(now, &v, &mut tmp);
        let after = (pipe.snd.stats().fast_retransmits, pipe.snd.stats().timeouts);
        let redundant =
            after.0 != before.0 || (after.1 != before.1 && self.cfg.redundant_after_timeout);
        self.emit(p, &mut tmp, redundant, out);
        self.tmp = tmp;
        if !self.pipes[p].established && !self.pipes[p].snd.opening() {
            self.established(now, p, out);
        } else {
            self.pump(now, p, out);
        }
        self.resume(now, out);
        self.maybe_close(now, out);
    }

    /// Pipe `p`'s sender (`end` = [`SENDER`]) or receiver timer may be due.
    pub fn on_timer(&mut self, now: SimTime, p: usize, end: u8, out: &mut Vec<TcpHeader>) {
        let mut tmp = std::mem::take(&mut self.tmp);
        if end == SENDER {
            let pipe = &mut self.pipes[p];
            let before = pipe.snd.stats().timeouts;
            pipe.snd.on_timer(now, &mut tmp);
            let timeout = self.pipes[p].snd.stats().timeouts != before;
            self.emit(
                p,
                &mut tmp,
                timeout && self.cfg.redundant_after_timeout,
                out,
            );
            self.tmp = tmp;
            self.pump(now, p, out);
            self.resume(now, out);
            self.maybe_close(now, out);
        } else {
            self.pipes[p].rcv.on_timer(now, &mut tmp);
            self.stamp_acks(p, &mut tmp, out);
            self.tmp = tmp;
        }
    }

    /// `close()` to every pipe once the application wrote everything and all of it is
    /// acknowledged; `closed()` from each pipe when its own stream is done.
    fn maybe_close(&mut self, now: SimTime, out: &mut Vec<TcpHeader>) {
        if !self.engine.all_acked() {
            return;
        }
        for p in 0..self.pipes.len() {
            if !self.pipes[p].closing {
                let mut tmp = std::mem::take(&mut self.tmp);
                self.pipes[p].close(now, &mut tmp);
                self.emit(p, &mut tmp, false, out);
                self.tmp = tmp;
            }
            if !self.pipes[p].closed && self.pipes[p].snd.is_done() {
                self.closed(p);
            }
        }
    }

    /// The receiving end takes pipe `p`'s segment `h` (`ce`: marked CE): the data goes to
    /// the receive buffer, the virtual segment to the pipe (`receive()`), whose ACKs get
    /// the engine's data ACK and window. Returns the stream bytes delivered in order to
    /// the application.
    pub fn on_segment(
        &mut self,
        now: SimTime,
        p: usize,
        h: &TcpHeader,
        ce: bool,
        out: &mut Vec<TcpHeader>,
    ) -> u64 {
        let mut v = *h;
        let mut got = 0;
        if h.flags & (tcp_flags::SYN | tcp_flags::FIN) == 0 {
            v.len = self.mss;
            if h.len > 0 {
                if !self.rcv.fits(h.dsn, h.len) {
                    // No room: neither the data nor its virtual segment is taken.
                    self.rcv.refused += 1;
                    return 0;
                }
                got = self.rcv.insert(h.dsn, h.len);
            }
        }
        v.dsn = 0;
        let mut tmp = std::mem::take(&mut self.tmp);
        self.pipes[p].rcv.on_segment(now, &v, ce, &mut tmp);
        self.stamp_acks(p, &mut tmp, out);
        self.tmp = tmp;
        got
    }

    /// Puts the receiving engine's pTCP header on pipe `p`'s ACKs.
    fn stamp_acks(&mut self, p: usize, acks: &mut Vec<TcpHeader>, out: &mut Vec<TcpHeader>) {
        for mut h in acks.drain(..) {
            h.subflow = p as u8;
            h.dsn = self.rcv.next();
            h.wnd = self.rcv.window();
            out.push(h);
        }
    }

    /// The application writes `bytes` more (an application-limited connection, see
    /// [`Engine::app_limited`]); frozen pipes resume.
    pub fn app_write(&mut self, now: SimTime, bytes: u64, out: &mut Vec<TcpHeader>) {
        self.engine.app_write(bytes);
        self.resume(now, out);
    }

    /// A finite transfer was written, delivered and acknowledged, and every pipe closed.
    pub fn is_done(&self) -> bool {
        self.engine.all_acked() && self.pipes.iter().all(|p| p.closed)
    }
}

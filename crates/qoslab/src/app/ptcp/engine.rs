//! The sending half of the pTCP engine (P4 §4.2): the connection's send buffer cut into
//! MSS-sized chunks, which chunk each virtual segment carries, the peer's data window,
//! fast reassign and redundant striping (P4 §4.1).
//!
//! A chunk is bound to a virtual segment only when a pipe with window room asks for
//! data through [`Engine::send`]; the answer is a chunk or [`Answer::Freeze`]. Every
//! transmission (on any pipe, new or repeated) gets a number in sending order. Since all
//! pipes share one FIFO path, a chunk whose latest transmission is older than three
//! acknowledged transmissions is presumed lost and queued to be re-sent on another pipe
//! (fast reassign); a chunk a pipe fast-retransmits or resends after a timeout is queued
//! the same way (redundant striping). Either way the queued chunk goes to the next other
//! pipe that has window room and asks, before any new data.

use std::collections::{BTreeMap, VecDeque};

/// The engine's answer to a pipe's `send()` call for a new virtual segment (P4 §4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Bind this chunk (its index in the stream) to the segment.
    Data(u64),
    /// Nothing to bind: the pipe freezes until [`crate::app::ptcp::Pipe::resume`].
    Freeze,
}

/// What one transmission of a virtual segment carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Carry {
    /// Stream bytes `[dsn, dsn + len)`; `again`: they were sent before.
    Data {
        /// Stream offset.
        dsn: u64,
        /// Bytes.
        len: u32,
        /// Sent before (on any pipe).
        again: bool,
    },
    /// No data: what the segment was bound to is already acknowledged (acknowledged data
    /// is never sent again; the pipe still needs its virtual segment through).
    Hollow,
}

/// Why a chunk waits to be sent on another pipe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Again {
    /// Presumed lost: three later transmissions were acknowledged (fast reassign).
    Reassign,
    /// Its pipe fast-retransmitted it or timed out on it (redundant striping).
    Redundant,
}

/// Counters of the sending engine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EngineStats {
    /// Chunks bound to new virtual segments (first sends, reassigned and redundant ones).
    pub binds: u64,
    /// Binds whose segment did not leave at once (the pipe had no window room); 0 by design.
    pub binds_without_room: u64,
    /// Chunks sent on another pipe because they were presumed lost.
    pub reassigns: u64,
    /// Chunks sent on another pipe because their pipe retransmitted them.
    pub redundant: u64,
    /// `send()` calls answered with FREEZE that froze a running pipe.
    pub freezes: u64,
    /// `resume()` calls to frozen pipes.
    pub resumes: u64,
    /// Retransmitted virtual segments sent without data (their data was acknowledged,
    /// or unbound by restriping).
    pub hollow: u64,
    /// Virtual segments a fast-reassigned chunk was unbound from (P4 §4.1).
    pub unbinds: u64,
}

#[derive(Clone, Copy, Debug)]
struct Chunk {
    len: u32,
    acked: bool,
    /// Number of its latest transmission (0: never sent).
    last_tx: u64,
    /// The pipe of its latest transmission.
    last_pipe: u16,
    /// Waiting in `again`.
    queued: bool,
}

/// The sending engine of one pTCP connection.
#[derive(Clone, Debug)]
pub struct Engine {
    mss: u32,
    pipes: u16,
    send_buffer: u64,
    /// Bytes the application has still to write (`None`: unlimited).
    left: Option<u64>,
    /// The application will write no more once `left` is 0 (a finite transfer).
    app_closed: bool,
    /// Stream bytes written into the send buffer.
    written: u64,
    /// Chunks from `base` on (all below are acknowledged and freed).
    chunks: VecDeque<Chunk>,
    base: u64,
    /// First chunk never sent.
    next_new: u64,
    /// The peer's right window edge: its data ACK plus its advertised window.
    edge: u64,
    again: VecDeque<(u64, u16, Again)>,
    /// Unacknowledged sent chunks by the number of their latest transmission.
    in_flight: BTreeMap<u64, u64>,
    /// The three highest acknowledged transmission numbers, highest first (0: none).
    top_acked: [u64; 3],
    next_tx: u64,
    /// Chunks presumed lost since the caller last took them (to unbind).
    presumed: Vec<u64>,
    /// Counters.
    pub stats: EngineStats,
}

impl Engine {
    /// An engine for `pipes` pipes of segment size `mss` with a `send_buffer`-byte send
    /// buffer, a peer whose receive buffer holds `recv_buffer` bytes, and `bytes` to send
    /// (`None`: unlimited).
    pub fn new(
        mss: u32,
        pipes: u16,
        send_buffer: u64,
        recv_buffer: u64,
        bytes: Option<u64>,
    ) -> Self {
        let mut e = Engine {
            mss,
            pipes,
            send_buffer,
            left: bytes,
            app_closed: bytes.is_some(),
            written: 0,
            chunks: VecDeque::new(),
            base: 0,
            next_new: 0,
            edge: recv_buffer,
            again: VecDeque::new(),
            in_flight: BTreeMap::new(),
            top_acked: [0; 3],
            next_tx: 1,
            presumed: Vec::new(),
            stats: EngineStats::default(),
        };
        e.fill();
        e
    }

    /// An application-limited engine: nothing to send until [`Engine::app_write`].
    pub fn app_limited(mut self) -> Self {
        self.chunks.clear();
        self.written = 0;
        self.left = Some(0);
        self.app_closed = false;
        self
    }

    /// The application hands over `bytes` more bytes (ignored for an unlimited source).
    pub fn app_write(&mut self, bytes: u64) {
        if let Some(l) = &mut self.left {
            *l += bytes;
        }
        self.fill();
    }

    /// The application will write no more.
    pub fn app_close(&mut self) {
        self.app_closed = true;
    }

    /// The application writes what the send buffer takes.
    fn fill(&mut self) {
        let mss = self.mss as u64;
        while self.left != Some(0) {
            let len = self.left.map_or(mss, |l| l.min(mss));
            if self.written + len > self.dsn(self.base) + self.send_buffer {
                break;
            }
            self.chunks.push_back(Chunk {
                len: len as u32,
                acked: false,
                last_tx: 0,
                last_pipe: 0,
                queued: false,
            });
            self.written += len;
            self.left = self.left.map(|l| l - len);
        }
    }

    /// Stream offset of chunk `c`.
    pub fn dsn(&self, c: u64) -> u64 {
        c * self.mss as u64
    }

    fn get(&self, c: u64) -> Option<&Chunk> {
        c.checked_sub(self.base)
            .and_then(|i| self.chunks.get(i as usize))
    }

    fn get_mut(&mut self, c: u64) -> Option<&mut Chunk> {
        let i = c.checked_sub(self.base)?;
        self.chunks.get_mut(i as usize)
    }

    /// Chunk `c` is acknowledged (or was never written).
    pub fn is_acked(&self, c: u64) -> bool {
        self.get(c).is_none_or(|k| k.acked)
    }

    /// `send()` (P4 §4.2): pipe `pipe` has room for one segment and asks what to bind.
    /// First a chunk waiting to go on another pipe than the one it was on, then the next
    /// unsent chunk if the peer's window takes it, else FREEZE.
    pub fn send(&mut self, pipe: u16) -> Answer {
        let mut i = 0;
        while i < self.again.len() {
            let (c, avoid, why) = self.again[i];
            if self.is_acked(c) {
                self.again.remove(i);
                if let Some(k) = self.get_mut(c) {
                    k.queued = false;
                }
                continue;
            }
            if avoid != pipe {
                self.again.remove(i);
                if let Some(k) = self.get_mut(c) {
                    k.queued = false;
                }
                match why {
                    Again::Reassign => self.stats.reassigns += 1,
                    Again::Redundant => self.stats.redundant += 1,
                }
                return Answer::Data(c);
            }
            i += 1;
        }
        self.fill();
        while self.next_new < self.base + self.chunks.len() as u64 && self.is_acked(self.next_new) {
            self.next_new += 1;
        }
        if self.next_new < self.base + self.chunks.len() as u64 {
            let c = self.next_new;
            let end = self.dsn(c) + self.get(c).map_or(0, |k| k.len as u64);
            if end <= self.edge {
                self.next_new += 1;
                return Answer::Data(c);
            }
        }
        Answer::Freeze
    }

    /// The chunks queued for fast reassign since the last call (moved to `out`): the
    /// caller unbinds them from the segments they were on (P4 §4.1 restriping).
    pub fn take_presumed(&mut self, out: &mut Vec<u64>) {
        out.append(&mut self.presumed);
    }

    /// Something a frozen pipe could be given: a queued chunk or an unsent one the peer's
    /// window takes (after the application wrote what the buffer takes).
    pub fn has_work(&mut self) -> bool {
        self.fill();
        let unsent = self.next_new < self.base + self.chunks.len() as u64
            && self.dsn(self.next_new) + self.get(self.next_new).map_or(0, |k| k.len as u64)
                <= self.edge;
        unsent || self.again.iter().any(|&(c, _, _)| !self.is_acked(c))
    }

    /// Numbers the next transmission.
    pub fn next_tx(&mut self) -> u64 {
        let t = self.next_tx;
        self.next_tx += 1;
        t
    }

    /// What a transmission of a segment bound to chunk `c` carries (`None`: bound to nothing).
    pub fn carry(&self, c: Option<u64>) -> Carry {
        match c.and_then(|c| self.get(c).filter(|k| !k.acked).map(|k| (c, k))) {
            Some((c, k)) => Carry::Data {
                dsn: self.dsn(c),
                len: k.len,
                again: k.last_tx != 0,
            },
            None => Carry::Hollow,
        }
    }

    /// Chunk `c` left on `pipe` as transmission `tx`.
    pub fn transmitted(&mut self, c: u64, pipe: u16, tx: u64) {
        let Some(k) = self.get_mut(c) else {
            return;
        };
        if k.acked {
            return;
        }
        let old = std::mem::replace(&mut k.last_tx, tx);
        k.last_pipe = pipe;
        if old != 0 {
            self.in_flight.remove(&old);
        }
        self.in_flight.insert(tx, c);
    }

    /// Chunk `c` reached the peer (its virtual segment was acknowledged on some pipe).
    pub fn ack_chunk(&mut self, c: u64) {
        let Some(k) = self.get_mut(c) else {
            return;
        };
        if k.acked {
            return;
        }
        k.acked = true;
        let tx = k.last_tx;
        if tx != 0 {
            self.in_flight.remove(&tx);
        }
        while self.chunks.front().is_some_and(|k| k.acked) {
            self.chunks.pop_front();
            self.base += 1;
        }
        self.next_new = self.next_new.max(self.base);
    }

    /// Transmission `tx` was acknowledged (its virtual segment, on whichever pipe).
    pub fn acked_tx(&mut self, tx: u64) {
        let t = &mut self.top_acked;
        if tx > t[0] {
            *t = [tx, t[0], t[1]];
        } else if tx > t[1] && tx != t[0] {
            *t = [t[0], tx, t[1]];
        } else if tx > t[2] && tx != t[1] && tx != t[0] {
            t[2] = tx;
        }
    }

    /// The peer's data ACK `ack` (every stream byte below it arrived) and window `wnd`.
    pub fn peer(&mut self, ack: u64, wnd: u32) {
        self.edge = self.edge.max(ack + wnd as u64);
        while let Some(k) = self.chunks.front() {
            if self.dsn(self.base) + k.len as u64 > ack {
                break;
            }
            let c = self.base;
            self.ack_chunk(c);
        }
    }

    /// Fast reassign (P4 §4.1): every unacknowledged chunk whose latest transmission
    /// precedes three acknowledged transmissions is presumed lost and queued for
    /// another pipe. Returns how many were queued.
    pub fn presume_lost(&mut self) -> usize {
        let threshold = self.top_acked[2];
        let mut n = 0;
        while let Some((&tx, &c)) = self.in_flight.first_key_value() {
            if tx >= threshold {
                break;
            }
            self.in_flight.remove(&tx);
            if self.pipes > 1 && self.queue(c, Again::Reassign) {
                self.presumed.push(c);
                n += 1;
            }
        }
        n
    }

    /// Redundant striping (P4 §4.1): chunk `c`, which its pipe fast-retransmitted or
    /// resent after a timeout, is queued to go on another pipe too.
    pub fn redundant(&mut self, c: u64) {
        if self.pipes > 1 {
            self.queue(c, Again::Redundant);
        }
    }

    fn queue(&mut self, c: u64, why: Again) -> bool {
        let Some(k) = self.get_mut(c) else {
            return false;
        };
        if k.acked || k.queued {
            return false;
        }
        k.queued = true;
        let avoid = k.last_pipe;
        self.again.push_back((c, avoid, why));
        true
    }

    /// The application wrote everything and every chunk is acknowledged.
    pub fn all_acked(&self) -> bool {
        self.app_closed && self.left == Some(0) && self.chunks.is_empty()
    }

    /// The pipe of chunk `c`'s latest transmission (`None`: acknowledged or never sent).
    pub fn last_pipe(&self, c: u64) -> Option<u16> {
        self.get(c)
            .filter(|k| !k.acked && k.last_tx != 0)
            .map(|k| k.last_pipe)
    }

    /// Stream bytes acknowledged (everything below the first unacknowledged chunk).
    pub fn acked_bytes(&self) -> u64 {
        self.dsn(self.base).min(self.written)
    }
}

//! The receiving half of the pTCP engine (P4 §4.2): the connection's receive buffer.
//! Data from every pipe is put back in stream order by its data sequence number and
//! handed to the application exactly once and in order; the application reads at once,
//! so the buffer holds only data above a hole. It takes data only within
//! `[next, next + limit)` (the window it advertises on every pipe's ACKs).

use std::collections::BTreeMap;

/// The receive buffer of one pTCP connection.
#[derive(Clone, Debug)]
pub struct Reassembly {
    limit: u64,
    /// Next stream byte expected (the data ACK).
    next: u64,
    /// Out-of-order data held: start → end.
    held: BTreeMap<u64, u64>,
    held_bytes: u64,
    /// Stream bytes the application received (in order, once each).
    pub app_bytes: u64,
    /// Data segments whose bytes had all arrived before.
    pub duplicates: u64,
    /// Data segments refused for lack of buffer space (their pipe does not acknowledge them).
    pub refused: u64,
    /// Most bytes held out of order at once.
    pub max_held: u64,
    /// What the application received, in order of delivery: `(from, to)` stream ranges
    /// (kept only when `log` is on, for tests).
    pub log: Option<Vec<(u64, u64)>>,
}

impl Reassembly {
    /// A receive buffer of `limit` bytes.
    pub fn new(limit: u64) -> Self {
        Reassembly {
            limit,
            next: 0,
            held: BTreeMap::new(),
            held_bytes: 0,
            app_bytes: 0,
            duplicates: 0,
            refused: 0,
            max_held: 0,
            log: None,
        }
    }

    /// The data ACK: every stream byte below it was delivered.
    pub fn next(&self) -> u64 {
        self.next
    }

    /// The window advertised on every pipe's ACKs [bytes]: the buffer less what the
    /// application has not read (it reads at once, so the whole buffer).
    pub fn window(&self) -> u32 {
        self.limit.min(u32::MAX as u64) as u32
    }

    /// Bytes `[dsn, dsn + len)` fit the buffer (or arrived before).
    pub fn fits(&self, dsn: u64, len: u32) -> bool {
        dsn + len as u64 <= self.next + self.limit
    }

    /// Takes stream bytes `[dsn, dsn + len)`; returns the bytes this makes deliverable in
    /// order (handed to the application now).
    pub fn insert(&mut self, dsn: u64, len: u32) -> u64 {
        let end = dsn + len as u64;
        if end <= self.next || self.held.get(&dsn).is_some_and(|&e| e >= end) {
            self.duplicates += 1;
            return 0;
        }
        let old = self.next;
        if dsn <= self.next {
            self.next = end;
        } else {
            let e = self.held.entry(dsn).or_insert(end);
            if *e < end {
                self.held_bytes += end - *e;
                *e = end;
            } else {
                self.held_bytes += end - dsn;
            }
            self.max_held = self.max_held.max(self.held_bytes);
        }
        while let Some((&s, &e)) = self.held.first_key_value() {
            if s > self.next {
                break;
            }
            self.held.remove(&s);
            self.held_bytes -= e - s;
            self.next = self.next.max(e);
        }
        let got = self.next - old;
        if got > 0 {
            self.app_bytes += got;
            if let Some(l) = &mut self.log {
                l.push((old, self.next));
            }
        }
        got
    }
}

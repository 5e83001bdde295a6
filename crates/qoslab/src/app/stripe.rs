//! Application-level striping (P4 §2, "application striping"): one flow of weight w
//! opens w ordinary TCP connections between the same two hosts, cuts its data into
//! blocks and writes each block to one connection, round-robin or write-until-block.
//! The receiving application reads only the connection that holds the next
//! in-sequence block (it peeks at the block order, then reads), so a connection whose
//! next block is late holds the others back: their finite receive buffers fill, they
//! advertise zero windows and their senders stall (head-of-line blocking, P4 §2).
//!
//! The block order travels as the application's block headers would; here the two
//! ends share it (no header bytes on the wire). Every connection's segments carry its
//! index in [`crate::packet::TcpHeader::subflow`].

use std::collections::VecDeque;

use serde::Deserialize;

use crate::config::ScenarioError;
use crate::packet::TcpHeader;
use crate::tcp::{TcpConfig, TcpReceiver, TcpSender};
use crate::time::SimTime;
use crate::units::Bytes;

/// How blocks are assigned to connections.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum StripePolicy {
    /// Block k goes to connection k mod w; the writer waits for that connection's room.
    #[default]
    RoundRobin,
    /// Blocks go to one connection until its send buffer is full, then to the next.
    WriteUntilBlock,
}

impl StripePolicy {
    /// Name as in scenario files and result tables.
    pub fn name(self) -> &'static str {
        match self {
            StripePolicy::RoundRobin => "round_robin",
            StripePolicy::WriteUntilBlock => "write_until_block",
        }
    }
}

/// `stripe = { connections = 4, block = "8KB", policy = "round_robin" }`.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StripeConfig {
    /// Number of TCP connections w (1..=255).
    pub connections: u32,
    /// Block size; default 8 KB.
    #[serde(default = "default_block")]
    pub block: Bytes,
    /// Block assignment; default round-robin.
    #[serde(default)]
    pub policy: StripePolicy,
    /// Per-connection send buffer: written and not yet acknowledged bytes; default 64 KB.
    #[serde(default = "default_send_buffer")]
    pub send_buffer: Bytes,
}

fn default_block() -> Bytes {
    Bytes(8_000)
}
fn default_send_buffer() -> Bytes {
    Bytes(64_000)
}

impl StripeConfig {
    /// Checks the values; the error names the key.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        crate::ensure_scenario!(
            (1..=255).contains(&self.connections),
            "connections",
            "expected 1 to 255 connections, found {}",
            self.connections
        );
        crate::ensure_scenario!(
            self.block.0 > 0,
            "block",
            "expected a positive block size, found 0"
        );
        crate::ensure_scenario!(
            self.send_buffer.0 >= self.block.0,
            "send_buffer",
            "expected at least one block ({} bytes), found {}",
            self.block.0,
            self.send_buffer.0
        );
        Ok(())
    }
}

/// One of the striped connections: both ends and their timer bookkeeping.
#[derive(Clone, Debug)]
pub struct StripeConn {
    /// The sending end.
    pub snd: TcpSender,
    /// The receiving end.
    pub rcv: TcpReceiver,
    /// Pending timer events of the sender and the receiver (NEVER if none).
    pub armed: [SimTime; 2],
    /// Bytes the application wrote to it.
    pub written: u64,
    /// Bytes the application read from it.
    pub read: u64,
    /// ACKs its receiver sent advertising a zero window.
    pub zero_windows: u64,
    /// ACKs its receiver sent advertising a window below one segment, zero included: a
    /// buffer that is not a multiple of the segment fills without reading 0 (P4 §2).
    pub small_windows: u64,
}

/// The striping application of one flow (both ends).
#[derive(Clone, Debug)]
pub struct Stripe {
    /// The configuration.
    pub cfg: StripeConfig,
    /// The connections, by subflow index.
    pub conns: Vec<StripeConn>,
    /// Bytes not yet written (`None`: unlimited).
    left: Option<u64>,
    /// Next connection to write to.
    next: usize,
    /// Blocks written and not completely read, in stream order: (connection, length).
    blocks: VecDeque<(usize, u64)>,
    /// Bytes of the front block already read.
    head_read: u64,
    /// In-order bytes the receiving application read (its goodput).
    pub app_bytes: u64,
    /// Blocks read completely.
    pub blocks_read: u64,
    /// Reads that found the next block's connection empty while another connection
    /// held unread data (head-of-line blocking).
    pub hol_waits: u64,
}

impl Stripe {
    /// A striping application sending `bytes` (unlimited if `None`) over
    /// `cfg.connections` connections configured by `tcp`.
    pub fn new(cfg: &StripeConfig, tcp: &TcpConfig, bytes: Option<u64>) -> Self {
        let conn = StripeConn {
            snd: TcpSender::new_app_limited(tcp),
            rcv: TcpReceiver::new(tcp),
            armed: [SimTime::NEVER; 2],
            written: 0,
            read: 0,
            zero_windows: 0,
            small_windows: 0,
        };
        Stripe {
            cfg: *cfg,
            conns: vec![conn; cfg.connections as usize],
            left: bytes,
            next: 0,
            blocks: VecDeque::new(),
            head_read: 0,
            app_bytes: 0,
            blocks_read: 0,
            hol_waits: 0,
        }
    }

    /// Room for `len` more bytes in connection `c`'s send buffer.
    fn room(&self, c: usize, len: u64) -> bool {
        self.conns[c].snd.buffered() + len <= self.cfg.send_buffer.0
    }

    /// The sending application writes as many blocks as its policy and the send
    /// buffers allow; segments go to `outs[c]` for connection `c`. After the last
    /// block every connection is closed.
    pub fn write(&mut self, now: SimTime, outs: &mut [Vec<TcpHeader>]) {
        let w = self.conns.len();
        let mut refused = 0;
        while self.left != Some(0) && refused < w {
            let c = self.next;
            let len = self
                .left
                .map_or(self.cfg.block.0, |l| l.min(self.cfg.block.0));
            if !self.room(c, len) {
                match self.cfg.policy {
                    // Round-robin waits for this very connection.
                    StripePolicy::RoundRobin => break,
                    StripePolicy::WriteUntilBlock => {
                        self.next = (c + 1) % w;
                        refused += 1;
                        continue;
                    }
                }
            }
            refused = 0;
            self.conns[c].snd.app_write(now, len, &mut outs[c]);
            self.conns[c].written += len;
            self.blocks.push_back((c, len));
            self.left = self.left.map(|l| l - len);
            if self.cfg.policy == StripePolicy::RoundRobin {
                self.next = (c + 1) % w;
            }
            if self.left == Some(0) {
                for (k, conn) in self.conns.iter_mut().enumerate() {
                    conn.snd.app_close(now, &mut outs[k]);
                }
            }
        }
    }

    /// The receiving application reads the next in-sequence blocks as far as they have
    /// arrived, each from its own connection (window updates go to `outs[c]`).
    /// Returns the in-order bytes read.
    pub fn read(&mut self, now: SimTime, outs: &mut [Vec<TcpHeader>]) -> u64 {
        let mut got = 0;
        while let Some(&(c, len)) = self.blocks.front() {
            let conn = &mut self.conns[c];
            let avail = conn.rcv.rcv_nxt() - conn.read;
            let n = avail.min(len - self.head_read);
            if n == 0 {
                if self.conns.iter().any(|x| x.rcv.rcv_nxt() > x.read) {
                    self.hol_waits += 1;
                }
                break;
            }
            conn.rcv.app_read(now, n, &mut outs[c]);
            conn.read += n;
            self.head_read += n;
            got += n;
            if self.head_read == len {
                self.blocks.pop_front();
                self.head_read = 0;
                self.blocks_read += 1;
            }
        }
        self.app_bytes += got;
        got
    }

    /// A finite transfer was written, acknowledged and read completely.
    pub fn is_done(&self) -> bool {
        self.left == Some(0) && self.blocks.is_empty() && self.conns.iter().all(|c| c.snd.is_done())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(w: u32, policy: StripePolicy) -> StripeConfig {
        StripeConfig {
            connections: w,
            block: Bytes(1000),
            policy,
            send_buffer: Bytes(2000),
        }
    }

    fn outs(w: usize) -> Vec<Vec<TcpHeader>> {
        vec![Vec::new(); w]
    }

    #[test]
    fn round_robin_writes_block_k_to_connection_k_mod_w_until_one_is_full() {
        let tcp = TcpConfig::default();
        let mut s = Stripe::new(&cfg(3, StripePolicy::RoundRobin), &tcp, None);
        s.write(SimTime::ZERO, &mut outs(3));
        // Two blocks fit each 2000-byte send buffer: 6 blocks, in order 0,1,2,0,1,2.
        let order: Vec<usize> = s.blocks.iter().map(|b| b.0).collect();
        assert_eq!(order, vec![0, 1, 2, 0, 1, 2]);
    }

    #[test]
    fn write_until_block_fills_one_connection_before_the_next() {
        let tcp = TcpConfig::default();
        let mut s = Stripe::new(&cfg(3, StripePolicy::WriteUntilBlock), &tcp, Some(5500));
        s.write(SimTime::ZERO, &mut outs(3));
        let order: Vec<(usize, u64)> = s.blocks.iter().copied().collect();
        assert_eq!(
            order,
            vec![
                (0, 1000),
                (0, 1000),
                (1, 1000),
                (1, 1000),
                (2, 1000),
                (2, 500)
            ]
        );
    }

    #[test]
    fn bad_values_name_the_key() {
        let mut c = cfg(0, StripePolicy::RoundRobin);
        assert_eq!(c.validate().unwrap_err().key, "connections");
        c.connections = 256;
        assert_eq!(c.validate().unwrap_err().key, "connections");
        c.connections = 2;
        c.send_buffer = Bytes(999);
        assert_eq!(c.validate().unwrap_err().key, "send_buffer");
        let e = toml::from_str::<StripeConfig>("connections = 2\npolicy = \"random\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("round_robin"), "{e}");
    }
}

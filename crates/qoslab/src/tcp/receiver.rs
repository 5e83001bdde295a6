//! The receiving end: cumulative ACKs, delayed ACKs (RFC 5681 §4.2), SACK blocks
//! (RFC 2018), ECN echo (RFC 3168 §6.1.3), a finite receive buffer, SYN-ACK and FIN.

use super::sack::OooRanges;
use super::{TcpConfig, Variant};
use crate::packet::{tcp_flags, SackBlock, SackList, TcpHeader, MAX_SACK_BLOCKS};
use crate::time::{Dur, SimTime};

/// A TCP receiver (sink). Goodput is counted when bytes become in order.
#[derive(Clone, Debug)]
pub struct TcpReceiver {
    mss: u32,
    max_wnd: u32,
    buffer: Option<u64>,
    sack_blocks: u8,
    delayed_ack: bool,
    delack_timeout: Dur,
    /// Next byte expected.
    rcv_nxt: u64,
    /// Bytes in order and not yet read by the application (finite buffer only).
    unread: u64,
    ooo: OooRanges,
    /// Where the FIN sits, once seen.
    fin_seq: Option<u64>,
    /// ECE on every ACK until a CWR arrives.
    ece: bool,
    /// Full-sized in-order segments not yet acknowledged (delayed ACK).
    unacked_segs: u32,
    delack_at: Option<SimTime>,
    /// `ts_val` to echo on the next ACK.
    ts_recent: SimTime,
    /// Window in the last ACK sent [bytes].
    last_wnd: u32,
    /// Subflow index to echo.
    subflow: u8,
}

impl TcpReceiver {
    /// A receiver for a connection configured by `cfg`.
    pub fn new(cfg: &TcpConfig) -> Self {
        let sack = if cfg.variant == Variant::Sack {
            cfg.sack_blocks.min(MAX_SACK_BLOCKS as u8)
        } else {
            0
        };
        TcpReceiver {
            mss: cfg.mss,
            max_wnd: cfg.max_window_bytes(),
            buffer: cfg.rcv_buffer.map(|b| b.0),
            sack_blocks: sack,
            delayed_ack: cfg.delayed_ack,
            delack_timeout: cfg.delack_timeout,
            rcv_nxt: 0,
            unread: 0,
            ooo: OooRanges::default(),
            fin_seq: None,
            ece: false,
            unacked_segs: 0,
            delack_at: None,
            ts_recent: SimTime::ZERO,
            last_wnd: cfg.max_window_bytes(),
            subflow: 0,
        }
    }

    /// Takes one segment from the sender; `ce` is true if the network marked it CE.
    /// Returns the number of new in-order payload bytes (goodput; duplicates excluded).
    pub fn on_segment(
        &mut self,
        now: SimTime,
        seg: &TcpHeader,
        ce: bool,
        out: &mut Vec<TcpHeader>,
    ) -> u64 {
        self.ts_recent = seg.ts_val;
        self.subflow = seg.subflow;
        // RFC 3168 §6.1.3: CWR stops the echo; a CE on this very packet starts it again.
        if seg.flags & tcp_flags::CWR != 0 {
            self.ece = false;
        }
        if ce {
            self.ece = true;
        }
        if seg.flags & tcp_flags::SYN != 0 {
            self.send_ack(tcp_flags::SYN | tcp_flags::ACK, out);
            return 0;
        }
        let mut delivered = 0;
        let mut ack_now = !self.delayed_ack;
        if seg.len > 0 {
            let start = seg.seq;
            let end = seg.seq + seg.len as u64;
            let limit = self.buffer.map(|b| self.rcv_nxt - self.unread + b);
            if end <= self.rcv_nxt {
                // Duplicate: acknowledge at once so the sender learns it (RFC 5681 §4.2).
                ack_now = true;
            } else if limit.is_some_and(|l| end > l) {
                // No room in the buffer: drop it and tell the sender the window.
                ack_now = true;
            } else if start <= self.rcv_nxt {
                let had_hole = !self.ooo.is_empty();
                let old = self.rcv_nxt;
                self.rcv_nxt = self.ooo.advance(end);
                delivered = self.rcv_nxt - old;
                if self.buffer.is_some() {
                    self.unread += delivered;
                }
                if had_hole {
                    // Filled (part of) a hole: immediate ACK (RFC 5681 §4.2).
                    ack_now = true;
                } else if seg.len >= self.mss {
                    self.unacked_segs += 1;
                    // Every second full-sized segment (RFC 5681 §4.2, RFC 1122).
                    if self.unacked_segs >= 2 {
                        ack_now = true;
                    }
                } else {
                    self.unacked_segs += 1;
                }
            } else {
                // Out of order: immediate duplicate ACK with SACK blocks.
                self.ooo.insert(start, end);
                ack_now = true;
            }
        }
        if seg.flags & tcp_flags::FIN != 0 {
            self.fin_seq = Some(seg.seq + seg.len as u64);
            ack_now = true;
        }
        if seg.len == 0 && seg.flags & tcp_flags::FIN == 0 {
            // A bare ACK or window probe: answer so the sender sees the window.
            ack_now = true;
        }
        if ack_now {
            self.send_ack(tcp_flags::ACK, out);
        } else if self.delack_at.is_none() {
            self.delack_at = Some(now + self.delack_timeout);
        }
        delivered
    }

    /// Fires the delayed-ACK timer if it is due.
    pub fn on_timer(&mut self, now: SimTime, out: &mut Vec<TcpHeader>) {
        if self.delack_at.is_some_and(|t| t <= now) {
            self.send_ack(tcp_flags::ACK, out);
        }
    }

    /// When the delayed-ACK timer next fires, if armed.
    pub fn next_timer(&self) -> Option<SimTime> {
        self.delack_at
    }

    /// The application reads up to `max_bytes` from the receive buffer; returns how
    /// many it got. With a finite buffer, a window update is sent when the window opens
    /// by at least one segment (or half the buffer) since the last ACK (RFC 1122
    /// §4.2.3.3 receiver SWS avoidance). Without one, data is read on arrival and this
    /// returns 0.
    pub fn app_read(&mut self, _now: SimTime, max_bytes: u64, out: &mut Vec<TcpHeader>) -> u64 {
        let Some(buf) = self.buffer else {
            return 0;
        };
        let n = max_bytes.min(self.unread);
        self.unread -= n;
        let wnd = self.window();
        let step = (self.mss as u64).min(buf / 2) as u32;
        if n > 0 && wnd >= self.last_wnd.saturating_add(step) {
            self.send_ack(tcp_flags::ACK, out);
        }
        n
    }

    /// The maximum segment size [bytes].
    pub fn mss(&self) -> u32 {
        self.mss
    }

    /// Bytes in order and not yet read by the application (finite buffer only).
    pub fn unread(&self) -> u64 {
        self.unread
    }

    /// Next byte expected (cumulative ACK point, FIN excluded).
    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }

    /// True once the FIN and everything before it arrived.
    pub fn fin_received(&self) -> bool {
        self.fin_seq.is_some_and(|f| f <= self.rcv_nxt)
    }

    /// The window to advertise [bytes]: free buffer space, capped at `max_window`.
    fn window(&self) -> u32 {
        match self.buffer {
            None => self.max_wnd,
            Some(b) => (b.saturating_sub(self.unread)).min(self.max_wnd as u64) as u32,
        }
    }

    fn send_ack(&mut self, flags: u8, out: &mut Vec<TcpHeader>) {
        let mut ack = self.rcv_nxt;
        if self.fin_received() {
            ack += 1; // the FIN takes one sequence number
        }
        let mut h = TcpHeader {
            seq: 0,
            ack,
            len: 0,
            flags: flags | if self.ece { tcp_flags::ECE } else { 0 },
            wnd: self.window(),
            sack: SackList::default(),
            ts_val: SimTime::ZERO,
            ts_ecr: self.ts_recent,
            retransmit: false,
            subflow: self.subflow,
            dsn: 0,
            view: Default::default(),
        };
        if self.sack_blocks > 0 && !self.ooo.is_empty() {
            let mut blocks = [SackBlock::default(); MAX_SACK_BLOCKS];
            let n = self.ooo.blocks(self.sack_blocks as usize, &mut blocks);
            h.set_sack(&blocks[..n as usize]);
        }
        self.last_wnd = h.wnd;
        self.unacked_segs = 0;
        self.delack_at = None;
        out.push(h);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(seq: u64, len: u32) -> TcpHeader {
        TcpHeader {
            seq,
            len,
            flags: tcp_flags::ACK,
            ..Default::default()
        }
    }

    fn cfg() -> TcpConfig {
        TcpConfig {
            mss: 1000,
            ..Default::default()
        }
    }

    #[test]
    fn delayed_ack_every_second_segment_and_timer_for_a_lone_one() {
        let c = TcpConfig {
            delayed_ack: true,
            ..cfg()
        };
        let mut r = TcpReceiver::new(&c);
        let mut out = Vec::new();
        let t0 = SimTime::from_millis(10);
        assert_eq!(r.on_segment(t0, &data(0, 1000), false, &mut out), 1000);
        assert!(out.is_empty());
        assert_eq!(r.next_timer(), Some(t0 + Dur::from_millis(200)));
        r.on_segment(t0, &data(1000, 1000), false, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].ack, 2000);
        assert_eq!(r.next_timer(), None);
        out.clear();
        // A lone segment: no ACK until the timer; early calls do nothing.
        let t1 = SimTime::from_millis(50);
        r.on_segment(t1, &data(2000, 1000), false, &mut out);
        assert!(out.is_empty());
        r.on_timer(t1 + Dur::from_millis(199), &mut out);
        assert!(out.is_empty());
        assert_eq!(r.next_timer(), Some(t1 + Dur::from_millis(200)));
        r.on_timer(t1 + Dur::from_millis(200), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].ack, 3000);
        assert_eq!(r.next_timer(), None);
    }

    #[test]
    fn out_of_order_and_hole_filling_are_acked_at_once_with_sack() {
        let c = TcpConfig {
            delayed_ack: true,
            variant: Variant::Sack,
            ..cfg()
        };
        let mut r = TcpReceiver::new(&c);
        let mut out = Vec::new();
        let t = SimTime::ZERO;
        r.on_segment(t, &data(0, 1000), false, &mut out);
        assert!(out.is_empty());
        assert_eq!(r.on_segment(t, &data(2000, 1000), false, &mut out), 0);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].ack, 1000);
        assert_eq!(
            out[0].sack_blocks().collect::<Vec<_>>(),
            [SackBlock {
                start: 2000,
                end: 3000
            }]
        );
        assert_eq!(r.on_segment(t, &data(1000, 1000), false, &mut out), 2000);
        assert_eq!(out.len(), 2);
        assert_eq!(out[1].ack, 3000);
        assert_eq!(out[1].nsack(), 0);
        // A duplicate is acked at once and delivers nothing.
        assert_eq!(r.on_segment(t, &data(0, 1000), false, &mut out), 0);
        assert_eq!(out.len(), 3);
    }

    #[test]
    fn ece_until_cwr() {
        let mut r = TcpReceiver::new(&cfg());
        let mut out = Vec::new();
        let t = SimTime::ZERO;
        r.on_segment(t, &data(0, 1000), true, &mut out);
        r.on_segment(t, &data(1000, 1000), false, &mut out);
        let mut cwr = data(2000, 1000);
        cwr.flags |= tcp_flags::CWR;
        r.on_segment(t, &cwr, false, &mut out);
        let ece: Vec<bool> = out.iter().map(|h| h.flags & tcp_flags::ECE != 0).collect();
        assert_eq!(ece, vec![true, true, false]);
    }

    #[test]
    fn finite_buffer_shrinks_window_drops_overflow_and_updates() {
        let c = TcpConfig {
            rcv_buffer: Some(crate::units::Bytes(3000)),
            ..cfg()
        };
        let mut r = TcpReceiver::new(&c);
        let mut out = Vec::new();
        let t = SimTime::ZERO;
        for i in 0..3 {
            r.on_segment(t, &data(i * 1000, 1000), false, &mut out);
        }
        assert_eq!(
            out.iter().map(|h| h.wnd).collect::<Vec<_>>(),
            vec![2000, 1000, 0]
        );
        assert_eq!(r.on_segment(t, &data(3000, 1000), false, &mut out), 0);
        assert_eq!(out[3].ack, 3000);
        out.clear();
        assert_eq!(r.app_read(t, 500, &mut out), 500);
        assert!(out.is_empty(), "500 B is less than a segment: no update");
        assert_eq!(r.app_read(t, 5000, &mut out), 2500);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].wnd, 3000);
    }

    #[test]
    fn syn_and_fin() {
        let mut r = TcpReceiver::new(&cfg());
        let mut out = Vec::new();
        let syn = TcpHeader {
            flags: tcp_flags::SYN,
            ..Default::default()
        };
        r.on_segment(SimTime::ZERO, &syn, false, &mut out);
        assert_eq!(
            out[0].flags & (tcp_flags::SYN | tcp_flags::ACK),
            tcp_flags::SYN | tcp_flags::ACK
        );
        let mut fin = data(0, 500);
        fin.flags |= tcp_flags::FIN;
        assert_eq!(r.on_segment(SimTime::ZERO, &fin, false, &mut out), 500);
        assert_eq!(out[1].ack, 501);
        assert!(r.fin_received());
    }
}

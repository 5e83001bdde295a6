//! The receiving end: cumulative ACKs, delayed ACKs (RFC 5681 §4.2), SACK blocks
//! (RFC 2018), ECN echo (RFC 3168 §6.1.3), a finite receive buffer, SYN-ACK and FIN;
//! optionally Linux's quick-ACK mode and adaptive delayed-ACK timeout ([`LinuxAck`]).

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
    /// ECN-capable connection (data arrives with ECT unless retransmitted).
    ecn: bool,
    /// Linux's ACK timing, when `quickack` or `adaptive_delack` is on.
    linux: Box<LinuxAck>,
    /// DCTCP's echo (RFC 8257 §3.2): `ece` is the CE state of the last data segment
    /// with ECT, CWR is ignored, and a change of state sends a delayed ACK at once.
    dctcp: bool,
    /// DCTCP or a Linux ACK option is on: [`TcpReceiver::on_segment`] runs the code
    /// that tests for them (else `linux.quick` stays 0 and `linux.ato` is not read).
    extras: bool,
}

/// Most ACKs sent at once in one quick-ACK episode (Linux's `TCP_MAX_QUICKACKS`).
const MAX_QUICKACKS: u32 = 16;
/// Linux's `TCP_DELACK_MAX`: the longest a delayed ACK waits.
const DELACK_MAX: Dur = Dur::from_millis(200);

/// What Linux's receiver keeps to time its ACKs (its `icsk_ack`), read from tcp_input.c
/// (`tcp_event_data_recv`, `tcp_incr_quickack`, `tcp_enter_quickack_mode`,
/// `tcp_data_ecn_check`, `__tcp_ack_snd_check`), tcp_output.c (`tcp_send_delayed_ack`)
/// and tcp_timer.c (the delayed-ACK timer inflating `ato`). `delack_timeout` stands for
/// Linux's `TCP_ATO_MIN` = `TCP_DELACK_MIN` (40 ms).
#[derive(Clone, Debug, Default)]
struct LinuxAck {
    /// Either option on: with both off the receiver keeps none of this state.
    on: bool,
    /// Quick-ACK mode on (`TcpConfig::quickack`).
    quickack: bool,
    /// Adaptive timeout on (`TcpConfig::adaptive_delack`).
    adaptive: bool,
    /// ACKs still to send at once (`quick`).
    quick: u32,
    /// The adaptive delayed-ACK timeout (`ato`).
    ato: Dur,
    /// When the last in-order data segment arrived (`lrcvtime`); `None` before the first.
    last_rcv: Option<SimTime>,
    /// When the SYN-ACK went out, until the next segment measures the handshake's RTT.
    synack_at: Option<SimTime>,
    /// The handshake's RTT: a pure receiver's only sample (`srtt` from
    /// `tcp_synack_rtt_meas`).
    rtt: Option<Dur>,
    /// A segment with ECT has arrived (`TCP_ECN_SEEN`).
    ect_seen: bool,
    /// `TCP_ATO_MIN`, `min_rto` and `initial_rto` of the connection.
    ato_min: Dur,
    min_rto: Dur,
    initial_rto: Dur,
}

impl LinuxAck {
    /// The receiver's RTO, which bounds `ato` and marks a gap as "too long": from the
    /// handshake's one sample m, m + max(`min_rto`, 2m) (`tcp_rtt_estimator`'s first
    /// sample, `tcp_set_rto`); `initial_rto` without a handshake (`TCP_TIMEOUT_INIT`).
    fn rto(&self) -> Dur {
        match self.rtt {
            Some(m) => m + self.min_rto.max(m + m),
            None => self.initial_rto,
        }
    }

    /// How long the delayed-ACK timer waits when armed now (`tcp_send_delayed_ack`):
    /// `ato`, but above `TCP_DELACK_MIN` no longer than the handshake's RTT (at least
    /// `TCP_DELACK_MIN`), and never above `TCP_DELACK_MAX`.
    fn delack_wait(&self) -> Dur {
        let mut ato = self.ato.max(self.ato_min);
        if ato > self.ato_min {
            if let Some(rtt) = self.rtt {
                ato = ato.min(rtt.max(self.ato_min));
            }
        }
        ato.min(DELACK_MAX)
    }
}

impl TcpReceiver {
    /// A receiver for a connection configured by `cfg`.
    pub fn new(cfg: &TcpConfig) -> Self {
        let sack = if cfg.variant == Variant::Sack {
            cfg.sack_blocks.min(MAX_SACK_BLOCKS as u8)
        } else {
            0
        };
        let dctcp = cfg.ecn && matches!(cfg.cc, super::CcConfig::Dctcp { .. });
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
            ecn: cfg.ecn,
            linux: Box::new(LinuxAck {
                on: cfg.quickack || cfg.adaptive_delack,
                quickack: cfg.quickack,
                adaptive: cfg.adaptive_delack,
                ato: cfg.delack_timeout,
                ato_min: cfg.delack_timeout,
                min_rto: cfg.min_rto,
                initial_rto: cfg.initial_rto,
                ..Default::default()
            }),
            dctcp,
            extras: dctcp || cfg.quickack || cfg.adaptive_delack,
        }
    }

    /// `tcp_incr_quickack`: at least `max` more ACKs at once, never more than half the
    /// advertised window in segments (2 if that is 0).
    fn incr_quickack(&mut self, max: u32) {
        let half = self.window() / (2 * self.mss.max(1));
        let n = if half == 0 { 2 } else { half }.min(max);
        self.linux.quick = self.linux.quick.max(n);
    }

    /// `tcp_enter_quickack_mode`: quick ACKs, and `ato` back to its minimum. Out of
    /// line (as the other Linux helpers): `on_segment` stays small with both options off.
    #[inline(never)]
    fn enter_quickack(&mut self, max: u32) {
        if self.linux.quickack {
            self.incr_quickack(max);
        }
        self.linux.ato = self.linux.ato_min;
    }

    /// `tcp_event_data_recv` for an in-order data segment: the first one starts
    /// quick-ACK mode; later ones adapt `ato` to the gap since the previous one, and a gap
    /// longer than the RTO (the sender stalled) starts quick-ACK mode again.
    #[inline(never)]
    fn data_recv(&mut self, now: SimTime) {
        let la = &self.linux;
        match la.last_rcv {
            None => {
                if la.quickack {
                    self.incr_quickack(MAX_QUICKACKS);
                }
                self.linux.ato = self.linux.ato_min;
            }
            Some(last) => {
                let m = now.saturating_since(last);
                let half_min = Dur::from_nanos(la.ato_min.as_nanos() / 2);
                let half_ato = Dur::from_nanos(la.ato.as_nanos() / 2);
                let rto = la.rto();
                if la.adaptive && m <= half_min {
                    self.linux.ato = half_ato + half_min;
                } else if la.adaptive && m < la.ato {
                    self.linux.ato = (half_ato + m).min(rto);
                } else if la.quickack && m > rto {
                    self.incr_quickack(MAX_QUICKACKS);
                }
            }
        }
        self.linux.last_rcv = Some(now);
    }

    /// `tcp_data_ecn_check` (quick-ACK mode only): 2 quick ACKs for a CE mark that
    /// starts the echo, and for a segment without ECT once ECT was seen ("probably a
    /// retransmit": qoslab's ECN sender sends exactly its retransmissions without ECT).
    #[inline(never)]
    fn ecn_check(&mut self, seg: &TcpHeader, starts_echo: bool) {
        if !self.ecn || !self.linux.quickack {
            return;
        }
        if seg.retransmit {
            if self.linux.ect_seen {
                self.enter_quickack(2);
            }
        } else {
            self.linux.ect_seen = true;
        }
        if starts_echo {
            self.enter_quickack(2);
        }
    }

    /// `tcp_dec_quickack_mode` after an ACK of data went out: one quick ACK used; the
    /// last one deflates `ato`.
    #[inline]
    fn quickack_sent(&mut self) {
        if self.linux.quick > 0 {
            self.linux.quick -= 1;
            if self.linux.quick == 0 {
                self.linux.ato = self.linux.ato_min;
            }
        }
    }

    /// How long a delayed ACK waits when armed now.
    fn delack_wait(&self) -> Dur {
        if self.linux.adaptive {
            self.linux.delack_wait()
        } else {
            self.delack_timeout
        }
    }

    /// Takes one segment from the sender; `ce` is true if the network marked it CE.
    /// Returns the number of new in-order payload bytes (goodput; duplicates excluded).
    #[inline]
    pub fn on_segment(
        &mut self,
        now: SimTime,
        seg: &TcpHeader,
        ce: bool,
        out: &mut Vec<TcpHeader>,
    ) -> u64 {
        if self.extras {
            self.segment::<true>(now, seg, ce, out)
        } else {
            self.segment::<false>(now, seg, ce, out)
        }
    }

    /// [`TcpReceiver::on_segment`], compiled twice: with `EXTRAS` false (neither DCTCP
    /// nor a Linux ACK option, so `quick` stays 0 and `ato` unused) every test of those
    /// is gone, and a Reno/SACK receiver runs the code it ran before they existed.
    #[inline(never)]
    fn segment<const EXTRAS: bool>(
        &mut self,
        now: SimTime,
        seg: &TcpHeader,
        ce: bool,
        out: &mut Vec<TcpHeader>,
    ) -> u64 {
        self.ts_recent = seg.ts_val;
        self.subflow = seg.subflow;
        let mut starts_echo = ce && !self.ece;
        if EXTRAS && self.dctcp {
            // RFC 8257 §3.2: the two-state machine. Segments without ECT (qoslab's ECN
            // sender sends exactly its retransmissions so) leave the state, as Linux's
            // `tcp_data_ecn_check`. A change while an ACK is delayed first sends that ACK
            // at once, with the old state, for the data before this segment.
            if seg.len > 0 && !seg.retransmit && ce != self.ece {
                if self.delack_at.is_some() {
                    self.send_ack(tcp_flags::ACK, out);
                    self.quickack_sent();
                }
                self.ece = ce;
            }
        } else {
            // RFC 3168 §6.1.3: CWR stops the echo; a CE on this very packet starts it
            // again.
            if seg.flags & tcp_flags::CWR != 0 {
                self.ece = false;
            }
            starts_echo = ce && !self.ece;
            if ce {
                self.ece = true;
            }
        }
        if seg.flags & tcp_flags::SYN != 0 {
            self.send_ack(tcp_flags::SYN | tcp_flags::ACK, out);
            if EXTRAS && self.linux.adaptive {
                self.linux.synack_at = Some(now);
            }
            return 0;
        }
        if EXTRAS && self.linux.adaptive {
            if let Some(t) = self.linux.synack_at.take() {
                self.linux.rtt = Some(now.saturating_since(t));
            }
        }
        let mut delivered = 0;
        let mut ack_now = !self.delayed_ack;
        if seg.len > 0 {
            let start = seg.seq;
            let end = seg.seq + seg.len as u64;
            let limit = self.buffer.map(|b| self.rcv_nxt - self.unread + b);
            if end <= self.rcv_nxt {
                // Duplicate: acknowledge at once so the sender learns it (RFC 5681 §4.2);
                // Linux also ACKs the next ones at once (a lost ACK is likely).
                ack_now = true;
                if EXTRAS && self.linux.on {
                    self.enter_quickack(MAX_QUICKACKS);
                }
            } else if limit.is_some_and(|l| end > l) {
                // No room in the buffer: drop it and tell the sender the window.
                ack_now = true;
                if EXTRAS && self.linux.on {
                    self.enter_quickack(MAX_QUICKACKS);
                }
            } else if start <= self.rcv_nxt {
                if EXTRAS && self.linux.on {
                    self.data_recv(now);
                    self.ecn_check(seg, starts_echo);
                }
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
                if EXTRAS && self.linux.on {
                    self.ecn_check(seg, starts_echo);
                }
                self.ooo.insert(start, end);
                ack_now = true;
            }
            // Linux's quick-ACK mode: every data segment at once.
            if EXTRAS && self.linux.quick > 0 {
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
            if EXTRAS && seg.len > 0 {
                self.quickack_sent();
            }
        } else if self.delack_at.is_none() {
            let wait = if EXTRAS {
                self.delack_wait()
            } else {
                self.delack_timeout
            };
            self.delack_at = Some(now + wait);
        }
        delivered
    }

    /// Fires the delayed-ACK timer if it is due. With `adaptive_delack` a timer that
    /// fired doubles `ato`, up to the RTO (Linux: "delayed ACK missed: inflate ATO").
    pub fn on_timer(&mut self, now: SimTime, out: &mut Vec<TcpHeader>) {
        if self.delack_at.is_some_and(|t| t <= now) {
            // Without the extras (`extras` false) `linux` holds nothing to update.
            if self.extras && self.linux.adaptive {
                let la = &self.linux;
                self.linux.ato = (la.ato + la.ato).min(la.rto());
            }
            self.send_ack(tcp_flags::ACK, out);
            if self.extras {
                self.quickack_sent();
            }
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
    fn dctcp_echoes_each_segments_mark_and_flushes_a_delayed_ack_on_a_change() {
        // RFC 8257 §3.2 with delayed ACKs (every second segment). CE on segments
        // 2, 3, 4 and 7; segment 6 carries CWR, which DCTCP's receiver ignores.
        let c = TcpConfig {
            delayed_ack: true,
            ecn: true,
            cc: super::super::CcConfig::Dctcp {
                g: 1.0 / 16.0,
                alpha_init: 1.0,
            },
            ..cfg()
        };
        let ce = [false, false, true, true, true, false, false, true];
        let run = |c: &TcpConfig| {
            let mut r = TcpReceiver::new(c);
            let mut out = Vec::new();
            let t = SimTime::ZERO;
            for (i, &m) in ce.iter().enumerate() {
                let mut d = data(i as u64 * 1000, 1000);
                if i == 6 {
                    d.flags |= tcp_flags::CWR;
                }
                r.on_segment(t, &d, m, &mut out);
            }
            r.on_timer(SimTime::from_millis(200), &mut out);
            out.iter()
                .map(|h| (h.ack / 1000, h.flags & tcp_flags::ECE != 0))
                .collect::<Vec<_>>()
        };
        // 2 (unmarked pair); 4 (marked pair: the change at 2 found no ACK pending);
        // 5 at once when unmarked 5 arrives behind marked 4, with 4's state; 7 (the
        // unmarked pair 5–6); 8 by the timer, marked.
        assert_eq!(
            run(&c),
            [(2, false), (4, true), (5, true), (7, false), (8, true)]
        );
        // RFC 3168's echo of the same segments: sticky from 2 until the CWR on 6, again from 7.
        let classic = TcpConfig {
            cc: super::super::CcConfig::Reno,
            ..c.clone()
        };
        assert_eq!(run(&classic), [(2, false), (4, true), (6, true), (8, true)]);
        // A retransmission (sent without ECT) leaves the state: no flush, no change.
        let mut r = TcpReceiver::new(&c);
        let mut out = Vec::new();
        r.on_segment(SimTime::ZERO, &data(0, 1000), true, &mut out);
        let mut rtx = data(1000, 1000);
        rtx.retransmit = true;
        r.on_segment(SimTime::ZERO, &rtx, false, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].ack, 2000);
        assert_ne!(out[0].flags & tcp_flags::ECE, 0);
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

    /// Feeds `n` in-order 1000-byte segments from segment number `from` on, all at `t`.
    fn feed(r: &mut TcpReceiver, t: SimTime, from: u64, n: u64, out: &mut Vec<TcpHeader>) {
        for i in from..from + n {
            r.on_segment(t, &data(i * 1000, 1000), false, out);
        }
    }

    /// The cumulative ACK of every ACK in `out`, in segments.
    fn acked(out: &[TcpHeader]) -> Vec<u64> {
        out.iter().map(|h| h.ack / 1000).collect()
    }

    fn linux(max_window: u32) -> TcpConfig {
        TcpConfig {
            delayed_ack: true,
            quickack: true,
            max_window,
            delack_timeout: Dur::from_millis(40),
            ..cfg()
        }
    }

    #[test]
    fn quickack_acks_the_first_segments_at_once_then_every_second() {
        // A 64-segment window: min(16, 64 / 2) = 16 quick ACKs, then every second.
        let mut r = TcpReceiver::new(&linux(64));
        let mut out = Vec::new();
        feed(&mut r, SimTime::ZERO, 0, 20, &mut out);
        let mut want: Vec<u64> = (1..=16).collect();
        want.extend([18, 20]);
        assert_eq!(acked(&out), want);
        // A 6-segment window: 6 / 2 = 3 quick ACKs.
        let mut r = TcpReceiver::new(&linux(6));
        out.clear();
        feed(&mut r, SimTime::ZERO, 0, 7, &mut out);
        assert_eq!(acked(&out), [1, 2, 3, 5, 7]);
        // Off: every second segment from the first.
        let mut r = TcpReceiver::new(&TcpConfig {
            quickack: false,
            ..linux(64)
        });
        out.clear();
        feed(&mut r, SimTime::ZERO, 0, 6, &mut out);
        assert_eq!(acked(&out), [2, 4, 6]);
    }

    #[test]
    fn quickack_after_a_duplicate_a_stall_and_a_retransmission_without_ect() {
        // Window 8: 4 quick ACKs at a time.
        let mut r = TcpReceiver::new(&linux(8));
        let mut out = Vec::new();
        let t = SimTime::ZERO;
        feed(&mut r, t, 0, 8, &mut out);
        assert_eq!(acked(&out), [1, 2, 3, 4, 6, 8]);
        out.clear();
        // A duplicate: ACKed at once, and so are the next 3 (4 quick ACKs in all).
        r.on_segment(t, &data(0, 1000), false, &mut out);
        feed(&mut r, t, 8, 5, &mut out);
        assert_eq!(acked(&out), [8, 9, 10, 11, 13]);
        out.clear();
        // A gap longer than the RTO (1 s without a handshake): 4 quick ACKs again.
        let later = SimTime::from_millis(1500);
        feed(&mut r, later, 13, 6, &mut out);
        assert_eq!(acked(&out), [14, 15, 16, 17, 19]);
        out.clear();
        // Within the RTO: no quick ACKs.
        feed(&mut r, SimTime::from_millis(2400), 19, 2, &mut out);
        assert_eq!(acked(&out), [21]);
        // With ECN, a retransmission (sent without ECT) after ECT data: 2 quick ACKs.
        let mut r = TcpReceiver::new(&TcpConfig {
            ecn: true,
            ..linux(8)
        });
        out.clear();
        feed(&mut r, t, 0, 6, &mut out);
        assert_eq!(acked(&out), [1, 2, 3, 4, 6]);
        out.clear();
        let mut rtx = data(6000, 1000);
        rtx.retransmit = true;
        r.on_segment(t, &rtx, false, &mut out);
        feed(&mut r, t, 7, 4, &mut out);
        assert_eq!(acked(&out), [7, 8, 10]);
        // (Segment 10 waits for its delayed ACK.) A CE mark that starts the echo: 2
        // quick ACKs; one while the echo goes on: none.
        out.clear();
        r.on_segment(t, &data(11_000, 1000), true, &mut out);
        feed(&mut r, t, 12, 4, &mut out);
        assert_eq!(acked(&out), [12, 13, 15]);
        assert!(out.iter().all(|h| h.flags & tcp_flags::ECE != 0));
        out.clear();
        r.on_segment(t, &data(16_000, 1000), true, &mut out);
        feed(&mut r, t, 17, 1, &mut out);
        assert_eq!(acked(&out), [17]);
    }

    #[test]
    fn adaptive_delack_follows_the_gaps_and_doubles_when_it_fires() {
        let c = TcpConfig {
            quickack: false,
            adaptive_delack: true,
            handshake: true,
            ..linux(64)
        };
        let mut r = TcpReceiver::new(&c);
        let mut out = Vec::new();
        let ms = SimTime::from_millis;
        let syn = TcpHeader {
            flags: tcp_flags::SYN,
            ..Default::default()
        };
        r.on_segment(ms(0), &syn, false, &mut out);
        assert_eq!(
            r.linux.rto(),
            Dur::from_secs(1),
            "initial_rto before a sample"
        );
        // The first segment one RTT (100 ms) after the SYN-ACK: RTO 100 + max(200, 200).
        // ato = 40 ms: the timer waits 40 ms and, firing, doubles ato to 80 ms.
        r.on_segment(ms(100), &data(0, 1000), false, &mut out);
        assert_eq!(r.linux.rto(), Dur::from_millis(300));
        assert_eq!(r.next_timer(), Some(ms(140)));
        r.on_timer(ms(140), &mut out);
        assert_eq!(r.linux.ato, Dur::from_millis(80));
        // A gap of 100 ms ≥ ato: ato stays 80 ms, under the RTT bound (100 ms).
        r.on_segment(ms(200), &data(1000, 1000), false, &mut out);
        assert_eq!(r.next_timer(), Some(ms(280)));
        r.on_timer(ms(280), &mut out); // ato 160 ms
                                       // A gap of 100 ms < ato: ato = 160/2 + 100 = 180 ms, the timer min(180, RTT).
        r.on_segment(ms(300), &data(2000, 1000), false, &mut out);
        assert_eq!(r.linux.ato, Dur::from_millis(180));
        assert_eq!(r.next_timer(), Some(ms(400)));
        r.on_timer(ms(400), &mut out); // ato min(360, RTO 300) = 300 ms
        assert_eq!(r.linux.ato, Dur::from_millis(300));
        // Back-to-back segments (gap ≤ 20 ms) pull it back: 300/2 + 20 = 170 ms.
        r.on_segment(ms(500), &data(3000, 1000), false, &mut out);
        r.on_segment(ms(501), &data(4000, 1000), false, &mut out);
        assert_eq!(r.linux.ato, Dur::from_millis(170));
        assert_eq!(
            acked(&out),
            [0, 1, 2, 3, 5],
            "SYN-ACK, timers, every second segment"
        );
        // Without the option the timer is delack_timeout whatever the gaps.
        let mut r = TcpReceiver::new(&TcpConfig {
            adaptive_delack: false,
            ..c
        });
        r.on_segment(ms(0), &syn, false, &mut out);
        for (i, t) in [100u64, 200, 300].into_iter().enumerate() {
            r.on_segment(ms(t), &data(i as u64 * 1000, 1000), false, &mut out);
            assert_eq!(r.next_timer(), Some(ms(t + 40)));
            r.on_timer(ms(t + 40), &mut out);
        }
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

    #[test]
    fn the_plain_path_answers_as_the_general_one_with_the_extras_off() {
        // `on_segment` runs `segment::<false>` for a receiver without DCTCP or a Linux
        // ACK option; forcing `segment::<true>` on the same configuration must give the
        // same ACKs, deliveries and timer after every segment: in-order pairs, a lone
        // segment left to the timer, a hole, its filling, a duplicate, CE marks and a
        // CWR (ECN), a segment the finite buffer has no room for, and the FIN.
        let c = TcpConfig {
            delayed_ack: true,
            variant: Variant::Sack,
            ecn: true,
            rcv_buffer: Some(crate::units::Bytes(6000)),
            ..cfg()
        };
        let plain = TcpReceiver::new(&c);
        assert!(!plain.extras);
        let mut general = plain.clone();
        general.extras = true;
        let mut cwr = data(5000, 1000);
        cwr.flags |= tcp_flags::CWR;
        let mut fin = data(7000, 500);
        fin.flags |= tcp_flags::FIN;
        let steps: [(u64, TcpHeader, bool); 11] = [
            (0, data(0, 1000), false),
            (1, data(1000, 1000), true),
            (2, data(2000, 1000), false),
            (300, data(4000, 1000), true),
            (301, data(3000, 1000), false),
            (302, data(0, 1000), false),
            (303, cwr, false),
            (304, data(6000, 1000), true),
            (305, data(20_000, 1000), false),
            (306, data(6000, 1000), false),
            (600, fin, false),
        ];
        let (mut a, mut b) = (plain, general);
        let (mut out_a, mut out_b) = (Vec::new(), Vec::new());
        for (ms, seg, ce) in steps {
            let t = SimTime::from_millis(ms);
            a.on_timer(t, &mut out_a);
            b.on_timer(t, &mut out_b);
            let da = a.on_segment(t, &seg, ce, &mut out_a);
            let db = b.segment::<true>(t, &seg, ce, &mut out_b);
            assert_eq!(da, db, "delivered at {ms} ms");
            assert_eq!(out_a, out_b, "ACKs after {ms} ms");
            assert_eq!(a.next_timer(), b.next_timer(), "timer after {ms} ms");
            a.app_read(t, u64::MAX, &mut out_a);
            b.app_read(t, u64::MAX, &mut out_b);
            assert_eq!(out_a, out_b, "window updates after {ms} ms");
        }
        assert!(out_a.len() >= 8, "the sequence sends ACKs: {}", out_a.len());
        assert!(out_a.iter().any(|h| h.flags & tcp_flags::ECE != 0));
        assert!(out_a.iter().any(|h| h.nsack() > 0));
        assert!(a.fin_received());
    }
}

//! The sending end: what to send (window, app data, FIN), ACK processing, loss
//! recovery per variant, the retransmission and persist timers, ECN and source quench.
//!
//! Sections below: construction and public API; sending; ACK processing; recovery
//! entry/exit; timers; congestion signals.
//!
//! RTT sampling is BSD / ns-2 style by default: one segment is timed at a time (a new one
//! when the previous sample is taken), and timing is cancelled whenever a byte at or below
//! the timed segment is retransmitted or a timeout occurs, so no sample ever comes from a
//! retransmitted segment (Karn's rule, RFC 6298 §3). Timestamps are still sent (`ts_val`)
//! and echoed (`ts_ecr`) for the host's use, but not used for RTT. With `rtt_samples =
//! "every_ack"` (or `"every_ack_ts"`) every ACK samples as Linux's does ([`RttSamples`]).

use super::cc::{AckSample, AnyCc, CongestionControl, CongestionEvent, EcnAck};
use super::rto::RttEstimator;
use super::sack::{Scoreboard, DUP_THRESH};
use super::{
    earliest, Halve, Recovery, RtoEstimator, RttSamples, TcpConfig, TcpProbe, TcpSenderStats,
    TcpState, Variant,
};
use crate::packet::{tcp_flags, TcpHeader};
use crate::time::{Dur, SimTime};

/// Written bytes of an infinite bulk source.
const INFINITE: u64 = u64::MAX / 4;

/// A TCP sender (one connection's data direction).
#[derive(Clone, Debug)]
pub struct TcpSender {
    variant: Variant,
    mss: u32,
    cap: u32,
    ecn: bool,
    handshake: bool,
    cc: AnyCc,
    rtt: RttEstimator,
    sb: Scoreboard,
    /// Bytes the application has handed over (INFINITE for bulk).
    written: u64,
    /// No more writes will come: a FIN follows `written` (with a handshake).
    closed: bool,
    /// Lowest unacknowledged data byte.
    snd_una: u64,
    /// Next byte to send; below `snd_max` while going back after a timeout (go-back-N).
    snd_nxt: u64,
    /// One past the highest data byte ever sent.
    snd_max: u64,
    /// The receiver's last advertised window [bytes].
    peer_wnd: u32,
    state: TcpState,
    dupacks: u32,
    /// RFC 6582 `recover` / RFC 6675 RecoveryPoint; no new fast retransmit until
    /// `snd_una >= recover` (ns-2's `bug_fix_`).
    recover: u64,
    /// `snd_max` at the last ECN / quench reduction: no new one until an ACK covers
    /// data sent after it (once per window, and never for ACKs of data that was already
    /// in flight when the CWR went out).
    signal_recover: Option<u64>,
    /// Set CWR on the next new data segment (RFC 3168 §6.1.2).
    cwr_pending: bool,
    /// With ECN, `snd_max` at the last loss reduction (timeout or fast retransmit):
    /// ECE on an ACK up to it echoes marks that reduction already answered.
    ece_answered: Option<u64>,
    /// `snd_max` at the last ECN reduction: for a controller that grows on ECE ACKs
    /// (DCTCP), no growth until the cumulative ACK reaches it (Linux's CWR state).
    ecn_cwr_end: Option<u64>,
    fin_sent: bool,
    fin_acked: bool,
    syn_sent_at: SimTime,
    syn_retransmitted: bool,
    /// RFC 3042 limited transmit on.
    limited_transmit: bool,
    /// PRR (RFC 6937) paces SACK recovery.
    prr: bool,
    /// What ssthresh halves.
    halve: Halve,
    /// An RTO within a window of data after a reduction keeps its ssthresh (Linux).
    rto_keeps_ssthresh: bool,
    /// The fast retransmit leaves a running retransmission timer as it is (ns-3).
    fr_keeps_timer: bool,
    /// A retransmission found lost after a timeout starts fast recovery (Linux).
    rto_lost_retransmit: bool,
    /// The least RTT sampled (Linux's `tcp_min_rtt`; kept with `rto_lost_retransmit`).
    min_rtt: Option<Dur>,
    /// Reaction to source quenches.
    on_quench: super::QuenchResponse,
    /// PRR state of the current recovery: `prr_delivered`, `prr_out`, `RecoverFS` [bytes].
    prr_delivered: u64,
    prr_out: u64,
    recover_fs: u64,
    /// `snd_una` at the last retransmission timeout (a further timeout with the same
    /// `snd_una` is a backoff of the same segment).
    rto_head: Option<u64>,
    /// The timed segment: (one past its last byte, when it was sent).
    timing: Option<(u64, SimTime)>,
    /// Where RTT samples come from.
    rtt_samples: RttSamples,
    rto_at: Option<SimTime>,
    persist_at: Option<SimTime>,
    stats: TcpSenderStats,
}

// ---------------------------------------------------------------- public API

impl TcpSender {
    /// A sender of `bytes` bytes (a finite transfer, closed after them), or an infinite
    /// bulk source if `None`.
    pub fn new(cfg: &TcpConfig, bytes: Option<u64>) -> Self {
        let cap = cfg.max_window_bytes();
        TcpSender {
            variant: cfg.variant,
            mss: cfg.mss,
            cap,
            ecn: cfg.ecn,
            handshake: cfg.handshake,
            cc: AnyCc::new(&cfg.cc, cfg.mss, cfg.initial_window, cap, cfg.byte_counting),
            rtt: {
                let e =
                    RttEstimator::new(cfg.min_rto, cfg.initial_rto, cfg.max_rto, cfg.granularity);
                match cfg.rto_estimator {
                    RtoEstimator::Rfc6298 => e,
                    RtoEstimator::Ns2 => e.ns2_ticks(),
                }
            },
            sb: Scoreboard::default(),
            written: bytes.unwrap_or(INFINITE).min(INFINITE),
            closed: bytes.is_some(),
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            peer_wnd: cap,
            state: if cfg.handshake {
                TcpState::SynSent
            } else {
                TcpState::Open
            },
            dupacks: 0,
            recover: 0,
            signal_recover: None,
            cwr_pending: false,
            ece_answered: None,
            ecn_cwr_end: None,
            fin_sent: false,
            fin_acked: false,
            syn_sent_at: SimTime::ZERO,
            syn_retransmitted: false,
            rto_head: None,
            limited_transmit: cfg.limited_transmit(),
            prr: cfg.variant == Variant::Sack && cfg.recovery == Recovery::Prr,
            halve: cfg.halve,
            rto_keeps_ssthresh: cfg.rto_keeps_ssthresh,
            fr_keeps_timer: cfg.fast_retransmit_keeps_timer,
            rto_lost_retransmit: cfg.rto_lost_retransmit && cfg.variant == Variant::Sack,
            min_rtt: None,
            on_quench: cfg.on_quench,
            prr_delivered: 0,
            prr_out: 0,
            recover_fs: 0,
            timing: None,
            rtt_samples: cfg.rtt_samples,
            rto_at: None,
            persist_at: None,
            stats: TcpSenderStats::default(),
        }
    }

    /// An application-limited sender: no data yet, more comes with
    /// [`TcpSender::app_write`], and the stream ends only at [`TcpSender::app_close`].
    pub fn new_app_limited(cfg: &TcpConfig) -> Self {
        let mut s = Self::new(cfg, Some(0));
        s.closed = false;
        s
    }

    /// Opens the connection: sends the SYN (with a handshake) or the initial window.
    pub fn start(&mut self, now: SimTime, out: &mut Vec<TcpHeader>) {
        if self.handshake {
            self.syn_sent_at = now;
            self.emit(now, 0, 0, tcp_flags::SYN, false, out);
            self.rto_at = Some(now + self.rtt.rto());
        } else {
            self.send_available(now, out);
        }
    }

    /// Takes any segment from the receiver (ACK, SYN-ACK, window update).
    pub fn on_ack(&mut self, now: SimTime, ack: &TcpHeader, out: &mut Vec<TcpHeader>) {
        match self.state {
            TcpState::Done => return,
            TcpState::SynSent => {
                if ack.flags & (tcp_flags::SYN | tcp_flags::ACK) == tcp_flags::SYN | tcp_flags::ACK
                {
                    self.state = TcpState::Open;
                    if !self.syn_retransmitted {
                        self.take_sample(now - self.syn_sent_at);
                    }
                    self.peer_wnd = ack.wnd;
                    self.rto_at = None;
                    self.send_available(now, out);
                }
                return;
            }
            _ => {}
        }
        // RFC 6937 DeliveredData = Δsnd_una + ΔSACKed bytes (PRR only: O(window)).
        let before = self
            .prr
            .then(|| self.snd_una as i64 + self.sb.sacked_bytes() as i64);
        let sack_sent = if self.variant == Variant::Sack && ack.nsack() > 0 {
            let rack = self
                .rto_lost_retransmit
                .then(|| (now, self.min_rtt.unwrap_or(Dur::MAX)));
            self.sb.sack(ack.sack_blocks(), self.mss, rack)
        } else {
            None
        };
        let ece = self.ecn && ack.flags & tcp_flags::ECE != 0;
        if self.rto_lost_retransmit
            && matches!(self.state, TcpState::Loss | TcpState::Recovery)
            && ack.nsack() > 0
            && self.sb.rack_relost(ack.ack.max(self.snd_una)) > 0
            && self.state == TcpState::Loss
        {
            // Linux's `tcp_fastretrans_alert` in `TCP_CA_Loss`: RACK found a retransmission
            // lost again (`FLAG_LOST_RETRANS`), so the timeout's recovery becomes a fast
            // recovery before this ACK grows the window. In `TCP_CA_Recovery` the segment
            // is only marked lost, and `NextSeg` resends it within the recovery's window.
            self.recover_lost_retransmit(now, out);
        }
        let fin_ack = self.fin_expected() && ack.ack > self.written && !self.fin_acked;
        let advances = ack.ack > self.snd_una || fin_ack;
        if !advances && self.rtt_samples != RttSamples::Timed {
            // Linux's `tcp_ack_update_rtt` on a duplicate ACK: the SACK sample, if any.
            if let Some(t) = sack_sent {
                self.take_sample(now - t);
            }
        }
        if advances {
            self.on_new_ack(now, ack, ece, sack_sent, out);
        } else if ack.ack == self.snd_una
            && ack.len == 0
            && ack.flags & (tcp_flags::SYN | tcp_flags::FIN) == 0
            && self.snd_max > self.snd_una
            && ack.wnd == self.peer_wnd
            && ack.wnd > 0
        {
            self.on_dupack(now, out);
        } else if ack.ack == self.snd_una {
            // Window update.
            self.peer_wnd = ack.wnd;
        }
        if ece {
            self.congestion_signal(true);
        }
        if let (Some(b), TcpState::Recovery) = (before, self.state) {
            let after = self.snd_una as i64 + self.sb.sacked_bytes() as i64;
            self.prr_update((after - b).max(0) as u64);
        }
        if self.state != TcpState::Done {
            self.send_available(now, out);
        }
    }

    /// Runs whichever timer is due (retransmission or persist); does nothing otherwise.
    pub fn on_timer(&mut self, now: SimTime, out: &mut Vec<TcpHeader>) {
        if self.rto_at.is_some_and(|t| t <= now) {
            self.rto_at = None;
            self.on_rto(now, out);
        }
        if self.persist_at.is_some_and(|t| t <= now) {
            self.persist_at = None;
            self.on_persist(now, out);
        }
    }

    /// When [`TcpSender::on_timer`] should next be called, if ever.
    pub fn next_timer(&self) -> Option<SimTime> {
        earliest(self.rto_at, self.persist_at)
    }

    /// ICMP source quench. As ns-2's `TcpAgent::quench(1)` (`closecwnd(1)`): halve cwnd
    /// and set ssthresh to it, at most once per window of data (no further reduction
    /// until everything sent before this one is acknowledged), and never during loss
    /// recovery, which already reduced the window. Paper 002 (ERUF) §2 has core routers
    /// send quenches on drops and regulates at the edge; it does not define the host's
    /// response, so ns-2's is used. With `on_quench = "ignore"` nothing happens.
    pub fn on_source_quench(&mut self, _now: SimTime) {
        if self.on_quench == super::QuenchResponse::Halve {
            self.congestion_signal(false);
        }
    }

    /// The application hands `bytes` more bytes to send. Ignored for an infinite bulk
    /// source and once the FIN is out.
    pub fn app_write(&mut self, now: SimTime, bytes: u64, out: &mut Vec<TcpHeader>) {
        if self.written >= INFINITE || self.fin_sent || self.fin_acked {
            return;
        }
        self.written = (self.written + bytes).min(INFINITE);
        if self.state == TcpState::Done {
            self.state = TcpState::Open;
        }
        if self.state != TcpState::SynSent {
            self.send_available(now, out);
        }
    }

    /// The application will write no more: the stream ends (FIN with a handshake)
    /// once everything written is sent.
    pub fn app_close(&mut self, now: SimTime, out: &mut Vec<TcpHeader>) {
        if !self.closed {
            self.closed = true;
            if self.state != TcpState::SynSent {
                self.send_available(now, out);
            }
        }
    }

    /// True once a finite transfer is fully acknowledged (its FIN too, with a handshake).
    pub fn is_done(&self) -> bool {
        self.closed && self.snd_una >= self.written && (!self.fin_expected() || self.fin_acked)
    }

    /// Bytes written and not yet acknowledged (what a send buffer holds).
    pub fn buffered(&self) -> u64 {
        self.written.saturating_sub(self.snd_una)
    }

    /// Written data waits for the window: some is unsent and the connection is open
    /// (not waiting for its handshake).
    pub fn window_closed(&self) -> bool {
        self.state != TcpState::SynSent && self.snd_nxt < self.written
    }

    /// Room for one more full segment of new data at once: the connection is open, no
    /// written data waits, and the window (recovery's `pipe` rule for SACK, with no
    /// segment waiting to be retransmitted) takes one more MSS. pTCP's engine asks this
    /// before it binds data to a TCP-v pipe (P4 §4.1, window-based striping): a write
    /// of one MSS then leaves at once as exactly one new segment.
    pub fn can_send_new(&self) -> bool {
        if matches!(self.state, TcpState::SynSent | TcpState::Done)
            || self.fin_sent
            || self.written > self.snd_max
        {
            return false;
        }
        let len = self.mss as u64;
        if self.variant == Variant::Sack && self.state == TcpState::Recovery {
            self.sb.pipe() + len <= self.cc.cwnd() as u64
                && self.sb.next_lost().is_none()
                && self.snd_max + len <= self.snd_una + self.peer_wnd.min(self.cap) as u64
        } else {
            self.snd_nxt >= self.snd_max && self.snd_max + len <= self.snd_una + self.window()
        }
    }

    /// Still waiting for the SYN-ACK (pTCP's `established()` comes when this turns false).
    pub fn opening(&self) -> bool {
        self.state == TcpState::SynSent
    }

    /// Maximum segment size [bytes].
    pub fn mss(&self) -> u32 {
        self.mss
    }

    /// Loss-recovery flavour.
    pub fn variant(&self) -> Variant {
        self.variant
    }

    /// Counters.
    pub fn stats(&self) -> &TcpSenderStats {
        &self.stats
    }

    /// A snapshot for traces. `in_flight` is `snd_max − snd_una` (RFC 5681 FlightSize).
    pub fn probe(&self) -> TcpProbe {
        TcpProbe {
            cwnd: self.cc.cwnd(),
            ssthresh: self.cc.ssthresh(),
            srtt: self.rtt.srtt(),
            rttvar: self.rtt.rttvar(),
            rto: self.rtt.rto(),
            in_flight: self.snd_max - self.snd_una,
            snd_una: self.snd_una,
            snd_max: self.snd_max,
            state: match self.state {
                TcpState::Open if self.dupacks > 0 || self.sb.any_sacked() => TcpState::Disorder,
                st => st,
            },
            dupacks: self.dupacks,
            pipe: (self.variant == Variant::Sack).then(|| self.sb.pipe()),
        }
    }

    /// The congestion controller (read-only).
    pub fn cc(&self) -> &AnyCc {
        &self.cc
    }

    /// Updates the aggregate's average RTT for aggregate-fair increase (others ignore it).
    pub fn set_rtt_av(&mut self, rtt_av: crate::time::Dur) {
        self.cc.set_rtt_av(rtt_av);
    }

    fn fin_expected(&self) -> bool {
        self.handshake && self.closed
    }
}

// ---------------------------------------------------------------- sending

impl TcpSender {
    /// Usable window [bytes]: min(cwnd, advertised window, max_window). With limited
    /// transmit (RFC 3042), each of the first two duplicate ACKs outside recovery lets
    /// one more segment out: outstanding data may reach cwnd + 2·SMSS, never beyond the
    /// receiver's window; cwnd itself does not change.
    fn window(&self) -> u64 {
        let lt = if self.limited_transmit
            && self.state == TcpState::Open
            && (1..DUP_THRESH).contains(&self.dupacks)
        {
            self.dupacks * self.mss
        } else {
            0
        };
        self.cc
            .cwnd()
            .saturating_add(lt)
            .min(self.peer_wnd)
            .min(self.cap) as u64
    }

    /// Sends whatever the window and the application allow.
    fn send_available(&mut self, now: SimTime, out: &mut Vec<TcpHeader>) {
        if matches!(self.state, TcpState::SynSent | TcpState::Done) {
            return;
        }
        if self.variant == Variant::Sack && self.state == TcpState::Recovery {
            self.send_sack_recovery(now, out);
        } else {
            self.send_window(now, out);
        }
        self.maybe_send_fin(now, out);
        // Persist: data waiting, nothing outstanding, and the receiver's window shut.
        let waiting = self.written > self.snd_max;
        if waiting
            && self.snd_una == self.snd_max
            && self.peer_wnd < self.mss.min((self.written - self.snd_max) as u32)
        {
            if self.persist_at.is_none() {
                self.persist_at = Some(now + self.rtt.rto());
            }
        } else {
            self.persist_at = None;
        }
    }

    /// Window-edge sending (ns-2 style: `snd_nxt + len <= snd_una + window`), going back
    /// over unacknowledged segments first when `snd_nxt < snd_max`.
    fn send_window(&mut self, now: SimTime, out: &mut Vec<TcpHeader>) {
        // Sending changes none of cwnd, the peer's window, `dupacks` or the state, nor
        // `snd_una`: the right edge holds for the whole loop.
        let edge = self.snd_una + self.window();
        loop {
            if self.snd_nxt < self.snd_max {
                let Some(i) = self.sb.find(self.snd_nxt) else {
                    // Cannot happen (segments are never re-cut); resume with new data.
                    self.snd_nxt = self.snd_max;
                    continue;
                };
                let r = *self.sb.get(i);
                if r.sacked {
                    self.snd_nxt = r.end();
                    continue;
                }
                if r.end() > edge {
                    break;
                }
                self.retransmit(now, i, out);
                self.snd_nxt = r.end();
            } else {
                let avail = self.written - self.snd_max;
                if avail == 0 {
                    break;
                }
                let len = avail.min(self.mss as u64) as u32;
                if self.snd_max + len as u64 > edge {
                    break;
                }
                self.send_new(now, len, out);
            }
        }
    }

    /// RFC 6675 §5 step (C): while cwnd − pipe ≥ 1 SMSS, send `NextSeg()`.
    fn send_sack_recovery(&mut self, now: SimTime, out: &mut Vec<TcpHeader>) {
        loop {
            let cwnd = self.cc.cwnd() as u64;
            if self.sb.pipe() + self.mss as u64 > cwnd {
                break;
            }
            // Rule 1: lost and not yet retransmitted.
            if let Some(i) = self.sb.next_lost() {
                self.retransmit(now, i, out);
                continue;
            }
            // Rule 2: new data, if the receiver's window allows.
            let avail = self.written - self.snd_max;
            let len = avail.min(self.mss as u64) as u32;
            let rwnd = self.peer_wnd.min(self.cap) as u64;
            if len > 0 && self.snd_max + len as u64 <= self.snd_una + rwnd {
                self.send_new(now, len, out);
                continue;
            }
            // Rule 3: an unSACKed, not retransmitted segment below the highest SACK.
            if let Some(i) = self.sb.next_rescue() {
                self.retransmit(now, i, out);
                continue;
            }
            break;
        }
    }

    fn maybe_send_fin(&mut self, now: SimTime, out: &mut Vec<TcpHeader>) {
        if self.fin_expected()
            && !self.fin_sent
            && !self.fin_acked
            && self.snd_nxt >= self.written
            && self.snd_max >= self.written
        {
            self.fin_sent = true;
            self.emit(
                now,
                self.written,
                0,
                tcp_flags::FIN | tcp_flags::ACK,
                false,
                out,
            );
            if self.rto_at.is_none() {
                self.rto_at = Some(now + self.rtt.rto());
            }
        }
    }

    /// Sends `len` new bytes at `snd_max`.
    fn send_new(&mut self, now: SimTime, len: u32, out: &mut Vec<TcpHeader>) {
        let seq = self.snd_max;
        let mut flags = tcp_flags::ACK;
        if self.cwr_pending {
            flags |= tcp_flags::CWR;
            self.cwr_pending = false;
        }
        self.emit(now, seq, len, flags, false, out);
        self.sb.push(seq, len, now);
        self.snd_max += len as u64;
        self.snd_nxt = self.snd_max;
        if self.timing.is_none() {
            self.timing = Some((self.snd_max, now));
        }
        if self.rto_at.is_none() {
            // RFC 6298 §5.1.
            self.rto_at = Some(now + self.rtt.rto());
        }
    }

    /// Sends scoreboard segment `i` again.
    fn retransmit(&mut self, now: SimTime, i: usize, out: &mut Vec<TcpHeader>) {
        let r = self.sb.get_mut(i);
        r.sent = now;
        r.rtx = true;
        r.ever_rtx = true;
        let (seq, len) = (r.seq, r.len);
        // Karn: a retransmitted byte at or below the timed segment voids the timing.
        if self.timing.is_some_and(|(end, _)| seq < end) {
            self.timing = None;
        }
        self.stats.retransmits += 1;
        self.emit(now, seq, len, tcp_flags::ACK, true, out);
        if self.rto_at.is_none() {
            self.rto_at = Some(now + self.rtt.rto());
        }
    }

    fn emit(
        &mut self,
        now: SimTime,
        seq: u64,
        len: u32,
        flags: u8,
        retransmit: bool,
        out: &mut Vec<TcpHeader>,
    ) {
        self.stats.segments_sent += 1;
        self.stats.bytes_sent += len as u64;
        if self.state == TcpState::Recovery {
            self.prr_out += len as u64;
        }
        let view = self.view();
        out.push(TcpHeader {
            seq,
            ack: 0,
            len,
            flags,
            wnd: 0,
            ts_val: now,
            retransmit,
            view,
            ..Default::default()
        });
    }
}

impl TcpSender {
    /// The sender's state as an oracle conditioner reads it (P3 §III): cwnd in whole
    /// segments, smoothed RTT and the RTO estimate without backoff (SRTT + 4·RTTVAR
    /// within its bounds, RFC 6298 §2) in µs, saturating.
    pub fn view(&self) -> crate::packet::SenderView {
        let us = |d: crate::time::Dur| (d.as_nanos() / 1_000).min(u32::MAX as u64) as u32;
        crate::packet::SenderView {
            cwnd_segs: self.cc.cwnd() / self.mss.max(1),
            srtt_us: self.rtt.srtt().map_or(0, us),
            rto_us: us(self.rtt.base_rto()),
        }
    }
}

// ---------------------------------------------------------------- ACK processing

impl TcpSender {
    fn take_sample(&mut self, r: crate::time::Dur) {
        if self.rto_lost_retransmit {
            self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        }
        self.rtt.sample(r);
        self.stats.rtt_samples += 1;
    }

    /// An ACK that advances `snd_una` (or acknowledges the FIN); `sack_sent` is the send
    /// time of the lowest segment it newly SACKed that was never retransmitted.
    fn on_new_ack(
        &mut self,
        now: SimTime,
        ack: &TcpHeader,
        ece: bool,
        sack_sent: Option<SimTime>,
        out: &mut Vec<TcpHeader>,
    ) {
        let acked_to = ack
            .ack
            .min(self.written)
            .min(self.snd_max)
            .max(self.snd_una);
        let newly = acked_to - self.snd_una;
        // This ACK's own RTT for the controller (RFC 9406 §4.2; Karn's rule), looked up
        // only for a controller that reads it.
        let ack_rtt = if self.cc.wants_ack_rtt() {
            self.sb
                .newest_covered(acked_to)
                .filter(|r| !r.ever_rtx)
                .map(|r| now - r.sent)
        } else {
            None
        };
        let first_acked = if self.rtt_samples == RttSamples::Timed {
            None
        } else {
            self.sb.first_unsacked_covered(acked_to)
        };
        let rtx_acked = self.sb.ack(acked_to);
        if newly > 0 {
            // Every advance, in any state, with its echo (DCTCP's α, RFC 8257 §3.3).
            self.cc.on_ecn_ack(&EcnAck {
                newly_acked: newly.min(u32::MAX as u64) as u32,
                ece,
                snd_una: acked_to,
                snd_max: self.snd_max,
            });
        }
        let mut sample = None;
        if self.rtt_samples != RttSamples::Timed {
            // Linux's `tcp_clean_rtx_queue` and `tcp_ack_update_rtt`: the lowest newly
            // acknowledged segment unless retransmitted data is acknowledged (Karn), else
            // the lowest newly SACKed one, else (with timestamps) the echo.
            let ts = (self.rtt_samples == RttSamples::EveryAckTs
                && newly > 0
                && ack.ts_ecr > SimTime::ZERO
                && ack.ts_ecr <= now)
                .then_some(ack.ts_ecr);
            let from = first_acked.filter(|_| !rtx_acked).or(sack_sent).or(ts);
            if let Some(t) = from {
                let r = now - t;
                self.take_sample(r);
                sample = Some(r);
            }
        } else if let Some((end, t)) = self.timing {
            if acked_to >= end {
                self.timing = None;
                let r = now - t;
                self.take_sample(r);
                sample = Some(r);
            }
        }
        self.snd_una = acked_to;
        if self.fin_expected() && ack.ack > self.written && self.snd_una >= self.written {
            self.fin_acked = true;
        }
        self.stats.bytes_acked += newly;
        self.peer_wnd = ack.wnd;
        self.snd_nxt = self.snd_nxt.max(self.snd_una);
        let flight = (self.snd_max - self.snd_una) as u32;

        match self.state {
            TcpState::Recovery => match self.variant {
                Variant::Reno => self.exit_recovery(),
                Variant::NewReno => {
                    if self.snd_una >= self.recover {
                        self.exit_recovery();
                    } else {
                        // RFC 6582 §3.2 step 5: partial ACK.
                        if self.sb.front().is_some() {
                            self.retransmit(now, 0, out);
                        }
                        let cwnd = self.cc.cwnd() as u64;
                        let mut deflated = cwnd.saturating_sub(newly);
                        if newly >= self.mss as u64 {
                            deflated += self.mss as u64;
                        }
                        let ss = self.cc.ssthresh();
                        self.cc.set_window((deflated as u32).max(self.mss), ss);
                    }
                }
                Variant::Sack => {
                    if self.snd_una >= self.recover {
                        self.exit_recovery();
                    }
                }
                Variant::Tahoe => self.exit_recovery(),
            },
            TcpState::Open | TcpState::Loss => {
                if self.state == TcpState::Loss && self.snd_una >= self.recover {
                    self.state = TcpState::Open;
                }
                self.dupacks = 0;
                // RFC 3168 §6.1.2: no increase on an ECE ACK, unless a loss reduction
                // already answered the marks it echoes. The receiver echoes until it
                // sees the CWR that rides on the first *new* segment after a timeout,
                // so the ACKs of the whole go-back carry ECE; blocking on them left the
                // window at one segment until the next new data (Linux grows in Loss
                // whatever ECE says).
                // DCTCP's ECE echoes marks exactly: its ACKs grow the window whatever
                // ECE says, except in the window of data after its cut (Linux's CWR state
                // and ns-3's CA_CWR keep cwnd until snd_una reaches the cut's snd_max).
                let grow = if self.cc.grows_on_ece() {
                    self.ecn_cwr_end.is_none_or(|r| acked_to >= r)
                } else {
                    !ece || self.ece_answered.is_some_and(|r| acked_to <= r)
                };
                if grow && newly > 0 {
                    let s = AckSample {
                        now,
                        newly_acked: newly.min(u32::MAX as u64) as u32,
                        in_flight: flight,
                        rtt: sample,
                        srtt: self.rtt.srtt(),
                        una: acked_to,
                        ack_rtt,
                    };
                    self.cc.on_ack(&s);
                }
            }
            TcpState::SynSent | TcpState::Done | TcpState::Disorder => {}
        }

        // RFC 6298 §5.2 / §5.3. During NewReno recovery this restarts the timer on every
        // partial ACK: RFC 6582 §4's "Slow-but-Steady" variant, as ns-2's NewReno does
        // (the "Impatient" one times out when a window loses more than ~RTO/RTT segments).
        let fin_outstanding = self.fin_sent && !self.fin_acked;
        if self.snd_una == self.snd_max && !fin_outstanding {
            self.rto_at = None;
        } else {
            self.rto_at = Some(now + self.rtt.rto());
        }
        if self.is_done() {
            self.state = TcpState::Done;
            self.rto_at = None;
            self.persist_at = None;
        }
    }

    fn on_dupack(&mut self, now: SimTime, out: &mut Vec<TcpHeader>) {
        self.stats.dupacks += 1;
        self.dupacks += 1;
        if self.state == TcpState::Recovery {
            if matches!(self.variant, Variant::Reno | Variant::NewReno) {
                // RFC 5681 §3.2 step 4: inflate by one segment per duplicate ACK.
                let (c, s) = (self.cc.cwnd(), self.cc.ssthresh());
                self.cc.set_window(c.saturating_add(self.mss), s);
            }
            return;
        }
        let trigger = self.dupacks == DUP_THRESH
            || (self.variant == Variant::Sack
                && (self.dupacks > DUP_THRESH || self.sb.first_lost()));
        if trigger && self.snd_una >= self.recover {
            self.enter_recovery(now, out);
        }
    }
}

// ---------------------------------------------------------------- recovery

impl TcpSender {
    fn enter_recovery(&mut self, now: SimTime, out: &mut Vec<TcpHeader>) {
        self.stats.fast_retransmits += 1;
        let ss = self.cc.ssthresh_after_loss(self.loss_flight());
        self.cc.on_congestion_event(CongestionEvent::Loss);
        self.loss_reduction();
        self.recover = self.snd_max;
        self.sb.clear_rtx();
        match self.variant {
            Variant::Tahoe => {
                // Fast retransmit, then slow start from one segment, going back over
                // the window (ns-2 Tahoe: `t_seqno_ = highest_ack_ + 1`).
                self.cc.set_window(self.mss, ss);
                self.dupacks = 0;
                self.go_back();
                self.send_window(now, out);
            }
            Variant::Reno | Variant::NewReno => {
                // RFC 5681 §3.2 steps 2–3.
                self.retransmit(now, 0, out);
                self.cc.set_window(ss.saturating_add(3 * self.mss), ss);
                self.state = TcpState::Recovery;
            }
            Variant::Sack => {
                // RFC 6675 §5 step 4: retransmit the first segment, then NextSeg by pipe.
                // With PRR (RFC 6937) cwnd is set from the data delivered on each ACK
                // instead; the fast retransmit counts in `prr_out`.
                self.cc.set_window(ss, ss);
                self.state = TcpState::Recovery;
                self.prr_delivered = 0;
                self.prr_out = 0;
                self.recover_fs = self.snd_max - self.snd_una;
                self.retransmit(now, 0, out);
            }
        }
        // Restarted for the retransmission (Linux), or left running (ns-3, with
        // `fast_retransmit_keeps_timer`).
        if !(self.fr_keeps_timer && self.rto_at.is_some()) {
            self.rto_at = Some(now + self.rtt.rto());
        }
    }

    /// With `rto_lost_retransmit`, in Loss when a retransmission is found lost again:
    /// Linux's `tcp_enter_recovery` from `TCP_CA_Loss`, which is not a window reduction
    /// yet, so `tcp_init_cwnd_reduction` runs: ssthresh from the current window (Reno's
    /// `tcp_reno_ssthresh`: cwnd / 2, at least 2 segments; here `halve`'s rule, which in
    /// Loss is at most cwnd), `high_seq = snd_nxt` (`recover = snd_max`), PRR from zero
    /// with `prior_cwnd` = cwnd as its RecoverFS (where RFC 6937 §3 has the flight, which
    /// after a timeout is the whole window that timed out), and the lost segment resent
    /// at once (`tcp_cwnd_reduction`'s forced first send). Recovery then resends every
    /// segment the timeout marked lost before new data (`tcp_xmit_retransmit_queue`),
    /// paced by PRR, and ends with cwnd = ssthresh once `recover` is acknowledged.
    fn recover_lost_retransmit(&mut self, now: SimTime, out: &mut Vec<TcpHeader>) {
        self.stats.fast_retransmits += 1;
        let prior_cwnd = self.cc.cwnd();
        let ss = self.cc.ssthresh_after_loss(self.loss_flight());
        self.cc.on_congestion_event(CongestionEvent::Loss);
        self.loss_reduction();
        self.recover = self.snd_max;
        self.cc.set_window(ss, ss);
        self.state = TcpState::Recovery;
        self.dupacks = 0;
        self.prr_delivered = 0;
        self.prr_out = 0;
        self.recover_fs = prior_cwnd as u64;
        if let Some(i) = self.sb.next_lost() {
            self.retransmit(now, i, out);
        }
        self.rto_at = Some(now + self.rtt.rto());
    }

    /// RFC 6937 §3 on an ACK during recovery that delivered `delivered` bytes:
    /// proportional reduction while `pipe` > ssthresh, then slow start back up to it
    /// (PRR-SSRB) but never more than one segment beyond what was delivered.
    fn prr_update(&mut self, delivered: u64) {
        self.prr_delivered += delivered;
        let ss = self.cc.ssthresh() as u64;
        let pipe = self.sb.pipe();
        let sndcnt = if pipe > ss {
            let target = (self.prr_delivered * ss).div_ceil(self.recover_fs.max(1));
            target.saturating_sub(self.prr_out)
        } else {
            let limit = self
                .prr_delivered
                .saturating_sub(self.prr_out)
                .max(delivered)
                + self.mss as u64;
            (ss - pipe).min(limit)
        };
        let cwnd = (pipe + sndcnt).min(u32::MAX as u64) as u32;
        self.cc.set_window(cwnd, ss as u32);
    }

    fn exit_recovery(&mut self) {
        // RFC 6582 §3.2 step 6 (option 2) / RFC 5681 step 6: deflate to ssthresh (and
        // RFC 6937 §3: cwnd = ssthresh at the end of PRR).
        if matches!(self.variant, Variant::Reno | Variant::NewReno) || self.prr {
            let s = self.cc.ssthresh();
            self.cc.set_window(s, s);
        }
        self.state = TcpState::Open;
        self.dupacks = 0;
        self.sb.clear_rtx();
    }

    /// What a congestion event halves [bytes]. `halve = "flight"`: RFC 5681's FlightSize,
    /// `snd_max − snd_una` (RFC 6675 §5 step 4.2 for SACK), but never above the window
    /// (after a recovery that sent new data, or a timeout's go-back, `snd_max − snd_una`
    /// can be many windows, and limited transmit's segments must not count). `halve =
    /// "pipe"`: for SACK RFC 6675's `pipe`, which leaves out what the receiver holds and
    /// what is deemed lost, also capped by the window (ns-3's `BytesInFlight`; one loss
    /// in a window of W leaves about W − 4 in the pipe at the third duplicate ACK, so the
    /// window falls to a quarter at small W). `halve = "window"`: the window itself,
    /// min(cwnd, rwnd) as ns-2's `window()`. The window of Reno/NewReno in fast recovery
    /// is the one before inflation by duplicate ACKs, i.e. ssthresh.
    fn loss_flight(&self) -> u32 {
        self.flight_or_window(self.halve)
    }

    /// [`TcpSender::loss_flight`] under the rule `halve`.
    fn flight_or_window(&self, halve: Halve) -> u32 {
        let cwnd = if self.state == TcpState::Recovery
            && matches!(self.variant, Variant::Reno | Variant::NewReno)
        {
            self.cc.ssthresh()
        } else {
            self.cc.cwnd()
        };
        let wnd = cwnd.min(self.peer_wnd).min(self.cap) as u64;
        let flight = match (halve, self.variant) {
            (Halve::Window, _) => wnd,
            (Halve::Pipe, Variant::Sack) => self.sb.pipe(),
            (Halve::Flight | Halve::Pipe, _) => self.snd_max - self.snd_una,
        };
        flight.min(wnd) as u32
    }

    /// With ECN, what every window reduction for a loss owes RFC 3168 §6.1.2: CWR on
    /// the first new data segment after it ("reduces its congestion window for any
    /// reason (because of a retransmit timeout, a Fast Retransmit, or in response to an
    /// ECN Notification)"), and one reduction per window of data, so ECE on ACKs of the
    /// data already sent neither reduces again nor stops the window's growth.
    fn loss_reduction(&mut self) {
        if self.ecn {
            self.cwr_pending = true;
            self.signal_recover = Some(self.snd_max);
            self.ece_answered = Some(self.snd_max);
        }
    }

    /// Go-back-N: the next segment to send is the first unacknowledged one.
    fn go_back(&mut self) {
        self.snd_nxt = self.snd_una;
        if self.snd_una < self.written {
            self.fin_sent = false;
        }
    }
}

// ---------------------------------------------------------------- timers

impl TcpSender {
    fn on_rto(&mut self, now: SimTime, out: &mut Vec<TcpHeader>) {
        if self.state == TcpState::SynSent {
            // RFC 6298 §5.5–5.6 for the SYN too.
            self.stats.timeouts += 1;
            self.rtt.back_off();
            self.syn_retransmitted = true;
            self.emit(now, 0, 0, tcp_flags::SYN, true, out);
            self.rto_at = Some(now + self.rtt.rto());
            return;
        }
        let fin_outstanding = self.fin_sent && !self.fin_acked;
        if self.snd_una == self.snd_max && !fin_outstanding {
            return;
        }
        self.timing = None;
        self.rtt.back_off();
        if self.peer_wnd == 0 && self.snd_una < self.snd_max {
            // The receiver's window is shut: this is a window probe, not a loss.
            self.retransmit(now, 0, out);
            self.rto_at = Some(now + self.rtt.rto());
            return;
        }
        self.stats.timeouts += 1;
        // RFC 5681 §3.1: eq. 4 only when the segment was not already resent by the timer;
        // a backed-off retransmission of the same segment keeps ssthresh (as Linux and
        // ns-3 do), so repeated timeouts do not shrink it to 2 segments. ns-2 halves its
        // window of one segment again (`halve = "window"`).
        //
        // With `rto_keeps_ssthresh`, as Linux's `tcp_enter_loss`: ssthresh is kept by
        // any timeout that comes before the reduction it follows has run its window of
        // data (fast recovery not over, an ECN reduction whose CWR window is not yet
        // acknowledged, a backed-off retransmission of the same segment), whatever
        // `halve` says; that reduction already answered the congestion.
        let backoff = self.state == TcpState::Loss && self.rto_head == Some(self.snd_una);
        let reduced = self.rto_keeps_ssthresh
            && (backoff
                || (self.state == TcpState::Recovery && self.snd_una < self.recover)
                || (self.state == TcpState::Open
                    && self.signal_recover.is_some_and(|r| self.snd_una < r)));
        let ss = if reduced || (self.halve != Halve::Window && backoff) {
            self.cc.ssthresh()
        } else {
            self.cc.ssthresh_after_loss(self.loss_flight())
        };
        self.rto_head = Some(self.snd_una);
        self.cc.on_congestion_event(CongestionEvent::Timeout);
        self.loss_reduction();
        // RFC 5681 §3.1: loss window of one segment.
        self.cc.set_window(self.mss, ss);
        self.recover = self.snd_max;
        self.state = TcpState::Loss;
        self.dupacks = 0;
        self.sb.clear_rtx();
        if self.rto_lost_retransmit {
            // Linux's `tcp_enter_loss` → `tcp_timeout_mark_lost`.
            self.sb.mark_all_lost();
        }
        self.go_back();
        if let Some(r) = self.sb.front().copied() {
            self.retransmit(now, 0, out);
            self.snd_nxt = r.end();
        } else if fin_outstanding {
            self.emit(
                now,
                self.written,
                0,
                tcp_flags::FIN | tcp_flags::ACK,
                true,
                out,
            );
        }
        self.rto_at = Some(now + self.rtt.rto());
        self.send_available(now, out);
    }

    fn on_persist(&mut self, now: SimTime, out: &mut Vec<TcpHeader>) {
        let avail = self.written.saturating_sub(self.snd_max);
        if self.snd_una == self.snd_max && avail > 0 && self.state != TcpState::SynSent {
            // Probe the shut window with one segment; the RTO takes over from here.
            self.send_new(now, avail.min(self.mss as u64) as u32, out);
        }
    }
}

// ---------------------------------------------------------------- congestion signals

impl TcpSender {
    /// ECN echo (RFC 3168 §6.1.2) or source quench: one reduction per window of data,
    /// none during loss recovery, no retransmission.
    fn congestion_signal(&mut self, ecn: bool) {
        if self.state != TcpState::Open || self.signal_recover.is_some_and(|r| self.snd_una <= r) {
            return;
        }
        // The data in flight, not the window (RFC 3168 §6.1.2 refers to RFC 5681's loss
        // response): nothing is lost, so the two differ only when the sender is not
        // window-limited, and halving the window would not slow it. FlightSize with
        // `halve = "flight"`; for SACK with `"pipe"` or `"window"`, RFC 6675's `pipe`
        // (ns-3's `BytesInFlight`; what qoslab's SACK halved here before FlightSize became
        // its loss rule, so those configurations keep their behaviour). Without SACK
        // blocks outstanding the two are equal.
        let rule = match self.halve {
            Halve::Flight => Halve::Flight,
            Halve::Pipe | Halve::Window => Halve::Pipe,
        };
        let ss = self.cc.ssthresh_after_signal(self.flight_or_window(rule));
        self.cc.on_congestion_event(CongestionEvent::Signal);
        self.cc.set_window(ss, ss);
        self.signal_recover = Some(self.snd_max);
        if ecn {
            self.cwr_pending = true;
            self.ecn_cwr_end = Some(self.snd_max);
            self.stats.ecn_reductions += 1;
        } else {
            self.stats.quench_reductions += 1;
        }
    }
}

//! SACK bookkeeping on both sides.
//!
//! - [`Scoreboard`]: the sender's record of every segment sent and not yet cumulatively
//!   acknowledged, with SACKed / lost / retransmitted marks, `IsLost`, `SetPipe` and
//!   `NextSeg` of RFC 6675 §4. Non-SACK variants use it too, just never SACKed: it is
//!   where send times and retransmission marks live.
//! - [`OooRanges`]: the receiver's out-of-order data and the SACK blocks it reports,
//!   most recent first (RFC 2018 §4).

use std::collections::VecDeque;

use crate::packet::{SackBlock, MAX_SACK_BLOCKS};
use crate::time::{Dur, SimTime};

/// RFC 6675 DupThresh.
pub const DUP_THRESH: u32 = 3;

/// One segment sent and not yet cumulatively acknowledged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegRec {
    /// First byte.
    pub seq: u64,
    /// Payload length [bytes].
    pub len: u32,
    /// Last (re)transmission time.
    pub sent: SimTime,
    /// Reported held by the receiver in a SACK block.
    pub sacked: bool,
    /// Retransmitted during the current recovery episode (below HighRxt).
    pub rtx: bool,
    /// Ever retransmitted (Karn's rule).
    pub ever_rtx: bool,
    /// Why the segment is deemed lost, one bit each: [`IS_LOST`] (RFC 6675 `IsLost`) and
    /// [`RTO_LOST`]. One byte for both keeps the record at 24 bytes (the scoreboard is
    /// walked on every ACK; a fifth `bool` padded it to 32).
    lost: u8,
}

/// [`SegRec`]'s lost bit from RFC 6675 `IsLost`.
const IS_LOST: u8 = 1;
/// [`SegRec`]'s lost bit from a retransmission timeout (Linux's `tcp_timeout_mark_lost`;
/// only with `rto_lost_retransmit`): lost whatever `IsLost` says, until SACKed or acked.
const RTO_LOST: u8 = 2;

impl SegRec {
    /// One past the last byte.
    pub fn end(&self) -> u64 {
        self.seq + self.len as u64
    }

    /// Deemed lost by RFC 6675 `IsLost`.
    pub fn is_lost(&self) -> bool {
        self.lost & IS_LOST != 0
    }

    /// Deemed lost: by `IsLost` or by a timeout's marks.
    fn deemed_lost(&self) -> bool {
        self.lost != 0
    }
}

/// The sender's per-segment record of outstanding data (RFC 6675 §3 "scoreboard").
#[derive(Clone, Debug, Default)]
pub struct Scoreboard {
    recs: VecDeque<SegRec>,
    /// RACK.xmit_ts and RACK.end_seq (RFC 8985 §6.2 step 2): the latest send (then the
    /// highest end) among SACKed segments that may count, when tracked.
    rack: Option<(SimTime, u64)>,
    /// A timeout or RACK has marked some segment [`RTO_LOST`] (only with
    /// `rto_lost_retransmit`); until then `pipe` and `NextSeg` read `lost` alone.
    rto_marked: bool,
}

impl Scoreboard {
    /// Records a first transmission of `[seq, seq+len)` at `now`.
    pub fn push(&mut self, seq: u64, len: u32, now: SimTime) {
        debug_assert!(self.recs.back().is_none_or(|r| r.end() == seq));
        self.recs.push_back(SegRec {
            seq,
            len,
            sent: now,
            sacked: false,
            rtx: false,
            ever_rtx: false,
            lost: 0,
        });
    }

    /// Removes everything below the cumulative ACK `ack`; returns whether any removed
    /// byte had been retransmitted (the ACK is then ambiguous for RTT: Karn).
    pub fn ack(&mut self, ack: u64) -> bool {
        let mut ambiguous = false;
        while let Some(r) = self.recs.front_mut() {
            if r.end() <= ack {
                ambiguous |= r.ever_rtx;
                self.recs.pop_front();
            } else {
                if r.seq < ack {
                    // Never happens with our receiver (no repacketisation); stay exact.
                    ambiguous |= r.ever_rtx;
                    r.len -= (ack - r.seq) as u32;
                    r.seq = ack;
                }
                break;
            }
        }
        ambiguous
    }

    /// Marks every segment lying wholly inside one of `blocks` as SACKed; then
    /// recomputes `IsLost` for every segment (RFC 6675 §4) the new marks can change.
    /// `mss` must be the same on every call. Returns the send time of the lowest newly
    /// SACKed segment never retransmitted, if any (Linux's `first_sackt`, an RTT sample).
    ///
    /// With `rack = Some((now, min_rtt))` the newly SACKed segments also advance RACK's
    /// most recent send (Linux's `tcp_rack_advance`), except a retransmitted one SACKed
    /// less than `min_rtt` after its last send: that SACK may be for an earlier copy.
    pub fn sack(
        &mut self,
        blocks: impl IntoIterator<Item = SackBlock>,
        mss: u32,
        rack: Option<(SimTime, Dur)>,
    ) -> Option<SimTime> {
        // The lowest segment newly SACKed, and how many segments and bytes were.
        let mut lo = usize::MAX;
        // The lowest newly SACKed segment never retransmitted: (index, send time).
        let mut first: Option<(usize, SimTime)> = None;
        let (mut segs, mut bytes) = (0u32, 0u64);
        for b in blocks {
            if b.end <= b.start {
                continue;
            }
            let start = self.recs.partition_point(|r| r.end() <= b.start);
            for (i, r) in self.recs.range_mut(start..).enumerate() {
                if r.seq >= b.end {
                    break;
                }
                if !r.sacked && r.seq >= b.start && r.end() <= b.end {
                    r.sacked = true;
                    lo = lo.min(start + i);
                    if !r.ever_rtx && first.is_none_or(|(j, _)| start + i < j) {
                        first = Some((start + i, r.sent));
                    }
                    segs += 1;
                    bytes += r.len as u64;
                    if let Some((now, min_rtt)) = rack {
                        if !r.ever_rtx || now - r.sent >= min_rtt {
                            let x = (r.sent, r.end());
                            self.rack = Some(self.rack.map_or(x, |y| y.max(x)));
                        }
                    }
                }
            }
        }
        if lo != usize::MAX {
            self.update_lost(mss, lo, segs, bytes);
        }
        first.map(|(_, t)| t)
    }

    /// The send time of the lowest segment wholly below the cumulative ACK `ack` that
    /// the receiver had not SACKed (Linux's `first_ackt`, an RTT sample unless the ACK
    /// covers a retransmission); call before [`Scoreboard::ack`] removes it.
    pub fn first_unsacked_covered(&self, ack: u64) -> Option<SimTime> {
        self.recs
            .iter()
            .take_while(|r| r.end() <= ack)
            .find(|r| !r.sacked)
            .map(|r| r.sent)
    }

    /// `IsLost(seq)`: DupThresh discontiguous SACKed segments above, or more than
    /// (DupThresh − 1)·SMSS SACKed bytes above (RFC 6675 §4), after `new_segs` segments
    /// of `new_bytes` bytes, none below index `lo`, became SACKed.
    ///
    /// A mark depends only on the segments above it, and those change only here (a
    /// push adds an unSACKed one on top, an ACK removes the lowest), so every mark
    /// matched its segments before this change. Below `lo`, once the segments above
    /// held enough SACKed data before it, they still do and so do those further down:
    /// every mark there is already `!sacked`, and the walk stops.
    fn update_lost(&mut self, mss: u32, lo: usize, new_segs: u32, new_bytes: u64) {
        let mut segs = 0u32;
        let mut bytes = 0u64;
        let byte_thresh = (DUP_THRESH as u64 - 1) * mss as u64;
        let is_lost = |segs: u32, bytes: u64| segs >= DUP_THRESH || bytes > byte_thresh;
        // Without a timeout's marks `lost` holds `IS_LOST` alone: written whole.
        let keep = if self.rto_marked { RTO_LOST } else { 0 };
        for (i, r) in self.recs.iter_mut().enumerate().rev() {
            if i < lo && is_lost(segs - new_segs, bytes - new_bytes) {
                break;
            }
            if r.sacked {
                segs += 1;
                bytes += r.len as u64;
                r.lost = 0;
            } else {
                r.lost = (r.lost & keep) | u8::from(is_lost(segs, bytes));
            }
        }
    }

    /// Bytes of outstanding segments the receiver has SACKed.
    pub fn sacked_bytes(&self) -> u64 {
        self.recs
            .iter()
            .filter(|r| r.sacked)
            .map(|r| r.len as u64)
            .sum()
    }

    /// Does the receiver hold any outstanding segment (SACKed above a hole)?
    pub fn any_sacked(&self) -> bool {
        self.recs.iter().any(|r| r.sacked)
    }

    /// Is the first outstanding segment deemed lost?
    pub fn first_lost(&self) -> bool {
        self.recs.front().is_some_and(|r| r.is_lost())
    }

    /// `SetPipe` (RFC 6675 §4): bytes believed in the network.
    pub fn pipe(&self) -> u64 {
        let unsacked = self.recs.iter().filter(|r| !r.sacked);
        if self.rto_marked {
            unsacked
                .map(|r| r.len as u64 * (u64::from(!r.deemed_lost()) + u64::from(r.rtx)))
                .sum()
        } else {
            // No timeout's marks: `lost` is `IS_LOST` or 0, so `lost ^ IS_LOST` is 1 for
            // a segment not deemed lost.
            unsacked
                .map(|r| r.len as u64 * (u64::from(r.lost ^ IS_LOST) + u64::from(r.rtx)))
                .sum()
        }
    }

    /// `NextSeg` rule 1: the first unSACKed segment deemed lost and not yet
    /// retransmitted in this recovery.
    pub fn next_lost(&self) -> Option<usize> {
        if self.rto_marked {
            self.recs
                .iter()
                .position(|r| !r.sacked && r.deemed_lost() && !r.rtx)
        } else {
            self.recs
                .iter()
                .position(|r| !r.sacked && r.is_lost() && !r.rtx)
        }
    }

    /// `NextSeg` rule 3: the first unSACKed, not retransmitted segment below the highest
    /// SACKed byte.
    pub fn next_rescue(&self) -> Option<usize> {
        let high = self.recs.iter().rev().find(|r| r.sacked)?.end();
        self.recs
            .iter()
            .position(|r| !r.sacked && !r.rtx && r.end() <= high)
    }

    /// Marks every unSACKed segment lost, as Linux's `tcp_timeout_mark_lost` does on a
    /// retransmission timeout (all of them: a timeout comes an RTO after the last send,
    /// so none is recent enough for RACK's exemption).
    pub fn mark_all_lost(&mut self) {
        self.rto_marked = true;
        for r in &mut self.recs {
            if !r.sacked {
                r.lost |= RTO_LOST;
            }
        }
    }

    /// RACK (RFC 8985 §6.2, Linux's `tcp_rack_detect_loss`) with a reordering window of
    /// zero, as Linux has it in its Loss and Recovery states without reordering seen
    /// (`tcp_rack_reo_wnd`): every segment retransmitted in this episode and still
    /// unSACKed at or above `from` that was sent before the most recently sent SACKed
    /// segment that counts (by send time, then sequence: `tcp_skb_sent_after`; see
    /// [`Scoreboard::sack`]) is lost again. Its retransmission mark is cleared (Linux
    /// clears `TCPCB_SACKED_RETRANS`, so the segment leaves `pipe` and `NextSeg` sends it
    /// again). Returns how many.
    pub fn rack_relost(&mut self, from: u64) -> u32 {
        let Some(newest) = self.rack else {
            return 0;
        };
        let mut n = 0;
        for r in &mut self.recs {
            if r.rtx && !r.sacked && r.seq >= from && (r.sent, r.end()) < newest {
                r.rtx = false;
                r.lost |= RTO_LOST;
                n += 1;
            }
        }
        self.rto_marked |= n > 0;
        n
    }

    /// Forgets the per-recovery retransmission marks (a new recovery or a timeout).
    pub fn clear_rtx(&mut self) {
        for r in &mut self.recs {
            r.rtx = false;
        }
    }

    /// Index of the segment starting at `seq`.
    pub fn find(&self, seq: u64) -> Option<usize> {
        let i = self.recs.partition_point(|r| r.seq < seq);
        (self.recs.get(i)?.seq == seq).then_some(i)
    }

    /// The newest segment lying wholly below the cumulative ACK `ack`, if any is still
    /// recorded (call before [`Scoreboard::ack`] removes it).
    pub fn newest_covered(&self, ack: u64) -> Option<&SegRec> {
        let i = self.recs.partition_point(|r| r.end() <= ack);
        i.checked_sub(1).map(|j| &self.recs[j])
    }

    /// The segment at index `i`.
    pub fn get(&self, i: usize) -> &SegRec {
        &self.recs[i]
    }

    /// The segment at index `i`, mutable.
    pub fn get_mut(&mut self, i: usize) -> &mut SegRec {
        &mut self.recs[i]
    }

    /// The first outstanding segment.
    pub fn front(&self) -> Option<&SegRec> {
        self.recs.front()
    }

    /// Number of outstanding segments.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.recs.len()
    }
}

/// The receiver's out-of-order data above `rcv_nxt`, and SACK block generation.
#[derive(Clone, Debug, Default)]
pub struct OooRanges {
    /// Disjoint, sorted, non-adjacent byte ranges `[start, end)`.
    ranges: Vec<(u64, u64)>,
    /// Start bytes of recently received out-of-order segments, most recent first.
    recent: Vec<u64>,
}

impl OooRanges {
    /// True if nothing is held out of order.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Adds `[start, end)`; returns how many of its bytes were new. Inlined into the
    /// receiver's segment path (its one caller, compiled once per receiver kind).
    #[inline(always)]
    pub fn insert(&mut self, start: u64, end: u64) -> u64 {
        let i = self.ranges.partition_point(|&(_, e)| e < start);
        let mut j = i;
        let (mut s, mut e) = (start, end);
        let mut covered = 0;
        while j < self.ranges.len() && self.ranges[j].0 <= end {
            let (rs, re) = self.ranges[j];
            covered += re.min(end).saturating_sub(rs.max(start));
            s = s.min(rs);
            e = e.max(re);
            j += 1;
        }
        self.ranges.splice(i..j, [(s, e)]);
        self.recent.retain(|&p| p != start);
        self.recent.insert(0, start);
        self.recent.truncate(4 * MAX_SACK_BLOCKS);
        (end - start) - covered
    }

    /// `rcv_nxt` advanced to `nxt`: returns the new `rcv_nxt` after absorbing every held
    /// range it now reaches, and drops what lies below.
    pub fn advance(&mut self, mut nxt: u64) -> u64 {
        while let Some(&(s, e)) = self.ranges.first() {
            if s > nxt {
                break;
            }
            nxt = nxt.max(e);
            self.ranges.remove(0);
        }
        self.recent.retain(|&p| p >= nxt);
        nxt
    }

    /// Writes up to `max` SACK blocks, the one holding the most recent arrival first,
    /// then the other most recently reported ones (RFC 2018 §4); returns how many.
    pub fn blocks(&self, max: usize, out: &mut [SackBlock; MAX_SACK_BLOCKS]) -> u8 {
        let max = max.min(MAX_SACK_BLOCKS);
        let mut n = 0;
        for &p in &self.recent {
            if n == max {
                break;
            }
            let i = self.ranges.partition_point(|&(_, e)| e <= p);
            let Some(&(s, e)) = self.ranges.get(i) else {
                continue;
            };
            if s > p || out[..n].iter().any(|b| b.start == s) {
                continue;
            }
            out[n] = SackBlock { start: s, end: e };
            n += 1;
        }
        // Then any other held range, highest first, if room remains.
        for &(s, e) in self.ranges.iter().rev() {
            if n == max {
                break;
            }
            if !out[..n].iter().any(|b| b.start == s) {
                out[n] = SackBlock { start: s, end: e };
                n += 1;
            }
        }
        n as u8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ooo_ranges_merge_and_advance() {
        let mut o = OooRanges::default();
        assert_eq!(o.insert(20, 30), 10);
        assert_eq!(o.insert(40, 50), 10);
        assert_eq!(o.insert(25, 42), 10);
        assert_eq!(o.ranges, vec![(20, 50)]);
        assert_eq!(o.advance(10), 10);
        assert_eq!(o.advance(20), 50);
        assert!(o.is_empty());
    }

    #[test]
    fn sack_blocks_most_recent_first() {
        let mut o = OooRanges::default();
        o.insert(10, 20);
        o.insert(30, 40);
        o.insert(50, 60);
        o.insert(70, 80);
        let mut b = [SackBlock::default(); MAX_SACK_BLOCKS];
        assert_eq!(o.blocks(3, &mut b), 3);
        assert_eq!(b.map(|x| (x.start, x.end)), [(70, 80), (50, 60), (30, 40)]);
        // A new arrival extending the first block moves it to the front.
        o.insert(20, 25);
        assert_eq!(o.blocks(3, &mut b), 3);
        assert_eq!(b.map(|x| (x.start, x.end)), [(10, 25), (70, 80), (50, 60)]);
        assert_eq!(o.blocks(1, &mut b), 1);
    }

    #[test]
    fn scoreboard_is_lost_and_pipe() {
        let mut s = Scoreboard::default();
        for i in 0..6 {
            s.push(i * 100, 100, SimTime::ZERO);
        }
        // Segments 2 and 4 SACKed: not enough to call 0 lost.
        s.sack(
            [
                SackBlock {
                    start: 200,
                    end: 300,
                },
                SackBlock {
                    start: 400,
                    end: 500,
                },
            ],
            100,
            None,
        );
        assert!(!s.first_lost());
        assert_eq!(s.pipe(), 400);
        s.sack(
            [SackBlock {
                start: 500,
                end: 600,
            }],
            100,
            None,
        );
        // Three SACKed segments above 0, 1 and 3 (3 has 2 above: 200 bytes ≤ 2·SMSS).
        assert!(s.first_lost());
        assert_eq!(s.next_lost(), Some(0));
        assert!(!s.get(3).is_lost());
        assert_eq!(s.pipe(), 100);
        s.get_mut(0).rtx = true;
        assert_eq!(s.next_lost(), Some(1));
        assert_eq!(s.pipe(), 200);
        assert!(!s.ack(200));
        assert_eq!(s.len(), 4);
        assert_eq!(s.find(300), Some(1));
        assert_eq!(s.next_rescue(), Some(1));
    }

    #[test]
    fn rack_relost_counts_only_segments_sent_later_and_not_too_soon_sacked() {
        // Segments 0..4 of 100 bytes; after a timeout all are marked lost, and 1, 2 and
        // 3 are resent at 10, 20 and 30 ms (least RTT 5 ms).
        let t = SimTime::from_millis;
        let mut s = Scoreboard::default();
        for i in 0..4 {
            s.push(i * 100, 100, SimTime::ZERO);
        }
        s.mark_all_lost();
        for (i, ms) in [(1, 10), (2, 20), (3, 30)] {
            let r = s.get_mut(i);
            r.sent = t(ms);
            r.rtx = true;
            r.ever_rtx = true;
        }
        let rack = |now| Some((now, Dur::from_millis(5)));
        let block = |a, b| [SackBlock { start: a, end: b }];
        // 3's SACK 2 ms after its resend may be for its first copy: nothing is lost.
        s.sack(block(300, 400), 100, rack(t(32)));
        assert_eq!(s.rack_relost(100), 0);
        // 2's SACK 20 ms after its resend counts: 1, resent before it, is lost again
        // (its mark cleared, so `NextSeg` resends it); 3 was resent after 2.
        s.sack(block(200, 300), 100, rack(t(40)));
        assert_eq!(s.rack_relost(100), 1);
        assert!(!s.get(1).rtx && s.get(3).rtx);
        assert_eq!(s.next_lost(), Some(0));
        assert_eq!(s.rack_relost(100), 0);
    }

    /// `IsLost` over every segment from scratch, as the marks must be.
    fn lost_from_scratch(s: &Scoreboard, mss: u32) -> Vec<bool> {
        let (mut segs, mut bytes) = (0u32, 0u64);
        let mut v: Vec<bool> = s
            .recs
            .iter()
            .rev()
            .map(|r| {
                let lost = !r.sacked && (segs >= DUP_THRESH || bytes > 2 * mss as u64);
                if r.sacked {
                    segs += 1;
                    bytes += r.len as u64;
                }
                lost
            })
            .collect();
        v.reverse();
        v
    }

    #[test]
    fn incremental_is_lost_matches_a_full_recompute() {
        let mss = 100;
        let mut s = Scoreboard::default();
        let (mut next, mut una) = (0u64, 0u64);
        let mut x = 12345u64;
        for _ in 0..5000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let r = x >> 33;
            match r % 4 {
                0 | 1 => {
                    let len = if r.is_multiple_of(7) { 40 } else { mss };
                    s.push(next, len, SimTime::ZERO);
                    next += len as u64;
                }
                2 if next > una => {
                    una = (una + (r >> 8) % 250).min(next);
                    s.ack(una);
                }
                _ if next > una => {
                    let blocks: Vec<SackBlock> = (0..1 + (r >> 4) % 3)
                        .map(|k| {
                            let a = una + (r >> (8 + 5 * k)) % (next - una);
                            let b = (a + 1 + (r >> (20 + 3 * k)) % 450).min(next);
                            SackBlock { start: a, end: b }
                        })
                        .collect();
                    s.sack(blocks, mss, None);
                }
                _ => {}
            }
            let marks: Vec<bool> = s.recs.iter().map(|r| r.is_lost()).collect();
            assert_eq!(marks, lost_from_scratch(&s, mss));
        }
    }
}

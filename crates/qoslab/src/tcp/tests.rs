//! End-to-end tests of sender + receiver over [`super::testwire`], plus config tests.

use std::collections::BTreeSet;

use super::testwire::{Loss, Path, Wire};
use super::*;
use crate::packet::{tcp_flags, TcpHeader};
use crate::rng::RngStream;
use crate::time::{Dur, Rate};

const MSS: u32 = 1000;
const ALL: [Variant; 4] = [
    Variant::Tahoe,
    Variant::Reno,
    Variant::NewReno,
    Variant::Sack,
];

fn cfg(variant: Variant) -> TcpConfig {
    TcpConfig {
        variant,
        mss: MSS,
        ..Default::default()
    }
}

fn seqs(idx: &[u64]) -> BTreeSet<u64> {
    idx.iter().map(|i| i * MSS as u64).collect()
}

fn assert_complete(w: &Wire, total: u64, what: &str) {
    assert!(
        w.snd.is_done(),
        "{what}: not done, probe {:?}",
        w.snd.probe()
    );
    assert_eq!(w.delivered, total, "{what}: goodput bytes");
    assert_eq!(w.rcv.rcv_nxt(), total, "{what}: receiver position");
}

// ------------------------------------------------------------------ reliability

#[test]
fn every_variant_delivers_every_byte_once_under_bernoulli_loss() {
    let total = 2_000_000;
    for v in ALL {
        for (k, p) in [0.0, 0.01, 0.05, 0.10].into_iter().enumerate() {
            for seed in 0..3u64 {
                let c = TcpConfig {
                    delayed_ack: seed == 1,
                    handshake: seed == 2,
                    ..cfg(v)
                };
                let mut path = Path::delay(10);
                path.rate = Some(Rate::from_mbps(10));
                path.buffer = 30;
                path.loss = Loss::Bernoulli(p, RngStream::derive(seed, &format!("loss{k}")));
                if seed == 2 {
                    path.ack_loss = Some((p / 2.0, RngStream::derive(seed, "ackloss")));
                }
                let mut w = Wire::new(&c, Some(total), path);
                w.start();
                w.run(SimTime::from_secs(5000));
                assert_complete(&w, total, &format!("{v:?} p={p} seed={seed}"));
            }
        }
    }
}

#[test]
fn every_variant_delivers_every_byte_once_under_burst_loss() {
    let total = 2_000_000;
    for v in ALL {
        for seed in 0..3u64 {
            let mut path = Path::delay(20);
            path.rate = Some(Rate::from_mbps(5));
            path.buffer = 50;
            path.loss = Loss::Burst {
                p: 0.01,
                len: 2 + seed as u32 * 3,
                rng: RngStream::derive(seed, "burst"),
                left: 0,
            };
            let mut w = Wire::new(&cfg(v), Some(total), path);
            w.start();
            w.run(SimTime::from_secs(5000));
            assert_complete(&w, total, &format!("{v:?} burst seed={seed}"));
            assert!(w.drops > 0);
        }
    }
}

#[test]
fn linux_options_keep_every_byte_delivered_once_under_random_and_burst_loss() {
    // quick-ACK, the adaptive delayed-ACK timeout and rto_keeps_ssthresh (the twin's
    // Linux options) over every variant, random and burst loss, ACK loss on one seed.
    let total = 1_000_000;
    for v in ALL {
        for seed in 0..4u64 {
            let c = TcpConfig {
                delayed_ack: true,
                quickack: true,
                adaptive_delack: seed % 2 == 0,
                rto_keeps_ssthresh: seed >= 2,
                rto_lost_retransmit: seed % 2 == 1,
                handshake: seed == 3,
                ..cfg(v)
            };
            let mut path = Path::delay(10 + 10 * seed);
            path.rate = Some(Rate::from_mbps(10));
            path.buffer = 30;
            path.loss = if seed % 2 == 0 {
                Loss::Bernoulli(0.03, RngStream::derive(seed, "linux-loss"))
            } else {
                Loss::Burst {
                    p: 0.01,
                    len: 4,
                    rng: RngStream::derive(seed, "linux-burst"),
                    left: 0,
                }
            };
            if seed == 3 {
                path.ack_loss = Some((0.02, RngStream::derive(seed, "linux-ackloss")));
            }
            let mut w = Wire::new(&c, Some(total), path);
            w.start();
            w.run(SimTime::from_secs(5000));
            assert_complete(&w, total, &format!("{v:?} linux options seed={seed}"));
            assert!(w.drops > 0);
        }
    }
}

#[test]
fn finite_receive_buffer_with_a_slow_reader_delivers_everything() {
    for v in ALL {
        let c = TcpConfig {
            rcv_buffer: Some(crate::units::Bytes(8 * MSS as u64)),
            ..cfg(v)
        };
        let mut path = Path::delay(5);
        path.loss = Loss::Bernoulli(0.02, RngStream::derive(9, "rb"));
        let mut w = Wire::new(&c, Some(300_000), path);
        // The reader takes 2 segments every 50 ms: 40 kB/s, far below the path.
        w.app_reader = Some((Dur::from_millis(50), 2 * MSS as u64));
        w.start();
        let end = w.run(SimTime::from_secs(1000));
        assert_complete(&w, 300_000, &format!("{v:?} rcv_buffer"));
        // The reader, not the network, sets the pace: ≈ 300 kB / 40 kB/s = 7.5 s.
        assert!(end > SimTime::from_secs(6), "{v:?}: {end}");
    }
}

#[test]
fn unanswered_syn_is_resent_with_backoff() {
    let c = TcpConfig {
        handshake: true,
        ..cfg(Variant::NewReno)
    };
    let mut path = Path::delay(10);
    // Every SYN-ACK is lost.
    path.ack_loss = Some((1.0, RngStream::from_seed(1)));
    let mut w = Wire::new(&c, Some(5_000), path);
    w.start();
    w.run(SimTime::from_millis(500));
    assert_eq!(w.snd.probe().state, TcpState::SynSent);
    assert_eq!(w.snd.stats().segments_sent, 1);
    assert_eq!(w.snd.next_timer(), Some(SimTime::from_secs(1)));
    // Nothing comes back: the SYN is resent with backoff (1 s, then 2 s later).
    w.run_all(SimTime::from_millis(3500));
    assert_eq!(w.snd.stats().timeouts, 2);
    assert!(!w.snd.is_done());
}

#[test]
fn handshake_finishes_with_an_acked_fin() {
    let c = TcpConfig {
        handshake: true,
        ..cfg(Variant::Sack)
    };
    let mut w = Wire::new(&c, Some(10_500), Path::delay(10));
    w.start();
    let end = w.run(SimTime::from_secs(10));
    assert_complete(&w, 10_500, "handshake");
    assert!(w.rcv.fin_received());
    // SYN (1 RTT) + slow start 2, 4, 5 segments (3 RTTs), FIN ack in the last.
    assert_eq!(end, SimTime::from_millis(80));
    assert_eq!(w.snd.stats().rtt_samples, 4, "SYN-ACK gives a sample");
}

#[test]
fn app_limited_sender_sends_what_is_written_then_closes() {
    let c = TcpConfig {
        handshake: true,
        ..cfg(Variant::NewReno)
    };
    let mut s = TcpSender::new_app_limited(&c);
    let mut r = TcpReceiver::new(&c);
    let mut out = Vec::new();
    let mut acks = Vec::new();
    let t = SimTime::ZERO;
    s.start(t, &mut out);
    r.on_segment(t, &out[0], false, &mut acks);
    out.clear();
    s.on_ack(t, &acks[0], &mut out);
    assert!(out.is_empty(), "nothing written yet");
    acks.clear();
    s.app_write(t, 1500, &mut out);
    assert_eq!(
        out.iter().map(|h| h.len).collect::<Vec<_>>(),
        vec![1000, 500]
    );
    for h in out.drain(..) {
        r.on_segment(t, &h, false, &mut acks);
    }
    for a in acks.drain(..) {
        s.on_ack(t, &a, &mut out);
    }
    assert!(!s.is_done(), "open stream is never done");
    s.app_close(t, &mut out);
    assert_eq!(out.len(), 1);
    assert_ne!(out[0].flags & tcp_flags::FIN, 0);
    r.on_segment(t, &out[0], false, &mut acks);
    s.on_ack(t, &acks[0], &mut out);
    assert!(s.is_done());
    assert_eq!(s.probe().state, TcpState::Done);
    assert_eq!(s.next_timer(), None);
}

// ------------------------------------------------------------------ performance

#[test]
fn lone_flow_fills_the_bottleneck_after_slow_start() {
    for v in ALL {
        for delack in [false, true] {
            let c = TcpConfig {
                delayed_ack: delack,
                max_window: 100,
                ..cfg(v)
            };
            // 10 Mb/s, 2·20 ms RTT: BDP = 50 kB = 48 segments of 1040 B < 100.
            let mut path = Path::delay(20);
            path.rate = Some(Rate::from_mbps(10));
            path.buffer = 100;
            let mut w = Wire::new(&c, None, path);
            w.start();
            w.run_all(SimTime::from_secs(6));
            let (a, b) = (SimTime::from_secs(2), SimTime::from_secs(6));
            let link = w.link_bytes_between(a, b) as f64 * 8.0 / 4.0;
            let good = w.goodput_between(a, b) as f64 * 8.0 / 4.0;
            assert!(link >= 0.95 * 10e6, "{v:?} delack={delack}: link {link}");
            let payload_cap = 10e6 * MSS as f64 / (MSS + 40) as f64;
            assert!(good >= 0.95 * payload_cap, "{v:?}: goodput {good}");
            assert_eq!(w.drops, 0);
        }
    }
}

// ------------------------------------------------------------------ loss recovery

fn one_window_run(v: Variant, drop: &[u64]) -> Wire {
    // No bottleneck, window capped at 20 segments, lossless except `drop`.
    let c = TcpConfig {
        max_window: 20,
        ..cfg(v)
    };
    let mut path = Path::delay(50);
    path.loss = Loss::SeqOnce(seqs(drop));
    let mut w = Wire::new(&c, Some(200 * MSS as u64), path);
    w.start();
    w.run(SimTime::from_secs(100));
    assert_complete(&w, 200_000, &format!("{v:?} drop {drop:?}"));
    w
}

#[test]
fn a_single_drop_is_repaired_by_fast_retransmit_not_a_timeout() {
    for v in ALL {
        let w = one_window_run(v, &[40]);
        let s = w.snd.stats();
        assert_eq!(s.timeouts, 0, "{v:?}");
        assert_eq!(s.fast_retransmits, 1, "{v:?}");
        if v != Variant::Tahoe {
            assert_eq!(s.retransmits, 1, "{v:?}");
        }
    }
}

#[test]
fn newreno_recovers_three_losses_in_a_window_where_reno_times_out() {
    let drop = [40, 43, 47];
    let nr = one_window_run(Variant::NewReno, &drop);
    assert_eq!(nr.snd.stats().timeouts, 0);
    assert_eq!(nr.snd.stats().fast_retransmits, 1);
    assert_eq!(nr.snd.stats().retransmits, 3);
    let reno = one_window_run(Variant::Reno, &drop);
    assert!(reno.snd.stats().timeouts >= 1, "{:?}", reno.snd.stats());
}

#[test]
fn sack_retransmits_only_the_holes() {
    for drop in [
        &[40u64, 43, 47][..],
        &[60, 61, 62, 63],
        &[30, 35, 50, 55, 70],
    ] {
        let w = one_window_run(Variant::Sack, drop);
        let s = w.snd.stats();
        assert_eq!(s.timeouts, 0, "{drop:?}");
        assert_eq!(s.retransmits, drop.len() as u64, "{drop:?}: {s:?}");
    }
}

#[test]
fn newreno_halves_once_for_several_losses_in_one_window() {
    let w = one_window_run(Variant::NewReno, &[40, 43, 47]);
    // Window was capped at 20 segments: ssthresh = 20/2.
    assert_eq!(w.snd.probe().ssthresh, 10 * MSS);
}

// ------------------------------------------------------------------ hand-driven sender

/// An ACK of everything below `ack` with a SACK block `[sack_from, sack_to)` if
/// `sack_to > sack_from`, advertising a 64-segment window.
fn ack_hdr(ack: u64, sack: Option<(u64, u64)>) -> TcpHeader {
    let mut h = TcpHeader {
        ack,
        flags: tcp_flags::ACK,
        wnd: 64 * MSS,
        ..Default::default()
    };
    if let Some((start, end)) = sack {
        h.set_sack(&[crate::packet::SackBlock { start, end }]);
    }
    h
}

/// The data segments in `out` as (segment number, retransmission).
fn segs_of(out: &[TcpHeader]) -> Vec<(u64, bool)> {
    out.iter()
        .filter(|h| h.len > 0)
        .map(|h| (h.seq / MSS as u64, h.retransmit))
        .collect()
}

#[test]
fn limited_transmit_sends_one_new_segment_on_each_of_the_first_two_dupacks() {
    // IW 3 segments (0, 1, 2); segment 0 is lost, 1 and 2 bring duplicate ACKs.
    // By hand (RFC 3042 + RFC 5681 §3.2): dupack 1 → new segment 3, dupack 2 → new
    // segment 4 (outstanding 5 ≤ cwnd 3 + 2); dupack 3 (from 3) → fast retransmit of 0,
    // ssthresh = max(min(FlightSize 5, cwnd 3)/2, 2) = 2 segments (segments sent by limited
    // transmit do not count, RFC 5681 §3.2 note), cwnd = 2 + 3 = 5 = outstanding, so
    // nothing new; dupack 4 (from 4) → cwnd 6 → new segment 5.
    // Without limited transmit only two dupacks ever come back: nothing is sent.
    for lt in [true, false] {
        let c = TcpConfig {
            initial_window: 3,
            limited_transmit: Some(lt),
            ..cfg(Variant::NewReno)
        };
        let mut s = TcpSender::new(&c, None);
        let mut out = Vec::new();
        let t = SimTime::from_millis(100);
        s.start(SimTime::ZERO, &mut out);
        assert_eq!(segs_of(&out), [(0, false), (1, false), (2, false)]);
        let mut sent = Vec::new();
        for _ in 0..(if lt { 4 } else { 2 }) {
            out.clear();
            s.on_ack(t, &ack_hdr(0, None), &mut out);
            sent.push(segs_of(&out));
        }
        if lt {
            assert_eq!(
                sent,
                [
                    vec![(3, false)],
                    vec![(4, false)],
                    vec![(0, true)],
                    vec![(5, false)]
                ]
            );
            assert_eq!(s.probe().ssthresh, 2 * MSS);
            assert_eq!(s.probe().cwnd, 6 * MSS);
        } else {
            assert_eq!(sent, [vec![], vec![]]);
            assert_eq!(s.probe().state, TcpState::Disorder);
        }
    }
    // Tahoe and Reno default to off, NewReno and SACK to on.
    assert!(!cfg(Variant::Reno).limited_transmit());
    assert!(cfg(Variant::Sack).limited_transmit());
}

#[test]
fn sack_halves_flightsize_pipe_or_window_as_configured() {
    // Segment 0 lost; the third duplicate ACK SACKs 1..=3 and starts recovery with
    // cwnd = ssthresh (RFC 6675 §5 step 4.2). (ssthresh, cwnd) in segments by hand:
    // (a) IW 20, no limited transmit, 20 segments out: FlightSize 20 → 10; pipe =
    //     20 − 3 SACKed − 1 lost = 16 → 8 (ns-3); the window 20 → 10 (ns-2).
    // (b) the same with limited transmit: segments 20 and 21 leave on the first two
    //     duplicate ACKs, 22 out; FlightSize without them (RFC 5681: limited transmit's
    //     segments do not count; qoslab caps at cwnd) 20 → 10; pipe 22 − 4 = 18 → 9.
    // (c) application-limited: 12 segments to send under IW 20, no limited transmit:
    //     FlightSize 12 → 6; pipe 12 − 4 = 8 → 4; the window 20 → 10.
    let ssthresh = |halve: Halve, lt: bool, segments: Option<u64>| {
        let c = TcpConfig {
            initial_window: 20,
            limited_transmit: Some(lt),
            halve,
            ..cfg(Variant::Sack)
        };
        let mut s = TcpSender::new(&c, segments.map(|n| n * MSS as u64));
        let mut out = Vec::new();
        s.start(SimTime::ZERO, &mut out);
        for k in 1..=3u64 {
            out.clear();
            let h = ack_hdr(0, Some((MSS as u64, (k + 1) * MSS as u64)));
            s.on_ack(SimTime::from_millis(100), &h, &mut out);
        }
        assert!(
            segs_of(&out).contains(&(0, true)),
            "{halve:?}: fast retransmit"
        );
        let p = s.probe();
        assert_eq!(p.cwnd, p.ssthresh, "{halve:?}: cwnd = ssthresh (RFC 6675)");
        p.ssthresh / MSS
    };
    let all = |lt, n| [Halve::Flight, Halve::Pipe, Halve::Window].map(|h| ssthresh(h, lt, n));
    assert_eq!(all(false, None), [10, 8, 10]);
    assert_eq!(all(true, None), [10, 9, 10]);
    assert_eq!(all(false, Some(12)), [6, 4, 10]);
    // The default is RFC 6675's FlightSize.
    assert_eq!(TcpConfig::default().halve, Halve::Flight);
}

#[test]
fn a_repeated_timeout_keeps_ssthresh_unless_the_window_halves() {
    // IW 10 sent, nothing acknowledged. The first RTO: ssthresh = 10/2 = 5 segments
    // under every rule (nothing SACKed, cwnd 10). The backed-off retransmission of the
    // same segment times out again: RFC 5681 §3.1 keeps ssthresh ("flight", "pipe", as
    // Linux and ns-3); ns-2 halves its one-segment window ("window"): max(1/2, 2) = 2.
    let ss = |variant: Variant, halve: Halve| {
        let c = TcpConfig {
            initial_window: 10,
            halve,
            ..cfg(variant)
        };
        let mut s = TcpSender::new(&c, None);
        let mut out = Vec::new();
        s.start(SimTime::ZERO, &mut out);
        let mut v = Vec::new();
        for _ in 0..2 {
            let t = s.next_timer().expect("the RTO is armed");
            out.clear();
            s.on_timer(t, &mut out);
            assert_eq!(segs_of(&out), [(0, true)], "{variant:?} {halve:?}");
            v.push(s.probe().ssthresh / MSS);
        }
        v
    };
    for v in [Variant::NewReno, Variant::Sack] {
        assert_eq!(ss(v, Halve::Flight), [5, 5]);
        assert_eq!(ss(v, Halve::Pipe), [5, 5]);
        assert_eq!(ss(v, Halve::Window), [5, 2]);
    }
}

#[test]
fn rto_keeps_ssthresh_within_the_window_of_the_reduction_before_it() {
    // IW 10 sent, three duplicate ACKs: fast recovery, ssthresh = 10/2 = 5 (flight).
    // The retransmission is lost too and the RTO fires before `recover` is acknowledged:
    // with the option (Linux's tcp_enter_loss) ssthresh stays 5; without, the timeout
    // halves again what the recovery left (ssthresh 5: max(5/2, 2) = 2). The backed-off
    // retransmission then keeps it either way ("flight"); with `halve = "window"` the
    // option keeps it where ns-2's rule halves the one-segment window to 2.
    let run = |keep: bool, halve: Halve| {
        let c = TcpConfig {
            initial_window: 10,
            rto_keeps_ssthresh: keep,
            halve,
            ..cfg(Variant::NewReno)
        };
        let mut s = TcpSender::new(&c, None);
        let mut out = Vec::new();
        s.start(SimTime::ZERO, &mut out);
        let t = SimTime::from_millis(50);
        for _ in 0..3 {
            s.on_ack(t, &ack_hdr(0, None), &mut out);
        }
        assert_eq!(s.probe().state, TcpState::Recovery);
        let mut v = vec![s.probe().ssthresh / MSS];
        for _ in 0..2 {
            let t = s.next_timer().expect("the RTO is armed");
            s.on_timer(t, &mut out);
            assert_eq!(s.probe().state, TcpState::Loss);
            v.push(s.probe().ssthresh / MSS);
        }
        v
    };
    assert_eq!(run(true, Halve::Flight), [5, 5, 5]);
    assert_eq!(run(false, Halve::Flight), [5, 2, 2]);
    assert_eq!(run(true, Halve::Window), [5, 5, 5]);
    assert_eq!(run(false, Halve::Window), [5, 2, 2]);
    // After an ECN reduction whose window is not yet acknowledged, too.
    let ecn = |keep: bool| {
        let c = TcpConfig {
            initial_window: 10,
            ecn: true,
            rto_keeps_ssthresh: keep,
            ..cfg(Variant::NewReno)
        };
        let mut s = TcpSender::new(&c, None);
        let mut out = Vec::new();
        s.start(SimTime::ZERO, &mut out);
        let mut a = ack_hdr(MSS as u64, None);
        a.flags |= tcp_flags::ECE;
        s.on_ack(SimTime::from_millis(50), &a, &mut out);
        let reduced = s.probe().ssthresh / MSS;
        let t = s.next_timer().expect("the RTO is armed");
        s.on_timer(t, &mut out);
        (reduced, s.probe().ssthresh / MSS)
    };
    // ECE on the ACK of segment 0: ssthresh = flight 9 / 2 = 4; the RTO keeps it or
    // halves the 4-segment window to 2.
    assert_eq!(ecn(true), (4, 4));
    assert_eq!(ecn(false), (4, 2));
}

#[test]
fn fast_retransmit_restarts_the_timer_unless_told_to_keep_it() {
    // IW 10 sent at 0 arms the RTO; three duplicate ACKs at 50 ms: the fast retransmit
    // restarts it from 50 ms (Linux), or leaves it due where it was (ns-3).
    let due = |keep: bool| {
        let c = TcpConfig {
            initial_window: 10,
            fast_retransmit_keeps_timer: keep,
            ..cfg(Variant::NewReno)
        };
        let mut s = TcpSender::new(&c, None);
        let mut out = Vec::new();
        s.start(SimTime::ZERO, &mut out);
        let armed = s.next_timer().expect("the RTO is armed");
        let t = SimTime::from_millis(50);
        for _ in 0..3 {
            s.on_ack(t, &ack_hdr(0, None), &mut out);
        }
        assert_eq!(s.probe().state, TcpState::Recovery);
        (armed, s.next_timer().expect("the RTO is armed"))
    };
    let (armed, restarted) = due(false);
    assert_eq!(restarted, armed + Dur::from_millis(50));
    let (armed, kept) = due(true);
    assert_eq!(kept, armed);
}

#[test]
fn rto_lost_retransmit_starts_fast_recovery_at_half_the_window() {
    // The SYN-ACK at 50 ms (RTT sample and least RTT 50 ms, RTO max(50 + 4·25, 200) =
    // 200 ms), then IW 20 (segments 0..19); no ACK, so the RTO fires at 250 ms:
    // ssthresh = 20/2 = 10 (`halve = "window"`), cwnd 1, segment 0 resent. Each cumulative ACK
    // then grows cwnd by one (slow start) and the go-back resends two more: ACK k·1000
    // (k = 1..7) leaves cwnd k + 1 and segments up to 2k resent. Segment 7's
    // retransmission is lost; segment 8's arrives and brings ACK 7000 SACKing 8.
    // With the option (RACK with no reordering window in Loss, Linux's
    // tcp_fastretrans_alert → tcp_enter_recovery): 8 was sent after 7 and its SACK comes
    // more than the least RTT after its retransmission, so 7 is lost
    // again; fast recovery at once with ssthresh = cwnd 8 / 2 = 4, segment 7 resent,
    // recover = snd_max = 20. PRR (RecoverFS = prior cwnd 8), in bytes: pipe = 7
    // segments (resent 7, resent 9..14; 15..19 are marked lost by the timeout). The SACK
    // of 9: pipe 6 > 4, sndcnt = ⌈2000·4/8⌉ − prr_out 1000 = 0; of 10: pipe 5,
    // ⌈3000·4/8⌉ − 1000 = 500 bytes, less than a segment; of 11: pipe 4 = ssthresh,
    // sndcnt = min(4 − 4, …) = 0; of 12: pipe 3, sndcnt = min(1 segment, …): segment 15,
    // the first the timeout marked lost that the go-back had not resent yet.
    // Without it, nothing is sent: the dupACK in Loss waits for the next timeout.
    let run = |on: bool| {
        let c = TcpConfig {
            initial_window: 20,
            halve: Halve::Window,
            recovery: Recovery::Prr,
            rto_lost_retransmit: on,
            handshake: true,
            ..cfg(Variant::Sack)
        };
        let mut s = TcpSender::new(&c, None);
        let mut out = Vec::new();
        s.start(SimTime::ZERO, &mut out);
        let mut synack = ack_hdr(0, None);
        synack.flags |= tcp_flags::SYN;
        out.clear();
        s.on_ack(SimTime::from_millis(50), &synack, &mut out);
        assert_eq!(segs_of(&out).len(), 20);
        out.clear();
        let rto = s.next_timer().expect("the RTO is armed");
        assert_eq!(rto, SimTime::from_millis(250));
        s.on_timer(rto, &mut out);
        assert_eq!(segs_of(&out), [(0, true)]);
        assert_eq!(s.probe().state, TcpState::Loss);
        assert_eq!(s.probe().ssthresh, 10 * MSS);
        for k in 1..=7u64 {
            out.clear();
            let t = SimTime::from_millis(250 + 100 * k);
            s.on_ack(t, &ack_hdr(k * MSS as u64, None), &mut out);
            assert_eq!(segs_of(&out), [(2 * k - 1, true), (2 * k, true)]);
        }
        assert_eq!(s.probe().cwnd, 8 * MSS);
        let mut sent = Vec::new();
        for j in 8..=12u64 {
            out.clear();
            let h = ack_hdr(7 * MSS as u64, Some((8 * MSS as u64, (j + 1) * MSS as u64)));
            s.on_ack(SimTime::from_millis(1000 + j), &h, &mut out);
            sent.push(segs_of(&out));
        }
        (sent, s.probe())
    };
    let (sent, p) = run(true);
    let none = Vec::new();
    assert_eq!(
        sent,
        [
            vec![(7, true)],
            none.clone(),
            none.clone(),
            none,
            vec![(15, true)]
        ]
    );
    assert_eq!(p.state, TcpState::Recovery);
    assert_eq!(p.ssthresh, 4 * MSS);
    // Off: the timeout's recovery goes on, and only its next timeout resends 7.
    let (sent, p) = run(false);
    assert!(sent.iter().all(|v| v.is_empty()), "{sent:?}");
    assert_eq!(p.state, TcpState::Loss);
    assert_eq!(p.ssthresh, 10 * MSS);
}

#[test]
fn prr_spreads_recovery_sends_in_proportion_to_delivered_data() {
    // IW 20, no limited transmit, segment 0 lost; dupack k (k = 1..19) SACKs segments
    // 1..=k. At dupack 3 recovery starts: pipe = 20 − 3 SACKed − 1 lost = 16 segments,
    // ssthresh = 16/2 = 8 (`halve = "pipe"`), RecoverFS = 20, the fast retransmit is
    // prr_out = 1.
    // By hand (RFC 6937, in segments): dupack k delivered prr_delivered = k − 2 and
    // pipe = (19 − k) + 1 (retransmission) + new segments sent. While pipe > 8,
    // sndcnt = ⌈(k − 2)·8/20⌉ − prr_out: ≥ 1 at k = 7 (2 − 1), 10 (3.2 − 2), 12 (4 − 3);
    // then pipe ≤ 8 (PRR-SSRB): sndcnt = min(8 − pipe, …): 0 at k = 13–15, 1 at 16–19.
    // RFC 6675 instead keeps cwnd = 8 and sends only once pipe < 8: k = 13..19.
    let run = |recovery: Recovery| {
        let c = TcpConfig {
            initial_window: 20,
            limited_transmit: Some(false),
            recovery,
            halve: Halve::Pipe,
            ..cfg(Variant::Sack)
        };
        let mut s = TcpSender::new(&c, None);
        let mut out = Vec::new();
        s.start(SimTime::ZERO, &mut out);
        assert_eq!(out.len(), 20);
        let mut new_at = Vec::new();
        for k in 1..20u64 {
            out.clear();
            let h = ack_hdr(0, Some((MSS as u64, (k + 1) * MSS as u64)));
            s.on_ack(SimTime::from_millis(100), &h, &mut out);
            let segs = segs_of(&out);
            if k == 3 {
                assert_eq!(segs, [(0, true)], "{recovery:?}: fast retransmit");
                assert_eq!(s.probe().ssthresh, 8 * MSS);
            } else if !segs.is_empty() {
                assert_eq!(segs.len(), 1, "{recovery:?} k={k}: {segs:?}");
                assert!(!segs[0].1);
                new_at.push(k);
            }
        }
        // The retransmission arrives: everything is acknowledged, cwnd = ssthresh.
        out.clear();
        s.on_ack(
            SimTime::from_millis(200),
            &ack_hdr(20 * MSS as u64, None),
            &mut out,
        );
        assert_eq!(s.probe().state, TcpState::Open, "{recovery:?}");
        assert_eq!(s.probe().cwnd, 8 * MSS, "{recovery:?}");
        new_at
    };
    assert_eq!(run(Recovery::Prr), [7, 10, 12, 16, 17, 18, 19]);
    assert_eq!(run(Recovery::Rfc6675), [13, 14, 15, 16, 17, 18, 19]);
}

// ------------------------------------------------------------------ RTO

#[test]
fn karn_no_sample_from_a_retransmitted_segment_and_backoff_is_kept() {
    let c = cfg(Variant::NewReno);
    let mut path = Path::delay(50);
    // The very first segment is lost: the RTO (initial 1 s) must resend it.
    path.loss = Loss::SeqOnce(seqs(&[0]));
    let mut w = Wire::new(&c, Some(MSS as u64), path);
    w.start();
    let end = w.run(SimTime::from_secs(10));
    assert_eq!(end, SimTime::from_millis(1100));
    let s = w.snd.stats();
    assert_eq!((s.timeouts, s.retransmits, s.rtt_samples), (1, 1, 0));
    // No sample: RTO stays backed off at 2 × initial.
    assert_eq!(w.snd.probe().srtt, None);
    assert_eq!(w.snd.probe().rto, Dur::from_secs(2));
}

#[test]
fn karn_no_sample_when_the_timed_segment_is_fast_retransmitted() {
    let c = TcpConfig {
        initial_window: 4,
        ..cfg(Variant::NewReno)
    };
    let mut s = TcpSender::new(&c, Some(4 * MSS as u64));
    let mut out = Vec::new();
    s.start(SimTime::ZERO, &mut out);
    assert_eq!(out.len(), 4);
    let ack = |a: u64| TcpHeader {
        ack: a,
        flags: tcp_flags::ACK,
        wnd: 64 * MSS,
        ..Default::default()
    };
    out.clear();
    for _ in 0..3 {
        s.on_ack(SimTime::from_millis(100), &ack(0), &mut out);
    }
    assert_eq!(s.stats().fast_retransmits, 1);
    assert!(out[0].retransmit && out[0].seq == 0);
    // The ACK covering the timed (and retransmitted) segment 0 gives no sample.
    s.on_ack(SimTime::from_millis(150), &ack(4 * MSS as u64), &mut out);
    assert!(s.is_done());
    assert_eq!(s.stats().rtt_samples, 0);
    assert_eq!(s.probe().srtt, None);
}

#[test]
fn every_ack_samples_take_the_lowest_newly_acked_then_the_newly_sacked_segment() {
    // Linux's per-ACK samples (tcp_clean_rtx_queue, tcp_sacktag_one) against one timed
    // segment per RTT, by hand: segments 0–3 sent at 0, 4 and 5 at 100 ms.
    let run = |samples: RttSamples| {
        let c = TcpConfig {
            initial_window: 4,
            rtt_samples: samples,
            ..cfg(Variant::Sack)
        };
        let mut s = TcpSender::new(&c, Some(10 * MSS as u64));
        let mut out = Vec::new();
        s.start(SimTime::ZERO, &mut out);
        assert_eq!(
            segs_of(&out),
            [(0, false), (1, false), (2, false), (3, false)]
        );
        out.clear();
        // Segment 0 acknowledged: 100 ms. cwnd 5 sends 4 and 5.
        s.on_ack(
            SimTime::from_millis(100),
            &ack_hdr(MSS as u64, None),
            &mut out,
        );
        assert_eq!(segs_of(&out), [(4, false), (5, false)]);
        // Segment 1 acknowledged (sent at 0: 160 ms) and 4 newly SACKed (sent at 100 ms:
        // 60 ms): the cumulative one wins.
        let sack4 = Some((4 * MSS as u64, 5 * MSS as u64));
        s.on_ack(
            SimTime::from_millis(160),
            &ack_hdr(2 * MSS as u64, sack4),
            &mut out,
        );
        // A duplicate ACK newly SACKing 5 (sent at 100 ms): 100 ms.
        let sack45 = Some((4 * MSS as u64, 6 * MSS as u64));
        s.on_ack(
            SimTime::from_millis(200),
            &ack_hdr(2 * MSS as u64, sack45),
            &mut out,
        );
        (s.stats().rtt_samples, s.probe())
    };
    // Timed: segment 0 only (the next timed one, 4, is not yet acknowledged).
    let (n, p) = run(RttSamples::Timed);
    assert_eq!((n, p.srtt), (1, Some(Dur::from_millis(100))));
    // Every ACK: 100, 160, 100 ms. SRTT 100 → 107.5 → 106.5625 ms; RTTVAR 50 →
    // (3·50 + 60)/4 = 52.5 → (3·52.5 + 7.5)/4 = 41.25 ms; RTO = 106.5625 + 4·41.25.
    for mode in [RttSamples::EveryAck, RttSamples::EveryAckTs] {
        let (n, p) = run(mode);
        assert_eq!(n, 3, "{mode:?}");
        assert_eq!(
            p.srtt,
            Some(Dur::from_micros(106_562) + Dur::from_nanos(500))
        );
        assert_eq!(p.rttvar, Some(Dur::from_micros(41_250)));
        assert_eq!(p.rto, Dur::from_micros(271_562) + Dur::from_nanos(500));
    }
}

#[test]
fn every_ack_ts_samples_an_acked_retransmission_from_its_timestamp_echo() {
    // The first segment is lost; the RTO (initial 1 s) resends it at 1 s and its ACK
    // comes at 1.1 s echoing 1 s. Without timestamps Karn's rule leaves no sample and the
    // RTO backed off at 2 s; with them (RFC 7323 §4.1, Linux's tcp_ack_update_rtt) the
    // echo gives 100 ms, which clears the backoff: RTO = 100 + max(200, 4·50) = 300 ms.
    for (mode, samples, srtt, rto) in [
        (RttSamples::EveryAck, 0, None, Dur::from_secs(2)),
        (
            RttSamples::EveryAckTs,
            1,
            Some(Dur::from_millis(100)),
            Dur::from_millis(300),
        ),
    ] {
        let c = TcpConfig {
            rtt_samples: mode,
            granularity: Dur::from_millis(200),
            ..cfg(Variant::Sack)
        };
        let mut path = Path::delay(50);
        path.loss = Loss::SeqOnce(seqs(&[0]));
        let mut w = Wire::new(&c, Some(MSS as u64), path);
        w.start();
        let end = w.run(SimTime::from_secs(10));
        assert_eq!(end, SimTime::from_millis(1100), "{mode:?}");
        let s = w.snd.stats();
        assert_eq!((s.timeouts, s.rtt_samples), (1, samples), "{mode:?}");
        assert_eq!(w.snd.probe().srtt, srtt, "{mode:?}");
        assert_eq!(w.snd.probe().rto, rto, "{mode:?}");
    }
    let c: TcpConfig = toml::from_str("rtt_samples = \"every_ack_ts\"").unwrap();
    assert_eq!(c.rtt_samples, RttSamples::EveryAckTs);
    assert_eq!(TcpConfig::default().rtt_samples, RttSamples::Timed);
}

#[test]
fn rto_is_rfc6298_from_wire_samples() {
    // One segment per RTT of exactly 100 ms: SRTT = 100, RTTVAR 50 → 37.5 → …
    let c = TcpConfig {
        initial_window: 1,
        max_window: 1,
        ..cfg(Variant::NewReno)
    };
    let mut w = Wire::new(&c, Some(3 * MSS as u64), Path::delay(50));
    w.start();
    w.run(SimTime::from_secs(10));
    let p = w.snd.probe();
    assert_eq!(w.snd.stats().rtt_samples, 3);
    assert_eq!(p.srtt, Some(Dur::from_millis(100)));
    // RTTVAR: 50 → 37.5 → 28.125 ms; RTO = 100 + 4·28.125 = 212.5 ms.
    assert_eq!(p.rttvar, Some(Dur::from_micros(28_125)));
    assert_eq!(p.rto, Dur::from_micros(212_500));
}

#[test]
fn rto_backoff_doubles_up_to_max_rto() {
    let c = TcpConfig {
        max_rto: Dur::from_secs(10),
        ..cfg(Variant::Sack)
    };
    let mut s = TcpSender::new(&c, Some(10_000));
    let mut out = Vec::new();
    s.start(SimTime::ZERO, &mut out);
    assert_eq!(out.len(), 2);
    let mut t = SimTime::ZERO;
    let mut gaps = Vec::new();
    for _ in 0..7 {
        let next = s.next_timer().unwrap();
        // Early calls do nothing.
        out.clear();
        s.on_timer(SimTime::from_nanos(next.as_nanos() - 1), &mut out);
        assert!(out.is_empty());
        s.on_timer(next, &mut out);
        assert_eq!(out.len(), 1, "one segment after each timeout");
        assert!(out[0].retransmit && out[0].seq == 0);
        gaps.push((next - t).as_nanos() / 1_000_000_000);
        t = next;
    }
    assert_eq!(gaps, vec![1, 2, 4, 8, 10, 10, 10]);
    assert_eq!(s.stats().timeouts, 7);
    assert_eq!(s.probe().cwnd, MSS);
}

// ------------------------------------------------------------------ delayed ACK

#[test]
fn delayed_ack_acks_every_second_segment() {
    let c = TcpConfig {
        delayed_ack: true,
        ..cfg(Variant::NewReno)
    };
    let mut path = Path::delay(10);
    path.rate = Some(Rate::from_mbps(10));
    let mut w = Wire::new(&c, Some(400 * MSS as u64), path);
    w.start();
    w.run(SimTime::from_secs(100));
    assert_complete(&w, 400_000, "delack");
    // 400 segments → 200 ACKs, give or take the odd timer ACK at window ends.
    assert!(w.acks_sent >= 200 && w.acks_sent <= 215, "{}", w.acks_sent);
}

#[test]
fn delayed_ack_timer_acks_a_lone_segment_after_200ms() {
    let c = TcpConfig {
        delayed_ack: true,
        ..cfg(Variant::NewReno)
    };
    let mut w = Wire::new(&c, Some(500), Path::delay(10));
    w.start();
    let end = w.run(SimTime::from_secs(10));
    // Arrives at 10 ms, ACKed at 210 ms, ACK back at 220 ms.
    assert_eq!(w.ack_log, vec![(SimTime::from_millis(210), 500)]);
    assert_eq!(end, SimTime::from_millis(220));
}

// ------------------------------------------------------------------ ECN and quench

fn ecn_run(marks: &[u64]) -> Wire {
    let c = TcpConfig {
        ecn: true,
        max_window: 20,
        ..cfg(Variant::NewReno)
    };
    let mut path = Path::delay(50);
    path.ce_seqs = seqs(marks);
    let mut w = Wire::new(&c, Some(200 * MSS as u64), path);
    w.start();
    w.run(SimTime::from_secs(100));
    assert_complete(&w, 200_000, "ecn");
    w
}

#[test]
fn ecn_marks_reduce_once_per_rtt_without_retransmission() {
    // Three marks in one window: one reduction.
    let w = ecn_run(&[40, 42, 45]);
    let s = w.snd.stats();
    assert_eq!((s.ecn_reductions, s.retransmits, s.timeouts), (1, 0, 0));
    // The ECE comes on the ACK of segment 40: 19 segments in flight → ssthresh 9.
    assert_eq!(w.snd.probe().ssthresh, 9 * MSS);
    // Marks several windows apart: one reduction each.
    let w = ecn_run(&[40, 42, 120, 180]);
    let s = w.snd.stats();
    assert_eq!((s.ecn_reductions, s.retransmits), (3, 0));
    // Without ecn the marks are ignored.
    let c = TcpConfig {
        max_window: 20,
        ..cfg(Variant::NewReno)
    };
    let mut path = Path::delay(50);
    path.ce_seqs = seqs(&[40]);
    let mut w = Wire::new(&c, Some(100_000), path);
    w.start();
    w.run(SimTime::from_secs(100));
    assert_eq!(w.snd.stats().ecn_reductions, 0);
}

#[test]
fn cwr_is_sent_once_after_a_reduction() {
    let c = TcpConfig {
        ecn: true,
        ..cfg(Variant::Reno)
    };
    let mut s = TcpSender::new(&c, None);
    let mut out = Vec::new();
    s.start(SimTime::ZERO, &mut out);
    let ack = TcpHeader {
        ack: MSS as u64,
        flags: tcp_flags::ACK | tcp_flags::ECE,
        wnd: 64 * MSS,
        ..Default::default()
    };
    out.clear();
    s.on_ack(SimTime::from_millis(100), &ack, &mut out);
    assert_eq!(s.stats().ecn_reductions, 1);
    assert_eq!(s.probe().cwnd, 2 * MSS);
    let cwr: Vec<bool> = out.iter().map(|h| h.flags & tcp_flags::CWR != 0).collect();
    assert_eq!(cwr, vec![true]);
}

/// A CE mark, then an outage that loses every segment sent for a second from the
/// CWR-carrying one on: the receiver echoes ECE on every ACK of the timeout's go-back.
/// Returns the run and the same run with the outage but no mark, from the same time.
fn rto_under_ece(v: Variant) -> (Wire, Wire) {
    let run = |marks: &[u64], outage: Loss| {
        let c = TcpConfig {
            ecn: true,
            max_window: 40,
            ..cfg(v)
        };
        let mut path = Path::delay(50);
        path.ce_seqs = seqs(marks);
        path.loss = outage;
        let mut w = Wire::new(&c, Some(400 * MSS as u64), path);
        w.start();
        w.run(SimTime::from_secs(200));
        assert_complete(&w, 400_000, "rto under ece");
        w
    };
    let ecn = run(&[40], Loss::CwrOutage(Dur::from_secs(1), None));
    let Loss::CwrOutage(_, Some(end)) = ecn.path_loss() else {
        panic!("no CWR was sent")
    };
    let (end, from) = (*end, SimTime::from_secs_f64(end.as_secs_f64() - 1.0));
    (ecn, run(&[], Loss::Outage(from, end)))
}

#[test]
fn the_window_regrows_after_a_timeout_while_ece_is_echoed() {
    for v in ALL {
        let (ecn, plain) = rto_under_ece(v);
        let (s, p) = (ecn.snd.stats(), plain.snd.stats());
        let &Loss::CwrOutage(_, Some(outage_end)) = ecn.path_loss() else {
            unreachable!()
        };
        assert!(s.timeouts >= 1, "{v:?}: the lost window must time out");
        assert_eq!(s.ecn_reductions, 1, "{v:?}: one reduction for the mark");
        // The go-back slow-starts as without the mark: the timeout answered the mark,
        // and the receiver stops echoing at the CWR on the first new segment. The mark
        // halved ssthresh, so the run ends 0.5 s later than without it; with the window
        // held at one segment through the go-back it ended 2.7 s later.
        let (te, tp) = (
            ecn.goodput.last().unwrap().0,
            plain.goodput.last().unwrap().0,
        );
        assert!(
            te.as_secs_f64() < tp.as_secs_f64() + 1.0,
            "{v:?}: with the mark done at {te:?}, without at {tp:?}"
        );
        // Within a few RTTs of the outage's end the window is several segments.
        let regrown = ecn
            .cwnd_log
            .iter()
            .filter(|(t, _)| *t > outage_end && *t < outage_end + Dur::from_secs(1))
            .map(|(_, c)| *c)
            .max()
            .unwrap();
        assert!(
            regrown >= 4 * MSS,
            "{v:?}: cwnd after the timeout {regrown}"
        );
        assert_eq!(p.ecn_reductions, 0);
    }
}

/// (segment number, retransmission, CWR) of the data segments in `out`.
fn cwr_of(out: &[TcpHeader]) -> Vec<(u64, bool, bool)> {
    out.iter()
        .filter(|h| h.len > 0)
        .map(|h| {
            (
                h.seq / MSS as u64,
                h.retransmit,
                h.flags & tcp_flags::CWR != 0,
            )
        })
        .collect()
}

#[test]
fn a_timeout_and_a_fast_retransmit_send_cwr_on_the_next_new_segment() {
    // RFC 3168 §6.1.2: CWR on the first new data segment after a window reduction "for
    // any reason (because of a retransmit timeout, a Fast Retransmit, or in response to
    // an ECN Notification)", never on a retransmission. Without ECN, no CWR.
    for ecn in [true, false] {
        let c = TcpConfig {
            ecn,
            initial_window: 3,
            limited_transmit: Some(false),
            ..cfg(Variant::NewReno)
        };
        // Fast retransmit: segment 0 lost, three duplicate ACKs, then a fourth that
        // inflates the window (ssthresh 2, cwnd 2 + 3 + 1 = 6 > 3 outstanding).
        let mut s = TcpSender::new(&c, None);
        let mut out = Vec::new();
        let t = SimTime::from_millis(100);
        s.start(SimTime::ZERO, &mut out);
        let mut sent = Vec::new();
        for _ in 0..4 {
            out.clear();
            s.on_ack(t, &ack_hdr(0, None), &mut out);
            sent.extend(cwr_of(&out));
        }
        assert_eq!(sent[0], (0, true, false), "ecn {ecn}: the fast retransmit");
        assert_eq!(sent[1], (3, false, ecn), "ecn {ecn}: the first new segment");
        assert!(
            sent[2..].iter().all(|x| !x.2),
            "ecn {ecn}: CWR once: {sent:?}"
        );
        // Timeout: nothing comes back; the timer resends segment 0, then everything
        // is acknowledged and new data flows.
        let mut s = TcpSender::new(&c, None);
        out.clear();
        s.start(SimTime::ZERO, &mut out);
        let rto = s.next_timer().unwrap();
        out.clear();
        s.on_timer(rto, &mut out);
        assert_eq!(
            cwr_of(&out),
            [(0, true, false)],
            "ecn {ecn}: the timeout's resend"
        );
        out.clear();
        s.on_ack(
            rto + Dur::from_millis(100),
            &ack_hdr(3 * MSS as u64, None),
            &mut out,
        );
        let sent = cwr_of(&out);
        assert_eq!(
            sent[0],
            (3, false, ecn),
            "ecn {ecn}: after the timeout {sent:?}"
        );
        assert!(
            sent[1..].iter().all(|x| !x.2),
            "ecn {ecn}: CWR once: {sent:?}"
        );
    }
}

#[test]
fn source_quench_halves_once_per_window() {
    let c = TcpConfig {
        max_window: 20,
        ..cfg(Variant::NewReno)
    };
    let mut w = Wire::new(&c, None, Path::delay(50));
    w.start();
    w.run_all(SimTime::from_millis(1000));
    let before = w.snd.probe();
    assert_eq!(before.cwnd, 20 * MSS);
    w.snd.on_source_quench(SimTime::from_millis(1000));
    w.snd.on_source_quench(SimTime::from_millis(1001));
    let after = w.snd.probe();
    assert_eq!((after.cwnd, after.ssthresh), (10 * MSS, 10 * MSS));
    assert_eq!(w.snd.stats().quench_reductions, 1);
    // A window later, another quench acts again.
    w.run_all(SimTime::from_millis(1300));
    w.snd.on_source_quench(SimTime::from_millis(1300));
    assert_eq!(w.snd.stats().quench_reductions, 2);
    assert_eq!(w.snd.stats().retransmits, 0);
}

// ------------------------------------------------------------------ congestion control

#[test]
fn multcp_weight_one_behaves_exactly_like_reno_on_the_wire() {
    let run = |cc: CcConfig| {
        let c = TcpConfig {
            cc,
            ..cfg(Variant::Sack)
        };
        let mut path = Path::delay(20);
        path.rate = Some(Rate::from_mbps(10));
        path.buffer = 20;
        let mut w = Wire::new(&c, Some(1_000_000), path);
        w.start();
        w.run(SimTime::from_secs(100));
        (w.cwnd_log.clone(), *w.snd.stats())
    };
    let a = run(CcConfig::Reno);
    let b = run(CcConfig::MulTcp { w: 1.0 });
    assert!(a.1.retransmits > 0, "the test must exercise losses");
    assert_eq!(a, b);
}

#[test]
fn multcp_weight_n_grows_n_times_faster_per_rtt_on_the_wire() {
    // Slow start to 32 segments, a quench halves to 16 (congestion avoidance), then
    // 10 RTTs of growth.
    let ca_gain = |weight: f64| {
        let c = TcpConfig {
            cc: CcConfig::MulTcp { w: weight },
            max_window: 1000,
            initial_window: 32,
            ..cfg(Variant::NewReno)
        };
        let mut w = Wire::new(&c, None, Path::delay(50));
        w.start();
        w.run_all(SimTime::from_millis(50));
        w.snd.on_source_quench(SimTime::from_millis(50));
        // The quench is MulTCP's decrease: to 32·(1 − 1/(2w)).
        let c0 = w.snd.probe().cwnd;
        assert_eq!(c0, (32.0 * (1.0 - 0.5 / weight)) as u32 * MSS);
        w.run_all(SimTime::from_millis(50 + 10 * 100));
        (w.snd.probe().cwnd - c0) as f64 / MSS as f64
    };
    let g1 = ca_gain(1.0);
    let g4 = ca_gain(4.0);
    assert!((9.0..=10.5).contains(&g1), "{g1}");
    assert!((36.0..=41.0).contains(&g4), "{g4}");
}

#[test]
fn aggregate_fair_increase_scales_with_rtt_over_rtt_av_squared_on_the_wire() {
    // Two flows with RTT 200 ms and 100 ms, rtt_av = 100 ms, in congestion avoidance.
    let ca_gain = |one_way_ms: u64| {
        let c = TcpConfig {
            cc: CcConfig::AggregateFair {
                rtt_av: Dur::from_millis(100),
                rtt: AfRtt::Smoothed,
            },
            max_window: 1000,
            ..cfg(Variant::NewReno)
        };
        let mut w = Wire::new(&c, None, Path::delay(one_way_ms));
        w.start();
        // Slow start until cwnd reaches ssthresh (= max window): force CA by a quench.
        w.run_all(SimTime::from_millis(one_way_ms * 2 * 4 + 1));
        w.snd
            .on_source_quench(w.snd.probe().srtt.map_or(SimTime::ZERO, |_| SimTime::ZERO));
        let c0 = w.snd.probe().cwnd;
        let t0 = SimTime::from_millis(one_way_ms * 2 * 4 + 1);
        w.run_all(t0 + Dur::from_millis(one_way_ms * 2 * 10));
        (w.snd.probe().cwnd - c0) as f64 / MSS as f64 / 10.0
    };
    let long = ca_gain(100); // rtt 200 ms: (2)² = 4 per RTT
    let short = ca_gain(50); // rtt 100 ms: 1 per RTT
    assert!((short - 1.0).abs() < 0.2, "{short}");
    assert!((long - 4.0).abs() < 0.6, "{long}");
}

// ------------------------------------------------------------------ configuration

#[test]
fn config_defaults_and_serde() {
    let c: TcpConfig = toml::from_str("").unwrap();
    assert_eq!(c, TcpConfig::default());
    assert!(c.validate().is_ok());
    let c: TcpConfig = toml::from_str(
        "variant = \"sack\"\nmss = 536\ndelack_timeout = \"100ms\"\nrcv_buffer = \"64KB\"\n\
         cc = { kind = \"multcp\", w = 4 }",
    )
    .unwrap();
    assert_eq!(c.variant, Variant::Sack);
    assert_eq!(c.mss, 536);
    assert_eq!(c.delack_timeout, Dur::from_millis(100));
    assert_eq!(c.rcv_buffer, Some(crate::units::Bytes(64_000)));
    assert_eq!(c.cc, CcConfig::MulTcp { w: 4.0 });
    assert!(c.limited_transmit());
    assert_eq!(c.recovery, Recovery::Rfc6675);
    let c: TcpConfig =
        toml::from_str("variant = \"sack\"\nlimited_transmit = false\nrecovery = \"prr\"").unwrap();
    assert!(!c.limited_transmit());
    assert_eq!(c.recovery, Recovery::Prr);
    let c: TcpConfig =
        toml::from_str(
            "quickack = true\nadaptive_delack = true\nrto_keeps_ssthresh = true\nrto_lost_retransmit = true\nfast_retransmit_keeps_timer = true",
        )
            .unwrap();
    assert!(c.quickack && c.adaptive_delack && c.rto_keeps_ssthresh && c.rto_lost_retransmit);
    assert!(c.fast_retransmit_keeps_timer);
    let c: TcpConfig = toml::from_str("cc = \"reno\"").unwrap();
    assert_eq!(c.cc, CcConfig::Reno);
    let c: TcpConfig =
        toml::from_str("cc = { kind = \"aggregate_fair\", rtt_av = \"80ms\" }").unwrap();
    assert_eq!(
        c.cc,
        CcConfig::AggregateFair {
            rtt_av: Dur::from_millis(80),
            rtt: AfRtt::Smoothed,
        }
    );
    let c: TcpConfig =
        toml::from_str("cc = { kind = \"aggregate_fair\", rtt_av = \"80ms\", rtt = \"min\" }")
            .unwrap();
    assert!(matches!(
        c.cc,
        CcConfig::AggregateFair {
            rtt: AfRtt::Min,
            ..
        }
    ));
    for bad in [
        "cc = { kind = \"aggregate_fair\", rtt_av = \"80ms\", rtt = \"base\" }",
        "cc = { kind = \"reno\", rtt = \"min\" }",
    ] {
        assert!(toml::from_str::<TcpConfig>(bad).is_err(), "{bad}");
    }
    let c: TcpConfig = toml::from_str("cc = { kind = \"constant_rate\", c = 100 }").unwrap();
    assert_eq!(c.cc, CcConfig::ConstantRate { c: 100.0 });
    assert!(c.validate().is_ok());
    let e = toml::from_str::<TcpConfig>("cc = { kind = \"reno\", c = 1 }")
        .unwrap_err()
        .to_string();
    assert!(e.contains("does not apply"), "{e}");
    let c: TcpConfig = toml::from_str("cc = { kind = \"constant_rate\", c = -1 }").unwrap();
    assert_eq!(c.validate().unwrap_err().key, "cc.c");
}

#[test]
fn config_errors_name_the_key() {
    let e = toml::from_str::<TcpConfig>("msss = 1")
        .unwrap_err()
        .to_string();
    assert!(e.contains("msss"), "{e}");
    let e = toml::from_str::<TcpConfig>("variant = \"vegas\"")
        .unwrap_err()
        .to_string();
    assert!(e.contains("vegas"), "{e}");
    let e = toml::from_str::<TcpConfig>("cc = \"multcp\"")
        .unwrap_err()
        .to_string();
    assert!(e.contains("needs a weight"), "{e}");
    let e = toml::from_str::<TcpConfig>("cc = { kind = \"reno\", w = 2 }")
        .unwrap_err()
        .to_string();
    assert!(e.contains("does not apply"), "{e}");
    let e = toml::from_str::<TcpConfig>("cc = { kind = \"multcp\", w = 2, x = 1 }")
        .unwrap_err()
        .to_string();
    assert!(e.contains('x'), "{e}");

    let bad = |c: TcpConfig| c.validate().unwrap_err();
    let e = bad(TcpConfig {
        mss: 0,
        ..Default::default()
    });
    assert_eq!(e.key, "mss");
    assert!(
        e.message.contains("expected a positive segment size"),
        "{}",
        e.message
    );
    assert_eq!(
        bad(TcpConfig {
            max_window: 0,
            ..Default::default()
        })
        .key,
        "max_window"
    );
    assert_eq!(
        bad(TcpConfig {
            sack_blocks: 4,
            ..Default::default()
        })
        .key,
        "sack_blocks"
    );
    let e = bad(TcpConfig {
        recovery: Recovery::Prr,
        ..Default::default()
    });
    assert_eq!(e.key, "recovery");
    assert!(e.message.contains("only with variant"), "{}", e.message);
    assert_eq!(
        bad(TcpConfig {
            cc: CcConfig::MulTcp { w: 0.5 },
            ..Default::default()
        })
        .key,
        "cc.w"
    );
    assert_eq!(
        bad(TcpConfig {
            initial_rto: Dur::from_millis(100),
            ..Default::default()
        })
        .key,
        "initial_rto"
    );
    assert_eq!(
        bad(TcpConfig {
            rcv_buffer: Some(crate::units::Bytes(10)),
            ..Default::default()
        })
        .key,
        "rcv_buffer"
    );
}

// ------------------------------------------------------------------ DCTCP

fn dctcp(g: f64, alpha_init: f64) -> TcpConfig {
    TcpConfig {
        ecn: true,
        cc: CcConfig::Dctcp { g, alpha_init },
        ..cfg(Variant::NewReno)
    }
}

#[test]
fn dctcp_cuts_cwnd_by_alpha_over_two_once_per_window_on_the_wire() {
    // As `ecn_marks_reduce_once_per_rtt_without_retransmission`: three marks in one
    // window, a window capped at 20 segments. With g ≈ 0, α stays alpha_init: the cut
    // is 20 − ⌊20·α/2⌋ segments of cwnd (not of the flight, 19, that RFC 3168 halves).
    let run = |alpha: f64, marks: &[u64]| {
        let c = TcpConfig {
            max_window: 20,
            ..dctcp(1e-12, alpha)
        };
        let mut path = Path::delay(50);
        path.ce_seqs = seqs(marks);
        let mut w = Wire::new(&c, Some(200 * MSS as u64), path);
        w.start();
        w.run(SimTime::from_secs(100));
        assert_complete(&w, 200_000, "dctcp");
        w
    };
    // (α values off the integer products: α drifts by ~1e-12.)
    for (alpha, segs) in [(0.55, 15), (0.95, 11), (0.25, 18)] {
        let w = run(alpha, &[40, 42, 45]);
        let s = w.snd.stats();
        assert_eq!((s.ecn_reductions, s.retransmits), (1, 0), "α = {alpha}");
        assert_eq!(w.snd.probe().ssthresh, segs * MSS, "α = {alpha}");
    }
    // Marks several windows apart: one cut each.
    let w = run(0.55, &[40, 42, 120, 180]);
    assert_eq!(w.snd.stats().ecn_reductions, 3);
}

#[test]
fn dctcp_grows_on_ece_acks_but_not_in_the_window_after_its_cut() {
    // Initial window 10, slow start. The ACK of segment 0 carries ECE: it grows the
    // window to 11 (as any ACK), then the cut with α = 1 leaves 11 − ⌊5.5⌋ = 6 segments,
    // cwnd = ssthresh. ACKs below snd_max at the cut (10 segments) leave cwnd at 6 (Linux's
    // CWR state); the ACK reaching it grows again, by MSS²/cwnd in congestion avoidance.
    let c = TcpConfig {
        initial_window: 10,
        max_window: 100,
        ..dctcp(1e-12, 1.0)
    };
    let mut s = TcpSender::new(&c, None);
    let mut out = Vec::new();
    s.start(SimTime::ZERO, &mut out);
    assert_eq!(out.len(), 10);
    let ack = |n: u64, ece: bool| TcpHeader {
        ack: n * MSS as u64,
        flags: tcp_flags::ACK | if ece { tcp_flags::ECE } else { 0 },
        wnd: 100 * MSS,
        ..Default::default()
    };
    let t = SimTime::from_millis(100);
    s.on_ack(t, &ack(1, true), &mut out);
    assert_eq!((s.probe().cwnd, s.probe().ssthresh), (6 * MSS, 6 * MSS));
    for n in 2..10 {
        s.on_ack(t, &ack(n, n % 3 == 0), &mut out);
        assert_eq!(
            s.probe().cwnd,
            6 * MSS,
            "ACK {n} inside the window after the cut"
        );
    }
    assert_eq!(s.stats().ecn_reductions, 1);
    s.on_ack(t, &ack(10, false), &mut out);
    assert_eq!(s.probe().cwnd, 6 * MSS + MSS / 6);
    // An ECE ACK after that window grows (and then cuts again: a new window).
    s.on_ack(t, &ack(11, true), &mut out);
    assert_eq!(s.stats().ecn_reductions, 2);
}

#[test]
fn dctcp_delivers_every_byte_once_under_random_loss_and_marks() {
    let total = 1_000_000;
    for v in [Variant::NewReno, Variant::Sack] {
        for (k, p) in [0.01, 0.05].into_iter().enumerate() {
            for seed in 0..3u64 {
                let c = TcpConfig {
                    variant: v,
                    delayed_ack: seed != 0,
                    handshake: seed == 2,
                    ..dctcp(1.0 / 16.0, 1.0)
                };
                let mut path = Path::delay(10);
                path.rate = Some(Rate::from_mbps(10));
                path.buffer = 30;
                path.loss = Loss::Bernoulli(p, RngStream::derive(seed, &format!("dloss{k}")));
                // A mark on every 7th segment's first transmission.
                path.ce_seqs = (0..total / MSS as u64)
                    .step_by(7)
                    .map(|i| i * MSS as u64)
                    .collect();
                let mut w = Wire::new(&c, Some(total), path);
                w.start();
                w.run(SimTime::from_secs(5000));
                assert_complete(&w, total, &format!("dctcp {v:?} p={p} seed={seed}"));
                assert!(w.snd.stats().ecn_reductions > 0);
            }
        }
    }
}

#[test]
fn dctcp_config_keys_defaults_and_errors() {
    let c: TcpConfig = toml::from_str("ecn = true\ncc = \"dctcp\"").unwrap();
    assert_eq!(
        c.cc,
        CcConfig::Dctcp {
            g: 0.0625,
            alpha_init: 1.0
        }
    );
    c.validate().unwrap();
    assert_eq!(c.model_name(), "newreno-flight-lt-nodelack-dctcp");
    let c: TcpConfig =
        toml::from_str("ecn = true\ncc = { kind = \"dctcp\", g = 0.125, alpha_init = 0 }").unwrap();
    assert_eq!(
        c.cc,
        CcConfig::Dctcp {
            g: 0.125,
            alpha_init: 0.0
        }
    );
    let e = toml::from_str::<TcpConfig>("cc = { kind = \"reno\", g = 0.1 }")
        .unwrap_err()
        .to_string();
    assert!(e.contains("`g` does not apply"), "{e}");
    let e = toml::from_str::<TcpConfig>("cc = { kind = \"dctcp\", w = 2 }")
        .unwrap_err()
        .to_string();
    assert!(e.contains("`w` does not apply"), "{e}");
    let bad = |ecn: bool, g: f64, alpha_init: f64| {
        TcpConfig {
            ecn,
            cc: CcConfig::Dctcp { g, alpha_init },
            ..Default::default()
        }
        .validate()
        .err()
        .map(|e| e.key)
    };
    assert_eq!(bad(true, 1.0, 0.0), None);
    assert_eq!(bad(true, 0.0, 1.0).as_deref(), Some("cc.g"));
    assert_eq!(bad(true, 1.5, 1.0).as_deref(), Some("cc.g"));
    assert_eq!(bad(true, f64::NAN, 1.0).as_deref(), Some("cc.g"));
    assert_eq!(bad(true, 0.1, -0.1).as_deref(), Some("cc.alpha_init"));
    assert_eq!(bad(true, 0.1, 1.01).as_deref(), Some("cc.alpha_init"));
    assert_eq!(bad(false, 0.1, 1.0).as_deref(), Some("ecn"));
}

/// The state every connection carries stays within its budget: a simulation walks it on
/// every segment and ACK, so each byte added to it costs cache misses in every scenario,
/// whatever controller or option the scenario uses. Rare controllers' and options' state
/// lives behind a pointer (CUBIC, DCTCP, Linux's ACK timing); a new field that pushes a
/// size over its budget belongs there too (or the budget is raised with a measurement:
/// `python benches/ab.py BASE NEW --misses`).
#[test]
fn per_connection_state_stays_within_its_budget() {
    use std::mem::size_of;
    let sizes = [
        ("SegRec", size_of::<super::sack::SegRec>(), 24),
        ("AnyCc", size_of::<super::cc::AnyCc>(), 64),
        ("TcpReceiver", size_of::<TcpReceiver>(), 160),
        ("TcpSender", size_of::<TcpSender>(), 552),
    ];
    eprintln!("{sizes:?}");
    for (name, size, budget) in sizes {
        assert!(
            size <= budget,
            "{name} is {size} bytes, over its budget of {budget}"
        );
    }
}

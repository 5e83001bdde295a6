use super::*;
use crate::time::Rate;

fn pkt(flow: u32, size: u32) -> Packet {
    Packet {
        flow: FlowId(flow),
        size,
        ..Default::default()
    }
}

fn manager(
    scheme: Scheme,
    order: Order,
    rate: Rate,
    depth: u64,
    triggers: &[Trigger],
    action: PolicyAction,
) -> QosManager {
    let flows: Vec<(FlowId, Dur)> = (0..3).map(|i| (FlowId(i), Dur::from_millis(100))).collect();
    let share = TokenShare::new(scheme, rate, depth, &[1.0; 3], None);
    QosManager::new(
        "m".into(),
        action,
        share,
        order,
        Dur::from_millis(15),
        triggers,
        Dur::ZERO,
        &flows,
    )
}

/// Runs the timer of `m` from `from` to `to`, returning (time, flow) of releases.
fn tick_until(m: &mut QosManager, from: SimTime, to: SimTime) -> Vec<(SimTime, u32)> {
    let mut got = Vec::new();
    let mut t = from;
    while let Some(n) = m.next_tick(t) {
        if n > to {
            break;
        }
        let mut out = Vec::new();
        m.on_tick(n, &mut out);
        got.extend(out.iter().map(|p| (n, p.flow.0)));
        t = n;
    }
    got
}

#[test]
fn common_bucket_orders_waiting_connections_as_defined() {
    // Common bucket of 3 packets (3 000 B), 8 kB/s: one 1 000 B packet per 125 ms.
    // t = 0, 1, 2 ms: connections 1, 2, 0 take a token each (LRU order 1, 2, 0).
    // t = 10, 20, 30 ms: connections 2, 0, 1 become non-compliant (FCFS order 2, 0, 1).
    // Tokens for one packet at 127 ms, the next at 250 ms and 375 ms: ticks 135, 255,
    // 375 ms each release one packet, in the order of the scheme.
    let run = |order: Order| {
        let mut m = manager(
            Scheme::Common,
            order,
            Rate::from_kbps(64),
            3000,
            &[Trigger::Send],
            PolicyAction::Shape,
        );
        let mut out = Vec::new();
        for (ms, f) in [(0, 1), (1, 2), (2, 0), (10, 2), (20, 0), (30, 1)] {
            m.on_send(SimTime::from_millis(ms), f as usize, pkt(f, 1000), &mut out);
        }
        assert_eq!(out.len(), 3, "the first three conform at once");
        assert_eq!(m.waiting(), 3);
        tick_until(&mut m, SimTime::from_millis(30), SimTime::from_secs(1))
    };
    let ms = |v: &[(SimTime, u32)]| -> Vec<(u64, u32)> {
        v.iter()
            .map(|(t, f)| (t.as_nanos() / 1_000_000, *f))
            .collect()
    };
    assert_eq!(
        ms(&run(Order::Sequential)),
        vec![(135, 0), (255, 1), (375, 2)]
    );
    assert_eq!(ms(&run(Order::Fcfs)), vec![(135, 2), (255, 0), (375, 1)]);
    assert_eq!(ms(&run(Order::Lru)), vec![(135, 1), (255, 2), (375, 0)]);
}

#[test]
fn fcfs_sends_a_connection_still_waiting_after_service_to_the_back() {
    // Common bucket of one packet, 8 kB/s. t = 0: connection 0 sends one packet and
    // queues three more; t = 1 ms: connection 1 queues two. Tick 135 ms: connection 0
    // (non-compliant since 0) sends one, still waits → non-compliant again at 135 ms,
    // behind connection 1 (1 ms). The next ticks alternate: 1, 0, 1, 0.
    let mut m = manager(
        Scheme::Common,
        Order::Fcfs,
        Rate::from_kbps(64),
        1000,
        &[Trigger::Send],
        PolicyAction::Shape,
    );
    let mut out = Vec::new();
    for _ in 0..4 {
        m.on_send(SimTime::ZERO, 0, pkt(0, 1000), &mut out);
    }
    for _ in 0..2 {
        m.on_send(SimTime::from_millis(1), 1, pkt(1, 1000), &mut out);
    }
    assert_eq!(out.len(), 1);
    let got = tick_until(&mut m, SimTime::from_millis(1), SimTime::from_secs(2));
    let order: Vec<u32> = got.iter().map(|(_, f)| *f).collect();
    assert_eq!(order, vec![0, 1, 0, 1, 0]);
}

#[test]
fn fcfs_first_keeps_the_time_a_connection_first_became_non_compliant() {
    // As above, read as "ordered by the time they *first* became non-compliant": the
    // partly served connection 0 keeps its time 0 and goes first until it is empty.
    let mut m = manager(
        Scheme::Common,
        Order::FcfsFirst,
        Rate::from_kbps(64),
        1000,
        &[Trigger::Send],
        PolicyAction::Shape,
    );
    let mut out = Vec::new();
    for _ in 0..4 {
        m.on_send(SimTime::ZERO, 0, pkt(0, 1000), &mut out);
    }
    for _ in 0..2 {
        m.on_send(SimTime::from_millis(1), 1, pkt(1, 1000), &mut out);
    }
    let got = tick_until(&mut m, SimTime::from_millis(1), SimTime::from_secs(2));
    let order: Vec<u32> = got.iter().map(|(_, f)| *f).collect();
    assert_eq!(order, vec![0, 0, 0, 1, 1]);
}

#[test]
fn a_rotating_scan_starts_one_connection_further_at_each_service() {
    // Three connections always waiting, one token per tick: sequential serves
    // connection 0 until it is empty; the rotating scan starts after the connection
    // served last.
    let run = |order: Order| {
        let mut m = manager(
            Scheme::Common,
            order,
            Rate::from_kbps(64),
            1000,
            &[Trigger::Send],
            PolicyAction::Shape,
        );
        let mut out = Vec::new();
        for f in 0..3 {
            for _ in 0..4 {
                m.on_send(SimTime::ZERO, f, pkt(f as u32, 1000), &mut out);
            }
        }
        let got = tick_until(&mut m, SimTime::ZERO, SimTime::from_secs(1));
        got.iter().take(6).map(|(_, f)| *f).collect::<Vec<u32>>()
    };
    assert_eq!(run(Order::Sequential), vec![0, 0, 0, 1, 1, 1]);
    assert_eq!(run(Order::Rotating), vec![0, 1, 2, 0, 1, 2]);
}

#[test]
fn a_connection_with_packets_waiting_does_not_overtake_them() {
    let mut m = manager(
        Scheme::Common,
        Order::Fcfs,
        Rate::from_kbps(64),
        1000,
        &[Trigger::Send, Trigger::Ack],
        PolicyAction::Shape,
    );
    let mut out = Vec::new();
    m.on_send(SimTime::ZERO, 0, pkt(0, 1000), &mut out);
    m.on_send(SimTime::from_millis(1), 0, pkt(0, 1000), &mut out);
    // 200 ms later the tokens would cover the new packet, but one waits before it.
    m.on_send(SimTime::from_millis(200), 0, pkt(0, 1000), &mut out);
    assert_eq!((out.len(), m.waiting()), (1, 2));
    // The ACK trigger sends the oldest waiting packet (tokens for one).
    m.on_ack(SimTime::from_millis(201), 0, false, false, &mut out);
    assert_eq!((out.len(), m.waiting()), (2, 1));
    assert_eq!(m.conns[0].counters.released, [1, 1, 0, 0, 0, 0, 0]);
}

#[test]
fn the_shaper_with_only_the_periodic_timer_conforms_to_the_profile() {
    // Three saturated connections offer 1 040 B packets every 2 ms each (≈ 1.25 MB/s)
    // to a 640 kb/s (80 kB/s), 30 kB aggregate. With the timer as the only trigger,
    // packets leave only at multiples of 15 ms, the bytes released over any interval
    // stay ≤ b + r·Δt, and the long-run rate is r (within one packet per tick).
    for scheme in [Scheme::Partitioned, Scheme::Common, Scheme::Logical] {
        let flows: Vec<(FlowId, Dur)> = (0..3).map(|i| (FlowId(i), Dur::ZERO)).collect();
        let share = TokenShare::new(scheme, Rate::from_kbps(640), 30_000, &[1.0; 3], None);
        let mut m = QosManager::new(
            "m".into(),
            PolicyAction::Shape,
            share,
            Order::Lru,
            Dur::from_millis(15),
            &[],
            Dur::ZERO,
            &flows,
        );
        let mut releases: Vec<(u64, u64)> = Vec::new();
        let mut next_tick = SimTime::NEVER;
        let end = SimTime::from_secs(20);
        let mut t = SimTime::ZERO;
        while t < end {
            if next_tick <= t {
                let mut out = Vec::new();
                m.on_tick(next_tick, &mut out);
                for p in &out {
                    releases.push((next_tick.as_nanos(), p.size as u64));
                }
                next_tick = SimTime::NEVER;
            }
            for f in 0..3 {
                let mut out = Vec::new();
                m.on_send(t, f, pkt(f as u32, 1040), &mut out);
                assert!(out.is_empty(), "only the timer releases packets");
            }
            if let Some(n) = m.next_tick(t) {
                next_tick = next_tick.min(n);
            }
            t += Dur::from_millis(2);
        }
        assert!(releases.iter().all(|(t, _)| t % 15_000_000 == 0));
        let mut prefix = vec![0u64];
        for r in &releases {
            prefix.push(prefix.last().unwrap() + r.1);
        }
        for a in 0..releases.len() {
            for z in a..releases.len() {
                let bytes = (prefix[z + 1] - prefix[a]) as f64;
                let dt = (releases[z].0 - releases[a].0) as f64 / 1e9;
                assert!(bytes <= 30_000.0 + 80_000.0 * dt + 1e-6, "{scheme:?}");
            }
        }
        let last = releases.last().unwrap().0 as f64 / 1e9;
        let total = *prefix.last().unwrap() as f64;
        let rate = (total - 30_000.0) / last;
        assert!(
            (rate - 80_000.0).abs() < 1040.0 / 0.015 * 0.05,
            "{scheme:?}: {rate} B/s"
        );
        // Every connection was served (no starvation with LRU / own buckets).
        for c in &m.conns {
            let n: u64 = c.counters.released.iter().sum();
            assert!(n as f64 > 0.25 * releases.len() as f64, "{scheme:?}");
        }
        assert!(m.ticks > 1000);
    }
}

#[test]
fn police_and_mark_marks_what_conforms_and_sends_everything() {
    let mut m = manager(
        Scheme::Common,
        Order::Fcfs,
        Rate::from_kbps(80),
        2000,
        &[Trigger::Send],
        PolicyAction::PoliceAndMark,
    );
    let mut out = Vec::new();
    // 10 kB/s, 2 kB: 1 000 B every 10 ms for 1 s → 2 + 9.9 ≈ 11 marked of 100.
    for k in 0..100u64 {
        m.on_send(SimTime::from_millis(10 * k), 0, pkt(0, 1000), &mut out);
    }
    assert_eq!(out.len(), 100);
    let marked = out.iter().filter(|p| p.in_profile).count();
    assert_eq!(marked, 11);
    assert_eq!(m.conns[0].counters.marked_bytes, 11_000);
    assert_eq!(m.waiting(), 0);
}

#[test]
fn a_policy_installed_later_leaves_earlier_packets_alone() {
    let flows = [(FlowId(0), Dur::ZERO)];
    let share = TokenShare::new(Scheme::Common, Rate::from_kbps(8), 1000, &[1.0], None);
    let mut m = QosManager::new(
        "m".into(),
        PolicyAction::Shape,
        share,
        Order::Fcfs,
        Dur::from_millis(15),
        &[Trigger::Send],
        Dur::from_secs(1),
        &flows,
    );
    let mut out = Vec::new();
    for k in 0..10u64 {
        m.on_send(SimTime::from_millis(10 * k), 0, pkt(0, 1000), &mut out);
    }
    assert_eq!(out.len(), 10);
    m.on_send(SimTime::from_secs(1), 0, pkt(0, 1000), &mut out);
    m.on_send(SimTime::from_secs(1), 0, pkt(0, 1000), &mut out);
    assert_eq!((out.len(), m.waiting()), (11, 1));
}

/// Total packets `m` released under trigger `why`.
fn released(m: &QosManager, why: Trigger) -> u64 {
    m.conns
        .iter()
        .map(|c| c.counters.released[why as usize])
        .sum()
}

#[test]
fn window_closed_send_and_new_connection_serve_the_aggregate_as_far_as_tokens_go() {
    // Common bucket of 3 000 B at 8 kB/s; only the trigger under test (no send/ACK).
    // t = 0: connections 0 and 1 queue four 1 000 B packets each. The event comes from
    // connection 2 (its window closed / it just opened), which has nothing waiting:
    // it serves the others — exactly the 3 packets the full bucket covers, none when
    // the bucket is empty, 2 more after 250 ms (2 000 B of tokens).
    for why in [Trigger::ClosedSend, Trigger::NewConn] {
        let mut m = manager(
            Scheme::Common,
            Order::Lru,
            Rate::from_kbps(64),
            3000,
            &[why],
            PolicyAction::Shape,
        );
        let mut out = Vec::new();
        for f in [0, 1] {
            for _ in 0..4 {
                m.on_send(SimTime::ZERO, f, pkt(f as u32, 1000), &mut out);
            }
        }
        assert_eq!(
            (out.len(), m.waiting()),
            (0, 8),
            "{why:?}: send trigger is off"
        );
        m.on_event(SimTime::ZERO, 2, why, &mut out);
        assert_eq!(out.len(), 3, "{why:?}");
        m.on_event(SimTime::from_millis(1), 2, why, &mut out);
        assert_eq!(out.len(), 3, "{why:?}: the bucket is empty");
        m.on_event(SimTime::from_millis(251), 2, why, &mut out);
        assert_eq!(out.len(), 5, "{why:?}");
        assert_eq!(released(&m, why), 5);
        assert_eq!(m.waiting(), 3);
        // The other aggregate-wide trigger is off: it releases nothing.
        let other = if why == Trigger::ClosedSend {
            Trigger::NewConn
        } else {
            Trigger::ClosedSend
        };
        m.on_event(SimTime::from_secs(2), 2, other, &mut out);
        assert_eq!(out.len(), 5, "{other:?} is not enabled");
        // Per-connection triggers are not aggregate events.
        m.on_event(SimTime::from_secs(2), 2, Trigger::Ack, &mut out);
        assert_eq!(out.len(), 5);
    }
}

#[test]
fn a_disabled_aggregate_trigger_releases_nothing() {
    for why in [Trigger::ClosedSend, Trigger::NewConn] {
        let mut m = manager(
            Scheme::Logical,
            Order::Fcfs,
            Rate::from_kbps(64),
            3000,
            &[],
            PolicyAction::Shape,
        );
        let mut out = Vec::new();
        m.on_send(SimTime::ZERO, 0, pkt(0, 1000), &mut out);
        m.on_event(SimTime::from_secs(1), 1, why, &mut out);
        assert_eq!((out.len(), m.waiting()), (0, 1), "{why:?}");
    }
}

#[test]
fn aggregate_triggers_never_release_more_than_the_bucket_bound() {
    // Three saturated connections (a 1 040 B packet each every 2 ms) on 80 kB/s, 30 kB;
    // window-closed sends and new connections fire at irregular times (a fixed
    // pseudo-random walk, gaps 0.1–20 ms) besides the 15 ms timer. Over any interval
    // the bytes released stay ≤ b + r·Δt, the events release a large part of the
    // traffic, and logical partitions keep serving every connection.
    for scheme in [Scheme::Partitioned, Scheme::Common, Scheme::Logical] {
        let flows: Vec<(FlowId, Dur)> = (0..3).map(|i| (FlowId(i), Dur::ZERO)).collect();
        let share = TokenShare::new(scheme, Rate::from_kbps(640), 30_000, &[1.0; 3], None);
        let mut m = QosManager::new(
            "m".into(),
            PolicyAction::Shape,
            share,
            Order::Lru,
            Dur::from_millis(15),
            &[Trigger::ClosedSend, Trigger::NewConn],
            Dur::ZERO,
            &flows,
        );
        let mut releases: Vec<(u64, u64)> = Vec::new();
        let mut next_tick = SimTime::NEVER;
        let mut next_event = SimTime::from_micros(500);
        let mut seed = 12345u64;
        let end = SimTime::from_secs(10);
        let mut t = SimTime::ZERO;
        let mut k = 0usize;
        while t < end {
            let mut out = Vec::new();
            if next_tick <= t {
                m.on_tick(next_tick, &mut out);
                for p in out.drain(..) {
                    releases.push((next_tick.as_nanos(), p.size as u64));
                }
                next_tick = SimTime::NEVER;
            }
            while next_event <= t {
                let why = [Trigger::ClosedSend, Trigger::NewConn][k % 2];
                m.on_event(next_event, k % 3, why, &mut out);
                for p in out.drain(..) {
                    releases.push((next_event.as_nanos(), p.size as u64));
                }
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                next_event += Dur::from_micros(100 + (seed >> 33) % 19_900);
                k += 1;
            }
            for f in 0..3 {
                m.on_send(t, f, pkt(f as u32, 1040), &mut out);
                assert!(out.is_empty(), "the send trigger is off");
            }
            if let Some(n) = m.next_tick(t) {
                next_tick = next_tick.min(n);
            }
            t += Dur::from_millis(2);
        }
        let mut prefix = vec![0u64];
        for r in &releases {
            prefix.push(prefix.last().unwrap() + r.1);
        }
        for a in 0..releases.len() {
            for z in a..releases.len() {
                let bytes = (prefix[z + 1] - prefix[a]) as f64;
                let dt = (releases[z].0 - releases[a].0) as f64 / 1e9;
                assert!(bytes <= 30_000.0 + 80_000.0 * dt + 1e-6, "{scheme:?}");
            }
        }
        let by_events = released(&m, Trigger::ClosedSend) + released(&m, Trigger::NewConn);
        assert!(
            by_events as f64 > 0.3 * releases.len() as f64,
            "{scheme:?}: events released {by_events} of {}",
            releases.len()
        );
        let total = *prefix.last().unwrap() as f64;
        assert!(total >= 0.95 * 80_000.0 * 10.0, "{scheme:?}: {total}");
        if scheme != Scheme::Common {
            for c in &m.conns {
                let n: u64 = c.counters.released.iter().sum();
                assert!(n as f64 > 0.25 * releases.len() as f64, "{scheme:?}");
            }
        }
    }
}

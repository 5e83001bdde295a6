//! Packets in = packets out + dropped + queued, at every queue and every node.

use qoslab::queue::DropCause;

use super::common::*;

fn check(w: &qoslab::world::World) {
    for f in &w.ifaces {
        let c = f.counters;
        let queue_drops = c.drops.total_packets() - c.drops.packets[DropCause::RandomLoss.index()];
        // Queued: in the buffer, or committed to the wire and not started (`world::ahead`).
        let queued = f.occupancy().packets as u64;
        assert_eq!(
            c.arrived,
            c.departed + queue_drops + queued,
            "iface {}",
            f.name
        );
    }
    let mut in_flight_links = 0u64;
    for n in &w.nodes {
        let c = n.counters;
        assert_eq!(
            c.received + c.originated,
            c.forwarded + c.delivered + c.drops.total_packets() + c.held,
            "node {}",
            n.name
        );
        in_flight_links += c.received;
    }
    // Everything that left an interface either arrived at the far node, was lost on
    // the wire, or is still propagating (at most a few per link at the end).
    let departed: u64 = w.ifaces.iter().map(|f| f.counters.departed).sum();
    let lost: u64 = w
        .ifaces
        .iter()
        .map(|f| f.counters.drops.packets[DropCause::RandomLoss.index()])
        .sum();
    assert!(departed >= in_flight_links + lost);
    assert!(
        departed - in_flight_links - lost < 200,
        "{departed} {in_flight_links} {lost}"
    );
    // The packet pool holds exactly the packets on the links and those held by
    // conditioners: no slot is lost or kept after its packet moved on.
    // Packets committed ahead are on the wire before they depart.
    let wired: u64 = w.ifaces.iter().map(|f| f.on_wire.len() as u64).sum();
    let committed: u64 = w.ifaces.iter().map(|f| f.ahead.waiting.len() as u64).sum();
    let held: u64 = w.nodes.iter().map(|n| n.counters.held).sum();
    assert_eq!(departed - in_flight_links - lost, wired - committed);
    assert_eq!(w.packet_pool().live() as u64, wired + held);
}

#[test]
fn droptail_overload_conserves() {
    let flows: String = (0..4)
        .map(|i| cbr(i, "600kbps", 500 + 250 * i as u32, 0.3))
        .collect();
    let w = run_world(&dumbbell(
        4,
        "1Mbps",
        "{ kind = \"droptail\", limit = 20 }",
        &flows,
        "",
    ));
    check(&w);
    assert!(w
        .ifaces
        .iter()
        .any(|f| f.counters.drops.total_packets() > 100));
}

#[test]
fn random_loss_conserves_and_matches_probability() {
    let flows = cbr(0, "1Mbps", 1000, 0.0);
    let text = dumbbell(
        1,
        "5Mbps",
        "{ kind = \"droptail\", limit = 20 }",
        &flows,
        "",
    )
    .replace(
        "delay = \"10ms\"\n",
        "delay = \"10ms\"\nloss_a_to_b = 0.05\n",
    );
    let w = run_world(&text);
    check(&w);
    let f = w.ifaces.iter().find(|f| f.name == "r1->r2").unwrap();
    let p =
        f.counters.drops.packets[DropCause::RandomLoss.index()] as f64 / f.counters.departed as f64;
    // 1250 packets, p = 0.05: σ ≈ 0.006.
    assert!((p - 0.05).abs() < 0.02, "{p}");
}

#[test]
fn ptcp_with_random_loss_conserves() {
    // A pTCP flow of 8 pipes (hollow and repeated segments, two-way traffic) and a
    // plain TCP flow over a lossy RED bottleneck.
    let flows = "[[flow]]\nname = \"p\"\nfrom = \"s0\"\nto = \"d0\"\ntcp = { variant = \"sack\" }\nptcp = { pipes = 8, recv_buffer = \"64KB\" }\n\
                 [[flow]]\nname = \"t\"\nfrom = \"s1\"\nto = \"d1\"\ntcp = { variant = \"sack\" }\n";
    let text = dumbbell(
        2,
        "5Mbps",
        "{ kind = \"red\", limit = 60, min_th = 10, max_th = 30 }",
        flows,
        "",
    )
    .replace(
        "delay = \"10ms\"\nqueue",
        "delay = \"10ms\"\nloss = 0.01\nqueue",
    );
    let w = run_world(&text);
    check(&w);
}

#[test]
fn packets_held_by_conditioners_stay_in_the_pool_until_released() {
    // A fixed delay at s0's egress and, at r1, one shaper per flow (their releases
    // interleave out of order across flows): the run ends with packets held in both,
    // queued and on every link, and the pool must hold exactly the held and wired ones.
    let flows = cbr(0, "800kbps", 1000, 0.3) + &cbr(1, "800kbps", 500, 0.3);
    let stages = "[[conditioner]]\nat = \"s0\"\nstages = [ { kind = \"delay\", delay = \"30ms\" } ]\n\
                  [[conditioner]]\nat = \"r1\"\nstages = [ { kind = \"policy\", rules = [ \
                  { filter = { flow = \"f0\" }, profile = { rate = \"300kbps\", burst = 3000 }, action = \"shape\" }, \
                  { filter = { flow = \"f1\" }, profile = { rate = \"500kbps\", burst = 2000 }, action = \"shape\" } ] } ]\n";
    let text = dumbbell(
        2,
        "1Mbps",
        "{ kind = \"droptail\", limit = 20 }",
        &flows,
        "",
    ) + stages;
    let w = run_world(&text);
    check(&w);
    let held: Vec<u64> = w.nodes.iter().map(|n| n.counters.held).collect();
    assert!(held[0] > 5 && held[2] > 0, "held per node {held:?}");
}

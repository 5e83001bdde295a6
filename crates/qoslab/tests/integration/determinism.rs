//! Same seed → identical output bytes; different seed → different output.

use qoslab::scenario::Format;

use super::common::*;

fn results_json(text: &str, seed: u64) -> String {
    let mut r = qoslab::run_str(text, Format::Toml, Some(seed)).unwrap();
    r.summary.remove("wall_s");
    serde_json::to_string(&r).unwrap()
}

#[test]
fn same_seed_same_bytes_other_seed_other_bytes() {
    let flows: String = (0..3).map(|i| cbr(i, "500kbps", 800, 0.5)).collect();
    let text = dumbbell(
        3,
        "1Mbps",
        "{ kind = \"droptail\", limit = 15 }",
        &flows,
        "",
    );
    let a = results_json(&text, 7);
    let b = results_json(&text, 7);
    let c = results_json(&text, 8);
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn adding_a_flow_does_not_change_another_flows_draws() {
    // Flow f0's jitter stream depends only on (seed, "flow/f0").
    let one = dumbbell(
        2,
        "100Mbps",
        "{ kind = \"droptail\", limit = 100 }",
        &cbr(0, "1Mbps", 1000, 0.5),
        "",
    );
    let two = dumbbell(
        2,
        "100Mbps",
        "{ kind = \"droptail\", limit = 100 }",
        &(cbr(0, "1Mbps", 1000, 0.5) + &cbr(1, "1Mbps", 1000, 0.5)),
        "",
    );
    let w1 = run_world(&one);
    let w2 = run_world(&two);
    assert_eq!(
        w1.flows[0].counters.pkts_sent,
        w2.flows[0].counters.pkts_sent
    );
}

/// A wall-clock `WallIo` with no outside traffic: it only sleeps until the next event.
struct SleepOnly;

impl qoslab::world::WallIo for SleepOnly {
    fn wait(&mut self, clock: &qoslab::engine::WallClock, until: qoslab::time::SimTime) {
        let now = clock.now();
        if until > now {
            std::thread::sleep(std::time::Duration::from_nanos(
                until.as_nanos() - now.as_nanos(),
            ));
        }
    }
    fn read(
        &mut self,
        _clock: &qoslab::engine::WallClock,
        _into: &mut Vec<qoslab::packet::Packet>,
    ) {
    }
    fn deliver(&mut self, _now: qoslab::time::SimTime, _pkt: &qoslab::packet::Packet) {
        panic!("nothing is external in this run");
    }
}

#[test]
fn wall_clock_run_gives_the_virtual_runs_results() {
    // Events run at their scheduled times whatever the clock: a simulated run paced
    // by the wall clock must give the same tables, byte for byte, as the virtual one.
    let flows = cbr(0, "2Mbps", 1000, 0.5)
        + "[[flow]]\nname = \"t1\"\nfrom = \"s1\"\nto = \"d1\"\ntcp = { variant = \"newreno\" }\n";
    let text = dumbbell(
        2,
        "2Mbps",
        "{ kind = \"red\", min_th = 5, max_th = 15, limit = 30 }",
        &flows,
        "",
    )
    .replace(
        "duration = \"10s\"",
        "duration = \"0.4s\"\n[record]\ninterval = \"0.1s\"\nqueues = [\"r1->r2\"]",
    );
    let sc = parse(&text);
    let json = |w: &qoslab::world::World| {
        let mut r = qoslab::stats::collect(w, "x", 1, 0.0);
        r.summary.remove("wall_s");
        serde_json::to_string(&r).unwrap()
    };
    let mut v = qoslab::scenario::build(&sc).unwrap();
    // The wall clock sees every hop (no cut-through): so does the run it is compared with.
    v.cut_through = false;
    v.run().unwrap();
    let mut w = qoslab::scenario::build(&sc).unwrap();
    let t0 = std::time::Instant::now();
    w.run_wall(&mut SleepOnly, false).unwrap();
    // It took (at least) the simulated time, and the lateness of every event is kept.
    assert!(t0.elapsed() >= std::time::Duration::from_millis(400));
    let ws = w.wall.as_ref().unwrap();
    let arrivals: usize = ws.by_iface.iter().map(|l| l.count()).sum();
    assert!(arrivals > 100, "{arrivals}");
    assert_eq!(arrivals as u64 + ws.other.count() as u64, w.events());
    assert_eq!(json(&v), json(&w));
    assert!(v.hops > 200, "{}", v.hops);
}

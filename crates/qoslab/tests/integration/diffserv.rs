//! DiffServ end to end: edge markers colour packets, multi-colour RED protects green.

use super::common::*;

/// Two Poisson flows of 0.8 Mb/s into 1 Mb/s; flow 0 is marked by a trTCM whose CIR
/// covers its whole rate (all green), flow 1 by one with a small CIR/PIR (mostly red).
fn marked(queue: &str) -> qoslab::world::World {
    let poisson = |i, r| cbr(i, r, 1000, 0.0).replace("jitter = 0", "poisson = true");
    let flows = poisson(0, "0.8Mbps") + &poisson(1, "0.8Mbps");
    let cond = |host: &str, cir: &str, pir: &str| {
        format!(
            "[[conditioner]]\nat = \"{host}\"\nstages = [ {{ kind = \"trtcm\", cir = \"{cir}\", cbs = 3000, pir = \"{pir}\", pbs = 3000 }} ]\n"
        )
    };
    let text = dumbbell(
        2,
        "1Mbps",
        queue,
        &(flows + &cond("s0", "2Mbps", "3Mbps") + &cond("s1", "100kbps", "200kbps")),
        "warmup = \"2s\"\n",
    )
    .replace("duration = \"10s\"", "duration = \"60s\"");
    run_world(&text)
}

fn goodput(w: &qoslab::world::World, i: usize) -> f64 {
    w.flows[i].counters_since(&w.warm, i).goodput_bytes as f64 * 8.0 / 58.0
}

#[test]
fn rio_protects_green_traffic_droptail_does_not() {
    let rio = marked("{ kind = \"rio_c\", limit = 100 }");
    let (g0, g1) = (goodput(&rio, 0), goodput(&rio, 1));
    // Green flow gets (almost) all it offers (0.8 Mb/s × 972/1000 payload); red takes the rest.
    assert!(g0 > 0.95 * 777_600.0, "green {g0}");
    assert!(g1 < 0.3 * 777_600.0, "red {g1}");
    let dt = marked("{ kind = \"droptail\", limit = 100 }");
    let (d0, d1) = (goodput(&dt, 0), goodput(&dt, 1));
    // DropTail ignores colour: equal offered loads share about equally.
    assert!((d0 / d1 - 1.0).abs() < 0.1, "{d0} {d1}");
}

//! TCP hosted in the world: exact delivery, conservation, shaping, traces.

use qoslab::queue::Queue;
use qoslab::world::FlowApp;

use super::common::*;

fn tcp_flow(i: usize, tcp: &str, extra: &str) -> String {
    format!("[[flow]]\nname = \"f{i}\"\nfrom = \"s{i}\"\nto = \"d{i}\"\n{extra}tcp = {tcp}\n")
}

#[test]
fn finite_transfers_deliver_every_byte_under_loss_for_every_variant() {
    for variant in ["tahoe", "reno", "newreno", "sack"] {
        let tcp = format!("{{ variant = \"{variant}\", max_window = 50 }}");
        let flows = tcp_flow(0, &tcp, "bytes = \"300KB\"\n");
        let text = dumbbell(
            1,
            "2Mbps",
            "{ kind = \"droptail\", limit = 20 }",
            &flows,
            "",
        )
        .replace("duration = \"10s\"", "duration = \"60s\"")
        .replace(
            "delay = \"10ms\"\n",
            "delay = \"10ms\"\nloss_a_to_b = 0.03\n",
        );
        let w = run_world(&text);
        let f = &w.flows[0];
        assert_eq!(f.counters.goodput_bytes, 300_000, "{variant}");
        let FlowApp::Tcp(t) = &f.app else { panic!() };
        assert!(t.snd.is_done(), "{variant}");
        assert!(
            t.snd.stats().retransmits > 0,
            "{variant}: the loss must have bitten"
        );
    }
}

#[test]
fn tcp_over_red_conserves_and_fills_the_bottleneck() {
    let tcp = "{ variant = \"sack\", max_window = 200 }";
    let flows: String = (0..4).map(|i| tcp_flow(i, tcp, "")).collect();
    let q = "{ kind = \"red\", limit = 60, min_th = 5, max_th = 15, max_p = 0.1 }";
    let text = dumbbell(4, "5Mbps", q, &flows, "warmup = \"2s\"\n")
        .replace("duration = \"10s\"", "duration = \"30s\"");
    let w = run_world(&text);
    for f in &w.ifaces {
        let c = f.counters;
        assert_eq!(
            c.arrived,
            c.departed + c.drops.total_packets() + f.queue.occupancy().packets as u64
        );
    }
    let bn = w.ifaces.iter().find(|f| f.name == "r1->r2").unwrap();
    let util = bn
        .counters
        .since(&w.warm.ifaces[bn_index(&w)])
        .departed_bytes as f64
        * 8.0
        / (5e6 * 28.0);
    assert!(util > 0.95, "utilisation {util}");
    assert!(bn.counters.drops.packets[qoslab::queue::DropCause::RedEarly.index()] > 0);
}

fn bn_index(w: &qoslab::world::World) -> usize {
    w.ifaces.iter().position(|f| f.name == "r1->r2").unwrap()
}

#[test]
fn a_shaper_at_the_host_holds_tcp_to_its_rate() {
    let tcp = "{ variant = \"newreno\", max_window = 100 }";
    let flows = tcp_flow(0, tcp, "");
    let cond = "[[conditioner]]\nat = \"s0\"\nstages = [ { kind = \"token_bucket\", rate = \"1Mbps\", depth = \"3KB\", action = \"shape\", buffer = \"30KB\" } ]\n";
    let text = dumbbell(
        1,
        "10Mbps",
        "{ kind = \"droptail\", limit = 100 }",
        &(flows + cond),
        "warmup = \"5s\"\n",
    )
    .replace("duration = \"10s\"", "duration = \"40s\"");
    let w = run_world(&text);
    let g = w.flows[0].counters_since(&w.warm, 0).goodput_bytes as f64 * 8.0 / 35.0;
    // 1 Mb/s of 1500-byte packets carries 1460/1500 of payload.
    let expect = 1e6 * 1460.0 / 1500.0;
    assert!(
        g <= expect * 1.01 && g > expect * 0.9,
        "goodput {g} vs {expect}"
    );
    // The shaper's buffer overflowed (TCP probes beyond the rate) and held packets.
    let s0 = w.nodes.iter().find(|n| n.name == "s0").unwrap();
    assert!(s0.counters.drops.total_packets() > 0);
}

#[test]
fn traces_record_cwnd_changes_of_the_named_flow_only() {
    let tcp = "{ variant = \"newreno\" }";
    let flows = tcp_flow(0, tcp, "") + &tcp_flow(1, tcp, "");
    let text = dumbbell(
        2,
        "2Mbps",
        "{ kind = \"droptail\", limit = 20 }",
        &flows,
        "",
    ) + "[record]\ntraces = [\"f1\"]\n";
    let w = run_world(&text);
    let tr = &w.recorded.traces;
    assert!(tr.len() > 50, "{}", tr.len());
    assert!(tr.iter().all(|x| x.0 == 1));
    assert!(tr
        .windows(2)
        .all(|p| (p[0].2.cwnd, p[0].2.ssthresh) != (p[1].2.cwnd, p[1].2.ssthresh)));
}

#[test]
fn tcp_runs_are_deterministic() {
    let tcp = "{ variant = \"sack\" }";
    let flows: String = (0..3).map(|i| tcp_flow(i, tcp, "")).collect();
    let text = dumbbell(3, "3Mbps", "{ kind = \"red\", limit = 50 }", &flows, "");
    let a = run_world(&text);
    let b = run_world(&text);
    let ga: Vec<u64> = a.flows.iter().map(|f| f.counters.goodput_bytes).collect();
    let gb: Vec<u64> = b.flows.iter().map(|f| f.counters.goodput_bytes).collect();
    assert_eq!(ga, gb);
    assert_eq!(a.events(), b.events());
}

#[test]
fn tcp_scenario_errors_name_the_key() {
    let bad = dumbbell(
        1,
        "1Mbps",
        "{ kind = \"droptail\", limit = 10 }",
        &tcp_flow(0, "{ mss = 0 }", ""),
        "",
    );
    let e = qoslab::check_str(&bad, qoslab::scenario::Format::Toml)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("flow[0].tcp.mss"), "{e}");
    let bad = dumbbell(
        1,
        "1Mbps",
        "{ kind = \"droptail\", limit = 10 }",
        &tcp_flow(0, "{ variant = \"vegas\" }", ""),
        "",
    );
    let e = qoslab::check_str(&bad, qoslab::scenario::Format::Toml)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("flow[0].tcp.variant") && e.contains("vegas"),
        "{e}"
    );
    let bad = dumbbell(
        1,
        "1Mbps",
        "{ kind = \"droptail\", limit = 10 }",
        &tcp_flow(0, "{}", "stop = \"5s\"\n"),
        "",
    );
    let e = qoslab::check_str(&bad, qoslab::scenario::Format::Toml)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("flow[0].stop"), "{e}");
    let bad = dumbbell(
        1,
        "1Mbps",
        "{ kind = \"droptail\", limit = 10 }",
        &cbr(0, "1kbps", 100, 0.0),
        "",
    ) + "[record]\ntraces = [\"f0\"]\n";
    let e = qoslab::check_str(&bad, qoslab::scenario::Format::Toml)
        .unwrap_err()
        .to_string();
    assert!(e.contains("not a TCP flow"), "{e}");
}

#[test]
fn conditioner_placement_errors() {
    let base = dumbbell(
        1,
        "1Mbps",
        "{ kind = \"droptail\", limit = 10 }",
        &cbr(0, "1kbps", 100, 0.0),
        "",
    );
    let e = qoslab::check_str(
        &(base.clone() + "[[conditioner]]\niface = \"r1->r9\"\nstages = []\n"),
        qoslab::scenario::Format::Toml,
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("conditioner[0].iface"), "{e}");
    let e = qoslab::check_str(
        &(base + "[[conditioner]]\nat = \"r1\"\nstages = [ { kind = \"trtcm\", cir = \"2Mbps\", cbs = 3000, pir = \"1Mbps\", pbs = 3000 } ]\n"),
        qoslab::scenario::Format::Toml,
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("conditioner[0].stages[0].pir"), "{e}");
}

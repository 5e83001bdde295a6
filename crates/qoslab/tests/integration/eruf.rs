//! P2 (ERUF) in the world: source quenches from RED routers, their limiter, their load
//! on the reverse path, edge regulation, and the shipped dumbbell scenarios.

use qoslab::cond::AnyConditioner;
use qoslab::queue::DropCause;
use qoslab::time::Dur;
use qoslab::world::{FlowApp, World};

use super::common::*;

const RED: &str = "{ kind = \"red\", limit = 30, min_th = 5, max_th = 15 }";

/// Two CBR flows overloading a 1 Mb/s RED bottleneck at r1, which quenches.
fn quenching(quench: &str, extra_link: &str) -> String {
    let flows = cbr(0, "1Mbps", 500, 0.1) + &cbr(1, "1Mbps", 500, 0.1);
    dumbbell(2, "1Mbps", RED, &flows, "").replacen(
        "name = \"r1\"\nkind = \"router\"\n",
        &format!("name = \"r1\"\nkind = \"router\"\nsource_quench = {quench}\n"),
        1,
    ) + extra_link
}

fn iface<'a>(w: &'a World, name: &str) -> &'a qoslab::net::Iface {
    w.ifaces.iter().find(|f| f.name == name).unwrap()
}

fn quench_counters(w: &World, node: &str) -> qoslab::net::quench::QuenchCounters {
    let n = w.nodes.iter().find(|n| n.name == node).unwrap();
    n.quench.as_ref().unwrap().counters
}

#[test]
fn quenches_are_sent_at_most_at_the_configured_rate() {
    let w = run_world(&quenching("{ rate = 20, burst = 5 }", ""));
    let c = quench_counters(&w, "r1");
    let drops = iface(&w, "r1->r2").counters.drops.total_packets();
    // Every queue drop at r1 was either answered or suppressed.
    assert_eq!(c.sent + c.suppressed, drops);
    assert!(drops > 1000, "{drops}");
    // 10 s at 20 quenches/s plus a burst of 5.
    assert!(c.sent <= 5 + 20 * 10, "{c:?}");
    assert!(c.sent >= 150, "{c:?}");
    // A generous limiter answers every drop.
    let w = run_world(&quenching("{ rate = 100000, burst = 100 }", ""));
    let c = quench_counters(&w, "r1");
    assert_eq!(c.suppressed, 0);
    assert_eq!(c.sent, iface(&w, "r1->r2").counters.drops.total_packets());
    // "unlimited" (P2 §3: a quench every time RED drops) answers every drop, where the
    // 20/s limiter above suppressed most of the same drops.
    let w = run_world(&quenching("{ rate = \"unlimited\" }", ""));
    let c = quench_counters(&w, "r1");
    let drops = iface(&w, "r1->r2").counters.drops.total_packets();
    assert!(drops > 1000, "{drops}");
    assert_eq!((c.sent, c.suppressed), (drops, 0));
}

#[test]
fn quenches_load_the_reverse_path_queues() {
    let w = run_world(&quenching("{ rate = 50, burst = 5, size = 70 }", ""));
    let c = quench_counters(&w, "r1");
    // The quenches are the only traffic towards the CBR sources.
    let back: u64 = ["r1->s0", "r1->s1"]
        .iter()
        .map(|f| iface(&w, f).counters.arrived)
        .sum();
    let back_bytes: u64 = ["r1->s0", "r1->s1"]
        .iter()
        .map(|f| iface(&w, f).counters.arrived_bytes)
        .sum();
    assert_eq!(back, c.sent);
    assert_eq!(back_bytes, 70 * c.sent);
    assert!(c.sent > 0);
    // On a slow reverse link they queue and overflow like any packet: r2 quenches for
    // drops at its own (overloaded) link to d0 over a 2 kb/s link back to r1.
    let text = quenching("{ rate = 50, burst = 5 }", "")
        .replacen(
            "name = \"r2\"\nkind = \"router\"\n",
            "name = \"r2\"\nkind = \"router\"\nsource_quench = { rate = 1000, burst = 50 }\n",
            1,
        )
        .replace(
            "rate = \"1Mbps\"\ndelay = \"10ms\"\n",
            "rate = \"1Mbps\"\nrate_b_to_a = \"2kbps\"\ndelay = \"10ms\"\nqueue_b_to_a = { kind = \"droptail\", limit = 5 }\n",
        )
        .replace(
            "[[link]]\na = \"r2\"\nb = \"d0\"\nrate = \"10Mbps\"",
            "[[link]]\na = \"r2\"\nb = \"d0\"\nrate = \"300kbps\"",
        );
    let w = run_world(&text);
    let r2 = quench_counters(&w, "r2");
    let rev = iface(&w, "r2->r1").counters;
    assert!(r2.sent > 100, "{r2:?}");
    assert_eq!(rev.arrived, r2.sent);
    assert!(
        rev.drops.packets[DropCause::Overflow.index()] > 0,
        "{rev:?}"
    );
    // 2 kb/s carry at most 2000/8/56 ≈ 4.5 quenches a second.
    assert!(rev.departed <= 46, "{rev:?}");
}

#[test]
fn queues_and_nodes_conserve_packets_with_quenches() {
    let w = run_world(&quenching("{ rate = 200, burst = 10 }", ""));
    for f in &w.ifaces {
        let c = f.counters;
        assert_eq!(
            c.arrived,
            c.departed + c.drops.total_packets() + f.occupancy().packets as u64,
            "{}",
            f.name
        );
    }
    for n in &w.nodes {
        let c = n.counters;
        assert_eq!(
            c.received + c.originated,
            c.forwarded + c.delivered + c.drops.total_packets() + c.held,
            "{}",
            n.name
        );
    }
    let r1 = w.nodes.iter().find(|n| n.name == "r1").unwrap();
    assert_eq!(r1.counters.originated, quench_counters(&w, "r1").sent);
}

fn shipped(name: &str, secs: u64, seed: u64, tcp: &str) -> qoslab::scenario::Scenario {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/p2")
        .join(name);
    let text = std::fs::read_to_string(path)
        .unwrap()
        .replace("variant = \"sack\"", &format!("variant = \"{tcp}\""));
    let mut sc = parse(&text);
    sc.duration = Dur::from_secs(secs);
    sc.warmup = Dur::from_secs(5);
    sc.seed = seed;
    sc
}

fn run_sc(sc: &qoslab::scenario::Scenario) -> World {
    let mut w = qoslab::scenario::build(sc).unwrap();
    w.run().unwrap();
    w
}

/// (TCP goodput [bytes], drops at the edge r1, drops at the core r2) since the warm-up.
fn outcome(w: &World) -> (u64, u64, u64) {
    let tcp = w.flows[0].counters_since(&w.warm, 0).goodput_bytes;
    let mut edge = 0;
    let mut core = 0;
    for (i, f) in w.ifaces.iter().enumerate() {
        let d = f.counters.drops.total_packets() - w.warm.ifaces[i].drops.total_packets();
        match w.nodes[f.node.0 as usize].name.as_str() {
            "r1" => edge += d,
            "r2" => core += d,
            _ => {}
        }
    }
    for (i, n) in w.nodes.iter().enumerate() {
        let d = n.counters.drops.total_packets() - w.warm.nodes[i].drops.total_packets();
        if n.name == "r1" {
            edge += d;
        }
    }
    (tcp, edge, core)
}

#[test]
fn eruf_moves_the_dumbbells_drops_to_the_edge_and_frees_the_long_haul_for_tcp() {
    let (t0, e0, c0) = outcome(&run_sc(&shipped("f1-dumbbell.toml", 40, 1, "sack")));
    let (t1, e1, c1) = outcome(&run_sc(&shipped("f1-dumbbell-eruf.toml", 40, 1, "sack")));
    // Without ERUF most drops are at r2 (the undeliverable CBR traffic); with it most
    // are at r1, and TCP gets much more of the long-haul link (P2 Fig. 1: up to 3.5×).
    assert!(c0 > e0, "without: edge {e0}, core {c0}");
    assert!(e1 > c1, "with: edge {e1}, core {c1}");
    assert!(t1 > 2 * t0, "TCP goodput {t0} → {t1} bytes");
}

#[test]
fn every_tcp_variant_runs_in_the_eruf_dumbbell() {
    for v in ["tahoe", "reno", "newreno", "sack"] {
        let w = run_sc(&shipped("f1-dumbbell-eruf.toml", 20, 1, v));
        let FlowApp::Tcp(t) = &w.flows[0].app else {
            panic!("flow 0 is TCP")
        };
        assert_eq!(format!("{:?}", t.snd.variant()).to_lowercase(), v);
        let (tcp, _, _) = outcome(&w);
        // More than half the long haul over 15 s (1.5 Mb/s · 15 s / 8 / 2 bytes).
        assert!(tcp > 1_400_000, "{v}: {tcp}");
    }
}

#[test]
fn same_seed_same_results_with_quenches_and_regulators() {
    let sc = shipped("f1-dumbbell-eruf.toml", 15, 7, "sack");
    let a = qoslab::run(&sc).unwrap();
    let b = qoslab::run(&sc).unwrap();
    for name in ["flows", "drops", "quench", "eruf", "queues"] {
        assert_eq!(
            format!("{:?}", a.tables[name]),
            format!("{:?}", b.tables[name]),
            "{name}"
        );
    }
    let sc2 = shipped("f1-dumbbell-eruf.toml", 15, 8, "sack");
    let c = qoslab::run(&sc2).unwrap();
    assert_ne!(
        format!("{:?}", a.tables["flows"]),
        format!("{:?}", c.tables["flows"])
    );
}

#[test]
fn the_edge_stage_learns_its_link_and_counts_its_work() {
    let w = run_sc(&shipped("f1-dumbbell-eruf.toml", 20, 1, "sack"));
    let f = iface(&w, "r1->r2");
    let AnyConditioner::Eruf(e) = &f.egress.chain.stages()[0] else {
        panic!("an eruf stage at r1->r2")
    };
    // RTT estimate: twice the 5 ms long-haul delay; removal at its 1.5 Mb/s.
    assert_eq!(e.rtt(), Dur::from_millis(10));
    assert_eq!(e.link_rate().bps(), 1_500_000);
    let c = e.counters();
    assert_eq!(
        c.installed + c.decreased + c.ignored + c.unknown,
        c.quenches
    );
    assert!(c.installed >= 3 && c.policed > 0, "{c:?}");
    // Every quench r2 sent passed r1, but the few still on their way back.
    let sent = quench_counters(&w, "r2").sent;
    assert!(
        c.quenches <= sent && sent - c.quenches <= 5,
        "{} of {sent}",
        c.quenches
    );
}

#[test]
fn tcp_senders_halve_on_quenches_unless_told_to_ignore_them() {
    let run = |on_quench: &str| {
        let flows = format!(
            "[[flow]]\nname = \"t\"\nfrom = \"s0\"\nto = \"d0\"\ntcp = {{ on_quench = \"{on_quench}\" }}\n"
        ) + &cbr(1, "900kbps", 500, 0.1);
        let w = run_world(&quenching_with(&flows, "{ rate = 1000, burst = 10 }"));
        let FlowApp::Tcp(t) = &w.flows[0].app else {
            panic!("flow 0 is TCP")
        };
        (
            t.snd.stats().quench_reductions,
            quench_counters(&w, "r1").sent,
        )
    };
    let (halved, sent) = run("halve");
    assert!(halved > 0 && sent > 0, "{halved} {sent}");
    let (ignored, sent) = run("ignore");
    assert_eq!(ignored, 0);
    assert!(sent > 0);
}

#[test]
fn misplaced_quench_and_eruf_keys_are_errors_naming_the_key() {
    let text = quenching("{ rate = 10 }", "").replacen(
        "name = \"s0\"\n",
        "name = \"s0\"\nsource_quench = { rate = 10 }\n",
        1,
    );
    let e = qoslab::scenario::build(&parse(&text)).unwrap_err();
    assert!(
        e.key.starts_with("node[") && e.key.ends_with("].source_quench"),
        "{e}"
    );
    let e = qoslab::scenario::build(&parse(&quenching("{ rate = 0 }", ""))).unwrap_err();
    assert_eq!(e.key, "node[0].source_quench.rate", "{e}");
    let text = quenching("{ rate = 10 }", "")
        + "[[conditioner]]\nat = \"r1\"\nstages = [{ kind = \"eruf\" }]\n";
    let e = qoslab::scenario::build(&parse(&text)).unwrap_err();
    assert_eq!(e.key, "conditioner[0].stages[0]", "{e}");
    // With both overrides it may sit at the router's ingress.
    let text = quenching("{ rate = 10 }", "")
        + "[[conditioner]]\nat = \"r1\"\nstages = [{ kind = \"eruf\", rtt = \"20ms\", link_rate = \"1Mbps\" }]\n";
    qoslab::scenario::build(&parse(&text)).unwrap();
}

/// `quenching` with other flows.
fn quenching_with(flows: &str, quench: &str) -> String {
    dumbbell(2, "1Mbps", RED, flows, "").replacen(
        "name = \"r1\"\nkind = \"router\"\n",
        &format!("name = \"r1\"\nkind = \"router\"\nsource_quench = {quench}\n"),
        1,
    )
}

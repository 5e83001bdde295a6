//! Static routing: shortest by delay, deterministic ties, leaves, direct links.

use qoslab::packet::NodeId;
use qoslab::world::FlowApp;

use super::common::*;

/// A diamond h1 - a - {b, c} - d - h2 with the given delays on a-b and a-c.
fn diamond(ab: &str, ac: &str) -> String {
    let mut s = String::from("duration = \"2s\"\n");
    for (n, k) in [
        ("h1", "host"),
        ("h2", "host"),
        ("a", "router"),
        ("b", "router"),
        ("c", "router"),
        ("d", "router"),
    ] {
        s += &format!("[[node]]\nname = \"{n}\"\nkind = \"{k}\"\n");
    }
    for (a, b, d) in [
        ("h1", "a", "1ms"),
        ("a", "b", ab),
        ("a", "c", ac),
        ("b", "d", "1ms"),
        ("c", "d", "1ms"),
        ("d", "h2", "1ms"),
    ] {
        s += &format!("[[link]]\na = \"{a}\"\nb = \"{b}\"\nrate = \"10Mbps\"\ndelay = \"{d}\"\n");
    }
    s += "[[flow]]\nname = \"f\"\nfrom = \"h1\"\nto = \"h2\"\ncbr = { rate = \"100kbps\", size = 1000 }\n";
    s
}

fn via(w: &qoslab::world::World) -> Vec<String> {
    w.ifaces
        .iter()
        .filter(|f| f.counters.departed > 0)
        .map(|f| f.name.clone())
        .collect()
}

#[test]
fn shortest_path_by_delay() {
    let w = run_world(&diamond("5ms", "2ms"));
    let v = via(&w);
    assert!(
        v.contains(&"a->c".to_string()) && !v.contains(&"a->b".to_string()),
        "{v:?}"
    );
    let w = run_world(&diamond("2ms", "5ms"));
    let v = via(&w);
    assert!(
        v.contains(&"a->b".to_string()) && !v.contains(&"a->c".to_string()),
        "{v:?}"
    );
    // Exact delay along the chosen path h1-a-b-d-h2: 1 + 2 + 1 + 1 ms of propagation
    // and four store-and-forward serialisations of 0.8 ms.
    let FlowApp::Cbr { sink, .. } = &w.flows[0].app else {
        panic!()
    };
    assert_eq!(sink.delay_min.unwrap().as_nanos(), 5_000_000 + 4 * 800_000);
}

#[test]
fn equal_cost_ties_break_by_link_order_and_are_stable() {
    let w = run_world(&diamond("3ms", "3ms"));
    let v = via(&w);
    // a->b is declared first.
    assert!(
        v.contains(&"a->b".to_string()) && !v.contains(&"a->c".to_string()),
        "{v:?}"
    );
}

#[test]
fn direct_link_between_two_hosts_routes_both_ways() {
    let text = "duration = \"5s\"\n[[node]]\nname = \"s\"\n[[node]]\nname = \"d\"\n\
        [[link]]\na = \"s\"\nb = \"d\"\nrate = \"10Mbps\"\ndelay = \"5ms\"\n\
        [[flow]]\nname = \"t\"\nfrom = \"s\"\nto = \"d\"\nbytes = 100000\ntcp = {}\n";
    let w = run_world(text);
    assert_eq!(w.flows[0].counters.goodput_bytes, 100_000);
    assert!(w.routes.next_hop(NodeId(0), NodeId(1)).is_some());
    assert!(w.routes.next_hop(NodeId(1), NodeId(0)).is_some());
    assert!(w.routes.next_hop(NodeId(0), NodeId(0)).is_none());
}

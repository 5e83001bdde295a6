//! The per-packet drop log (`record.drop_events`): its rows add up to the counters
//! (per place and cause, per interface, per flow, marks) on a run with a policer, RED
//! with ECN and a DropTail overflow, after a warm-up; its limit keeps the first rows
//! and counts the rest.

use std::collections::BTreeMap;

use qoslab::stats::{Column, RunResult};

use super::common::*;

/// s0 sends TCP with ECN, s1 CBR policed at its host to 1 Mb/s, s2 CBR at 2 Mb/s into
/// a 1 Mb/s DropTail link of 10 packets; all share a 5 Mb/s RED bottleneck with ECN.
fn scenario(record: &str) -> String {
    let mut s = String::from("duration = \"8s\"\nwarmup = \"1s\"\nseed = 4\n");
    s += "[[node]]\nname = \"r1\"\nkind = \"router\"\n[[node]]\nname = \"r2\"\nkind = \"router\"\n";
    for i in 0..3 {
        s += &format!("[[node]]\nname = \"s{i}\"\n[[node]]\nname = \"d{i}\"\n");
        s += &format!("[[link]]\na = \"s{i}\"\nb = \"r1\"\nrate = \"10Mbps\"\ndelay = \"1ms\"\n");
        let last = if i == 2 {
            "rate = \"1Mbps\"\ndelay = \"1ms\"\nqueue = { kind = \"droptail\", limit = 10 }\n"
        } else {
            "rate = \"10Mbps\"\ndelay = \"1ms\"\n"
        };
        s += &format!("[[link]]\na = \"r2\"\nb = \"d{i}\"\n{last}");
    }
    s += "[[link]]\na = \"r1\"\nb = \"r2\"\nrate = \"5Mbps\"\ndelay = \"10ms\"\n\
          queue = { kind = \"red\", limit = 40, min_th = 5, max_th = 15, max_p = 0.1, ecn = true }\n";
    s += "[[flow]]\nname = \"tcp\"\nfrom = \"s0\"\nto = \"d0\"\ntcp = { ecn = true }\n";
    s += &cbr(1, "3Mbps", 1000, 0.3);
    s += &cbr(2, "2Mbps", 500, 0.3);
    s += "[[conditioner]]\nat = \"s1\"\n\
          stages = [ { kind = \"token_bucket\", rate = \"1Mbps\", depth = 3000, action = \"police\" } ]\n";
    s += "[record]\n";
    s += record;
    s
}

fn strs(r: &RunResult, table: &str, c: &str) -> Vec<String> {
    let col = r.tables[table]
        .get(c)
        .unwrap_or_else(|| panic!("{table}.{c}"));
    (0..col.len())
        .map(|i| col.str_at(i).unwrap().to_string())
        .collect()
}

fn floats(r: &RunResult, table: &str, c: &str) -> Vec<f64> {
    match r.tables[table].get(c) {
        Some(Column::Float(v)) => v.clone(),
        _ => panic!("{table}.{c}"),
    }
}

#[test]
fn drop_events_add_up_to_the_counters() {
    let r = run_text(&scenario("drop_events = true\n"));
    let action = strs(&r, "drop_events", "action");
    let cause = strs(&r, "drop_events", "cause");
    let place = strs(&r, "drop_events", "place");
    let at = strs(&r, "drop_events", "at");
    let iface = strs(&r, "drop_events", "iface");
    let flow = ints(&r, "drop_events", "flow");
    let t = floats(&r, "drop_events", "t");
    assert!(
        t.iter().all(|&x| (1.0..=8.0).contains(&x)),
        "after the warm-up"
    );
    assert!(t.windows(2).all(|w| w[0] <= w[1]), "in event order");

    // Per place and cause, as the drops table counts them.
    let mut rows: BTreeMap<(String, String), i64> = BTreeMap::new();
    for i in 0..action.len() {
        if action[i] == "drop" {
            *rows
                .entry((place[i].clone(), cause[i].clone()))
                .or_default() += 1;
        }
    }
    let counted: BTreeMap<(String, String), i64> = strs(&r, "drops", "place")
        .into_iter()
        .zip(strs(&r, "drops", "cause"))
        .zip(ints(&r, "drops", "packets"))
        .collect();
    assert_eq!(rows, counted);
    for c in ["policed", "red_early", "overflow"] {
        assert!(counted.keys().any(|k| k.1 == c), "no {c} drop: {counted:?}");
    }

    // Per interface: drops and marks as the queues table counts them.
    let q_iface = strs(&r, "queues", "iface");
    let q_dropped = ints(&r, "queues", "dropped");
    let q_marked = ints(&r, "queues", "ecn_marked");
    assert!(q_marked.iter().sum::<i64>() > 0, "no CE mark");
    for (k, name) in q_iface.iter().enumerate() {
        let of = |a: &str| {
            (0..action.len())
                .filter(|&i| {
                    action[i] == a
                        && &iface[i] == name
                        && matches!(at[i].as_str(), "queue" | "link")
                })
                .count() as i64
        };
        assert_eq!(of("drop"), q_dropped[k], "drops at {name}");
        assert_eq!(of("mark"), q_marked[k], "marks at {name}");
    }
    assert!((0..action.len())
        .filter(|&i| action[i] == "mark")
        .all(|i| cause[i] == "red_early" && flow[i] == 0));

    // Per flow, as the flows table counts them.
    let drops = ints(&r, "flows", "drops");
    for (f, &n) in drops.iter().enumerate() {
        let rows = (0..action.len())
            .filter(|&i| action[i] == "drop" && flow[i] == f as i64)
            .count() as i64;
        assert_eq!(rows, n, "flow {f}");
    }
    assert_eq!(r.summary["drop_events"], action.len());
    assert_eq!(r.summary["drop_events_left_out"], 0);
}

#[test]
fn drop_events_keep_their_limit_and_count_the_rest() {
    let all = run_text(&scenario("drop_events = true\n"));
    let n = all.tables["drop_events"].rows();
    let r = run_text(&scenario("drop_events = true\ndrop_events_limit = 7\n"));
    assert_eq!(r.tables["drop_events"].rows(), 7);
    assert_eq!(r.summary["drop_events_left_out"], (n - 7) as u64);
    assert_eq!(
        floats(&r, "drop_events", "t"),
        floats(&all, "drop_events", "t")[..7]
    );
    let w = r.summary["warnings"].to_string();
    assert!(w.contains("record.drop_events_limit"), "{w}");
}

#[test]
fn drop_events_are_off_by_default() {
    let r = run_text(&scenario(""));
    assert!(!r.tables.contains_key("drop_events"));
    assert!(!r.summary.contains_key("drop_events_left_out"));
}

/// The timestamps [ns] of a pcap file's records.
fn pcap_times(file: &std::path::Path) -> Vec<u64> {
    let b = std::fs::read(file).unwrap();
    let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
    let mut out = vec![];
    let mut i = 24;
    while i < b.len() {
        out.push(u64::from(u32_at(i)) * 1_000_000_000 + u64::from(u32_at(i + 4)));
        i += 16 + u32_at(i + 8) as usize;
    }
    assert_eq!(i, b.len());
    out
}

#[test]
fn a_drop_capture_holds_the_interfaces_dropped_packets() {
    let text = scenario("drop_events = true\n")
        + "[[capture]]\niface = \"r2->d2\"\ndirection = \"drop\"\n\
           [[capture]]\niface = \"r1->r2\"\ndirection = \"drop\"\n";
    let dir = std::env::temp_dir().join(format!("qoslab-drop-capture-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let opts = qoslab::RunOptions {
        pcap_dir: Some(dir.clone()),
        ..Default::default()
    };
    let r = qoslab::run_with(&parse(&text), &opts).unwrap();
    let (iface, action, t) = (
        strs(&r, "drop_events", "iface"),
        strs(&r, "drop_events", "action"),
        floats(&r, "drop_events", "t"),
    );
    for (name, file) in [("r2->d2", "r2-d2.drop.pcap"), ("r1->r2", "r1-r2.drop.pcap")] {
        // After the warm-up (the log's start), the same packets at the same times;
        // CE marks are not drops and stay out of the file.
        let logged: Vec<u64> = (0..t.len())
            .filter(|&i| iface[i] == name && action[i] == "drop" && t[i] > 1.0)
            .map(|i| (t[i] * 1e9).round() as u64)
            .collect();
        let captured: Vec<u64> = pcap_times(&dir.join(file))
            .into_iter()
            .filter(|&ns| ns > 1_000_000_000)
            .collect();
        assert!(!logged.is_empty(), "{name}");
        assert_eq!(captured, logged, "{name}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

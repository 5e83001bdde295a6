//! Web flows (P3 §V.D): one connection per object with its handshake, every object
//! delivered under loss, deterministic per seed.

use qoslab::scenario::Format;
use qoslab::stats::Column;

use super::common::*;

const WEB: &str = "web = { sessions = 6, pages = { kind = \"constant\", value = 4 }, \
                   inter_page = { kind = \"exponential\", mean = 0.5 }, \
                   objects = { kind = \"uniform\", min = 1, max = 4 } }\n";

fn web_scenario(loss: f64) -> String {
    let flows = format!(
        "[[flow]]\nname = \"w0\"\nfrom = \"s0\"\nto = \"d0\"\n{WEB}tcp = {{ mss = 1000 }}\n\
         [[flow]]\nname = \"w1\"\nfrom = \"s1\"\nto = \"d1\"\n{WEB}tcp = {{ mss = 1000 }}\n"
    );
    dumbbell(
        2,
        "1Mbps",
        "{ kind = \"droptail\", limit = 15 }",
        &flows,
        "",
    )
    .replace("duration = \"10s\"", "duration = \"200s\"")
    .replace(
        "delay = \"10ms\"\n",
        &format!("delay = \"10ms\"\nloss = {loss}\n"),
    )
}

fn floats(t: &qoslab::stats::Table, c: &str) -> Vec<f64> {
    match t.get(c) {
        Some(Column::Float(v)) => v.clone(),
        _ => panic!("{c}"),
    }
}

fn ints(t: &qoslab::stats::Table, c: &str) -> Vec<i64> {
    match t.get(c) {
        Some(Column::Int(v)) => v.clone(),
        _ => panic!("{c}"),
    }
}

#[test]
fn every_object_arrives_whole_after_its_own_handshake_under_loss() {
    let w = run_world(&web_scenario(0.03));
    let r = qoslab::stats::collect(&w, "t", 1, 0.0);
    let o = r.tables.get("web_objects").unwrap();
    let p = r.tables.get("web_pages").unwrap();
    assert_eq!(p.rows(), 2 * 6 * 4, "every page of every session ran");
    let (bytes, received) = (ints(o, "bytes"), ints(o, "received"));
    assert!(o.rows() > p.rows(), "pages with several objects");
    assert_eq!(bytes, received, "every object delivered completely");
    assert!(floats(o, "done").iter().all(|d| d.is_finite()));
    // Goodput is exactly the objects' bytes.
    let total: u64 = w.flows.iter().map(|f| f.counters.goodput_bytes).sum();
    assert_eq!(total as i64, bytes.iter().sum::<i64>());
    // One handshake per object: at least one SYN each, and no data before SYN, SYN-ACK,
    // request and first data crossed the path (two round trips of 24 ms).
    let syns = ints(o, "syns");
    assert!(syns.iter().all(|&s| s >= 1));
    assert!(
        syns.iter().any(|&s| s > 1),
        "some SYN or SYN-ACK was lost and resent"
    );
    for (f, a) in floats(o, "response_first")
        .iter()
        .zip(floats(o, "response_all"))
    {
        assert!(*f >= 0.048, "{f}");
        assert!(a >= *f);
    }
    // the loss bit: some packets of the web flows were dropped
    assert!(w.flows.iter().map(|f| f.counters.drops).sum::<u64>() > 0);
}

#[test]
fn web_runs_are_deterministic() {
    let tables = |seed: u64| {
        let mut sc = parse(&web_scenario(0.01));
        sc.seed = seed;
        let mut w = qoslab::scenario::build(&sc).unwrap();
        w.run().unwrap();
        let r = qoslab::stats::collect(&w, "t", seed, 0.0);
        let o = r.tables.get("web_objects").unwrap();
        (floats(o, "done"), ints(o, "bytes"))
    };
    assert_eq!(tables(3), tables(3));
    assert_ne!(tables(3), tables(4));
}

#[test]
fn web_errors_name_the_key() {
    let err = |text: &str| qoslab::check_str(text, Format::Toml).unwrap_err();
    let base = web_scenario(0.0);
    let e = err(&base.replacen(
        "tcp = { mss = 1000 }",
        "bytes = \"1KB\"\ntcp = { mss = 1000 }",
        1,
    ));
    assert!(e.to_string().contains("flow[0].bytes"), "{e}");
    let e = err(&base.replacen("value = 4", "value = 0", 1));
    assert!(e.to_string().contains("flow[0].web.pages"), "{e}");
    let e = err(&base.replacen("mean = 0.5", "mean = 0.5, shape = 2", 1));
    assert!(e.to_string().contains("shape"), "{e}");
    assert!(qoslab::check_str(&base, Format::Toml).is_ok());
}

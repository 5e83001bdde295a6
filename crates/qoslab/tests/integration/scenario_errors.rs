//! Every scenario error names the key and says what was expected.

use qoslab::error::Error;
use qoslab::scenario::Format;

use super::common::*;

fn err(text: &str) -> (String, String) {
    match qoslab::check_str(text, Format::Toml) {
        Err(Error::Scenario(e)) => (e.key, e.message),
        other => panic!("expected a scenario error, got {other:?}"),
    }
}

fn base() -> String {
    dumbbell(
        1,
        "1Mbps",
        "{ kind = \"droptail\", limit = 10 }",
        &cbr(0, "100kbps", 500, 0.0),
        "",
    )
}

#[test]
fn valid_base_passes() {
    qoslab::check_str(&base(), Format::Toml).unwrap();
}

#[test]
fn unknown_key_is_an_error_with_its_path() {
    let (k, m) = err(&base().replace("jitter = 0", "jiter = 0"));
    assert_eq!(k, "flow[0].cbr.jiter");
    assert!(m.contains("unknown field `jiter`"), "{m}");
    assert!(m.contains("line"), "{m}");
    let (k, m) = err(&(base() + "colour = \"blue\"\n"));
    assert!(m.contains("unknown field `colour`"), "{k}: {m}");
}

#[test]
fn negative_and_zero_rates() {
    let (k, m) = err(&base().replace("rate = \"1Mbps\"", "rate = \"-1Mbps\""));
    assert_eq!(k, "link[2].rate");
    assert!(m.contains("positive"), "{m}");
    let (k, m) = err(&base().replace("rate = \"100kbps\"", "rate = 0"));
    assert_eq!(k, "flow[0].cbr.rate");
    assert!(m.contains("positive"), "{m}");
}

#[test]
fn flow_between_unconnected_nodes() {
    let text = base() + "[[node]]\nname = \"island\"\n[[flow]]\nname = \"x\"\nfrom = \"s0\"\nto = \"island\"\ncbr = { rate = \"1kbps\" }\n";
    let (k, m) = err(&text);
    assert_eq!(k, "flow[1].to");
    assert!(m.contains("no route"), "{m}");
}

#[test]
fn missing_node() {
    let (k, m) = err(&base().replace("to = \"d0\"", "to = \"nowhere\""));
    assert_eq!(k, "flow[0].to");
    assert!(m.contains("no node named \"nowhere\""), "{m}");
}

#[test]
fn queue_limit_below_one_packet() {
    let (k, m) = err(&base().replace("limit = 10", "limit = 0"));
    assert_eq!(k, "link[2].queue.limit");
    assert!(m.contains("at least 1 packet"), "{m}");
}

#[test]
fn malformed_toml_gives_the_line() {
    let (_, m) = err("duration = \n");
    assert!(m.contains("line 1"), "{m}");
}

#[test]
fn missing_duration_and_bad_warmup() {
    let (_, m) = err("[[node]]\nname = \"a\"\n");
    assert!(m.contains("missing field `duration`"), "{m}");
    let (k, _) = err(&base().replace("duration = \"10s\"", "duration = \"10s\"\nwarmup = \"20s\""));
    assert_eq!(k, "warmup");
}

#[test]
fn router_cannot_be_a_flow_end_and_names_are_unique() {
    let (k, m) = err(&base().replace("from = \"s0\"", "from = \"r1\""));
    assert_eq!(k, "flow[0].from");
    assert!(m.contains("expected a host"), "{m}");
    let (k, _) = err(&base().replace("name = \"d0\"", "name = \"s0\""));
    assert_eq!(k, "node[3].name");
}

#[test]
fn record_names_an_unknown_interface() {
    let (k, m) = err(&(base() + "[record]\nqueues = [\"r1->r3\"]\n"));
    assert_eq!(k, "record.queues[0]");
    assert!(m.contains("r1->r2"), "{m}");
}

#[test]
fn json_errors_have_paths_too() {
    let e =
        qoslab::check_str(r#"{"duration": 1, "link": [{"a": "x"}]}"#, Format::Json).unwrap_err();
    let Error::Scenario(e) = e else { panic!() };
    assert_eq!(e.key, "link[0]");
    assert!(e.message.contains("missing field"), "{}", e.message);
}

#[test]
fn a_flow_needs_exactly_one_application() {
    let none = base().replace("cbr = { rate = \"100kbps\", size = 500, jitter = 0 }\n", "");
    let (k, m) = err(&none);
    assert_eq!(k, "flow[0].cbr");
    assert!(m.contains("exactly one application table"), "{m}");
    let two = base().replace("cbr = {", "tcp = {}\ncbr = {");
    let (k, m) = err(&two);
    assert_eq!(k, "flow[0].tcp");
    assert!(m.contains("found 2"), "{m}");
}

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

fn with_queue(q: &str) -> String {
    base().replace("{ kind = \"droptail\", limit = 10 }", q)
}

#[test]
fn seeds_must_be_whole_numbers_in_u64() {
    for (seed, found) in [
        ("\"x\"", "the string \"x\""),
        ("-1", "-1"),
        ("1.5", "1.5"),
        ("true", "true"),
    ] {
        let (k, m) = err(&base().replace(
            "duration = \"10s\"",
            &format!("duration = \"10s\"\nseed = {seed}"),
        ));
        assert_eq!(k, "seed");
        assert!(
            m.contains("expected a whole number from 0 to 18446744073709551615")
                && m.contains(found),
            "{m}"
        );
    }
    // 2^64 is not even a TOML integer; the message says where.
    let (_, m) = err(&base().replace(
        "duration = \"10s\"",
        "duration = \"10s\"\nseed = 18446744073709551616",
    ));
    assert!(m.contains("line 2"), "{m}");
}

#[test]
fn values_inside_queue_and_stage_tables_are_named_exactly() {
    let (k, m) = err(&with_queue(
        "{ kind = \"red\", limit = 20, max_p = \"high\" }",
    ));
    assert_eq!(k, "link[2].queue.max_p");
    assert!(
        m.starts_with("expected a number, found the string \"high\""),
        "{m}"
    );
    assert!(!m.contains("internally tagged"), "{m}");
    let (k, m) = err(&with_queue(
        "{ kind = \"rio_d\", red = { min_th = 1, max_th = 2, max_p = [] } }",
    ));
    assert_eq!(k, "link[2].queue.red.max_p");
    assert!(m.contains("found a list"), "{m}");
    let (k, m) = err(&with_queue("{ kind = \"codl\" }"));
    assert_eq!(k, "link[2].queue.kind");
    assert!(
        m.contains("unknown queue kind \"codl\"; expected one of droptail"),
        "{m}"
    );
    let (k, m) = err(&with_queue("7"));
    assert_eq!(k, "link[2].queue");
    assert!(m.contains("expected a queue table with a `kind`"), "{m}");
    let stage = |s: &str| {
        base() + &format!("[[conditioner]]\nat = \"s0\"\nstages = [{{ kind = \"srtcm\", cir = \"1Mbps\", cbs = 100, ebs = 100 }}, {s}]\n")
    };
    let (k, m) = err(&stage(
        "{ kind = \"trtcm\", cir = \"1Mbps\", cbs = 100, pir = \"2Mbps\", pbs = -3 }",
    ));
    assert_eq!(k, "conditioner[0].stages[1].pbs");
    assert!(m.contains("size"), "{m}");
    let (k, _) = err(&stage(
        "{ kind = \"policy\", rules = [{ conditioner = { kind = \"tsw2cm\", cir = \"1Mbps\", window = \"x\" } }] }",
    ));
    assert_eq!(k, "conditioner[0].stages[1].rules[0].conditioner.window");
    let (k, m) = err(&stage(
        "{ kind = \"token_bucket\", rate = \"1Mbps\", depth = 10, dscp = { green = 99999 } }",
    ));
    assert_eq!(k, "conditioner[0].stages[1].dscp.green");
    assert!(m.contains("0–63") && m.contains("PHB name"), "{m}");
}

#[test]
fn nan_inf_and_deep_nesting_are_clear_errors() {
    let (k, m) = err(&base().replace("jitter = 0", "jitter = nan"));
    assert_eq!(k, "flow[0].cbr.jitter");
    assert_eq!(m, "expected a finite number, found NaN");
    let (k, m) = err(&with_queue("{ kind = \"red\", w_q = -inf }"));
    assert_eq!(k, "link[2].queue.w_q");
    assert!(m.contains("finite"), "{m}");
    let deep = format!("x = {}{}\n", "[".repeat(40), "]".repeat(40));
    let (k, m) = err(&base().replace("duration = \"10s\"", &format!("duration = \"10s\"\n{deep}")));
    assert!(k.starts_with("x[0][0]"), "{k}");
    assert!(m.contains("nest more than 32"), "{m}");
    // Deeper than the TOML parser follows: an error, not a stack overflow.
    let deeper = format!(
        "duration = 1\nx = {}{}\n",
        "[".repeat(5000),
        "]".repeat(5000)
    );
    let (_, m) = err(&deeper);
    assert!(!m.is_empty());
    let json = format!(
        "{{\"duration\": 1, \"x\": {}{}}}",
        "[".repeat(5000),
        "]".repeat(5000)
    );
    let Err(Error::Scenario(e)) = qoslab::check_str(&json, Format::Json) else {
        panic!()
    };
    assert!(e.message.contains("nested too deeply"), "{}", e.message);
}

#[test]
fn meaningless_settings_are_rejected_at_check_time() {
    let (k, m) = err(&(base() + "[record]\ninterval = 0\n"));
    assert_eq!(
        (k.as_str(), m.as_str()),
        ("record.interval", "expected a positive interval, found 0")
    );
    let (k, _) = err(&(base() + "[record]\nqueue_interval = \"0ms\"\n"));
    assert_eq!(k, "record.queue_interval");
    // A nanosecond series over 10 s would be 10^10 events: refused, not left to hang.
    let (k, m) = err(&(base() + "[record]\ninterval = \"1ns\"\n"));
    assert_eq!(k, "record.interval");
    assert!(m.contains("at least 1us (at most 10000000 samples"), "{m}");
    let (k, _) = err(&(base() + "[record]\nqueues = [\"r1->r2\"]\nqueue_interval = \"10ns\"\n"));
    assert_eq!(k, "record.queue_interval");
    // Unused, the queue interval is not held against the run.
    qoslab::check_str(
        &(base() + "[record]\nqueue_interval = \"10ns\"\n"),
        Format::Toml,
    )
    .unwrap();
    let (k, _) = err(&base().replace("duration = \"10s\"", "duration = \"10s\"\nmax_events = 0"));
    assert_eq!(k, "max_events");
    let (k, m) = err(&base().replace("size = 500", "size = 65536"));
    assert_eq!(k, "flow[0].cbr.size");
    assert!(m.contains("at most 65535 bytes"), "{m}");
    let (k, _) = err(&base().replace("size = 500", "size = \"64KiB\""));
    assert_eq!(k, "flow[0].cbr.size");
    // A start after the end is blamed on `start`, the key in the file.
    let (k, m) = err(&base().replace("to = \"d0\"", "to = \"d0\"\nstart = \"12s\""));
    assert_eq!(k, "flow[0].start");
    assert!(m.contains("before the end of the run (10s)"), "{m}");
    let (k, _) = err(&base().replace("to = \"d0\"", "to = \"d0\"\nstart = \"2s\"\nstop = \"1s\""));
    assert_eq!(k, "flow[0].stop");
}

#[test]
fn sizes_take_units_rates_in_bytes_are_bytes_and_a_bom_is_ignored() {
    let sc = parse(&base().replace("size = 500", "size = \"1KB\""));
    assert_eq!(sc.flow[0].cbr().map(|c| c.size), Some(1000));
    let sc = parse(&base().replace("rate = \"1Mbps\"", "rate = \"2MBps\""));
    assert_eq!(sc.link[2].rate, qoslab::time::Rate::from_mbps(16));
    let (k, m) = err(&base().replace("rate = \"1Mbps\"", "rate = \"2MBPS\""));
    assert_eq!(k, "link[2].rate");
    assert!(m.contains("bytes per second: Bps, kBps, MBps"), "{m}");
    let bom = format!("\u{feff}{}", base());
    qoslab::check_str(&bom, Format::Toml).unwrap();
    qoslab::check_str("\u{feff}{\"duration\": 1}", Format::Json).unwrap();
}

#[test]
fn diffserv_keys_name_the_key() {
    let flow = |k: &str| base().replace("to = \"d0\"\n", &format!("to = \"d0\"\n{k}\n"));
    let (k, m) = err(&flow("dscp = 64"));
    assert_eq!(k, "flow[0].dscp");
    assert!(m.contains("0–63"), "{m}");
    let (k, m) = err(&flow("ack_dscp = \"AF14\""));
    assert_eq!(k, "flow[0].ack_dscp");
    assert!(m.contains("PHB name"), "{m}");
    let (k, _) = err(&flow("src_port = 70000"));
    assert_eq!(k, "flow[0].src_port");
    let router = |k: &str| {
        base().replace(
            "name = \"r1\"\nkind = \"router\"\n",
            &format!("name = \"r1\"\nkind = \"router\"\n{k}\n"),
        )
    };
    let (k, m) = err(&router(
        "dscp_map = [ { dscp = 10 }, { dscp = 99, colour = \"red\" } ]",
    ));
    assert_eq!(k, "node[0].dscp_map[1].dscp");
    assert!(m.contains("0–63"), "{m}");
    let (k, _) = err(&router("dscp_map = [ { dscp = 10, colour = \"blue\" } ]"));
    assert_eq!(k, "node[0].dscp_map[0].colour");
    let cond = |s: &str| format!("{}[[conditioner]]\nat = \"r1\"\nstages = [ {s} ]\n", base());
    let (k, m) = err(&cond(
        "{ kind = \"policy\", rules = [ { filter = { flow = \"nope\" }, profile = { rate = 1000, burst = 1000 }, action = \"police\" } ] }",
    ));
    assert_eq!(k, "conditioner[0].stages[0].rules[0].filter.flow");
    assert!(m.contains("nope"), "{m}");
    let (k, _) = err(&cond("{ kind = \"set_dscp\", dscp = 70 }"));
    assert_eq!(k, "conditioner[0].stages[0].dscp");
    let (k, _) = err(&cond("{ kind = \"set_dscp\", dscp = 1, only = [\"XX\"] }"));
    assert_eq!(k, "conditioner[0].stages[0].only[0]");
}

#[test]
fn class_queue_errors_name_the_key() {
    let q = |classes: &str| {
        dumbbell(
            1,
            "1Mbps",
            &format!("{{ kind = \"classes\", classes = [ {classes} ] }}"),
            &cbr(0, "100kbps", 500, 0.0),
            "",
        )
    };
    let (k, m) = err(&q("{ name = \"be\" }, { name = \"ef\", dscp = [\"EF\"] }"));
    assert_eq!(k, "link[2].queue.classes[0].name");
    assert!(m.contains("only the last class"), "{m}");
    let (k, _) = err(&q("{ name = \"ef\", dscp = [\"EF\"] }"));
    assert_eq!(k, "link[2].queue.classes[0].dscp");
    let (k, m) = err(&q("{ name = \"x\", phb = \"AF9\" }, { name = \"be\" }"));
    assert_eq!(k, "link[2].queue.classes[0].phb");
    assert!(m.contains("AF9"), "{m}");
    let (k, _) = err(&q(
        "{ name = \"x\", filter = { src = \"mars\" } }, { name = \"be\" }",
    ));
    assert_eq!(k, "link[2].queue.classes[0].filter.src");
    let (k, _) = err(&q(
        "{ name = \"be\", queue = { kind = \"red\", max_p = 2 } }",
    ));
    assert_eq!(k, "link[2].queue.classes[0].queue.max_p");
    let (k, _) = err(&q("{ name = \"be\", rate = \"1Mbps\" }"));
    assert_eq!(k, "link[2].queue.classes[0].rate");
    let (k, _) = err(&q("{ name = \"be\", weight = 0 }"));
    assert_eq!(k, "link[2].queue.classes[0].weight");
    let (k, _) = err(&q("{ name = \"be\", queue = { kind = \"lqd\" } }"));
    assert_eq!(k, "link[2].queue.classes[0].queue.kind");
}

#[test]
fn input_interface_placement_errors() {
    let cond = |place: &str| {
        format!(
            "{}[[conditioner]]\n{place}\nstages = [ {{ kind = \"delay\", delay = \"1ms\" }} ]\n",
            base()
        )
    };
    let (k, m) = err(&cond("iface_in = \"r1->d0\""));
    assert_eq!(k, "conditioner[0].iface_in");
    assert!(m.contains("no interface"), "{m}");
    let (k, m) = err(&cond("iface_in = \"r2->d0\""));
    assert_eq!(k, "conditioner[0].iface_in");
    assert!(m.contains("host"), "{m}");
    let (k, _) = err(&cond("iface_in = \"s0->r1\"\nat = \"r1\""));
    assert_eq!(k, "conditioner[0].iface_in");
    let twice =
        cond("iface_in = \"s0->r1\"") + "[[conditioner]]\niface_in = \"s0->r1\"\nstages = []\n";
    let (k, m) = err(&twice);
    assert_eq!(k, "conditioner[1]");
    assert!(m.contains("second"), "{m}");
}

#[test]
fn telnet_values_and_combinations_are_named() {
    let tcp = |extra: &str| {
        base().replace(
            "cbr = { rate = \"100kbps\", size = 500, jitter = 0 }",
            &format!("tcp = {{}}\n{extra}"),
        )
    };
    let (k, m) = err(&tcp("telnet = { size_min = 100, size_max = 40 }"));
    assert_eq!(k, "flow[0].telnet.size_max");
    assert!(m.contains("size_min (100)"), "{m}");
    let (k, _) = err(&tcp("telnet = { mean_interval = \"0s\" }"));
    assert_eq!(k, "flow[0].telnet.mean_interval");
    let (k, _) = err(&tcp("telnet = { sessions = 0 }"));
    assert_eq!(k, "flow[0].telnet.sessions");
    let (k, m) = err(&tcp("bytes = \"1KB\"\ntelnet = {}"));
    assert_eq!(k, "flow[0].bytes");
    assert!(m.contains("telnet"), "{m}");
    let (k, _) = err(&base().replace("jitter = 0 }", "jitter = 0 }\ntelnet = {}"));
    assert_eq!(k, "flow[0].telnet");
    assert!(qoslab::check_str(&tcp("telnet = {}"), Format::Toml).is_ok());
}

#[test]
fn application_tables_that_exclude_each_other_are_named_together() {
    let cbr = "cbr = { rate = \"100kbps\", size = 500, jitter = 0 }";
    let with = |tables: &str| base().replace(cbr, tables);
    // Every pair of TCP applications: the key is the first in the order writes,
    // telnet, web, stripe, ptcp, the message names the second.
    let apps = [
        ("writes", "writes = { size = 1000, every = \"1s\" }"),
        ("telnet", "telnet = {}"),
        ("web", "web = {}"),
        ("stripe", "stripe = { connections = 2 }"),
        ("ptcp", "ptcp = { pipes = 2 }"),
    ];
    for (i, (a, ta)) in apps.iter().enumerate() {
        for (b, tb) in &apps[i + 1..] {
            let (k, m) = err(&with(&format!("tcp = {{}}\n{tb}\n{ta}")));
            assert_eq!(k, format!("flow[0].{a}"));
            assert!(
                m.starts_with(&format!("{a} cannot be combined with {b} (")),
                "{m}"
            );
        }
        // Alone beside `tcp` each is accepted; beside `cbr` each is refused.
        assert!(qoslab::check_str(&with(&format!("tcp = {{}}\n{ta}")), Format::Toml).is_ok());
        let (k, m) = err(&with(&format!("{cbr}\n{ta}")));
        assert_eq!(k, format!("flow[0].{a}"));
        assert!(
            m.starts_with(&format!("{a} applies to TCP flows only")),
            "{m}"
        );
    }
    // `bytes` goes with a bulk transfer, writes, striping and pTCP, not Telnet or web.
    for (a, ta) in apps {
        let r = qoslab::check_str(
            &with(&format!("tcp = {{}}\nbytes = 5000\n{ta}")),
            Format::Toml,
        );
        match a {
            "telnet" | "web" => {
                let Err(Error::Scenario(e)) = r else {
                    panic!("{a}: {r:?}")
                };
                assert_eq!(e.key, "flow[0].bytes");
                assert!(
                    e.message.contains(&format!("combined with {a}")),
                    "{}",
                    e.message
                );
            }
            _ => assert!(r.is_ok(), "{a}: {r:?}"),
        }
    }
    let (k, m) = err(&with("bytes = 5000"));
    assert_eq!(k, "flow[0].bytes");
    assert!(m.contains("add a `tcp` table"), "{m}");
}

#[test]
fn a_node_pos_of_three_values_names_the_node() {
    let (k, m) = err(&(base() + "[[node]]\nname = \"pinned\"\npos = [0, 0, 1]\n"));
    assert!(k.starts_with("node[") && k.ends_with("].pos"), "{k}");
    assert!(
        m.contains("node \"pinned\": expected two numbers [x, y]"),
        "{m}"
    );
    assert!(m.contains("found 3 values"), "{m}");
}

#[test]
fn a_negative_drop_events_limit_is_refused_as_such() {
    let (k, m) = err(&(base() + "[record]\ndrop_events_limit = -1\n"));
    assert_eq!(k, "record.drop_events_limit");
    assert!(m.contains("at least 1") && m.contains("found -1"), "{m}");
}

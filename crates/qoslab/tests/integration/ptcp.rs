//! pTCP (P4 §4) from scenario files: every byte reaches the application once under
//! random loss, one pipe is close to a plain SACK flow, the same seed gives the same
//! tables, and scenario errors name the key.

use qoslab::stats::Column;

use super::common::*;

/// One pTCP flow s0 → d0 (`ptcp` and `tcp` tables as TOML) over a 5 Mb/s bottleneck
/// with random `loss`, for `duration`.
fn ptcp(pt: &str, tcp: &str, bytes: Option<&str>, loss: f64, duration: &str) -> String {
    let bytes = bytes.map_or(String::new(), |b| format!("bytes = \"{b}\"\n"));
    let flows = format!(
        "[[flow]]\nname = \"pt\"\nfrom = \"s0\"\nto = \"d0\"\n{bytes}ptcp = {pt}\ntcp = {tcp}\n"
    );
    lossy_one_flow(&flows, loss, duration)
}

#[test]
fn every_byte_reaches_the_application_once_under_random_loss() {
    for w in [1, 2, 10] {
        let r = run_text(&ptcp(
            &format!("{{ pipes = {w}, send_buffer = \"64KB\", recv_buffer = \"64KB\" }}"),
            "{ variant = \"sack\" }",
            Some("1000017B"),
            0.02,
            "200s",
        ));
        let at = format!("w = {w}");
        assert_eq!(ints(&r, "ptcp", "app_bytes"), vec![1_000_017], "{at}");
        assert_eq!(ints(&r, "flows", "goodput_bytes"), vec![1_000_017], "{at}");
        assert_eq!(ints(&r, "ptcp_pipes", "pipe").len(), w, "{at}");
        assert!(
            ints(&r, "ptcp", "retransmits")[0] > 0,
            "{at}: losses happened"
        );
        if w > 1 {
            assert!(ints(&r, "ptcp", "reassigns")[0] > 0, "{at}");
            assert!(
                ints(&r, "ptcp_pipes", "bytes_sent").iter().all(|&b| b > 0),
                "{at}: every pipe carried data"
            );
        }
        match r.tables["transfers"].get("done") {
            Some(Column::Float(d)) => assert!(d[0].is_finite(), "{at}"),
            _ => panic!("transfers.done"),
        }
    }
}

#[test]
fn one_pipe_is_close_to_a_plain_sack_flow() {
    // Same dumbbell, same TCP settings; the receive buffer is larger than any window.
    let tcp = "{ variant = \"sack\", max_window = 64 }";
    let go = |text: String| {
        let mut g = Vec::new();
        for seed in 1..=3 {
            let r = qoslab::run_str(&text, qoslab::scenario::Format::Toml, Some(seed)).unwrap();
            g.push(ints(&r, "flows", "goodput_bytes")[0] as f64);
        }
        g.iter().sum::<f64>() / g.len() as f64
    };
    let one = go(ptcp(
        "{ pipes = 1, send_buffer = \"1MB\", recv_buffer = \"1MB\" }",
        tcp,
        None,
        0.005,
        "60s",
    ));
    let plain = go(ptcp("X", tcp, None, 0.005, "60s").replace("ptcp = X\n", ""));
    assert!(one > 1e6, "{one}");
    // Tolerance 1 % (measured: 0.07 % over these seeds): the pipe is the same SACK
    // sender; with one pipe the engine only adds hollow segments for data already
    // acknowledged through the data ACK.
    assert!(
        (one - plain).abs() <= 0.01 * plain,
        "pTCP w = 1: {one}, plain SACK: {plain}"
    );
}

#[test]
fn the_same_seed_gives_identical_tables() {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/examples/ptcp.toml"),
    )
    .unwrap()
    .replace("duration = \"60s\"", "duration = \"20s\"")
    .replace("warmup = \"10s\"", "warmup = \"2s\"");
    let a = qoslab::run_str(&text, qoslab::scenario::Format::Toml, Some(5)).unwrap();
    let b = qoslab::run_str(&text, qoslab::scenario::Format::Toml, Some(5)).unwrap();
    for t in ["flows", "ptcp", "ptcp_pipes", "drops"] {
        assert_eq!(
            format!("{:?}", a.tables[t]),
            format!("{:?}", b.tables[t]),
            "{t}"
        );
    }
    assert!(ints(&a, "ptcp", "app_bytes")[0] > 0);
}

#[test]
fn ptcp_errors_name_the_key() {
    let tcp = "{ variant = \"sack\" }";
    let err = |text: String| {
        qoslab::check_str(&text, qoslab::scenario::Format::Toml)
            .unwrap_err()
            .to_string()
    };
    let e = err(ptcp("{ pipes = 0 }", tcp, None, 0.0, "1s"));
    assert!(e.contains("ptcp.pipes"), "{e}");
    let e = err(ptcp(
        "{ pipes = 2, recv_buffer = \"1KB\" }",
        tcp,
        None,
        0.0,
        "1s",
    ));
    assert!(e.contains("ptcp.recv_buffer"), "{e}");
    let e = err(ptcp("{ pipes = 2, window = 3 }", tcp, None, 0.0, "1s"));
    assert!(e.contains("send_buffer"), "{e}");
    let e = err(ptcp("{ pipes = 2 }", tcp, None, 0.0, "1s").replace(
        "tcp = { variant",
        "stripe = { connections = 2 }\ntcp = { variant",
    ));
    assert!(e.contains("stripe") && e.contains("ptcp"), "{e}");
    let e = err(ptcp("{ pipes = 2 }", tcp, None, 0.0, "1s").replace(
        "tcp = { variant",
        "writes = { size = 1000, every = \"1s\" }\ntcp = { variant",
    ));
    assert!(e.contains("writes") && e.contains("ptcp"), "{e}");
    let e = err(ptcp(
        "{ pipes = 2 }",
        "{ variant = \"sack\", rcv_buffer = \"64KB\" }",
        None,
        0.0,
        "1s",
    ));
    assert!(
        e.contains("tcp.rcv_buffer") && e.contains("ptcp.recv_buffer"),
        "{e}"
    );
    let e =
        err(ptcp("{ pipes = 2 }", tcp, None, 0.0, "1s")
            .replace("tcp = { variant = \"sack\" }\n", ""));
    assert!(e.contains("ptcp"), "{e}");
}

//! Application striping (P4 §2): every byte reaches the application once and in block
//! order under loss; finite receive buffers stall the striped connections with zero
//! windows (head-of-line blocking) and they resume; one connection is plain TCP.

use qoslab::stats::Column;

use super::common::*;

/// One striped flow s0 → d0 (`stripe` and `tcp` tables as TOML) over a 5 Mb/s
/// bottleneck with random `loss`, for `duration`.
fn striped(stripe: &str, tcp: &str, bytes: Option<&str>, loss: f64, duration: &str) -> String {
    let bytes = bytes.map_or(String::new(), |b| format!("bytes = \"{b}\"\n"));
    let flows = format!(
        "[[flow]]\nname = \"st\"\nfrom = \"s0\"\nto = \"d0\"\n{bytes}stripe = {stripe}\ntcp = {tcp}\n"
    );
    lossy_one_flow(&flows, loss, duration)
}

#[test]
fn every_byte_reaches_the_application_once_and_in_block_order_under_loss() {
    for policy in ["round_robin", "write_until_block"] {
        for w in [1, 3, 8] {
            let text = striped(
                &format!("{{ connections = {w}, block = \"5000B\", policy = \"{policy}\", send_buffer = \"20KB\" }}"),
                "{ variant = \"sack\", rcv_buffer = \"12KB\" }",
                Some("1000017B"),
                0.02,
                "200s",
            );
            let r = run_text(&text);
            let at = format!("{policy}, w = {w}");
            // The application read exactly the bytes written, whole blocks in order
            // (the last one short), and the transfer finished.
            assert_eq!(ints(&r, "stripe", "app_bytes"), vec![1_000_017], "{at}");
            assert_eq!(ints(&r, "stripe", "blocks_read"), vec![201], "{at}");
            assert_eq!(ints(&r, "flows", "goodput_bytes"), vec![1_000_017], "{at}");
            let (wr, rd) = (
                ints(&r, "stripe_connections", "written"),
                ints(&r, "stripe_connections", "read"),
            );
            assert_eq!(wr.len(), w, "{at}");
            assert_eq!(wr, rd, "{at}: each connection read what was written to it");
            if w > 1 {
                assert!(
                    wr.iter().all(|&b| b > 0),
                    "{at}: every connection used {wr:?}"
                );
            }
            assert!(
                ints(&r, "stripe", "retransmits")[0] > 0,
                "{at}: losses happened"
            );
            match r.tables["transfers"].get("done") {
                Some(Column::Float(d)) => assert!(d[0].is_finite(), "{at}"),
                _ => panic!("transfers.done"),
            }
        }
    }
}

#[test]
fn a_full_receive_buffer_stalls_striping_with_zero_windows_and_it_resumes() {
    // A block lost on one connection holds the others' data in their 4-segment buffers.
    let text = |tcp: &str| {
        striped(
            "{ connections = 4, block = \"2920B\", send_buffer = \"64KB\" }",
            tcp,
            Some("3MB"),
            0.01,
            "300s",
        )
    };
    let r = run_text(&text("{ variant = \"sack\", rcv_buffer = \"5840B\" }"));
    let zero = ints(&r, "stripe", "zero_windows")[0];
    assert!(zero > 0, "zero windows advertised: {zero}");
    assert!(ints(&r, "stripe", "hol_waits")[0] > 0);
    // ... and every stall ended: the whole transfer reached the application.
    assert_eq!(ints(&r, "stripe", "app_bytes"), vec![3_000_000]);
    // Without a finite buffer the receiving TCP never closes its window.
    let r = run_text(&text("{ variant = \"sack\" }"));
    assert_eq!(ints(&r, "stripe", "zero_windows"), vec![0]);
    assert_eq!(ints(&r, "stripe", "app_bytes"), vec![3_000_000]);
}

#[test]
fn a_full_buffer_that_is_not_a_multiple_of_the_segment_reads_below_one_segment() {
    // 4 segments and 700 B: the sender sends whole segments only, so the window of a
    // full buffer stays at 700 B (never 0) and is counted below one segment.
    let text = |buf: &str| {
        striped(
            "{ connections = 4, block = \"2920B\", send_buffer = \"64KB\" }",
            &format!("{{ variant = \"sack\", rcv_buffer = \"{buf}\" }}"),
            Some("3MB"),
            0.01,
            "300s",
        )
    };
    let r = run_text(&text("6540B"));
    let (zero, small) = (
        ints(&r, "stripe", "zero_windows")[0],
        ints(&r, "stripe", "small_windows")[0],
    );
    assert_eq!(zero, 0, "a 700 B window is not zero");
    assert!(small > 0, "full windows below one segment: {small}");
    assert_eq!(ints(&r, "stripe", "app_bytes"), vec![3_000_000]);
    // With a multiple of the segment, every zero window is also below one segment.
    let r = run_text(&text("5840B"));
    let (zero, small) = (
        ints(&r, "stripe", "zero_windows")[0],
        ints(&r, "stripe", "small_windows")[0],
    );
    assert!(zero > 0 && small >= zero, "{zero} {small}");
    let per_conn = ints(&r, "stripe_connections", "small_windows");
    assert_eq!(per_conn.iter().sum::<i64>(), small);
}

#[test]
fn striping_over_one_connection_is_a_plain_tcp_flow() {
    let tcp = "{ variant = \"sack\", rcv_buffer = \"64KB\", max_window = 64 }";
    let one = run_text(&striped(
        "{ connections = 1, block = \"8KB\", send_buffer = \"1MB\" }",
        tcp,
        None,
        0.005,
        "60s",
    ));
    let plain = run_text(&striped("X", tcp, None, 0.005, "60s").replace("stripe = X\n", ""));
    let (a, b) = (
        ints(&one, "flows", "goodput_bytes")[0] as f64,
        ints(&plain, "flows", "goodput_bytes")[0] as f64,
    );
    assert!(a > 1e6, "{a}");
    assert!((a - b).abs() <= 0.001 * b, "striped {a} vs plain {b}");
}

#[test]
fn stripe_errors_name_the_key() {
    let tcp = "{ variant = \"sack\" }";
    let err = |text: String| {
        qoslab::check_str(&text, qoslab::scenario::Format::Toml)
            .unwrap_err()
            .to_string()
    };
    let e = err(striped("{ connections = 0 }", tcp, None, 0.0, "1s"));
    assert!(e.contains("stripe.connections"), "{e}");
    let e = err(striped(
        "{ connections = 2, block = \"8KB\", send_buffer = \"4KB\" }",
        tcp,
        None,
        0.0,
        "1s",
    ));
    assert!(e.contains("stripe.send_buffer"), "{e}");
    let e = err(striped(
        "{ connections = 2, policy = \"random\" }",
        tcp,
        None,
        0.0,
        "1s",
    ));
    assert!(e.contains("write_until_block"), "{e}");
    let e = err(
        striped("{ connections = 2 }", tcp, None, 0.0, "1s").replace(
            "tcp = { variant",
            "writes = { size = 1000, every = \"1s\" }\ntcp = { variant",
        ),
    );
    assert!(e.contains("writes") && e.contains("stripe"), "{e}");
    let e = err(striped("{ connections = 2 }", tcp, None, 0.0, "1s")
        .replace("tcp = { variant = \"sack\" }\n", ""));
    assert!(e.contains("stripe"), "{e}");
}

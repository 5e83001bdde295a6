//! pcap capture checked by tshark: files parse cleanly, per-flow counts and TCP
//! retransmissions match qoslab's own counters, DSCP marks are on the wire.
//!
//! Skips (with a printed reason) when `tshark` is not installed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use qoslab::stats::{Column, RunResult};
use qoslab::world::FlowApp;
use qoslab::RunOptions;

use super::common::*;

/// Runs tshark on `file` with checksum validation on; `None` if tshark is missing.
fn tshark(file: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("tshark")
        .args([
            "-o",
            "ip.check_checksum:TRUE",
            "-o",
            "tcp.check_checksum:TRUE",
            "-o",
            "udp.check_checksum:TRUE",
            "-n",
            "-r",
        ])
        .arg(file)
        .args(args)
        .output();
    match out {
        Ok(o) => {
            assert!(
                o.status.success(),
                "tshark failed on {}: {}",
                file.display(),
                String::from_utf8_lossy(&o.stderr)
            );
            Some(String::from_utf8(o.stdout).unwrap())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => panic!("cannot run tshark: {e}"),
    }
}

fn have_tshark() -> bool {
    let ok = Command::new("tshark").arg("-v").output().is_ok();
    if !ok {
        eprintln!("SKIPPED: tshark is not installed (apt-get install tshark)");
    }
    ok
}

fn out_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("qoslab-capture-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// No malformed packets and no expert info of severity error (bad checksums included).
fn assert_clean(file: &Path) {
    let bad = tshark(
        file,
        &["-Y", "_ws.malformed || _ws.expert.severity >= error"],
    )
    .unwrap();
    assert!(bad.trim().is_empty(), "{}:\n{bad}", file.display());
}

/// Lines of `-T fields` output matching `filter`, counted per distinct line.
fn histogram(file: &Path, filter: &str, fields: &[&str]) -> BTreeMap<String, u64> {
    let mut args = vec!["-Y", filter, "-T", "fields"];
    for f in fields {
        args.push("-e");
        args.push(f);
    }
    let out = tshark(file, &args).unwrap();
    let mut h = BTreeMap::new();
    for l in out.lines() {
        *h.entry(l.trim().to_string()).or_insert(0) += 1;
    }
    h
}

fn capture_rows(r: &RunResult) -> Vec<(i64, String, String, i64)> {
    let t = &r.tables["captures"];
    let (Some(Column::Int(cap)), Some(Column::Str(file)), Some(Column::Str(flow))) =
        (t.get("capture"), t.get("file"), t.get("flow"))
    else {
        panic!("captures table columns");
    };
    let Some(Column::Int(pk)) = t.get("packets") else {
        panic!()
    };
    (0..cap.len())
        .map(|i| (cap[i], file[i].clone(), flow[i].clone(), pk[i]))
        .collect()
}

fn tcp_flow(i: usize, tcp: &str, extra: &str) -> String {
    format!("[[flow]]\nname = \"f{i}\"\nfrom = \"s{i}\"\nto = \"d{i}\"\n{extra}tcp = {tcp}\n")
}

/// Two TCP flows over a lossy 2 Mb/s bottleneck: f0 NewReno without handshake, f1 SACK
/// with SYN/FIN; finite transfers that complete, so nothing is in flight at the end.
fn lossy_dumbbell(captures: &str) -> String {
    let flows = tcp_flow(
        0,
        "{ variant = \"newreno\", max_window = 40 }",
        "bytes = \"400KB\"\n",
    ) + &tcp_flow(
        1,
        "{ variant = \"sack\", max_window = 40, handshake = true }",
        "bytes = \"300KB\"\n",
    );
    dumbbell(
        2,
        "2Mbps",
        "{ kind = \"droptail\", limit = 25 }",
        &flows,
        "",
    )
    .replace("duration = \"10s\"", "duration = \"60s\"")
    .replace(
        "delay = \"10ms\"\n",
        "delay = \"10ms\"\nloss_a_to_b = 0.02\n",
    ) + captures
}

#[test]
fn tshark_reads_a_lossy_tcp_dumbbell_and_agrees_with_the_counters() {
    if !have_tshark() {
        return;
    }
    // The sender host's view (data as sent, ACKs as received: one file, as tcpdump on
    // s0 would see it), and the bottleneck with both flows, cut to 96 bytes.
    let caps = "[[capture]]\niface = \"s0->r1\"\nfile = \"s0.pcap\"\n\
                [[capture]]\niface = \"r1->s0\"\ndirection = \"rx\"\nfile = \"s0.pcap\"\n\
                [[capture]]\niface = \"r1->r2\"\nsnaplen = 96\n";
    let text = lossy_dumbbell(caps);
    let sc = parse(&text);
    let dir = out_dir("dumbbell");
    let r = qoslab::run_with(
        &sc,
        &RunOptions {
            pcap_dir: Some(dir.clone()),
            ..Default::default()
        },
    )
    .unwrap();
    // The same run without captures, for qoslab's own counters.
    let w = run_world(&text);
    let FlowApp::Tcp(t0) = &w.flows[0].app else {
        panic!()
    };
    assert!(t0.snd.is_done(), "the transfer must complete");
    let rtx = t0.snd.stats().retransmits;
    assert!(rtx > 5, "the loss must have bitten: {rtx} retransmissions");

    let s0 = dir.join("s0.pcap");
    let bn = dir.join("r1-r2.pcap");
    for f in [&s0, &bn] {
        assert_clean(f);
    }

    // Per-flow packet counts: tshark's (by port pair) = the capture's = the network's.
    let rows = capture_rows(&r);
    let ports = |i: usize| format!("{}\t{}", 1024 + i, 5001);
    let data = histogram(&bn, "tcp.dstport == 5001", &["tcp.srcport", "tcp.dstport"]);
    for (i, name) in ["f0", "f1"].iter().enumerate() {
        let ours = rows
            .iter()
            .find(|x| x.0 == 2 && x.2 == *name)
            .map(|x| x.3)
            .unwrap();
        assert_eq!(data[&ports(i)] as i64, ours, "{name} on r1->r2");
    }
    let bn_iface = w.ifaces.iter().find(|f| f.name == "r1->r2").unwrap();
    let total: i64 = rows.iter().filter(|x| x.0 == 2).map(|x| x.3).sum();
    assert_eq!(total as u64, bn_iface.counters.departed);
    // At the sender: every data packet f0 sent went out on s0->r1 (finite transfer).
    let s0_data = rows.iter().find(|x| x.0 == 0).unwrap().3;
    assert_eq!(s0_data as u64, w.flows[0].counters.pkts_sent);
    let s0_all = histogram(&s0, "tcp", &["tcp.dstport"]);
    assert_eq!(s0_all["5001"] as i64, s0_data);
    assert_eq!(
        s0_all["1024"] as i64,
        rows.iter().find(|x| x.0 == 1).unwrap().3,
        "ACKs received by s0"
    );

    // Retransmissions: tshark's TCP analysis finds exactly qoslab's.
    let flagged = histogram(
        &s0,
        "tcp.analysis.retransmission || tcp.analysis.fast_retransmission",
        &["tcp.srcport"],
    );
    eprintln!("f0: {rtx} retransmissions; tshark flags {flagged:?}");
    assert_eq!(
        flagged.get("1024").copied().unwrap_or(0),
        rtx,
        "{flagged:?}"
    );
    let ooo = histogram(&s0, "tcp.analysis.out_of_order", &["tcp.srcport"]);
    assert!(ooo.is_empty(), "{ooo:?}");

    // The handshake flow shows SYN, SYN-ACK and FIN on the bottleneck and its reverse.
    let syn = histogram(
        &bn,
        "tcp.flags.syn == 1 || tcp.flags.fin == 1",
        &["tcp.flags"],
    );
    assert!(syn.keys().any(|k| k == "0x0002"), "{syn:?}");
    assert!(syn.keys().any(|k| k == "0x0011"), "{syn:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dscp_from_a_trtcm_marker_is_on_the_wire() {
    if !have_tshark() {
        return;
    }
    let flows = tcp_flow(0, "{ variant = \"newreno\", max_window = 60 }", "");
    let cond = "[[conditioner]]\nat = \"s0\"\nstages = [ { kind = \"trtcm\", cir = \"500kbps\", cbs = \"3KB\", pir = \"1Mbps\", pbs = \"6KB\" } ]\n";
    let caps = "[[capture]]\niface = \"r1->r2\"\nflow = \"f0\"\n";
    let text = dumbbell(
        1,
        "2Mbps",
        "{ kind = \"droptail\", limit = 30 }",
        &flows,
        "",
    )
    .replace("duration = \"10s\"", "duration = \"5s\"")
        + cond
        + caps;
    let sc = parse(&text);
    let dir = out_dir("dscp");
    qoslab::run_with(
        &sc,
        &RunOptions {
            pcap_dir: Some(dir.clone()),
            ..Default::default()
        },
    )
    .unwrap();
    let file = dir.join("r1-r2.f0.pcap");
    assert_clean(&file);
    let h = histogram(&file, "ip", &["ip.dsfield.dscp"]);
    // AF11 / AF12 / AF13 for green / yellow / red: all three colours occur.
    for d in ["10", "12", "14"] {
        assert!(h.get(d).copied().unwrap_or(0) > 10, "{h:?}");
    }
    assert_eq!(h.len(), 3, "{h:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn capture_errors_name_the_key_and_the_file() {
    let base = dumbbell(
        1,
        "2Mbps",
        "{ kind = \"droptail\", limit = 30 }",
        &tcp_flow(0, "{}", ""),
        "",
    );
    for (cap, key) in [
        ("iface = \"r1->r9\"", "capture[0].iface"),
        ("iface = \"r1->r2\"\nflow = \"nope\"", "capture[0].flow"),
        ("iface = \"r1->r2\"\nsnaplen = 10", "capture[0].snaplen"),
        (
            "iface = \"r1->r2\"\nfile = \"../x.pcap\"",
            "capture[0].file",
        ),
        (
            "iface = \"r1->r2\"\ndirection = \"up\"",
            "capture[0].direction",
        ),
    ] {
        let text = format!("{base}[[capture]]\n{cap}\n");
        let e = qoslab::check_str(&text, qoslab::scenario::Format::Toml).unwrap_err();
        assert!(e.to_string().starts_with(key), "{key}: {e}");
    }
    // An unwritable directory is an error value, before the run starts.
    let text = format!("{base}[[capture]]\niface = \"r1->r2\"\n");
    let sc = parse(&text);
    let file = out_dir("notadir");
    std::fs::write(&file, "x").unwrap();
    let e = qoslab::run_with(
        &sc,
        &RunOptions {
            pcap_dir: Some(file.clone()),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(matches!(e, qoslab::error::Error::Capture(_)), "{e}");
    let _ = std::fs::remove_file(&file);
}

#[test]
fn a_run_with_captures_is_the_same_run() {
    let flows = tcp_flow(0, "{ variant = \"sack\" }", "") + &tcp_flow(1, "{}", "");
    let base = dumbbell(
        2,
        "2Mbps",
        "{ kind = \"droptail\", limit = 20 }",
        &flows,
        "",
    );
    let with = format!("{base}[[capture]]\niface = \"r1->r2\"\ndirection = \"both\"\n");
    // Captures see every hop, so the run has no cut-through: compare with one without.
    let every_hop = RunOptions {
        every_hop: true,
        ..Default::default()
    };
    let a = qoslab::run_with(&parse(&base), &every_hop).unwrap();
    let dir = out_dir("same");
    let b = qoslab::run_with(
        &parse(&with),
        &RunOptions {
            pcap_dir: Some(dir.clone()),
            ..Default::default()
        },
    )
    .unwrap();
    let json = |r: &RunResult| serde_json::to_string(&r.tables["flows"]).unwrap();
    assert_eq!(json(&a), json(&b));
    assert_eq!(a.summary["events"], b.summary["events"]);
    let len = std::fs::metadata(dir.join("r1-r2.both.pcap"))
        .unwrap()
        .len();
    assert!(len > 24, "{len}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn captures_write_each_nodes_configured_address() {
    // s0 has a configured address, d0 keeps the default (10.0.0.0 + index + 1).
    let text = dumbbell(
        1,
        "10Mbps",
        "{ kind = \"droptail\" }",
        &cbr(0, "0.1Mbps", 500, 0.0),
        "",
    )
    .replace("duration = \"10s\"", "duration = \"0.2s\"")
    .replace(
        "name = \"s0\"\n",
        "name = \"s0\"\naddress = \"192.168.4.7\"\n",
    ) + "[[capture]]\niface = \"r1->r2\"\nfile = \"a.pcap\"\n";
    let sc = parse(&text);
    let d0 = sc.node.iter().position(|n| n.name == "d0").unwrap() as u8;
    let dir = out_dir("addresses");
    qoslab::run_with(
        &sc,
        &RunOptions {
            pcap_dir: Some(dir.clone()),
            ..Default::default()
        },
    )
    .unwrap();
    let b = std::fs::read(dir.join("a.pcap")).unwrap();
    // pcap header 24 B, record header 16 B, Ethernet 14 B; IPv4 source at 12, dest at 16.
    let ip = 24 + 16 + 14;
    assert_eq!(&b[ip + 12..ip + 16], &[192, 168, 4, 7]);
    assert_eq!(&b[ip + 16..ip + 20], &[10, 0, 0, d0 + 1]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The timestamps [ns] and stored lengths of a pcap file's records.
fn records(file: &Path) -> Vec<(u64, u32)> {
    let b = std::fs::read(file).unwrap();
    let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
    let mut out = vec![];
    let mut i = 24;
    while i < b.len() {
        let ns = u64::from(u32_at(i)) * 1_000_000_000 + u64::from(u32_at(i + 4));
        let incl = u32_at(i + 8);
        out.push((ns, incl));
        i += 16 + incl as usize;
    }
    assert_eq!(i, b.len(), "{}: a record runs past the end", file.display());
    out
}

#[test]
fn capture_start_stop_and_max_bytes_bound_the_file() {
    let flows = tcp_flow(0, "{ variant = \"sack\" }", "");
    let base = dumbbell(
        1,
        "2Mbps",
        "{ kind = \"droptail\", limit = 20 }",
        &flows,
        "",
    );
    // Whole run, 2–3 s only, and 2–3 s with room for exactly 5 records of 100 bytes
    // plus 50 bytes (not enough for a sixth).
    let caps = "[[capture]]\niface = \"r1->r2\"\nsnaplen = 100\nfile = \"all.pcap\"\n\
                [[capture]]\niface = \"r1->r2\"\nsnaplen = 100\nfile = \"win.pcap\"\n\
                start = \"2s\"\nstop = \"3s\"\n\
                [[capture]]\niface = \"r1->r2\"\nsnaplen = 100\nfile = \"cap.pcap\"\n\
                start = \"2s\"\nstop = \"3s\"\nmax_bytes = 654\n";
    let dir = out_dir("window");
    let r = qoslab::run_with(
        &parse(&format!("{base}{caps}")),
        &RunOptions {
            pcap_dir: Some(dir.clone()),
            ..Default::default()
        },
    )
    .unwrap();
    let all = records(&dir.join("all.pcap"));
    let win = records(&dir.join("win.pcap"));
    let cap = records(&dir.join("cap.pcap"));
    let in_window: Vec<_> = all
        .iter()
        .filter(|(t, _)| (2_000_000_000..3_000_000_000).contains(t))
        .copied()
        .collect();
    assert!(in_window.len() > 20 && in_window.len() < all.len());
    assert_eq!(win, in_window);
    assert!(cap.iter().all(|&(_, incl)| incl == 100));
    assert_eq!(cap, in_window[..5].to_vec());
    assert_eq!(
        std::fs::metadata(dir.join("cap.pcap")).unwrap().len(),
        24 + 5 * 116
    );
    let t = &r.tables["captures"];
    let (Some(Column::Int(c)), Some(Column::Int(pk)), Some(Column::Int(sk))) =
        (t.get("capture"), t.get("packets"), t.get("skipped"))
    else {
        panic!("captures columns");
    };
    let row = c.iter().position(|&x| x == 2).unwrap();
    assert_eq!(pk[row], 5);
    assert_eq!(sk[row] as usize, in_window.len() - 5);
    assert!(sk
        .iter()
        .zip(c)
        .filter(|(_, &x)| x != 2)
        .all(|(&s, _)| s == 0));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn capture_window_and_limit_errors_name_the_key() {
    let base = dumbbell(
        1,
        "2Mbps",
        "{ kind = \"droptail\", limit = 20 }",
        &tcp_flow(0, "{}", ""),
        "",
    );
    for (extra, key) in [
        ("start = \"3s\"\nstop = \"2s\"\n", "capture[0].stop"),
        ("max_bytes = 10\n", "capture[0].max_bytes"),
    ] {
        let text = format!("{base}[[capture]]\niface = \"r1->r2\"\n{extra}");
        let e = qoslab::check_str(&text, qoslab::scenario::Format::Toml).unwrap_err();
        assert!(e.to_string().starts_with(key), "{key}: {e}");
    }
}

/// (ECN bits of the IP header, TCP sequence number, payload bytes) of every IPv4/TCP
/// packet in the pcap file at `path` (Ethernet link type, as qoslab writes).
fn ecn_seq_len(path: &Path) -> Vec<(u8, u32, usize)> {
    let b = std::fs::read(path).unwrap();
    let u32le = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap()) as usize;
    let mut out = Vec::new();
    let mut o = 24;
    while o + 16 <= b.len() {
        let incl = u32le(o + 8);
        let p = &b[o + 16..o + 16 + incl];
        o += 16 + incl;
        let ip = &p[14..];
        if ip[0] >> 4 != 4 || ip[9] != 6 {
            continue;
        }
        let ihl = (ip[0] & 0x0F) as usize * 4;
        let total = u16::from_be_bytes([ip[2], ip[3]]) as usize;
        let tcp = &ip[ihl..];
        let doff = (tcp[12] >> 4) as usize * 4;
        let seq = u32::from_be_bytes(tcp[4..8].try_into().unwrap());
        out.push((ip[1] & 0x03, seq, total - ihl - doff));
    }
    out
}

/// RFC 3168 §6.1.5: an ECN sender's retransmissions carry neither ECT codepoint; its
/// first transmissions carry ECT(0). Checked on the wire at the sender, for NewReno
/// (go-back after timeouts) and SACK with a handshake, over a 2 % lossy bottleneck.
#[test]
fn ecn_senders_never_set_ect_on_retransmissions() {
    let text = lossy_dumbbell("[[capture]]\niface = \"s0->r1\"\n[[capture]]\niface = \"s1->r1\"\n")
        .replace("max_window = 40", "max_window = 40, ecn = true");
    let dir = out_dir("ecn-rtx");
    qoslab::run_with(
        &parse(&text),
        &RunOptions {
            pcap_dir: Some(dir.clone()),
            ..Default::default()
        },
    )
    .unwrap();
    for (i, file) in ["s0-r1.pcap", "s1-r1.pcap"].iter().enumerate() {
        let mut seen = std::collections::HashSet::new();
        let (mut first, mut again) = (0, 0);
        for (ecn, seq, len) in ecn_seq_len(&dir.join(file)) {
            if len == 0 {
                assert_eq!(ecn, 0, "f{i}: a segment without data carries ECT");
                continue;
            }
            if seen.insert(seq) {
                first += 1;
                assert_eq!(ecn, 0b10, "f{i}: first transmission of {seq} not ECT(0)");
            } else {
                again += 1;
                assert_eq!(ecn, 0, "f{i}: retransmission of {seq} carries ECT");
            }
        }
        assert!(
            first > 100 && again > 5,
            "f{i}: {first} sent, {again} resent"
        );
    }
}

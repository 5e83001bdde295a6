//! Cut-through (`world::cut`) changes the event count and, where arrivals coincide to
//! the nanosecond, the order of simultaneous events; nothing else. Every result table
//! is the same byte for byte as with every router hop an event of its own, except in
//! P3's multi-domain scenarios, where equal-rate links make arrivals at different hosts
//! simultaneous and the other order leads to another run
//! (`validation/cut_through_ties.py` shows their aggregates' shares agree).

use std::path::{Path, PathBuf};

use qoslab::scenario::{self, Format, Scenario};
use qoslab::stats::RunResult;
use qoslab::RunOptions;

use super::common::*;

fn run(sc: &Scenario, every_hop: bool) -> RunResult {
    let opts = RunOptions {
        every_hop,
        ..Default::default()
    };
    qoslab::run_with(sc, &opts).unwrap()
}

/// Runs `sc` both ways: the events (cut-through, every hop) if every table and the hop
/// count agree, else which differ.
fn compare(sc: &Scenario) -> Result<(u64, u64), String> {
    let (cut, every) = (run(sc, false), run(sc, true));
    let differ: Vec<&String> = (every.tables.iter())
        .filter(|(t, table)| {
            serde_json::to_string(table).unwrap() != serde_json::to_string(&cut.tables[*t]).unwrap()
        })
        .map(|(t, _)| t)
        .collect();
    let get = |r: &RunResult, k: &str| r.summary[k].as_u64().unwrap();
    if !differ.is_empty() || cut.tables.len() != every.tables.len() {
        return Err(format!("tables {differ:?} differ with cut-through"));
    }
    if get(&cut, "packet_hops") != get(&every, "packet_hops") {
        return Err("packet hops differ with cut-through".into());
    }
    Ok((get(&cut, "events"), get(&every, "events")))
}

/// [`compare`], failing the test if anything differs.
fn both_ways(name: &str, sc: &Scenario) -> (u64, u64) {
    compare(sc).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn shipped_scenarios_give_the_same_tables_with_fewer_events() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files: Vec<PathBuf> = ["examples", "p0", "p1", "p2", "p3", "p4"]
        .iter()
        .flat_map(|d| std::fs::read_dir(repo.join("scenarios").join(d)).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    let (mut fewer, mut total, mut failed) = (0, 0, Vec::new());
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let text = text.split("\n[sweep]").next().unwrap();
        if text.lines().any(|l| {
            let l = l.trim_start();
            l.starts_with("count =") || l.starts_with("group =")
        }) {
            continue;
        }
        let mut sc = scenario::parse(text, Format::Toml).unwrap();
        sc.duration = sc.duration.min(qoslab::time::Dur::from_secs(12));
        sc.warmup = sc.warmup.min(qoslab::time::Dur::from_secs(2));
        let name = f.display().to_string();
        let (cut, every) = match compare(&sc) {
            Ok(events) => events,
            Err(e) => {
                let stem = f.file_stem().unwrap().to_string_lossy();
                if !(name.contains("/p3/") && stem.starts_with("md-")) {
                    failed.push(format!("{name}: {e}"));
                }
                continue;
            }
        };
        assert!(cut <= every, "{}: {cut} > {every}", f.display());
        fewer += (cut < every) as usize;
        total += 1;
    }
    assert!(failed.is_empty(), "{failed:?}");
    assert!(total >= 12 && fewer * 2 > total, "{fewer} of {total} cut");
}

/// Eight TCP flows with equal RTTs (simultaneous events abound), with and without
/// random loss on the bottleneck (with it, no transmission is committed ahead there),
/// loss on one receiver's access link (no packet cuts through to it), a warm-up ending
/// mid-run, under DropTail, RED and RED marking ECN.
#[test]
fn tcp_dumbbells_with_ties_loss_and_warmup_agree() {
    for (queue, ecn) in [
        ("{ kind = \"droptail\", limit = 20 }", false),
        (
            "{ kind = \"red\", limit = 40, min_th = 5, max_th = 15 }",
            false,
        ),
        (
            "{ kind = \"red\", limit = 40, min_th = 5, max_th = 15, ecn = true }",
            true,
        ),
    ] {
        let flows: String = (0..8)
            .map(|i| {
                format!(
                    "[[flow]]\nname = \"t{i}\"\nfrom = \"s{i}\"\nto = \"d{i}\"\ntcp = {{ variant = \"newreno\", ecn = {ecn} }}\n"
                )
            })
            .collect();
        for loss in [0.0, 0.002] {
            let text = dumbbell(8, "5Mbps", queue, &flows, "warmup = \"3s\"").replace(
                "delay = \"10ms\"\nqueue",
                &format!("delay = \"10ms\"\nloss = {loss}\nqueue"),
            );
            let (cut, every) = both_ways(queue, &parse(&text));
            // Data at the far router and ACKs at the near one, and (without loss) the
            // bottleneck's transmission ends: a third fewer at least.
            assert!(
                (cut as f64) < 0.75 * every as f64,
                "{queue}, loss {loss}: {cut} vs {every}"
            );
            let lossy = text.replacen(
                "[[link]]\na = \"r2\"\nb = \"d0\"\nrate = \"10Mbps\"\ndelay = \"1ms\"\n",
                "[[link]]\na = \"r2\"\nb = \"d0\"\nrate = \"10Mbps\"\ndelay = \"1ms\"\nloss = 0.01\n",
                1,
            );
            assert_ne!(lossy, text);
            both_ways("lossy access", &parse(&lossy));
        }
    }
}

/// With cut-through off the world handles every hop: one CBR flow over the dumbbell
/// costs three arrivals per packet; with it on, two (the near router, fed by the
/// sender's link only, is cut through; a packet cuts through one router at most).
#[test]
fn one_flow_skips_the_far_routers_arrival() {
    let text = dumbbell(
        1,
        "5Mbps",
        "{ kind = \"droptail\", limit = 10 }",
        &cbr(0, "1Mbps", 1000, 0.0),
        "",
    )
    .replace("duration = \"10s\"", "duration = \"1s\"");
    let sc = parse(&text);
    let (cut, every) = both_ways("cbr", &sc);
    // 125 packets a second, all delivered within the second but the last few.
    let r = run(&sc, true);
    let hops = r.summary["packet_hops"].as_u64().unwrap();
    assert!(hops > 300, "{hops}");
    assert!(every - cut >= hops / 3 - 2, "{cut} vs {every}, {hops} hops");
}

/// A TCP dumbbell whose access links run at exactly ten times the bottleneck (with the
/// 2-byte framing on every link, as `validation/ns3_peer.py` builds it): in slow start
/// every tenth arrival at the bottleneck comes at the very nanosecond a packet starts
/// there, so which of the two the ordinary path handles first decides what RED's
/// average sees. One flow per `(RTT [ms], start [s])`.
fn tenfold_dumbbell(flows: &[(u32, f64)], queue: &str, secs: u32) -> String {
    let tcp = "{ variant = \"sack\", mss = 1460, halve = \"pipe\", max_window = 100000, \
               initial_window = 10, delayed_ack = true, delack_timeout = \"200ms\", min_rto = \"200ms\", granularity = \"1ms\" }";
    let mut s = format!(
        "name = \"tenfold\"\nduration = \"{secs}s\"\nseed = 1\n\
         [[node]]\nname = \"r1\"\nkind = \"router\"\n[[node]]\nname = \"r2\"\nkind = \"router\"\n"
    );
    for (i, &(rtt, start)) in flows.iter().enumerate() {
        s += &format!(
            "[[node]]\nname = \"s{i}\"\n[[node]]\nname = \"d{i}\"\n\
             [[link]]\na = \"s{i}\"\nb = \"r1\"\nrate = \"100Mbps\"\ndelay = \"{}ms\"\nframing = 2\n\
             queue = {{ kind = \"droptail\", limit = 1000 }}\n\
             [[link]]\na = \"r2\"\nb = \"d{i}\"\nrate = \"100Mbps\"\ndelay = \"1ms\"\nframing = 2\n\
             queue = {{ kind = \"droptail\", limit = 1000 }}\n\
             [[flow]]\nname = \"f{i}\"\nfrom = \"s{i}\"\nto = \"d{i}\"\nstart = {start}\ntcp = {tcp}\n",
            rtt / 2 - 3,
        );
    }
    s + &format!(
        "[[link]]\na = \"r1\"\nb = \"r2\"\nrate = \"10Mbps\"\ndelay = \"2ms\"\nframing = 2\nqueue = {queue}\n"
    )
}

/// RED and DropTail bottlenecks commit their transmissions ahead (`world::ahead`) and
/// run no `TxDone` event, yet every table is the ordinary path's, at the arrivals that
/// coincide with a start too: each committed packet counts as started in the event
/// order (a start-time rule alone, or a `TxDone` key taken only for admitted packets,
/// changes these runs within two simulated seconds), with RED's early drops and ECN
/// marks and an overflowing DropTail.
#[test]
fn committed_transmissions_start_in_the_ordinary_event_order() {
    let red = "{ kind = \"red\", limit = 100, min_th = 5, max_th = 15, max_p = 0.1, w_q = 0.002, \
               gentle = true, mean_pkt_size = 1500, wait = true";
    // Two of `validation/ns3_bench.py`'s cases (their RTTs and start times).
    let four = [
        (20, 0.236048),
        (200, 0.103166),
        (20, 0.396058),
        (200, 0.154972),
    ];
    let six = [
        (10, 0.79334),
        (30, 0.821954),
        (90, 0.485035),
        (150, 0.261621),
        (270, 0.000452),
        (10, 0.662819),
    ];
    for (flows, queue) in [
        (&four[..], format!("{red} }}")),
        (&six[..], format!("{red} }}")),
        (&six[..], format!("{red}, ecn = true }}")),
        (&four[..], "{ kind = \"droptail\", limit = 20 }".to_string()),
    ] {
        let mut text = tenfold_dumbbell(flows, &queue, 10);
        if queue.contains("ecn") {
            text = text.replace("variant = \"sack\",", "variant = \"sack\", ecn = true,");
        }
        let sc = parse(&text);
        let (cut, every) = both_ways(&queue, &sc);
        let r = run(&sc, false);
        assert_eq!(r.summary["events_by_kind"]["tx_done"], 0, "{queue}");
        let e = run(&sc, true);
        let tx_done = e.summary["events_by_kind"]["tx_done"].as_u64().unwrap();
        assert!(tx_done > 1000, "{queue}: {tx_done}");
        assert!(
            cut + tx_done <= every,
            "{queue}: {cut} + {tx_done} > {every}"
        );
    }
}

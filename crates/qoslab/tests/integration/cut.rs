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

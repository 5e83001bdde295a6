//! DiffServ end to end: edge markers colour packets, multi-colour RED protects green.

use super::common::*;

/// Two Poisson flows of 0.8 Mb/s into 1 Mb/s; flow 0 is marked by a trTCM whose CIR
/// covers its whole rate (all green), flow 1 by one with a small CIR/PIR (mostly red).
fn marked(queue: &str) -> qoslab::world::World {
    marked_with(queue, "", "")
}

/// As [`marked`], with `codepoints` (e.g. `, dscp = { green = 0 }`) added to both markers
/// and `nodes` (e.g. a router's `dscp_map`) to the scenario's top-level tables.
fn marked_with(queue: &str, codepoints: &str, nodes: &str) -> qoslab::world::World {
    let poisson = |i, r| cbr(i, r, 1000, 0.0).replace("jitter = 0", "poisson = true");
    let flows = poisson(0, "0.8Mbps") + &poisson(1, "0.8Mbps");
    let cond = |host: &str, cir: &str, pir: &str| {
        format!(
            "[[conditioner]]\nat = \"{host}\"\nstages = [ {{ kind = \"trtcm\", cir = \"{cir}\", cbs = 3000, pir = \"{pir}\", pbs = 3000{codepoints} }} ]\n"
        )
    };
    let text = dumbbell(
        2,
        "1Mbps",
        queue,
        &(flows + &cond("s0", "2Mbps", "3Mbps") + &cond("s1", "100kbps", "200kbps")),
        "warmup = \"2s\"\n",
    )
    .replace("duration = \"10s\"", "duration = \"60s\"")
    .replace(
        "name = \"r1\"\nkind = \"router\"\n",
        &format!("name = \"r1\"\nkind = \"router\"\n{nodes}"),
    );
    run_world(&text)
}

fn goodput(w: &qoslab::world::World, i: usize) -> f64 {
    w.flows[i].counters_since(&w.warm, i).goodput_bytes as f64 * 8.0 / 58.0
}

#[test]
fn rio_protects_green_traffic_droptail_does_not() {
    let rio = marked("{ kind = \"rio_c\", limit = 100 }");
    let (g0, g1) = (goodput(&rio, 0), goodput(&rio, 1));
    // Green flow gets (almost) all it offers (0.8 Mb/s × 972/1000 payload); red takes the rest.
    assert!(g0 > 0.95 * 777_600.0, "green {g0}");
    assert!(g1 < 0.3 * 777_600.0, "red {g1}");
    let dt = marked("{ kind = \"droptail\", limit = 100 }");
    let (d0, d1) = (goodput(&dt, 0), goodput(&dt, 1));
    // DropTail ignores colour: equal offered loads share about equally.
    assert!((d0 / d1 - 1.0).abs() < 0.1, "{d0} {d1}");
}

#[test]
fn rio_acts_on_the_dscp_on_the_wire() {
    // Both markers write DSCP 0 for every colour: on the wire the two flows look the
    // same (best effort, green), so RIO-C must treat them alike, as DropTail does.
    let same = marked_with(
        "{ kind = \"rio_c\", limit = 100 }",
        ", dscp = { green = 0, yellow = 0, red = \"BE\" }",
        "",
    );
    let (a, b) = (goodput(&same, 0), goodput(&same, 1));
    assert!((a / b - 1.0).abs() < 0.1, "{a} {b}");
    // The bottleneck router's table swaps AF11 and AF13: the flow marked green (AF11)
    // is now dropped first, and the mostly-red flow (AF13) is protected.
    let swapped = marked_with(
        "{ kind = \"rio_c\", limit = 100 }",
        "",
        "dscp_map = [ { dscp = \"AF11\", colour = \"red\" }, { dscp = 14, colour = \"green\" } ]\n",
    );
    let (a, b) = (goodput(&swapped, 0), goodput(&swapped, 1));
    assert!(a < 0.6 * b, "AF11 flow {a}, AF13 flow {b}");
}

/// Two Poisson flows of 0.8 Mb/s into 1 Mb/s RIO-C, with `keys` added to flow `i`'s
/// table and `extra` (conditioners) appended; returns the world after 60 s.
fn two_flows(keys: [&str; 2], queue: &str, extra: &str) -> qoslab::world::World {
    let flow = |i: usize| {
        cbr(i, "0.8Mbps", 1000, 0.0).replace("jitter = 0", "poisson = true") + keys[i] + "\n"
    };
    let text = dumbbell(
        2,
        "1Mbps",
        queue,
        &(flow(0) + &flow(1) + extra),
        "warmup = \"2s\"\n",
    )
    .replace("duration = \"10s\"", "duration = \"60s\"");
    run_world(&text)
}

#[test]
fn flow_dscp_key_and_set_dscp_stage_drive_rio() {
    let rio = "{ kind = \"rio_c\", limit = 100 }";
    // Sources write the DSCP: AF13 (red) loses to AF11 (green).
    let w = two_flows(["dscp = \"AF13\"", "dscp = 10"], rio, "");
    let (red, green) = (goodput(&w, 0), goodput(&w, 1));
    assert!(
        green > 0.95 * 777_600.0 && red < 0.3 * 777_600.0,
        "{red} {green}"
    );
    // A re-marking stage at s0's egress turns AF13 into AF11 and the other host's
    // AF11 into AF13 (only listed codepoints change): the roles swap.
    let remark = "[[conditioner]]\nat = \"s0\"\nstages = [ { kind = \"set_dscp\", dscp = \"AF11\", only = [\"AF13\"] } ]\n\
                  [[conditioner]]\nat = \"s1\"\nstages = [ { kind = \"set_dscp\", dscp = \"AF13\" } ]\n";
    let w = two_flows(["dscp = \"AF13\"", "dscp = 10"], rio, remark);
    let (a, b) = (goodput(&w, 0), goodput(&w, 1));
    assert!(a > 0.95 * 777_600.0 && b < 0.3 * 777_600.0, "{a} {b}");
}

#[test]
fn filters_by_flow_name_port_and_dscp_set() {
    // A policer at r1 drops everything a rule takes (1 kb/s, one packet of burst).
    let police = |filter: &str| {
        format!(
            "[[conditioner]]\nat = \"r1\"\nstages = [ {{ kind = \"policy\", rules = [ {{ filter = {filter}, \
             profile = {{ rate = \"1kbps\", burst = 1000 }}, action = \"police\" }} ] }} ]\n"
        )
    };
    let dt = "{ kind = \"droptail\", limit = 100 }";
    let keys = [
        "src_port = 7000\ndst_port = 80\ndscp = \"EF\"",
        "ack_dscp = \"CS1\"",
    ];
    for (filter, hit) in [
        ("{ flow = \"f1\" }", 1),
        ("{ src_port = 7000, dst_port = 80 }", 0),
        ("{ src_port = 1025 }", 1), // the default: 1024 + index in the file
        ("{ dscp = [\"EF\", \"CS7\"] }", 0),
        ("{ dscp = [\"AF11\", 8] }", 2), // neither flow's packets
    ] {
        let w = two_flows(keys, dt, &police(filter));
        for i in 0..2 {
            let g = goodput(&w, i);
            if i == hit {
                assert!(g < 10_000.0, "{filter}: flow {i} passed {g}");
            } else {
                assert!(g > 300_000.0, "{filter}: flow {i} policed {g}");
            }
        }
    }
}

/// Three CBR flows of 0.6 Mb/s (EF, AF11, BE) into 1 Mb/s with per-class queues.
fn three_classes(queue: &str) -> [f64; 3] {
    let flows: String = ["dscp = \"EF\"", "dscp = \"AF11\"", ""]
        .iter()
        .enumerate()
        .map(|(i, k)| cbr(i, "0.6Mbps", 1000, 0.1) + k + "\n")
        .collect();
    let text = dumbbell(3, "1Mbps", queue, &flows, "warmup = \"2s\"\n")
        .replace("duration = \"10s\"", "duration = \"30s\"");
    let w = run_world(&text);
    [0, 1, 2].map(|i| w.flows[i].counters_since(&w.warm, i).goodput_bytes as f64 * 8.0 / 28.0)
}

#[test]
fn priority_and_weighted_classes_share_a_bottleneck() {
    // Payload share of the wire: 972 of 1000 bytes.
    let wire = 1e6 * 0.972;
    for sched in ["drr", "wfq", "wrr"] {
        let g = three_classes(&format!(
            "{{ kind = \"classes\", scheduler = \"{sched}\", classes = [ \
             {{ name = \"ef\", dscp = [\"EF\"], priority = true, queue = {{ kind = \"droptail\", limit = 10 }} }}, \
             {{ name = \"af1\", phb = \"AF1\", weight = 3, queue = {{ kind = \"rio_c\" }} }}, \
             {{ name = \"be\", weight = 1 }} ] }}"
        ));
        // EF gets all it offers; AF and BE split the remaining 0.4 Mb/s 3 : 1.
        assert!((g[0] / (0.6 * wire) - 1.0).abs() < 0.01, "{sched} EF {g:?}");
        assert!((g[1] / (0.3 * wire) - 1.0).abs() < 0.03, "{sched} AF {g:?}");
        assert!((g[2] / (0.1 * wire) - 1.0).abs() < 0.05, "{sched} BE {g:?}");
    }
    // EF rate-limited to 0.2 Mb/s: the excess is policed, the rest shared 3 : 1.
    let g = three_classes(
        "{ kind = \"classes\", classes = [ \
         { name = \"ef\", dscp = [\"EF\"], priority = true, rate = \"200kbps\", burst = 2000 }, \
         { name = \"af1\", dscp = [\"AF11\"], weight = 3 }, { name = \"be\" } ] }",
    );
    assert!((g[0] / (0.2 * wire) - 1.0).abs() < 0.02, "EF {g:?}");
    assert!((g[1] / (0.6 * wire) - 1.0).abs() < 0.02, "AF {g:?}");
    assert!((g[2] / (0.2 * wire) - 1.0).abs() < 0.05, "BE {g:?}");
}

#[test]
fn meters_by_input_interface_see_one_direction_only() {
    // f0 sends s0 → d0 and f1 sends d1 → s1 (the reverse direction through r1), each
    // 0.4 Mb/s. A 0.5 Mb/s policer `at = "r1"` sees both directions (0.8 Mb/s) and
    // drops; the same policer on `iface_in = "s0->r1"` sees f0 only and drops nothing.
    let flows = cbr(0, "0.4Mbps", 1000, 0.0)
        + "[[flow]]\nname = \"f1\"\nfrom = \"d1\"\nto = \"s1\"\ncbr = { rate = \"0.4Mbps\", size = 1000 }\n";
    let run = |place: &str| {
        let cond = format!(
            "[[conditioner]]\n{place}\nstages = [ {{ kind = \"token_bucket\", rate = \"0.5Mbps\", depth = 3000, action = \"police\" }} ]\n"
        );
        let text = dumbbell(
            2,
            "10Mbps",
            "{ kind = \"droptail\" }",
            &(flows.clone() + &cond),
            "",
        );
        let w = run_world(&text);
        (w.flows[0].counters.drops, w.flows[1].counters.drops)
    };
    let (a, b) = run("at = \"r1\"");
    assert!(a > 50 && b > 50, "at r1: {a} {b}");
    assert_eq!(run("iface_in = \"s0->r1\""), (0, 0));
    // On the link the reverse flow arrives over, it sees f1 alone (0.4 Mb/s) and drops
    // nothing either.
    let (a, b) = run("iface_in = \"r2->r1\"");
    assert_eq!((a, b), (0, 0));
}

#[test]
fn classes_table_counts_per_class_and_drops_by_colour() {
    use qoslab::stats::Column;
    // AF1 takes a trTCM-marked flow (mostly red) and an unmarked flow (AF11 at the
    // source, green), both 0.8 Mb/s, into RIO-C; BE is idle. Only red is dropped.
    let flows = cbr(0, "0.8Mbps", 1000, 0.0).replace("jitter = 0", "poisson = true")
        + &cbr(1, "0.8Mbps", 1000, 0.0).replace("jitter = 0", "poisson = true")
        + "dscp = \"AF11\"\n"
        + "[[conditioner]]\nat = \"s0\"\nstages = [ { kind = \"trtcm\", cir = \"100kbps\", cbs = 3000, pir = \"200kbps\", pbs = 3000 } ]\n";
    let queue = "{ kind = \"classes\", classes = [ { name = \"af1\", phb = \"AF1\", queue = { kind = \"rio_c\" } }, { name = \"be\" } ] }";
    let text = dumbbell(2, "1Mbps", queue, &flows, "warmup = \"2s\"\n")
        .replace("duration = \"10s\"", "duration = \"30s\"");
    let r = qoslab::run(&parse(&text)).unwrap();
    let t = &r.tables["classes"];
    // `queue` sets both directions of the bottleneck: two classes each.
    assert_eq!(t.rows(), 4);
    assert_eq!(t.get("iface").unwrap().str_at(2), Some("r2->r1"));
    let col = |n: &str| match t.get(n).unwrap() {
        Column::Int(v) => v.clone(),
        other => panic!("{n}: {other:?}"),
    };
    assert_eq!(t.get("iface").unwrap().str_at(0), Some("r1->r2"));
    assert_eq!(t.get("class").unwrap().str_at(1), Some("be"));
    let (arr, dep, drp) = (col("arrived"), col("departed"), col("dropped"));
    // After the warm-up, at most the packets queued at either end are unaccounted.
    assert!(
        (arr[0] - dep[0] - drp[0]).abs() <= 100,
        "{arr:?} {dep:?} {drp:?}"
    );
    assert_eq!((arr[1], drp[2], drp[3]), (0, 0, 0));
    assert_eq!(col("dropped_green")[0], 0);
    assert!(col("dropped_red")[0] > 100, "{:?}", col("dropped_red"));
    assert_eq!(
        col("dropped_green")[0] + col("dropped_yellow")[0] + col("dropped_red")[0],
        drp[0]
    );
    assert_eq!(col("dropped_none")[0], 0, "AF codepoints all have a colour");
    // Runs without per-class queues have no such table.
    let plain = dumbbell(
        1,
        "1Mbps",
        "{ kind = \"droptail\" }",
        &cbr(0, "100kbps", 500, 0.0),
        "",
    );
    assert!(!qoslab::run(&parse(&plain))
        .unwrap()
        .tables
        .contains_key("classes"));
}

#[test]
fn worked_example_separates_ef_af_and_be() {
    use qoslab::stats::Column;
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/examples/diffserv_ef_af_be.toml"
    );
    let r = qoslab::run(&parse(&std::fs::read_to_string(path).unwrap())).unwrap();
    let float = |t: &str, c: &str| match r.tables[t].get(c).unwrap() {
        Column::Float(v) => v.clone(),
        other => panic!("{t}.{c}: {other:?}"),
    };
    let int = |t: &str, c: &str| match r.tables[t].get(c).unwrap() {
        Column::Int(v) => v.clone(),
        other => panic!("{t}.{c}: {other:?}"),
    };
    // Flows: voice, af1-a, af1-b, af2-a, af2-b, bulk-a, bulk-b.
    let (p50, p99, jitter) = (
        float("delays", "p50"),
        float("delays", "p99"),
        float("delays", "jitter"),
    );
    // EF: propagation 16 ms plus at most a few packet times of queueing.
    assert!(p99[0] < 0.025, "voice p99 {}", p99[0]);
    assert!(jitter[0] < 0.003, "voice jitter {}", jitter[0]);
    for (i, m) in p50.iter().enumerate().skip(1) {
        assert!(
            *m > 2.0 * p99[0],
            "flow {i}: p50 {m} vs voice p99 {}",
            p99[0]
        );
    }
    // EF loses nothing; the AF classes drop no green packet.
    let (drp, green) = (int("classes", "dropped"), int("classes", "dropped_green"));
    assert_eq!(drp[0], 0);
    assert_eq!((green[1], green[2]), (0, 0));
    // Best effort (DSCP 0, unmetered) loses packets, all of them counted as colour
    // "none", never as green (queues treat it as green; the counts do not); so is the
    // interface's total in `colour_drops`.
    let (class, none) = (
        r.tables["classes"].get("class").unwrap(),
        int("classes", "dropped_none"),
    );
    assert_eq!(class.str_at(3), Some("be"));
    assert!(drp[3] > 10, "best effort drops {}", drp[3]);
    assert_eq!((green[3], none[3]), (0, drp[3]));
    assert_eq!(none[..3], [0, 0, 0]);
    let cd = &r.tables["colour_drops"];
    let k = (0..cd.rows())
        .find(|&i| {
            cd.get("iface").unwrap().str_at(i)
                == r.tables["classes"].get("iface").unwrap().str_at(3)
        })
        .unwrap();
    assert_eq!(int("colour_drops", "dropped_none")[k], drp[3]);
    assert_eq!(
        int("colour_drops", "dropped_green")[k],
        green.iter().take(4).sum::<i64>()
    );
    // WFQ 3 : 2 : 1 over what EF leaves: AF1 > AF2 > BE in goodput.
    let g = float("flows", "goodput_bps");
    let (af1, af2, be) = (g[1] + g[2], g[3] + g[4], g[5] + g[6]);
    assert!(af1 > 1.2 * af2 && af2 > 1.5 * be, "{af1} {af2} {be}");
}

/// The `colours` table's integer column `col` at the rows of flow `name`.
fn colour_rows(t: &qoslab::stats::Table, name: &str, col: &str) -> Vec<i64> {
    let names = t.get("name").unwrap();
    let qoslab::stats::Column::Int(v) = t.get(col).unwrap() else {
        panic!("{col} is not an integer column")
    };
    (0..t.rows())
        .filter(|&i| names.str_at(i) == Some(name))
        .map(|i| v[i])
        .collect()
}

#[test]
fn colour_statistics_count_what_each_meter_marked() {
    // f0: 100 packets/s of 1000 B (0.8 Mb/s) through a trTCM with CIR 0.4 Mb/s and PIR
    // 0.6 Mb/s: in the long run half the packets are green, a quarter yellow, a quarter
    // red (RFC 2698 §3). f1: 0.8 Mb/s through a token-bucket policer of 0.2 Mb/s: a
    // quarter pass (green), the rest are dropped (red). f2 meets no meter.
    let flows = cbr(0, "0.8Mbps", 1000, 0.0) + &cbr(1, "0.8Mbps", 1000, 0.0)
        + &cbr(2, "0.1Mbps", 1000, 0.0)
        + "[[conditioner]]\nat = \"s0\"\nstages = [ { kind = \"set_dscp\", dscp = \"AF11\" }, { kind = \"trtcm\", cir = \"400kbps\", cbs = 3000, pir = \"600kbps\", pbs = 3000 } ]\n"
        + "[[conditioner]]\nat = \"s1\"\nstages = [ { kind = \"token_bucket\", rate = \"200kbps\", depth = 3000, action = \"police\" } ]\n";
    let text = dumbbell(
        3,
        "10Mbps",
        "{ kind = \"droptail\" }",
        &flows,
        "warmup = \"2s\"\n",
    );
    let w = run_world(&text);
    let r = qoslab::stats::collect(&w, "colours", 1, 0.0);
    let t = &r.tables["colours"];
    // One row per metering stage and flow: set_dscp colours nothing, f2 has no meter.
    assert_eq!(colour_rows(t, "f0", "stage"), vec![1]);
    assert_eq!(colour_rows(t, "f1", "stage"), vec![0]);
    assert!(colour_rows(t, "f2", "stage").is_empty());
    let sent = |i: usize| w.flows[i].counters_since(&w.warm, i).pkts_sent as i64;
    let [g, y, rd] = ["green_pkts", "yellow_pkts", "red_pkts"].map(|c| colour_rows(t, "f0", c)[0]);
    assert_eq!(g + y + rd, sent(0));
    // 8 s after the warm-up = 800 packets: 400 / 200 / 200, within a bucket's worth.
    assert!(
        (g - 400).abs() <= 4 && (y - 200).abs() <= 4 && (rd - 200).abs() <= 4,
        "{g} {y} {rd}"
    );
    assert_eq!(colour_rows(t, "f0", "green_bytes")[0], 1000 * g);
    let [g, y, rd] = ["green_pkts", "yellow_pkts", "red_pkts"].map(|c| colour_rows(t, "f1", c)[0]);
    assert_eq!((g + rd, y), (sent(1), 0));
    assert!((g - 200).abs() <= 4, "{g}");
    // The policer's red packets are the flow's drops at s1.
    assert_eq!(rd, w.flows[1].counters_since(&w.warm, 1).drops as i64);
    // The class of each flow is that of the DSCPs its data arrived with: f0 arrives as
    // AF11, AF12 and AF13 (all class AF1), the others unmarked (BE).
    let fc = &r.tables["flow_classes"];
    let col = |c: &str| -> Vec<String> {
        let c = fc.get(c).unwrap();
        (0..3).map(|i| c.str_at(i).unwrap().to_string()).collect()
    };
    assert_eq!(col("class"), ["AF1", "BE", "BE"]);
    assert_eq!(col("dscps"), ["10 12 14", "0", "0"]);
}

#[test]
fn queue_colour_samples_give_each_colours_average() {
    // Two marked flows into a sampled RIO-D bottleneck: per-colour averages are
    // recorded beside every queue sample, and RIO-D's one-number `avg` is their sum.
    let flows = cbr(0, "0.8Mbps", 1000, 0.0).replace("jitter = 0", "poisson = true")
        + &cbr(1, "0.8Mbps", 1000, 0.0).replace("jitter = 0", "poisson = true")
        + "[[conditioner]]\nat = \"s1\"\nstages = [ { kind = \"trtcm\", cir = \"100kbps\", cbs = 3000, pir = \"300kbps\", pbs = 3000 } ]\n"
        + "[record]\nqueues = [\"r1->r2\", \"s0->r1\"]\nqueue_interval = \"100ms\"\n";
    let text = dumbbell(2, "1Mbps", "{ kind = \"rio_d\", limit = 100 }", &flows, "");
    let w = run_world(&text);
    let r = qoslab::stats::collect(&w, "rio-d", 1, 0.0);
    let qs = &r.tables["queue_samples"];
    let cs = &r.tables["queue_colour_samples"];
    // s0->r1 is DropTail: no per-colour rows for it.
    let floats = |t: &qoslab::stats::Table, c: &str| match t.get(c).unwrap() {
        qoslab::stats::Column::Float(v) => v.clone(),
        _ => panic!("{c}"),
    };
    let at_bottleneck: Vec<usize> = (0..qs.rows())
        .filter(|&i| qs.get("iface").unwrap().str_at(i) == Some("r1->r2"))
        .collect();
    assert_eq!(cs.rows(), at_bottleneck.len());
    assert!((0..cs.rows()).all(|i| cs.get("iface").unwrap().str_at(i) == Some("r1->r2")));
    let (avg, g, y, rd) = (
        floats(qs, "avg"),
        floats(cs, "avg_green"),
        floats(cs, "avg_yellow"),
        floats(cs, "avg_red"),
    );
    for (k, &i) in at_bottleneck.iter().enumerate() {
        assert!((g[k] + y[k] + rd[k] - avg[i]).abs() < 1e-9, "row {k}");
    }
    // Green (f0 unmarked, and f1's green) and red both queue: both averages are non-zero.
    assert!(
        g.iter().any(|&x| x > 1.0) && rd.iter().any(|&x| x > 1.0),
        "{g:?} {rd:?}"
    );
}

/// Three CBR flows s_i → d_i (0.4 Mb/s each) with s0, s1 in 10.1.0.0/16 and s2 in
/// 10.2.0.0/16, and a policy at r1 whose rule filter is `filter`: a 0.1 Mb/s policer.
fn addressed(filter: &str) -> String {
    let flows = (0..3).map(|i| cbr(i, "0.4Mbps", 1000, 0.0)).collect::<String>()
        + &format!(
            "[[conditioner]]\nat = \"r1\"\nstages = [ {{ kind = \"policy\", rules = [ {{ filter = {filter}, conditioner = {{ kind = \"token_bucket\", rate = \"100kbps\", depth = 3000, action = \"police\" }} }} ] }} ]\n"
        );
    dumbbell(3, "10Mbps", "{ kind = \"droptail\" }", &flows, "")
        .replace("name = \"s0\"\n", "name = \"s0\"\naddress = \"10.1.0.1\"\n")
        .replace("name = \"s1\"\n", "name = \"s1\"\naddress = \"10.1.7.9\"\n")
        .replace("name = \"s2\"\n", "name = \"s2\"\naddress = \"10.2.0.1\"\n")
}

#[test]
fn prefix_filters_select_the_flows_whose_ends_are_in_the_prefix() {
    let policed = |filter: &str| -> Vec<bool> {
        let w = run_world(&addressed(filter));
        (0..3).map(|i| w.flows[i].counters.drops > 0).collect()
    };
    assert_eq!(
        policed("{ src_prefix = \"10.1.0.0/16\" }"),
        [true, true, false]
    );
    assert_eq!(
        policed("{ src_prefix = \"10.1.7.9/32\" }"),
        [false, true, false]
    );
    assert_eq!(
        policed("{ src_prefix = \"10.0.0.0/8\" }"),
        [true, true, true]
    );
    // d2 keeps its default address, 10.0.0.0 + its index + 1; the ACK-free UDP flows
    // never send from d_i, so a destination prefix selects by the flow's far end.
    let sc = parse(&addressed("{}"));
    let d2 = sc.node.iter().position(|n| n.name == "d2").unwrap() as u8;
    let p = format!("{{ dst_prefix = \"10.0.0.{}/32\" }}", d2 + 1);
    assert_eq!(policed(&p), [false, false, true]);
}

#[test]
fn bad_prefixes_and_addresses_are_scenario_errors_naming_the_key() {
    let err = |text: &str| {
        qoslab::check_str(text, qoslab::scenario::Format::Toml)
            .unwrap_err()
            .to_string()
    };
    let key = "conditioner[0].stages[0].rules[0].filter";
    for bad in ["10.1.0.0", "10.1.0.0/33", "10.1.0.1/16", "10.1.0/16", "x/8"] {
        let e = err(&addressed(&format!("{{ src_prefix = \"{bad}\" }}")));
        assert!(e.contains(&format!("{key}.src_prefix")), "{bad}: {e}");
    }
    let e = err(&addressed("{}").replace("10.2.0.1", "10.2.0.300"));
    assert!(
        e.contains("node[") && e.contains(".address") && e.contains("10.2.0.300"),
        "{e}"
    );
    let e = err(&addressed("{}").replace("10.2.0.1", "10.1.0.1"));
    assert!(e.contains(".address") && e.contains("10.1.0.1"), "{e}");
}

#[test]
fn colour_drops_split_a_colour_aware_queue_s_drops_by_drop_precedence() {
    // The RIO-C bottleneck of `marked`: the mostly-red flow loses packets, the green one
    // (almost) none; the table's colours add up to the interface's queue drops, and a
    // DropTail queue has no row.
    use qoslab::stats::{Column, Table};
    let int = |t: &Table, c: &str| match t.get(c) {
        Some(Column::Int(v)) => v.clone(),
        _ => panic!("{c}"),
    };
    let w = marked("{ kind = \"rio_c\", limit = 100 }");
    let r = qoslab::stats::collect(&w, "t", 1, 0.0);
    let t = &r.tables["colour_drops"];
    // Both directions of the bottleneck link have RIO-C; the data goes r1 -> r2.
    let iface = t.get("iface").unwrap();
    assert_eq!(iface.len(), 2);
    let j = (0..2).find(|&i| iface.str_at(i) == Some("r1->r2")).unwrap();
    let (g, y, rd) = (
        int(t, "dropped_green")[j],
        int(t, "dropped_yellow")[j],
        int(t, "dropped_red")[j],
    );
    let q = &r.tables["queues"];
    let qi = q.get("iface").unwrap();
    let k = (0..qi.len())
        .find(|&i| qi.str_at(i) == Some("r1->r2"))
        .unwrap();
    assert_eq!(g + y + rd, int(q, "dropped")[k]);
    assert!(rd > 100 && g * 20 < rd, "{g} {y} {rd}");
    let dt = marked("{ kind = \"droptail\", limit = 100 }");
    let r = qoslab::stats::collect(&dt, "t", 1, 0.0);
    assert!(!r.tables.contains_key("colour_drops"));
}

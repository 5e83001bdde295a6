//! MulTCP / WAIMD (P4 §2): with w = 1 it is the default congestion control exactly; a
//! weight-w flow takes about w times a unit flow's share of a shared bottleneck.

use super::common::*;

/// Two bulk SACK flows over a 2 Mb/s bottleneck with random loss; flow f0's cc given.
fn shared(cc0: &str, loss: f64, duration: &str) -> String {
    let flows = format!(
        "[[flow]]\nname = \"f0\"\nfrom = \"s0\"\nto = \"d0\"\ntcp = {{ variant = \"sack\", max_window = 200{cc0} }}\n\
         [[flow]]\nname = \"f1\"\nfrom = \"s1\"\nto = \"d1\"\ntcp = {{ variant = \"sack\", max_window = 200 }}\n"
    );
    dumbbell(
        2,
        "2Mbps",
        "{ kind = \"red\", limit = 60, min_th = 5, max_th = 30, gentle = true }",
        &flows,
        "",
    )
    .replace("duration = \"10s\"", &format!("duration = \"{duration}\""))
    .replace(
        "delay = \"10ms\"\nqueue",
        &format!("delay = \"40ms\"\nloss = {loss}\nqueue"),
    )
}

fn goodputs(text: &str) -> Vec<u64> {
    run_world(text)
        .flows
        .iter()
        .map(|f| f.counters.goodput_bytes)
        .collect()
}

#[test]
fn multcp_with_weight_one_gives_the_same_results_tables_as_the_default() {
    let run = |cc: &str| {
        qoslab::run_str(
            &shared(cc, 0.01, "20s"),
            qoslab::scenario::Format::Toml,
            None,
        )
        .unwrap()
    };
    let reno = run("");
    let mul = run(", cc = { kind = \"multcp\", w = 1 }");
    let mut compared = 0;
    for (name, t) in &reno.tables {
        // Debug text, so that NaN cells (no delays recorded) compare equal.
        let other = mul.tables.get(name).map(|m| format!("{m:?}"));
        assert_eq!(Some(format!("{t:?}")), other, "table {name} differs");
        compared += 1;
    }
    assert!(compared >= 2, "{compared} tables");
    assert_eq!(reno.tables.len(), mul.tables.len());
    // The scenario has losses, so the decrease factor matters.
    let drops = reno.tables["flows"].get("drops").unwrap().clone();
    assert!(matches!(drops, qoslab::stats::Column::Int(ref v) if v.iter().sum::<i64>() > 10));
}

#[test]
fn a_weight_w_multcp_flow_gets_about_w_times_a_unit_flow() {
    for w in [2.0f64, 4.0] {
        let g = goodputs(&shared(
            &format!(", cc = {{ kind = \"multcp\", w = {w} }}"),
            0.0,
            "120s",
        ));
        let ratio = g[0] as f64 / g[1] as f64;
        assert!(
            ratio > 0.6 * w && ratio < 1.5 * w,
            "w = {w}: ratio {ratio:.2} ({g:?})"
        );
    }
}

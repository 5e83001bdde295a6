//! P0's QoS manager with police-and-mark over ERED (§4.1): drops are counted by the
//! mark ERED decides by, and compliant traffic is what the clients received marked.

use super::common::*;

/// `scenarios/p0/<name>` run for `secs` seconds.
fn shipped(name: &str, secs: u64) -> qoslab::stats::RunResult {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/p0")
        .join(name);
    let text = std::fs::read_to_string(path)
        .unwrap()
        .replace("duration = \"200s\"", &format!("duration = \"{secs}s\""));
    run_text(&text)
}

#[test]
fn ered_drops_are_counted_marked_and_unmarked_and_compliant_traffic_is_delivered() {
    // Partitioned police-and-mark on unequal links: the 100 kb/s client's queue drops
    // marked packets too (its share 20 000 B/s of marks exceeds its 12 500 B/s link).
    let r = shipped("f6-unequal.toml", 40);
    let (m, u) = (
        ints(&r, "colour_drops", "dropped_marked"),
        ints(&r, "colour_drops", "dropped_unmarked"),
    );
    let total: Vec<i64> = [
        "dropped_green",
        "dropped_yellow",
        "dropped_red",
        "dropped_none",
    ]
    .iter()
    .map(|c| ints(&r, "colour_drops", c))
    .fold(vec![0; m.len()], |a, b| {
        a.iter().zip(&b).map(|(x, y)| x + y).collect()
    });
    for i in 0..m.len() {
        assert_eq!(
            m[i] + u[i],
            total[i],
            "interface {i}: every drop counted once"
        );
    }
    assert!(m.iter().sum::<i64>() > 0, "marked packets dropped: {m:?}");
    assert!(u.iter().sum::<i64>() > 0, "unmarked packets dropped: {u:?}");
    // Police-and-mark sets the in-profile mark, not the DSCP: every drop is of a
    // best-effort codepoint, colour "none" (never green), so the colour alone cannot
    // tell marked from unmarked.
    assert_eq!(
        ints(&r, "colour_drops", "dropped_none").iter().sum::<i64>(),
        total.iter().sum::<i64>()
    );
    assert_eq!(
        ints(&r, "colour_drops", "dropped_green")
            .iter()
            .sum::<i64>(),
        0
    );
    // Marked bytes delivered fall short of marked bytes sent by the marked drops
    // (and what is in flight at the end): at most what was sent, never more.
    let sent = ints(&r, "qosmgr", "marked_bytes");
    let got = ints(&r, "qosmgr", "marked_delivered_bytes");
    assert!(
        got.iter().zip(&sent).all(|(g, s)| g <= s),
        "{got:?} {sent:?}"
    );
    let lost: i64 = sent.iter().zip(&got).map(|(s, g)| s - g).sum();
    assert!(lost >= 1040 * m.iter().sum::<i64>() / 2, "{lost} {m:?}");
    assert!(got.iter().sum::<i64>() > 0);
}

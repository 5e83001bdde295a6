//! Guards against silent change: the shipped scenarios (examples, P0 to P4, cut short) give
//! the same result tables byte for byte, and bad scenarios the same error (key and
//! message), as recorded in `tests/snapshots/`. Each table is recorded by its rows and a
//! fingerprint of the whole, of every column and of eight blocks of its rows, so that a
//! failure names the columns and the first rows that changed, with those rows' values now
//! (`p1/t1.toml flows: columns changed: goodput_bps; first rows changed: 0–1; row 0 now:
//! goodput_bps=9.5e6`).
//!
//! After a deliberate change, rewrite the records with
//! `QOSLAB_BLESS=1 cargo test -p qoslab --test integration snapshots` and say why in
//! the commit.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use qoslab::error::Error;
use qoslab::scenario::Format;
use qoslab::time::Dur;

use super::common::*;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// 64-bit FNV-1a: a stable fingerprint of a table's bytes.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// For two lines of one table's record (`file table rows=N fnv=… cols=a:…,b:…`), what
/// changed: the row count and the columns whose fingerprints differ, the columns added
/// and removed. `None` for lines of another form or of different tables.
fn changed_columns(was: &str, now: &str) -> Option<String> {
    type Parsed<'a> = (&'a str, &'a str, BTreeMap<&'a str, &'a str>, Vec<&'a str>);
    fn parse(l: &str) -> Option<Parsed<'_>> {
        let mut it = l.split(' ');
        let (file, table, rows) = (it.next()?, it.next()?, it.next()?);
        let rest: Vec<&str> = it.collect();
        let cols = rest.iter().find_map(|x| x.strip_prefix("cols="))?;
        let blocks = (rest.iter().find_map(|x| x.strip_prefix("blocks=")))
            .map(|b| b.split(',').collect())
            .unwrap_or_default();
        let mut map: BTreeMap<&str, &str> =
            cols.split(',').filter_map(|c| c.split_once(':')).collect();
        map.insert("(rows)", rows);
        Some((file, table, map, blocks))
    }
    let (wf, wt, wc, wb) = parse(was)?;
    let (nf, nt, nc, nb) = parse(now)?;
    if (wf, wt) != (nf, nt) {
        return None;
    }
    let mut parts = Vec::new();
    if wc["(rows)"] != nc["(rows)"] {
        parts.push(format!("{} → {}", wc["(rows)"], nc["(rows)"]));
    }
    let changed: Vec<&str> = wc
        .iter()
        .filter(|(k, v)| **k != "(rows)" && nc.get(*k).is_some_and(|n| n != *v))
        .map(|(k, _)| *k)
        .collect();
    if !changed.is_empty() {
        parts.push(format!("columns changed: {}", changed.join(", ")));
    }
    let gone: Vec<&str> = wc
        .keys()
        .filter(|k| !nc.contains_key(*k))
        .copied()
        .collect();
    let new: Vec<&str> = nc
        .keys()
        .filter(|k| !wc.contains_key(*k))
        .copied()
        .collect();
    if !gone.is_empty() {
        parts.push(format!("columns removed: {}", gone.join(", ")));
    }
    if !new.is_empty() {
        parts.push(format!("columns added: {}", new.join(", ")));
    }
    // With the row count unchanged, the first block of rows whose fingerprint moved.
    let rows: usize = (nc["(rows)"].trim_start_matches("rows=").parse()).unwrap_or(0);
    if wc["(rows)"] == nc["(rows)"] && wb.len() == nb.len() {
        if let Some(i) = (0..wb.len()).find(|&i| wb[i] != nb[i]) {
            let (lo, hi) = block_rows(rows, wb.len(), i);
            let span = if hi - lo > 1 {
                format!("{lo}–{}", hi - 1)
            } else {
                lo.to_string()
            };
            parts.push(format!("first rows changed: {span}"));
        }
    }
    Some(format!("{wf} {wt}: {}", parts.join("; ")))
}

/// How many blocks of rows a table's record fingerprints (fewer for short tables).
const BLOCKS: usize = 8;

/// Rows `[lo, hi)` of block `i` of `n` over a table of `rows` rows.
fn block_rows(rows: usize, n: usize, i: usize) -> (usize, usize) {
    (i * rows / n, (i + 1) * rows / n)
}

/// The table's cells as JSON values, one array per column.
fn cells(table: &qoslab::stats::Table) -> Vec<Vec<serde_json::Value>> {
    (table.columns.iter())
        .map(|c| match serde_json::to_value(c).unwrap() {
            serde_json::Value::Array(v) => v,
            v => vec![v],
        })
        .collect()
}

/// Fingerprints (32 bits each) of up to [`BLOCKS`] blocks of a table's rows.
fn row_blocks(table: &qoslab::stats::Table) -> Vec<String> {
    let rows = table.rows();
    let n = BLOCKS.min(rows);
    let cols = cells(table);
    (0..n)
        .map(|i| {
            let (lo, hi) = block_rows(rows, n, i);
            let mut bytes = Vec::new();
            for r in lo..hi {
                for c in &cols {
                    bytes.extend(c[r].to_string().bytes());
                    bytes.push(0);
                }
            }
            format!("{:08x}", fnv(&bytes) >> 32)
        })
        .collect()
}

/// Row `row` of `table` now, `name=value` for the columns named (all when empty).
fn row_now(table: &qoslab::stats::Table, row: usize, only: &[&str]) -> String {
    let cols = cells(table);
    (table.names.iter().zip(&cols))
        .filter(|(n, _)| only.is_empty() || only.contains(&n.as_str()))
        .filter_map(|(n, c)| c.get(row).map(|v| format!("{n}={v}")))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Compares `got` with the record `name`, or rewrites it under `QOSLAB_BLESS=1`.
fn compare(name: &str, got: &str) {
    compare_with(name, got, &|_| None)
}

/// [`compare`], with `hint(what)` adding to each changed line's `what` (e.g. the first
/// changed row's values now).
fn compare_with(name: &str, got: &str, hint: &dyn Fn(&str) -> Option<String>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(name);
    if std::env::var_os("QOSLAB_BLESS").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (create it with QOSLAB_BLESS=1)", path.display()));
    let diff: Vec<String> = want
        .lines()
        .zip(got.lines())
        .filter(|(w, g)| w != g)
        .map(|(w, g)| match changed_columns(w, g) {
            Some(what) => match hint(&what) {
                Some(h) => format!("  {what}; {h}"),
                None => format!("  {what}"),
            },
            None => format!("  was: {w}\n  now: {g}"),
        })
        .collect();
    assert!(
        want == got,
        "{name} changed ({} vs {} lines):\n{}",
        want.lines().count(),
        got.lines().count(),
        diff.join("\n")
    );
}

#[test]
fn a_changed_table_names_its_changed_columns() {
    let was = "a.toml flows rows=2 fnv=01 cols=x:00000001,y:00000002,w:00000009";
    let now = "a.toml flows rows=3 fnv=02 cols=x:00000001,y:00000003,z:00000004";
    assert_eq!(
        changed_columns(was, now).unwrap(),
        "a.toml flows: rows=2 → rows=3; columns changed: y; columns removed: w; columns added: z"
    );
    assert_eq!(
        changed_columns(was, "b.toml flows rows=2 fnv=01 cols=x:1"),
        None
    );
    assert_eq!(changed_columns("a.toml events 5", "a.toml events 6"), None);
}

#[test]
fn a_changed_table_names_its_first_changed_rows_and_their_values() {
    let was = "a.toml flows rows=8 fnv=01 cols=x:00000001,y:00000002 blocks=a,b,c,d";
    let now = "a.toml flows rows=8 fnv=02 cols=x:00000001,y:00000003 blocks=a,b,e,f";
    assert_eq!(
        changed_columns(was, now).unwrap(),
        "a.toml flows: columns changed: y; first rows changed: 4–5"
    );
    let mut t = qoslab::stats::Table::default();
    t.push("x", qoslab::stats::Column::Int(vec![1, 2, 3]));
    t.push("y", qoslab::stats::Column::Float(vec![0.5, 1.5, 2.5]));
    assert_eq!(row_now(&t, 1, &["y"]), "y=1.5");
    assert_eq!(row_now(&t, 2, &[]), "x=3, y=2.5");
    // One block per row for short tables; a changed cell moves only its block.
    let before = row_blocks(&t);
    t.columns[1] = qoslab::stats::Column::Float(vec![0.5, 1.5, 9.0]);
    let after = row_blocks(&t);
    assert_eq!(before.len(), 3);
    assert_eq!(
        (before[0] == after[0], before[2] == after[2]),
        (true, false)
    );
}

#[test]
fn shipped_scenarios_give_the_recorded_tables() {
    let mut files: Vec<PathBuf> = [
        "scenarios/examples",
        "scenarios/p0",
        "scenarios/p1",
        "scenarios/p2",
        "scenarios/p3",
        "scenarios/p4",
    ]
    .iter()
    .flat_map(|d| std::fs::read_dir(repo().join(d)).unwrap())
    .map(|e| e.unwrap().path())
    .filter(|p| p.extension().is_some_and(|x| x == "toml"))
    .collect();
    files.sort();
    assert!(files.len() >= 12, "{files:?}");
    let mut out = String::new();
    let mut tables = BTreeMap::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        // The [sweep] table is for the Python side only, and so are flow groups (`count`,
        // `group`: qoslab's Python side expands them into flows before the engine runs).
        let text = text.split("\n[sweep]").next().unwrap();
        if text.lines().any(|l| {
            let l = l.trim_start();
            l.starts_with("count =") || l.starts_with("group =")
        }) {
            continue;
        }
        let mut sc = qoslab::scenario::parse(text, Format::Toml).unwrap();
        sc.duration = sc.duration.min(Dur::from_secs(12));
        sc.warmup = sc.warmup.min(Dur::from_secs(2));
        let r = qoslab::run(&sc).unwrap();
        let name = f.file_name().unwrap().to_string_lossy();
        for k in ["events", "packet_hops"] {
            let v = r.summary.get(k).map(|v| v.to_string()).unwrap_or_default();
            writeln!(out, "{name} {k} {v}").unwrap();
        }
        for (t, table) in &r.tables {
            let bytes = serde_json::to_vec(table).unwrap();
            // Each column's own fingerprint (32 bits) too, so that a failure names the
            // columns that changed, not only the table.
            let cols: Vec<String> = table
                .names
                .iter()
                .zip(&table.columns)
                .map(|(n, c)| format!("{n}:{:08x}", fnv(&serde_json::to_vec(c).unwrap()) >> 32))
                .collect();
            writeln!(
                out,
                "{name} {t} rows={} fnv={:016x} cols={} blocks={}",
                table.rows(),
                fnv(&bytes),
                cols.join(","),
                row_blocks(table).join(",")
            )
            .unwrap();
        }
        tables.insert(name.to_string(), r.tables);
    }
    // A changed table's first changed row, as it is now, for the changed columns.
    let hint = |what: &str| -> Option<String> {
        let (head, rest) = what.split_once(": ")?;
        let (file, table) = head.split_once(' ')?;
        let first = rest.split("first rows changed: ").nth(1)?;
        let row: usize = first.split('–').next()?.parse().ok()?;
        let changed: Vec<&str> = (rest.split("; "))
            .find_map(|p| p.strip_prefix("columns changed: "))
            .map(|c| c.split(", ").collect())
            .unwrap_or_default();
        let t = tables.get(file)?.get(table)?;
        Some(format!("row {row} now: {}", row_now(t, row, &changed)))
    };
    compare_with("results.txt", &out, &hint);
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

fn stage(s: &str) -> String {
    base() + &format!("[[conditioner]]\nat = \"s0\"\nstages = [{s}]\n")
}

#[test]
fn scenario_errors_are_the_recorded_ones() {
    let q = |s: &str| base().replace("{ kind = \"droptail\", limit = 10 }", s);
    let top = |s: &str| base().replace("duration = \"10s\"", &format!("duration = \"10s\"\n{s}"));
    let cases: Vec<(&str, String)> = vec![
        ("seed string", top("seed = \"x\"")),
        ("seed negative", top("seed = -1")),
        ("seed fraction", top("seed = 1.5")),
        ("unknown top key", top("colour = 1")),
        ("nan", base().replace("jitter = 0", "jitter = nan")),
        ("deep", top(&format!("x = {}{}", "[".repeat(40), "]".repeat(40)))),
        ("no duration", "[[node]]\nname = \"a\"\n".into()),
        ("warmup", top("warmup = \"20s\"")),
        ("max_events", top("max_events = 0")),
        ("rate unit", base().replace("\"1Mbps\"", "\"1MBPS\"")),
        ("rate negative", base().replace("\"1Mbps\"", "\"-1Mbps\"")),
        ("duration unit", base().replace("\"10s\"", "\"10 parsecs\"")),
        ("queue kind", q("{ kind = \"codl\" }")),
        ("queue not table", q("5")),
        ("queue no kind", q("{ limit = 3 }")),
        ("queue unknown key", q("{ kind = \"red\", min_thresh = 5 }")),
        ("droptail limit 0", q("{ kind = \"droptail\", limit = 0 }")),
        ("droptail both limits", q("{ kind = \"droptail\", limit = 5, limit_bytes = 500 }")),
        ("red max_p type", q("{ kind = \"red\", max_p = \"high\" }")),
        ("red max_p range", q("{ kind = \"red\", max_p = 1.5 }")),
        ("red order", q("{ kind = \"red\", min_th = 15, max_th = 5 }")),
        ("red limit", q("{ kind = \"red\", limit = 10, max_th = 15 }")),
        ("red bytes limit", q("{ kind = \"red\", limit_bytes = 10000, min_th = 5000, max_th = 15000 }")),
        ("red w_q", q("{ kind = \"red\", w_q = 0 }")),
        ("red mean_pkt_size", q("{ kind = \"red\", mean_pkt_size = 0 }")),
        ("ered factor", q("{ kind = \"ered\", factor = 0.5 }")),
        ("ered w_q", q("{ kind = \"ered\", w_q = 2 }")),
        ("ered unknown key", q("{ kind = \"ered\", factr = 2 }")),
        ("ered factor type", q("{ kind = \"ered\", factor = \"x\" }")),
        ("rio curve", q("{ kind = \"rio_c\", dp1 = { min_th = 30, max_th = 20, max_p = 0.1 } }")),
        ("rio curve type", q("{ kind = \"rio_d\", red = { min_th = 1, max_th = 2, max_p = [] } }")),
        ("rio curve key", q("{ kind = \"wred\", dp1 = { min_th = 1, max_th = 2, max_p = 0.1, w = 1 } }")),
        ("rio limit", q("{ kind = \"rio_d\", limit = 50 }")),
        ("lqd quantum", q("{ kind = \"lqd\", quantum = 0 }")),
        ("lqd service", q("{ kind = \"lqd\", service = \"wfq\" }")),
        ("cbr size", base().replace("size = 500", "size = 65536")),
        ("cbr size unit", base().replace("size = 500", "size = \"1Kb\"")),
        ("flow start", base().replace("to = \"d0\"", "to = \"d0\"\nstart = \"12s\"")),
        ("flow stop", base().replace("to = \"d0\"", "to = \"d0\"\nstart = \"2s\"\nstop = \"1s\"")),
        ("record interval", base() + "[record]\ninterval = 0\n"),
        ("record queue", base() + "[record]\nqueues = [\"r1->r3\"]\n"),
        ("stage kind", stage("{ kind = \"leaky\" }")),
        ("stage not table", stage("3")),
        ("tb depth", stage("{ kind = \"token_bucket\", rate = \"1Mbps\", depth = 0 }")),
        ("tb depth word", stage("{ kind = \"token_bucket\", rate = \"1Mbps\", depth = \"fast\" }")),
        ("tb timer", stage("{ kind = \"token_bucket\", rate = 1000, depth = 10, timer = \"15ms\" }")),
        ("tb peak", stage("{ kind = \"token_bucket\", rate = 2000, depth = 10, peak = 1000 }")),
        ("tb dscp", stage("{ kind = \"token_bucket\", rate = 1000, depth = 10, dscp = { green = 99999 } }")),
        ("srtcm zero", stage("{ kind = \"srtcm\", cir = 1000, cbs = 0, ebs = 0 }")),
        ("srtcm dscp", stage("{ kind = \"srtcm\", cir = 1000, cbs = 1, ebs = 0, dscp = { red = 64 } }")),
        ("trtcm pir", stage("{ kind = \"trtcm\", cir = \"2Mbps\", cbs = 100, pir = \"1Mbps\", pbs = 100 }")),
        ("trtcm missing", stage("{ kind = \"trtcm\", cir = 1000, cbs = 100, pir = 2000 }")),
        ("tsw3cm pir", stage("{ kind = \"tsw3cm\", cir = \"2Mbps\", pir = \"1Mbps\" }")),
        ("tsw2cm window", stage("{ kind = \"tsw2cm\", cir = 1000, window = 0 }")),
        ("delay type", stage("{ kind = \"delay\", delay = true }")),
        ("policy empty", stage("{ kind = \"policy\", rules = [] }")),
        ("policy burst", stage("{ kind = \"policy\", rules = [{ profile = { rate = 1000, burst = 0 }, action = \"shape\" }] }")),
        ("policy action", stage("{ kind = \"policy\", rules = [{ profile = { rate = 1000, burst = 10 } }] }")),
        ("policy inner", stage("{ kind = \"policy\", rules = [{ conditioner = { kind = \"trtcm\", cir = 2000, cbs = 1, pir = 1000, pbs = 1 } }] }")),
        ("policy inner type", stage("{ kind = \"policy\", rules = [{ conditioner = { kind = \"tsw2cm\", cir = \"1Mbps\", window = \"x\" } }] }")),
        ("policy filter", stage("{ kind = \"policy\", rules = [{ filter = { dst = \"mars\" }, profile = { rate = 1000, burst = 10 }, action = \"police\" }] }")),
        ("policy nested", stage("{ kind = \"policy\", rules = [{ conditioner = { kind = \"policy\", rules = [] } }] }")),
        ("trc missing", stage("{ kind = \"trc\" }")),
    ];
    let mut out = String::new();
    for (name, text) in &cases {
        let line = match qoslab::check_str(text, Format::Toml) {
            Err(Error::Scenario(e)) => format!("{name} | {} | {}", e.key, e.message),
            other => format!("{name} | not a scenario error: {other:?}"),
        };
        writeln!(out, "{line}").unwrap();
    }
    compare("scenario_errors.txt", &out);
}

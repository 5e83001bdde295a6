//! The floors of `docs/architecture.md`: no module imports a floor above its own, and
//! the rooms (modules) of one floor import each other without a circle.

use std::collections::{BTreeMap, BTreeSet};

use std::path::{Path, PathBuf};

/// Each floor with the modules (files or folders under `src/`) on it, bottom first.
/// `stats` is its table types; the parts that read a finished world are named apart.
const FLOORS: &[&[&str]] = &[
    &["time", "packet", "drop", "rng", "engine"],
    &["config", "units", "dscp", "stats", "live_config"],
    &["queue", "cond", "app", "tcp", "qosmgr"],
    &["net"],
    &["flow"],
    &["capture"],
    &["world"],
    &[
        "scenario",
        "stats/collect",
        "stats/conditioners",
        "stats/drops",
        "stats/flows",
        "stats/queues",
        "stats/trc",
        "stats/qosmgr",
        "stats/eruf",
        "stats/web",
        "stats/stripe",
        "stats/ptcp",
        "stats/rtt_markers",
        "stats/silent",
        "stats/summary",
        "stats/tcp",
        "stats/telnet",
    ],
    &["live"],
];

/// Upward imports still to be switched (module file, the path it names).
const KNOWN: &[(&str, &str)] = &[];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every `crate::` import of the sources: (file relative to `src/`, line number, line,
/// the importing module, the imported module).
struct Import {
    at: String,
    from: String,
    to: String,
}

fn imports() -> Vec<Import> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let floor_of = |m: &str| FLOORS.iter().position(|f| f.contains(&m));
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    let mut out = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap();
        let whole = rel.to_string_lossy();
        let whole = whole.trim_end_matches(".rs").trim_end_matches("/mod");
        let first = rel.iter().next().unwrap().to_string_lossy();
        let first = first.trim_end_matches(".rs");
        let module = if floor_of(whole).is_some() {
            whole
        } else {
            first
        };
        if floor_of(module).is_none() {
            continue; // lib.rs, error.rs, bin/: the top
        }
        let text = std::fs::read_to_string(f).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for (i, _) in code.match_indices("crate::") {
                let name: String = code[i + 7..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if floor_of(&name).is_none() {
                    continue;
                }
                let known = KNOWN
                    .iter()
                    .any(|(m, p)| *m == first && code[i..].starts_with(p));
                if !known {
                    out.push(Import {
                        at: format!("{}:{}: {}", rel.display(), n + 1, line.trim()),
                        from: module.to_string(),
                        to: name,
                    });
                }
            }
        }
    }
    out
}

#[test]
fn no_module_imports_a_floor_above_its_own() {
    let floor_of = |m: &str| FLOORS.iter().position(|f| f.contains(&m));
    let bad: Vec<String> = imports()
        .into_iter()
        .filter(|i| floor_of(&i.to) > floor_of(&i.from))
        .map(|i| i.at)
        .collect();
    assert!(
        bad.is_empty(),
        "imports from a higher floor:\n{}",
        bad.join("\n")
    );
}

/// A circle in a graph of rooms (`from -> to`), as the rooms on it, or `None`.
fn circle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == n) {
            let mut c = path[i..].to_vec();
            c.push(n.to_string());
            return Some(c);
        }
        if done.contains(n) {
            return None;
        }
        path.push(n.to_string());
        for m in edges.get(n).into_iter().flatten() {
            if let Some(c) = visit(m, edges, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|n| visit(n, edges, &mut Vec::new(), &mut done))
}

#[test]
fn rooms_of_one_floor_import_each_other_without_a_circle() {
    let floor_of = |m: &str| FLOORS.iter().position(|f| f.contains(&m));
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut lines: BTreeMap<(String, String), String> = BTreeMap::new();
    for i in imports() {
        let same = floor_of(&i.from) == floor_of(&i.to);
        // A room under another (stats/collect under stats) is not a neighbour of it.
        let nested = i.from.starts_with(&format!("{}/", i.to));
        if same && i.from != i.to && !nested {
            edges
                .entry(i.from.clone())
                .or_default()
                .insert(i.to.clone());
            lines.entry((i.from, i.to)).or_insert(i.at);
        }
    }
    if let Some(c) = circle(&edges) {
        let why: Vec<&String> = c
            .windows(2)
            .map(|w| &lines[&(w[0].clone(), w[1].clone())])
            .collect();
        panic!(
            "a circle between rooms of one floor: {}\n{}",
            c.join(" -> "),
            why.iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

#[test]
fn the_circle_finder_finds_a_circle_off_its_first_room() {
    let g = |pairs: &[(&str, &str)]| {
        let mut e: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in pairs {
            e.entry(a.to_string()).or_default().insert(b.to_string());
        }
        e
    };
    // The circle queue -> cond -> queue is reached from app, not from its own first room.
    let c = circle(&g(&[
        ("app", "queue"),
        ("queue", "cond"),
        ("cond", "queue"),
    ]))
    .unwrap();
    assert_eq!(c, ["queue", "cond", "queue"]);
    let c = circle(&g(&[("a", "b"), ("b", "c"), ("c", "a")])).unwrap();
    assert_eq!(c, ["a", "b", "c", "a"]);
    // A diamond is no circle.
    assert!(circle(&g(&[("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])).is_none());
}

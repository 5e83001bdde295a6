//! The floors of `docs/architecture.md`: no module imports a floor above its own.

use std::path::{Path, PathBuf};

/// Each floor with the modules (files or folders under `src/`) on it, bottom first.
/// `stats` is its table types; the parts that read a finished world are named apart.
const FLOORS: &[&[&str]] = &[
    &["time", "packet", "rng", "engine"],
    &["config", "units", "stats"],
    &["queue", "cond", "app", "tcp", "qosmgr"],
    &["net"],
    &["flow"],
    &["capture"],
    &["world"],
    &[
        "scenario",
        "stats/collect",
        "stats/trc",
        "stats/qosmgr",
        "stats/eruf",
        "stats/web",
        "stats/stripe",
        "stats/ptcp",
    ],
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

#[test]
fn no_module_imports_a_floor_above_its_own() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let floor_of = |m: &str| FLOORS.iter().position(|f| f.contains(&m));
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut bad = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap();
        let whole = rel.to_string_lossy();
        let whole = whole.trim_end_matches(".rs");
        let first = rel.iter().next().unwrap().to_string_lossy();
        let first = first.trim_end_matches(".rs");
        let module = if floor_of(whole).is_some() {
            whole
        } else {
            first
        };
        let Some(own) = floor_of(module) else {
            continue; // lib.rs, error.rs, bin/: the top
        };
        let text = std::fs::read_to_string(f).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for (i, _) in code.match_indices("crate::") {
                let name: String = code[i + 7..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                let Some(theirs) = floor_of(&name) else {
                    continue;
                };
                let known = KNOWN
                    .iter()
                    .any(|(m, p)| *m == first && code[i..].starts_with(p));
                if theirs > own && !known {
                    bad.push(format!("{}:{}: {}", rel.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "imports from a higher floor:\n{}",
        bad.join("\n")
    );
}

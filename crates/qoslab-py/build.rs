//! Computes the engine's build id: the crate version plus a hash of every source file
//! that goes into the engine and its bindings (and the lock file), so results written by
//! one build can be told apart from another's (a sweep reruns the other build's runs).

use std::fs;
use std::path::{Path, PathBuf};

/// FNV-1a, 64 bits: stable across Rust versions and platforms, unlike `DefaultHasher`.
fn fnv1a(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Every file under `dir`, recursively, in a stable order.
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn main() {
    let here = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let engine = here.join("../qoslab");
    let roots = [
        engine.join("src"),
        engine.join("Cargo.toml"),
        here.join("src"),
        here.join("Cargo.toml"),
        here.join("../../Cargo.lock"),
    ];
    let mut list = Vec::new();
    for r in &roots {
        println!("cargo:rerun-if-changed={}", r.display());
        if r.is_dir() {
            files(r, &mut list);
        } else {
            list.push(r.clone());
        }
    }
    let mut h = 0xcbf2_9ce4_8422_2325_u64;
    for f in &list {
        // The path relative to the crate, so the id does not depend on the checkout's place.
        let rel = f
            .strip_prefix(&here)
            .unwrap_or(f)
            .to_string_lossy()
            .into_owned();
        h = fnv1a(h, rel.as_bytes());
        h = fnv1a(h, &fs::read(f).unwrap_or_default());
    }
    let version = std::env::var("CARGO_PKG_VERSION").expect("set by cargo");
    println!("cargo:rustc-env=QOSLAB_BUILD_ID={version}+{h:016x}");
}

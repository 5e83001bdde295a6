//! `qoslab-run SCENARIO.toml [--seed N] [--out FILE] [--pcap-dir DIR] [--every-hop]`:
//! runs a scenario and writes its results as JSON (to stdout, or FILE). The scenario's
//! `[[capture]]` files go to DIR (default: next to FILE, or the current directory).
//! `--every-hop` turns cut-through and transmissions committed ahead off (the same
//! tables where no two events coincide to the nanosecond, more events: for checks and
//! speed comparisons). Exit code 2 on a
//! bad scenario, 1 on a failed run. The engine is usable from the shell before (and
//! without) the Python package.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use qoslab::error::Error;
use qoslab::scenario::{self, Format};
use qoslab::RunOptions;

fn usage() -> ExitCode {
    eprintln!(
        "usage: qoslab-run SCENARIO.toml|.json [--seed N] [--out FILE] [--pcap-dir DIR] [--every-hop]"
    );
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mut path, mut seed, mut out, mut pcap_dir) = (None, None, None, None);
    let mut every_hop = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seed" => match it.next().and_then(|s| s.parse().ok()) {
                Some(s) => seed = Some(s),
                None => return usage(),
            },
            "--out" => match it.next() {
                Some(o) => out = Some(o.clone()),
                None => return usage(),
            },
            "--pcap-dir" => match it.next() {
                Some(d) => pcap_dir = Some(PathBuf::from(d)),
                None => return usage(),
            },
            "--every-hop" => every_hop = true,
            "-h" | "--help" => return usage(),
            p if path.is_none() => path = Some(p.to_string()),
            _ => return usage(),
        }
    }
    let Some(path) = path else { return usage() };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{path}: cannot read: {e}");
            return ExitCode::from(2);
        }
    };
    let format = if path.ends_with(".json") {
        Format::Json
    } else {
        Format::Toml
    };
    let result = scenario::parse(&text, format)
        .map_err(Error::from)
        .and_then(|mut sc| {
            if let Some(s) = seed {
                sc.seed = s;
            }
            let dir = pcap_dir.unwrap_or_else(|| {
                out.as_deref()
                    .and_then(|o| Path::new(o).parent())
                    .filter(|p| !p.as_os_str().is_empty())
                    .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
            });
            if !sc.capture.is_empty() {
                eprintln!("capture files: {}", dir.display());
            }
            let opts = RunOptions {
                pcap_dir: Some(dir),
                every_hop,
                ..Default::default()
            };
            qoslab::run_with(&sc, &opts)
        });
    match result {
        Ok(r) => {
            let json = serde_json::to_string(&r).expect("results serialise");
            match out {
                Some(o) => {
                    if let Err(e) = std::fs::write(&o, json) {
                        eprintln!("{o}: cannot write: {e}");
                        return ExitCode::from(1);
                    }
                }
                None => println!("{json}"),
            }
            ExitCode::SUCCESS
        }
        Err(Error::Scenario(e)) => {
            eprintln!("{path}: {e}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("{path}: run failed: {e}");
            ExitCode::from(1)
        }
    }
}

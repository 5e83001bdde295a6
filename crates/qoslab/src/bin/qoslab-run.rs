//! `qoslab-run SCENARIO.toml [--seed N] [--out FILE]`: runs a scenario and writes its
//! results as JSON (to stdout, or FILE). Exit code 2 on a bad scenario, 1 on a failed
//! run. The engine is usable from the shell before (and without) the Python package.

use std::process::ExitCode;

use qoslab::error::Error;
use qoslab::scenario::Format;

fn usage() -> ExitCode {
    eprintln!("usage: qoslab-run SCENARIO.toml|.json [--seed N] [--out FILE]");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mut path, mut seed, mut out) = (None, None, None);
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
    match qoslab::run_str(&text, format, seed) {
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

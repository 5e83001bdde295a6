//! `qoslab-run SCENARIO [--seed N]`: runs a scenario and prints its results as JSON.
fn main() {}

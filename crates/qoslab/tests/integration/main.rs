//! qoslab's integration tests: one binary, one module per concern.

mod common;
mod conservation;
mod determinism;
mod scenario_errors;
mod udp;

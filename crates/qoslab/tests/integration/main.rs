//! qoslab's integration tests: one binary, one module per concern.

mod capture;
mod common;
mod conservation;
mod cut;
mod determinism;
mod diffserv;
mod drop_events;
mod eruf;
mod events;
mod layers;
mod multcp;
mod ptcp;
mod qosmgr;
mod routing;
mod rtt_aware;
mod scenario_errors;
mod snapshots;
mod stripe;
mod tcp;
mod trc;
mod udp;
mod web;

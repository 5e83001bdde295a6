//! What a run measures: per-flow goodput, drops by place and cause, queue samples,
//! traces; and fairness indices as library functions.

mod collect;
mod conditioners;
pub mod delay;
mod drops;
mod eruf;
pub mod fairness;
mod flows;
mod ptcp;
mod qosmgr;
mod queues;
mod rtt_markers;
pub(crate) mod silent;
mod stripe;
mod summary;
mod table;
mod tcp;
mod telnet;
mod trc;
mod web;

pub use collect::collect;
pub use table::{Column, RunResult, Table};
pub use telnet::{insert_telnet_tables, TelnetRow};
pub use web::{insert_web_tables, WebObjectRow, WebPageRow};

//! What a run measures: per-flow goodput, drops by place and cause, queue samples,
//! traces; and fairness indices as library functions.

pub mod fairness;
mod table;

pub use table::{Column, RunResult, Table};

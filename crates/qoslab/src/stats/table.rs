//! Column tables: how a run hands its measurements to Python and to files.

use std::collections::BTreeMap;

use serde::Serialize;

/// One column of a result table.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Column {
    /// Integers (counts, bytes, ids).
    Int(Vec<i64>),
    /// Floats (times in seconds, rates in bit/s).
    Float(Vec<f64>),
    /// Text (names, causes).
    Str(Vec<String>),
}

impl Column {
    /// Number of rows.
    pub fn len(&self) -> usize {
        match self {
            Column::Int(v) => v.len(),
            Column::Float(v) => v.len(),
            Column::Str(v) => v.len(),
        }
    }
    /// True if the column has no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A table: named columns of equal length, in a fixed column order.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Table {
    /// Column names in order.
    pub names: Vec<String>,
    /// Columns, parallel to `names`.
    pub columns: Vec<Column>,
}

impl Table {
    /// Adds a column; all columns must have the same length.
    pub fn push(&mut self, name: &str, col: Column) {
        debug_assert!(self.columns.first().is_none_or(|c| c.len() == col.len()));
        self.names.push(name.to_string());
        self.columns.push(col);
    }
    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, Column::len)
    }
    /// The column called `name`.
    pub fn get(&self, name: &str) -> Option<&Column> {
        self.names
            .iter()
            .position(|n| n == name)
            .map(|i| &self.columns[i])
    }
}

/// Everything a run produced: a summary and named tables.
///
/// Tables (columns in brackets; times in seconds, rates in bit/s, sizes in bytes):
/// - `flows`: one row per flow (totals after the warm-up).
/// - `series`: per flow and interval, goodput and cumulative bytes.
/// - `drops`: per place and cause, packets and bytes dropped.
/// - `queues`: per interface, arrivals, departures, drops, marks.
/// - `queue_samples`: per sampled interface and time, occupancy and average.
/// - `traces`: per traced flow, time, variable, value (cwnd, ssthresh, srtt, rto, …).
#[derive(Clone, Debug, Default, Serialize)]
pub struct RunResult {
    /// Scalars: name, seed, duration, warm-up, events, wall time, packet hops, version.
    pub summary: BTreeMap<String, serde_json::Value>,
    /// Named tables.
    pub tables: BTreeMap<String, Table>,
}

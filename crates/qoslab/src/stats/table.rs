//! Column tables: how a run hands its measurements to Python and to files.

use std::collections::BTreeMap;

use serde::Serialize;

/// One column of a result table.
#[derive(Clone, Debug, PartialEq)]
pub enum Column {
    /// Integers (counts, bytes, ids).
    Int(Vec<i64>),
    /// Floats (times in seconds, rates in bit/s).
    Float(Vec<f64>),
    /// Text (names, causes).
    Str(Vec<String>),
    /// Text from a few distinct values: row i is `values[codes[i]]` (no string per row).
    Cat {
        /// The distinct values.
        values: Vec<String>,
        /// One index into `values` per row.
        codes: Vec<u32>,
    },
}

impl Column {
    /// A categorical column of `rows`, each a string slice.
    pub fn cat<'a>(rows: impl IntoIterator<Item = &'a str>) -> Column {
        let mut index: std::collections::HashMap<&'a str, u32> = std::collections::HashMap::new();
        let mut values = Vec::new();
        let codes = rows
            .into_iter()
            .map(|s| {
                *index.entry(s).or_insert_with(|| {
                    values.push(s.to_string());
                    (values.len() - 1) as u32
                })
            })
            .collect();
        Column::Cat { values, codes }
    }
    /// Row `i` as text, for text columns.
    pub fn str_at(&self, i: usize) -> Option<&str> {
        match self {
            Column::Str(v) => v.get(i).map(String::as_str),
            Column::Cat { values, codes } => codes.get(i).map(|&c| values[c as usize].as_str()),
            _ => None,
        }
    }
}

/// A categorical column of names, one a row (the result tables' text columns).
pub(super) fn names(v: Vec<&str>) -> Column {
    Column::cat(v)
}

/// Text columns serialise as plain lists of strings, categorical or not.
impl Serialize for Column {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        match self {
            Column::Int(v) => v.serialize(s),
            Column::Float(v) => v.serialize(s),
            Column::Str(v) => v.serialize(s),
            Column::Cat { values, codes } => {
                let mut seq = s.serialize_seq(Some(codes.len()))?;
                for &c in codes {
                    seq.serialize_element(&values[c as usize])?;
                }
                seq.end()
            }
        }
    }
}

impl Column {
    /// Number of rows.
    pub fn len(&self) -> usize {
        match self {
            Column::Int(v) => v.len(),
            Column::Float(v) => v.len(),
            Column::Str(v) => v.len(),
            Column::Cat { codes, .. } => codes.len(),
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
/// - `colours`: per metering stage and flow, packets and bytes green / yellow / red.
/// - `queue_colour_samples`: per-colour averages of sampled RIO-C, RIO-D, WRED queues.
/// - `flow_classes`: per flow, the DiffServ class its data arrived in.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RunResult {
    /// Scalars: name, seed, duration, warm-up, events, wall time, packet hops, version.
    pub summary: BTreeMap<String, serde_json::Value>,
    /// Named tables.
    pub tables: BTreeMap<String, Table>,
}

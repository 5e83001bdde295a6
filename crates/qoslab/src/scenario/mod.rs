//! Scenario files: the serde model, validation with precise errors, and the world
//! builder.
//!
//! Every error names the key path (`flow[2].cbr.rate`) and what was expected; unknown
//! keys are errors, never silently ignored.

mod build;
mod eruf;
mod flows;
mod model;
mod plausible;
mod qosmgr;
mod trc;

pub use crate::units::{self, Bytes};
pub use build::build;
pub use model::{AppSpec, FlowSpec, LinkSpec, NodeSpec, RecordSpec, Scenario, TcpAppSpec};

use crate::config::ScenarioError;

/// The text format of a scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// TOML, the format users write.
    Toml,
    /// JSON, what the Python side sends after applying overrides.
    Json,
}

/// 1-based line and column of byte `offset` in `text`.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before
        .rfind('\n')
        .map_or(before.len(), |i| before.len() - i - 1)
        + 1;
    (line, col)
}

/// How deeply tables and lists may nest; real scenarios use fewer than ten levels.
pub const MAX_DEPTH: usize = 32;

/// An error at `outer` (serde's path) whose message may carry a path inside a buffered
/// table (`crate::de`): the key is the two joined, the message in the user's words.
fn located(outer: String, message: &str) -> ScenarioError {
    let outer = if outer == "." { String::new() } else { outer };
    let (inner, msg) = crate::config::decode(message);
    ScenarioError::new(
        crate::config::join(&outer, &inner),
        crate::config::humane(&msg),
    )
}

/// `err` saying which node its key is under by name (`node[3].pos` gets `node "r1": `
/// before its message), the name looked up by `name(index)`; other errors as they are.
fn name_node(mut err: ScenarioError, name: impl Fn(usize) -> Option<String>) -> ScenarioError {
    let index = (err.key.strip_prefix("node["))
        .and_then(|rest| rest.split_once(']'))
        .and_then(|(i, _)| i.parse().ok());
    if let Some(n) = index.and_then(name) {
        err.message = format!("node {n:?}: {}", err.message);
    }
    err
}

/// Checks the shape of a parsed TOML tree serde cannot: nesting depth and non-finite
/// numbers (TOML has `nan` and `inf`; no quantity in a scenario may be either).
fn check_toml_tree(v: &toml::Value, path: &str, depth: usize) -> Result<(), ScenarioError> {
    if depth > MAX_DEPTH {
        return Err(ScenarioError::new(
            path,
            format!("tables and lists nest more than {MAX_DEPTH} levels deep here"),
        ));
    }
    match v {
        toml::Value::Float(f) if !f.is_finite() => Err(ScenarioError::new(
            path,
            format!("expected a finite number, found {f}"),
        )),
        toml::Value::Array(a) => a
            .iter()
            .enumerate()
            .try_for_each(|(i, x)| check_toml_tree(x, &format!("{path}[{i}]"), depth + 1)),
        toml::Value::Table(t) => t
            .iter()
            .try_for_each(|(k, x)| check_toml_tree(x, &crate::config::join(path, k), depth + 1)),
        _ => Ok(()),
    }
}

/// Checks the nesting depth of a parsed JSON tree.
fn check_json_depth(v: &serde_json::Value, path: &str, depth: usize) -> Result<(), ScenarioError> {
    if depth > MAX_DEPTH {
        return Err(ScenarioError::new(
            path,
            format!("tables and lists nest more than {MAX_DEPTH} levels deep here"),
        ));
    }
    match v {
        serde_json::Value::Array(a) => a
            .iter()
            .enumerate()
            .try_for_each(|(i, x)| check_json_depth(x, &format!("{path}[{i}]"), depth + 1)),
        serde_json::Value::Object(o) => o
            .iter()
            .try_for_each(|(k, x)| check_json_depth(x, &crate::config::join(path, k), depth + 1)),
        _ => Ok(()),
    }
}

/// Reads a scenario from text; errors carry the key path and, for TOML, the line.
///
/// A leading UTF-8 byte-order mark is ignored.
pub fn parse(text: &str, format: Format) -> Result<Scenario, ScenarioError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    match format {
        Format::Toml => {
            // The tree first: nesting and nan/inf are found with their paths, and a
            // syntax error gets its line.
            let tree = text.parse::<toml::Table>().map_err(|e| {
                let mut msg = crate::config::humane(e.message());
                if let Some(span) = e.span() {
                    let (l, c) = line_col(text, span.start);
                    msg = format!("{msg} (line {l}, column {c})");
                }
                ScenarioError::new("", msg)
            })?;
            let tree = toml::Value::Table(tree);
            check_toml_tree(&tree, "", 0)?;
            let de = toml::Deserializer::new(text);
            serde_path_to_error::deserialize(de).map_err(|e| {
                let path = e.path().to_string();
                let inner = e.into_inner();
                let mut err = located(path, inner.message());
                if let Some(span) = inner.span() {
                    let (l, c) = line_col(text, span.start);
                    err.message = format!("{} (line {l}, column {c})", err.message);
                }
                name_node(err, |i| {
                    let name = tree.get("node")?.get(i)?.get("name")?;
                    name.as_str().map(str::to_string)
                })
            })
        }
        Format::Json => {
            let tree: serde_json::Value = serde_json::from_str(text).map_err(|e| {
                let hint = if e.to_string().starts_with("expected value") {
                    " (JSON numbers must be finite: no NaN or Infinity)"
                } else {
                    ""
                };
                ScenarioError::new(
                    "",
                    format!("{}{hint}", crate::config::humane(&e.to_string())),
                )
            })?;
            check_json_depth(&tree, "", 0)?;
            let mut de = serde_json::Deserializer::from_str(text);
            serde_path_to_error::deserialize(&mut de).map_err(|e| {
                let path = e.path().to_string();
                let err = located(path, &e.into_inner().to_string());
                name_node(err, |i| {
                    let name = tree.get("node")?.get(i)?.get("name")?;
                    name.as_str().map(str::to_string)
                })
            })
        }
    }
}

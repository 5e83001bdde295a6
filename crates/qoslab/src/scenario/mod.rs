//! Scenario files: the serde model, validation with precise errors, and the world
//! builder.
//!
//! Every error names the key path (`flow[2].cbr.rate`) and what was expected; unknown
//! keys are errors, never silently ignored.

mod build;
mod model;
pub mod units;

pub use build::build;
pub use model::{FlowSpec, LinkSpec, NodeSpec, RecordSpec, Scenario};
pub use units::Bytes;

use crate::error::ScenarioError;

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

/// Reads a scenario from text; errors carry the key path and, for TOML, the line.
pub fn parse(text: &str, format: Format) -> Result<Scenario, ScenarioError> {
    match format {
        Format::Toml => {
            let de = toml::Deserializer::new(text);
            serde_path_to_error::deserialize(de).map_err(|e| {
                let path = e.path().to_string();
                let inner = e.into_inner();
                let mut msg = inner.message().to_string();
                if let Some(span) = inner.span() {
                    let (l, c) = line_col(text, span.start);
                    msg = format!("{msg} (line {l}, column {c})");
                }
                ScenarioError::new(if path == "." { String::new() } else { path }, msg)
            })
        }
        Format::Json => {
            let mut de = serde_json::Deserializer::from_str(text);
            serde_path_to_error::deserialize(&mut de).map_err(|e| {
                let path = e.path().to_string();
                let inner = e.into_inner();
                ScenarioError::new(
                    if path == "." { String::new() } else { path },
                    inner.to_string(),
                )
            })
        }
    }
}

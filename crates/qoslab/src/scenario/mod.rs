//! Scenario files: the serde model, validation with precise errors, and the world
//! builder.

/// The text format of a scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// TOML, the format users write.
    Toml,
    /// JSON, what the Python side sends after applying overrides.
    Json,
}

pub mod units;

pub use units::Bytes;

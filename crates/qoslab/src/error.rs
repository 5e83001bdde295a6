//! Error types, one per area; none knows anything of Python.

use thiserror::Error;

/// A scenario could not be read or is not valid.
///
/// `key` is the path of the offending key (`flow[2].rate`), `expected` says what would
/// have been accepted. The run never starts; nothing is lost.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("{key}: {message}")]
pub struct ScenarioError {
    /// Path of the offending key, e.g. `link[0].rate`; empty for whole-file errors.
    pub key: String,
    /// What was wrong and what was expected.
    pub message: String,
}

impl ScenarioError {
    /// An error at `key` with `message`.
    pub fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        ScenarioError {
            key: key.into(),
            message: message.into(),
        }
    }
}

/// A run failed after the scenario was accepted (a bug or a resource limit).
#[derive(Clone, Debug, Error, PartialEq)]
pub enum RunError {
    /// The run was interrupted (Ctrl-C) at the given simulated time [s].
    #[error("interrupted at t={0}s")]
    Interrupted(f64),
    /// The run exceeded its event budget (a guard against runaway scenarios).
    #[error("event budget of {0} events exhausted at t={1}s")]
    EventBudget(u64, f64),
    /// An internal invariant broke; the message says which.
    #[error("internal error: {0}")]
    Internal(String),
}

/// Any error qoslab returns.
#[derive(Clone, Debug, Error, PartialEq)]
pub enum Error {
    /// Bad scenario input.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// The simulation itself failed.
    #[error(transparent)]
    Run(#[from] RunError),
    /// A capture file could not be written (the run's results are lost with it).
    #[error(transparent)]
    Capture(#[from] crate::capture::CaptureError),
}

/// Returns early with a [`ScenarioError`] at `key` unless `cond` holds.
#[macro_export]
macro_rules! ensure_scenario {
    ($cond:expr, $key:expr, $($fmt:tt)+) => {
        if !($cond) {
            return Err($crate::error::ScenarioError::new($key, format!($($fmt)+)).into());
        }
    };
}

//! Maps the engine's errors to Python exceptions: one `match` arm per variant.

use pyo3::prelude::*;
use qoslab::error::{Error, RunError};

use crate::exceptions::{ScenarioError, SimulationError};

/// Converts an engine error into the matching Python exception.
///
/// A `ScenarioError` carries `key` (the key path, `""` for whole-file errors) and
/// `detail` (the message without the key) as attributes, so the Python side can
/// prefix the file name without re-parsing the text.
pub fn to_pyerr(py: Python<'_>, err: Error) -> PyErr {
    match err {
        Error::Scenario(e) => {
            let text = if e.key.is_empty() {
                e.message.clone()
            } else {
                format!("{}: {}", e.key, e.message)
            };
            let pyerr = ScenarioError::new_err(text);
            let value = pyerr.value(py);
            // Setting attributes on a fresh exception instance cannot fail in practice;
            // if it ever does, the message alone still says everything.
            let _ = value.setattr("key", e.key);
            let _ = value.setattr("detail", e.message);
            pyerr
        }
        Error::Run(e @ RunError::EventBudget(..)) => SimulationError::new_err(e.to_string()),
        Error::Run(e @ RunError::Internal(_)) => SimulationError::new_err(e.to_string()),
        Error::Run(e @ RunError::Interrupted(_)) => {
            pyo3::exceptions::PyKeyboardInterrupt::new_err(format!("qoslab run {e}"))
        }
        Error::Capture(e) => SimulationError::new_err(format!("packet capture: {e}")),
        Error::LiveUnavailable(m) => pyo3::exceptions::PyPermissionError::new_err(m),
        Error::Live(m) => SimulationError::new_err(format!("live run: {m}")),
    }
}

/// True when `QOSLAB_PANIC_ON_ERR=1`: errors panic (with a backtrace under
/// `RUST_BACKTRACE=1`) and panics are not caught, for debugging the engine.
pub fn panic_on_err() -> bool {
    std::env::var_os("QOSLAB_PANIC_ON_ERR").is_some_and(|v| v == "1")
}

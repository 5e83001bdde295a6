//! Python bindings for qoslab: the extension module `qoslab._core`.
//!
//! Bindings only; everything a user sees is in `python/qoslab`. The module exposes
//! `run`, `check`, `version` and the exception hierarchy
//! `QoslabError > ScenarioError, SimulationError`.

mod convert;
mod error;
mod exceptions;
mod run;
mod trc;

use pyo3::prelude::*;

/// The `qoslab._core` extension module.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("QoslabError", py.get_type::<exceptions::QoslabError>())?;
    m.add("ScenarioError", py.get_type::<exceptions::ScenarioError>())?;
    m.add(
        "SimulationError",
        py.get_type::<exceptions::SimulationError>(),
    )?;
    m.add_function(wrap_pyfunction!(run::run, m)?)?;
    m.add_function(wrap_pyfunction!(run::check, m)?)?;
    m.add_function(wrap_pyfunction!(run::live, m)?)?;
    m.add_function(wrap_pyfunction!(run::live_sweep, m)?)?;
    m.add_function(wrap_pyfunction!(run::version, m)?)?;
    m.add_function(wrap_pyfunction!(run::build_id, m)?)?;
    m.add_function(wrap_pyfunction!(run::_panic_for_test, m)?)?;
    m.add_function(wrap_pyfunction!(trc::trc_parameters, m)?)?;
    m.add_function(wrap_pyfunction!(trc::trc_cycle_time, m)?)?;
    m.add_function(wrap_pyfunction!(trc::trc_model_name, m)?)?;
    m.add_function(wrap_pyfunction!(trc::trc_fitted_models, m)?)?;
    m.add_function(wrap_pyfunction!(trc::trc_model_cycle, m)?)?;
    m.add_function(wrap_pyfunction!(trc::trc_cycle, m)?)?;
    Ok(())
}

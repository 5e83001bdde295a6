//! `run`, `check` and `version`: GIL released during runs, panics caught.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use qoslab::error::Error;
use qoslab::scenario::Format;

use crate::convert::result_to_py;
use crate::error::{panic_on_err, to_pyerr};
use crate::exceptions::SimulationError;

fn parse_format(format: &str) -> PyResult<Format> {
    match format {
        "json" => Ok(Format::Json),
        "toml" => Ok(Format::Toml),
        other => Err(PyValueError::new_err(format!(
            "format must be \"json\" or \"toml\", not {other:?}"
        ))),
    }
}

/// Runs `f` without the GIL; a panic becomes a `SimulationError` (unless
/// `QOSLAB_PANIC_ON_ERR=1`, when errors and panics propagate with their backtrace).
fn guarded<T: Send>(
    py: Python<'_>,
    what: &str,
    f: impl FnOnce() -> Result<T, Error> + Send,
) -> PyResult<T> {
    if panic_on_err() {
        return match py.allow_threads(f) {
            Ok(v) => Ok(v),
            Err(e) => panic!("{what} failed (QOSLAB_PANIC_ON_ERR=1): {e}"),
        };
    }
    match py.allow_threads(|| catch_unwind(AssertUnwindSafe(f))) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(to_pyerr(py, e)),
        Err(payload) => Err(panic_error(what, payload.as_ref())),
    }
}

/// Runs `f` in a worker thread without the GIL, checking for Ctrl-C (Python's signal
/// handlers) every 50 ms meanwhile: on a signal the run is told to stop through
/// `interrupt` and the signal's exception (KeyboardInterrupt) is raised once it has.
/// A result arrives as soon as the run ends; the checks cost no latency. Past
/// `max_wall` seconds of wall-clock time the run is stopped the same way and a
/// `SimulationError` says so.
fn interruptible<T: Send + 'static>(
    py: Python<'_>,
    what: &str,
    interrupt: Arc<AtomicBool>,
    max_wall: Option<f64>,
    f: impl FnOnce() -> Result<T, Error> + Send + 'static,
) -> PyResult<T> {
    let t0 = Instant::now();
    if panic_on_err() {
        return guarded(py, what, f);
    }
    let (tx, rx) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        // The receiver may be gone if the caller was interrupted; nothing to tell then.
        let _ = tx.send(catch_unwind(AssertUnwindSafe(f)));
    });
    let mut rx = rx;
    loop {
        // The receiver is moved in and out: `allow_threads` needs a `Send` closure, and a
        // `&Receiver` is not one.
        let (got, back) = py.allow_threads(move || {
            let got = rx.recv_timeout(Duration::from_millis(50));
            (got, rx)
        });
        rx = back;
        match got {
            Ok(outcome) => {
                let _ = worker.join();
                return match outcome {
                    Ok(Ok(v)) => Ok(v),
                    Ok(Err(e)) => Err(to_pyerr(py, e)),
                    Err(payload) => Err(panic_error(what, payload.as_ref())),
                };
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Some(limit) = max_wall.filter(|&m| t0.elapsed().as_secs_f64() > m) {
                    interrupt.store(true, Ordering::Relaxed);
                    py.allow_threads(move || {
                        let _ = rx.recv();
                        let _ = worker.join();
                    });
                    return Err(SimulationError::new_err(format!(
                        "{what} was stopped after {limit} s of wall-clock time (its max_wall \
                         limit); raise the limit or shorten the scenario"
                    )));
                }
                if let Err(signal) = py.check_signals() {
                    interrupt.store(true, Ordering::Relaxed);
                    py.allow_threads(move || {
                        let _ = rx.recv();
                        let _ = worker.join();
                    });
                    return Err(signal);
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let _ = worker.join();
                return Err(SimulationError::new_err(format!(
                    "the engine thread ended without a result during {what} (a qoslab bug)"
                )));
            }
        }
    }
}

/// A panic payload as a `SimulationError`.
fn panic_error(what: &str, payload: &(dyn std::any::Any + Send)) -> PyErr {
    let msg = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string());
    SimulationError::new_err(format!(
        "the engine panicked during {what}: {msg} (this is a qoslab bug; \
         rerun with QOSLAB_PANIC_ON_ERR=1 RUST_BACKTRACE=1 for a backtrace)"
    ))
}

/// Runs a scenario given as text and returns its results as plain Python objects;
/// `[[capture]]` pcap files go to `pcap_dir` (not written when it is `None`); a run
/// longer than `max_wall` seconds of wall-clock time is stopped (`SimulationError`).
#[pyfunction]
#[pyo3(signature = (scenario, format = "json", seed = None, pcap_dir = None, max_wall = None))]
pub fn run<'py>(
    py: Python<'py>,
    scenario: &str,
    format: &str,
    seed: Option<u64>,
    pcap_dir: Option<std::path::PathBuf>,
    max_wall: Option<f64>,
) -> PyResult<Bound<'py, PyDict>> {
    let fmt = parse_format(format)?;
    if let Some(m) = max_wall.filter(|m| !(m.is_finite() && *m > 0.0)) {
        return Err(PyValueError::new_err(format!(
            "max_wall must be a positive number of seconds, not {m}"
        )));
    }
    let text = scenario.to_string();
    let flag = Arc::new(AtomicBool::new(false));
    let opts = qoslab::RunOptions {
        pcap_dir,
        interrupt: Some(flag.clone()),
        ..Default::default()
    };
    let result = interruptible(py, "the run", flag, max_wall, move || {
        let mut sc = qoslab::scenario::parse(&text, fmt)?;
        if let Some(s) = seed {
            sc.seed = s;
        }
        qoslab::run_with(&sc, &opts)
    })?;
    result_to_py(py, &result)
}

/// Runs a scenario live (real Linux TCP through qoslab's datapath; root and
/// `/dev/net/tun` needed): `agent` is the argv of the program run in each host's
/// namespace, `work_dir` where its configs and logs go.
#[pyfunction]
#[pyo3(signature = (scenario, agent, format = "json", seed = None, work_dir = None))]
pub fn live<'py>(
    py: Python<'py>,
    scenario: &str,
    agent: Vec<String>,
    format: &str,
    seed: Option<u64>,
    work_dir: Option<std::path::PathBuf>,
) -> PyResult<Bound<'py, PyDict>> {
    let fmt = parse_format(format)?;
    let text = scenario.to_string();
    let flag = Arc::new(AtomicBool::new(false));
    let f2 = flag.clone();
    let result = interruptible(py, "the live run", flag, None, move || {
        let mut sc = qoslab::scenario::parse(&text, fmt)?;
        if let Some(s) = seed {
            sc.seed = s;
        }
        run_live(&sc, agent, work_dir, f2)
    })?;
    result_to_py(py, &result)
}

#[cfg(target_os = "linux")]
fn run_live(
    sc: &qoslab::scenario::Scenario,
    agent: Vec<String>,
    work_dir: Option<std::path::PathBuf>,
    flag: Arc<AtomicBool>,
) -> Result<qoslab::stats::RunResult, Error> {
    let opts = qoslab::live::LiveOptions {
        agent,
        work_dir,
        interrupt: Some(flag),
    };
    qoslab::live::run_live(sc, &opts)
}

#[cfg(not(target_os = "linux"))]
fn run_live(
    _sc: &qoslab::scenario::Scenario,
    _agent: Vec<String>,
    _work_dir: Option<std::path::PathBuf>,
    _flag: Arc<AtomicBool>,
) -> Result<qoslab::stats::RunResult, Error> {
    Err(Error::LiveUnavailable("live mode needs Linux".into()))
}

/// Removes leftovers (namespaces and their processes) of live runs whose owner died;
/// returns their names.
#[pyfunction]
pub fn live_sweep() -> Vec<String> {
    #[cfg(target_os = "linux")]
    {
        qoslab::live::sweep_leftovers()
    }
    #[cfg(not(target_os = "linux"))]
    {
        Vec::new()
    }
}

/// Parses and validates a scenario without running it; returns the warnings known
/// before a run.
#[pyfunction]
#[pyo3(signature = (scenario, format = "json"))]
pub fn check(py: Python<'_>, scenario: &str, format: &str) -> PyResult<Vec<String>> {
    let fmt = parse_format(format)?;
    guarded(py, "the check", || qoslab::check_warnings(scenario, fmt))
}

/// The engine's version.
#[pyfunction]
pub fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// The engine's build id: version plus a hash of the engine's and bindings' sources
/// (computed at build time by `build.rs`); results of another build are stale.
#[pyfunction]
pub fn build_id() -> &'static str {
    env!("QOSLAB_BUILD_ID")
}

/// Panics inside the same guard a run uses; lets the tests prove that a panic
/// arrives as `SimulationError` and never aborts the interpreter.
#[pyfunction]
pub fn _panic_for_test(py: Python<'_>) -> PyResult<()> {
    guarded(py, "the panic test", || -> Result<(), Error> {
        panic!("deliberate panic for the test suite")
    })
}

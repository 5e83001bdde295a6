//! `trc_parameters`: P1's parameter computation (Figs. 2 and 3), the engine's own code.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use qoslab::cond::trc::model::{self, Branch, TcpModel, TrcInputs};

/// p, W_max, RTT_TRC, … for one request; rates in bit/s, times in seconds.
#[pyfunction]
#[pyo3(signature = (rate, mss = 1460, rtt_net = 0.0, rtt_dev = 0.010, gput_error = 0.05,
                    rtt_min = None, model = "fitted", ecn = false))]
#[allow(clippy::too_many_arguments)]
pub fn trc_parameters<'py>(
    py: Python<'py>,
    rate: f64,
    mss: u32,
    rtt_net: f64,
    rtt_dev: f64,
    gput_error: f64,
    rtt_min: Option<f64>,
    model: &str,
    ecn: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let model = parse_model(model)?;
    let p = model::parameters(&TrcInputs {
        rate,
        mss,
        rtt_net,
        rtt_dev,
        gput_error,
        rtt_min_star: rtt_min,
        model,
        ecn,
    })
    .map_err(PyValueError::new_err)?;
    let d = PyDict::new(py);
    d.set_item("rate", rate)?;
    d.set_item("target", p.target)?;
    d.set_item("rtt_min_star", p.rtt_min_star)?;
    d.set_item("rtt_min", p.rtt_min)?;
    d.set_item("w_max", p.w_max)?;
    d.set_item("p", p.p)?;
    d.set_item("e", p.e)?;
    d.set_item("drop_every", p.drop_every)?;
    d.set_item("w_avg", p.w_avg)?;
    d.set_item("rtt", p.rtt)?;
    d.set_item("rtt_trc", p.rtt_trc)?;
    d.set_item("predicted", p.predicted)?;
    d.set_item("buffer", p.buffer)?;
    d.set_item(
        "branch",
        match p.branch {
            Branch::Delay => "delay",
            Branch::RttMin => "rtt_min",
        },
    )?;
    d.set_item("model", model.name())?;
    Ok(d)
}

/// The TCP model named in Python (`"paper"` or `"fitted"`).
fn parse_model(model: &str) -> PyResult<TcpModel> {
    match model {
        "paper" => Ok(TcpModel::Paper),
        "fitted" => Ok(TcpModel::Fitted),
        other => Err(PyValueError::new_err(format!(
            "model must be \"paper\" or \"fitted\", not {other:?}"
        ))),
    }
}

/// The cycle-time law `(a, b)` of a model: time per cycle = a + b·W_max [RTTs].
#[pyfunction]
#[pyo3(signature = (model, ecn = false))]
pub fn trc_cycle_time(model: &str, ecn: bool) -> PyResult<(f64, f64)> {
    let m = parse_model(model)?;
    let c = m.cycle_time(ecn);
    Ok((c.a, c.b))
}

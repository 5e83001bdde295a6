//! `trc_parameters`: P1's parameter computation (Figs. 2 and 3), the engine's own code.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use qoslab::cond::trc::default_lead;
use qoslab::cond::trc::model::{self, Branch, TcpModel, TrcInputs};
use qoslab::tcp::TcpConfig;
use qoslab::time::Dur;

/// p, W_max, RTT_TRC, … for one request; rates in bit/s, times in seconds.
#[pyfunction]
#[pyo3(signature = (rate, mss = 1460, rtt_net = 0.0, rtt_dev = 0.010, gput_error = 0.05,
                    rtt_min = None, model = "fitted", ecn = false, tcp = None,
                    recovery_lead = None))]
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
    tcp: Option<&str>,
    recovery_lead: Option<f64>,
) -> PyResult<Bound<'py, PyDict>> {
    let cfg = tcp_config(tcp)?;
    // The TRC's own rule (`TrcConfig::lead`): the given lead, else RTT_dev for a TCP
    // whose RTO clock is at most RTT_dev fine.
    let lead = match recovery_lead {
        Some(l) if l.is_finite() && l >= 0.0 => l,
        Some(l) => {
            return Err(PyValueError::new_err(format!(
                "recovery_lead must be ≥ 0, found {l}"
            )))
        }
        None => default_lead(Dur::from_secs_f64(rtt_dev), cfg.granularity).as_secs_f64(),
    };
    let tcp = cfg.model_name();
    let m = parse_model(model);
    let lead_on = recovery_lead.is_none().then_some(lead > 0.0);
    let law = m.law(&cfg, lead_on, ecn).map_err(PyValueError::new_err)?;
    let inputs = TrcInputs {
        rate,
        mss,
        rtt_net,
        rtt_dev,
        gput_error,
        rtt_min_star: rtt_min,
        lead_room: lead,
        law,
        ecn,
    };
    let p = model::parameters(&inputs).map_err(PyValueError::new_err)?;
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
    d.set_item("model", m.name())?;
    d.set_item("tcp", tcp)?;
    d.set_item("a", law.a)?;
    d.set_item("b", law.b)?;
    d.set_item("knots", law.knots.to_vec())?;
    d.set_item("w_first", law.w_first)?;
    d.set_item("recovery_lead", inputs.applied_lead_room())?;
    Ok(d)
}

/// The TCP model named in Python: `"paper"`, `"fitted"` or a fitted model's name.
fn parse_model(model: &str) -> TcpModel {
    match model {
        "paper" => TcpModel::Paper,
        "fitted" => TcpModel::Fitted,
        other => TcpModel::Named(other.to_string()),
    }
}

/// A flow's TCP settings given as JSON (`None`: qoslab's defaults).
fn tcp_config(tcp: Option<&str>) -> PyResult<TcpConfig> {
    match tcp {
        None => Ok(TcpConfig::default()),
        Some(j) => {
            serde_json::from_str(j).map_err(|e| PyValueError::new_err(format!("tcp settings: {e}")))
        }
    }
}

/// The model name of a flow's TCP settings given as JSON (`None`: qoslab's defaults).
fn tcp_name(tcp: Option<&str>) -> PyResult<String> {
    Ok(tcp_config(tcp)?.model_name())
}

/// The TRC model name of TCP settings given as JSON (`None`: qoslab's defaults), e.g.
/// `"newreno-flight-lt-nodelack"`.
#[pyfunction]
#[pyo3(signature = (tcp = None))]
pub fn trc_model_name(tcp: Option<&str>) -> PyResult<String> {
    tcp_name(tcp)
}

/// The cycle-time law `(a, b)` of a model for TCP settings given as JSON (`None`:
/// qoslab's defaults): time per cycle = a + b·W_max [RTTs].
#[pyfunction]
#[pyo3(signature = (model, ecn = false, tcp = None))]
pub fn trc_cycle_time(model: &str, ecn: bool, tcp: Option<&str>) -> PyResult<(f64, f64)> {
    let c = law_for(model, ecn, tcp)?;
    Ok((c.a, c.b))
}

/// A law as `(a, b, knots, w_first)`.
type Law = (f64, f64, Vec<(f64, f64)>, f64);

/// Every fitted model: `(name, law with drops, law with ECN marks or None)`, each law
/// `(a, b, knots, w_first)` (w_first: the smallest W_max the TRC picks with it).
#[pyfunction]
pub fn trc_fitted_models() -> Vec<(String, Law, Option<Law>)> {
    let law = |c: model::CycleTime| (c.a, c.b, c.knots.to_vec(), c.w_first);
    model::builtin_models()
        .iter()
        .map(|m| (m.name.to_string(), law(m.drop), m.ecn.map(law)))
        .collect()
}

/// The law of `model` for TCP settings given as JSON, with the TRC's default recovery
/// lead (RTT_dev 10 ms).
fn law_for(model: &str, ecn: bool, tcp: Option<&str>) -> PyResult<model::CycleTime> {
    let cfg = tcp_config(tcp)?;
    let lead = default_lead(Dur::from_millis(10), cfg.granularity) > Dur::ZERO;
    parse_model(model)
        .law(&cfg, Some(lead), ecn)
        .map_err(PyValueError::new_err)
}

/// Time per cycle [RTTs] of a built-in model's own law at `w_max` (and total RTT `rtt`
/// [s]; `None`: its smallest RTT), matched to no flow's TCP: for tables of the models.
#[pyfunction]
#[pyo3(signature = (model, w_max, ecn = false, rtt = None))]
pub fn trc_model_cycle(model: &str, w_max: f64, ecn: bool, rtt: Option<f64>) -> PyResult<f64> {
    let m = model::fitted_model(model)
        .ok_or_else(|| PyValueError::new_err(format!("no built-in TRC model {model:?}")))?;
    let law = m.law(ecn).ok_or_else(|| {
        PyValueError::new_err(format!("TRC model {model:?} has no fit with ECN marks"))
    })?;
    Ok(law.cycle_at(w_max, rtt.unwrap_or(0.0)))
}

/// Time per cycle [RTTs] of a model at `w_max` (and total RTT `rtt` [s], for a law
/// measured per RTT; `None`: its smallest RTT), for TCP settings given as JSON.
#[pyfunction]
#[pyo3(signature = (model, w_max, ecn = false, tcp = None, rtt = None))]
pub fn trc_cycle(
    model: &str,
    w_max: f64,
    ecn: bool,
    tcp: Option<&str>,
    rtt: Option<f64>,
) -> PyResult<f64> {
    let c = law_for(model, ecn, tcp)?;
    Ok(c.cycle_at(w_max, rtt.unwrap_or(0.0)))
}

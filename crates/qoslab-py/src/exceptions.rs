//! The Python exception hierarchy (`create_exception!`), as polars does.

use pyo3::create_exception;
use pyo3::exceptions::PyException;

create_exception!(
    qoslab,
    QoslabError,
    PyException,
    "Base class of every error qoslab raises."
);
create_exception!(
    qoslab,
    ScenarioError,
    QoslabError,
    "A scenario could not be read or is not valid; `key` names the offending key path."
);
create_exception!(
    qoslab,
    SimulationError,
    QoslabError,
    "A run failed after its scenario was accepted (an engine bug or a resource limit)."
);

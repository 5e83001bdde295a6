//! qoslab's errors, each defined with its module and gathered here; none knows
//! anything of Python.

pub use crate::capture::CaptureError;
pub use crate::config::ScenarioError;
pub use crate::world::RunError;
pub use crate::Error;

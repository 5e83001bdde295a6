//! Checks shared by the conditioner configurations; keys are relative to the
//! conditioner's table.

use crate::config::ScenarioError;
use crate::time::Rate;
use crate::units::Bytes;

/// A rate that must be positive (serde refuses 0 in files; configs built in code too).
pub(crate) fn positive_rate(key: &str, r: Rate) -> Result<(), ScenarioError> {
    if r.bps() == 0 {
        return Err(ScenarioError::new(key, "a rate must be positive, found 0"));
    }
    Ok(())
}

/// A size that must be positive; `what` names it in the message.
pub(crate) fn positive_size(key: &str, b: Bytes, what: &str) -> Result<(), ScenarioError> {
    if b.0 == 0 {
        return Err(ScenarioError::new(
            key,
            format!("{what} must be positive, found 0 bytes"),
        ));
    }
    Ok(())
}

/// A peak rate at least the committed one (`rfc` cites the rule).
pub(crate) fn check_pir(cir: Rate, pir: Rate, rfc: &str) -> Result<(), ScenarioError> {
    if pir < cir {
        return Err(ScenarioError::new(
            "pir",
            format!("PIR ({pir}) must be at least CIR ({cir}) ({rfc})"),
        ));
    }
    Ok(())
}

/// `e` with `prefix` (`"rules[0]."`) put before its key.
pub(crate) fn prefixed(prefix: &str, mut e: ScenarioError) -> ScenarioError {
    e.key = if e.key.is_empty() {
        prefix.trim_end_matches('.').to_string()
    } else {
        format!("{prefix}{}", e.key)
    };
    e
}

//! A delay line: every packet is held for the same time (order is kept).

use serde::{Deserialize, Serialize};

use super::{Action, Conditioner};
use crate::packet::Packet;
use crate::time::{Dur, SimTime};

/// A delay line's keys in a scenario (`kind = "delay"`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DelayConfig {
    /// How long every packet is held.
    pub delay: Dur,
}

/// Holds each packet for a fixed time.
#[derive(Clone, Debug)]
pub struct FixedDelay {
    delay: Dur,
}

impl FixedDelay {
    /// A delay line of `delay`.
    pub fn new(delay: Dur) -> Self {
        FixedDelay { delay }
    }
}

impl Conditioner for FixedDelay {
    fn condition(&mut self, now: SimTime, _pkt: &mut Packet) -> Action {
        if self.delay == Dur::ZERO {
            Action::Pass
        } else {
            Action::DelayUntil(now + self.delay)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_by_exactly_the_configured_time() {
        let mut c = FixedDelay::new(Dur::from_millis(5));
        let mut p = Packet::default();
        assert_eq!(
            c.condition(SimTime::from_millis(1), &mut p),
            Action::DelayUntil(SimTime::from_millis(6))
        );
        let mut z = FixedDelay::new(Dur::ZERO);
        assert_eq!(z.condition(SimTime::ZERO, &mut p), Action::Pass);
    }
}

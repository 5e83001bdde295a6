//! Re-marking: set the DSCP of every packet, or of those carrying one of a set of
//! codepoints (RFC 2475 §2.3.3.3, "marker"; e.g. a domain boundary that maps AF12/AF13
//! down to AF11, or marks a voice aggregate EF).
//!
//! The stage writes the DSCP only: the drop precedence queues and later meters see is
//! what the node's DSCP table gives the new codepoint (see [`super::dscp`]).

use serde::{Deserialize, Serialize};

use super::{Action, Conditioner};
use crate::config::ScenarioError;
use crate::dscp::{check_dscp, de_dscp, DscpSet};
use crate::packet::Packet;
use crate::time::SimTime;

/// The keys of a set-DSCP stage (`kind = "set_dscp"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetDscpConfig {
    /// The codepoint written (a number or a PHB name).
    #[serde(deserialize_with = "de_dscp")]
    pub dscp: u8,
    /// Re-mark only packets carrying one of these codepoints (default: every packet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub only: Option<DscpSet>,
}

impl SetDscpConfig {
    /// Checks the codepoint; keys are relative to the stage's table.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        check_dscp("dscp", self.dscp)
    }

    /// The stage; call [`SetDscpConfig::validate`] first.
    pub fn build(&self) -> SetDscp {
        SetDscp {
            dscp: self.dscp,
            only: self.only.unwrap_or(DscpSet(u64::MAX)),
        }
    }
}

/// A set-DSCP stage: writes `dscp` into packets whose DSCP is in `only`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetDscp {
    dscp: u8,
    only: DscpSet,
}

impl Conditioner for SetDscp {
    #[inline]
    fn condition(&mut self, _now: SimTime, pkt: &mut Packet) -> Action {
        if self.only.contains(pkt.dscp) {
            pkt.dscp = self.dscp;
        }
        Action::Pass
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stage(text: &str) -> SetDscp {
        let c: SetDscpConfig = toml::from_str(text).unwrap();
        c.validate().unwrap();
        c.build()
    }

    #[test]
    fn sets_every_packet_or_only_the_listed_codepoints() {
        let mut all = stage("dscp = \"EF\"");
        let mut some = stage("dscp = \"AF11\"\nonly = [\"AF12\", \"AF13\"]");
        for d in [0u8, 10, 12, 14, 46] {
            let mut p = Packet {
                dscp: d,
                ..Default::default()
            };
            assert_eq!(all.condition(SimTime::ZERO, &mut p), Action::Pass);
            assert_eq!(p.dscp, 46);
            p.dscp = d;
            some.condition(SimTime::ZERO, &mut p);
            let want = if d == 12 || d == 14 { 10 } else { d };
            assert_eq!(p.dscp, want, "from {d}");
        }
    }

    #[test]
    fn out_of_range_codepoint_names_the_key() {
        let c: SetDscpConfig = toml::from_str("dscp = 64").unwrap();
        assert_eq!(c.validate().unwrap_err().key, "dscp");
        assert!(toml::from_str::<SetDscpConfig>("dscp = \"AF44\"").is_err());
    }
}

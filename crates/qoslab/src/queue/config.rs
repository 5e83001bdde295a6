//! Queue configuration as written in scenario files (placeholder: DropTail only).

use serde::{Deserialize, Serialize};

use super::{AnyQueue, DropTail, Limit};
use crate::error::ScenarioError;
use crate::rng::RngStream;
use crate::scenario::Bytes;
use crate::time::Rate;

/// A queue as written in a scenario: `{ kind = "droptail", limit = 100 }`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum QueueConfig {
    /// First-in first-out with tail drop.
    #[serde(rename = "droptail")]
    DropTail {
        /// Limit in packets (default 100 when no byte limit is given).
        #[serde(default)]
        limit: Option<u32>,
        /// Limit in bytes instead of packets.
        #[serde(default)]
        limit_bytes: Option<Bytes>,
    },
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig::DropTail {
            limit: Some(100),
            limit_bytes: None,
        }
    }
}

impl QueueConfig {
    /// Checks the values; the error key is relative to the queue table.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        match self {
            QueueConfig::DropTail { limit, limit_bytes } => {
                if limit.is_some() && limit_bytes.is_some() {
                    return Err(ScenarioError::new(
                        "limit_bytes",
                        "give either limit (packets) or limit_bytes, not both",
                    ));
                }
                if *limit == Some(0) {
                    return Err(ScenarioError::new(
                        "limit",
                        "expected a limit of at least 1 packet, found 0",
                    ));
                }
                if let Some(b) = limit_bytes {
                    if b.0 < 64 {
                        return Err(ScenarioError::new(
                            "limit_bytes",
                            format!("expected room for at least one packet, found {} bytes", b.0),
                        ));
                    }
                }
                Ok(())
            }
        }
    }

    /// Builds the queue for an interface of rate `link_rate`.
    pub fn build(&self, _link_rate: Rate, _rng: RngStream) -> AnyQueue {
        match self {
            QueueConfig::DropTail { limit, limit_bytes } => {
                let lim = match (limit, limit_bytes) {
                    (_, Some(b)) => Limit::Bytes(b.0),
                    (Some(n), None) => Limit::Packets(*n),
                    (None, None) => Limit::Packets(100),
                };
                AnyQueue::DropTail(DropTail::new(lim))
            }
        }
    }
}

//! Why a packet was discarded: the causes that queues (`queue/`), conditioners
//! (`cond/`) and the network count. It sits below both so that neither imports the
//! other for it.

use serde::Serialize;

/// Why a packet was discarded; a closed set, counted per place.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DropCause {
    /// The buffer was full (tail drop).
    Overflow,
    /// RED dropped it early, at random, with the average between the thresholds.
    RedEarly,
    /// RED dropped it because the average was above the maximum threshold.
    RedForced,
    /// Pushed out of a full shared buffer to make room (Longest Queue Drop; FQ-CoDel's
    /// drop from the head of the fattest queue, RFC 8290 §4.1).
    PushedOut,
    /// A policer found it out of profile.
    Policed,
    /// A conditioner's own buffer (shaper, delay line) was full.
    CondBufferFull,
    /// A controlled drop by a rate controller (TRC).
    Controlled,
    /// Random loss configured on a link (loss model).
    RandomLoss,
    /// The node had no route to the destination.
    NoRoute,
    /// CoDel dropped it at the head (RFC 8289 §5; also FQ-CoDel's per-queue CoDel).
    Codel,
    /// PIE dropped it at random on arrival (RFC 8033 §4.1).
    Pie,
}

impl DropCause {
    /// Every cause, in a fixed order (for tables and per-cause arrays).
    pub const ALL: [DropCause; 11] = [
        DropCause::Overflow,
        DropCause::RedEarly,
        DropCause::RedForced,
        DropCause::PushedOut,
        DropCause::Policed,
        DropCause::CondBufferFull,
        DropCause::Controlled,
        DropCause::RandomLoss,
        DropCause::NoRoute,
        DropCause::Codel,
        DropCause::Pie,
    ];
    /// Position in [`DropCause::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
    /// The snake_case name used in result tables.
    pub fn name(self) -> &'static str {
        match self {
            DropCause::Overflow => "overflow",
            DropCause::RedEarly => "red_early",
            DropCause::RedForced => "red_forced",
            DropCause::PushedOut => "pushed_out",
            DropCause::Policed => "policed",
            DropCause::CondBufferFull => "cond_buffer_full",
            DropCause::Controlled => "controlled",
            DropCause::RandomLoss => "random_loss",
            DropCause::NoRoute => "no_route",
            DropCause::Codel => "codel",
            DropCause::Pie => "pie",
        }
    }
}

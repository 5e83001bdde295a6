//! Queue settings as users write them in scenario files, their validation, and the
//! builder that turns them into an [`AnyQueue`].
//!
//! ```toml
//! queue = { kind = "droptail", limit = 100 }
//! queue = { kind = "droptail", limit_bytes = "64KB" }
//! queue = { kind = "red", limit = 100, min_th = 5, max_th = 15, max_p = 0.1, w_q = 0.002, gentle = true, ecn = false }
//! queue = { kind = "rio_c", limit = 100, dp2 = { min_th = 10, max_th = 25, max_p = 0.1 } }
//! queue = { kind = "ered", min_th = 5, max_th = 15, factor = 1.5 }
//! queue = { kind = "lqd", limit_bytes = "100KB", service = "drr", quantum = 1500 }
//! ```
//!
//! Limits are `limit` [packets] or `limit_bytes` [bytes, number or "64KB"], never both;
//! with neither, 100 packets. RED thresholds are in the unit of the limit: packets, or
//! bytes when `limit_bytes` is given (byte mode). Unknown keys are errors.

use serde::{Deserialize, Serialize};

use super::ered::Ered;
use super::lqd::{Lqd, Service};
use super::multired::{MultiRed, MultiRedMode, MultiRedSettings};
use super::red::{Red, RedParams, RedSettings};
use super::{AnyQueue, DropTail, Limit};
use crate::error::ScenarioError;
use crate::rng::RngStream;
use crate::scenario::Bytes;
use crate::time::Rate;

/// Packets held when a queue gives no limit.
pub const DEFAULT_LIMIT: u32 = 100;

fn d_min_th() -> f64 {
    5.0
}
fn d_max_th() -> f64 {
    15.0
}
fn d_max_p() -> f64 {
    0.1
}
fn d_w_q() -> f64 {
    0.002
}
fn d_mean_pkt_size() -> Bytes {
    Bytes(1000)
}
fn d_limit() -> u32 {
    DEFAULT_LIMIT
}
fn d_factor() -> f64 {
    1.5
}
fn d_quantum() -> Bytes {
    Bytes(1500)
}
fn d_dp0() -> RedThresholds {
    RedThresholds::new(40.0, 55.0, 0.02)
}
fn d_dp1() -> RedThresholds {
    RedThresholds::new(25.0, 40.0, 0.05)
}
fn d_dp2() -> RedThresholds {
    RedThresholds::new(10.0, 25.0, 0.1)
}
fn is_false(b: &bool) -> bool {
    !*b
}

/// One colour's RED curve in a multi-colour queue: `{ min_th, max_th, max_p }`, all
/// three required, thresholds in packets.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RedThresholds {
    /// Below this average nothing is dropped early [packets].
    pub min_th: f64,
    /// Average at which the probability reaches `max_p`; above it, forced drops [packets].
    pub max_th: f64,
    /// Early-drop probability at `max_th`, in (0, 1].
    pub max_p: f64,
}

impl RedThresholds {
    /// Thresholds from their three numbers.
    pub const fn new(min_th: f64, max_th: f64, max_p: f64) -> Self {
        RedThresholds {
            min_th,
            max_th,
            max_p,
        }
    }
    fn params(&self) -> RedParams {
        RedParams {
            min_th: self.min_th,
            max_th: self.max_th,
            max_p: self.max_p,
        }
    }
}

/// How an LQD buffer serves its per-flow queues.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum LqdService {
    /// Deficit round robin over backlogged flows, `quantum` bytes per round.
    #[default]
    Drr,
    /// Arrival order across flows.
    Fifo,
}

/// A queue discipline and its parameters, as written in a scenario file: a table
/// tagged by `kind` (read through [`crate::de::Tagged`], so errors name the exact key).
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(remote = "Self", rename_all = "snake_case", deny_unknown_fields)]
pub enum QueueConfig {
    /// FIFO with tail drop (`kind = "droptail"`).
    #[serde(rename = "droptail", alias = "drop_tail")]
    DropTail {
        /// Limit [packets]; default 100 when `limit_bytes` is not given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u32>,
        /// Limit [bytes], instead of `limit`; e.g. `"64KB"`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit_bytes: Option<Bytes>,
    },
    /// RED (Floyd & Jacobson 1993), optionally gentle and ECN-marking.
    Red {
        /// Limit [packets]; default 100 when `limit_bytes` is not given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u32>,
        /// Limit [bytes], instead of `limit`; makes RED byte-mode.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit_bytes: Option<Bytes>,
        /// Minimum threshold [packets, or bytes in byte mode]; default 5.
        #[serde(default = "d_min_th")]
        min_th: f64,
        /// Maximum threshold [packets, or bytes in byte mode]; default 15.
        #[serde(default = "d_max_th")]
        max_th: f64,
        /// Early-drop probability at `max_th`, in (0, 1]; default 0.1.
        #[serde(default = "d_max_p")]
        max_p: f64,
        /// Weight of the average, in (0, 1]; default 0.002 (F&J §6).
        #[serde(default = "d_w_q")]
        w_q: f64,
        /// Gentle variant (p from max_p to 1 between max_th and 2·max_th); default false.
        #[serde(default, skip_serializing_if = "is_false")]
        gentle: bool,
        /// Mark ECN-capable packets instead of dropping them early; default false.
        #[serde(default, skip_serializing_if = "is_false")]
        ecn: bool,
        /// ns-2/ns-3 "wait" spacing: no early drop until 1/p_b packets since the last,
        /// then p_b/(2 − count·p_b), so gaps are uniform on [1/p_b, 2/p_b] (a third of
        /// F&J's early-drop rate at the same average); default false (F&J 1993).
        #[serde(default, skip_serializing_if = "is_false")]
        wait: bool,
        /// Mean packet size for idle decay and byte-mode scaling [bytes]; default 1000.
        #[serde(default = "d_mean_pkt_size")]
        mean_pkt_size: Bytes,
    },
    /// Multi-colour RED, coupled averages (RIO-C), P3's defaults.
    RioC {
        /// Shared limit [packets]; default 100.
        #[serde(default = "d_limit")]
        limit: u32,
        /// Weight of the averages, in (0, 1]; default 0.002.
        #[serde(default = "d_w_q")]
        w_q: f64,
        /// Mean packet size for the idle decay [bytes]; default 1000.
        #[serde(default = "d_mean_pkt_size")]
        mean_pkt_size: Bytes,
        /// DP0 (green) curve; default {40, 55, 0.02}.
        #[serde(default = "d_dp0", alias = "green")]
        dp0: RedThresholds,
        /// DP1 (yellow) curve; default {25, 40, 0.05}.
        #[serde(default = "d_dp1", alias = "yellow")]
        dp1: RedThresholds,
        /// DP2 (red) curve; default {10, 25, 0.1}.
        #[serde(default = "d_dp2", alias = "red")]
        dp2: RedThresholds,
    },
    /// Multi-colour RED, decoupled per-colour averages (RIO-D), P3's defaults.
    RioD {
        /// Shared limit [packets]; default 100.
        #[serde(default = "d_limit")]
        limit: u32,
        /// Weight of the averages, in (0, 1]; default 0.002.
        #[serde(default = "d_w_q")]
        w_q: f64,
        /// Mean packet size for the idle decay [bytes]; default 1000.
        #[serde(default = "d_mean_pkt_size")]
        mean_pkt_size: Bytes,
        /// DP0 (green) curve; default {40, 55, 0.02}.
        #[serde(default = "d_dp0", alias = "green")]
        dp0: RedThresholds,
        /// DP1 (yellow) curve; default {25, 40, 0.05}.
        #[serde(default = "d_dp1", alias = "yellow")]
        dp1: RedThresholds,
        /// DP2 (red) curve; default {10, 25, 0.1}.
        #[serde(default = "d_dp2", alias = "red")]
        dp2: RedThresholds,
    },
    /// Weighted RED: one average, per-colour curves, P3's defaults.
    Wred {
        /// Shared limit [packets]; default 100.
        #[serde(default = "d_limit")]
        limit: u32,
        /// Weight of the average, in (0, 1]; default 0.002.
        #[serde(default = "d_w_q")]
        w_q: f64,
        /// Mean packet size for the idle decay [bytes]; default 1000.
        #[serde(default = "d_mean_pkt_size")]
        mean_pkt_size: Bytes,
        /// DP0 (green) curve; default {40, 55, 0.02}.
        #[serde(default = "d_dp0", alias = "green")]
        dp0: RedThresholds,
        /// DP1 (yellow) curve; default {25, 40, 0.05}.
        #[serde(default = "d_dp1", alias = "yellow")]
        dp1: RedThresholds,
        /// DP2 (red) curve; default {10, 25, 0.1}.
        #[serde(default = "d_dp2", alias = "red")]
        dp2: RedThresholds,
    },
    /// ERED (P0): RED whose curve applies to unmarked packets; packets marked in
    /// profile get p_b / `factor`.
    // The RED keys are repeated rather than shared through `#[serde(flatten)]`:
    // flatten disables `deny_unknown_fields`, and unknown keys must stay errors.
    Ered {
        /// Limit [packets]; default 100 when `limit_bytes` is not given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u32>,
        /// Limit [bytes], instead of `limit`; makes RED byte-mode.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit_bytes: Option<Bytes>,
        /// Minimum threshold [packets, or bytes in byte mode]; default 5.
        #[serde(default = "d_min_th")]
        min_th: f64,
        /// Maximum threshold [packets, or bytes in byte mode]; default 15.
        #[serde(default = "d_max_th")]
        max_th: f64,
        /// Early-drop probability of an unmarked packet at `max_th`; default 0.1.
        #[serde(default = "d_max_p")]
        max_p: f64,
        /// Weight of the average, in (0, 1]; default 0.002.
        #[serde(default = "d_w_q")]
        w_q: f64,
        /// Gentle variant; default false.
        #[serde(default, skip_serializing_if = "is_false")]
        gentle: bool,
        /// Mark ECN-capable packets instead of dropping them early; default false.
        #[serde(default, skip_serializing_if = "is_false")]
        ecn: bool,
        /// ns-2/ns-3 "wait" spacing: no early drop until 1/p_b packets since the last,
        /// then p_b/(2 − count·p_b), so gaps are uniform on [1/p_b, 2/p_b] (a third of
        /// F&J's early-drop rate at the same average); default false (F&J 1993).
        #[serde(default, skip_serializing_if = "is_false")]
        wait: bool,
        /// Mean packet size for idle decay and byte-mode scaling [bytes]; default 1000.
        #[serde(default = "d_mean_pkt_size")]
        mean_pkt_size: Bytes,
        /// p_unmarked / p_marked, ≥ 1; default 1.5 (P0: "a marked packet has a 1.5
        /// times lower drop probability").
        #[serde(default = "d_factor")]
        factor: f64,
    },
    /// Longest Queue Drop over per-flow queues (Suter et al. 1998).
    Lqd {
        /// Shared limit [packets]; default 100 when `limit_bytes` is not given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u32>,
        /// Shared limit [bytes], instead of `limit`; queue lengths are then in bytes.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit_bytes: Option<Bytes>,
        /// `"drr"` (default) or `"fifo"`.
        #[serde(default)]
        service: LqdService,
        /// DRR quantum [bytes]; default 1500 (one Ethernet MTU).
        #[serde(default = "d_quantum")]
        quantum: Bytes,
    },
}

impl crate::de::Tagged for QueueConfig {
    const WHAT: &'static str = "queue";
    const KINDS: &'static [&'static str] = &[
        "droptail",
        "drop_tail",
        "red",
        "rio_c",
        "rio_d",
        "wred",
        "ered",
        "lqd",
    ];
    fn read_external<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        QueueConfig::deserialize(d)
    }
    fn write_external<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        QueueConfig::serialize(self, s)
    }
}

impl<'de> Deserialize<'de> for QueueConfig {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        crate::de::read_tagged(d)
    }
}

impl Serialize for QueueConfig {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        crate::de::write_tagged(self, s)
    }
}

impl Default for QueueConfig {
    /// DropTail, 100 packets.
    fn default() -> Self {
        QueueConfig::DropTail {
            limit: Some(DEFAULT_LIMIT),
            limit_bytes: None,
        }
    }
}

fn err(key: &str, message: String) -> Result<(), ScenarioError> {
    Err(ScenarioError::new(key, message))
}

fn limit_of(limit: Option<u32>, limit_bytes: Option<Bytes>) -> Limit {
    match (limit, limit_bytes) {
        (_, Some(b)) => Limit::Bytes(b.0),
        (Some(n), None) => Limit::Packets(n),
        (None, None) => Limit::Packets(DEFAULT_LIMIT),
    }
}

fn check_limit(limit: Option<u32>, limit_bytes: Option<Bytes>) -> Result<(), ScenarioError> {
    match (limit, limit_bytes) {
        (Some(_), Some(_)) => err(
            "limit_bytes",
            "expected either limit (packets) or limit_bytes, not both".into(),
        ),
        (Some(0), None) => err(
            "limit",
            "expected a limit of at least 1 packet, found 0".into(),
        ),
        (None, Some(Bytes(0))) => err(
            "limit_bytes",
            "expected a limit of at least 1 byte, found 0".into(),
        ),
        _ => Ok(()),
    }
}

fn check_unit_interval(key: &str, v: f64) -> Result<(), ScenarioError> {
    if v > 0.0 && v <= 1.0 {
        Ok(())
    } else {
        err(key, format!("expected {key} in (0, 1], found {v}"))
    }
}

fn check_mean_pkt_size(b: Bytes) -> Result<(), ScenarioError> {
    if (1..=65_535).contains(&b.0) {
        Ok(())
    } else {
        err(
            "mean_pkt_size",
            format!("expected mean_pkt_size in 1..=65535 bytes, found {}", b.0),
        )
    }
}

/// Checks one RED curve; `prefix` is `""` or `"dp1."`.
fn check_curve(prefix: &str, t: &RedThresholds) -> Result<(), ScenarioError> {
    if !(t.min_th >= 0.0 && t.min_th.is_finite()) {
        return err(
            &format!("{prefix}min_th"),
            format!("expected min_th ≥ 0, found {}", t.min_th),
        );
    }
    if !(t.max_th > t.min_th && t.max_th.is_finite()) {
        return err(
            &format!("{prefix}max_th"),
            format!(
                "thresholds out of order: expected max_th > min_th ({}), found {}",
                t.min_th, t.max_th
            ),
        );
    }
    check_unit_interval(&format!("{prefix}max_p"), t.max_p)
}

/// Checks a RED-family single-curve config (RED and ERED).
fn check_red(
    limit: Option<u32>,
    limit_bytes: Option<Bytes>,
    curve: RedThresholds,
    w_q: f64,
    mean_pkt_size: Bytes,
) -> Result<(), ScenarioError> {
    check_limit(limit, limit_bytes)?;
    check_curve("", &curve)?;
    check_unit_interval("w_q", w_q)?;
    check_mean_pkt_size(mean_pkt_size)?;
    match limit_of(limit, limit_bytes) {
        Limit::Packets(n) if (n as f64) < curve.max_th => err(
            "limit",
            format!(
                "expected limit ≥ max_th ({} packets) so RED acts before the buffer \
                 overflows, found {n}",
                curve.max_th
            ),
        ),
        Limit::Bytes(b) if (b as f64) < curve.max_th => err(
            "limit_bytes",
            format!(
                "expected limit_bytes ≥ max_th ({} bytes in byte mode) so RED acts \
                 before the buffer overflows, found {b}",
                curve.max_th
            ),
        ),
        _ => Ok(()),
    }
}

fn check_multi(
    limit: u32,
    w_q: f64,
    mean_pkt_size: Bytes,
    curves: [&RedThresholds; 3],
) -> Result<(), ScenarioError> {
    check_limit(Some(limit), None)?;
    check_unit_interval("w_q", w_q)?;
    check_mean_pkt_size(mean_pkt_size)?;
    for (i, c) in curves.iter().enumerate() {
        check_curve(&format!("dp{i}."), c)?;
    }
    let top = curves.iter().map(|c| c.max_th).fold(0.0, f64::max);
    if (limit as f64) < top {
        return err(
            "limit",
            format!(
                "expected limit ≥ the largest max_th ({top} packets) so RED acts before \
                 the buffer overflows, found {limit}"
            ),
        );
    }
    Ok(())
}

fn multi(
    mode: MultiRedMode,
    limit: u32,
    w_q: f64,
    mean_pkt_size: Bytes,
    curves: [&RedThresholds; 3],
    link_rate: Rate,
    rng: RngStream,
) -> AnyQueue {
    let s = MultiRedSettings {
        mode,
        limit,
        params: curves.map(RedThresholds::params),
        w_q,
        mean_pkt_size: mean_pkt_size.0 as u32,
    };
    AnyQueue::MultiRed(MultiRed::new(s, link_rate, rng))
}

impl QueueConfig {
    /// Checks every parameter; the error's key is the field name relative to the queue
    /// table (`"max_th"`, `"dp1.max_p"`).
    pub fn validate(&self) -> Result<(), ScenarioError> {
        match self {
            QueueConfig::DropTail { limit, limit_bytes } => check_limit(*limit, *limit_bytes),
            QueueConfig::Red {
                limit,
                limit_bytes,
                min_th,
                max_th,
                max_p,
                w_q,
                mean_pkt_size,
                ..
            } => check_red(
                *limit,
                *limit_bytes,
                RedThresholds::new(*min_th, *max_th, *max_p),
                *w_q,
                *mean_pkt_size,
            ),
            QueueConfig::Ered {
                limit,
                limit_bytes,
                min_th,
                max_th,
                max_p,
                w_q,
                mean_pkt_size,
                factor,
                ..
            } => {
                check_red(
                    *limit,
                    *limit_bytes,
                    RedThresholds::new(*min_th, *max_th, *max_p),
                    *w_q,
                    *mean_pkt_size,
                )?;
                if *factor >= 1.0 && factor.is_finite() {
                    Ok(())
                } else {
                    err(
                        "factor",
                        format!(
                            "expected factor ≥ 1 (unmarked packets are dropped factor \
                             times more often than marked ones), found {factor}"
                        ),
                    )
                }
            }
            QueueConfig::RioC {
                limit,
                w_q,
                mean_pkt_size,
                dp0,
                dp1,
                dp2,
            }
            | QueueConfig::RioD {
                limit,
                w_q,
                mean_pkt_size,
                dp0,
                dp1,
                dp2,
            }
            | QueueConfig::Wred {
                limit,
                w_q,
                mean_pkt_size,
                dp0,
                dp1,
                dp2,
            } => check_multi(*limit, *w_q, *mean_pkt_size, [dp0, dp1, dp2]),
            QueueConfig::Lqd {
                limit,
                limit_bytes,
                quantum,
                ..
            } => {
                check_limit(*limit, *limit_bytes)?;
                if (1..=u32::MAX as u64).contains(&quantum.0) {
                    Ok(())
                } else {
                    err(
                        "quantum",
                        format!(
                            "expected a quantum of at least 1 byte (one MTU, 1500, is \
                             usual), found {}",
                            quantum.0
                        ),
                    )
                }
            }
        }
    }

    /// Builds the queue for a link of `link_rate` (RED's idle decay), drawing from
    /// `rng`; call [`QueueConfig::validate`] first.
    pub fn build(&self, link_rate: Rate, rng: RngStream) -> AnyQueue {
        match self {
            QueueConfig::DropTail { limit, limit_bytes } => {
                AnyQueue::DropTail(DropTail::new(limit_of(*limit, *limit_bytes)))
            }
            QueueConfig::Red {
                limit,
                limit_bytes,
                min_th,
                max_th,
                max_p,
                w_q,
                gentle,
                ecn,
                wait,
                mean_pkt_size,
            } => {
                let s = RedSettings {
                    limit: limit_of(*limit, *limit_bytes),
                    params: RedThresholds::new(*min_th, *max_th, *max_p).params(),
                    w_q: *w_q,
                    gentle: *gentle,
                    ecn: *ecn,
                    wait: *wait,
                    mean_pkt_size: mean_pkt_size.0 as u32,
                };
                AnyQueue::Red(Red::new(s, link_rate, rng))
            }
            QueueConfig::Ered {
                limit,
                limit_bytes,
                min_th,
                max_th,
                max_p,
                w_q,
                gentle,
                ecn,
                wait,
                mean_pkt_size,
                factor,
            } => {
                let s = RedSettings {
                    limit: limit_of(*limit, *limit_bytes),
                    params: RedThresholds::new(*min_th, *max_th, *max_p).params(),
                    w_q: *w_q,
                    gentle: *gentle,
                    ecn: *ecn,
                    wait: *wait,
                    mean_pkt_size: mean_pkt_size.0 as u32,
                };
                AnyQueue::Ered(Ered::new(s, *factor, link_rate, rng))
            }
            QueueConfig::RioC {
                limit,
                w_q,
                mean_pkt_size,
                dp0,
                dp1,
                dp2,
            } => multi(
                MultiRedMode::RioC,
                *limit,
                *w_q,
                *mean_pkt_size,
                [dp0, dp1, dp2],
                link_rate,
                rng,
            ),
            QueueConfig::RioD {
                limit,
                w_q,
                mean_pkt_size,
                dp0,
                dp1,
                dp2,
            } => multi(
                MultiRedMode::RioD,
                *limit,
                *w_q,
                *mean_pkt_size,
                [dp0, dp1, dp2],
                link_rate,
                rng,
            ),
            QueueConfig::Wred {
                limit,
                w_q,
                mean_pkt_size,
                dp0,
                dp1,
                dp2,
            } => multi(
                MultiRedMode::Wred,
                *limit,
                *w_q,
                *mean_pkt_size,
                [dp0, dp1, dp2],
                link_rate,
                rng,
            ),
            QueueConfig::Lqd {
                limit,
                limit_bytes,
                service,
                quantum,
            } => {
                let service = match service {
                    LqdService::Drr => Service::Drr {
                        quantum: quantum.0.min(u32::MAX as u64) as u32,
                    },
                    LqdService::Fifo => Service::Fifo,
                };
                AnyQueue::Lqd(Lqd::new(limit_of(*limit, *limit_bytes), service))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Wrap {
        queue: QueueConfig,
    }

    fn parse(s: &str) -> Result<QueueConfig, String> {
        toml::from_str::<Wrap>(&format!("queue = {s}"))
            .map(|w| w.queue)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn examples_parse_with_defaults() {
        let q = parse(
            r#"{ kind = "red", limit = 100, min_th = 5, max_th = 15, max_p = 0.1, w_q = 0.002, gentle = true, ecn = false }"#,
        )
        .unwrap();
        assert!(matches!(q, QueueConfig::Red { gentle: true, max_th, .. } if max_th == 15.0));
        assert_eq!(
            parse(r#"{ kind = "droptail", limit = 100 }"#).unwrap(),
            QueueConfig::default()
        );
        assert_eq!(
            parse(r#"{ kind = "droptail", limit_bytes = "64KB" }"#).unwrap(),
            QueueConfig::DropTail {
                limit: None,
                limit_bytes: Some(Bytes(64_000))
            }
        );
        let q =
            parse(r#"{ kind = "rio_c", dp2 = { min_th = 8, max_th = 20, max_p = 0.2 } }"#).unwrap();
        assert_eq!(
            q,
            QueueConfig::RioC {
                limit: 100,
                w_q: 0.002,
                mean_pkt_size: Bytes(1000),
                dp0: RedThresholds::new(40.0, 55.0, 0.02),
                dp1: RedThresholds::new(25.0, 40.0, 0.05),
                dp2: RedThresholds::new(8.0, 20.0, 0.2),
            }
        );
        let q =
            parse(r#"{ kind = "wred", yellow = { min_th = 1, max_th = 2, max_p = 1 } }"#).unwrap();
        assert!(matches!(q, QueueConfig::Wred { dp1, .. } if dp1.max_th == 2.0));
        let q = parse(r#"{ kind = "ered" }"#).unwrap();
        assert!(matches!(q, QueueConfig::Ered { factor, .. } if factor == 1.5));
        let q = parse(r#"{ kind = "lqd", limit_bytes = "100KB", service = "fifo" }"#).unwrap();
        assert!(matches!(
            q,
            QueueConfig::Lqd {
                service: LqdService::Fifo,
                quantum: Bytes(1500),
                ..
            }
        ));
        assert!(parse(r#"{ kind = "rio_d" }"#).unwrap().validate().is_ok());
    }

    #[test]
    fn serialises_back_to_the_same_config() {
        for s in [
            r#"{ kind = "red", limit_bytes = "64KB", min_th = 5000, max_th = 15000, ecn = true }"#,
            r#"{ kind = "rio_d", limit = 80 }"#,
            r#"{ kind = "lqd", quantum = 500 }"#,
            r#"{ kind = "droptail" }"#,
        ] {
            let q = parse(s).unwrap();
            let text = toml::to_string(&Wrapped { queue: q.clone() }).unwrap();
            assert_eq!(toml::from_str::<Wrap>(&text).unwrap().queue, q, "{text}");
        }
        #[derive(Serialize)]
        struct Wrapped {
            queue: QueueConfig,
        }
    }

    #[test]
    fn unknown_keys_and_kinds_are_rejected() {
        // deny_unknown_fields on an internally tagged enum reaches the struct variants.
        let e = parse(r#"{ kind = "red", min_thresh = 5 }"#).unwrap_err();
        assert!(e.contains("unknown field `min_thresh`"), "{e}");
        let e = parse(r#"{ kind = "droptail", limit = 5, gentle = true }"#).unwrap_err();
        assert!(e.contains("unknown field `gentle`"), "{e}");
        let e =
            parse(r#"{ kind = "rio_c", dp1 = { min_th = 1, max_th = 2, max_p = 0.1, w = 1 } }"#)
                .unwrap_err();
        assert!(e.contains("unknown field `w`"), "{e}");
        let e = parse(r#"{ kind = "lqd", service = "wfq" }"#).unwrap_err();
        assert!(e.contains("unknown variant `wfq`"), "{e}");
        let e = parse(r#"{ kind = "codel" }"#).unwrap_err();
        assert!(e.contains("unknown queue kind \"codel\""), "{e}");
        let e = parse(r#"{ limit = 5 }"#).unwrap_err();
        assert!(e.contains("missing `kind`"), "{e}");
    }

    fn invalid(s: &str) -> ScenarioError {
        parse(s).unwrap().validate().unwrap_err()
    }

    #[test]
    fn validation_errors_name_the_key_and_what_was_expected() {
        let cases = [
            (
                r#"{ kind = "droptail", limit = 0 }"#,
                "limit",
                "at least 1 packet",
            ),
            (
                r#"{ kind = "droptail", limit = 5, limit_bytes = 500 }"#,
                "limit_bytes",
                "not both",
            ),
            (
                r#"{ kind = "lqd", limit_bytes = 0 }"#,
                "limit_bytes",
                "at least 1 byte",
            ),
            (
                r#"{ kind = "red", min_th = 15, max_th = 5 }"#,
                "max_th",
                "thresholds out of order",
            ),
            (r#"{ kind = "red", min_th = -1 }"#, "min_th", "min_th ≥ 0"),
            (r#"{ kind = "red", max_p = 1.5 }"#, "max_p", "(0, 1]"),
            (r#"{ kind = "red", max_p = 0 }"#, "max_p", "(0, 1]"),
            (r#"{ kind = "red", w_q = 0 }"#, "w_q", "w_q in (0, 1]"),
            (r#"{ kind = "ered", w_q = 2 }"#, "w_q", "w_q in (0, 1]"),
            (
                r#"{ kind = "red", limit = 10, max_th = 15 }"#,
                "limit",
                "limit ≥ max_th (15 packets)",
            ),
            (
                r#"{ kind = "red", limit_bytes = 10000, min_th = 5000, max_th = 15000 }"#,
                "limit_bytes",
                "limit_bytes ≥ max_th (15000 bytes",
            ),
            (
                r#"{ kind = "red", mean_pkt_size = 0 }"#,
                "mean_pkt_size",
                "1..=65535",
            ),
            (r#"{ kind = "ered", factor = 0.5 }"#, "factor", "factor ≥ 1"),
            (
                r#"{ kind = "rio_c", dp1 = { min_th = 30, max_th = 20, max_p = 0.1 } }"#,
                "dp1.max_th",
                "thresholds out of order",
            ),
            (
                r#"{ kind = "wred", dp2 = { min_th = 1, max_th = 2, max_p = 2 } }"#,
                "dp2.max_p",
                "(0, 1]",
            ),
            (
                r#"{ kind = "rio_d", limit = 50 }"#,
                "limit",
                "largest max_th (55 packets)",
            ),
            (
                r#"{ kind = "lqd", quantum = 0 }"#,
                "quantum",
                "at least 1 byte",
            ),
        ];
        for (text, key, msg) in cases {
            let e = invalid(text);
            assert_eq!(e.key, key, "{text}: {e}");
            assert!(e.message.contains(msg), "{text}: {e}");
        }
    }

    #[test]
    fn build_gives_the_configured_kind() {
        let r = Rate::from_mbps(10);
        let rng = || RngStream::from_seed(1);
        assert!(matches!(
            QueueConfig::default().build(r, rng()),
            AnyQueue::DropTail(_)
        ));
        for (s, want) in [
            (r#"{ kind = "red" }"#, "Red"),
            (r#"{ kind = "ered" }"#, "Ered"),
            (r#"{ kind = "rio_c" }"#, "MultiRed"),
            (r#"{ kind = "lqd" }"#, "Lqd"),
        ] {
            let q = parse(s).unwrap().build(r, rng());
            assert!(format!("{q:?}").starts_with(want), "{s}");
        }
    }
}

//! The queue dispatch: which discipline a scenario's `queue = { kind = … }` table names.
//! Each family's keys, their checks and its builder live beside its mechanism
//! ([`DropTailConfig`], [`RedConfig`], [`EredConfig`], [`MultiRedConfig`],
//! [`LqdConfig`]); this enum only picks one by `kind`.
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
//! Unknown keys are errors, named at their exact path (`link[1].queue.max_p`).

use serde::{Deserialize, Serialize};

use super::{
    AnyQueue, DropTailConfig, EredConfig, LqdConfig, MultiRedConfig, MultiRedMode, RedConfig,
    DEFAULT_LIMIT,
};
use crate::config::ScenarioError;
use crate::rng::RngStream;
use crate::time::Rate;

/// A queue discipline and its parameters, as written in a scenario file: a table
/// tagged by `kind` (read through [`crate::config::Tagged`], so errors name the exact key).
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(remote = "Self", rename_all = "snake_case", deny_unknown_fields)]
pub enum QueueConfig {
    /// FIFO with tail drop (`kind = "droptail"`).
    #[serde(rename = "droptail", alias = "drop_tail")]
    DropTail(DropTailConfig),
    /// RED (Floyd & Jacobson 1993), optionally gentle and ECN-marking.
    Red(RedConfig),
    /// Multi-colour RED, coupled averages (RIO-C), P3's defaults.
    RioC(MultiRedConfig),
    /// Multi-colour RED, decoupled per-colour averages (RIO-D), P3's defaults.
    RioD(MultiRedConfig),
    /// Weighted RED: one average, per-colour curves, P3's defaults.
    Wred(MultiRedConfig),
    /// ERED (P0): RED whose curve applies to unmarked packets; packets marked in
    /// profile get p_b / `factor`.
    Ered(EredConfig),
    /// Longest Queue Drop over per-flow queues (Suter et al. 1998).
    Lqd(LqdConfig),
}

impl crate::config::Tagged for QueueConfig {
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
        crate::config::read_tagged(d)
    }
}

impl Serialize for QueueConfig {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        crate::config::write_tagged(self, s)
    }
}

impl Default for QueueConfig {
    /// DropTail, 100 packets.
    fn default() -> Self {
        QueueConfig::DropTail(DropTailConfig {
            limit: Some(DEFAULT_LIMIT),
            limit_bytes: None,
        })
    }
}

impl QueueConfig {
    /// Checks every parameter; the error's key is the field name relative to the queue
    /// table (`"max_th"`, `"dp1.max_p"`).
    pub fn validate(&self) -> Result<(), ScenarioError> {
        match self {
            QueueConfig::DropTail(c) => c.validate(),
            QueueConfig::Red(c) => c.validate(),
            QueueConfig::RioC(c) | QueueConfig::RioD(c) | QueueConfig::Wred(c) => c.validate(),
            QueueConfig::Ered(c) => c.validate(),
            QueueConfig::Lqd(c) => c.validate(),
        }
    }

    /// Builds the queue for a link of `link_rate` (RED's idle decay), drawing from
    /// `rng`; call [`QueueConfig::validate`] first.
    pub fn build(&self, link_rate: Rate, rng: RngStream) -> AnyQueue {
        match self {
            QueueConfig::DropTail(c) => AnyQueue::DropTail(c.build()),
            QueueConfig::Red(c) => AnyQueue::Red(super::Red::new(c.settings(), link_rate, rng)),
            QueueConfig::RioC(c) => AnyQueue::MultiRed(c.build(MultiRedMode::RioC, link_rate, rng)),
            QueueConfig::RioD(c) => AnyQueue::MultiRed(c.build(MultiRedMode::RioD, link_rate, rng)),
            QueueConfig::Wred(c) => AnyQueue::MultiRed(c.build(MultiRedMode::Wred, link_rate, rng)),
            QueueConfig::Ered(c) => AnyQueue::Ered(c.build(link_rate, rng)),
            QueueConfig::Lqd(c) => AnyQueue::Lqd(c.build()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::{LqdService, RedThresholds};
    use crate::units::Bytes;

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
        assert!(
            matches!(q, QueueConfig::Red(RedConfig { gentle: true, max_th, .. }) if max_th == 15.0)
        );
        assert_eq!(
            parse(r#"{ kind = "droptail", limit = 100 }"#).unwrap(),
            QueueConfig::default()
        );
        assert_eq!(
            parse(r#"{ kind = "droptail", limit_bytes = "64KB" }"#).unwrap(),
            QueueConfig::DropTail(DropTailConfig {
                limit: None,
                limit_bytes: Some(Bytes(64_000))
            })
        );
        let q =
            parse(r#"{ kind = "rio_c", dp2 = { min_th = 8, max_th = 20, max_p = 0.2 } }"#).unwrap();
        assert_eq!(
            q,
            QueueConfig::RioC(MultiRedConfig {
                limit: 100,
                w_q: 0.002,
                mean_pkt_size: Bytes(1000),
                dp0: RedThresholds::new(40.0, 55.0, 0.02),
                dp1: RedThresholds::new(25.0, 40.0, 0.05),
                dp2: RedThresholds::new(8.0, 20.0, 0.2),
            })
        );
        let q =
            parse(r#"{ kind = "wred", yellow = { min_th = 1, max_th = 2, max_p = 1 } }"#).unwrap();
        assert!(matches!(q, QueueConfig::Wred(c) if c.dp1.max_th == 2.0));
        let q = parse(r#"{ kind = "ered" }"#).unwrap();
        assert!(
            matches!(q, QueueConfig::Ered(c) if c.factor == 1.5 && c.red == RedConfig::default())
        );
        let q = parse(r#"{ kind = "lqd", limit_bytes = "100KB", service = "fifo" }"#).unwrap();
        assert!(matches!(
            q,
            QueueConfig::Lqd(LqdConfig {
                service: LqdService::Fifo,
                quantum: Bytes(1500),
                ..
            })
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
            r#"{ kind = "ered", max_th = 20, factor = 2.5, ecn = true }"#,
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

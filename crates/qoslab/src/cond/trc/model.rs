//! The TRC's TCP model and its parameter computation (P1 §4.1 eqs. 1–4, §4.3 Fig. 2,
//! §4.4 Fig. 3 and eq. 5). Pure functions of numbers: no clock, no packets.
//!
//! A TCP cycle goes from one TRC drop to the next. With the window peaking at `W_max`
//! [packets]:
//!
//! ```text
//! data per cycle  = 1/p = 3/8·W_max² + 5/4·W_max − 2        (eq. 2: fixes p from W_max)
//! time per cycle  = a + b·W_max   [RTTs]; paper: a = 5/2, b = 1/2   (eq. 1)
//! W_avg           = data per cycle / time per cycle                  (eq. 3)
//! BW              = W_avg · MSS / RTT                                (eq. 4)
//! ```
//!
//! Eq. 2 is what the TRC enforces (it drops every 1/p + E packets), so both models
//! share it; they differ in eq. 1, the cycle time. The "fitted" models have `a`, `b`
//! fitted to qoslab's own TCP, one per TCP configuration, as the paper fitted eq. 1 to
//! ns-2's SACK TCP (§4.1). A model is a data file (TOML, [`parse_model`]) that records
//! the TCP settings it was fitted on: built in ([`builtin_models`], `models/*.toml`,
//! made by `validation/trc_model_fit.py` from `validation/data/trc-models/`, tables in
//! `docs/validation/trc-models.md`) or fitted by a user (`qoslab trc fit`) and named by
//! path. A TRC uses a model only if its flow's TCP matches it on every key that changes
//! the cycle ([`mismatches`]); otherwise it refuses, naming the key and the fit command.
//!
//! Units: rates in bit/s of goodput (payload), times in seconds, MSS in payload bytes.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use serde::{Deserialize, Serialize};

use crate::tcp::{Halve, TcpConfig, Variant};
use crate::time::Dur;

/// Smallest W_max the TRC uses: the paper's rule "even number + 0.5", starting at 6.5
/// (§4.3: W_max ≥ 5 so that three duplicate ACKs can arrive after a drop).
pub const W_MAX_FIRST: f64 = 6.5;
/// Step between admissible W_max values (§4.3: "W_max + 2").
pub const W_MAX_STEP: f64 = 2.0;
/// Largest W_max searched; beyond it the request is refused (a 1 Gb/s request at
/// RTT_min 200 ms needs about 2 300).
pub const W_MAX_LIMIT: f64 = 100_000.5;

/// Which cycle-time law (eq. 1) predicts goodput.
///
/// In a scenario: `model = "fitted"` (default: the built-in model fitted to the
/// controlled flow's TCP settings), `"paper"` (eq. 1 as published), or one fitted model:
/// a built-in one's name (e.g. `"sack-window-nolt-nodelack"`), a model file's path, or a
/// name `qoslab trc fit` stored ([`load_named`]); it must match the flow's TCP.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TcpModel {
    /// The paper's eq. 1, fitted to ns-2's SACK TCP: time per cycle = 5/2 + W_max/2.
    Paper,
    /// The built-in model fitted to the controlled flow's TCP settings
    /// ([`builtin_models`], [`mismatches`]).
    #[default]
    Fitted,
    /// One fitted model by name or path (it must match the flow's TCP).
    #[serde(untagged)]
    Named(String),
}

/// Cycle time law [RTTs]: `a + b·W_max` (eq. 1's form), except between the first and
/// the last of `knots`, measured (W_max, time per cycle) points where that line misses
/// the TCP by more than 2 % (small windows with limited transmit), interpolated
/// linearly; the last knot lies on the line. The law holds from `w_first` on, the
/// smallest W_max the TRC picks with it (Fig. 2).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CycleTime {
    /// Smallest W_max the law describes: [`W_MAX_FIRST`] (§4.3's 6.5), or a step above
    /// it for a TCP whose cycle at 6.5 has no one length (the fit's rule:
    /// `validation/trc_model_fit.py`).
    pub w_first: f64,
    /// Constant term [RTTs].
    pub a: f64,
    /// Slope [RTTs per packet of W_max].
    pub b: f64,
    /// (W_max, cycle time [RTTs]) points, W_max increasing; empty: the line throughout.
    pub knots: &'static [(f64, f64)],
    /// The cycle measured per total RTT, for a TCP whose cycle (in RTTs) depends on the
    /// RTT by more than the model error of §4.3 (delayed ACKs: the timer is a fixed time,
    /// not a fraction of the RTT): (RTT [s], [(W_max, cycle [RTTs])]), RTT increasing.
    /// Empty: the cycle does not depend on the RTT ([`CycleTime::cycle`]).
    pub by_rtt: &'static [(f64, &'static [(f64, f64)])],
}

impl CycleTime {
    /// Time per cycle [RTTs] at `w_max`.
    pub fn cycle(&self, w_max: f64) -> f64 {
        let k = self.knots;
        if let (Some(first), Some(last)) = (k.first(), k.last()) {
            if w_max >= first.0 && w_max <= last.0 {
                let i = k.partition_point(|p| p.0 <= w_max).clamp(1, k.len() - 1);
                let ((w0, t0), (w1, t1)) = (k[i - 1], k[i]);
                if w1 == w0 {
                    return t0;
                }
                return t0 + (t1 - t0) * (w_max - w0) / (w1 - w0);
            }
        }
        self.a + self.b * w_max
    }

    /// Where a law measured per RTT cannot promise P1's 3 % at (`w_max`, `rtt`): the
    /// measured cycles at the two RTTs around `rtt` differ by more than 3 % (the cycle
    /// jumps somewhere between them, with delayed ACKs where the ACK timer's phase in the
    /// round changes), `rtt` lies outside the measured RTTs, or `w_max` was not measured
    /// where the cycle moves with the RTT ([`CycleTime::unmeasured`]). `None` for a law
    /// that is one line, and where the neighbours agree.
    pub fn uncertainty(&self, w_max: f64, rtt: f64) -> Option<String> {
        let t = self.by_rtt;
        if t.is_empty() {
            return None;
        }
        let (lo, hi) = (t[0].0, t[t.len() - 1].0);
        if rtt < lo * (1.0 - 1e-9) || rtt > hi * (1.0 + 1e-9) {
            return Some(format!(
                "its RTT {:.0} ms lies outside the RTTs the model was measured at ({:.0}–{:.0} ms)",
                rtt * 1e3,
                lo * 1e3,
                hi * 1e3
            ));
        }
        let (r0, r1, c0, c1) = self.around(w_max, rtt);
        let jump = (c1 / c0 - 1.0).abs();
        (jump > JUMP_TOL).then(|| {
            format!(
                "its TCP's cycle at W_max {w_max} is {c0:.2} RTTs at {:.0} ms and {c1:.2} at {:.0} ms ({:.0} % apart), and its RTT {:.0} ms lies between (a request or RTT_dev a little different moves the RTT off this stretch)",
                r0 * 1e3,
                r1 * 1e3,
                jump * 100.0,
                rtt * 1e3
            )
        })
        .or_else(|| self.unmeasured(w_max, rtt))
    }

    /// Where a law measured per RTT was not measured at `w_max` (at one of the two
    /// measured RTTs around `rtt`) and the cycle at the next measured W_max up (beyond
    /// the largest: the largest) moves over the measured RTTs by more than
    /// [`JUMP_TOL`]: a cycle set by a time rather than by the window (CUBIC's K
    /// seconds) is then not the straight line between two measured W_max either (47.0
    /// RTTs measured at W_max 102.5 and 229 ms, 48.9 between 100.5 and 200.5, which
    /// spread by 36 % and 125 %). With delayed ACKs the cycle at W_max 100.5 and 200.5
    /// moves by at most 3 %, so the built-in models' sparse W_max above 50.5 stand.
    /// `qoslab trc fit` measures every W_max the TRC picks up to 200.5 where this would
    /// hold, so with its models only a W_max beyond 200.5 meets this.
    pub fn unmeasured(&self, w_max: f64, rtt: f64) -> Option<String> {
        let t = self.by_rtt;
        if t.is_empty() || !(rtt >= t[0].0 && rtt <= t[t.len() - 1].0) {
            return None;
        }
        let i = t.partition_point(|r| r.0 <= rtt).clamp(1, t.len() - 1);
        let rows = if t.len() == 1 { 0..1 } else { i - 1..i + 1 };
        for (_, pts) in &t[rows] {
            if w_max < pts[0].0 || pts.iter().any(|p| (p.0 - w_max).abs() < 1e-6) {
                continue;
            }
            let k = pts.partition_point(|p| p.0 < w_max);
            let beyond = k == pts.len();
            let w = pts[k.min(pts.len() - 1)].0;
            let at_w: Vec<f64> = t
                .iter()
                .filter_map(|(_, q)| q.iter().find(|p| (p.0 - w).abs() < 1e-6).map(|p| p.1))
                .collect();
            let (lo, hi) = at_w
                .iter()
                .fold((f64::INFINITY, 0.0_f64), |(l, h), &c| (l.min(c), h.max(c)));
            let spread = hi / lo - 1.0;
            if at_w.len() < 2 || spread <= JUMP_TOL {
                continue;
            }
            let place = if beyond {
                format!("lies beyond the largest W_max the model measured ({w})")
            } else {
                format!("was not measured (the model has {} and {w})", pts[k - 1].0)
            };
            return Some(format!(
                "its W_max {w_max} {place}, and its TCP's cycle at W_max {w} moves with the RTT by {:.0} % ({lo:.2}–{hi:.2} RTTs over the measured RTTs), so the cycle at {w_max} is not known within P1's 3 %{}",
                spread * 100.0,
                if beyond {
                    ""
                } else {
                    " (qoslab trc fit measures every W_max there: refit the model)"
                }
            ));
        }
        None
    }

    /// The measured RTTs around `rtt` and the cycles there at `w_max` (a law measured
    /// per RTT, `rtt` within its RTTs).
    fn around(&self, w_max: f64, rtt: f64) -> (f64, f64, f64, f64) {
        let t = self.by_rtt;
        let i = t.partition_point(|r| r.0 <= rtt).clamp(1, t.len() - 1);
        let only = |k: usize| CycleTime {
            by_rtt: &t[k..=k],
            ..*self
        };
        let (r0, r1) = (t[i - 1].0, t[i].0);
        (
            r0,
            r1,
            only(i - 1).cycle_at(w_max, r0),
            only(i).cycle_at(w_max, r1),
        )
    }

    /// Whether the cycle of a law measured per RTT jumps by more than [`JUMP_TOL`]
    /// between the measured RTTs around `rtt` (within its RTTs) at `w_max`.
    pub fn jumps(&self, w_max: f64, rtt: f64) -> bool {
        let t = self.by_rtt;
        if t.len() < 2 || rtt < t[0].0 || rtt > t[t.len() - 1].0 {
            return false;
        }
        let (_, _, c0, c1) = self.around(w_max, rtt);
        (c1 / c0 - 1.0).abs() > JUMP_TOL
    }

    /// Whether a law measured per RTT is measured around `rtt` and does not jump there
    /// at `w_max`, nor lacks `w_max` where it needs it ([`CycleTime::unmeasured`]): where
    /// the TRC may move to avoid a jump.
    pub fn steady(&self, w_max: f64, rtt: f64) -> bool {
        let t = self.by_rtt;
        !t.is_empty()
            && rtt >= t[0].0
            && rtt <= t[t.len() - 1].0
            && !self.jumps(w_max, rtt)
            && self.unmeasured(w_max, rtt).is_none()
    }

    /// Time per cycle [RTTs] at `w_max` and total RTT `rtt` [s]: [`CycleTime::cycle`]
    /// unless the law is measured per RTT (`by_rtt`); then interpolated linearly in
    /// W_max within each measured RTT (beyond its largest W_max along the law's slope
    /// `b`, below its smallest the smallest's), and linearly in log RTT between them
    /// (outside the measured RTTs, the nearest one's).
    pub fn cycle_at(&self, w_max: f64, rtt: f64) -> f64 {
        let t = self.by_rtt;
        if t.is_empty() {
            return self.cycle(w_max);
        }
        let at = |pts: &[(f64, f64)]| -> f64 {
            let (first, last) = (pts[0], pts[pts.len() - 1]);
            if w_max <= first.0 {
                return first.1;
            }
            if w_max >= last.0 {
                return last.1 + self.b * (w_max - last.0);
            }
            let i = pts
                .partition_point(|p| p.0 <= w_max)
                .clamp(1, pts.len() - 1);
            let ((w0, t0), (w1, t1)) = (pts[i - 1], pts[i]);
            t0 + (t1 - t0) * (w_max - w0) / (w1 - w0)
        };
        let (lo, hi) = (t[0], t[t.len() - 1]);
        if rtt <= lo.0 || rtt.is_nan() {
            return at(lo.1);
        }
        if rtt >= hi.0 {
            return at(hi.1);
        }
        let i = t.partition_point(|r| r.0 <= rtt).clamp(1, t.len() - 1);
        let ((r0, p0), (r1, p1)) = (t[i - 1], t[i]);
        let f = (rtt.ln() - r0.ln()) / (r1.ln() - r0.ln());
        at(p0) + (at(p1) - at(p0)) * f
    }
}

/// The model error P1 §4.3 allows (3 %): a law measured per RTT whose cycle jumps by
/// more between two neighbouring RTTs cannot promise the request there.
pub const JUMP_TOL: f64 = 0.03;

/// The paper's eq. 1.
pub const PAPER: CycleTime = CycleTime {
    w_first: W_MAX_FIRST,
    a: 2.5,
    b: 0.5,
    knots: &[],
    by_rtt: &[],
};

/// Eq. 1 fitted to one TCP configuration (`qoslab trc fit`, or for the built-in models
/// `validation/trc_model_fit.py`) with the TRC's own drop pattern: slope by least
/// squares, intercept the largest residual (so the model never promises more than the
/// measured flows got, the property P1 §4.3 asks). Read from a model file
/// ([`parse_model`]): built in (`models/*.toml` beside this file) or named by path.
#[derive(Clone, Debug, PartialEq)]
pub struct FittedModel {
    /// The model's name (a built-in one's is its TCP configuration,
    /// [`crate::tcp::TcpConfig::model_name`]).
    pub name: &'static str,
    /// The TCP configuration the model was fitted on (keys absent from the file are
    /// qoslab's defaults).
    pub tcp: TcpConfig,
    /// Whether the fit ran with the TRC's recovery lead (its default for a TCP whose
    /// RTO clock granularity is at most RTT_dev, `super::default_lead`).
    pub lead: bool,
    /// A Linux sender measured in live mode (its congestion control): the flow's
    /// simulated `tcp` keys do not describe it, so they are not compared.
    pub live: Option<&'static str>,
    /// The law with drops (E = 1).
    pub drop: CycleTime,
    /// The law with CE marks (E = 0); `None`: not fitted in ECN mode.
    pub ecn: Option<CycleTime>,
    /// Where the model came from: `built-in` or the file's path.
    pub source: &'static str,
}

impl FittedModel {
    /// The law with drops or (`ecn`) marks, if fitted.
    pub fn law(&self, ecn: bool) -> Option<CycleTime> {
        if ecn {
            self.ecn
        } else {
            Some(self.drop)
        }
    }
}

/// Version of the model file format this engine reads.
pub const MODEL_FORMAT: u32 = 1;

/// A law as a model file writes it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LawFile {
    w_first: f64,
    a: f64,
    b: f64,
    #[serde(default)]
    knots: Vec<(f64, f64)>,
    /// The fit's measurements [W_max, RTT, cycle]: provenance, and the law itself when
    /// `by_rtt` is set.
    #[serde(default)]
    points: Vec<(f64, f64, f64)>,
    /// The law is the measured points per RTT ([`CycleTime::cycle_at`]), not the line.
    #[serde(default)]
    by_rtt: bool,
}

/// A model file (TOML), as `qoslab.trc.model_text` writes it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelFile {
    format: u32,
    name: String,
    #[serde(default)]
    #[allow(dead_code)]
    command: String,
    recovery_lead: bool,
    #[serde(default)]
    live: Option<String>,
    #[serde(default)]
    tcp: TcpConfig,
    drop: LawFile,
    #[serde(default)]
    ecn: Option<LawFile>,
}

fn leak_str(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

impl LawFile {
    fn law(self, mode: &str) -> Result<CycleTime, String> {
        let ok = |v: f64| v.is_finite();
        if !(ok(self.w_first) && self.w_first >= 5.0) {
            return Err(format!("[{mode}] w_first must be at least 5 (P1 §4.3)"));
        }
        if !(ok(self.a) && ok(self.b) && self.b > 0.0) {
            return Err(format!("[{mode}] a and b must be finite, b > 0"));
        }
        if !self.knots.windows(2).all(|k| k[0].0 < k[1].0)
            || !self.knots.iter().all(|k| ok(k.0) && ok(k.1) && k.1 > 0.0)
        {
            return Err(format!(
                "[{mode}] knots must be (W_max, cycle > 0) pairs, W_max increasing"
            ));
        }
        let by_rtt = if self.by_rtt {
            per_rtt(&self.points, mode)?
        } else {
            Vec::new()
        };
        let by_rtt: Vec<(f64, &'static [(f64, f64)])> = by_rtt
            .into_iter()
            .map(|(r, pts)| (r, &*Box::leak(pts.into_boxed_slice())))
            .collect();
        let law = CycleTime {
            w_first: self.w_first,
            a: self.a,
            b: self.b,
            knots: Box::leak(self.knots.into_boxed_slice()),
            by_rtt: Box::leak(by_rtt.into_boxed_slice()),
        };
        if law.cycle(law.w_first) <= 0.0 {
            return Err(format!("[{mode}] the cycle at w_first must be positive"));
        }
        Ok(law)
    }
}

/// One measured RTT [s] and its (W_max, cycle [RTTs]) points.
type RttPoints = (f64, Vec<(f64, f64)>);

/// The `points` of a law measured per RTT, grouped by RTT (to 0.1 ms), each sorted by
/// W_max; RTTs increasing. Errors if a point is not finite and positive, an RTT has
/// two points at one W_max or fewer than two points.
fn per_rtt(points: &[(f64, f64, f64)], mode: &str) -> Result<Vec<RttPoints>, String> {
    if points.is_empty() {
        return Err(format!("[{mode}] by_rtt = true needs the measured points"));
    }
    let mut out: Vec<RttPoints> = Vec::new();
    for &(w, r, t) in points {
        if !(w.is_finite() && r.is_finite() && t.is_finite() && w > 0.0 && r > 0.0 && t > 0.0) {
            return Err(format!(
                "[{mode}] points must be [W_max > 0, RTT > 0, cycle > 0]"
            ));
        }
        match out.iter_mut().find(|(x, _)| (x - r).abs() < 1e-4) {
            Some((_, v)) => v.push((w, t)),
            None => out.push((r, vec![(w, t)])),
        }
    }
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    for (r, v) in &mut out {
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        if v.len() < 2 || v.windows(2).any(|k| k[0].0 == k[1].0) {
            return Err(format!(
                "[{mode}] the points at RTT {r} s need two or more distinct W_max"
            ));
        }
    }
    Ok(out)
}

/// Parses a model file's text; `source` says where it came from (kept in the model).
/// The model lives for the rest of the process (models are few and small).
pub fn parse_model(text: &str, source: &str) -> Result<FittedModel, String> {
    let f: ModelFile = toml::from_str(text).map_err(|e| format!("{source}: {e}"))?;
    if f.format != MODEL_FORMAT {
        return Err(format!(
            "{source}: model file format {} (this qoslab reads {MODEL_FORMAT})",
            f.format
        ));
    }
    let drop = f.drop.law("drop").map_err(|e| format!("{source}: {e}"))?;
    let ecn = match f.ecn {
        Some(l) => Some(l.law("ecn").map_err(|e| format!("{source}: {e}"))?),
        None => None,
    };
    Ok(FittedModel {
        name: leak_str(f.name),
        tcp: f.tcp,
        lead: f.recovery_lead,
        live: f.live.map(leak_str),
        drop,
        ecn,
        source: leak_str(source.to_string()),
    })
}

/// The built-in model files, qoslab's default TCP first, then the P1 scenarios' TCP
/// (the nearest-model search prefers earlier entries on a tie).
const BUILTIN: &[&str] = &[
    include_str!("models/newreno-flight-lt-nodelack.toml"),
    include_str!("models/sack-flight-lt-nodelack.toml"),
    include_str!("models/sack-window-nolt-nodelack.toml"),
    include_str!("models/linux-cubic.toml"),
    include_str!("models/linux-reno.toml"),
    include_str!("models/newreno-flight-lt-delack.toml"),
    include_str!("models/newreno-flight-nolt-delack.toml"),
    include_str!("models/newreno-flight-nolt-nodelack.toml"),
    include_str!("models/newreno-window-lt-delack.toml"),
    include_str!("models/newreno-window-lt-nodelack.toml"),
    include_str!("models/newreno-window-nolt-delack.toml"),
    include_str!("models/newreno-window-nolt-nodelack.toml"),
    include_str!("models/sack-flight-lt-delack.toml"),
    include_str!("models/sack-flight-nolt-delack.toml"),
    include_str!("models/sack-flight-nolt-nodelack.toml"),
    include_str!("models/sack-pipe-lt-delack.toml"),
    include_str!("models/sack-pipe-lt-nodelack.toml"),
    include_str!("models/sack-pipe-nolt-delack.toml"),
    include_str!("models/sack-pipe-nolt-nodelack.toml"),
    include_str!("models/sack-window-lt-nodelack.toml"),
];

/// Every built-in model, in [`BUILTIN`]'s order.
pub fn builtin_models() -> &'static [FittedModel] {
    static MODELS: OnceLock<Vec<FittedModel>> = OnceLock::new();
    MODELS.get_or_init(|| {
        BUILTIN
            .iter()
            .map(|t| parse_model(t, "built-in").expect("built-in TRC model files parse"))
            .collect()
    })
}

/// The built-in model named `name`.
pub fn fitted_model(name: &str) -> Option<&'static FittedModel> {
    builtin_models().iter().find(|m| m.name == name)
}

/// The built-in models' names (with an ECN fit if `ecn`), comma-separated.
fn builtin_names(ecn: bool) -> String {
    let v: Vec<&str> = builtin_models()
        .iter()
        .filter(|m| m.law(ecn).is_some())
        .map(|m| m.name)
        .collect();
    v.join(", ")
}

/// Folder of models stored by `qoslab trc fit` without a path: `$QOSLAB_TRC_MODELS`, else
/// `$XDG_DATA_HOME/qoslab/trc-models`, else `~/.local/share/qoslab/trc-models`.
pub fn model_store() -> Option<PathBuf> {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    env("QOSLAB_TRC_MODELS")
        .or_else(|| env("XDG_DATA_HOME").map(|d| d.join("qoslab").join("trc-models")))
        .or_else(|| env("HOME").map(|h| h.join(".local/share/qoslab/trc-models")))
}

/// Reads the model a scenario names that is not built in: a path (with a `/` or ending
/// in `.toml`, relative to the working directory), or a name stored in
/// [`model_store`]. Each file's model is read once per process and content.
pub fn load_named(name: &str) -> Result<&'static FittedModel, String> {
    type Cache = Mutex<HashMap<(PathBuf, String), &'static FittedModel>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let path = if name.contains('/') || name.ends_with(".toml") {
        PathBuf::from(name)
    } else {
        match model_store() {
            Some(d) => d.join(format!("{name}.toml")),
            None => return Err(format!("no model store to find {name:?} in")),
        }
    };
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "no TRC model {name:?}: not built in ({}), and {} cannot be read ({e})",
            builtin_names(false),
            path.display()
        )
    })?;
    let key = (path.clone(), text);
    let mut cache = CACHE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(m) = cache.get(&key) {
        return Ok(m);
    }
    let m: &'static FittedModel =
        Box::leak(Box::new(parse_model(&key.1, &path.display().to_string())?));
    cache.insert(key, m);
    Ok(m)
}

/// One TCP setting where a flow differs from what a model was fitted on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// The key in the flow's `tcp` table (`granularity` for the recovery lead).
    pub key: &'static str,
    /// The model's value, as a scenario writes it.
    pub model: String,
    /// The flow's value.
    pub flow: String,
}

fn variant_name(v: Variant) -> &'static str {
    match v {
        Variant::Tahoe => "tahoe",
        Variant::Reno => "reno",
        Variant::NewReno => "newreno",
        Variant::Sack => "sack",
    }
}

/// What ssthresh halves, as it acts (`pipe` is SACK's alone; other variants halve the
/// flight).
fn halve_name(t: &TcpConfig) -> &'static str {
    match (t.halve, t.variant) {
        (Halve::Pipe, Variant::Sack) => "pipe",
        (Halve::Flight | Halve::Pipe, _) => "flight",
        (Halve::Window, _) => "window",
    }
}

/// The TCP keys that change a TRC cycle, where `flow` differs from `model`'s fit.
/// Compared: variant, halve, limited transmit, recovery (PRR), congestion control,
/// byte counting, delayed ACKs, and with delayed ACKs their timer and the initial window
/// (the ACK clock's phase, hence the cycle, follows the start: 13 % longer at W_max
/// 10.5, 800 ms with 10 segments than with 1; without delayed ACKs within 0.2 %), and in
/// drop mode the recovery lead where the model ran it and the flow's TRC does not
/// (`lead`: whether it runs one by default; `None`: set explicitly by `recovery_lead`,
/// the operator's choice, not compared). Not
/// compared, measured not to move the cycle by more than 0.3 %: MSS, window cap, RTO
/// bounds and estimator, SACK blocks.
pub fn mismatches(
    model: &FittedModel,
    flow: &TcpConfig,
    lead: Option<bool>,
    ecn: bool,
) -> Vec<Mismatch> {
    let m = &model.tcp;
    let mut out = Vec::new();
    let mut cmp = |key: &'static str, a: String, b: String| {
        if a != b {
            out.push(Mismatch {
                key,
                model: a,
                flow: b,
            });
        }
    };
    let lower = |x: &dyn std::fmt::Debug| format!("{x:?}").to_lowercase();
    cmp(
        "variant",
        variant_name(m.variant).into(),
        variant_name(flow.variant).into(),
    );
    cmp("halve", halve_name(m).into(), halve_name(flow).into());
    cmp(
        "limited_transmit",
        m.limited_transmit().to_string(),
        flow.limited_transmit().to_string(),
    );
    cmp("recovery", lower(&m.recovery), lower(&flow.recovery));
    cmp("cc", format!("{:?}", m.cc), format!("{:?}", flow.cc));
    cmp(
        "byte_counting",
        m.byte_counting.to_string(),
        flow.byte_counting.to_string(),
    );
    cmp(
        "delayed_ack",
        m.delayed_ack.to_string(),
        flow.delayed_ack.to_string(),
    );
    if m.delayed_ack && flow.delayed_ack {
        cmp(
            "delack_timeout",
            format!("\"{}\"", m.delack_timeout),
            format!("\"{}\"", flow.delack_timeout),
        );
        cmp(
            "initial_window",
            m.initial_window.to_string(),
            flow.initial_window.to_string(),
        );
    }
    // The lead only in the direction that costs goodput: a model measured with it, a
    // flow without (its RTO can then fire on queueing jitter within RTT_dev, a cycle
    // the model never saw). A model measured without the lead on a flow with it sees a
    // cycle shorter by the lead's ~15 ms: ≤ 1 % more goodput from RTT*_min = 200 ms on.
    if let (false, Some(l)) = (ecn, lead) {
        if model.lead && !l {
            let say = |on: bool, g: Dur| {
                format!(
                    "\"{g}\" (recovery lead {})",
                    if on {
                        "on: the fit's TRC led retransmissions"
                    } else {
                        "off: this TRC's rtt_dev is below the clock granularity; set \
                         recovery_lead on the TRC to choose the lead yourself, or fit \
                         with --rtt-dev as this TRC's"
                    }
                )
            };
            out.push(Mismatch {
                key: "granularity",
                model: say(model.lead, m.granularity),
                flow: say(l, flow.granularity),
            });
        }
    }
    out
}

/// The `qoslab trc fit` command that fits a model for `flow`'s TCP: the cycle keys (and
/// the clock granularity, which decides the recovery lead) that differ from qoslab's
/// defaults, as an inline TOML table (a congestion control other than Reno is not
/// written: add the flow's `cc` table).
pub fn fit_command(flow: &TcpConfig, ecn: bool) -> String {
    let d = TcpConfig::default();
    let mut keys: Vec<String> = Vec::new();
    if flow.variant != d.variant {
        keys.push(format!("variant = \"{}\"", variant_name(flow.variant)));
    }
    if halve_name(flow) != halve_name(&d) {
        keys.push(format!("halve = \"{}\"", halve_name(flow)));
    }
    if flow.limited_transmit.is_some() {
        keys.push(format!("limited_transmit = {}", flow.limited_transmit()));
    }
    if flow.recovery != d.recovery {
        keys.push(format!(
            "recovery = \"{}\"",
            format!("{:?}", flow.recovery).to_lowercase()
        ));
    }
    if flow.byte_counting {
        keys.push("byte_counting = true".into());
    }
    if flow.delayed_ack {
        keys.push("delayed_ack = true".into());
        if flow.delack_timeout != d.delack_timeout {
            keys.push(format!("delack_timeout = \"{}\"", flow.delack_timeout));
        }
    }
    if flow.initial_window != d.initial_window {
        keys.push(format!("initial_window = {}", flow.initial_window));
    }
    if flow.granularity != d.granularity {
        keys.push(format!("granularity = \"{}\"", flow.granularity));
    }
    let table = if keys.is_empty() {
        "{}".to_string()
    } else {
        format!("{{ {} }}", keys.join(", "))
    };
    format!(
        "qoslab trc fit --tcp '{table}'{}",
        if ecn { " --ecn" } else { "" }
    )
}

/// The mismatches as a sentence: `tcp.KEY = model's value (this flow: flow's value)`.
fn describe(mm: &[Mismatch]) -> String {
    mm.iter()
        .map(|x| format!("tcp.{} = {} (this flow: {})", x.key, x.model, x.flow))
        .collect::<Vec<_>>()
        .join(", ")
}

impl TcpModel {
    /// The cycle-time law for a flow with TCP settings `tcp`, with drops or (`ecn`)
    /// marks; `lead`: whether the flow's TRC runs the recovery lead by default (`None`:
    /// `recovery_lead` set explicitly, not compared). `"fitted"` takes the first
    /// built-in model whose TCP matches on every key that changes the cycle
    /// ([`mismatches`]); a named model must match too (live models excepted). Errors
    /// (as text) name the first differing keys and the `qoslab trc fit` command that
    /// fits a model for the flow.
    pub fn law(&self, tcp: &TcpConfig, lead: Option<bool>, ecn: bool) -> Result<CycleTime, String> {
        let mode = if ecn { "ECN marks" } else { "drops" };
        let fit = fit_command(tcp, ecn);
        match self {
            TcpModel::Paper => Ok(PAPER),
            TcpModel::Fitted => {
                let cands: Vec<&FittedModel> = builtin_models()
                    .iter()
                    .filter(|m| m.live.is_none() && m.law(ecn).is_some())
                    .collect();
                // Nearest: fewest differing keys, a main key (not a delayed-ACK detail or
                // the lead) counting double, so a model with the flow's delayed ACKs wins.
                let count = |m: &FittedModel| {
                    let mm = mismatches(m, tcp, lead, ecn);
                    let minor = ["delack_timeout", "initial_window", "granularity"];
                    mm.iter()
                        .map(|x| if minor.contains(&x.key) { 1 } else { 2 })
                        .sum::<usize>()
                };
                if let Some(m) = cands.iter().find(|m| count(m) == 0) {
                    return Ok(m.law(ecn).expect("filtered"));
                }
                let near = cands.iter().min_by_key(|m| count(m));
                let why = match near {
                    Some(m) => format!(
                        "the nearest, {:?}, was fitted with {}",
                        m.name,
                        describe(&mismatches(m, tcp, lead, ecn))
                    ),
                    None => "none is fitted in this mode".into(),
                };
                Err(format!(
                    "no built-in TRC model is fitted to this TCP with {mode}: {why}; fit \
                     one with `{fit}` and name the file it writes on this TRC (model = \
                     \"PATH\"), or use model = \"paper\" (eq. 1 as published)"
                ))
            }
            TcpModel::Named(n) => {
                let m = match fitted_model(n) {
                    Some(m) => m,
                    None => load_named(n)?,
                };
                let law = m.law(ecn).ok_or_else(|| {
                    format!(
                        "TRC model {n:?} ({}) has no fit with {mode}; fit one with `{fit}`",
                        m.source
                    )
                })?;
                if m.live.is_none() {
                    let mm = mismatches(m, tcp, lead, ecn);
                    if !mm.is_empty() {
                        return Err(format!(
                            "TRC model {n:?} ({}) was fitted with {}: its cycle is not this \
                             flow's; fit one for this TCP with `{fit}` and name that file here",
                            m.source,
                            describe(&mm)
                        ));
                    }
                }
                Ok(law)
            }
        }
    }

    /// Name as written in scenario files.
    pub fn name(&self) -> &str {
        match self {
            TcpModel::Paper => "paper",
            TcpModel::Fitted => "fitted",
            TcpModel::Named(n) => n,
        }
    }
}

/// Packets delivered per cycle, 1/p (eq. 2).
pub fn data_per_cycle(w_max: f64) -> f64 {
    0.375 * w_max * w_max + 1.25 * w_max - 2.0
}

/// Drop probability p for a maximum window (eq. 2).
pub fn drop_probability(w_max: f64) -> f64 {
    1.0 / data_per_cycle(w_max)
}

/// Average window [packets] (eq. 3) under the given cycle-time law (at the smallest
/// measured RTT for a law measured per RTT; [`w_avg_at`] for a given RTT).
pub fn w_avg(w_max: f64, law: CycleTime) -> f64 {
    data_per_cycle(w_max) / law.cycle_at(w_max, 0.0)
}

/// Average window [packets] (eq. 3) at total RTT `rtt` [s] ([`CycleTime::cycle_at`]).
pub fn w_avg_at(w_max: f64, rtt: f64, law: CycleTime) -> f64 {
    data_per_cycle(w_max) / law.cycle_at(w_max, rtt)
}

/// Goodput [bit/s] of a flow with maximum window `w_max` and round-trip time `rtt` [s]
/// (eq. 4) under the cycle-time law `law`.
pub fn goodput(w_max: f64, rtt: f64, mss: u32, law: CycleTime) -> f64 {
    w_avg_at(w_max, rtt, law) * mss as f64 * 8.0 / rtt
}

/// The RTT [s] at which a flow with `w_max` gets `target` [bit/s]: RTT = W_avg(W_max,
/// RTT)·MSS/target, from `start` by fixed-point steps (the cycle moves by a few per cent
/// over a doubling of the RTT, so the steps contract quickly). Where they do not settle
/// on an RTT of at least `floor` (a law measured per RTT whose cycle moves faster than
/// the RTT: qoslab's CUBIC at W_max 112.5, 51.1 RTTs at 220 ms and 60.2 at 250 ms, where
/// the steps swung between the two and the TRC ran where its own model gave 1.07 x the
/// target), the smallest RTT from `floor` up where the model's goodput falls to
/// `target`, by bisection between the measured RTTs. `None` when the goodput at
/// `floor` is already below `target` (a larger W_max is needed).
fn rtt_for(
    w_max: f64,
    target: f64,
    bits: f64,
    law: CycleTime,
    start: f64,
    floor: f64,
) -> Option<f64> {
    let mut rtt = start;
    for _ in 0..100 {
        let next = w_avg_at(w_max, rtt, law) * bits / target;
        if (next - rtt).abs() <= 1e-12 * rtt.max(1e-9) {
            if next >= floor * (1.0 - 1e-12) {
                return Some(next);
            }
            break;
        }
        rtt = next;
    }
    let gput = |r: f64| w_avg_at(w_max, r, law) * bits / r;
    let g0 = gput(floor);
    if g0.is_nan() || g0 < target * (1.0 - 1e-12) {
        return None;
    }
    let mut a = floor;
    for &(b, _) in law.by_rtt.iter().filter(|r| r.0 > floor) {
        if gput(b) <= target {
            let (mut lo, mut hi) = (a, b);
            for _ in 0..200 {
                let mid = 0.5 * (lo + hi);
                if gput(mid) >= target {
                    lo = mid;
                } else {
                    hi = mid;
                }
                if hi - lo <= 1e-15 * hi {
                    break;
                }
            }
            return Some(0.5 * (lo + hi));
        }
        a = b;
    }
    // Beyond the largest measured RTT the cycle is that RTT's: the goodput falls as 1/RTT.
    Some((w_avg_at(w_max, a, law) * bits / target).max(a))
}

/// What the operator configures once per network (Fig. 3) and per request (Fig. 2).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrcInputs {
    /// Requested goodput R_req [bit/s].
    pub rate: f64,
    /// Payload bytes per segment.
    pub mss: u32,
    /// Round-trip time of the network path without the TRC [s].
    pub rtt_net: f64,
    /// Operator's bound on |real RTT − RTT_net| [s] (§4.4).
    pub rtt_dev: f64,
    /// Goodput error to compensate, as a fraction (0.05 = 5 %) (§4.4).
    pub gput_error: f64,
    /// RTT*_min [s]; `None`: RTT_dev / gput_error (eq. 5).
    pub rtt_min_star: Option<f64>,
    /// Delay the TRC must hold for its recovery lead [s]: RTT_min is at least
    /// RTT_net + this, so RTT_TRC ≥ the lead (0: Fig. 2 as printed; ignored in ECN mode,
    /// which drops nothing to lead; see `parameters`).
    pub lead_room: f64,
    /// Cycle-time law (of the mode: [`TcpModel::law`]).
    pub law: CycleTime,
    /// ECN mode: E = 0 (marks instead of drops); otherwise E = 1.
    pub ecn: bool,
}

impl TrcInputs {
    /// The lead room [`parameters`] applies: `lead_room`, or 0 in ECN mode (no drop to
    /// lead).
    pub fn applied_lead_room(&self) -> f64 {
        if self.ecn {
            0.0
        } else {
            self.lead_room
        }
    }

    /// Inputs with the paper's operator settings: RTT_dev 10 ms, gput_error 5 %
    /// (RTT*_min = 200 ms), the paper's eq. 1, drops (not ECN).
    pub fn new(rate: f64, mss: u32, rtt_net: f64) -> Self {
        TrcInputs {
            rate,
            mss,
            rtt_net,
            rtt_dev: 0.010,
            gput_error: 0.05,
            rtt_min_star: None,
            lead_room: 0.0,
            law: PAPER,
            ecn: false,
        }
    }
}

/// Which branch of Fig. 2 chose the parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Branch {
    /// RTT_req for the law's first W_max (6.5, or [`CycleTime::w_first`]) was above
    /// RTT_min: W_max = that first one, RTT = RTT_req.
    Delay,
    /// RTT_req was at most RTT_min: RTT fixed near RTT_min, W_max raised in steps of 2.
    RttMin,
}

/// The TRC's parameters for one request (Fig. 2).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrcParams {
    /// The rate the parameters aim at: R_req raised by gput_error + 1 % [bit/s] (Fig. 3).
    pub target: f64,
    /// RTT*_min [s] (eq. 5 or given).
    pub rtt_min_star: f64,
    /// RTT_min = max(RTT*_min, RTT_net + lead room) [s] (see `parameters` for why max).
    pub rtt_min: f64,
    /// Maximum congestion window [packets].
    pub w_max: f64,
    /// Drop (or mark) probability: 1/p = data per cycle (eq. 2).
    pub p: f64,
    /// E: 1 with drops, 0 in ECN mode (§4.2).
    pub e: f64,
    /// Spacing between drops (marks) in arriving data packets: 1/p + E.
    pub drop_every: f64,
    /// Average window predicted by the model [packets].
    pub w_avg: f64,
    /// Total round-trip time [s].
    pub rtt: f64,
    /// Delay the TRC adds: RTT − RTT_net [s].
    pub rtt_trc: f64,
    /// Goodput the model predicts at (W_max, RTT) [bit/s] (≥ `target`).
    pub predicted: f64,
    /// Delay buffer needed: ceil(W_max) packets (§4.4, §4.5).
    pub buffer: u32,
    /// Which branch of Fig. 2 was taken.
    pub branch: Branch,
}

/// Parameters for given W_max and RTT_TRC (no search): what `w_max` / `rtt_trc` in a
/// scenario file ask for, e.g. to fit the model.
pub fn fixed_parameters(
    w_max: f64,
    rtt_trc: f64,
    mss: u32,
    rtt_net: f64,
    law: CycleTime,
    ecn: bool,
) -> TrcParams {
    let p = drop_probability(w_max);
    let e = if ecn { 0.0 } else { 1.0 };
    let rtt = rtt_net + rtt_trc;
    let predicted = goodput(w_max, rtt, mss, law);
    TrcParams {
        target: predicted,
        rtt_min_star: rtt,
        rtt_min: rtt,
        w_max,
        p,
        e,
        drop_every: 1.0 / p + e,
        w_avg: w_avg_at(w_max, rtt, law),
        rtt,
        rtt_trc,
        predicted,
        buffer: w_max.ceil() as u32,
        branch: Branch::Delay,
    }
}

/// Fig. 2 and Fig. 3: p (hence W_max) and RTT_TRC for a request.
///
/// ```text
/// RTT*_min = RTT_dev / gput_error;  R = R_req · (1 + gput_error + 0.01)
/// RTT_min  = max(RTT*_min, RTT_net + lead_room)
/// RTT_req  = W_avg(W₁) · MSS / R          (W₁ = the law's w_first: 6.5, §4.3)
/// if RTT_req > RTT_min:  W_max = W₁, RTT = RTT_req
/// else: smallest W_max ∈ {W₁, W₁ + 2, …} with W_avg(W_max)·MSS/RTT_min ≥ R,
///       RTT = W_avg(W_max) · MSS / R          (≥ RTT_min)
/// p = 1 / data(W_max);  RTT_TRC = RTT − RTT_net
/// ```
///
/// Fig. 2 prints `min(RTT*_min, RTT_net)`; we take the max. With the min, RTT_min
/// would be RTT_net (3 ms in §5.2, 0 in Fig. 4), contradicting the paper's own text:
/// "RTT_min is set to 200 ms" for Fig. 4 with RTT_net = 0, and §4.3, where RTT_min is
/// a lower bound that keeps the RTT above RTT_net and deviations small. The max is the
/// only reading consistent with both.
///
/// `lead_room` (qoslab's, not the paper's; 0, or ECN mode, gives Fig. 2 as printed): a
/// TRC with a recovery lead L (`super`'s module doc) can lead a retransmission only by the delay
/// it holds, so a path whose RTT_net is within L of RTT*_min would get RTT_TRC < L and
/// a lead cut short; the TRC then keeps RTT_min at RTT_net + L, one step of §4.3's own
/// rule ("a lower bound for the RTT … has to be fixed") that lets the TRC hold the RTT
/// against a deviation of up to RTT_dev (§4.4) on every path.
///
/// Errors (as text, the caller adds the key) if an input is not positive and finite or
/// no W_max up to [`W_MAX_LIMIT`] reaches the rate.
pub fn parameters(inp: &TrcInputs) -> Result<TrcParams, String> {
    let finite_pos = |v: f64| v.is_finite() && v > 0.0;
    if !finite_pos(inp.rate) {
        return Err(format!(
            "the requested rate must be positive, found {}",
            inp.rate
        ));
    }
    if inp.mss == 0 {
        return Err("the MSS must be positive".into());
    }
    if !(inp.rtt_net.is_finite() && inp.rtt_net >= 0.0) {
        return Err(format!("RTT_net must be ≥ 0, found {}", inp.rtt_net));
    }
    if !(inp.gput_error.is_finite() && inp.gput_error >= 0.0 && inp.gput_error < 1.0) {
        return Err(format!(
            "gput_error is a fraction in [0, 1), found {}",
            inp.gput_error
        ));
    }
    let rtt_min_star = match inp.rtt_min_star {
        Some(r) if r.is_finite() && r >= 0.0 => r,
        Some(r) => return Err(format!("RTT*_min must be ≥ 0, found {r}")),
        None => {
            if !(inp.rtt_dev.is_finite() && inp.rtt_dev >= 0.0) {
                return Err(format!("RTT_dev must be ≥ 0, found {}", inp.rtt_dev));
            }
            if inp.gput_error == 0.0 {
                return Err(
                    "gput_error = 0 makes RTT*_min = RTT_dev / gput_error infinite; \
                     give gput_error > 0 or rtt_min"
                        .into(),
                );
            }
            inp.rtt_dev / inp.gput_error // eq. 5
        }
    };
    let target = inp.rate * (1.0 + inp.gput_error + 0.01); // Fig. 3
    if !(inp.lead_room.is_finite() && inp.lead_room >= 0.0) {
        return Err(format!(
            "the lead room must be ≥ 0, found {}",
            inp.lead_room
        ));
    }
    let rtt_min = rtt_min_star.max(inp.rtt_net + inp.applied_lead_room());
    let law = inp.law;
    let bits = inp.mss as f64 * 8.0;
    let first = law.w_first;
    let rtt_req = rtt_for(first, target, bits, law, rtt_min, rtt_min);
    let (w_max, rtt, branch) = if let Some(rtt_req) = rtt_req.filter(|&r| r > rtt_min) {
        (first, rtt_req, Branch::Delay)
    } else {
        let need = target * rtt_min / bits; // W_avg needed at RTT = RTT_min
        let mut w = first;
        while w_avg_at(w, rtt_min, law) < need {
            w += W_MAX_STEP;
            if w > W_MAX_LIMIT {
                return Err(format!(
                    "no W_max up to {W_MAX_LIMIT} reaches {target} bit/s at RTT_min {rtt_min} s"
                ));
            }
        }
        (
            w,
            rtt_for(w, target, bits, law, rtt_min, rtt_min).unwrap_or(rtt_min),
            Branch::RttMin,
        )
    };
    // A law measured per RTT: where its cycle jumps around the chosen RTT (delayed ACKs
    // with the round near the ACK timer), the next W_max up (a longer RTT, as Fig. 2's
    // larger W_max gives) is taken when the law is steady there; at most 5 steps.
    let (mut w_max, mut rtt) = (w_max, rtt);
    if law.jumps(w_max, rtt) {
        let mut w = w_max;
        for _ in 0..5 {
            w += W_MAX_STEP;
            let Some(r) = rtt_for(w, target, bits, law, rtt, rtt_min) else {
                continue;
            };
            if law.steady(w, r) {
                (w_max, rtt) = (w, r);
                break;
            }
        }
    }
    if !finite_pos(rtt) {
        return Err(format!("the computed RTT is not positive ({rtt})"));
    }
    let p = drop_probability(w_max);
    let e = if inp.ecn { 0.0 } else { 1.0 };
    Ok(TrcParams {
        target,
        rtt_min_star,
        rtt_min,
        w_max,
        p,
        e,
        drop_every: 1.0 / p + e,
        w_avg: w_avg_at(w_max, rtt, law),
        rtt,
        rtt_trc: (rtt - inp.rtt_net).max(0.0),
        predicted: w_avg_at(w_max, rtt, law) * bits / rtt,
        buffer: w_max.ceil() as u32,
        branch,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1e-12)
    }

    #[test]
    fn w_max_5_is_p_0_0735() {
        // §4.3: "A W_max of 5 corresponds to a drop probability of 0.0735".
        // 3/8·25 + 5/4·5 − 2 = 13.625; 1/13.625 = 0.07339.
        assert_eq!(data_per_cycle(5.0), 13.625);
        assert!((drop_probability(5.0) - 0.0735).abs() < 2e-4);
        // W_max = 6.5: 1/p = 15.84375 + 8.125 − 2 = 21.96875; cycle 5.75 RTTs.
        assert_eq!(data_per_cycle(6.5), 21.96875);
        assert!(close(w_avg(6.5, PAPER), 21.96875 / 5.75, 1e-12));
    }

    #[test]
    fn operator_config_is_fig_3() {
        // RTT_dev 10 ms, gput_error 5 % → RTT*_min 200 ms; rate raised by 6 %.
        let inp = TrcInputs {
            law: PAPER,
            ..TrcInputs::new(100e3, 1000, 0.003)
        };
        let p = parameters(&inp).unwrap();
        assert!(close(p.rtt_min_star, 0.2, 1e-12));
        assert!(close(p.target, 106e3, 1e-12));
    }

    #[test]
    fn small_request_takes_the_delay_branch() {
        // 100 kb/s, MSS 1000 B, RTT_net 3 ms, paper model: R = 106 kb/s,
        // RTT_req = (21.96875/5.75)·8000/106000 = 0.288352 s > 200 ms → W_max = 6.5.
        let inp = TrcInputs {
            law: PAPER,
            ..TrcInputs::new(100e3, 1000, 0.003)
        };
        let p = parameters(&inp).unwrap();
        assert_eq!(p.branch, Branch::Delay);
        assert_eq!(p.w_max, 6.5);
        let rtt = 21.96875 / 5.75 * 8000.0 / 106e3;
        assert!(close(p.rtt, rtt, 1e-12), "{}", p.rtt);
        assert!(close(p.rtt_trc, rtt - 0.003, 1e-12));
        assert!(close(p.p, 1.0 / 21.96875, 1e-12));
        assert!(close(p.drop_every, 22.96875, 1e-12));
        assert_eq!(p.buffer, 7);
        assert!(close(p.predicted, 106e3, 1e-9));
    }

    #[test]
    fn large_request_takes_the_rtt_min_branch() {
        // 10 Mb/s, MSS 1460 B, RTT_net 3 ms, paper model: R = 10.6 Mb/s;
        // RTT_req(6.5) = 4.2 ms ≤ 200 ms. Need W_avg ≥ 10.6e6·0.2/11680 = 181.507.
        // W = 242.5: 22353.47/123.75 = 180.634 (too small);
        // W = 244.5: 22721.22/124.75 = 182.134 → RTT = 182.134·11680/10.6e6 = 0.200690 s.
        let inp = TrcInputs {
            law: PAPER,
            ..TrcInputs::new(10e6, 1460, 0.003)
        };
        let p = parameters(&inp).unwrap();
        assert_eq!(p.branch, Branch::RttMin);
        assert_eq!(p.w_max, 244.5);
        assert!(close(w_avg(242.5, PAPER), 180.634, 1e-5));
        assert!(close(p.w_avg, 182.134, 1e-5));
        assert!(close(p.rtt, 0.200690, 1e-5), "{}", p.rtt);
        assert!(p.rtt >= p.rtt_min);
        assert!(close(p.rtt_trc, p.rtt - 0.003, 1e-12));
        assert_eq!(p.buffer, 245);
        // ECN mode: same W_max and RTT, E = 0.
        let q = parameters(&TrcInputs { ecn: true, ..inp }).unwrap();
        assert_eq!((q.w_max, q.e), (244.5, 0.0));
        assert!(close(q.drop_every, 1.0 / q.p, 1e-12));
    }

    #[test]
    fn rtt_min_is_at_least_rtt_net() {
        // RTT_net 300 ms > RTT*_min 200 ms: RTT_min = 300 ms, and RTT_TRC ≥ 0.
        let inp = TrcInputs {
            law: PAPER,
            ..TrcInputs::new(10e6, 1460, 0.3)
        };
        let p = parameters(&inp).unwrap();
        assert!(close(p.rtt_min, 0.3, 1e-12));
        assert!(p.rtt >= 0.3 && p.rtt_trc >= 0.0);
        // Explicit RTT*_min overrides eq. 5.
        let q = parameters(&TrcInputs {
            rtt_min_star: Some(0.05),
            rtt_net: 0.003,
            ..inp
        })
        .unwrap();
        assert!(close(q.rtt_min, 0.05, 1e-12));
        assert!(q.w_max < p.w_max);
    }

    #[test]
    fn lead_room_keeps_rtt_trc_at_least_the_lead() {
        // 3 Mb/s over RTT_net 195 ms: Fig. 2 as printed holds RTT_min at 200 ms, so
        // RTT_TRC can be under 10 ms; with 10 ms of lead room RTT_min is 205 ms.
        let inp = TrcInputs {
            law: PAPER,
            ..TrcInputs::new(3e6, 1460, 0.195)
        };
        let p = parameters(&inp).unwrap();
        assert!(close(p.rtt_min, 0.2, 1e-12));
        let q = parameters(&TrcInputs {
            lead_room: 0.010,
            ..inp
        })
        .unwrap();
        assert!(close(q.rtt_min, 0.205, 1e-12));
        assert!(
            q.rtt_trc >= 0.010 - 1e-12 && q.rtt >= 0.205 - 1e-12,
            "{q:?}"
        );
        assert!(q.predicted >= q.target * (1.0 - 1e-12));
        // Where RTT*_min is already RTT_net + the lead or more, nothing changes.
        let near = TrcInputs {
            rtt_net: 0.003,
            ..inp
        };
        assert_eq!(
            parameters(&near).unwrap(),
            parameters(&TrcInputs {
                lead_room: 0.010,
                ..near
            })
            .unwrap()
        );
        assert!(parameters(&TrcInputs {
            lead_room: -1.0,
            ..inp
        })
        .is_err());
    }

    #[test]
    fn every_request_meets_its_target_and_w_max_is_even_plus_half() {
        let fitted = fitted_model("sack-window-nolt-nodelack").unwrap().drop;
        for law in [PAPER, fitted] {
            for &r in &[
                50e3, 100e3, 250e3, 500e3, 750e3, 1e6, 2.5e6, 5e6, 10e6, 100e6,
            ] {
                for &rtt_net in &[0.0, 0.003, 0.05, 0.5] {
                    let p = parameters(&TrcInputs {
                        law,
                        ..TrcInputs::new(r, 1460, rtt_net)
                    })
                    .unwrap();
                    assert!(p.predicted >= p.target * (1.0 - 1e-12));
                    assert!(p.rtt >= p.rtt_min * (1.0 - 1e-12));
                    assert_eq!((p.w_max - 0.5) % 2.0, 0.0, "{}", p.w_max);
                    assert!(p.w_max >= 5.0 && p.p <= 0.0735);
                }
            }
        }
    }

    /// The TCP a built-in model was fitted on, as a flow would write it.
    fn tcp_of(name: &str) -> TcpConfig {
        fitted_model(name).unwrap().tcp.clone()
    }

    #[test]
    fn each_tcp_configuration_gets_its_own_fitted_model() {
        let models = builtin_models();
        assert!(models.len() >= 2, "at least the default and the P1 TCP");
        for m in models.iter().filter(|m| m.live.is_none()) {
            let lead = Some(m.lead);
            // "fitted" finds the model of the TCP it was fitted on (or one fitted to the
            // same cycle keys: newreno-window/-flight with delayed ACKs hold one law).
            let got = TcpModel::Fitted.law(&m.tcp, lead, false).unwrap();
            assert_eq!(got, m.drop, "{}", m.name);
            assert_eq!(
                TcpModel::Named(m.name.into()).law(&m.tcp, lead, false),
                Ok(m.drop)
            );
            if let Some(e) = m.ecn {
                assert_eq!(
                    TcpModel::Fitted.law(&m.tcp, lead, true),
                    Ok(e),
                    "{}",
                    m.name
                );
            }
            // The paper's law whatever the TCP.
            assert_eq!(TcpModel::Paper.law(&m.tcp, lead, false), Ok(PAPER));
        }
        // Names are unique, and different configurations really differ.
        let mut names: Vec<&str> = models.iter().map(|m| m.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), models.len());
        assert!(models.iter().any(|m| m.drop != models[0].drop));
        // The P1 scenarios' TCP keeps the fit the P1 tables were made with.
        let p1 = fitted_model("sack-window-nolt-nodelack").unwrap();
        assert!(close(p1.drop.a, 2.4085, 1e-3) && close(p1.drop.b, 0.4997, 1e-3));
        // Every file in models/ is built in.
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/cond/trc/models");
        let files = std::fs::read_dir(dir).unwrap().count();
        assert_eq!(files, BUILTIN.len());
    }

    #[test]
    fn the_search_starts_at_the_laws_first_w_max() {
        let law = CycleTime {
            w_first: 8.5,
            ..PAPER
        };
        // 100 kb/s: the delay branch at 8.5, not 6.5.
        let p = parameters(&TrcInputs {
            law,
            ..TrcInputs::new(100e3, 1000, 0.003)
        })
        .unwrap();
        assert_eq!((p.w_max, p.branch), (8.5, Branch::Delay));
        assert!(close(p.predicted, p.target, 1e-9));
        // 5 Mb/s: the RTT_min branch, W_max from 8.5 in steps of 2 (the same as from 6.5
        // whenever 6.5 would not do).
        let big = |law| {
            parameters(&TrcInputs {
                law,
                ..TrcInputs::new(5e6, 1000, 0.003)
            })
            .unwrap()
            .w_max
        };
        assert_eq!(big(law), big(PAPER));
        // The P1 TCP's law and the paper's start at §4.3's 6.5.
        assert_eq!(PAPER.w_first, W_MAX_FIRST);
        let p1 = fitted_model("sack-window-nolt-nodelack").unwrap();
        assert_eq!(p1.drop.w_first, W_MAX_FIRST);
    }

    #[test]
    fn a_law_measured_per_rtt_is_interpolated_in_w_max_and_log_rtt() {
        const AT_200: &[(f64, f64)] = &[(6.5, 8.0), (10.5, 10.0)];
        const AT_800: &[(f64, f64)] = &[(6.5, 6.0), (10.5, 8.0)];
        let law = CycleTime {
            w_first: W_MAX_FIRST,
            a: 9.9,
            b: 0.5,
            knots: &[],
            by_rtt: &[(0.2, AT_200), (0.8, AT_800)],
        };
        assert_eq!(law.cycle_at(6.5, 0.2), 8.0);
        assert_eq!(law.cycle_at(8.5, 0.8), 7.0);
        // 400 ms is half way between 200 and 800 ms in log RTT.
        assert!(close(law.cycle_at(6.5, 0.4), 7.0, 1e-12));
        assert!(close(law.cycle_at(8.5, 0.4), 8.0, 1e-12));
        // Beyond the largest W_max along the slope; outside the RTTs the nearest one's.
        assert_eq!(law.cycle_at(12.5, 0.2), 11.0);
        assert_eq!(law.cycle_at(6.5, 1.6), 6.0);
        assert_eq!(law.cycle_at(6.5, 0.05), 8.0);
        assert_eq!(law.cycle_at(4.0, 0.2), 8.0);
        // The line (a, b) is not used.
        assert_ne!(law.cycle_at(6.5, 0.2), law.cycle(6.5));
        // Fig. 2 with it: the RTT it picks is the one whose cycle gives the target.
        for rate in [60e3, 150e3, 400e3, 2e6] {
            let p = parameters(&TrcInputs {
                law,
                ..TrcInputs::new(rate, 1000, 0.003)
            })
            .unwrap();
            let own = data_per_cycle(p.w_max) / law.cycle_at(p.w_max, p.rtt) * 8000.0 / p.rtt;
            assert!(close(own, p.target, 1e-9), "{rate}: {own} vs {}", p.target);
            assert!(close(p.predicted, p.target, 1e-9));
            assert!(p.rtt >= p.rtt_min - 1e-12);
        }
        // 60 kb/s takes the delay branch at an RTT between the measured ones: the cycle
        // there is neither end's.
        let p = parameters(&TrcInputs {
            law,
            ..TrcInputs::new(60e3, 1000, 0.003)
        })
        .unwrap();
        assert_eq!(p.branch, Branch::Delay);
        assert!(p.rtt > 0.2 && p.rtt < 0.8, "{}", p.rtt);
    }

    #[test]
    fn the_trc_steps_over_a_jump_of_the_cycle_to_a_steady_w_max() {
        // W_max 6.5 jumps 10 % between 200 and 300 ms; 10.5 does not.
        const A: &[(f64, f64)] = &[(6.5, 6.0), (10.5, 8.0)];
        const B: &[(f64, f64)] = &[(6.5, 6.6), (10.5, 8.0)];
        let law = CycleTime {
            w_first: W_MAX_FIRST,
            a: 2.5,
            b: 0.5,
            knots: &[],
            by_rtt: &[(0.2, A), (0.3, B), (0.8, B)],
        };
        assert!(law.jumps(6.5, 0.25) && !law.jumps(10.5, 0.25));
        assert!(law.steady(10.5, 0.5) && !law.steady(10.5, 0.9) && !law.steady(6.5, 0.25));
        assert!(law.uncertainty(6.5, 0.25).unwrap().contains("10 % apart"));
        assert!(law
            .uncertainty(6.5, 1.0)
            .unwrap()
            .contains("outside the RTTs"));
        assert_eq!(law.uncertainty(10.5, 0.5), None);
        // 105 kb/s: W_max 6.5 would sit at ~250 ms, on the jump; the TRC takes 8.5, at
        // ~350 ms, between 300 and 800 ms where its cycle is steady.
        let p = parameters(&TrcInputs {
            law,
            ..TrcInputs::new(105e3, 1000, 0.003)
        })
        .unwrap();
        assert_eq!(p.w_max, 8.5);
        assert!(p.rtt > 0.3 && law.steady(p.w_max, p.rtt), "{}", p.rtt);
        assert!(close(p.predicted, p.target, 1e-9));
        // The one-line laws never move.
        let q = parameters(&TrcInputs::new(105e3, 1000, 0.003)).unwrap();
        assert_eq!(q.w_max, 6.5);
    }

    #[test]
    fn a_w_max_not_measured_where_the_cycle_moves_with_the_rtt_is_warned() {
        // qoslab's CUBIC in ECN mode as fitted before every W_max above 50.5 was
        // measured: at 100.5 and 200.5 the cycle moves with the RTT by 36 % and 125 %
        // (47.55, 49.03 and 64.83 RTTs at 220 ms, 250 ms and 1.6 s), so 102.5 at 229 ms,
        // interpolated to 48.9 RTTs, was 47.0 in the flow (1.10 x the request, no
        // warning).
        const R220: &[(f64, f64)] = &[(50.5, 23.90), (100.5, 47.55), (200.5, 91.61)];
        const R250: &[(f64, f64)] = &[(50.5, 25.11), (100.5, 49.03), (200.5, 89.92)];
        const R1600: &[(f64, f64)] = &[(50.5, 30.91), (100.5, 64.83), (200.5, 202.43)];
        let law = CycleTime {
            w_first: W_MAX_FIRST,
            a: 3.2,
            b: 0.5,
            knots: &[],
            by_rtt: &[(0.22, R220), (0.25, R250), (1.6, R1600)],
        };
        // The RTT-jump check alone sees 2.9 % between 220 and 250 ms at 102.5.
        assert!(!law.jumps(102.5, 0.229));
        let why = law.uncertainty(102.5, 0.229).unwrap();
        assert!(why.contains("W_max 102.5 was not measured (the model has 100.5 and 200.5)"));
        assert!(
            why.contains("at W_max 200.5 moves with the RTT by 125 %"),
            "{why}"
        );
        assert!(!law.steady(102.5, 0.229));
        // Measured W_max, and beyond the largest where that one does not move: no warning.
        assert_eq!(law.unmeasured(100.5, 0.229), None);
        assert!(law
            .unmeasured(210.5, 0.3)
            .unwrap()
            .contains("beyond the largest"));
        // With delayed ACKs the cycle at 100.5 and 200.5 moves by at most 3 %: the
        // sparse W_max stand (the built-in models).
        const D220: &[(f64, f64)] = &[(50.5, 24.0), (100.5, 48.0), (200.5, 95.0)];
        const D250: &[(f64, f64)] = &[(50.5, 25.2), (100.5, 48.9), (200.5, 95.9)];
        let delack = CycleTime {
            by_rtt: &[(0.22, D220), (0.25, D250)],
            ..law
        };
        assert_eq!(delack.uncertainty(76.5, 0.23), None);
        assert_eq!(delack.uncertainty(250.5, 0.23), None);
    }

    #[test]
    fn the_rtt_solves_fig_2_where_the_fixed_point_steps_swing() {
        // qoslab's CUBIC with drops, measured: the cycle at W_max 112.5 is 51.1 RTTs at
        // 220 ms and 60.2 at 250 ms (it moves faster than the RTT), so the steps RTT <-
        // W_avg(RTT)·MSS/target swing across the two and never settle; the TRC took the
        // last step's RTT, where its own model gave 1.07 x the target (4.5 Mb/s: 1.134 x
        // the request measured).
        const R200: &[(f64, f64)] = &[
            (6.5, 6.52),
            (104.5, 50.45),
            (106.5, 51.32),
            (108.5, 51.58),
            (110.5, 51.86),
            (112.5, 52.63),
            (114.5, 52.92),
            (116.5, 48.97),
        ];
        const R220: &[(f64, f64)] = &[
            (6.5, 6.54),
            (104.5, 48.01),
            (106.5, 48.70),
            (108.5, 50.22),
            (110.5, 50.02),
            (112.5, 51.11),
            (114.5, 51.64),
            (116.5, 53.26),
        ];
        const R250: &[(f64, f64)] = &[
            (6.5, 6.46),
            (104.5, 56.28),
            (106.5, 56.62),
            (108.5, 55.42),
            (110.5, 56.56),
            (112.5, 60.18),
            (114.5, 58.89),
            (116.5, 59.56),
        ];
        const R300: &[(f64, f64)] = &[
            (6.5, 6.2794),
            (104.5, 52.17),
            (106.5, 53.42),
            (108.5, 54.49),
            (110.5, 54.69),
            (112.5, 55.15),
            (114.5, 57.02),
            (116.5, 57.30),
        ];
        let law = CycleTime {
            w_first: W_MAX_FIRST,
            a: 2.6,
            b: 0.47,
            knots: &[],
            by_rtt: &[(0.2, R200), (0.22, R220), (0.25, R250), (0.3, R300)],
        };
        let (bits, target) = (1460.0 * 8.0, 4.5e6 * 1.06);
        let gput = |w: f64, r: f64| w_avg_at(w, r, law) * bits / r;
        let mut r = 0.2;
        for _ in 0..100 {
            r = w_avg_at(112.5, r, law) * bits / target;
        }
        assert!((gput(112.5, r) / target - 1.0).abs() > 0.01, "{r}");
        let r = rtt_for(112.5, target, bits, law, 0.2, 0.2).unwrap();
        assert!(
            close(gput(112.5, r), target, 1e-9) && r > 0.22 && r < 0.25,
            "{r}"
        );
        // Below the floor's goodput there is no RTT for this W_max.
        assert_eq!(rtt_for(104.5, 6e6, bits, law, 0.2, 0.2), None);
        // Every rate the TRC takes through this stretch: its model gives the target, at
        // an RTT of at least RTT_min.
        for k in 0..=40 {
            let rate = 4.0e6 + 25e3 * k as f64;
            let p = parameters(&TrcInputs {
                law,
                ..TrcInputs::new(rate, 1460, 0.0166)
            })
            .unwrap();
            assert!(close(p.predicted, p.target, 1e-9), "{rate}: {p:?}");
            assert!(p.rtt >= p.rtt_min * (1.0 - 1e-12), "{rate}: {p:?}");
        }
    }

    #[test]
    fn a_model_file_can_carry_a_law_per_rtt() {
        let text = |pts: &str| {
            format!(
                "format = 1\nname = \"x\"\nrecovery_lead = false\n[drop]\nw_first = 6.5\n\
                 a = 2.5\nb = 0.5\nby_rtt = true\npoints = [{pts}]\n"
            )
        };
        let m = parse_model(
            &text("[6.5, 0.2, 8.0], [10.5, 0.2, 10.0], [6.5, 0.8, 6.0], [10.5, 0.8, 8.0]"),
            "t",
        )
        .unwrap();
        assert_eq!(m.drop.by_rtt.len(), 2);
        assert!(close(m.drop.cycle_at(6.5, 0.4), 7.0, 1e-12));
        // One point at an RTT is no law.
        let e = parse_model(
            &text("[6.5, 0.2, 8.0], [6.5, 0.8, 6.0], [8.5, 0.8, 7.0]"),
            "t",
        );
        assert!(e.unwrap_err().contains("RTT 0.2 s"));
        let e = parse_model(&text(""), "t");
        assert!(e.unwrap_err().contains("needs the measured points"));
    }

    #[test]
    fn knots_are_interpolated_and_the_line_holds_outside_them() {
        const K: &[(f64, f64)] = &[(6.5, 7.0), (8.5, 6.6), (12.5, 8.6)];
        let law = CycleTime {
            w_first: W_MAX_FIRST,
            a: 2.35,
            b: 0.5,
            knots: K,
            by_rtt: &[],
        };
        assert_eq!(law.cycle(6.5), 7.0);
        assert_eq!(law.cycle(8.5), 6.6);
        assert!(close(law.cycle(10.5), 7.6, 1e-12));
        assert_eq!(law.cycle(12.5), 8.6);
        assert_eq!(law.cycle(14.5), 2.35 + 0.5 * 14.5);
        assert_eq!(law.cycle(5.0), 2.35 + 0.5 * 5.0);
        assert!(close(w_avg(6.5, law), 21.96875 / 7.0, 1e-12));
    }

    #[test]
    fn a_tcp_without_a_fit_is_refused_naming_the_key_and_the_fit_command() {
        // Linux-like NewReno: delayed ACKs and byte counting. The delayed-ACK model was
        // fitted without byte counting (and without the lead): refused, not used.
        let linux = TcpConfig {
            delayed_ack: true,
            byte_counting: true,
            ..TcpConfig::default()
        };
        let e = TcpModel::Fitted.law(&linux, Some(true), false).unwrap_err();
        assert!(
            e.contains("tcp.byte_counting = false (this flow: true)"),
            "{e}"
        );
        assert!(
            e.contains("`qoslab trc fit --tcp '{ byte_counting = true, delayed_ack = true }'`"),
            "{e}"
        );
        assert!(!e.contains("trc_model_fit"), "{e}");
        // A delayed-ACK timer of 40 ms against the model's 200 ms.
        let mut t = tcp_of("sack-window-nolt-nodelack");
        t.delayed_ack = true;
        t.delack_timeout = Dur::from_millis(40);
        let e = TcpModel::Named("sack-flight-lt-delack".into())
            .law(&t, Some(true), false)
            .unwrap_err();
        assert!(
            e.contains("tcp.delack_timeout = \"200ms\" (this flow: \"40ms\")"),
            "{e}"
        );
        assert!(e.contains("delack_timeout = \"40ms\""), "{e}");
        // The recovery lead: the default TCP's model ran with it; a 100 ms clock (above
        // RTT_dev) turns it off, and the model is refused; the other way is accepted.
        let mut t = tcp_of("newreno-flight-lt-nodelack");
        t.granularity = Dur::from_millis(100);
        let e = TcpModel::Fitted.law(&t, Some(false), false).unwrap_err();
        assert!(
            e.contains("tcp.granularity = \"10ms\" (recovery lead on"),
            "{e}"
        );
        // The cause a user can act on is named: rtt_dev against the clock.
        assert!(e.contains("rtt_dev is below the clock granularity"), "{e}");
        assert!(e.contains("granularity = \"100ms\""), "{e}");
        assert!(TcpModel::Fitted.law(&t, Some(false), true).is_ok()); // ECN: no lead
        let t = tcp_of("sack-window-nolt-nodelack");
        assert!(TcpModel::Fitted.law(&t, Some(true), false).is_ok());
        // An explicit recovery_lead is not compared; ECN mode has no lead.
        assert!(TcpModel::Fitted.law(&t, None, false).is_ok());
        // The initial window counts with delayed ACKs only.
        let mut t = tcp_of("newreno-flight-lt-nodelack");
        t.initial_window = 10;
        assert!(TcpModel::Fitted.law(&t, Some(true), false).is_ok());
        let mut t = tcp_of("sack-flight-lt-delack");
        t.initial_window = 10;
        let e = TcpModel::Fitted.law(&t, Some(true), false).unwrap_err();
        assert!(e.contains("tcp.initial_window = 1 (this flow: 10)"), "{e}");
        // MSS and the window cap are not compared.
        let mut t = tcp_of("newreno-flight-lt-nodelack");
        t.mss = 536;
        t.max_window = 64;
        assert!(TcpModel::Fitted.law(&t, Some(true), false).is_ok());
        // An unknown model name is refused, not replaced.
        let e = TcpModel::Named("vegas".into()).law(&t, Some(true), false);
        assert!(e.unwrap_err().contains("no TRC model \"vegas\""));
    }

    #[test]
    fn a_model_file_round_trips_and_bad_files_are_refused() {
        let text = "format = 1\nname = \"x\"\nrecovery_lead = true\n[tcp]\ndelayed_ack = true\n\
                    [drop]\nw_first = 6.5\na = 2.3314\nb = 0.5004\nknots = [[6.5, 7.0], [8.5, 6.6]]\n";
        let m = parse_model(text, "t.toml").unwrap();
        assert_eq!(
            (m.drop.a, m.drop.b, m.drop.knots.len()),
            (2.3314, 0.5004, 2)
        );
        assert!(m.tcp.delayed_ack && m.lead && m.ecn.is_none());
        assert!(parse_model(&text.replace("format = 1", "format = 2"), "t").is_err());
        assert!(parse_model(&text.replace("b = 0.5004", "b = -1.0"), "t").is_err());
        assert!(parse_model(&text.replace("w_first = 6.5", "w_first = 2.5"), "t").is_err());
        assert!(parse_model(&text.replace("[tcp]", "[tcp]\nbyte_countin = true"), "t").is_err());
        assert!(parse_model(&text.replace("[8.5, 6.6]", "[5.5, 6.6]"), "t").is_err());
    }

    #[test]
    fn bad_inputs_are_refused() {
        assert!(parameters(&TrcInputs::new(0.0, 1460, 0.003)).is_err());
        assert!(parameters(&TrcInputs::new(1e6, 0, 0.003)).is_err());
        assert!(parameters(&TrcInputs::new(1e6, 1460, -1.0)).is_err());
        let mut i = TrcInputs::new(1e6, 1460, 0.003);
        i.gput_error = 0.0;
        assert!(parameters(&i).is_err());
        i.rtt_min_star = Some(0.2);
        assert!(parameters(&i).is_ok());
    }
}

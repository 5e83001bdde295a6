//! Multi-colour RED for three drop precedences (DP0/DP1/DP2 = green/yellow/red): one
//! FIFO, one shared packet limit, per-colour (min_th, max_th, max_p), in three modes:
//!
//! - **RIO-C** (coupled; Clark & Fang, "Explicit allocation of best-effort packet
//!   delivery service", 1998, generalised to three colours as in ns-2's dsRED): the
//!   decision for colour c uses the average of the occupancy of colour c *and all
//!   better colours*. An arrival of colour c updates the averages of c and every worse
//!   colour, since their measured occupancies include it.
//! - **RIO-D** (decoupled): colour c's average is of colour c's own occupancy, updated
//!   on arrivals of colour c.
//! - **WRED**: one average of the whole queue, updated on every arrival; per-colour
//!   thresholds.
//!
//! Each average follows F&J §4 (EWMA with `w_q`, idle decay while *its* occupancy is
//! zero); each colour keeps its own count (F&J §7). Default parameters are P3's
//! (docs/papers/p3.md): DP0 {40, 55, 0.02}, DP1 {25, 40, 0.05}, DP2 {10, 25, 0.1}, w_q 0.002.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::red::{
    check_mean_pkt_size, check_unit_interval, d_mean_pkt_size, d_w_q, decide, Ewma, RedParams,
    RedThresholds, Verdict,
};
use super::{DropCause, Drops, Limit, Occupancy, Queue, DEFAULT_LIMIT};
use crate::config::ScenarioError;
use crate::packet::{Ecn, Packet};
use crate::rng::RngStream;
use crate::time::{Rate, SimTime};
use crate::units::Bytes;

/// How the per-colour averages are measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MultiRedMode {
    /// Coupled: colour c's average counts colours 0..=c.
    RioC,
    /// Decoupled: colour c's average counts colour c only.
    RioD,
    /// One average over the whole queue.
    Wred,
}

/// Settings of a multi-colour RED queue (packets only).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MultiRedSettings {
    /// How averages are measured.
    pub mode: MultiRedMode,
    /// Shared buffer limit [packets].
    pub limit: u32,
    /// Thresholds [packets] and max_p for DP0 (green), DP1 (yellow), DP2 (red).
    pub params: [RedParams; 3],
    /// EWMA weight of every average (F&J §6), in (0, 1].
    pub w_q: f64,
    /// Mean packet size for the idle decay [bytes].
    pub mean_pkt_size: u32,
    /// Gentle RED per curve: p rises from max_p at max_th to 1 at 2·max_th.
    pub gentle: bool,
    /// Mark ECN-capable packets CE instead of dropping them early (RFC 3168).
    pub ecn: bool,
    /// ns-2's `wait` spacing of early drops (see `red::decide`).
    pub wait: bool,
    /// Byte mode: p_b scaled by packet size / `mean_pkt_size` (F&J §4), so small
    /// packets are dropped less often; averages and thresholds stay in packets.
    pub byte_mode: bool,
}

impl MultiRedSettings {
    /// P3's parameters in `mode` with a shared limit of `limit` packets.
    pub fn p3(mode: MultiRedMode, limit: u32) -> Self {
        let p = |min_th, max_th, max_p| RedParams {
            min_th,
            max_th,
            max_p,
        };
        MultiRedSettings {
            mode,
            limit,
            params: [p(40.0, 55.0, 0.02), p(25.0, 40.0, 0.05), p(10.0, 25.0, 0.1)],
            w_q: 0.002,
            mean_pkt_size: 1000,
            gentle: false,
            ecn: false,
            wait: false,
            byte_mode: false,
        }
    }
}

/// A FIFO with per-colour RED (RIO-C, RIO-D or WRED).
#[derive(Debug)]
pub struct MultiRed {
    s: MultiRedSettings,
    /// RIO: one average per colour; WRED uses index 0 only.
    avgs: [Ewma; 3],
    counts: [u32; 3],
    /// Packets held per colour.
    held: [u32; 3],
    buf: VecDeque<Packet>,
    bytes: u64,
    rng: RngStream,
}

impl MultiRed {
    /// An empty queue on a link of `link_rate` (for the idle decay), drawing from `rng`.
    pub fn new(settings: MultiRedSettings, link_rate: Rate, rng: RngStream) -> Self {
        let e = Ewma::new(settings.w_q, link_rate, settings.mean_pkt_size);
        MultiRed {
            s: settings,
            avgs: [e.clone(), e.clone(), e],
            counts: [0; 3],
            held: [0; 3],
            buf: VecDeque::new(),
            bytes: 0,
            rng,
        }
    }

    /// The occupancy that average `k` measures.
    fn measured(&self, k: usize) -> u32 {
        match self.s.mode {
            MultiRedMode::RioC => self.held[..=k].iter().sum(),
            MultiRedMode::RioD => self.held[k],
            MultiRedMode::Wred => self.held.iter().sum(),
        }
    }

    /// Averages `k` that an arrival or departure of colour `c` changes.
    fn touched(&self, c: usize) -> std::ops::Range<usize> {
        match self.s.mode {
            MultiRedMode::RioC => c..3,
            MultiRedMode::RioD => c..c + 1,
            MultiRedMode::Wred => 0..1,
        }
    }

    /// The average colour `c`'s decision uses.
    fn avg_index(&self, c: usize) -> usize {
        match self.s.mode {
            MultiRedMode::Wred => 0,
            _ => c,
        }
    }

    /// Current averages [packets]: per colour for RIO; WRED's one average three times.
    pub fn averages(&self) -> [f64; 3] {
        let a = |k: usize| self.avgs[self.avg_index(k)].value();
        [a(0), a(1), a(2)]
    }
}

impl Queue for MultiRed {
    fn enqueue(&mut self, now: SimTime, mut pkt: Packet, drops: &mut Drops) {
        let c = pkt.colour.index();
        for k in self.touched(c) {
            let q = self.measured(k) as f64;
            self.avgs[k].on_arrival(now, q);
        }
        let avg = self.avgs[self.avg_index(c)].value();
        let mut marked = false;
        // F&J §4, byte mode: p_b ← p_b · PacketSize / (mean) packet size.
        let scale = if self.s.byte_mode {
            pkt.size as f64 / self.s.mean_pkt_size.max(1) as f64
        } else {
            1.0
        };
        match decide(
            &self.s.params[c],
            self.s.gentle,
            self.s.wait,
            avg,
            scale,
            &mut self.counts[c],
            &mut self.rng,
        ) {
            Verdict::Admit => {}
            Verdict::Early if self.s.ecn && matches!(pkt.ecn, Ecn::Ect | Ecn::Ce) => {
                pkt.ecn = Ecn::Ce;
                marked = true;
            }
            Verdict::Early => return drops.push(pkt, DropCause::RedEarly),
            Verdict::Forced => return drops.push(pkt, DropCause::RedForced),
        }
        if self.buf.len() as u32 >= self.s.limit {
            return drops.push(pkt, DropCause::Overflow);
        }
        if marked {
            drops.mark(&pkt);
        }
        self.held[c] += 1;
        self.bytes += pkt.size as u64;
        self.buf.push_back(pkt);
    }

    fn dequeue(&mut self, now: SimTime, _drops: &mut Drops) -> Option<Packet> {
        let p = self.buf.pop_front()?;
        let c = p.colour.index();
        self.held[c] -= 1;
        self.bytes -= p.size as u64;
        for k in self.touched(c) {
            if self.measured(k) == 0 {
                self.avgs[k].on_empty(now);
            }
        }
        Some(p)
    }

    fn occupancy(&self) -> Occupancy {
        Occupancy {
            packets: self.buf.len() as u32,
            bytes: self.bytes,
        }
    }

    /// The average of the whole queue for RIO-C (DP2's) and WRED; for RIO-D, the sum of
    /// the per-colour averages.
    fn average(&self) -> Option<f64> {
        Some(match self.s.mode {
            MultiRedMode::RioC => self.avgs[2].value(),
            MultiRedMode::RioD => self.avgs.iter().map(Ewma::value).sum(),
            MultiRedMode::Wred => self.avgs[0].value(),
        })
    }
}

fn d_limit() -> u32 {
    DEFAULT_LIMIT
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

/// The keys of a multi-colour RED queue in a scenario (`kind = "rio_c"`, `"rio_d"` or
/// `"wred"`; the kind gives the [`MultiRedMode`]), with P3's defaults.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MultiRedConfig {
    /// Shared limit [packets]; default 100.
    #[serde(default = "d_limit")]
    pub limit: u32,
    /// Weight of the averages, in (0, 1]; default 0.002.
    #[serde(default = "d_w_q")]
    pub w_q: f64,
    /// Mean packet size for the idle decay [bytes]; default 1000.
    #[serde(default = "d_mean_pkt_size")]
    pub mean_pkt_size: Bytes,
    /// DP0 (green) curve; default {40, 55, 0.02}.
    #[serde(default = "d_dp0", alias = "green")]
    pub dp0: RedThresholds,
    /// DP1 (yellow) curve; default {25, 40, 0.05}.
    #[serde(default = "d_dp1", alias = "yellow")]
    pub dp1: RedThresholds,
    /// DP2 (red) curve; default {10, 25, 0.1}.
    #[serde(default = "d_dp2", alias = "red")]
    pub dp2: RedThresholds,
    /// Gentle RED on every curve (default false).
    #[serde(default)]
    pub gentle: bool,
    /// Mark ECN-capable packets instead of dropping them early (default false).
    #[serde(default)]
    pub ecn: bool,
    /// ns-2/ns-3 `wait` spacing of early drops (default false, F&J's).
    #[serde(default)]
    pub wait: bool,
    /// Byte mode: early-drop probability scaled by packet size / `mean_pkt_size`
    /// (default false); the limit, averages and thresholds stay in packets.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub byte_mode: bool,
}

impl Default for MultiRedConfig {
    /// P3's parameters with a limit of 100 packets.
    fn default() -> Self {
        MultiRedConfig {
            limit: d_limit(),
            w_q: d_w_q(),
            mean_pkt_size: d_mean_pkt_size(),
            dp0: d_dp0(),
            dp1: d_dp1(),
            dp2: d_dp2(),
            gentle: false,
            ecn: false,
            wait: false,
            byte_mode: false,
        }
    }
}

impl MultiRedConfig {
    /// Checks every parameter; keys are relative to the queue table (`"dp1.max_p"`).
    pub fn validate(&self) -> Result<(), ScenarioError> {
        Limit::check_keys(Some(self.limit), None)?;
        check_unit_interval("w_q", self.w_q)?;
        check_mean_pkt_size(self.mean_pkt_size)?;
        let curves = [&self.dp0, &self.dp1, &self.dp2];
        for (i, c) in curves.iter().enumerate() {
            c.validate(&format!("dp{i}."))?;
        }
        let top = curves.iter().map(|c| c.max_th).fold(0.0, f64::max);
        if (self.limit as f64) < top {
            return Err(ScenarioError::new(
                "limit",
                format!(
                    "expected limit ≥ the largest max_th ({top} packets) so RED acts before \
                     the buffer overflows, found {}",
                    self.limit
                ),
            ));
        }
        Ok(())
    }

    /// The queue in `mode` for a link of `link_rate`; call [`MultiRedConfig::validate`]
    /// first.
    pub fn build(&self, mode: MultiRedMode, link_rate: Rate, rng: RngStream) -> MultiRed {
        let s = MultiRedSettings {
            mode,
            limit: self.limit,
            params: [&self.dp0, &self.dp1, &self.dp2].map(RedThresholds::params),
            w_q: self.w_q,
            mean_pkt_size: self.mean_pkt_size.0 as u32,
            gentle: self.gentle,
            ecn: self.ecn,
            wait: self.wait,
            byte_mode: self.byte_mode,
        };
        MultiRed::new(s, link_rate, rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Colour;

    fn coloured(uid: u64, c: Colour) -> Packet {
        Packet {
            uid,
            size: 1000,
            colour: c,
            ..Default::default()
        }
    }

    /// Offers `n` arrivals with colours drawn 1/3 each, dequeuing whenever the queue
    /// holds more than `hold` packets; returns the fraction of each colour dropped.
    fn drop_fractions(mode: MultiRedMode, hold: u32, n: u64) -> [f64; 3] {
        let mut q = MultiRed::new(
            MultiRedSettings::p3(mode, 100),
            Rate::from_mbps(10),
            RngStream::from_seed(21),
        );
        let mut colours = RngStream::from_seed(22);
        let mut d = Drops::default();
        let (mut arr, mut drp) = ([0u64; 3], [0u64; 3]);
        for i in 0..n {
            let c = Colour::from_index(colours.below(3) as usize);
            q.enqueue(SimTime::ZERO, coloured(i, c), &mut d);
            arr[c.index()] += 1;
            drp[c.index()] += d.dropped.len() as u64;
            d.clear();
            if q.occupancy().packets > hold {
                q.dequeue(SimTime::ZERO, &mut d);
            }
        }
        [0, 1, 2].map(|k| drp[k] as f64 / arr[k] as f64)
    }

    #[test]
    fn rio_c_drops_worse_colours_more_than_rio_d() {
        // The queue is held at 36 packets with an equal mix of arrivals. RIO-D measures
        // each colour alone (about 12 each): green and yellow sit below their min_th
        // (40, 25) and only red (10..25) is dropped, gently. RIO-C measures yellow with
        // green (about 24 → near DP1's min_th 25) and red with everything (36 > DP2's
        // max_th 25), so red is force-dropped; as red leaves the queue, green+yellow
        // fill it (about 36 > 25) and yellow is dropped early too. Green's measure is
        // the same in both modes (green alone, < 40), so green is never dropped.
        let n = 200_000;
        let c = drop_fractions(MultiRedMode::RioC, 36, n);
        let d = drop_fractions(MultiRedMode::RioD, 36, n);
        assert_eq!((c[0], d[0]), (0.0, 0.0));
        assert!(c[1] > d[1] + 0.01, "yellow: RIO-C {} RIO-D {}", c[1], d[1]);
        assert!(c[2] > d[2] + 0.5, "red: RIO-C {} RIO-D {}", c[2], d[2]);
        assert!(d[2] > 0.0 && d[2] < 0.1, "RIO-D red {}", d[2]);
    }

    #[test]
    fn per_colour_averages_follow_the_rio_definitions() {
        // w_q = 1/2, arrivals G G Y R Y G at t = 0 (no departures, so no idle decay: an
        // arrival finding its measured queue empty leaves the average at 0). Each row:
        // the occupancy the arrival finds → the averages it updates, avg += (q − avg)/2.
        // RIO-C (colour c measures colours 0..=c):
        //   G: q = 0,0,0 → 0, 0, 0        G: q = 1,1,1 → 0.5, 0.5, 0.5
        //   Y: q = ·,2,2 → ·, 1.25, 1.25   R: q = ·,·,3 → ·, ·, 2.125
        //   Y: q = ·,3,4 → ·, 2.125, 3.0625
        //   G: q = 2,4,5 → 1.25, 3.0625, 4.03125
        // RIO-D (colour c measures colour c): G 0 → 0, G 1 → 0.5, Y 0 → 0, R 0 → 0,
        //   Y 1 → 0.5, G 2 → 1.25.
        // WRED (the whole queue): q = 0, 1, 2, 3, 4, 5 → 0, .5, 1.25, 2.125, 3.0625,
        //   4.03125 for every colour.
        let run = |mode| {
            let s = MultiRedSettings {
                w_q: 0.5,
                ..MultiRedSettings::p3(mode, 100)
            };
            let mut q = MultiRed::new(s, Rate::from_mbps(10), RngStream::from_seed(3));
            let mut d = Drops::default();
            use Colour::*;
            for (i, c) in [Green, Green, Yellow, Red, Yellow, Green]
                .into_iter()
                .enumerate()
            {
                q.enqueue(SimTime::ZERO, coloured(i as u64, c), &mut d);
            }
            assert!(d.is_empty());
            (q.averages(), q.average().unwrap())
        };
        assert_eq!(run(MultiRedMode::RioC), ([1.25, 3.0625, 4.03125], 4.03125));
        // RIO-D's one-number `average` (queue_samples.avg) is the sum of its averages.
        assert_eq!(run(MultiRedMode::RioD), ([1.25, 0.5, 0.0], 1.75));
        assert_eq!(run(MultiRedMode::Wred), ([4.03125; 3], 4.03125));
    }

    #[test]
    fn wred_uses_one_average() {
        // Build the averages with green only, held at 20 packets; then offer red.
        let run = |mode| {
            let mut q = MultiRed::new(
                MultiRedSettings::p3(mode, 100),
                Rate::from_mbps(10),
                RngStream::from_seed(23),
            );
            let mut d = Drops::default();
            for i in 0..20 {
                q.enqueue(SimTime::ZERO, coloured(i, Colour::Green), &mut d);
            }
            for i in 0..20_000 {
                q.enqueue(SimTime::ZERO, coloured(100 + i, Colour::Green), &mut d);
                q.dequeue(SimTime::ZERO, &mut d);
            }
            assert!(d.is_empty());
            let before = q.averages();
            let mut dropped = 0;
            // 200 arrivals: RIO-D's red average (red alone, growing from 0 towards
            // 20 at w_q 0.002) stays below DP2's min_th 10 meanwhile.
            for i in 0..200 {
                q.enqueue(SimTime::ZERO, coloured(50_000 + i, Colour::Red), &mut d);
                if d.dropped.is_empty() {
                    q.dequeue(SimTime::ZERO, &mut d);
                }
                dropped += d.dropped.len();
                d.clear();
            }
            (before, dropped, q)
        };
        let (avg, dropped, q) = run(MultiRedMode::Wred);
        // One average, shared by every colour, ≈ 20 → red's p_b = 0.1·(20−10)/15.
        assert!((avg[0] - 20.0).abs() < 1e-3, "{avg:?}");
        assert_eq!(avg[0], avg[2]);
        assert_eq!(q.averages()[0], q.averages()[2]);
        assert!(dropped > 5, "WRED dropped only {dropped} red packets");
        // RIO-D measures red alone (≈ 0) and drops none; RIO-C's red average counts
        // the green packets too and drops like WRED.
        let (avg, dropped, _) = run(MultiRedMode::RioD);
        assert!(avg[2] < 1e-9 && dropped == 0, "{avg:?} {dropped}");
        let (avg, dropped, _) = run(MultiRedMode::RioC);
        assert!(
            (avg[2] - 20.0).abs() < 1e-3 && dropped > 5,
            "{avg:?} {dropped}"
        );
    }

    /// WRED held at an average of `avg_at` packets (green only), then 20 000 red
    /// arrivals (ECT if `ect`) each followed by a departure when admitted; returns
    /// (red packets dropped, red packets CE-marked).
    fn red_after_green(s: MultiRedSettings, avg_at: u64, ect: bool) -> (usize, u32) {
        red_after_green_sized(s, avg_at, ect, 1000)
    }

    /// As [`red_after_green`], with red packets of `size` bytes.
    fn red_after_green_sized(
        s: MultiRedSettings,
        avg_at: u64,
        ect: bool,
        size: u32,
    ) -> (usize, u32) {
        let mut q = MultiRed::new(s, Rate::from_mbps(10), RngStream::from_seed(29));
        let mut d = Drops::default();
        for i in 0..avg_at {
            q.enqueue(SimTime::ZERO, coloured(i, Colour::Green), &mut d);
        }
        for i in 0..20_000 {
            q.enqueue(SimTime::ZERO, coloured(100 + i, Colour::Green), &mut d);
            q.dequeue(SimTime::ZERO, &mut d);
        }
        assert!(d.is_empty());
        let (mut dropped, mut marked) = (0, 0);
        for i in 0..20_000 {
            let mut p = coloured(50_000 + i, Colour::Red);
            p.size = size;
            if ect {
                p.ecn = Ecn::Ect;
            }
            q.enqueue(SimTime::ZERO, p, &mut d);
            if d.dropped.is_empty() {
                q.dequeue(SimTime::ZERO, &mut d);
            }
            dropped += d.dropped.len();
            marked += d.ecn_marked;
            d.clear();
        }
        (dropped, marked)
    }

    #[test]
    fn byte_mode_drops_small_packets_less() {
        // WRED at an average of 20 packets: DP2's p_b = 0.1 · (20 − 10)/15 = 1/15 for a
        // mean-sized (1000 B) packet. In byte mode a 200 B packet has p_b = 1/75, and
        // with F&J's count spacing the drop fraction is 2p/(1 + p): 0.125 and 0.0263.
        // Without byte mode both sizes are dropped alike.
        let base = MultiRedSettings::p3(MultiRedMode::Wred, 100);
        let frac = |s, size| red_after_green_sized(s, 20, false, size).0 as f64 / 20_000.0;
        let (big, small) = (frac(base, 1000), frac(base, 200));
        assert!((big - small).abs() < 0.015, "packet mode {big} {small}");
        let b = MultiRedSettings {
            byte_mode: true,
            ..base
        };
        let (big, small) = (frac(b, 1000), frac(b, 200));
        assert!((big - 0.125).abs() < 0.01, "byte mode 1000 B {big}");
        assert!((small - 0.0263).abs() < 0.005, "byte mode 200 B {small}");
    }

    #[test]
    fn gentle_ecn_and_wait_act_on_every_curve() {
        let base = MultiRedSettings::p3(MultiRedMode::Wred, 100);
        // Average 30 > DP2's max_th 25: every red packet is force-dropped …
        let (plain, _) = red_after_green(base, 30, false);
        assert_eq!(plain, 20_000);
        // … but gentle RED gives p_b = 0.1 + 0.9 · 5/25 = 0.28 there; with F&J's count
        // spacing the gap between drops is uniform on {1, …, 1/p_b}, a drop fraction of
        // 2·p_b / (1 + p_b) = 0.4375.
        let g = MultiRedSettings {
            gentle: true,
            ..base
        };
        let (dropped, _) = red_after_green(g, 30, false);
        let f = dropped as f64 / 20_000.0;
        assert!((f - 0.4375).abs() < 0.02, "gentle drop fraction {f}");
        // Average 20, DP2's early region (p_b = 0.1 · 10/15): ECN marks ECT packets
        // instead of dropping them; not-ECT packets are still dropped.
        let e = MultiRedSettings { ecn: true, ..base };
        let (dropped, marked) = red_after_green(e, 20, true);
        assert_eq!(dropped, 0);
        assert!(marked > 500, "{marked}");
        let (dropped, marked) = red_after_green(e, 20, false);
        assert!(dropped > 500 && marked == 0, "{dropped} {marked}");
        // `wait` spaces early drops further apart: fewer drops at the same average.
        let (no_wait, _) = red_after_green(base, 20, false);
        let w = MultiRedSettings { wait: true, ..base };
        let (with_wait, _) = red_after_green(w, 20, false);
        assert!(
            (with_wait as f64) < 0.8 * no_wait as f64,
            "wait {with_wait} vs {no_wait}"
        );
    }
}

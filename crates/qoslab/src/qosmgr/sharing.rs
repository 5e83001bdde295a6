//! How an aggregate's token bucket `(r_m, b)` is shared among its n connections
//! (P0 §4.2): partitioned buckets, one common bucket, or a common bucket with logical
//! partitions whose overflow is shared equally among the non-full ones.
//!
//! Tokens are exact integer units ([`UNITS_PER_BYTE`] per byte): a rate of `r` bit/s
//! earns `r` units per ns. A per-connection share of the rate (r_m/n) is rounded down
//! per update, so the schemes never hand out more than the aggregate earns.
//!
//! Logical partitions (§4.2.3): bucket i fills at r_m/n up to its depth b_i; when it
//! is full, what it would receive goes in equal shares to the buckets that are not
//! full. Every non-full bucket therefore fills at the same rate at any instant, and the
//! state after an interval is a water filling of the tokens earned in it: each bucket
//! gains the same amount `x`, or fills. Since Σb_i = b, the tokens held never exceed b.

use crate::cond::action::UNITS_PER_BYTE;
use crate::time::{Rate, SimTime};

/// Which of P0's three ways splits the aggregate bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// One bucket per connection, rate r_m/n, depth b_i (§4.2.1).
    Partitioned,
    /// One bucket for all connections (§4.2.2).
    Common,
    /// One bucket with a logical partition per connection (§4.2.3).
    Logical,
}

/// An aggregate's tokens under one sharing scheme, with the aggregate's peak rate.
#[derive(Clone, Debug)]
pub struct TokenShare {
    scheme: Scheme,
    rate: i128,
    /// Per connection (partitioned, logical) or one entry (common) [units].
    tokens: Vec<i128>,
    depths: Vec<i128>,
    last: SimTime,
    /// Peak-rate bucket (rate r_p, depth L_m) shared by the aggregate.
    peak: Option<(i128, i128, i128)>,
    peak_last: SimTime,
}

impl TokenShare {
    /// Full buckets for `weights.len()` connections: aggregate rate `rate`, depth
    /// `depth` bytes split in proportion to `weights` (all equal: b/n; RTTs: b·rtt_i/Σrtt);
    /// `peak` = (r_p, L_m bytes) limits the aggregate's spacing (P0 §3.2).
    pub fn new(
        scheme: Scheme,
        rate: Rate,
        depth: u64,
        weights: &[f64],
        peak: Option<(Rate, u64)>,
    ) -> Self {
        Self::with_min_depth(scheme, rate, depth, weights, peak, 0)
    }

    /// As [`TokenShare::new`], but no connection's bucket is smaller than `min_depth`
    /// bytes (one packet): connections whose share would be smaller get `min_depth` and
    /// the rest of b is split among the others in proportion to their weights, so the
    /// depths still add up to b. Needs b ≥ n·`min_depth` (checked by the builder).
    pub fn with_min_depth(
        scheme: Scheme,
        rate: Rate,
        depth: u64,
        weights: &[f64],
        peak: Option<(Rate, u64)>,
        min_depth: u64,
    ) -> Self {
        let b = depth as i128 * UNITS_PER_BYTE;
        let depths = match scheme {
            Scheme::Common => vec![b],
            _ => split_depths(b, weights, min_depth as i128 * UNITS_PER_BYTE),
        };
        TokenShare {
            scheme,
            rate: rate.bps() as i128,
            tokens: depths.clone(),
            depths,
            last: SimTime::ZERO,
            peak: peak.map(|(r, l)| {
                let d = l as i128 * UNITS_PER_BYTE;
                (r.bps() as i128, d, d)
            }),
            peak_last: SimTime::ZERO,
        }
    }

    /// The scheme in use.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// Depth of connection `i`'s bucket (the common bucket for every i) [bytes].
    pub fn depth_bytes(&self, i: usize) -> f64 {
        self.depths[self.slot(i)] as f64 / UNITS_PER_BYTE as f64
    }

    /// Tokens connection `i` may use now (the common bucket for every i) [bytes].
    pub fn tokens_bytes(&self, i: usize) -> f64 {
        self.tokens[self.slot(i)] as f64 / UNITS_PER_BYTE as f64
    }

    /// Tokens held in all buckets together [bytes].
    pub fn total_bytes(&self) -> f64 {
        self.tokens.iter().sum::<i128>() as f64 / UNITS_PER_BYTE as f64
    }

    #[inline]
    fn slot(&self, i: usize) -> usize {
        match self.scheme {
            Scheme::Common => 0,
            _ => i,
        }
    }

    /// Adds the tokens earned since the last update.
    pub fn refill(&mut self, now: SimTime) {
        if let Some((r, d, t)) = &mut self.peak {
            if now > self.peak_last {
                let dt = (now - self.peak_last).as_nanos() as i128;
                *t = (*t + *r * dt).min(*d);
                self.peak_last = now;
            }
        }
        if now <= self.last {
            return;
        }
        let earned = self.rate * (now - self.last).as_nanos() as i128;
        self.last = now;
        match self.scheme {
            Scheme::Common => self.tokens[0] = (self.tokens[0] + earned).min(self.depths[0]),
            Scheme::Partitioned => {
                let each = earned / self.tokens.len() as i128;
                for (t, d) in self.tokens.iter_mut().zip(&self.depths) {
                    *t = (*t + each).min(*d);
                }
            }
            Scheme::Logical => self.water_fill(earned),
        }
    }

    /// Logical partitions: `earned` units in equal shares among the non-full buckets,
    /// a full bucket's share going again in equal shares to the others (§4.2.3).
    fn water_fill(&mut self, mut left: i128) {
        loop {
            let open: Vec<usize> = (0..self.tokens.len())
                .filter(|&i| self.tokens[i] < self.depths[i])
                .collect();
            if open.is_empty() || left <= 0 {
                return; // every bucket full: the aggregate bucket overflows
            }
            let share = left / open.len() as i128;
            if share == 0 {
                return; // less than one unit per bucket: dropped (rounding down)
            }
            for &i in &open {
                let add = share.min(self.depths[i] - self.tokens[i]);
                self.tokens[i] += add;
                left -= add;
            }
        }
    }

    /// True if connection `i` may send `bytes` now (its bucket and the peak bucket).
    pub fn conforms(&mut self, now: SimTime, i: usize, bytes: u32) -> bool {
        self.refill(now);
        let need = bytes as i128 * UNITS_PER_BYTE;
        let s = self.slot(i);
        // Depths are at least L_m (checked when the manager is built), so a packet
        // never needs more than a full bucket.
        self.tokens[s] >= need && self.peak.is_none_or(|(_, _, t)| t >= need)
    }

    /// Takes `bytes` from connection `i`'s bucket (after [`TokenShare::conforms`]).
    pub fn take(&mut self, i: usize, bytes: u32) {
        let need = bytes as i128 * UNITS_PER_BYTE;
        let s = self.slot(i);
        self.tokens[s] -= need;
        if let Some((_, _, t)) = &mut self.peak {
            *t -= need;
        }
    }
}

/// b split in proportion to `weights` [units], each share at least `min` where b allows.
fn split_depths(b: i128, weights: &[f64], min: i128) -> Vec<i128> {
    let n = weights.len().max(1);
    let w: Vec<f64> = if weights.iter().sum::<f64>() > 0.0 {
        weights.to_vec()
    } else {
        vec![1.0; n]
    };
    let mut fixed = vec![false; w.len()];
    loop {
        let left = b - min * fixed.iter().filter(|f| **f).count() as i128;
        let sum: f64 = (0..w.len()).filter(|&i| !fixed[i]).map(|i| w[i]).sum();
        let share = |i: usize| (left as f64 * w[i] / sum).floor() as i128;
        let low: Vec<usize> = (0..w.len())
            .filter(|&i| !fixed[i] && share(i) < min)
            .collect();
        if low.is_empty() || low.len() == fixed.iter().filter(|f| !**f).count() {
            return (0..w.len())
                .map(|i| if fixed[i] { min } else { share(i) })
                .collect();
        }
        for i in low {
            fixed[i] = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KB: u64 = 1000;

    fn share(scheme: Scheme, weights: &[f64]) -> TokenShare {
        // 80 kB/s (640 kb/s), b = 20 kB.
        TokenShare::new(scheme, Rate::from_kbps(640), 20 * KB, weights, None)
    }

    #[test]
    fn depths_split_equally_or_by_rtt() {
        let eq = share(Scheme::Partitioned, &[1.0; 4]);
        assert_eq!(eq.depth_bytes(0), 5000.0);
        // RTTs 50/300/300/600 ms: b·rtt_i/Σrtt = 20 000·{50,300,300,600}/1250.
        let prop = share(Scheme::Logical, &[0.05, 0.3, 0.3, 0.6]);
        let d: Vec<f64> = (0..4).map(|i| prop.depth_bytes(i).round()).collect();
        assert_eq!(d, vec![800.0, 4800.0, 4800.0, 9600.0]);
        let common = share(Scheme::Common, &[1.0; 4]);
        assert_eq!(common.depth_bytes(3), 20_000.0);
    }

    #[test]
    fn a_connection_whose_rtt_share_is_below_one_packet_gets_one_packet() {
        // 20 kB by RTTs 20/300/300/600 ms: the 20 ms share (329 B) is below 1 500 B, so
        // it gets 1 500 B and 18 500 B are split 300:300:600 → 4 625, 4 625, 9 250.
        let s = TokenShare::with_min_depth(
            Scheme::Logical,
            Rate::from_kbps(640),
            20 * KB,
            &[0.02, 0.3, 0.3, 0.6],
            None,
            1500,
        );
        let d: Vec<f64> = (0..4).map(|i| s.depth_bytes(i).round()).collect();
        assert_eq!(d, vec![1500.0, 4625.0, 4625.0, 9250.0]);
        assert!(d.iter().sum::<f64>() <= 20_000.0);
    }

    #[test]
    fn partitioned_buckets_fill_at_an_equal_share_and_lose_overflow() {
        let mut s = share(Scheme::Partitioned, &[1.0; 4]);
        for i in 0..4 {
            assert!(s.conforms(SimTime::ZERO, i, 5000));
            s.take(i, 5000);
        }
        // 100 ms at 80 kB/s = 8 000 B, 2 000 B each.
        let t = SimTime::from_millis(100);
        assert!(s.conforms(t, 0, 2000));
        assert!(!s.conforms(t, 0, 2001));
        // 1 s later bucket 1 is full at 5 000 B, not 20 000 B: the rest was lost.
        assert_eq!(s.tokens_bytes(1), 2000.0);
        s.refill(SimTime::from_millis(1100));
        assert_eq!(s.tokens_bytes(1), 5000.0);
        assert_eq!(s.total_bytes(), 20_000.0);
    }

    #[test]
    fn a_full_logical_bucket_overflows_to_the_others_in_equal_shares() {
        // Hand-computed: depths 800/4800/4800/9600 B, connection 0 full, the others
        // empty. In 30 ms the aggregate earns 2 400 B: 600 B each, but bucket 0 is full,
        // so its 600 B go in equal shares (200 B) to buckets 1–3: 800 B each.
        let mut s = share(Scheme::Logical, &[0.05, 0.3, 0.3, 0.6]);
        for i in 1..4 {
            let d = s.depth_bytes(i) as u32;
            assert!(s.conforms(SimTime::ZERO, i, d));
            s.take(i, d);
        }
        s.refill(SimTime::from_millis(30));
        let got: Vec<f64> = (0..4).map(|i| s.tokens_bytes(i).round()).collect();
        assert_eq!(got, vec![800.0, 800.0, 800.0, 800.0]);
        // Then 100 ms more (8 000 B): 1–3 get 2 666.67 B each, 1 and 2 reach 3 466.67.
        s.refill(SimTime::from_millis(130));
        let got: Vec<f64> = (0..4).map(|i| s.tokens_bytes(i).round()).collect();
        assert_eq!(got, vec![800.0, 3467.0, 3467.0, 3467.0]);
        // 100 ms more (8 000 B): 1 and 2 fill (1 333.33 B each), the remaining
        // 8 000 − 2 666.67 go to bucket 3: 3 466.67 + 5 333.33 = 8 800 (< 9 600).
        s.refill(SimTime::from_millis(230));
        let got: Vec<f64> = (0..4).map(|i| s.tokens_bytes(i).round()).collect();
        assert_eq!(got, vec![800.0, 4800.0, 4800.0, 8800.0]);
        // Only when all are full does the aggregate lose tokens; never above b.
        s.refill(SimTime::from_secs(5));
        assert_eq!(s.total_bytes().round(), 20_000.0);
    }

    #[test]
    fn a_common_bucket_serves_whoever_asks() {
        let mut s = share(Scheme::Common, &[1.0; 4]);
        assert!(s.conforms(SimTime::ZERO, 0, 20_000));
        s.take(0, 20_000);
        assert!(!s.conforms(SimTime::ZERO, 3, 1));
        assert!(s.conforms(SimTime::from_millis(10), 3, 800));
        assert!(!s.conforms(SimTime::from_millis(10), 2, 801));
    }

    /// Tiny deterministic generator for the randomised property test.
    fn lcg(x: &mut u64) -> u64 {
        *x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        *x >> 33
    }

    #[test]
    fn no_scheme_hands_out_more_than_depth_plus_rate_over_any_interval() {
        // Random demand (40–800 B) from 4 connections every 0–5 ms for 20 s; every packet that
        // conforms is taken. Over every interval [t_a, t_b] of grants, the bytes granted
        // stay ≤ b + r_m·(t_b − t_a), and with a peak rate ≤ L_m + r_p·(t_b − t_a).
        for scheme in [Scheme::Partitioned, Scheme::Common, Scheme::Logical] {
            for peak in [None, Some((Rate::from_kbps(1000), 1500))] {
                let mut s = TokenShare::new(
                    scheme,
                    Rate::from_kbps(640),
                    20 * KB,
                    &[0.05, 0.3, 0.3, 0.6],
                    peak,
                );
                let mut x = 7u64;
                let mut t = 0u64;
                let mut grants: Vec<(u64, u64)> = Vec::new();
                while t < 20_000_000_000 {
                    t += lcg(&mut x) % 5_000_000;
                    let i = (lcg(&mut x) % 4) as usize;
                    let size = 40 + (lcg(&mut x) % 761) as u32;
                    let now = SimTime::from_nanos(t);
                    if s.conforms(now, i, size) {
                        s.take(i, size);
                        grants.push((t, size as u64));
                    }
                    assert!(s.total_bytes() <= 20_000.0 + 1e-9, "{scheme:?}");
                }
                assert!(grants.len() > 500, "{scheme:?}: {}", grants.len());
                let (r, b) = match peak {
                    None => (80_000.0, 20_000.0),
                    Some(_) => (125_000.0, 1500.0),
                };
                let mut prefix = vec![0u64];
                for g in &grants {
                    prefix.push(prefix.last().unwrap() + g.1);
                }
                for a in 0..grants.len() {
                    for z in a..grants.len() {
                        let bytes = (prefix[z + 1] - prefix[a]) as f64;
                        let dt = (grants[z].0 - grants[a].0) as f64 / 1e9;
                        assert!(
                            bytes <= b + r * dt + 1e-6,
                            "{scheme:?} {peak:?}: {bytes} B in {dt} s"
                        );
                    }
                }
                // Saturated demand uses the rate: the long-run total is close to r_m·T.
                if peak.is_none() && scheme != Scheme::Partitioned {
                    let total = *prefix.last().unwrap() as f64;
                    assert!(total > 0.9 * 80_000.0 * 20.0, "{scheme:?}: {total}");
                }
            }
        }
    }
}

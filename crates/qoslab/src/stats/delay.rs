//! Per-packet one-way delay statistics of a flow's data packets (UDP datagrams, TCP
//! segments carrying data), for `record.delays = true`: count, mean, maximum,
//! percentiles from a log-scale histogram, and jitter.
//!
//! Percentiles come from buckets 1 % wide (bucket k holds delays in
//! [1.01^k, 1.01^(k+1)) ns), reported as the bucket's upper edge (capped at the
//! maximum seen): within 1 % above the exact value. Jitter is the mean absolute
//! difference between the delays of consecutive packets as they arrive (RFC 3550 §6.4.1
//! without its 1/16 smoothing).

use crate::time::Dur;

/// Buckets: 1.01^2200 ns ≈ 3·10⁹ s, far beyond any run.
const BUCKETS: usize = 2200;

/// One flow's delay statistics.
#[derive(Clone, Debug)]
pub struct DelayStats {
    count: u64,
    sum_ns: u128,
    max_ns: u64,
    jitter_sum_ns: u128,
    last_ns: Option<u64>,
    hist: Vec<u64>,
}

impl Default for DelayStats {
    fn default() -> Self {
        DelayStats {
            count: 0,
            sum_ns: 0,
            max_ns: 0,
            jitter_sum_ns: 0,
            last_ns: None,
            hist: vec![0; BUCKETS],
        }
    }
}

fn bucket(ns: u64) -> usize {
    if ns <= 1 {
        0
    } else {
        ((ns as f64).ln() / 1.01f64.ln()) as usize
    }
    .min(BUCKETS - 1)
}

impl DelayStats {
    /// Records one packet's one-way delay.
    #[inline]
    pub fn add(&mut self, d: Dur) {
        let ns = d.as_nanos();
        self.count += 1;
        self.sum_ns += ns as u128;
        self.max_ns = self.max_ns.max(ns);
        if let Some(l) = self.last_ns {
            self.jitter_sum_ns += l.abs_diff(ns) as u128;
        }
        self.last_ns = Some(ns);
        self.hist[bucket(ns)] += 1;
    }

    /// Packets recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Mean delay [s] (NaN if none).
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            return f64::NAN;
        }
        self.sum_ns as f64 / self.count as f64 / 1e9
    }

    /// Largest delay [s] (NaN if none).
    pub fn max(&self) -> f64 {
        if self.count == 0 {
            return f64::NAN;
        }
        self.max_ns as f64 / 1e9
    }

    /// Mean |D(i) − D(i−1)| over consecutive packets [s] (NaN with fewer than two).
    pub fn jitter(&self) -> f64 {
        if self.count < 2 {
            return f64::NAN;
        }
        self.jitter_sum_ns as f64 / (self.count - 1) as f64 / 1e9
    }

    /// The non-empty histogram buckets as (bucket index, upper edge [s], packets), in
    /// increasing order: what `quantile` reads, for merging flows (a group's percentiles
    /// are those of its flows' summed buckets).
    pub fn buckets(&self) -> impl Iterator<Item = (usize, f64, u64)> + '_ {
        self.hist
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(k, &n)| (k, 1.01f64.powi(k as i32 + 1) / 1e9, n))
    }

    /// The `q`-quantile (0 < q ≤ 1) [s], within 1 % above the exact value (NaN if none).
    pub fn quantile(&self, q: f64) -> f64 {
        if self.count == 0 {
            return f64::NAN;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (k, &n) in self.hist.iter().enumerate() {
            seen += n;
            if seen >= rank {
                let upper = 1.01f64.powi(k as i32 + 1);
                return upper.min(self.max_ns as f64) / 1e9;
            }
        }
        self.max()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_within_one_percent_and_jitter_by_hand() {
        let mut s = DelayStats::default();
        // Delays 1 ms, 2 ms, …, 100 ms in a shuffled order.
        let order: Vec<u64> = (0..100).map(|i| (i * 37) % 100 + 1).collect();
        for &ms in &order {
            s.add(Dur::from_millis(ms));
        }
        assert_eq!(s.count(), 100);
        assert!((s.mean() - 0.0505).abs() < 1e-12);
        assert_eq!(s.max(), 0.1);
        for (q, exact) in [(0.5, 0.050), (0.95, 0.095), (0.99, 0.099), (1.0, 0.1)] {
            let got = s.quantile(q);
            assert!(got >= exact - 1e-12 && got <= exact * 1.01, "q{q}: {got}");
        }
        let jit: u64 = order.windows(2).map(|w| w[0].abs_diff(w[1])).sum();
        assert!((s.jitter() - jit as f64 / 99.0 / 1e3).abs() < 1e-12);
        let empty = DelayStats::default();
        assert!(empty.mean().is_nan() && empty.quantile(0.5).is_nan() && empty.jitter().is_nan());
        assert_eq!(empty.buckets().count(), 0);
    }

    #[test]
    fn buckets_sum_to_the_count_and_give_the_same_quantiles() {
        let mut s = DelayStats::default();
        // 30 packets at 2 ms and 10 at 7 ms: two buckets, the median in the first.
        for i in 0..40 {
            s.add(Dur::from_millis(if i % 4 == 3 { 7 } else { 2 }));
        }
        let b: Vec<_> = s.buckets().collect();
        assert_eq!(b.len(), 2);
        assert_eq!(b.iter().map(|x| x.2).collect::<Vec<_>>(), vec![30, 10]);
        assert!(b[0].0 < b[1].0);
        // The quantile rule on the buckets: the first bucket whose running sum reaches
        // ceil(q·n), its upper edge capped at the maximum.
        for q in [0.5, 0.75, 0.76, 0.99] {
            let rank = (q * 40.0_f64).ceil() as u64;
            let mut seen = 0;
            let up = b
                .iter()
                .find(|x| {
                    seen += x.2;
                    seen >= rank
                })
                .unwrap()
                .1;
            assert_eq!(up.min(s.max()), s.quantile(q), "q{q}");
        }
        assert!(b[0].1 >= 0.002 && b[0].1 <= 0.002 * 1.0101);
    }
}

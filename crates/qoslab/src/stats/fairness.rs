//! Fairness indices (Jain's index, as P0 uses it: docs/papers/p0.md).

/// Jain's fairness index (Σx)²/(n·Σx²); 1 when all equal, 1/n when one takes all.
///
/// Returns 1 for an empty slice or all zeros (nothing to be unfair about).
pub fn jain(xs: &[f64]) -> f64 {
    let n = xs.len() as f64;
    let sum: f64 = xs.iter().sum();
    let sq: f64 = xs.iter().map(|x| x * x).sum();
    if xs.is_empty() || sq == 0.0 {
        1.0
    } else {
        sum * sum / (n * sq)
    }
}

/// Max-min fair shares of `capacity` among demands (water filling): a flow limited
/// below the equal share keeps its demand and the rest is shared among the others.
pub fn max_min_shares(capacity: f64, demands: &[f64]) -> Vec<f64> {
    let mut share = vec![0.0; demands.len()];
    let mut order: Vec<usize> = (0..demands.len()).collect();
    order.sort_by(|&a, &b| demands[a].total_cmp(&demands[b]));
    let mut left = capacity;
    let mut n_left = demands.len();
    for &i in &order {
        let fair = left / n_left as f64;
        share[i] = demands[i].min(fair);
        left -= share[i];
        n_left -= 1;
    }
    share
}

/// Jain's index over x_i / s_i, where s_i is flow i's max-min fair share (P0 §5): a
/// flow limited elsewhere counts against its own share, not the equal split.
pub fn jain_max_min(throughputs: &[f64], fair_shares: &[f64]) -> f64 {
    let norm: Vec<f64> = throughputs
        .iter()
        .zip(fair_shares)
        .map(|(x, s)| if *s > 0.0 { x / s } else { 0.0 })
        .collect();
    jain(&norm)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_extremes() {
        assert!((jain(&[1.0, 1.0, 1.0, 1.0]) - 1.0).abs() < 1e-12);
        assert!((jain(&[4.0, 0.0, 0.0, 0.0]) - 0.25).abs() < 1e-12);
        // (1+2+3)^2 / (3·14) = 36/42
        assert!((jain(&[1.0, 2.0, 3.0]) - 36.0 / 42.0).abs() < 1e-12);
    }

    #[test]
    fn max_min_water_filling() {
        // Capacity 10 among demands 1, 4, 100: 1, 4, 5.
        assert_eq!(
            max_min_shares(10.0, &[100.0, 1.0, 4.0]),
            vec![5.0, 1.0, 4.0]
        );
        // A flow limited at its own bottleneck to its max-min share is perfectly fair.
        let shares = max_min_shares(10.0, &[100.0, 1.0, 4.0]);
        assert!((jain_max_min(&[5.0, 1.0, 4.0], &shares) - 1.0).abs() < 1e-12);
        assert!(jain_max_min(&[9.0, 0.5, 0.5], &shares) < 0.8);
    }
}

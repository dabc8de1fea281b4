//! The tests `compare` uses, exact and free of assumptions about the shape of the
//! wall-time distribution:
//! - rows paired by round (both sides ran interleaved, round r with round r): the
//!   two-sided sign test on the pairs, p = 2 x P(X <= min(k, n - k)), X ~ Bin(n, 1/2);
//!   its smallest p with n pairs is 2^(1-n);
//! - otherwise the two-sided exact Mann-Whitney U test on the two sets of repetitions;
//!   its smallest p (every repetition of one side beat every one of the other) is
//!   2 / C(n_a + n_b, n_a): 0.1 at 3 vs 3.
//!
//! A pair of results compares several worker counts at once, so the p-values are
//! corrected for their number with Holm's step-down method (family-wise error
//! [`ALPHA`]). Where even the smallest p the repetitions allow cannot pass the
//! corrected threshold, no difference can be shown, and the number of repetitions that
//! could is said.

use serde::Serialize;

/// The family-wise error rate of `compare`'s calls.
pub const ALPHA: f64 = 0.05;

/// Which test a matched configuration got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Test {
    /// Sign test on rows paired by round.
    PairedByRound,
    /// Mann-Whitney U on the repetitions of each side.
    Unpaired,
}

impl Test {
    /// The smallest two-sided p the test can give with `a` and `b` samples (pairs: `a`).
    pub fn min_p(self, a: usize, b: usize) -> f64 {
        match self {
            Test::PairedByRound => (2.0 * 0.5f64.powi(a as i32)).min(1.0),
            Test::Unpaired => (2.0 / binomial(a + b, a)).min(1.0),
        }
    }

    /// The fewest repetitions per side (pairs) at which the smallest p, times `m`
    /// comparisons, reaches [`ALPHA`].
    pub fn repetitions_needed(self, m: usize) -> usize {
        (1..=64)
            .find(|&n| self.min_p(n, n) * m.max(1) as f64 <= ALPHA)
            .unwrap_or(64)
    }
}

/// C(n, k) as a float.
fn binomial(n: usize, k: usize) -> f64 {
    (0..k).fold(1.0, |c, i| c * (n - i) as f64 / (i + 1) as f64)
}

/// Two-sided sign test: `below` of `n` pairs went one way.
pub fn sign_test_p(below: usize, n: usize) -> f64 {
    if n == 0 {
        return 1.0;
    }
    let k = below.min(n - below);
    let tail: f64 = (0..=k).map(|i| binomial(n, i)).sum::<f64>() * 0.5f64.powi(n as i32);
    (2.0 * tail).min(1.0)
}

/// Two-sided exact Mann-Whitney U test of `a` against `b` (ties count one half).
pub fn mann_whitney_p(a: &[f64], b: &[f64]) -> f64 {
    let (m, n) = (a.len(), b.len());
    if m == 0 || n == 0 {
        return 1.0;
    }
    let u: f64 = a
        .iter()
        .map(|x| b.iter().map(|y| if x < y { 1.0 } else if x == y { 0.5 } else { 0.0 }).sum::<f64>())
        .sum();
    // counts[u] = arrangements of m and n values with U = u (no ties).
    let max_u = m * n;
    let mut table = vec![vec![vec![0.0f64; max_u + 1]; n + 1]; m + 1];
    for (i, row) in table.iter_mut().enumerate() {
        for (j, cell) in row.iter_mut().enumerate() {
            if i == 0 || j == 0 {
                cell[0] = 1.0;
            }
        }
    }
    for i in 1..=m {
        for j in 1..=n {
            for k in 0..=i * j {
                let take_a = if k >= j { table[i - 1][j][k - j] } else { 0.0 };
                table[i][j][k] = take_a + table[i][j - 1][k];
            }
        }
    }
    let counts = &table[m][n];
    let total: f64 = counts.iter().sum();
    let low = u.min(max_u as f64 - u);
    let tail: f64 = counts.iter().enumerate().filter(|(k, _)| *k as f64 <= low + 1e-9).map(|(_, c)| c).sum();
    (2.0 * tail / total).min(1.0)
}

/// Holm's step-down adjusted p-values, in the input order.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&i, &j| p[i].total_cmp(&p[j]));
    let mut adjusted = vec![1.0; m];
    let mut running = 0.0f64;
    for (rank, &i) in order.iter().enumerate() {
        running = running.max(((m - rank) as f64 * p[i]).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smallest_p_values() {
        assert!((Test::Unpaired.min_p(3, 3) - 0.1).abs() < 1e-12);
        assert!((Test::PairedByRound.min_p(5, 5) - 0.0625).abs() < 1e-12);
        assert!((mann_whitney_p(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]) - 0.1).abs() < 1e-12);
        assert!((sign_test_p(0, 5) - 0.0625).abs() < 1e-12);
        assert_eq!(sign_test_p(2, 4), 1.0);
    }

    #[test]
    fn mann_whitney_matches_tables() {
        // 4 vs 4 with U = 1: P(U <= 1) = 2/70, two-sided 4/70.
        let p = mann_whitney_p(&[1.0, 2.0, 3.0, 5.0], &[4.0, 6.0, 7.0, 8.0]);
        assert!((p - 4.0 / 70.0).abs() < 1e-12, "{p}");
        let p = mann_whitney_p(&[1.0, 3.0, 5.0], &[2.0, 4.0, 6.0]);
        assert!(p > 0.5, "{p}");
    }

    #[test]
    fn holm_steps_down() {
        let adj = holm(&[0.01, 0.04, 0.03]);
        for (got, want) in adj.iter().zip([0.03, 0.06, 0.06]) {
            assert!((got - want).abs() < 1e-12, "{adj:?}");
        }
    }

    #[test]
    fn repetitions_needed_grow_with_the_comparisons() {
        assert_eq!(Test::Unpaired.repetitions_needed(1), 4); // 2/70 = 0.029
        assert_eq!(Test::Unpaired.repetitions_needed(6), 5); // 2/252 x 6 = 0.048
        assert_eq!(Test::PairedByRound.repetitions_needed(1), 6); // 2/64 = 0.031
        assert_eq!(Test::PairedByRound.repetitions_needed(6), 8); // 2/256 x 6 = 0.047
    }
}

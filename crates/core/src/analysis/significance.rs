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
pub(crate) const ALPHA: f64 = 0.05;

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
pub(crate) fn sign_test_p(below: usize, n: usize) -> f64 {
    if n == 0 {
        return 1.0;
    }
    let k = below.min(n - below);
    let tail: f64 = (0..=k).map(|i| binomial(n, i)).sum::<f64>() * 0.5f64.powi(n as i32);
    (2.0 * tail).min(1.0)
}

/// Largest `n_a x n_b` tested exactly; beyond, the normal approximation.
const EXACT_U_CELLS: usize = 400;

/// Two-sided Mann-Whitney U test of `a` against `b` (ties count one half): exact up to
/// [`EXACT_U_CELLS`], the normal approximation with continuity correction beyond.
pub(crate) fn mann_whitney_p(a: &[f64], b: &[f64]) -> f64 {
    let (m, n) = (a.len(), b.len());
    if m == 0 || n == 0 {
        return 1.0;
    }
    let u: f64 = a
        .iter()
        .map(|x| {
            b.iter()
                .map(|y| {
                    if x < y {
                        1.0
                    } else if x == y {
                        0.5
                    } else {
                        0.0
                    }
                })
                .sum::<f64>()
        })
        .sum();
    mann_whitney_p_of_u(u, m, n)
}

/// The two-sided p of a Mann-Whitney U statistic `u` (the pairs in which `b`'s value
/// is the larger, ties one half) of samples of `m` and `n` values, as
/// [`mann_whitney_p`] computes it.
pub(crate) fn mann_whitney_p_of_u(u: f64, m: usize, n: usize) -> f64 {
    if m == 0 || n == 0 {
        return 1.0;
    }
    let low = u.min((m * n) as f64 - u);
    if m * n > EXACT_U_CELLS {
        let mean = (m * n) as f64 / 2.0;
        let sd = ((m * n * (m + n + 1)) as f64 / 12.0).sqrt();
        let z = (mean - low - 0.5).max(0.0) / sd;
        return (2.0 * normal_upper_tail(z)).min(1.0);
    }
    let counts = u_counts(m, n);
    let total: f64 = counts.iter().sum();
    let tail: f64 = counts
        .iter()
        .enumerate()
        .filter(|(k, _)| *k as f64 <= low + 1e-9)
        .map(|(_, c)| c)
        .sum();
    (2.0 * tail / total).min(1.0)
}

/// How many arrangements of `m` and `n` distinct values give each U, 0..=m x n:
/// N(u; i, j) = N(u - j; i - 1, j) + N(u; i, j - 1).
fn u_counts(m: usize, n: usize) -> Vec<f64> {
    let cells = m * n + 1;
    // prev[j] holds N(.; i - 1, j), row by row over i.
    let mut prev: Vec<Vec<f64>> = (0..=n).map(|_| one_at_zero(cells)).collect();
    for _ in 1..=m {
        let mut cur: Vec<Vec<f64>> = vec![one_at_zero(cells)];
        for j in 1..=n {
            let next: Vec<f64> = (0..cells)
                .map(|k| if k >= j { prev[j][k - j] } else { 0.0 } + cur[j - 1][k])
                .collect();
            cur.push(next);
        }
        prev = cur;
    }
    prev.swap_remove(n)
}

fn one_at_zero(cells: usize) -> Vec<f64> {
    let mut v = vec![0.0; cells];
    v[0] = 1.0;
    v
}

/// P(Z > z) for a standard normal (Abramowitz and Stegun 7.1.26, error below 1.5e-7).
fn normal_upper_tail(z: f64) -> f64 {
    let x = z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly =
        t * (0.254_829_592 + t * (-0.284_496_736 + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    0.5 * poly * (-x * x).exp()
}

/// Holm's step-down adjusted p-values, in the input order.
pub(crate) fn holm(p: &[f64]) -> Vec<f64> {
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
        // Beyond the exact table: 30 vs 30 fully apart is far below 0.001, interleaved is not.
        let a: Vec<f64> = (0..30).map(f64::from).collect();
        let b: Vec<f64> = (30..60).map(f64::from).collect();
        assert!(mann_whitney_p(&a, &b) < 1e-6);
        let odd: Vec<f64> = (0..30).map(|i| f64::from(2 * i + 1)).collect();
        let even: Vec<f64> = (0..30).map(|i| f64::from(2 * i)).collect();
        assert!(mann_whitney_p(&odd, &even) > 0.5);
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

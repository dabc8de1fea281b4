//! Per-bucket summaries: the best configuration by median wall time over repetitions
//! (configurations without errors first), the one-worker speed-up, and the knee of the
//! throughput curve.

use crate::model::result::worker_counts;
use crate::model::stats::{first_seen, median, round3};
use crate::model::{BucketSummary, ConfigResult};

/// Median of wall times per worker count for one bucket, in the order first run.
fn median_walls(results: &[ConfigResult], bucket: &str) -> Vec<(u32, f64, f64, u64)> {
    worker_counts(results.iter().filter(|r| r.bucket == bucket))
        .into_iter()
        .map(|w| {
            let rows: Vec<&ConfigResult> = results
                .iter()
                .filter(|r| r.bucket == bucket && r.workers == w)
                .collect();
            // A worker count listed for the bucket has at least one row.
            let wall = median(rows.iter().map(|r| r.wall_ms).collect()).unwrap_or(0.0);
            let rate = median(rows.iter().map(|r| r.objects_per_s).collect()).unwrap_or(0.0);
            let errors = rows.iter().map(|r| r.errors.total).sum();
            (w, wall, rate, errors)
        })
        .collect()
}

/// The knee of a throughput curve: the smallest worker count whose throughput is at
/// least 90% of the best, where the curve flattened: `None` when that count is the
/// largest tried (the curve was still rising there). `points` are (workers, objects
/// per second) in any order.
pub(crate) fn knee(points: &[(u32, f64)]) -> Option<u32> {
    let last = points.iter().filter(|p| p.1.is_finite()).map(|p| p.0).max()?;
    within_a_tenth_of_the_best(points).filter(|k| *k < last)
}

/// The smallest worker count whose throughput is at least 90% of the best.
fn within_a_tenth_of_the_best(points: &[(u32, f64)]) -> Option<u32> {
    let best = points
        .iter()
        .map(|p| p.1)
        .filter(|t| t.is_finite())
        .max_by(f64::total_cmp)?;
    points
        .iter()
        .filter(|p| p.1.is_finite() && p.1 >= 0.9 * best)
        .map(|p| p.0)
        .min()
}

/// Summaries per bucket, in the order buckets appear. Configurations with errors still
/// count: a fast run that failed half its requests is not the best, so the best is the
/// fastest among worker counts without errors when there is one.
pub(crate) fn summarize(results: &[ConfigResult]) -> Vec<BucketSummary> {
    first_seen(results.iter().map(|r| r.bucket.as_str()))
        .into_iter()
        .map(|bucket| {
            let walls = median_walls(results, bucket);
            let clean: Vec<_> = walls.iter().filter(|w| w.3 == 0).collect();
            let pool = if clean.is_empty() {
                walls.iter().collect()
            } else {
                clean
            };
            let best = pool
                .into_iter()
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .copied()
                .expect("a bucket in results has at least one row");
            let one = walls.iter().find(|w| w.0 == 1).map(|w| w.1);
            let knee_workers = knee(
                &walls
                    .iter()
                    .filter(|w| w.3 == 0)
                    .map(|w| (w.0, w.2))
                    .collect::<Vec<_>>(),
            );
            BucketSummary {
                bucket: bucket.to_string(),
                best_workers: best.0,
                best_wall_ms: best.1,
                best_objects_per_s: best.2,
                one_worker_wall_ms: one,
                speedup_over_one_worker: one.map(|o| round3(o / best.1.max(0.001))),
                errors_total: results
                    .iter()
                    .filter(|r| r.bucket == bucket)
                    .map(|r| r.errors.total)
                    .sum(),
                knee_workers,
                axes: Default::default(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::test_rows::{row, SEED_EXPRESS_MS, SEED_STANDARD_MS};

    #[test]
    fn summary_picks_the_fastest_median_without_errors() {
        let results = vec![
            row("a", 1, 1, 1000.0, 0),
            row("a", 4, 1, 300.0, 0),
            row("a", 4, 2, 260.0, 0),
            row("a", 4, 3, 5000.0, 0),
            row("a", 8, 1, 100.0, 3),
            row("b", 2, 1, 50.0, 0),
        ];
        let s = summarize(&results);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].bucket, "a");
        assert_eq!(s[0].best_workers, 4);
        assert_eq!(s[0].best_wall_ms, 300.0);
        assert_eq!(s[0].one_worker_wall_ms, Some(1000.0));
        assert_eq!(s[0].speedup_over_one_worker, Some(3.333));
        assert_eq!(s[0].errors_total, 3);
        assert_eq!(s[1].best_workers, 2);
        assert_eq!(s[1].one_worker_wall_ms, None);
    }

    #[test]
    fn knee_of_the_seed_curves() {
        // The original measurement's curves (docs/background.md) as objects/s (1000 objects / wall seconds).
        let rate = |ms: f64| 1000.0 / (ms / 1000.0);
        let express: Vec<(u32, f64)> = SEED_EXPRESS_MS.iter().map(|&(w, ms)| (w, rate(ms))).collect();
        let standard: Vec<(u32, f64)> = SEED_STANDARD_MS.iter().map(|&(w, ms)| (w, rate(ms))).collect();
        assert_eq!(knee(&express), Some(4));
        assert_eq!(knee(&standard), Some(16));
        assert_eq!(knee(&[]), None);
        // Still rising at its largest count: no knee.
        assert_eq!(knee(&[(1, 100.0), (8, 700.0), (64, 850.0)]), None);
        assert_eq!(knee(&[(1, 100.0), (8, 800.0), (64, 850.0)]), Some(8));
    }
}

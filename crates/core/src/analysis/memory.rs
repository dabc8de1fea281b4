//! The memory sweep's answer per bucket: the fastest (memory, workers) and the cheapest
//! one meeting `target_wall_ms`, from the rows' own memory sizes and the cost of each
//! configuration at its size ([`super::cost`]). Model in, model out.

use crate::model::stats::{first_seen, median};
use crate::model::{MemoryChoice, MemoryConfig, MemoryCost, RunKind, SweepResult};

use super::cost::{clean_configurations, cost_report, CostOverrides};

/// Per bucket (in the order run) of a result whose rows carry `memory_mb`: the
/// fastest configuration (lowest median wall time, ties: the cheaper) and the cheapest
/// meeting `target` (ties: the faster), among configurations without failed requests.
/// Empty when no row has a memory size.
pub(crate) fn choices(result: &SweepResult, target_wall_ms: Option<u64>) -> Vec<MemoryChoice> {
    if result.run_kind() != RunKind::MemorySweep {
        return Vec::new();
    }
    let report = first_clients(cost_report(
        result,
        CostOverrides {
            lambda_memory_mb: None,
            target_wall_ms,
        },
    ));
    let configs = clean_configurations(result, &report.rows);
    first_seen(result.results.iter().map(|r| r.bucket.as_str()))
        .into_iter()
        .map(|bucket| {
            let mine: Vec<MemoryConfig> = configs
                .iter()
                .filter(|c| c.bucket == bucket)
                .filter_map(|c| {
                    let memory_mb = c.axes.memory_mb?;
                    let rates = result
                        .rows_at(bucket, Some(memory_mb))
                        .filter(|r| r.workers == c.workers)
                        .map(|r| r.objects_per_s)
                        .collect();
                    Some(MemoryConfig {
                        memory_mb,
                        workers: c.workers,
                        wall_ms: c.wall_ms,
                        objects_per_s: median(rates).unwrap_or(0.0),
                        per_1000_gets_usd: c.per_1000_gets_usd,
                        per_1000_objects_usd: c.per_1000_objects_usd,
                    })
                })
                .collect();
            let fastest = mine
                .iter()
                .min_by(|a, b| {
                    a.wall_ms
                        .total_cmp(&b.wall_ms)
                        .then(a.ranking_usd().total_cmp(&b.ranking_usd()))
                })
                .cloned();
            let cheapest = mine
                .iter()
                .filter(|c| target_wall_ms.is_none_or(|t| c.wall_ms <= t as f64))
                .min_by(|a, b| {
                    a.ranking_usd()
                        .total_cmp(&b.ranking_usd())
                        .then(a.wall_ms.total_cmp(&b.wall_ms))
                })
                .cloned();
            MemoryChoice {
                bucket: bucket.to_string(),
                fastest,
                target_wall_ms,
                cheapest,
                axes: Default::default(),
            }
        })
        .collect()
}

/// The cost report's rows of the first client only (the cost table prices every
/// client's; the memory answers are given per client by the caller, and a
/// configuration's medians are never taken across clients).
fn first_clients(mut report: super::cost::CostReport) -> super::cost::CostReport {
    let first = report.rows.first().map(|r| r.axes.s3_client);
    report.rows.retain(|r| Some(r.axes.s3_client) == first);
    report
}

/// What every (bucket, memory, workers) of a memory sweep cost at its own size:
/// medians over repetitions of the Lambda GB-seconds and the cost per 1,000 GETs.
pub(crate) fn costs(result: &SweepResult) -> Vec<MemoryCost> {
    let report = first_clients(cost_report(result, CostOverrides::default()));
    first_seen(
        report
            .rows
            .iter()
            .filter_map(|r| r.axes.memory_mb.map(|m| (r.bucket.as_str(), m, r.workers))),
    )
    .into_iter()
    .map(|(bucket, memory_mb, workers)| {
        let mine: Vec<_> = report
            .rows
            .iter()
            .filter(|r| r.bucket == bucket && r.axes.memory_mb == Some(memory_mb) && r.workers == workers)
            .collect();
        MemoryCost {
            bucket: bucket.to_string(),
            memory_mb,
            workers,
            lambda_gb_s: median(mine.iter().map(|r| r.lambda_gb_s).collect()).unwrap_or(0.0),
            per_1000_gets_usd: median(mine.iter().map(|r| r.per_1000_gets_usd).collect()).unwrap_or(0.0),
            clean: result
                .rows_at(bucket, Some(memory_mb))
                .filter(|r| r.workers == workers)
                .all(|r| r.errors.total == 0),
        }
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::test_rows::{result, row};

    fn at(memory_mb: u32, workers: u32, wall_ms: f64, errors: u64) -> crate::model::ConfigResult {
        let mut r = row("b-1", workers, 1, wall_ms, errors);
        r.axes.memory_mb = Some(memory_mb);
        r
    }

    #[test]
    fn fastest_and_cheapest_within_the_target_per_bucket() {
        // 512 MB x 16 workers: 1,000 ms; 1,024 MB x 16: 400 ms; 2,048 MB x 16: 300 ms;
        // 2,048 MB x 32 failed requests (never chosen, though the fastest).
        let r = result(vec![
            at(512, 16, 1000.0, 0),
            at(1024, 16, 400.0, 0),
            at(2048, 16, 300.0, 0),
            at(2048, 32, 100.0, 3),
        ]);
        let c = &choices(&r, Some(450))[0];
        let fastest = c.fastest.as_ref().unwrap();
        assert_eq!((fastest.memory_mb, fastest.workers), (2048, 16));
        // GB-s: 0.5 x 1.0 = 0.5; 1 x 0.4 = 0.4; 2 x 0.3 = 0.6: 1,024 MB is cheapest and
        // meets 450 ms.
        let cheapest = c.cheapest.as_ref().unwrap();
        assert_eq!((cheapest.memory_mb, cheapest.workers), (1024, 16));
        let c = &choices(&r, Some(350))[0];
        assert_eq!(c.cheapest.as_ref().map(|c| c.memory_mb), Some(2048));
        assert_eq!(choices(&r, Some(50))[0].cheapest, None);
        // The Lambda share is priced at each row's own memory: 512 MB for 1 s costs
        // more than 1,024 MB for 0.4 s.
        let a = cost_report(&r, CostOverrides::default());
        assert!(a.rows[0].lambda_gb_s > a.rows[1].lambda_gb_s, "{:?}", a.rows);
        assert!((a.rows[0].lambda_gb_s - 0.5).abs() < 1e-12);
        assert!(choices(&result(vec![row("b-1", 1, 1, 10.0, 0)]), None).is_empty());
        // Every configuration's cost is in the document, at its own size.
        let c = costs(&r);
        assert_eq!(c.len(), 4);
        assert_eq!((c[0].memory_mb, c[0].workers, c[0].clean), (512, 16, true));
        assert!(
            (c[0].lambda_gb_s - 0.5).abs() < 1e-9 && (c[2].lambda_gb_s - 0.6).abs() < 1e-9,
            "{c:?}"
        );
        assert!(!c[3].clean);
    }

    #[test]
    fn the_cheapest_memory_is_ranked_per_object_read_not_per_get_sent() {
        // 1,024 MB x 16 with 100 retries: 200 GETs for 100 objects. Per GET it looks
        // cheaper than 1,024 MB x 8 (its Lambda time spread over twice the GETs); per
        // object read, and in all, it costs more.
        let mut retried = at(1024, 16, 400.0, 0);
        retried.retries = 100;
        let r = result(vec![retried, at(1024, 8, 500.0, 0)]);
        let report = cost_report(&r, CostOverrides::default());
        let (a, b) = (&report.rows[0], &report.rows[1]);
        assert!(a.per_1000_gets_usd < b.per_1000_gets_usd, "{a:?} {b:?}");
        assert!(a.total_usd > b.total_usd, "{a:?} {b:?}");
        let cheapest = choices(&r, None)[0].cheapest.clone().unwrap();
        assert_eq!(cheapest.workers, 8, "{cheapest:?}");
    }
}

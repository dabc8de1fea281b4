//! Cost: what the GETs and the Lambda time of each configuration cost, from the price
//! table of the request (`prices`, see [`crate::model::Prices`]), and the cheapest
//! configuration that meets a target wall time (`target_wall_ms`).
//!
//! Everything here is derived from a result document, so `s3sweep report` prices runs
//! from `local`, `run` and the Lambda alike. The defaults are AWS's published us-east-1
//! list prices as of 2025 (S3 Express One Zone after its April 2025 reduction); they are
//! defaults to override, not measurements:
//!
//! | field | default | meaning |
//! |---|---|---|
//! | `s3_standard_get_per_1000_usd` | 0.0004 | S3 Standard GET, per 1,000 requests |
//! | `s3_express_get_per_1000_usd` | 0.00003 | S3 Express One Zone GET, per 1,000 requests |
//! | `s3_express_retrieval_per_gb_usd` | 0.0006 | S3 Express One Zone data retrieval, per GB read |
//! | `lambda_x86_64_gb_s_usd` | 0.0000166667 | Lambda duration, x86_64, per GB-second (first tier) |
//! | `lambda_arm64_gb_s_usd` | 0.0000133334 | Lambda duration, arm64, per GB-second (first tier) |
//! | `lambda_memory_mb` | 10240 | memory assumed when the run was not in Lambda (in Lambda: the function's own) |
//! | `lambda_architecture` | the machine's | `x86_64` or `arm64`, assumed when the run was not in Lambda |
//! | `express_buckets` | `[]` | buckets priced as Express besides directory buckets (`*--x-s3`) |
//!
//! Billed GETs are the timed requests plus their retries (warm-up GETs and Express
//! `CreateSession` calls are not counted). Lambda GB-seconds are the configuration's
//! wall time times the memory: the share of the invocation that configuration used. A
//! memory sweep's rows carry their own `memory_mb`, which prices them (an override of
//! the memory applies only to rows without one).
//! Lambda's per-invocation charge ($0.20 per million) is left out: one invocation runs
//! a whole sweep.
//!
//! # Lambda Managed Instances
//! A result whose `environment.lambda.substrate.kind` is `managed_instances` ran on an
//! EC2 instance of a capacity provider, and is not billed by the GB-second. AWS's
//! Lambda pricing page (<https://aws.amazon.com/lambda/pricing/>, section "Lambda
//! Managed Instances") bills three terms, priced here by:
//!
//! | field | default | meaning |
//! |---|---|---|
//! | `lmi_instance_hour_usd` | 0.1248 | the instance's EC2 On-Demand price per hour (c7gn.large, us-east-1 Linux) |
//! | `lmi_management_fee_share` | 0.15 | the compute management fee: a 15% premium on the instance's On-Demand price |
//! | `lmi_request_per_million_usd` | 0.20 | requests: $0.20 per million invocations |
//!
//! A row is charged the instance for its wall time, plus the fee on that, plus its share
//! of the invocation's one request (spread evenly over the invocation's rows). While
//! other invocations ran beside it (`overlap`), the instance was theirs too: the
//! overlapped part of the wall time is split evenly among the `1 + other_invocations`
//! invocations (as if all of them ran through it). The whole instance is charged, not
//! the execution environment's vCPUs: LMI bills instances, whatever runs on them; when
//! several environments share an instance this overstates a row's share. Idle
//! instances (3 by default) cost the same whether or not a sweep runs: that is
//! docs/deploy.md's cost of leaving it running, not a row's. The instance price is the
//! user's to set for the instance type the result names (`substrate.instance_type`);
//! Savings Plans and Reserved Instances lower it.
//!
//! Configurations are ranked by what the same work costs: dollars per 1,000 objects
//! read (the timed requests), never per GET sent. A hedge's copies and a retry are
//! GETs that read no new object: dividing by them would make the configuration that
//! sends more look cheaper per request while it costs more in all. Every
//! configuration of a sweep reads the same objects, so the cheapest per object read
//! is the cheapest in total.

use serde::Serialize;

use crate::model::closed_set::closed_set;
use crate::model::stats::{first_seen, median};
use crate::model::{Architecture, Axes, ConfigResult, Prices, Substrate, SweepResult};
use crate::plan::is_directory_bucket;

closed_set! {
    /// How a bucket's GETs are priced.
    pub enum StorageClass {
        Standard = "standard",
        Express = "express",
    }
}

impl Prices {
    /// Express for directory buckets and the buckets listed in `express_buckets`.
    pub fn class_of(&self, bucket: &str) -> StorageClass {
        if is_directory_bucket(bucket) || self.express_buckets.iter().any(|b| b == bucket) {
            StorageClass::Express
        } else {
            StorageClass::Standard
        }
    }
}

/// Where the Lambda memory and architecture used for pricing came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct LambdaBasis {
    pub memory_mb: u32,
    pub architecture: Architecture,
    pub gb_s_usd: f64,
    /// True when taken from the Lambda function that ran the sweep; false when assumed.
    pub measured_in_lambda: bool,
    /// Set when the sweep ran on Lambda Managed Instances: its rows are priced by
    /// instance time, not GB-seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub managed_instances: Option<InstanceBasis>,
}

/// The price terms of Lambda Managed Instances (module docs), and the instance.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct InstanceBasis {
    /// The instance type the function saw, when it could.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance_type: Option<String>,
    pub instance_hour_usd: f64,
    pub management_fee_share: f64,
    pub request_per_million_usd: f64,
    /// Rows the invocation measured: each carries this share of its one request.
    pub rows_per_invocation: usize,
}

impl InstanceBasis {
    /// Instance seconds charged to a row: its wall time, the overlapped part split
    /// among the invocations that ran at once.
    fn instance_s(r: &ConfigResult) -> f64 {
        let wall_s = r.wall_ms / 1000.0;
        match &r.overlap {
            Some(o) if o.other_invocations > 0 => {
                let f = o.overlapped_fraction.clamp(0.0, 1.0);
                wall_s * (1.0 - f) + wall_s * f / f64::from(1 + o.other_invocations)
            }
            _ => wall_s,
        }
    }

    /// The instance, its fee and the row's share of the request, in dollars.
    fn usd(&self, instance_s: f64) -> f64 {
        let instance = instance_s / 3600.0 * self.instance_hour_usd;
        let request = self.request_per_million_usd / 1e6 / self.rows_per_invocation.max(1) as f64;
        instance * (1.0 + self.management_fee_share) + request
    }
}

/// The cost of one configuration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ConfigCost {
    pub bucket: String,
    /// The row's axes, flattened (a memory sweep's `memory_mb`: its GB-seconds are at
    /// that size).
    #[serde(flatten)]
    pub axes: Axes,
    pub workers: u32,
    pub repetition: u32,
    pub class: StorageClass,
    /// Timed GETs plus retries and hedges.
    pub billed_gets: u64,
    pub s3_usd: f64,
    /// GB-seconds billed (0 on Lambda Managed Instances, which bills instance time).
    pub lambda_gb_s: f64,
    /// Instance seconds charged to the row on Lambda Managed Instances.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance_s: Option<f64>,
    /// The function's compute: Lambda duration, or on Managed Instances the instance,
    /// its management fee and the row's share of the request.
    pub lambda_usd: f64,
    pub total_usd: f64,
    /// `total_usd` per 1,000 billed GETs (copies and retries included).
    pub per_1000_gets_usd: f64,
    /// `total_usd` per 1,000 objects read (the timed requests): what ranks.
    pub per_1000_objects_usd: f64,
    pub wall_ms: f64,
}

/// The cheapest (bucket, workers) by median cost per 1,000 objects read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Cheapest {
    pub bucket: String,
    #[serde(flatten)]
    pub axes: Axes,
    pub workers: u32,
    /// Median over repetitions.
    pub wall_ms: f64,
    /// Median over repetitions.
    pub per_1000_gets_usd: f64,
    /// Median over repetitions: what ranks.
    pub per_1000_objects_usd: f64,
    /// Median over repetitions: the configuration's whole cost.
    pub total_usd: f64,
}

/// Costs of every configuration of a run, and the cheapest choice.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct CostReport {
    pub lambda: LambdaBasis,
    pub rows: Vec<ConfigCost>,
    pub target_wall_ms: Option<u64>,
    /// Cheapest configuration whose median wall time is within the target; without a
    /// target, the cheapest of all.
    pub cheapest: Option<Cheapest>,
    /// Total over every configuration.
    pub total_usd: f64,
}

/// Prices one configuration.
pub(crate) fn config_cost(prices: &Prices, lambda: &LambdaBasis, r: &ConfigResult) -> ConfigCost {
    let class = prices.class_of(&r.bucket);
    // Saturating: a result file's counts are anyone's numbers. Hedges are GETs too,
    // and the bytes their losers read are transferred.
    let hedges = r.hedging.unwrap_or_default();
    let billed_gets = r.requests.saturating_add(r.retries).saturating_add(hedges.hedges_sent);
    let s3_usd = match class {
        StorageClass::Standard => billed_gets as f64 * prices.s3_standard_get_per_1000_usd / 1000.0,
        StorageClass::Express => {
            billed_gets as f64 * prices.s3_express_get_per_1000_usd / 1000.0
                + r.bytes.saturating_add(hedges.hedge_discarded_bytes) as f64 / (1u64 << 30) as f64
                    * prices.s3_express_retrieval_per_gb_usd
        }
    };
    let (lambda_gb_s, instance_s, lambda_usd) = match &lambda.managed_instances {
        Some(lmi) => {
            let instance_s = InstanceBasis::instance_s(r);
            (0.0, Some(instance_s), lmi.usd(instance_s))
        }
        None => {
            // A memory sweep's row ran at its own size: that size is what it was billed for.
            let memory_mb = r.axes.memory_mb.unwrap_or(lambda.memory_mb);
            let gb_s = f64::from(memory_mb) / 1024.0 * r.wall_ms / 1000.0;
            (gb_s, None, gb_s * lambda.gb_s_usd)
        }
    };
    let total_usd = s3_usd + lambda_usd;
    ConfigCost {
        bucket: r.bucket.clone(),
        axes: r.axes.key(),
        workers: r.workers,
        repetition: r.repetition,
        class,
        billed_gets,
        s3_usd,
        lambda_gb_s,
        instance_s,
        lambda_usd,
        total_usd,
        per_1000_gets_usd: if billed_gets == 0 {
            0.0
        } else {
            total_usd / billed_gets as f64 * 1000.0
        },
        per_1000_objects_usd: if r.requests == 0 {
            0.0
        } else {
            total_usd / r.requests as f64 * 1000.0
        },
        wall_ms: r.wall_ms,
    }
}

/// Overrides applied when reading a result (e.g. `s3sweep report --lambda-memory-mb`).
#[derive(Debug, Clone, Copy, Default)]
pub struct CostOverrides {
    pub lambda_memory_mb: Option<u32>,
    pub target_wall_ms: Option<u64>,
}

/// Prices every configuration of a result.
pub(crate) fn cost_report(result: &SweepResult, overrides: CostOverrides) -> CostReport {
    let prices = &result.request.prices;
    let lambda = lambda_basis(result, overrides);
    // Every configuration, each client's too (request `clients`): each ran, and was
    // billed.
    let rows: Vec<ConfigCost> = result.results.iter().map(|r| config_cost(prices, &lambda, r)).collect();
    let target_wall_ms = overrides.target_wall_ms.or(result.request.target_wall_ms);
    let cheapest = cheapest(result, &rows, target_wall_ms);
    CostReport {
        total_usd: rows.iter().map(|r| r.total_usd).sum(),
        lambda,
        rows,
        target_wall_ms,
        cheapest,
    }
}

/// A row's cost per 1,000 objects read.
pub(crate) type Price<'a> = dyn Fn(&ConfigResult) -> f64 + 'a;

/// A row of `result`'s cost per 1,000 objects read, as its cost report prices it (for
/// `compare`).
pub(crate) fn per_1000_objects(result: &SweepResult) -> impl Fn(&ConfigResult) -> f64 + '_ {
    let lambda = lambda_basis(result, CostOverrides::default());
    move |r| config_cost(&result.request.prices, &lambda, r).per_1000_objects_usd
}

/// The compute's price basis: Lambda's memory, architecture and GB-second price, and
/// the Managed Instances terms when the result ran there.
fn lambda_basis(result: &SweepResult, overrides: CostOverrides) -> LambdaBasis {
    let prices = &result.request.prices;
    let in_lambda = result.environment.lambda.as_ref().and_then(|l| l.memory_size_mb);
    let (memory_mb, measured) = match (overrides.lambda_memory_mb, in_lambda) {
        (Some(m), _) => (m, false),
        (None, Some(m)) => (m, true),
        (None, None) => (prices.lambda_memory_mb, false),
    };
    let architecture = if result.environment.lambda.is_some() {
        Architecture::from_machine(&result.environment.arch)
    } else {
        prices
            .lambda_architecture
            .unwrap_or_else(|| Architecture::from_machine(&result.environment.arch))
    };
    LambdaBasis {
        memory_mb,
        architecture,
        gb_s_usd: match architecture {
            Architecture::X86_64 => prices.lambda_x86_64_gb_s_usd,
            Architecture::Arm64 => prices.lambda_arm64_gb_s_usd,
        },
        measured_in_lambda: measured,
        managed_instances: instance_basis(result),
    }
}

/// The Managed Instances terms when the result ran there (its substrate), else `None`.
fn instance_basis(result: &SweepResult) -> Option<InstanceBasis> {
    let substrate = result.environment.lambda.as_ref()?.substrate.as_ref()?;
    if substrate.kind != Substrate::ManagedInstances {
        return None;
    }
    let prices = &result.request.prices;
    Some(InstanceBasis {
        instance_type: substrate.instance_type.clone(),
        instance_hour_usd: prices.lmi_instance_hour_usd,
        management_fee_share: prices.lmi_management_fee_share,
        request_per_million_usd: prices.lmi_request_per_million_usd,
        rows_per_invocation: result.results.len(),
    })
}

/// Every (bucket, axes, workers) without failed requests, with its median wall time
/// and median costs over repetitions, in the order first run.
pub(crate) fn clean_configurations(result: &SweepResult, rows: &[ConfigCost]) -> Vec<Cheapest> {
    first_seen(rows.iter().map(|r| (r.bucket.as_str(), r.axes, r.workers)))
        .into_iter()
        .filter(|(b, a, w)| {
            result
                .results
                .iter()
                .filter(|r| r.bucket == *b && r.axes.key() == *a && r.workers == *w)
                .all(|r| r.errors.total == 0)
        })
        .map(|(b, a, w)| {
            let mine: Vec<&ConfigCost> = rows
                .iter()
                .filter(|r| r.bucket == b && r.axes == a && r.workers == w)
                .collect();
            Cheapest {
                bucket: b.to_string(),
                axes: a,
                workers: w,
                wall_ms: median(mine.iter().map(|r| r.wall_ms).collect()).unwrap_or(0.0),
                per_1000_gets_usd: median(mine.iter().map(|r| r.per_1000_gets_usd).collect()).unwrap_or(0.0),
                per_1000_objects_usd: median(mine.iter().map(|r| r.per_1000_objects_usd).collect()).unwrap_or(0.0),
                total_usd: median(mine.iter().map(|r| r.total_usd).collect()).unwrap_or(0.0),
            }
        })
        .collect()
}

/// Among (bucket, memory, workers) without failed requests, the lowest median cost
/// per 1,000 objects read whose median wall time meets the target (ties: the faster).
fn cheapest(result: &SweepResult, rows: &[ConfigCost], target: Option<u64>) -> Option<Cheapest> {
    clean_configurations(result, rows)
        .into_iter()
        .filter(|c| target.is_none_or(|t| c.wall_ms <= t as f64))
        .min_by(|a, b| {
            a.per_1000_objects_usd
                .total_cmp(&b.per_1000_objects_usd)
                .then(a.wall_ms.total_cmp(&b.wall_ms))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::test_rows::row;

    fn basis(memory_mb: u32, gb_s_usd: f64) -> LambdaBasis {
        LambdaBasis {
            memory_mb,
            architecture: Architecture::X86_64,
            gb_s_usd,
            measured_in_lambda: false,
            managed_instances: None,
        }
    }

    #[test]
    fn standard_get_and_lambda_arithmetic() {
        // 100 GETs + 2 retries at $0.0004 per 1,000; 1,024 MB for 2 s = 2 GB-s.
        let mut r = row("std-bucket", 4, 1, 2000.0, 0);
        r.retries = 2;
        let c = config_cost(&Prices::default(), &basis(1024, 0.00001), &r);
        assert_eq!(c.class, StorageClass::Standard);
        assert_eq!(c.billed_gets, 102);
        assert!((c.s3_usd - 102.0 * 0.0004 / 1000.0).abs() < 1e-15, "{c:?}");
        assert!((c.lambda_gb_s - 2.0).abs() < 1e-12);
        assert!((c.lambda_usd - 0.00002).abs() < 1e-15);
        assert!((c.per_1000_gets_usd - c.total_usd / 102.0 * 1000.0).abs() < 1e-15);
    }

    #[test]
    fn express_adds_retrieval_per_gb() {
        let mut r = row("fast--use1-az4--x-s3", 8, 1, 500.0, 0);
        r.bytes = 1 << 30;
        let c = config_cost(&Prices::default(), &basis(128, 0.0), &r);
        assert_eq!(c.class, StorageClass::Express);
        let want = 100.0 * 0.00003 / 1000.0 + 0.0006;
        assert!((c.s3_usd - want).abs() < 1e-15, "{} vs {want}", c.s3_usd);
        assert_eq!(c.lambda_usd, 0.0);
        let listed = Prices {
            express_buckets: vec!["express-like".into()],
            ..Prices::default()
        };
        assert_eq!(listed.class_of("express-like"), StorageClass::Express);
        assert_eq!(listed.class_of("standard-like"), StorageClass::Standard);
    }

    fn result(rows: Vec<ConfigResult>, lambda_mb: Option<u32>, arch: &str) -> SweepResult {
        let mut r = crate::model::test_rows::result(rows);
        r.environment.runner = if lambda_mb.is_some() {
            crate::model::Runner::Lambda
        } else {
            crate::model::Runner::Cli
        };
        r.environment.arch = arch.into();
        r.environment.lambda = lambda_mb.map(|m| crate::model::LambdaEnvironment {
            function_name: Some("s3sweep".into()),
            function_version: None,
            memory_size_mb: Some(m),
            cold_start: false,
            architecture: Some(Architecture::from_machine(arch)),
            region: Some("us-east-1".into()),
            request_id: None,
            remaining_ms_at_start: None,
            safety_margin_ms: 0,
            deployment: None,
            substrate: None,
            init_us: None,
        });
        r
    }

    #[test]
    fn lambda_memory_and_architecture_come_from_the_lambda() {
        let r = result(vec![row("std-bucket", 1, 1, 1000.0, 0)], Some(1769), "aarch64");
        let c = cost_report(&r, CostOverrides::default());
        assert!(c.lambda.measured_in_lambda);
        assert_eq!(c.lambda.memory_mb, 1769);
        assert_eq!(c.lambda.architecture, Architecture::Arm64);
        assert_eq!(c.lambda.gb_s_usd, 0.000_013_333_4);
        assert!((c.rows[0].lambda_gb_s - 1769.0 / 1024.0).abs() < 1e-12);
        // Outside Lambda: the assumption, or the override.
        let r = result(vec![row("std-bucket", 1, 1, 1000.0, 0)], None, "x86_64");
        let c = cost_report(&r, CostOverrides::default());
        assert!(!c.lambda.measured_in_lambda);
        assert_eq!(c.lambda.memory_mb, 10_240);
        assert_eq!(c.lambda.architecture, Architecture::X86_64);
        let c = cost_report(
            &r,
            CostOverrides {
                lambda_memory_mb: Some(512),
                target_wall_ms: None,
            },
        );
        assert_eq!(c.lambda.memory_mb, 512);
    }

    /// A result measured on Managed Instances (`instance_type` seen), priced at
    /// $0.36 per instance hour ($0.0001 per second) so the figures are round.
    fn on_lmi(rows: Vec<ConfigResult>) -> SweepResult {
        let mut r = result(rows, Some(2048), "aarch64");
        if let Some(l) = r.environment.lambda.as_mut() {
            l.substrate = Some(crate::model::SubstrateInfo {
                kind: Substrate::ManagedInstances,
                max_concurrency: Some(8),
                instance_type: Some("c7gn.large".into()),
                vcpus: Some(2),
            });
        }
        r.request.prices.lmi_instance_hour_usd = 0.36;
        r
    }

    #[test]
    fn managed_instances_are_priced_by_instance_time_the_fee_and_requests() {
        // Row 1: 2 s alone. Instance 2 s x $0.0001 = $0.0002, fee 15% -> $0.00023, plus
        // half of one request ($0.20 per million / 2 rows = $0.0000001): $0.0002301.
        // S3: 100 GETs x $0.0004 / 1,000 = $0.00004. Total $0.0002701, per 1,000 objects
        // $0.002701.
        // Row 2: 1 s, two other invocations for half of it: 0.5 s + 0.5 s / 3 =
        // 0.666667 s -> $0.0000666667 x 1.15 + $0.0000001 = $7.6766667e-5.
        let mut overlapped = row("std-bucket", 8, 1, 1000.0, 0);
        overlapped.overlap = Some(crate::model::Overlap {
            other_invocations: 2,
            overlapped_fraction: 0.5,
        });
        let r = on_lmi(vec![row("std-bucket", 4, 1, 2000.0, 0), overlapped]);
        let c = cost_report(&r, CostOverrides::default());
        let lmi = c
            .lambda
            .managed_instances
            .as_ref()
            .expect("priced as Managed Instances");
        assert_eq!(lmi.instance_type.as_deref(), Some("c7gn.large"));
        assert_eq!(lmi.management_fee_share, 0.15);
        let (a, b) = (&c.rows[0], &c.rows[1]);
        assert_eq!(a.lambda_gb_s, 0.0, "no GB-seconds on Managed Instances: {a:?}");
        assert_eq!(a.instance_s, Some(2.0));
        assert!((a.lambda_usd - 2.301e-4).abs() < 1e-15, "{a:?}");
        assert!((a.total_usd - 2.701e-4).abs() < 1e-15, "{a:?}");
        assert!((a.per_1000_objects_usd - 2.701e-3).abs() < 1e-12, "{a:?}");
        assert!((b.instance_s.unwrap() - 2.0 / 3.0).abs() < 1e-12, "{b:?}");
        assert!((b.lambda_usd - 7.676_666_666_67e-5).abs() < 1e-15, "{b:?}");
        // The same rows on Lambda: GB-seconds, no instance.
        let mut on_lambda = r.clone();
        if let Some(l) = on_lambda.environment.lambda.as_mut() {
            l.substrate = None;
        }
        let c = cost_report(&on_lambda, CostOverrides::default());
        assert_eq!(c.lambda.managed_instances, None);
        assert_eq!(c.rows[0].instance_s, None);
        assert!((c.rows[0].lambda_gb_s - 4.0).abs() < 1e-12);
    }

    #[test]
    fn managed_instances_prices_are_checked_by_name() {
        let err = crate::plan::Plan::from_value(serde_json::json!({
            "buckets": ["ok-bucket"],
            "prices": {"lmi_instance_hour_usd": -1, "lmi_management_fee_share": 15,
                       "lmi_request_per_million_usd": "x"}
        }))
        .unwrap_err();
        for f in [
            "prices.lmi_instance_hour_usd",
            "prices.lmi_management_fee_share",
            "prices.lmi_request_per_million_usd",
        ] {
            assert!(err.fields().contains(&f), "{f} missing from {err}");
        }
        let plan = crate::plan::Plan::from_value(serde_json::json!({
            "buckets": ["ok-bucket"], "prices": {"lmi_instance_hour_usd": 0.2496}
        }))
        .unwrap();
        assert_eq!(plan.request().prices.lmi_instance_hour_usd, 0.2496);
        assert_eq!(plan.request().prices.lmi_management_fee_share, 0.15);
    }

    #[test]
    fn cheapest_within_the_target() {
        // More workers: shorter wall, less Lambda time, same GETs, so cheaper; but the
        // 16-worker configuration failed requests and is never named.
        let rows = vec![
            row("std-bucket", 1, 1, 4000.0, 0),
            row("std-bucket", 4, 1, 1000.0, 0),
            row("std-bucket", 8, 1, 600.0, 0),
            row("std-bucket", 16, 1, 100.0, 5),
        ];
        let r = result(rows, None, "x86_64");
        let none = cost_report(&r, CostOverrides::default());
        assert_eq!(none.cheapest.as_ref().map(|c| c.workers), Some(8));
        let c = cost_report(
            &r,
            CostOverrides {
                lambda_memory_mb: None,
                target_wall_ms: Some(500),
            },
        );
        assert_eq!(c.cheapest, None);
        let mut r2 = r.clone();
        r2.request.target_wall_ms = Some(5000);
        // The request's own target, when no override is given.
        let c = cost_report(&r2, CostOverrides::default());
        assert_eq!(c.cheapest.as_ref().map(|c| c.workers), Some(8));
        assert!((c.total_usd - c.rows.iter().map(|r| r.total_usd).sum::<f64>()).abs() < 1e-15);
    }
}

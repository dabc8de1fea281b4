//! Two results side by side (`s3sweep compare A.json B.json`): matching configurations,
//! ratios B/A, and a flag where the difference is beyond the runs' own spread.
//!
//! # Matching
//! Buckets are paired first, then configurations within a pair by worker count:
//! 1. with `--bucket-a`/`--bucket-b`, exactly that pair (one of them may be left out
//!    when the other side has a bucket of the same name, or only one bucket);
//! 2. else every bucket name present in both results is paired with itself
//!    ("before vs after a change", "1,769 MB vs 10,240 MB");
//! 3. else buckets are paired by position: A's first with B's first, and so on
//!    ("Standard vs Express" from two runs). One file may be compared with itself
//!    (`compare R.json --bucket-a std --bucket-b exp`).
//!
//! Configurations (axes and worker count) on one side only are listed, not compared.
//!
//! # Significance
//! Each configuration's repetitions give its spread. When both sides ran interleaved
//! (rows carry `round`), rows are paired by round and the sign test decides; otherwise
//! the exact Mann-Whitney U test on the wall times of the repetitions
//! ([`super::significance`]). The p-values of a bucket pair's worker counts are
//! corrected for their number (Holm), and a difference is called when the corrected p
//! is at most 0.05. Where the repetitions cannot reach that even if every one of B beat
//! every one of A, the verdict is "no difference shown" with the repetitions that could.

use std::fmt::Write as _;

use serde::Serialize;

use crate::model::closed_set::closed_set;
use crate::model::stats::tidy;
use crate::model::{Axes, ConfigResult, Deployment, Runner, SubstrateInfo, SweepResult, Unmeasured};

use super::cost::per_1000_objects;
mod spread;

use super::significance::Test;
pub use spread::{non_overlap_p, Significance, Spread, MIN_REPETITIONS};
use spread::{significances, test_config};

/// Why two results cannot be compared.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompareError {
    #[error("{side} has no bucket {bucket:?}; it has {available}")]
    NoSuchBucket {
        side: &'static str,
        bucket: String,
        available: String,
    },
    #[error(
        "cannot tell which bucket of {side} to compare with {bucket:?}: pass --bucket-{side_flag} (it has {available})"
    )]
    Ambiguous {
        side: &'static str,
        side_flag: &'static str,
        bucket: String,
        available: String,
    },
    #[error("a file compared with itself needs --bucket-a and --bucket-b naming two different buckets")]
    SameFileSameBucket,
    #[error("{0} has no configurations")]
    Empty(&'static str),
}

/// One worker count present in both buckets of a pair.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MatchedConfig {
    /// The axes of the rows, flattened (rows pair by bucket, axes and workers: a memory
    /// sweep's sizes, a size axis's object sizes and a client axis's clients each with
    /// themselves).
    #[serde(flatten)]
    pub axes: Axes,
    pub workers: u32,
    pub a: Spread,
    pub b: Spread,
    /// Median wall time, B / A (below 1: B faster).
    #[serde(serialize_with = "tidy::sig4")]
    pub wall_ratio: f64,
    /// Median throughput, B / A (above 1: B faster).
    #[serde(serialize_with = "tidy::sig4")]
    pub throughput_ratio: f64,
    /// The test used: `paired_by_round` or `unpaired` (absent with too few repetitions).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test: Option<Test>,
    pub significance: Significance,
}

closed_set! {
    /// How two buckets came to be paired (the rules in the module docs).
    pub enum MatchedBy {
        /// By `--bucket-a` / `--bucket-b`.
        Chosen = "chosen",
        /// A bucket name present in both results, paired with itself.
        SameName = "same name",
        /// A's first with B's first, and so on.
        Position = "position",
    }
}

/// A configuration on one side only (not compared): its axes, flattened, and workers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct OneSided {
    #[serde(flatten)]
    pub axes: Axes,
    pub workers: u32,
}

/// Two buckets compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BucketPair {
    pub bucket_a: String,
    pub bucket_b: String,
    pub matched_by: MatchedBy,
    pub configs: Vec<MatchedConfig>,
    pub only_in_a: Vec<OneSided>,
    pub only_in_b: Vec<OneSided>,
    pub best_a: Option<(u32, f64)>,
    pub best_b: Option<(u32, f64)>,
    pub knee_a: Option<u32>,
    pub knee_b: Option<u32>,
    /// On a size axis: the object size `best_*` and `knee_*` are at (the first run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub best_object_size_bytes: Option<u64>,
}

/// The whole comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub pairs: Vec<BucketPair>,
    /// Buckets left unpaired, per side.
    pub unpaired_a: Vec<String>,
    pub unpaired_b: Vec<String>,
    /// A sentence on each run's environment (runner, memory, vCPUs).
    pub environment_a: String,
    pub environment_b: String,
    /// Set when the two runs were deployed on different network paths (or only one
    /// recorded its path): they are not placed alike.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placement_differs: Option<String>,
    /// Row fields a side's client could not measure (zero in its rows, `-` in tables).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_measured_a: Vec<Unmeasured>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_measured_b: Vec<Unmeasured>,
    /// Fewest repetitions of any matched configuration, per side.
    pub min_repetitions_a: usize,
    pub min_repetitions_b: usize,
    /// What ran each side: advice speaks in its terms (flags or event fields).
    pub runners: (Runner, Runner),
}

/// Which buckets to compare.
#[derive(Debug, Clone, Default)]
pub struct CompareOptions {
    pub bucket_a: Option<String>,
    pub bucket_b: Option<String>,
    /// True when A and B are the same file.
    pub same_file: bool,
}

fn buckets(r: &SweepResult) -> Vec<String> {
    r.buckets().into_iter().map(str::to_string).collect()
}

/// One sentence on where and how a result was produced (runner, machine, Lambda
/// memory, objects, repetitions, pool).
pub fn environment(r: &SweepResult) -> String {
    let e = &r.environment;
    let mut s = format!("{} on {} {}, {} vCPUs", e.runner, e.os, e.arch, e.vcpus);
    if let Some(client) = &r.tool.client {
        let _ = write!(s, ", client {client}");
    }
    if let Some(l) = &e.lambda {
        if let Some(m) = l.memory_size_mb {
            let on = l.substrate.as_ref().map(SubstrateInfo::describe);
            let _ = write!(s, ", Lambda {m} MB{}", on.map_or(String::new(), |d| format!(" on {d}")));
        }
        if let Some(d) = &l.deployment {
            let _ = write!(s, ", network {}", d.describe());
        }
    }
    let _ = write!(
        s,
        ", {} objects, {} repetition(s), pool {}",
        r.request.object_count, r.request.repetitions, r.request.pool_connections
    );
    s
}

/// The network path a run recorded (Lambda runs deployed by the template).
fn deployment(r: &SweepResult) -> Option<&Deployment> {
    r.environment.lambda.as_ref().and_then(|l| l.deployment.as_ref())
}

/// A sentence when A and B were not deployed on the same network path.
fn placement_differs(a: &SweepResult, b: &SweepResult) -> Option<String> {
    let (da, db) = (deployment(a), deployment(b));
    let describe = |d: Option<&Deployment>| d.map_or("not recorded".to_string(), Deployment::describe);
    (da != db).then(|| {
        format!(
            "the runs were placed differently: A network {}, B network {}",
            describe(da),
            describe(db)
        )
    })
}

fn choose(
    side: &'static str,
    given: &Option<String>,
    mine: &[String],
    other_choice: Option<&str>,
) -> Result<Option<String>, CompareError> {
    let available = if mine.is_empty() {
        "no buckets".to_string()
    } else {
        mine.join(", ")
    };
    match given {
        Some(b) if mine.contains(b) => Ok(Some(b.clone())),
        Some(b) => Err(CompareError::NoSuchBucket {
            side,
            bucket: b.clone(),
            available,
        }),
        None => match other_choice {
            None => Ok(None),
            Some(o) if mine.iter().any(|m| m == o) => Ok(Some(o.to_string())),
            Some(_) if mine.len() == 1 => Ok(Some(mine[0].clone())),
            Some(o) => Err(CompareError::Ambiguous {
                side,
                side_flag: if side == "A" { "a" } else { "b" },
                bucket: o.to_string(),
                available,
            }),
        },
    }
}

/// The bucket pairs to compare, and how they were paired (the rules in the module docs).
fn pair_buckets(
    ba: &[String],
    bb: &[String],
    options: &CompareOptions,
) -> Result<(Vec<(String, String)>, MatchedBy), CompareError> {
    let chosen_a = choose("A", &options.bucket_a, ba, options.bucket_b.as_deref())?;
    let chosen_b = choose("B", &options.bucket_b, bb, chosen_a.as_deref())?;
    match (chosen_a, chosen_b) {
        (Some(x), Some(y)) if options.same_file && x == y => Err(CompareError::SameFileSameBucket),
        (Some(x), Some(y)) => Ok((vec![(x, y)], MatchedBy::Chosen)),
        _ if options.same_file => Err(CompareError::SameFileSameBucket),
        _ => {
            let common: Vec<(String, String)> = ba
                .iter()
                .filter(|x| bb.contains(x))
                .map(|x| (x.clone(), x.clone()))
                .collect();
            if common.is_empty() {
                Ok((
                    ba.iter().cloned().zip(bb.iter().cloned()).collect(),
                    MatchedBy::Position,
                ))
            } else {
                Ok((common, MatchedBy::SameName))
            }
        }
    }
}

/// The buckets of one side in no pair (none when the pair was chosen: the others were
/// left out on purpose).
fn unpaired(all: &[String], paired: impl Fn(&String) -> bool, matched_by: MatchedBy) -> Vec<String> {
    if matched_by == MatchedBy::Chosen {
        return Vec::new();
    }
    all.iter().filter(|x| !paired(x)).cloned().collect()
}

/// A configuration key: rows pair by (axes, workers), so a memory sweep's sizes pair
/// with each other, a size axis's object sizes and a client axis's clients too.
type ConfigKey = (Axes, u32);

fn config_keys(rows: &[&ConfigResult]) -> Vec<ConfigKey> {
    let mut k: Vec<ConfigKey> = rows.iter().map(|r| (r.axes.key(), r.workers)).collect();
    k.sort_unstable_by_key(|(a, w)| (a.sort_key(), *w));
    k.dedup();
    k
}

/// The rows of one configuration (axes, workers).
fn rows_at<'a>(rows: &[&'a ConfigResult], (axes, w): ConfigKey) -> Vec<&'a ConfigResult> {
    rows.iter()
        .copied()
        .filter(|r| r.workers == w && r.axes.key() == axes)
        .collect()
}

/// The configurations of `rows_a` and `rows_b` present on both sides, matched, their
/// tests corrected together.
fn matched_configs(
    rows: [&[&ConfigResult]; 2],
    keys: &[ConfigKey],
    price: [&super::cost::Price<'_>; 2],
) -> Vec<MatchedConfig> {
    let [rows_a, rows_b] = rows;
    let mut tested = Vec::new();
    let mut configs: Vec<MatchedConfig> = keys
        .iter()
        .map(|&(axes, w)| {
            let (ra, rb) = (rows_at(rows_a, (axes, w)), rows_at(rows_b, (axes, w)));
            let (sa, sb) = (Spread::of(&ra, price[0]), Spread::of(&rb, price[1]));
            let t = test_config(&ra, &rb);
            tested.push(t);
            MatchedConfig {
                axes,
                workers: w,
                wall_ratio: sb.median_wall_ms / sa.median_wall_ms.max(1e-9),
                throughput_ratio: sb.median_objects_per_s / sa.median_objects_per_s.max(1e-9),
                test: t.map(|t| t.test),
                significance: Significance::TooFewRepetitions,
                a: sa,
                b: sb,
            }
        })
        .collect();
    for (c, v) in configs.iter_mut().zip(significances(&tested)) {
        c.significance = v;
    }
    configs
}

/// Bucket `x` of `a` against bucket `y` of `b`.
fn bucket_pair(a: &SweepResult, b: &SweepResult, x: String, y: String, matched_by: MatchedBy) -> BucketPair {
    let rows_a: Vec<&ConfigResult> = a.rows_of(&x).collect();
    let rows_b: Vec<&ConfigResult> = b.rows_of(&y).collect();
    let (ka, kb) = (config_keys(&rows_a), config_keys(&rows_b));
    let both: Vec<ConfigKey> = ka.iter().filter(|k| kb.contains(k)).copied().collect();
    let only = |mine: &[ConfigKey], other: &[ConfigKey]| -> Vec<OneSided> {
        let one_sided = mine.iter().filter(|k| !other.contains(k));
        one_sided.map(|&(axes, workers)| OneSided { axes, workers }).collect()
    };
    let sum_a = a.summary.iter().find(|s| s.bucket == x);
    let size = sum_a.and_then(|s| s.axes.object_size_bytes);
    let sum_b = b
        .summary
        .iter()
        .find(|s| s.bucket == y && s.axes.object_size_bytes == size);
    BucketPair {
        configs: matched_configs([&rows_a, &rows_b], &both, [&per_1000_objects(a), &per_1000_objects(b)]),
        only_in_a: only(&ka, &kb),
        only_in_b: only(&kb, &ka),
        best_a: sum_a.map(|s| (s.best_workers, s.best_wall_ms)),
        best_b: sum_b.map(|s| (s.best_workers, s.best_wall_ms)),
        knee_a: sum_a.and_then(|s| s.knee_workers),
        knee_b: sum_b.and_then(|s| s.knee_workers),
        best_object_size_bytes: size,
        bucket_a: x,
        bucket_b: y,
        matched_by,
    }
}

/// Fewest repetitions of any matched configuration on one side (0: none matched).
fn min_repetitions(pairs: &[BucketPair], side: fn(&MatchedConfig) -> &Spread) -> usize {
    pairs
        .iter()
        .flat_map(|p| p.configs.iter().map(|m| side(m).repetitions))
        .min()
        .unwrap_or(0)
}

/// Compares `b` against `a`.
pub fn compare(a: &SweepResult, b: &SweepResult, options: &CompareOptions) -> Result<Comparison, CompareError> {
    let ba = buckets(a);
    let bb = buckets(b);
    if ba.is_empty() {
        return Err(CompareError::Empty("A"));
    }
    if bb.is_empty() {
        return Err(CompareError::Empty("B"));
    }
    let (pairs, matched_by) = pair_buckets(&ba, &bb, options)?;
    let unpaired_a = unpaired(&ba, |x| pairs.iter().any(|p| &p.0 == x), matched_by);
    let unpaired_b = unpaired(&bb, |x| pairs.iter().any(|p| &p.1 == x), matched_by);
    let pairs: Vec<BucketPair> = pairs
        .into_iter()
        .map(|(x, y)| bucket_pair(a, b, x, y, matched_by))
        .collect();
    Ok(Comparison {
        min_repetitions_a: min_repetitions(&pairs, |m| &m.a),
        min_repetitions_b: min_repetitions(&pairs, |m| &m.b),
        pairs,
        unpaired_a,
        unpaired_b,
        environment_a: environment(a),
        environment_b: environment(b),
        placement_differs: placement_differs(a, b),
        not_measured_a: a.not_measured.clone(),
        not_measured_b: b.not_measured.clone(),
        runners: (a.environment.runner, b.environment.runner),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::significance::Test;
    use crate::analysis::summarized as result;
    use crate::model::test_rows::reps;

    #[test]
    fn chance_of_non_overlap() {
        assert!((non_overlap_p(3, 3) - 0.1).abs() < 1e-12);
        assert!((non_overlap_p(5, 5) - 2.0 / 252.0).abs() < 1e-12);
        assert_eq!(non_overlap_p(1, 1), 1.0);
    }

    #[test]
    fn same_names_pair_and_spread_decides() {
        let a = result(
            [
                reps("b1", 1, &[100.0, 110.0, 105.0]),
                reps("b1", 8, &[50.0, 52.0, 51.0]),
            ]
            .concat(),
        );
        let b = result([reps("b1", 1, &[60.0, 62.0, 61.0]), reps("b1", 8, &[49.0, 53.0, 50.0])].concat());
        let c = compare(&a, &b, &CompareOptions::default()).unwrap();
        assert_eq!(c.pairs.len(), 1);
        let p = &c.pairs[0];
        assert_eq!(p.matched_by, MatchedBy::SameName);
        // 3 vs 3 at two worker counts: 0.1 x 2 can never pass 0.05.
        assert_eq!(
            p.configs[0].significance,
            Significance::CannotShow {
                min_p_adjusted: 0.2,
                repetitions_needed: 5
            }
        );
        assert!(p.configs[0].significance.text().contains("no difference shown"));
        assert!((p.configs[0].wall_ratio - 61.0 / 105.0).abs() < 1e-9);

        // 5 vs 5: B faster at 1 worker survives the correction, 8 workers does not differ.
        let a = result(
            [
                reps("b1", 1, &[100.0, 110.0, 105.0, 101.0, 108.0]),
                reps("b1", 8, &[50.0, 52.0, 51.0, 49.5, 50.5]),
            ]
            .concat(),
        );
        let b = result(
            [
                reps("b1", 1, &[60.0, 62.0, 61.0, 63.0, 59.0]),
                reps("b1", 8, &[49.0, 53.0, 50.0, 51.5, 50.2]),
            ]
            .concat(),
        );
        let c = compare(&a, &b, &CompareOptions::default()).unwrap();
        let v = &c.pairs[0].configs;
        assert!(
            matches!(v[0].significance, Significance::BFaster { p, p_adjusted } if (p - 2.0 / 252.0).abs() < 1e-12 && (p_adjusted - 4.0 / 252.0).abs() < 1e-12),
            "{:?}",
            v[0].significance
        );
        assert!(
            matches!(v[1].significance, Significance::NoDifferenceShown { .. }),
            "{:?}",
            v[1].significance
        );
        assert_eq!(v[0].test, Some(Test::Unpaired));
    }

    #[test]
    fn interleaved_rows_pair_by_round() {
        let rounds = |walls: &[f64]| {
            let mut rows = reps("b1", 4, walls);
            for r in &mut rows {
                r.round = Some(r.repetition);
            }
            rows
        };
        // Round to round drift larger than the difference: unpaired sees overlap, the
        // pairs all go one way.
        let a = result(rounds(&[100.0, 200.0, 300.0, 400.0, 500.0, 600.0]));
        let b = result(rounds(&[95.0, 190.0, 290.0, 390.0, 480.0, 590.0]));
        let c = compare(&a, &b, &CompareOptions::default()).unwrap();
        let m = &c.pairs[0].configs[0];
        assert_eq!(m.test, Some(Test::PairedByRound));
        assert!(
            matches!(m.significance, Significance::BFaster { p, .. } if (p - 1.0 / 32.0).abs() < 1e-12),
            "{:?}",
            m.significance
        );
        // Without rounds the same numbers show nothing.
        let plain = |walls: &[f64]| result(reps("b1", 4, walls));
        let c = compare(
            &plain(&[100.0, 200.0, 300.0, 400.0, 500.0, 600.0]),
            &plain(&[95.0, 190.0, 290.0, 390.0, 480.0, 590.0]),
            &CompareOptions::default(),
        )
        .unwrap();
        assert!(matches!(
            c.pairs[0].configs[0].significance,
            Significance::NoDifferenceShown { .. }
        ));
    }

    #[test]
    fn slower_and_too_few_repetitions() {
        // One worker count, 4 vs 4: the smallest p, 2/70, passes alone.
        let a = result(reps("x-bucket", 4, &[10.0, 11.0, 12.0, 10.5]));
        let b = result(reps("x-bucket", 4, &[20.0, 21.0, 22.0, 20.5]));
        let c = compare(&a, &b, &CompareOptions::default()).unwrap();
        assert!(matches!(
            c.pairs[0].configs[0].significance,
            Significance::BSlower { .. }
        ));
        let b1 = result(reps("x-bucket", 4, &[20.0]));
        let c = compare(&a, &b1, &CompareOptions::default()).unwrap();
        assert_eq!(c.pairs[0].configs[0].significance, Significance::TooFewRepetitions);
    }

    #[test]
    fn different_buckets_pair_by_position_or_by_choice() {
        let a = result(
            [
                reps("std-a", 1, &[100.0]),
                reps("std-a", 2, &[60.0]),
                reps("exp-a", 1, &[20.0]),
            ]
            .concat(),
        );
        let b = result(
            [
                reps("std-b", 1, &[90.0]),
                reps("std-b", 4, &[30.0]),
                reps("exp-b", 1, &[10.0]),
            ]
            .concat(),
        );
        let c = compare(&a, &b, &CompareOptions::default()).unwrap();
        assert_eq!(c.pairs.len(), 2);
        assert_eq!(c.pairs[0].matched_by, MatchedBy::Position);
        assert_eq!(
            (c.pairs[0].bucket_a.as_str(), c.pairs[0].bucket_b.as_str()),
            ("std-a", "std-b")
        );
        assert_eq!(c.pairs[0].configs.len(), 1);
        assert_eq!(one_sided(&c.pairs[0].only_in_a), vec![(None, None, 2)]);
        assert_eq!(one_sided(&c.pairs[0].only_in_b), vec![(None, None, 4)]);

        // Standard vs Express within one file.
        let c = compare(
            &a,
            &a,
            &CompareOptions {
                bucket_a: Some("std-a".into()),
                bucket_b: Some("exp-a".into()),
                same_file: true,
            },
        )
        .unwrap();
        assert_eq!(c.pairs[0].matched_by, MatchedBy::Chosen);
        assert!((c.pairs[0].configs[0].wall_ratio - 0.2).abs() < 1e-9);
        assert_eq!(c.unpaired_a, Vec::<String>::new());

        let err = compare(
            &a,
            &b,
            &CompareOptions {
                bucket_a: Some("nope".into()),
                ..CompareOptions::default()
            },
        )
        .unwrap_err();
        assert!(err.to_string().contains("std-a, exp-a"), "{err}");
        let err = compare(
            &a,
            &b,
            &CompareOptions {
                bucket_a: Some("exp-a".into()),
                ..CompareOptions::default()
            },
        )
        .unwrap_err();
        assert!(matches!(err, CompareError::Ambiguous { .. }), "{err}");
        assert!(matches!(
            compare(
                &a,
                &a,
                &CompareOptions {
                    same_file: true,
                    ..CompareOptions::default()
                }
            ),
            Err(CompareError::SameFileSameBucket)
        ));
    }

    #[test]
    fn memory_sweeps_pair_by_bucket_memory_and_workers() {
        let at = |memory_mb: u32, workers: u32, wall_ms: f64| {
            let mut r = reps("b-1", workers, &[wall_ms]).remove(0);
            r.axes.memory_mb = Some(memory_mb);
            r
        };
        let a = result(vec![at(512, 4, 1000.0), at(1024, 4, 600.0), at(2048, 4, 400.0)]);
        let b = result(vec![at(512, 4, 500.0), at(1024, 4, 300.0), at(4096, 4, 100.0)]);
        let c = compare(&a, &b, &CompareOptions::default()).unwrap();
        let pairs: Vec<(Option<u32>, u32, f64)> = c.pairs[0]
            .configs
            .iter()
            .map(|m| (m.axes.memory_mb, m.workers, m.wall_ratio))
            .collect();
        // 512 with 512 and 1,024 with 1,024, never across sizes; 2,048 and 4,096 unpaired.
        assert_eq!(pairs, vec![(Some(512), 4, 0.5), (Some(1024), 4, 0.5)]);
        assert_eq!(one_sided(&c.pairs[0].only_in_a), vec![(Some(2048), None, 4)]);
        assert_eq!(one_sided(&c.pairs[0].only_in_b), vec![(Some(4096), None, 4)]);
    }

    #[test]
    fn size_axes_pair_by_bucket_size_and_workers() {
        let at = |size: u64, wall_ms: f64| {
            let mut r = reps("b-1", 8, &[wall_ms]).remove(0);
            r.axes.object_size_bytes = Some(crate::model::ObjectSize::Fixed(size));
            r
        };
        let a = result(vec![at(4096, 100.0), at(1 << 20, 900.0)]);
        let b = result(vec![at(4096, 50.0), at(1 << 20, 450.0), at(46_080, 10.0)]);
        let c = compare(&a, &b, &CompareOptions::default()).unwrap();
        let got: Vec<(Option<u64>, f64)> = c.pairs[0]
            .configs
            .iter()
            .map(|m| (m.axes.object_size_bytes, m.wall_ratio))
            .collect();
        assert_eq!(got, vec![(Some(4096), 0.5), (Some(1 << 20), 0.5)], "never across sizes");
        assert_eq!(one_sided(&c.pairs[0].only_in_b), vec![(None, Some(46_080), 8)]);
    }

    fn one_sided(only: &[OneSided]) -> Vec<(Option<u32>, Option<u64>, u32)> {
        let key = |o: &OneSided| (o.axes.memory_mb, o.axes.object_size_bytes, o.workers);
        only.iter().map(key).collect()
    }
}

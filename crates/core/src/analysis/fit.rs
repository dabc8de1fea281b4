//! The model `X = min(C / R, P / c, B / S)` fitted to each bucket's curve (latency per
//! request R, serial client cost c on P cores, bandwidth B, object size S), its
//! predictions for 10x more workers and for 6 vCPUs, and the bucket-vs-bucket
//! comparison.

use crate::model::stats::round3;
use crate::model::{
    BucketComparison, CurveAnalysis, HeldOut, Limit, ModelFit, Prediction, SweepResult, Verdict, WorkerVerdict,
};

use super::forecast::ROUGH_HELD_OUT;
use super::story::Story;
use super::summary::knee;

/// Inputs of the model beyond the curve.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ModelInputs {
    /// Measured client CPU per request (ms), when known.
    pub client_cpu_ms_per_request: Option<f64>,
    /// Cores the client can use in parallel (1 for a Python client under the GIL).
    pub client_cores: f64,
    /// Whether the client would use more vCPUs if it had them (false under a GIL).
    pub cores_scale_with_vcpus: bool,
    pub bandwidth_ceiling_mib_per_s: Option<f64>,
    pub object_size_bytes: f64,
    pub objects: u64,
    /// The configuration with the most workers was `client_cpu`-bound: the plateau
    /// is the client's CPU ceiling as measured, and scales with the cores.
    pub plateau_is_client_cpu: bool,
    /// The Lambda memory the run had, when its CPU came from it: predictions then
    /// speak in memory sizes (CPU time in proportion to memory, 1,769 MB per vCPU).
    pub lambda_memory_mb: Option<u32>,
}

/// Fits `X = min(C / R, K)` to `(C, X)` points (requests in flight, objects/s) by least
/// squares in log space: for every split of the points sorted by C into a rising part
/// and a plateau, R is the geometric mean of C / X over the rising part and K the
/// geometric mean of X over the plateau; the split with the smallest error wins. A
/// plateau needs at least two points (one low last point is a curve still rising, more
/// slowly), and is dropped when it sits within 10% of where the line would be anyway.
/// Returns (R in seconds, K or None, rms log error).
pub(crate) fn fit_curve(points: &[(f64, f64)]) -> Option<(f64, Option<f64>, f64)> {
    let mut pts: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|p| p.0 > 0.0 && p.1 > 0.0 && p.0.is_finite() && p.1.is_finite())
        .collect();
    if pts.is_empty() {
        return None;
    }
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let n = pts.len();
    let error = |r: f64, k: Option<f64>| -> f64 {
        let sum: f64 = pts
            .iter()
            .map(|&(c, x)| {
                let m = k.map_or(c / r, |k| (c / r).min(k));
                (m / x).ln().powi(2)
            })
            .sum();
        (sum / n as f64).sqrt()
    };
    let mut best: Option<(f64, Option<f64>, f64)> = None;
    for split in 1..=n {
        let rising = &pts[..split];
        let r = (rising.iter().map(|&(c, x)| (c / x).ln()).sum::<f64>() / split as f64).exp();
        if split < n && n - split < 2 {
            continue;
        }
        let k = if split < n {
            let flat = &pts[split..];
            Some((flat.iter().map(|p| p.1.ln()).sum::<f64>() / flat.len() as f64).exp())
        } else {
            None
        };
        let e = error(r, k);
        if best.is_none_or(|b| e < b.2 - 1e-12) {
            best = Some((r, k, e));
        }
    }
    let (r, k, e) = best?;
    let c_max = pts[n - 1].0;
    match k {
        Some(k) if k >= 0.9 * c_max / r => {
            // The "plateau" hardly bends the line: report a still-rising curve, fitted
            // as one line through every point.
            let r = (pts.iter().map(|&(c, x)| (c / x).ln()).sum::<f64>() / n as f64).exp();
            Some((r, None, error(r, None)))
        }
        _ => Some((r, k, e)),
    }
}

/// The model's throughput for `workers` in flight on `cores`, and its binding term.
fn predict(fit: &ModelFit, inputs: &ModelInputs, workers: u32, cores: f64) -> (f64, Limit) {
    predict_in_flight(fit, inputs, f64::from(workers), cores)
}

/// The model's throughput for `in_flight` requests on `cores`, and its binding term.
fn predict_in_flight(fit: &ModelFit, inputs: &ModelInputs, in_flight: f64, cores: f64) -> (f64, Limit) {
    let mut best = (in_flight / (fit.latency_ms_per_request / 1000.0), Limit::Latency);
    let mut consider = |x: f64, name: Limit| {
        if x < best.0 {
            best = (x, name);
        }
    };
    let scale = if inputs.cores_scale_with_vcpus {
        cores / fit.client_cores.max(0.01)
    } else {
        1.0
    };
    match (fit.client_cpu_ms_per_request, fit.plateau_objects_per_s) {
        (_, Some(k)) if inputs.plateau_is_client_cpu => {
            // The plateau's own rows were client-CPU-bound: it is the CPU ceiling as
            // measured (starvation and all), and it moves with the cores.
            consider(k * scale, Limit::ClientCpu);
        }
        (Some(c), plateau) if c > 0.0 => {
            let ceiling = cores * 1000.0 / c;
            consider(ceiling, Limit::ClientCpu);
            // A plateau well below the client's CPU ceiling is something else (the
            // server, the network, a serial section): it stays where it is.
            if let Some(k) = plateau {
                let now = fit.client_cores * 1000.0 / c;
                if k < 0.7 * now {
                    consider(k, Limit::Plateau);
                }
            }
        }
        (_, Some(k)) => {
            // No CPU measurement: read the plateau as client CPU (c / P = 1 / K).
            consider(k * scale, Limit::ClientCpu);
        }
        _ => {}
    }
    if let Some(b) = fit.bandwidth_ceiling_objects_per_s {
        consider(b, Limit::Bandwidth);
    }
    best
}

/// Fewer worker counts fitted than this and the predictions are rough.
pub(crate) const ROUGH_POINTS: u32 = 4;

/// The model fitted on the first two thirds of `points` (by requests in flight, at
/// least two), checked on the rest: the largest |predicted / measured - 1|. `None`
/// with fewer than three points.
fn held_out(points: &[(u32, f64, f64)], inputs: &ModelInputs) -> Option<HeldOut> {
    let mut pts: Vec<(f64, f64)> = points.iter().map(|p| (p.1, p.2)).collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let n = pts.len();
    if n < 3 {
        return None;
    }
    let fitted = (2 * n / 3).max(2);
    let fit = model_fit(fit_curve(&pts[..fitted])?, inputs);
    let error_share = pts[fitted..]
        .iter()
        .map(|&(c, x)| (predict_in_flight(&fit, inputs, c, inputs.client_cores).0 / x - 1.0).abs())
        .fold(0.0, f64::max);
    Some(HeldOut {
        points_fitted: fitted as u32,
        points_predicted: (n - fitted) as u32,
        error_share: round3(error_share),
    })
}

/// Analyses one bucket's curve: `points` are (workers, requests the engine could have
/// in flight, objects/s) medians per worker count, without failed configurations. The
/// recommendation is the bucket's [`Story`].
pub(crate) fn analyse_curve(
    bucket: &str,
    points: &[(u32, f64, f64)],
    inputs: &ModelInputs,
    verdicts: Vec<WorkerVerdict>,
) -> CurveAnalysis {
    let rates: Vec<(u32, f64)> = points.iter().map(|p| (p.0, p.2)).collect();
    let knee_workers = knee(&rates);
    let (fit, predictions) = model_of(points, inputs);
    // The story keeps the predictions that agree with the verdict, and says why not
    // the others: the document stores what the story prints.
    let story = Story::of(&rates, &verdicts, fit.as_ref(), &predictions);
    let forecast = story.forecast.unwrap_or_default();
    CurveAnalysis {
        bucket: bucket.to_string(),
        knee_workers,
        recommended_workers: story.recommended_workers,
        recommendation: story.recommendation,
        verdicts,
        fit,
        predictions: forecast.shown,
        predictions_withheld: forecast.withheld,
        axes: Default::default(),
    }
}

/// The model fitted to `points` (as [`analyse_curve`] takes them) and all its
/// predictions, before the story keeps those that agree with the verdict.
pub(crate) fn model_of(points: &[(u32, f64, f64)], inputs: &ModelInputs) -> (Option<ModelFit>, Vec<Prediction>) {
    let rates: Vec<(u32, f64)> = points.iter().map(|p| (p.0, p.2)).collect();
    let max_workers = points.iter().map(|p| p.0).max().unwrap_or(1);
    let fit = fit_curve(&points.iter().map(|p| (p.1, p.2)).collect::<Vec<_>>()).map(|fitted| {
        let mut f = model_fit(fitted, inputs);
        f.points_fitted = points.len() as u32;
        f.held_out = held_out(points, inputs);
        f.rough = f.points_fitted < ROUGH_POINTS || f.held_out.is_none_or(|h| h.error_share > ROUGH_HELD_OUT);
        f
    });
    let predictions = fit.as_ref().map_or_else(Vec::new, |f| {
        let at = knee(&rates).unwrap_or(max_workers);
        // The median as measured: the line beside it prints what the table prints.
        let measured = rates.iter().find(|p| p.0 == at).map(|p| p.1);
        predictions(f, inputs, (at, measured), max_workers)
    });
    (fit, predictions)
}

/// The model's terms from a fitted (R in seconds, plateau, RMS log error) and the
/// measured inputs.
fn model_fit((r, k, e): (f64, Option<f64>, f64), inputs: &ModelInputs) -> ModelFit {
    let c = inputs.client_cpu_ms_per_request.filter(|c| *c > 0.0);
    ModelFit {
        latency_ms_per_request: round3(r * 1000.0),
        plateau_objects_per_s: k.map(round3),
        plateau_ms_per_request: k.map(|k| round3(1000.0 / k)),
        client_cpu_ms_per_request: c.map(round3),
        client_cores: inputs.client_cores,
        client_cpu_ceiling_objects_per_s: c.map(|c| round3(inputs.client_cores * 1000.0 / c)),
        bandwidth_ceiling_objects_per_s: inputs
            .bandwidth_ceiling_mib_per_s
            .filter(|_| inputs.object_size_bytes > 0.0)
            .map(|b| round3(b * 1024.0 * 1024.0 / inputs.object_size_bytes)),
        fit_rms_log_error: round3(e),
        workers_to_plateau: k.map(|k| round3(k * r)),
        points_fitted: 0,
        held_out: None,
        rough: false,
    }
}

/// What the model predicts: at the recommended count `(workers, measured objects/s)`
/// (the model's figure beside the measured one, never labelled as measured), at 10x
/// the most workers tried, and with more CPU (on Lambda: twice the memory and the
/// largest size; else 6 vCPUs).
fn predictions(f: &ModelFit, inputs: &ModelInputs, best: (u32, Option<f64>), max_workers: u32) -> Vec<Prediction> {
    let objects = inputs.objects.max(1) as f64;
    let at = |scenario: String, workers: u32, cores: f64| {
        let (x, limit) = predict(f, inputs, workers, cores);
        Prediction {
            scenario,
            workers,
            client_cores: cores,
            objects_per_s: round3(x),
            wall_ms: round3(objects / x * 1000.0),
            limit,
            measured_objects_per_s: None,
        }
    };
    let more = max_workers * 10;
    let (best, measured) = best;
    let mut check = at(format!("model at {best} workers"), best, inputs.client_cores);
    check.measured_objects_per_s = measured;
    let mut out = vec![check, at(format!("10x workers ({more})"), more, inputs.client_cores)];
    match inputs.lambda_memory_mb {
        // On Lambda more CPU is more memory: double it, and the largest size.
        Some(mb) if inputs.cores_scale_with_vcpus => {
            let mut sizes = vec![(mb * 2).min(10_240), 10_240];
            sizes.dedup();
            for size in sizes.into_iter().filter(|s| *s > mb) {
                let cores = (f64::from(size) / 1_769.0).min(6.0);
                out.push(at(
                    format!("at {size} MB ({cores:.2} vCPUs of CPU time), {more} workers"),
                    more,
                    round3(cores),
                ));
            }
        }
        _ => {
            let six = if inputs.cores_scale_with_vcpus {
                6.0
            } else {
                inputs.client_cores
            };
            out.push(at(format!("6 vCPUs, {more} workers"), more, six));
        }
    }
    out
}

/// Compares every bucket with the one of lowest fitted latency.
pub(crate) fn compare_buckets(analyses: &[CurveAnalysis], result: &SweepResult) -> Vec<BucketComparison> {
    let latency = |a: &CurveAnalysis| a.fit.as_ref().map(|f| f.latency_ms_per_request);
    let Some(fast) = analyses.iter().filter(|a| latency(a).is_some()).min_by(|a, b| {
        latency(a)
            .unwrap_or(f64::MAX)
            .total_cmp(&latency(b).unwrap_or(f64::MAX))
    }) else {
        return Vec::new();
    };
    let summary = |b: &str| result.summary.iter().find(|s| s.bucket == b);
    // What binds where each sweep stopped (the story's verdict), not at the best
    // count: a best row on the rising part says nothing of what comes after it.
    let binding = |b: &str| {
        analyses
            .iter()
            .find(|a| a.bucket == b)?
            .verdicts
            .iter()
            .max_by_key(|v| v.workers)
            .map(|v| v.verdict)
    };
    let mut out = Vec::new();
    for slow in analyses.iter().filter(|a| a.bucket != fast.bucket) {
        let (Some(sf), Some(ss)) = (summary(&fast.bucket), summary(&slow.bucket)) else {
            continue;
        };
        let latency_ratio = match (latency(slow), latency(fast)) {
            (Some(a), Some(b)) if b > 0.0 => Some(round3(a / b)),
            _ => None,
        };
        let one = match (ss.one_worker_wall_ms, sf.one_worker_wall_ms) {
            (Some(a), Some(b)) if b > 0.0 => Some(round3(a / b)),
            _ => None,
        };
        let best = round3(ss.best_wall_ms / sf.best_wall_ms.max(0.001));
        let (vf, vs) = (binding(&fast.bucket), binding(&slow.bucket));
        let why = match (vf, vs) {
            (Some(a), Some(b)) if a == b && a != Verdict::Latency => format!(
                "at the largest count tried both are bound by {}, which does not depend on the bucket, so the gap closes",
                a.name()
            ),
            (Some(Verdict::Latency), Some(Verdict::Latency)) => {
                "at the largest count tried both are still latency-bound: more workers would keep the lower-latency bucket ahead"
                    .to_string()
            }
            (Some(a), Some(b)) => format!(
                "at the largest count tried {} is bound by {} and {} by {}",
                fast.bucket,
                a.name(),
                slow.bucket,
                b.name()
            ),
            _ => "no verdicts to compare".to_string(),
        };
        let explanation = format!(
            "{} is {}x as fast at one worker, where a request's latency is all there is (fitted latency ratio {}x), and {best:.2}x as fast at the best worker count; {why}",
            fast.bucket,
            one.map_or("?".to_string(), |o| format!("{o:.1}")),
            latency_ratio.map_or("?".to_string(), |l| format!("{l:.1}")),
        );
        out.push(BucketComparison {
            faster_bucket: fast.bucket.clone(),
            slower_bucket: slow.bucket.clone(),
            latency_ratio,
            one_worker_speedup: one,
            best_speedup: best,
            explanation,
            axes: Default::default(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::test_rows::{SEED_EXPRESS_MS, SEED_STANDARD_MS};

    fn seed_curve(walls: &[(u32, f64)]) -> Vec<(u32, f64, f64)> {
        walls
            .iter()
            .map(|&(w, ms)| (w, f64::from(w), 1000.0 / (ms / 1000.0)))
            .collect()
    }

    fn python() -> ModelInputs {
        ModelInputs {
            client_cpu_ms_per_request: None,
            client_cores: 1.0,
            cores_scale_with_vcpus: false,
            bandwidth_ceiling_mib_per_s: None,
            object_size_bytes: 46_080.0,
            objects: 1000,
            plateau_is_client_cpu: false,
            lambda_memory_mb: None,
        }
    }

    #[test]
    fn the_seed_curves_fit_the_model() {
        let e = analyse_curve("express", &seed_curve(&SEED_EXPRESS_MS), &python(), vec![]);
        let s = analyse_curve("standard", &seed_curve(&SEED_STANDARD_MS), &python(), vec![]);
        assert_eq!(e.knee_workers, Some(4));
        assert_eq!(s.knee_workers, Some(16));
        let ef = e.fit.unwrap();
        let sf = s.fit.unwrap();
        // Express: ~8 ms per request, plateau ~2.6 ms per request (the original measurement's c = 2.6 ms).
        assert!((7.0..9.0).contains(&ef.latency_ms_per_request), "{ef:?}");
        let c = ef.plateau_ms_per_request.unwrap();
        assert!((2.4..2.8).contains(&c), "{ef:?}");
        // Standard: tens of ms per request, the same plateau within 10%.
        assert!((25.0..50.0).contains(&sf.latency_ms_per_request), "{sf:?}");
        let cs = sf.plateau_ms_per_request.unwrap();
        assert!((cs / c - 1.0).abs() < 0.1, "{c} vs {cs}");
        assert!(ef.fit_rms_log_error < 0.1, "{ef:?}");
        // Under a GIL neither 10x workers nor 6 vCPUs move the plateau.
        for p in &e.predictions[1..] {
            assert_eq!(p.limit, Limit::ClientCpu, "{p:?}");
            assert!((p.wall_ms - 1000.0 * c).abs() < 1.0, "{p:?}");
        }
        // Few workers reach the plateau: about 3 for Express, about 12 for Standard.
        assert!((2.0..4.5).contains(&ef.workers_to_plateau.unwrap()), "{ef:?}");
        assert!((8.0..16.0).contains(&sf.workers_to_plateau.unwrap()), "{sf:?}");
    }

    #[test]
    fn a_native_client_is_predicted_to_scale() {
        // The seed's latencies, with a client costing 0.2 ms of CPU per GET on 2 cores.
        let inputs = ModelInputs {
            client_cpu_ms_per_request: Some(0.2),
            client_cores: 2.0,
            cores_scale_with_vcpus: true,
            ..python()
        };
        let curve: Vec<(u32, f64, f64)> = [1u32, 2, 4, 8, 16, 32, 64]
            .iter()
            .map(|&w| (w, f64::from(w), f64::from(w) / 0.005))
            .collect();
        let a = analyse_curve("x", &curve, &inputs, vec![]);
        let f = a.fit.clone().unwrap();
        assert!((f.latency_ms_per_request - 5.0).abs() < 0.01, "{f:?}");
        assert_eq!(f.plateau_objects_per_s, None);
        assert!(a.recommendation.contains("still rising"), "{}", a.recommendation);
        let a = CurveAnalysis {
            predictions: model_of(&curve, &inputs).1,
            ..a
        };
        // 640 workers at 5 ms: 128,000/s from latency, 10,000/s from 2 cores: CPU binds.
        assert_eq!(a.predictions[1].limit, Limit::ClientCpu);
        assert!((a.predictions[1].objects_per_s - 10_000.0).abs() < 1.0);
        // 6 vCPUs: 30,000/s.
        assert!((a.predictions[2].objects_per_s - 30_000.0).abs() < 1.0);
        // Bandwidth: 100 MiB/s of 46,080 B objects is ~2,276 objects/s.
        let (_, b) = model_of(
            &curve,
            &ModelInputs {
                bandwidth_ceiling_mib_per_s: Some(100.0),
                ..inputs
            },
        );
        assert_eq!(b[2].limit, Limit::Bandwidth);
        assert!((b[2].objects_per_s - 2275.6).abs() < 1.0, "{:?}", b[2]);
    }

    #[test]
    fn a_client_cpu_plateau_scales_with_cores_and_another_does_not() {
        // 5 ms per request, flat at 5,000 objects/s from 32 workers, 0.2 ms CPU per GET
        // on 2 cores (a 10,000/s ceiling the plateau does not reach).
        let curve: Vec<(u32, f64, f64)> = [(1u32, 200.0), (8, 1600.0), (32, 5000.0), (64, 5050.0), (128, 4950.0)]
            .iter()
            .map(|&(w, x)| (w, f64::from(w), x))
            .collect();
        let inputs = ModelInputs {
            client_cpu_ms_per_request: Some(0.2),
            client_cores: 2.0,
            cores_scale_with_vcpus: true,
            ..python()
        };
        let (_, other) = model_of(&curve, &inputs);
        assert_eq!(other[2].limit, Limit::Plateau, "{other:?}");
        assert!((other[2].objects_per_s - 5000.0).abs() < 100.0);
        let (_, cpu) = model_of(
            &curve,
            &ModelInputs {
                plateau_is_client_cpu: true,
                ..inputs
            },
        );
        assert_eq!(cpu[1].limit, Limit::ClientCpu);
        assert!((cpu[1].objects_per_s - 5000.0).abs() < 100.0);
        // 6 vCPUs: 3x the 2-core plateau.
        assert!((cpu[2].objects_per_s - 15_000.0).abs() < 300.0, "{cpu:?}");
        // Fitted on its first three counts (still rising), the model misses the flat
        // two by far: the analysis predicts nothing from it.
        let a = analyse_curve("x", &curve, &inputs, vec![]);
        assert!(a.fit.as_ref().unwrap().held_out.unwrap().error_share > ROUGH_HELD_OUT);
        assert!(a.predictions.is_empty(), "{:?}", a.predictions);
        assert!(
            a.predictions_withheld
                .as_ref()
                .is_some_and(|w| w.starts_with("none: fitted on the first 3 counts")),
            "{a:?}"
        );
    }

    #[test]
    fn no_prediction_is_labelled_measured_at_a_count_not_measured() {
        let curves: [&[(u32, f64)]; 4] = [
            &[(1, 200.0), (8, 1600.0), (32, 5000.0), (64, 5050.0), (128, 4950.0)],
            &[(1, 117.0), (8, 930.0), (64, 8401.0)],
            &SEED_EXPRESS_MS,
            &[(1, 100.0), (2, 200.0)],
        ];
        for (i, c) in curves.iter().enumerate() {
            let points: Vec<(u32, f64, f64)> = if i == 2 {
                seed_curve(c)
            } else {
                c.iter().map(|&(w, x)| (w, f64::from(w), x)).collect()
            };
            let (_, predictions) = model_of(&points, &python());
            let a = CurveAnalysis {
                predictions,
                ..analyse_curve("x", &points, &python(), vec![])
            };
            assert!(!a.predictions.is_empty(), "{a:?}");
            for p in &a.predictions {
                assert!(!p.scenario.contains("as measured"), "{p:?}");
                let measured = points.iter().find(|q| q.0 == p.workers).map(|q| q.2);
                if p.measured_objects_per_s.is_some() || p.scenario.contains("measured") {
                    assert_eq!(p.measured_objects_per_s, measured, "{p:?} at {points:?}");
                }
            }
            // The prediction at the recommended count carries what was measured there.
            assert!(a.predictions[0].measured_objects_per_s.is_some(), "{a:?}");
        }
    }

    #[test]
    fn the_held_out_error_says_how_far_to_trust_the_model() {
        // A straight line: fitted on the first counts, the rest predicted closely.
        let line: Vec<(u32, f64, f64)> = [1u32, 2, 4, 8, 16, 32]
            .iter()
            .map(|&w| (w, f64::from(w), f64::from(w) * 100.0))
            .collect();
        let f = analyse_curve("x", &line, &python(), vec![]).fit.unwrap();
        let h = f.held_out.unwrap();
        assert_eq!((h.points_fitted, h.points_predicted), (4, 2));
        assert!(h.error_share < 0.01, "{h:?}");
        assert!(!f.rough, "{f:?}");
        assert_eq!(f.points_fitted, 6);
        // The curve: 1, 8, 64 workers fitted a ceiling near 8,700 objects/s,
        // and 256 workers then reached 13,254. Held out, the model misses by a third.
        let rising: Vec<(u32, f64, f64)> = [(1u32, 117.0), (8, 930.0), (64, 8401.0), (256, 13_254.0)]
            .iter()
            .map(|&(w, x)| (w, f64::from(w), x))
            .collect();
        let inputs = ModelInputs {
            client_cpu_ms_per_request: Some(0.23),
            client_cores: 2.0,
            cores_scale_with_vcpus: true,
            ..python()
        };
        let f = analyse_curve("x", &rising, &inputs, vec![]).fit.unwrap();
        let h = f.held_out.unwrap();
        assert!(h.error_share > ROUGH_HELD_OUT, "{h:?}");
        assert!(f.rough, "{f:?}");
        // Three counts: no held-out check beyond one point, and rough.
        let f = analyse_curve("x", &rising[..3], &inputs, vec![]).fit.unwrap();
        assert!(f.rough && f.points_fitted == 3, "{f:?}");
    }

    #[test]
    fn fit_handles_degenerate_curves() {
        assert_eq!(fit_curve(&[]), None);
        let (r, k, e) = fit_curve(&[(1.0, 100.0)]).unwrap();
        assert!((r - 0.01).abs() < 1e-9 && k.is_none() && e < 1e-9);
        // Flat from the start: the plateau is everything after the first point.
        let (r, k, _) = fit_curve(&[(1.0, 100.0), (2.0, 101.0), (4.0, 99.0)]).unwrap();
        assert!((r - 0.01).abs() < 1e-6);
        assert!((k.unwrap() - 100.0).abs() < 1.0);
    }

    #[test]
    fn one_low_last_point_is_not_a_plateau() {
        // 39, 302, 846 objects/s at 1, 8, 32 workers: still rising, more slowly.
        let (r, k, _) = fit_curve(&[(1.0, 39.0), (8.0, 302.0), (32.0, 846.0)]).unwrap();
        assert_eq!(k, None);
        assert!(r > 0.025 && r < 0.04, "{r}");
    }

    #[test]
    fn on_lambda_predictions_speak_in_memory_sizes() {
        // A client-CPU-bound curve measured at 512 MB (0.29 vCPUs of CPU time).
        let curve: Vec<(u32, f64, f64)> = [(1, 50.0), (4, 180.0), (16, 290.0), (64, 300.0)]
            .iter()
            .map(|&(w, x)| (w, f64::from(w), x))
            .collect();
        let inputs = ModelInputs {
            client_cpu_ms_per_request: Some(1.0),
            client_cores: 0.289,
            cores_scale_with_vcpus: true,
            bandwidth_ceiling_mib_per_s: None,
            object_size_bytes: 46_080.0,
            objects: 1000,
            plateau_is_client_cpu: true,
            lambda_memory_mb: Some(512),
        };
        let a = analyse_curve("b", &curve, &inputs, vec![]);
        let scenarios: Vec<&str> = a.predictions.iter().map(|p| p.scenario.as_str()).collect();
        assert!(
            scenarios.iter().any(|s| s.starts_with("at 1024 MB (0.58 vCPUs")),
            "{scenarios:?}"
        );
        assert!(
            scenarios.iter().any(|s| s.starts_with("at 10240 MB (5.79 vCPUs")),
            "{scenarios:?}"
        );
        assert!(!scenarios.iter().any(|s| s.contains("6 vCPUs")), "{scenarios:?}");
        // CPU time doubles with the memory, and so does the client-CPU plateau.
        let at = |mb: &str| {
            a.predictions
                .iter()
                .find(|p| p.scenario.contains(mb))
                .unwrap()
                .objects_per_s
        };
        let measured = a.predictions[0].objects_per_s;
        assert!(
            (at("1024 MB") / measured - 2.0).abs() < 0.1,
            "{} vs {measured}",
            at("1024 MB")
        );
    }
}

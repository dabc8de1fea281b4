//! Which of the fitted model's figures a bucket's story may print. The model
//! (`fit`) predicts for the recommended count, for 10x the workers and for more CPU;
//! the verdict at the largest count says what would move the curve. A prediction that
//! says otherwise is not printed: a CPU-bound row's shown prediction names more CPU and
//! gains from it, a row bound by what more workers cannot move gains nothing from
//! them, and a latency row gains from them. A model whose held-out error (or, without
//! one, its fit error) is large predicts nothing, and the line says its error instead. The model's plateau below
//! what was measured is called the fit's error, not a ceiling. docs/diagnosis.md
//! ("What the model may predict") lists the same rules.

use crate::model::{Limit, ModelFit, Prediction, Verdict, WorkerVerdict};

/// A held-out error over this is too large to trust the predictions: the model then
/// predicts nothing (and `fit` marks it rough).
pub(crate) const ROUGH_HELD_OUT: f64 = 0.25;

/// A predicted gain over the best measured under this factor is "no gain" (the same
/// 10% as the knee's).
pub(crate) const GAIN: f64 = 1.1;

/// On a curve that flattened, a fitted plateau under this share of the best measured
/// is the fit's error (within it, the plateau is the knee's 10%).
pub(crate) const PLATEAU_UNDER_MEASURED: f64 = 0.9;

/// The share of the best measured a fitted plateau must reach to be called one: on a
/// curve still rising at its largest count any plateau under the best is the fit's
/// error (a flat part the measurements already passed), so the share is 1.
pub(crate) fn plateau_floor(still_rising: bool) -> f64 {
    if still_rising {
        1.0
    } else {
        PLATEAU_UNDER_MEASURED
    }
}

/// What a prediction asks the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scenario {
    /// The model at a measured count, beside the measurement.
    Check,
    /// More workers on the same CPU.
    MoreWorkers,
    /// More CPU (6 vCPUs, or more Lambda memory).
    MoreCpu,
}

/// The scenario of `p` under `fit`.
pub(crate) fn scenario(p: &Prediction, fit: &ModelFit) -> Scenario {
    if p.measured_objects_per_s.is_some() || p.scenario.starts_with("model at") {
        Scenario::Check
    } else if p.client_cores > fit.client_cores + 1e-9 {
        Scenario::MoreCpu
    } else {
        Scenario::MoreWorkers
    }
}

/// Whether a prediction of `scenario`, gaining `gain` over the best measured with
/// `limit` binding, agrees with `verdict` binding at the largest count.
pub(crate) fn agrees(verdict: Verdict, scenario: Scenario, limit: Limit, gain: f64) -> bool {
    let gains = gain >= GAIN;
    match (verdict, scenario) {
        (_, Scenario::Check) => true,
        (Verdict::Latency, Scenario::MoreWorkers) => gains,
        (Verdict::Latency, Scenario::MoreCpu) => true,
        (Verdict::Plateau | Verdict::Bandwidth, _) => !gains,
        (Verdict::ClientCpu | Verdict::MachineCpu, Scenario::MoreWorkers) => !gains,
        (Verdict::ClientCpu | Verdict::MachineCpu, Scenario::MoreCpu) => gains && limit != Limit::Plateau,
        (Verdict::Pool | Verdict::Throttled | Verdict::Errors, _) => false,
    }
}

/// The predictions a story prints, and why any were left out.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Forecast {
    pub(crate) shown: Vec<Prediction>,
    /// Why the model's other figures are not shown.
    pub(crate) withheld: Option<String>,
}

/// The model's error, when it is too large to predict from: its held-out error, or,
/// without one, its error on the counts it was fitted to.
fn large_error(fit: &ModelFit) -> Option<String> {
    if let Some(h) = fit.held_out.filter(|h| h.error_share > ROUGH_HELD_OUT) {
        return Some(format!(
            "none: fitted on the first {} counts, the model missed the other {} by up to {:.0}%, too far to predict from",
            h.points_fitted,
            h.points_predicted,
            100.0 * h.error_share
        ));
    }
    (fit.fit_rms_log_error > ROUGH_HELD_OUT).then(|| {
        format!(
            "none: the model misses the counts it was fitted to by {:.0}%, too far to predict from",
            100.0 * fit.fit_rms_log_error
        )
    })
}

/// What the model cannot speak to: a limit outside `X = min(C/R, P/c, B/S)`.
fn outside_the_model(b: WorkerVerdict) -> Option<String> {
    matches!(b.verdict, Verdict::Pool | Verdict::Throttled | Verdict::Errors).then(|| {
        format!(
            "none: {} binds at {} workers, and the model (latency, client CPU, bandwidth) has no term for it",
            b.verdict.name(),
            b.workers
        )
    })
}

/// The predictions of `fit` that agree with `binding`; `best_objects_per_s` is the
/// best measured. `None` without a fit.
pub(crate) fn forecast(
    fit: Option<&ModelFit>,
    predictions: &[Prediction],
    binding: Option<WorkerVerdict>,
    best_objects_per_s: Option<f64>,
) -> Option<Forecast> {
    let fit = fit?;
    if let Some(why) = large_error(fit).or_else(|| binding.and_then(outside_the_model)) {
        return Some(Forecast {
            shown: Vec::new(),
            withheld: Some(why),
        });
    }
    let best = best_objects_per_s.unwrap_or(0.0).max(1e-9);
    let (shown, dropped): (Vec<Prediction>, Vec<Prediction>) = predictions
        .iter()
        .cloned()
        .partition(|p| binding.is_none_or(|b| agrees(b.verdict, scenario(p, fit), p.limit, p.objects_per_s / best)));
    let withheld = (!dropped.is_empty()).then(|| {
        let b = binding.expect("only a verdict drops a prediction");
        let names: Vec<&str> = dropped.iter().map(|p| p.scenario.as_str()).collect();
        format!(
            "{}not shown: the model's figure for {} disagrees with {} at {} workers",
            if shown.iter().all(|p| scenario(p, fit) == Scenario::Check) {
                "nothing beyond the measured counts; "
            } else {
                ""
            },
            names.join(" and "),
            b.verdict.name(),
            b.workers
        )
    });
    Some(Forecast { shown, withheld })
}

/// The model line's plateau part: the fitted plateau, or, when it sits under the best
/// measured, the fit's error said as such. `None` without a plateau.
pub(crate) fn plateau_words(fit: &ModelFit, best: Option<(u32, f64)>, still_rising: bool) -> Option<String> {
    let k = fit.plateau_objects_per_s?;
    match best.filter(|b| k < plateau_floor(still_rising) * b.1) {
        Some((w, x)) => Some(format!(
            "the fit's flat part, {k:.0} objects/s, is {:.0}% under the {x:.0} measured at {w} workers: the fit's error, not a ceiling",
            (100.0 * (1.0 - k / x)).max(1.0)
        )),
        None => Some(format!(
            "plateau {k:.0} objects/s ({:.3} ms per request), reached with ~{:.0} in flight",
            fit.plateau_ms_per_request.unwrap_or(0.0),
            fit.workers_to_plateau.unwrap_or(0.0)
        )),
    }
}

/// Whether the fitted plateau is one the measurements reach (not under the best).
pub(crate) fn plateau_credible(fit: &ModelFit, best: Option<(u32, f64)>) -> bool {
    fit.plateau_objects_per_s
        .is_some_and(|k| best.is_none_or(|b| k >= PLATEAU_UNDER_MEASURED * b.1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_bound_row_is_predicted_to_gain_from_cpu_only() {
        use Scenario::*;
        for v in [Verdict::ClientCpu, Verdict::MachineCpu] {
            assert!(agrees(v, MoreCpu, Limit::ClientCpu, 2.0));
            assert!(
                !agrees(v, MoreCpu, Limit::Plateau, 0.9),
                "the issue's 6 vCPUs ... (plateau)"
            );
            assert!(!agrees(v, MoreCpu, Limit::ClientCpu, 1.0));
            assert!(!agrees(v, MoreWorkers, Limit::Latency, 3.0));
            assert!(agrees(v, MoreWorkers, Limit::ClientCpu, 1.0));
        }
        assert!(!agrees(Verdict::Bandwidth, MoreCpu, Limit::ClientCpu, 3.0));
        assert!(agrees(Verdict::Latency, MoreWorkers, Limit::Latency, 3.0));
        assert!(!agrees(Verdict::Latency, MoreWorkers, Limit::Plateau, 1.0));
        assert!(!agrees(Verdict::Plateau, MoreWorkers, Limit::Latency, 2.0));
    }

    /// A fit whose flat part is 2722 objects/s (the issue's `local --tls --objects 300`).
    fn fit_with_plateau(k: f64) -> ModelFit {
        let json = serde_json::json!({
            "latency_ms_per_request": 21.7, "plateau_objects_per_s": k,
            "plateau_ms_per_request": 0.367, "client_cpu_ms_per_request": null,
            "client_cores": 2.0, "client_cpu_ceiling_objects_per_s": null,
            "bandwidth_ceiling_objects_per_s": null, "fit_rms_log_error": 0.09,
            "workers_to_plateau": 59.0, "points_fitted": 9, "held_out": null, "rough": false
        });
        serde_json::from_value(json).expect("a ModelFit")
    }

    #[test]
    fn a_plateau_the_measurements_passed_is_the_fits_error_on_a_rising_curve() {
        let fit = fit_with_plateau(2722.0);
        let best = Some((128, 2963.0));
        // Still rising at 128 workers, 2963 measured: a flat part at 2722 "reached with
        // ~59 in flight" would contradict the curve.
        let rising = plateau_words(&fit, best, true).unwrap();
        assert!(rising.starts_with("the fit's flat part, 2722"), "{rising}");
        // On a curve that flattened, 8% under the best is within the knee's 10%.
        let flat = plateau_words(&fit, best, false).unwrap();
        assert!(flat.starts_with("plateau 2722"), "{flat}");
        // Under 90% is the fit's error either way.
        let far = plateau_words(&fit, Some((128, 3100.0)), false).unwrap();
        assert!(far.starts_with("the fit's flat part"), "{far}");
    }
}

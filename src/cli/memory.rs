//! The memory sweep emulated on this machine (`--lambda-memory-mb 512,1769,3538`, or a
//! request's `memory_mb` given to `run`): the whole sweep once per size with the client
//! under that size's CPU quota (`sys::quota`, MB / 1,769 cores), every row tagged with
//! its `memory_mb` and `emulated`, and one document with the memory block. Without
//! sizes it is the plain sweep (under `--cpu-quota` when given).

use std::sync::Arc;
use std::time::Instant;

use crate::engine::{self, Observer, SweepOptions};
use crate::model::stats::round3;
use crate::model::{CpuSource, MemoryMode, MemoryStep, MemorySweepReport, Outcome, SweepResult};
use crate::plan::{Plan, MAX_CONFIGURATIONS};
use crate::s3::SweepClient;

use super::args::QuotaStep;
use super::CliError;

/// The memory block of an emulated sweep before its first size ran: no function, no
/// versions, nothing to clean up.
fn emulated_report() -> MemorySweepReport {
    MemorySweepReport {
        mode: MemoryMode::Emulated,
        function_name: None,
        original_memory_mb: None,
        steps: Vec::new(),
        versions_deleted: Vec::new(),
        memory_restored: None,
        cleanup_error: None,
        versions_left: Vec::new(),
        choices: Vec::new(),
        costs: Vec::new(),
    }
}

/// What [`sweep_steps`] swept: one result, and the requests its sessions sent (each
/// sweep sends through a session of its own, not through the client's transport).
pub(crate) struct Swept {
    pub(crate) result: SweepResult,
    /// Every request the sweeps' sessions put on the wire, warm-up and retries included.
    pub(crate) requests_sent: u64,
}

/// Runs `plan` once per quota step (none: once, without a quota) and returns one
/// result. A step whose quota cannot be set stops the sweep with the quota's error.
pub(crate) async fn sweep_steps(
    client: &SweepClient,
    plan: &Plan,
    steps: &[QuotaStep],
    options: &SweepOptions,
    observer: Arc<dyn Observer>,
) -> Result<Swept, CliError> {
    let sized: Vec<&QuotaStep> = steps.iter().filter(|s| s.memory_mb.is_some()).collect();
    // The same cap as every entry point's ([`MAX_CONFIGURATIONS`]), sizes included.
    let configurations = plan.configurations() * sized.len().max(1) as u64;
    if configurations > MAX_CONFIGURATIONS {
        return Err(CliError::TooManyConfigurations {
            per_size: plan.configurations(),
            sizes: sized.len(),
        });
    }
    if sized.is_empty() {
        let quota = steps.first().map(QuotaStep::enter).transpose()?;
        let session = client.session(plan);
        let result = engine::run(&session, plan, options, observer).await;
        drop(quota);
        let requests_sent = session.transport().counters().requests_sent;
        return Ok(Swept { result, requests_sent });
    }
    let started = Instant::now();
    let mut merged: Option<SweepResult> = None;
    let mut requests_sent = 0;
    let mut report = emulated_report();
    // A size's rows alone would replace the sizes before them in S3: a memory sweep's
    // result is written once, at the end.
    let options = &SweepOptions {
        results: None,
        ..options.clone()
    };
    for step in sized {
        let memory_mb = step.memory_mb.unwrap_or_default();
        let step_started = Instant::now();
        let quota = step.enter()?;
        let at_size = SweepOptions {
            memory_mb: Some(memory_mb),
            ..options.clone()
        };
        // After the quota: the session's lanes follow the cores it leaves.
        let session = client.session(plan);
        let mut result = engine::run(&session, plan, &at_size, observer.clone()).await;
        drop(quota);
        requests_sent += session.transport().counters().requests_sent;
        for row in &mut result.results {
            row.axes.memory_mb = Some(memory_mb);
            row.emulated = true;
        }
        report.steps.push(MemoryStep {
            memory_mb,
            cores: Some(step.cores),
            version: None,
            status: Outcome::Ok,
            error: None,
            configurations: result.results.len() as u32,
            wall_ms: round3(step_started.elapsed().as_secs_f64() * 1000.0),
        });
        match merged.as_mut() {
            None => merged = Some(result),
            Some(m) => {
                m.truncated |= result.truncated;
                m.skipped.extend(result.skipped);
                m.results.extend(result.results);
            }
        }
    }
    let mut result = merged.expect("at least one memory size ran");
    // The machine's CPU is not one figure across sizes: each row has its own.
    result.environment.usable_cores = None;
    result.environment.cpu_source = Some(CpuSource::QuotaPerMemorySize);
    result.total_wall_ms = round3(started.elapsed().as_secs_f64() * 1000.0);
    result.memory = Some(report);
    Ok(Swept { result, requests_sent })
}

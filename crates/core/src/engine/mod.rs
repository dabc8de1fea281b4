//! The sweep engine: for each bucket x worker count x repetition, keep exactly
//! `workers` GETs in flight until every object has been read once, and measure.
//!
//! The GETs of a configuration are driven by one task per core the client may use,
//! each keeping its share of the `workers` GETs in flight in one `FuturesUnordered`
//! ([`mod@run_config`]). Per request it records the wait for one of the sweep's
//! `pool_connections` slots, first byte at the wire (connection in hand to response
//! headers), the time to the last body byte from the call, and what the transport
//! measured for it: client preparation, the HTTP client's wait for a connection,
//! connects, attempts and backoff, retries by cause. Bodies are streamed to the end and
//! counted, never kept. A failed request is counted by kind and the sweep goes on. Per
//! configuration it records wall time, CPU time of the process, and the transport's
//! counters (connections opened, retries, `CreateSession` calls).
//!
//! Memory grows with the number of requests by one 32-byte event per GET of the
//! configuration running (32 MB at the 1,000,000-object limit), from which its
//! [`timeline`] is built; latencies go into hdrhistograms (one set per driver task,
//! merged at the end: [`recorder`]), keys are formatted on the fly, and bodies are
//! dropped chunk by chunk. [`run`] returns measured rows only;
//! summaries, verdicts and the model are [`crate::analysis`]'s.
//!
//! - [`mod@run_config`]: one configuration (warm-up, the workers, the row);
//! - [`hedge`]: hedged GETs (a second copy of a GET late for its first byte);
//! - [`recorder`]: histograms and the phase breakdown, one shard per driver task;
//! - [`timeline`]: each GET as an event, and the row's timeline built from them;
//! - [`requests_log`]: those events written one line per attempt (`--requests-log`);
//! - [`deadline`]: the invocation's deadline less its safety margin;
//! - [`preflight`]: the first read of every bucket (a [`BucketError`] when one cannot
//!   work);
//! - [`schedule`]: start times of side-by-side sweeps;
//! - [`order`]: the order configurations run in (ascending or interleaved rounds);
//! - [`probe`]: the bandwidth probe run before the sweep when asked for;
//! - [`listing`]: a `key_prefix` sweep's keys, listed once per bucket before it;
//! - [`results_log`]: the result written to S3 after every configuration.

pub(crate) mod deadline;
pub(crate) mod hedge;
pub mod listing;
pub(crate) mod order;
pub(crate) mod preflight;
pub(crate) mod probe;
pub(crate) mod recorder;
pub mod requests_log;
pub(crate) mod results_log;
pub(crate) mod run_config;
pub(crate) mod schedule;
pub mod timeline;

use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::model::stats::round3;
use crate::model::Axes;
use crate::model::{
    BandwidthCeiling, CeilingSource, ConfigResult, Environment, LambdaEnvironment, NetworkReport, Order, ProbeReport,
    Runner, SkippedConfig, SweepResult,
};
use crate::plan::Plan;
use crate::s3::{lanes_for, SweepClient, SweepSession};
use crate::sys::cpu::UsableCpu;
use crate::sys::usage;

pub use crate::s3::errors::BucketError;
pub use deadline::Deadline;
pub use listing::{list_keys, list_keys_within};
pub use preflight::{preflight, PREFLIGHT_TRIES};
pub use results_log::ResultsLog;
use run_config::run_config;
pub use schedule::StartSchedule;

/// Told about progress. Every method has an empty default.
pub trait Observer: Send + Sync {
    /// A configuration is about to start (after its warm-up).
    fn config_started(&self, _bucket: &str, _workers: u32, _repetition: u32, _requests: u64) {}
    /// One request finished (ok or not). Called from the request's task: keep it cheap.
    fn request_done(&self, _ok: bool) {}
    /// A configuration finished.
    fn config_finished(&self, _result: &ConfigResult) {}
    /// A configuration's GETs, as events, the attempts of those that were retried
    /// and the hedge copies sent, once its row is measured (before `config_finished`): for the request
    /// log.
    fn gets_done(
        &self,
        _row: &ConfigResult,
        _events: &[timeline::GetEvent],
        _attempts: &[timeline::AttemptEvent],
        _hedges: &[timeline::HedgeEvent],
    ) {
    }
}

/// An observer that does nothing.
pub struct Quiet;
impl Observer for Quiet {}

/// How a sweep runs, beyond the plan.
#[derive(Debug, Clone, Default)]
pub struct SweepOptions {
    /// Recorded in the environment.
    pub runner: Runner,
    /// The invocation's deadline: at [`Deadline::stop_at`] (the deadline less its
    /// safety margin) the configuration running is cut short (its finished GETs
    /// kept) and no other starts.
    pub deadline: Option<Deadline>,
    /// Lambda facts for the environment block.
    pub lambda: Option<LambdaEnvironment>,
    /// Sweeps run side by side (a fan-out's children): when configurations start, and
    /// every row gets its window and serialized histograms.
    pub schedule: Option<StartSchedule>,
    /// Where the result so far is written after every configuration ([`ResultsLog`]).
    pub results: Option<Arc<ResultsLog>>,
    /// The memory size this run is a step of (a memory sweep's, MB): every
    /// configuration's `memory_mb`, so its rows, progress and request log lines carry it.
    pub memory_mb: Option<u32>,
}

/// A slot of the sweep's pool, taken at once when one is free: only a GET that must
/// wait for one goes through `acquire`, which, like `select!`, returns pending first
/// when the task has used its scheduling budget (`run_config::drain`). The
/// drivers' GETs and the hedges take their slots here.
async fn slot(pool: &tokio::sync::Semaphore) -> tokio::sync::SemaphorePermit<'_> {
    match pool.try_acquire() {
        Ok(permit) => permit,
        Err(_) => pool.acquire().await.expect("the pool semaphore is never closed"),
    }
}

/// Runs the whole plan through `session` (made for it: [`SweepClient::session`]) and
/// returns the result document with the measured rows (the adapters then call
/// [`crate::analysis::analyse`] for summaries and diagnosis). Everything the sweep
/// sends goes through the session's transport, so sweeps of other sessions may run at
/// the same time in this process.
pub async fn run(
    session: &SweepSession,
    plan: &Plan,
    options: &SweepOptions,
    observer: Arc<dyn Observer>,
) -> SweepResult {
    let started_unix_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let run_start = Instant::now();
    let listed = listing::list_keys_within(session, plan, options.deadline).await;
    let probe = if plan.probe_bandwidth() {
        Some(probe::probe(session, plan, &plan.buckets()[0], probe::ProbeSettings::default()).await)
    } else {
        None
    };
    let mut result = SweepResult::new(
        environment(session.client(), options.runner, options.lambda.clone()),
        plan.request().clone(),
        started_unix_ms,
    );
    result.network = Some(network_report(plan, probe));
    result.listing = listing::reports(plan);
    let (results, skipped) = match listed {
        Ok(()) => run_steps(session, plan, options, &observer, (&result, run_start)).await,
        Err(err) => (Vec::new(), all_skipped(plan, &format!("the listing failed: {err}"))),
    };
    result.total_wall_ms = round3(run_start.elapsed().as_secs_f64() * 1000.0);
    result.truncated = !skipped.is_empty() || result_cut_short(&results);
    result.results = results;
    result.skipped = skipped;
    result
}

/// A run refused before it started: no row, every configuration of the plan skipped
/// for `reason` (e.g. a canary on a function a memory sweep is resizing), so the
/// result written says why nothing was measured.
pub fn refused(client: &SweepClient, plan: &Plan, options: &SweepOptions, reason: &str) -> SweepResult {
    let started_unix_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let mut result = SweepResult::new(
        environment(client, options.runner, options.lambda.clone()),
        plan.request().clone(),
        started_unix_ms,
    );
    result.skipped = all_skipped(plan, reason);
    result.truncated = true;
    result
}

/// Every configuration of the plan, skipped for `reason`.
fn all_skipped(plan: &Plan, reason: &str) -> Vec<SkippedConfig> {
    order::steps(plan)
        .into_iter()
        .map(|s| SkippedConfig {
            bucket: plan.buckets()[s.bucket].clone(),
            workers: s.workers,
            repetition: s.repetition,
            reason: reason.to_string(),
            axes: s.axes,
        })
        .collect()
}

/// Runs the configurations in the plan's order ([`order::steps`]) until the deadline;
/// returns the rows and the skipped configurations, both in plan order (bucket,
/// workers, repetition), whatever order they ran in.
async fn run_steps(
    session: &SweepSession,
    plan: &Plan,
    options: &SweepOptions,
    observer: &Arc<dyn Observer>,
    (base, run_start): (&SweepResult, Instant),
) -> (Vec<ConfigResult>, Vec<SkippedConfig>) {
    let mut results: Vec<ConfigResult> = Vec::new();
    let mut skipped = Vec::new();
    // Nothing runs past the deadline less its margin: the answer still has to go out.
    let stop_at = options.deadline.map(|d| d.stop_at());
    let mut steps = order::steps(plan);
    for step in &mut steps {
        step.axes.memory_mb = options.memory_mb;
    }
    for (index, &step) in steps.iter().enumerate() {
        let (bucket, workers, repetition) = (&plan.buckets()[step.bucket], step.workers, step.repetition);
        let skip = |why: &str| SkippedConfig {
            bucket: bucket.clone(),
            workers,
            repetition,
            reason: format!(
                "deadline: {why}, {} ms before the invocation's deadline (the safety margin)",
                options.deadline.map_or(0, |d| d.margin().as_millis())
            ),
            axes: step.axes,
        };
        if stop_at.is_some_and(|s| Instant::now() >= s) {
            skipped.push(skip("the sweep stopped"));
            continue;
        }
        let schedule = options.schedule.map(|c| c.for_configuration(index, results.is_empty()));
        let ran = run_config(session, plan, &step, schedule, stop_at, observer).await;
        match ran {
            Some(mut row) => {
                row.round = step.round;
                row.run_index = Some(index as u32);
                observer.config_finished(&row);
                results.push(row);
                if let Some(log) = &options.results {
                    let mut copy = progress_copy(plan, base, (&results, &skipped), &steps[index + 1..]);
                    copy.total_wall_ms = round3(run_start.elapsed().as_secs_f64() * 1000.0);
                    log.write(&mut copy, false).await;
                }
            }
            None => skipped.push(skip(
                "the sweep stopped during the warm-up or the wait for the shared start",
            )),
        }
    }
    in_plan_order(plan, &mut results, &mut skipped);
    (results, skipped)
}

/// Rows and skipped configurations sorted in plan order (bucket, object size, the other
/// axes in the request's order, workers, repetition).
fn in_plan_order(plan: &Plan, results: &mut [ConfigResult], skipped: &mut [SkippedConfig]) {
    let axis = plan.size_axis();
    let points = plan.axis_values().at(Axes::default()).points(0);
    let rank = |bucket: &str, axes: Axes, workers: u32, repetition: u32| {
        let at = |i: Option<usize>| i.unwrap_or(usize::MAX);
        let b = at(plan.buckets().iter().position(|x| x == bucket));
        let s = at(axis.iter().position(|&x| x == axes.object_size_bytes));
        let rest = axes.without_memory().without_size();
        let p = at(points.iter().position(|&x| x == rest));
        let w = at(plan.workers().iter().position(|&x| x == workers));
        (b, s, p, w, repetition)
    };
    results.sort_by_key(|r| rank(&r.bucket, r.axes.key(), r.workers, r.repetition));
    skipped.sort_by_key(|r| rank(&r.bucket, r.axes, r.workers, r.repetition));
}

/// The result so far, as written to S3 while the run goes on: `base` with the rows
/// finished, the skipped configurations, and the steps not run yet listed as skipped.
fn progress_copy(
    plan: &Plan,
    base: &SweepResult,
    (results, skipped): (&[ConfigResult], &[SkippedConfig]),
    not_yet: &[order::Step],
) -> SweepResult {
    let mut copy = base.clone();
    copy.results = results.to_vec();
    copy.skipped = skipped.to_vec();
    copy.skipped.extend(not_yet.iter().map(|s| SkippedConfig {
        bucket: plan.buckets()[s.bucket].clone(),
        workers: s.workers,
        repetition: s.repetition,
        reason: "not run yet when this copy was written: the run was still going".into(),
        axes: s.axes,
    }));
    copy.truncated = true;
    in_plan_order(plan, &mut copy.results, &mut copy.skipped);
    copy
}

/// The network block of a sweep: its order, the pool's idle timeout, and the probe
/// with the ceiling it found (a ceiling the user gives is added by the analysis).
pub fn network_report(plan: &Plan, probe: Option<ProbeReport>) -> NetworkReport {
    let order = plan.order();
    NetworkReport {
        order,
        order_seed: (order == Order::Interleaved).then(|| plan.seed()),
        pool_idle_timeout_ms: plan.pool_idle_timeout().as_millis() as u64,
        ceiling: probe
            .as_ref()
            .filter(|p| p.sustained_mib_per_s > 0.0)
            .map(|p| BandwidthCeiling {
                mib_per_s: p.sustained_mib_per_s,
                source: CeilingSource::Probe,
                lower_bound: p.lower_bound,
                interval_mib_per_s: None,
                revised_from_mib_per_s: None,
            }),
        probe,
    }
}

fn result_cut_short(rows: &[ConfigResult]) -> bool {
    rows.iter().any(|r| r.cut_short)
}

/// The environment block of a result produced in this process by `client`.
pub fn environment(client: &SweepClient, runner: Runner, lambda: Option<LambdaEnvironment>) -> Environment {
    let usable = UsableCpu::read();
    Environment {
        runner,
        os: std::env::consts::OS.to_string(),
        arch: std::env::consts::ARCH.to_string(),
        vcpus: usage::vcpus() as u32,
        runtime_worker_threads: lanes_for(usable.cores) as u32,
        memory_total_bytes: usage::memory_total_bytes(),
        region: client.region().to_string(),
        endpoint: client.endpoint().map(str::to_string),
        usable_cores: Some(usable.cores),
        cpu_source: Some(usable.source),
        credentials: Some(client.credentials().to_string()),
        lambda,
    }
}

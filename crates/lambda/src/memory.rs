//! A memory sweep on Lambda (request field `memory_mb`), the way AWS Lambda Power
//! Tuning does it: the coordinator takes the function's lock, then per memory size sets
//! the function's memory, publishes a version and invokes that version with the request
//! (less `memory_mb`; a `fanout` still applies within each size), tags the rows with
//! the size, and at the end deletes exactly the versions it published and restores the
//! original memory and description: on success and after any failed step alike.
//! A failed Invoke and a refused size (Lambda refuses the memory) are data: the step
//! is marked `failed` with its reason and the next size runs. Another failed
//! control-plane call stops the sweep; the rows measured so far are still returned
//! (an error naming the call and the cleanup only when no size was measured), and so
//! are they when the cleanup fails, with the failure and the versions left named in
//! the memory block. A version is invoked only once it is `Active`. The
//! sizes share the time left less a cleanup reserve, so the versions are deleted and
//! the memory restored before the coordinator's own deadline.

use std::time::{Duration, Instant};

use crate::engine::Deadline;
use crate::model::stats::round3;
use crate::model::{FromCoordinator, MemoryMode, MemoryStep, MemorySweepReport, Outcome, SweepResult};
use crate::plan::Plan;

use super::control::{ControlError, ControlPlane, Original};
use super::invoke::Invoker;
use super::settings::NO_DEADLINE_INVOKE_LIMIT;

/// Why a memory sweep returned an error instead of a result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MemorySweepError {
    /// Another sweep holds the function's lock; nothing was changed.
    #[error("{0}")]
    Concurrent(ControlError),
    /// A control-plane call failed; the sweep stopped and cleaned up.
    #[error("memory sweep stopped{}: {error}; {cleanup}", at_size(*.memory_mb))]
    Failed {
        memory_mb: Option<u32>,
        error: ControlError,
        cleanup: String,
    },
    /// The sweep ran but the function could not be put back as it was.
    #[error("memory sweep finished but the cleanup failed: {cleanup}")]
    NotRestored { cleanup: String },
}

fn at_size(memory_mb: Option<u32>) -> String {
    memory_mb.map(|m| format!(" at {m} MB")).unwrap_or_default()
}

impl MemorySweepError {
    /// The stable `errorType`: `ConcurrentMemorySweep`, `MemorySweepFailed`,
    /// `MemoryNotRestored`.
    pub fn error_type(&self) -> &'static str {
        match self {
            MemorySweepError::Concurrent(_) => "ConcurrentMemorySweep",
            MemorySweepError::Failed { .. } => "MemorySweepFailed",
            MemorySweepError::NotRestored { .. } => "MemoryNotRestored",
        }
    }
}

/// What the cleanup did: versions deleted, deletions that failed, the restore.
struct Cleanup {
    deleted: Vec<String>,
    /// Versions published and not deleted (each also named in `errors`).
    left: Vec<String>,
    errors: Vec<String>,
    restored: bool,
    original: Original,
}

impl Cleanup {
    fn describe(&self) -> String {
        let mut text = if self.deleted.is_empty() && self.left.is_empty() {
            "no version was published".to_string()
        } else if self.deleted.is_empty() {
            "deleted no version".to_string()
        } else {
            format!("deleted the versions it published ({})", self.deleted.join(", "))
        };
        if self.restored {
            text.push_str(&format!(
                ", restored {} MB and the description",
                self.original.memory_mb
            ));
        }
        if !self.errors.is_empty() {
            text.push_str(&format!("; CLEANUP FAILED: {}", self.errors.join("; ")));
        }
        if !self.left.is_empty() {
            text.push_str(&format!(
                "; versions left behind: {} (their description holds the sweep's marker; docs/memory-sweep.md says how to remove them)",
                self.left.join(", ")
            ));
        }
        text
    }
}

/// The per-size event: the request less `memory_mb`; without a fan-out it also gets a
/// finish-by time, its share of the time left, so every size fits the coordinator's
/// deadline.
fn size_event(plan: &Plan, finish_by_unix_ms: Option<u64>) -> serde_json::Value {
    let mut request = plan.request().clone();
    request.memory_mb = Vec::new();
    request.results_uri = None; // the coordinator writes the result
    request.expect_memory_mb = None; // each size runs at its own memory
    if request.fanout.is_none() && finish_by_unix_ms.is_some() {
        request.from_coordinator = Some(FromCoordinator {
            finish_by_unix_ms,
            ..FromCoordinator::default()
        });
    }
    serde_json::to_value(&request).unwrap_or(serde_json::Value::Null)
}

/// Time kept in hand before the coordinator's deadline for the cleanup: this much,
/// plus [`CLEANUP_RESERVE_PER_VERSION`] per version to delete. The sizes share only
/// what is left after it, and no size starts once only this is left.
pub const CLEANUP_RESERVE: Duration = Duration::from_secs(5);

/// Cleanup time kept per version the sweep publishes (one DeleteFunction each).
pub const CLEANUP_RESERVE_PER_VERSION: Duration = Duration::from_secs(1);

/// The cleanup reserve for `versions` versions.
fn cleanup_reserve(versions: usize) -> Duration {
    CLEANUP_RESERVE + CLEANUP_RESERVE_PER_VERSION * versions as u32
}

/// Runs the memory sweep of `plan` on `function` (unqualified) and returns the
/// measured rows of every size, tagged, with the memory block; the caller adds the
/// environment and the analysis. A refused size is a failed step and the next size
/// runs; a control-plane failure that stops the sweep still returns every row measured
/// (an error only when no size was measured); a failed cleanup is named in the
/// report beside the rows (an error only when there are no rows).
pub async fn sweep_memory(
    invoker: &Invoker,
    control: &ControlPlane,
    plan: &Plan,
    deadline: Option<Deadline>,
) -> Result<(Vec<SweepResult>, MemorySweepReport), MemorySweepError> {
    let original = take_lock(control).await?;
    tracing::info!(function = control.function(), original_memory_mb = original.memory_mb, sizes = ?plan.memory_mb(), "memory sweep: lock taken");
    let mut run = SizesRun::default();
    let sizes = plan.memory_mb();
    for (i, &memory_mb) in sizes.iter().enumerate() {
        // The time left, less the cleanup's, shared among the sizes still to run.
        let sizes_left = (sizes.len() - i) as u32;
        let reserve = cleanup_reserve(run.published.len() + sizes_left as usize);
        if let Some(d) = deadline {
            let left = d.usable_from(Instant::now());
            if left <= reserve {
                let why = format!(
                    "not run: {} ms were left before the deadline, kept for the cleanup ({} ms)",
                    left.as_millis(),
                    reserve.as_millis()
                );
                run.not_run(&sizes[i..], &why);
                break;
            }
        }
        let budget = SizeBudget {
            deadline,
            reserve,
            sizes_left,
        };
        if let Err(error) = run.size(invoker, control, plan, memory_mb, budget).await {
            run.not_run(
                &sizes[i + 1..],
                &format!("not run: the sweep stopped at {memory_mb} MB"),
            );
            run.failure = Some((memory_mb, error));
            break;
        }
    }
    let cleanup = clean_up(control, &run.published, original).await;
    tracing::info!(cleanup = %cleanup.describe(), "memory sweep: cleaned up");
    if let Some((memory_mb, error)) = run.failure.take() {
        if run.results.is_empty() {
            return Err(MemorySweepError::Failed {
                memory_mb: Some(memory_mb),
                error,
                cleanup: cleanup.describe(),
            });
        }
    }
    if !cleanup.errors.is_empty() && run.results.is_empty() {
        return Err(MemorySweepError::NotRestored {
            cleanup: cleanup.describe(),
        });
    }
    let cleanup_error = (!cleanup.errors.is_empty()).then(|| cleanup.describe());
    let report = MemorySweepReport {
        mode: MemoryMode::Lambda,
        function_name: Some(control.function().to_string()),
        original_memory_mb: Some(cleanup.original.memory_mb),
        steps: run.steps,
        versions_deleted: cleanup.deleted,
        memory_restored: Some(cleanup.restored),
        cleanup_error,
        versions_left: cleanup.left,
        choices: Vec::new(),
        costs: Vec::new(),
    };
    Ok((run.results, report))
}

/// One size's time: the coordinator's deadline less the cleanup's `reserve`, shared by
/// the `sizes_left`.
#[derive(Debug, Clone, Copy)]
struct SizeBudget {
    deadline: Option<Deadline>,
    reserve: Duration,
    sizes_left: u32,
}

impl SizeBudget {
    /// How long to wait for the size's Invoke from `now`, and the time it must finish by.
    fn limits(&self, now: Instant) -> (Duration, Option<u64>) {
        match self.deadline {
            Some(d) => {
                let share = d.usable_from(now).saturating_sub(self.reserve) / self.sizes_left;
                (
                    d.wait_for(now, share),
                    Some(crate::sys::now_unix_ms() + share.as_millis() as u64),
                )
            }
            None => (NO_DEADLINE_INVOKE_LIMIT, None),
        }
    }
}

/// Takes the function's lock and waits for it to settle; on failure, what was
/// changed is put back.
async fn take_lock(control: &ControlPlane) -> Result<Original, MemorySweepError> {
    let original = control.lock().await.map_err(|e| match e {
        e @ ControlError::Concurrent { .. } => MemorySweepError::Concurrent(e),
        error => {
            let denied = error.to_string().contains("AccessDenied");
            MemorySweepError::Failed {
                memory_mb: None,
                error,
                cleanup: if denied {
                    "nothing was changed; the role may not change the function: deploy the stack with the parameter MemorySweep=enabled (make deploy MEMORY_SWEEP=enabled)".into()
                } else {
                    "nothing was changed".into()
                },
            }
        }
    })?;
    if let Err(error) = control.wait_locked().await {
        let cleanup = clean_up(control, &[], original).await;
        return Err(MemorySweepError::Failed {
            memory_mb: None,
            error,
            cleanup: cleanup.describe(),
        });
    }
    Ok(original)
}

/// What the sizes run so far left: versions to delete, steps, rows, the failure.
#[derive(Default)]
struct SizesRun {
    published: Vec<String>,
    steps: Vec<MemoryStep>,
    results: Vec<SweepResult>,
    failure: Option<(u32, ControlError)>,
}

impl SizesRun {
    /// Sizes that were not run, each a failed step saying `why`.
    fn not_run(&mut self, sizes: &[u32], why: &str) {
        for &memory_mb in sizes {
            self.steps.push(MemoryStep {
                memory_mb,
                cores: None,
                version: None,
                status: Outcome::Failed,
                error: Some(why.to_string()),
                configurations: 0,
                wall_ms: 0.0,
            });
        }
    }

    /// One size: set the memory, publish a version, invoke it with its share of the
    /// time left (`budget`). A refused size or a failed Invoke is a `failed` step with
    /// its reason (the next size runs); another failed control-plane call is the error
    /// that stops the sweep.
    async fn size(
        &mut self,
        invoker: &Invoker,
        control: &ControlPlane,
        plan: &Plan,
        memory_mb: u32,
        budget: SizeBudget,
    ) -> Result<(), ControlError> {
        let started = Instant::now();
        let mut step = MemoryStep {
            memory_mb,
            cores: None,
            version: None,
            status: Outcome::Failed,
            error: None,
            configurations: 0,
            wall_ms: 0.0,
        };
        let version = match control.set_memory(memory_mb).await {
            Ok(revision) => control.publish(memory_mb, revision).await,
            Err(e) => Err(e),
        };
        let version = match version {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!(memory_mb, error = %e, "memory sweep: the size failed");
                step.error = Some(e.to_string());
                step.wall_ms = round3(started.elapsed().as_secs_f64() * 1000.0);
                self.steps.push(step);
                return match e {
                    ControlError::Refused { .. } => Ok(()),
                    e => Err(e),
                };
            }
        };
        self.published.push(version.clone());
        step.version = Some(version.clone());
        if let Err(e) = control.wait_active(&version).await {
            tracing::warn!(memory_mb, error = %e, "memory sweep: the version did not become Active");
            step.error = Some(e.to_string());
            step.wall_ms = round3(started.elapsed().as_secs_f64() * 1000.0);
            self.steps.push(step);
            return Ok(());
        }
        let (limit, finish_by) = budget.limits(Instant::now());
        let target = format!("{}:{version}", control.function());
        tracing::info!(memory_mb, version = %version, "memory sweep: invoking the version");
        match invoker.invoke(&target, &size_event(plan, finish_by), limit).await {
            Ok(mut result) => {
                for row in &mut result.results {
                    row.axes.memory_mb = Some(memory_mb);
                }
                step.status = Outcome::Ok;
                step.configurations = result.results.len() as u32;
                self.results.push(result);
            }
            Err(e) => {
                tracing::warn!(memory_mb, kind = %e.kind, error = %e.message, "memory sweep: the size's invocation failed");
                step.error = Some(format!("Invoke {target}: {} ({})", e.message, e.kind));
            }
        }
        step.wall_ms = round3(started.elapsed().as_secs_f64() * 1000.0);
        self.steps.push(step);
        Ok(())
    }
}

/// Deletes every version in `published` (only those) and restores `original`, each
/// call tried up to [`CLEANUP_ATTEMPTS`] times; a failure is recorded and the rest
/// still done.
async fn clean_up(control: &ControlPlane, published: &[String], original: Original) -> Cleanup {
    let mut cleanup = Cleanup {
        deleted: Vec::new(),
        left: Vec::new(),
        errors: Vec::new(),
        restored: false,
        original,
    };
    for version in published {
        match retried(|| control.delete_version(version)).await {
            Ok(()) => cleanup.deleted.push(version.clone()),
            Err(e) => {
                cleanup.errors.push(e.to_string());
                cleanup.left.push(version.clone());
            }
        }
    }
    match retried(|| control.restore(&cleanup.original)).await {
        Ok(()) => cleanup.restored = true,
        Err(e) => cleanup.errors.push(e.to_string()),
    }
    cleanup
}

/// Attempts of each cleanup call: the function must not be left changed because one
/// call failed once.
pub const CLEANUP_ATTEMPTS: u32 = 3;

/// `call` until it succeeds, at most [`CLEANUP_ATTEMPTS`] times, a second apart at most.
async fn retried<F, Fut>(mut call: F) -> Result<(), ControlError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), ControlError>>,
{
    let mut attempt = 1;
    loop {
        match call().await {
            Ok(()) => return Ok(()),
            Err(e) if attempt >= CLEANUP_ATTEMPTS => return Err(e),
            Err(e) => {
                tracing::warn!(attempt, error = %e, "memory sweep: cleanup call failed, trying again");
                tokio::time::sleep(Duration::from_millis(200 * u64::from(attempt))).await;
                attempt += 1;
            }
        }
    }
}

/// The merged answer of a memory sweep: every size's rows (tagged) in the order run,
/// what each skipped, and the memory block, on `base` (the coordinator's document).
pub fn merged(mut base: SweepResult, results: Vec<SweepResult>, report: MemorySweepReport) -> SweepResult {
    for r in results {
        base.truncated |= r.truncated;
        base.skipped.extend(r.skipped);
        base.results.extend(r.results);
    }
    base.memory = Some(report);
    base
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_size_gets_the_request_less_memory_and_a_finish_time_unless_it_fans_out() {
        let plan = Plan::from_value(serde_json::json!({
            "buckets": ["b-1"], "workers": [1, 8], "memory_mb": [512, 1024], "target_wall_ms": 500
        }))
        .unwrap();
        let event = size_event(&plan, Some(1_700_000_000_000));
        assert!(event.get("memory_mb").is_none(), "{event}");
        assert_eq!(event["from_coordinator"]["finish_by_unix_ms"], 1_700_000_000_000u64);
        assert!(
            event["from_coordinator"].get("role").is_none(),
            "a size is no child: {event}"
        );
        assert_eq!(event["workers"], serde_json::json!([1, 8]));
        assert_eq!(event["target_wall_ms"], 500);
        // The size's own invocation is a valid plan, and not a memory sweep again.
        let again = Plan::from_value(event).unwrap();
        assert!(again.memory_mb().is_empty());
        // With a fan-out the version invoked coordinates its own children; a
        // coordinator of a fan-out takes no finish time (its children get one).
        let plan = Plan::from_value(serde_json::json!({
            "buckets": ["b-1"], "memory_mb": [512], "fanout": {"invocations": 2}
        }))
        .unwrap();
        let event = size_event(&plan, Some(1_700_000_000_000));
        assert!(event.get("from_coordinator").is_none(), "{event}");
        assert_eq!(event["fanout"]["invocations"], 2);
        assert!(Plan::from_value(event).unwrap().fanout().is_some());
    }

    #[test]
    fn errors_have_stable_types_and_say_what_the_cleanup_did() {
        let call = ControlError::Call {
            call: "PublishVersion",
            function: "f".into(),
            message: "ServiceException: boom".into(),
        };
        let e = MemorySweepError::Failed {
            memory_mb: Some(512),
            error: call,
            cleanup: "deleted the versions it published (2), restored 1024 MB and the description".into(),
        };
        assert_eq!(e.error_type(), "MemorySweepFailed");
        let text = e.to_string();
        assert!(
            text.contains("at 512 MB") && text.contains("PublishVersion") && text.contains("restored 1024 MB"),
            "{text}"
        );
        let c = MemorySweepError::Concurrent(ControlError::Concurrent {
            function: "f".into(),
            marker: "[s3sweep-memory-sweep x 1]".into(),
        });
        assert_eq!(c.error_type(), "ConcurrentMemorySweep");
        assert!(c.to_string().contains("remove the marker"), "{c}");
        assert_eq!(
            MemorySweepError::NotRestored { cleanup: String::new() }.error_type(),
            "MemoryNotRestored"
        );
    }
}

//! The function's request log (request `requests_log_uri`): the CLI's request log
//! ([`crate::engine::requests_log`]: a line per GET attempt, gzipped CSV, the same
//! cap) written to a file in the function's temporary directory while the sweep runs,
//! then put in S3 at `<prefix>/<run id>.requests.csv.gz` with the results writer's
//! conditional PUT (`If-None-Match: *`: an object already there is left alone). When
//! the function has a results location (`S3SWEEP_RESULTS_URI`, the stack's results
//! prefix, the only place the template's role may write) the log must be under it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::engine::requests_log::{LogError, RequestsLog, DEFAULT_MAX_BYTES};
use crate::engine::Observer;
use crate::plan::{Plan, RequestError, ResultsUri};
use crate::s3::results::{ResultsError, ResultsWriter};
use crate::s3::SweepClient;

/// Why the log did not reach S3: it was not written whole, could not be read back, or
/// the PUT failed.
#[derive(Debug, thiserror::Error)]
pub(super) enum PutLogError {
    #[error(transparent)]
    Log(LogError),
    #[error("reading {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Put(#[from] ResultsError),
}

/// The log being written and where it goes.
pub(super) struct S3RequestsLog {
    log: Arc<RequestsLog>,
    path: PathBuf,
    writer: ResultsWriter,
}

/// True when `uri` is `within` or under it.
fn is_under(uri: &ResultsUri, within: &ResultsUri) -> bool {
    uri.bucket == within.bucket
        && (within.prefix.is_empty()
            || uri.prefix == within.prefix
            || uri.prefix.starts_with(&format!("{}/", within.prefix)))
}

impl S3RequestsLog {
    /// The log of `plan` (none without `requests_log_uri`) for run `run_id`, passing
    /// every event on to `inner`; refused when it is outside `stack`. None from a
    /// coordinator (`sweeps`: false): it sends no GET, and its children (each an
    /// invocation of its own) write their logs. A temporary
    /// file that cannot be made leaves the run without a log (said in the function's
    /// log), not without its result.
    pub(super) fn open(
        client: &SweepClient,
        plan: &Plan,
        run_id: &str,
        stack: Option<&ResultsUri>,
        sweeps: bool,
        inner: Arc<dyn Observer>,
    ) -> Result<Option<S3RequestsLog>, RequestError> {
        let Some(destination) = plan.requests_log_uri() else {
            return Ok(None);
        };
        if let Some(stack) = stack.filter(|s| !is_under(&destination, s)) {
            return Err(RequestError::single(
                "requests_log_uri",
                format!(
                    "must be under the function's results location s3://{}/{} (S3SWEEP_RESULTS_URI: its role may write only there), got s3://{}/{}",
                    stack.bucket, stack.prefix, destination.bucket, destination.prefix
                ),
            ));
        }
        if !sweeps {
            return Ok(None);
        }
        let object = destination.object_with(run_id, ".requests.csv.gz");
        let file = object.key.rsplit('/').next().unwrap_or("requests.csv.gz").to_string();
        let path = std::env::temp_dir().join(format!("s3sweep-{}-{file}", std::process::id()));
        // The function's own file, replaced by name (never written through a link).
        match RequestsLog::create(&path, DEFAULT_MAX_BYTES, inner, true) {
            Ok(log) => Ok(Some(S3RequestsLog {
                log: Arc::new(log),
                path,
                writer: ResultsWriter::at(client, object),
            })),
            Err(e) => {
                tracing::warn!(error = %e, "no request log: its temporary file cannot be made");
                Ok(None)
            }
        }
    }

    /// The observer the sweep tells.
    pub(super) fn observer(&self) -> Arc<dyn Observer> {
        self.log.clone()
    }

    /// Closes the file, puts it in S3 within `limit` and removes it; the closing
    /// line, or what failed.
    pub(super) async fn finish(self, limit: Duration) -> Result<String, PutLogError> {
        let tally = self.log.finish().map_err(PutLogError::Log);
        let bytes = std::fs::read(&self.path).map_err(|source| PutLogError::Read {
            path: self.path.clone(),
            source,
        });
        let _ = std::fs::remove_file(&self.path);
        let (tally, bytes) = (tally?, bytes?);
        self.writer.put_bytes(bytes, "application/gzip", limit).await?;
        let summary = self.log.summary(&tally);
        Ok(summary.replace(&self.path.display().to_string(), &self.writer.uri()))
    }
}

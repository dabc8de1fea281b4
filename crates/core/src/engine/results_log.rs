//! The result kept in S3 while it is measured: after every configuration the engine
//! writes the whole document so far ([`ResultsLog::write`]: rows finished, the
//! configurations not run yet listed as skipped, `results_writes.complete` false), and
//! the adapter writes the finished, analysed and untrimmed result once at the end
//! ([`ResultsLog::finish`]). Every write replaces the same object, so a run killed
//! hard keeps every row finished before its last write. A failed write is counted in
//! the result's `results_writes`, whose `status` turns `failed` (the answer says the
//! result was not kept; `s3sweep run` then exits non-zero, and the metrics line counts
//! it), never an error that stops the run.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::model::{ResultsWrites, SweepResult};
use crate::s3::results::{ResultsError, ResultsWriter, MAX_WRITE_TIME};

use super::Deadline;

/// One run's destination and the tally of its writes.
#[derive(Debug)]
pub struct ResultsLog {
    writer: ResultsWriter,
    writes: Mutex<ResultsWrites>,
    /// No write runs past this: the invocation's deadline less half its margin (the
    /// other half is the answer's).
    limit_at: Option<Instant>,
}

impl ResultsLog {
    /// A log writing through `writer`, within `deadline` when there is one.
    pub fn new(writer: ResultsWriter, deadline: Option<Deadline>) -> Self {
        ResultsLog {
            writer,
            writes: Mutex::new(ResultsWrites::default()),
            limit_at: deadline.map(|d| d.at().checked_sub(d.margin() / 2).unwrap_or_else(Instant::now)),
        }
    }

    /// The object written, `s3://bucket/key`.
    pub fn uri(&self) -> String {
        self.writer.uri()
    }

    /// The tally so far.
    pub fn writes(&self) -> ResultsWrites {
        self.writes.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn time_left(&self) -> Duration {
        self.limit_at
            .map_or(MAX_WRITE_TIME, |at| at.saturating_duration_since(Instant::now()))
    }

    /// Stamps `result` with the object's URI and the tally so far (`complete` as
    /// given), writes it, and counts the write.
    pub async fn write(&self, result: &mut SweepResult, complete: bool) {
        result.results_uri = Some(self.uri());
        result.results_writes = Some(ResultsWrites {
            complete,
            ..self.writes()
        });
        let outcome = self.writer.put(result, self.time_left()).await;
        self.count("the result", outcome);
    }

    /// Counts one write's `outcome` in the tally, warning when `what` failed.
    fn count(&self, what: &str, outcome: Result<(), ResultsError>) {
        if let Err(e) = &outcome {
            tracing::warn!(error = %e, "{what} could not be written to S3");
        }
        self.writes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .add(outcome.map_err(|e| e.to_string()));
    }

    /// Writes `body` beside the result (`runs/ID.json` -> `runs/ID.EXTENSION`), as the
    /// result is written (conditional PUT, within the time left), counts the write and
    /// stamps `result` with the tally.
    pub async fn put_beside(&self, result: &mut SweepResult, extension: &str, body: Vec<u8>, content_type: &str) {
        let writer = self.writer.beside(extension);
        let outcome = writer.put_bytes(body, content_type, self.time_left()).await;
        self.count("the page", outcome);
        result.results_writes = Some(ResultsWrites {
            complete: true,
            ..self.writes()
        });
    }

    /// The end of a run: writes the finished `result` (before any trimming), then
    /// stamps it with the tally including that write (the answer's copy).
    pub async fn finish(&self, result: &mut SweepResult) {
        self.write(result, true).await;
        result.results_writes = Some(ResultsWrites {
            complete: true,
            ..self.writes()
        });
    }
}

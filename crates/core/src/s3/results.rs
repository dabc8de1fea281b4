//! Results kept in S3: [`ResultsWriter`] writes a whole result document to one object
//! (PutObject, replacing the previous copy of the same run: nothing else is touched,
//! nothing is ever deleted). Its first PUT is conditional (`If-None-Match: *`: an
//! object already at the key, someone else's, answers 412 and is left alone); each
//! later one replaces only the copy it wrote (`If-Match` on the ETag it got back). And [`read_object`] reads one back for `report`,
//! `compare` and `history`, bounded in bytes and in time: the whole read, request to
//! last byte, within [`read_deadline`] (a server sending a body at a byte a second
//! is an error, not a hang). A failed write is returned as a message for the caller
//! to record.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_sdk_s3::primitives::ByteStream;

use crate::model::SweepResult;
use crate::plan::{ObjectUri, ResultsUri};

use super::errors::classify;
use super::{RequestSettings, SweepClient};

/// Longest one write may take when the caller gives no earlier limit.
pub const MAX_WRITE_TIME: Duration = Duration::from_secs(30);
/// Longest one read of a result object, or one listing of results, may take from the
/// request to its last byte: 64 MiB at 1 MiB/s.
pub const READ_DEADLINE: Duration = Duration::from_secs(64);

/// Test hook, in debug builds only (the tests'; never in a release build): with
/// `S3SWEEP_TEST_READ_DEADLINE_MS=N` set, [`read_deadline`] is N ms, so a test of a
/// stalled body ends in seconds.
#[cfg(debug_assertions)]
const READ_DEADLINE_ENV: &str = "S3SWEEP_TEST_READ_DEADLINE_MS";

/// [`READ_DEADLINE`] (or, in a debug build, the test hook's value).
pub fn read_deadline() -> Duration {
    #[cfg(debug_assertions)]
    if let Some(ms) = std::env::var(READ_DEADLINE_ENV).ok().and_then(|v| v.parse().ok()) {
        return Duration::from_millis(ms);
    }
    READ_DEADLINE
}

/// The error of a read that ran past its deadline.
fn out_of_time(what: &dyn std::fmt::Display, deadline: Duration, got_bytes: usize) -> String {
    format!(
        "reading {what}: not read whole within {:.1} s ({got_bytes} bytes came): the server sends too slowly or stalled; s3sweep gives a read {:.1} s from request to last byte",
        deadline.as_secs_f64(),
        deadline.as_secs_f64()
    )
}

/// Writes one run's result to `<prefix>/<run_id>.json` in the destination's bucket.
#[derive(Debug, Clone)]
pub struct ResultsWriter {
    s3: aws_sdk_s3::Client,
    object: ObjectUri,
    /// What this writer holds at the key: nothing yet, or the ETag of its last write
    /// (`None` inside: written, the store sent no ETag). Shared by clones.
    written: Arc<Mutex<Option<Option<String>>>>,
}

impl ResultsWriter {
    /// A writer of run `run_id`'s result to `destination`, through `client` (its
    /// endpoint and credentials; 3 attempts).
    pub fn new(client: &SweepClient, destination: &ResultsUri, run_id: &str) -> Self {
        Self::at(client, destination.object(run_id))
    }

    /// A writer of `object` (the function's request log: [`Self::put_bytes`]).
    pub fn at(client: &SweepClient, object: ObjectUri) -> Self {
        ResultsWriter {
            s3: client.s3(RequestSettings::maintenance(Duration::from_secs(20))),
            object,
            written: Arc::default(),
        }
    }

    /// The object written, `s3://bucket/key`.
    pub fn uri(&self) -> String {
        self.object.to_string()
    }

    /// A writer of the object beside this one with `extension` in place of its own
    /// (`runs/ID.json` -> `runs/ID.html`), nothing written there yet.
    pub fn beside(&self, extension: &str) -> ResultsWriter {
        ResultsWriter {
            s3: self.s3.clone(),
            object: self.object.with_extension(extension),
            written: Arc::default(),
        }
    }

    /// Writes `result` as JSON within `limit` (at most [`MAX_WRITE_TIME`]). The error
    /// is a message naming the object and what failed.
    pub async fn put(&self, result: &SweepResult, limit: Duration) -> Result<(), String> {
        let body = serde_json::to_vec(result).map_err(|e| format!("serializing the result: {e}"))?;
        self.put_bytes(body, "application/json", limit).await
    }

    /// Writes `body` of `content_type`, as [`Self::put`] does (conditional PUTs).
    pub async fn put_bytes(&self, body: Vec<u8>, content_type: &str, limit: Duration) -> Result<(), String> {
        let len = body.len() as i64;
        let held = self.written.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let req = self
            .s3
            .put_object()
            .bucket(&self.object.bucket)
            .key(&self.object.key)
            .content_type(content_type)
            .content_length(len)
            .body(ByteStream::from(body));
        let req = match &held {
            None => req.if_none_match("*"),
            Some(etag) => req.set_if_match(etag.clone()),
        };
        match tokio::time::timeout(limit.min(MAX_WRITE_TIME), req.send()).await {
            Ok(Ok(out)) => {
                *self.written.lock().unwrap_or_else(|e| e.into_inner()) = Some(out.e_tag().map(str::to_string));
                Ok(())
            }
            Ok(Err(e)) if held.is_none() && e.raw_response().is_some_and(|r| r.status().as_u16() == 412) => {
                Err(format!(
                    "writing {}: an object is there already, not written by this run: left alone",
                    self.object
                ))
            }
            Ok(Err(e)) => {
                let failure = classify(&e);
                Err(format!(
                    "writing {}: {} ({})",
                    self.object,
                    failure.message,
                    failure.kind.name()
                ))
            }
            Err(_) => Err(format!(
                "writing {}: no answer within {} ms",
                self.object,
                limit.min(MAX_WRITE_TIME).as_millis()
            )),
        }
    }
}

/// Reads the object `uri` through `client`, refusing one over `max_bytes`: from its
/// `Content-Length` before the body is read, else as soon as the body streamed in
/// passes it (a chunked body has no length; it is never collected whole first); and
/// one not read whole within [`read_deadline`].
pub async fn read_object(client: &SweepClient, uri: &ObjectUri, max_bytes: u64) -> Result<Vec<u8>, String> {
    let deadline = read_deadline();
    let until = tokio::time::Instant::now() + deadline;
    let s3 = client.s3(RequestSettings::maintenance(deadline.min(Duration::from_secs(60))));
    let send = s3.get_object().bucket(&uri.bucket).key(&uri.key).send();
    let out = tokio::time::timeout_at(until, send)
        .await
        .map_err(|_| out_of_time(uri, deadline, 0))?
        .map_err(|e| {
            let failure = classify(&e);
            format!("reading {uri}: {} ({})", failure.message, failure.kind.name())
        })?;
    if let Some(len) = out.content_length().filter(|&l| l as u64 > max_bytes) {
        return Err(format!("{uri} is {len} bytes; a result is at most {max_bytes}"));
    }
    let mut body = out.body;
    let mut bytes = Vec::new();
    loop {
        let next = tokio::time::timeout_at(until, body.try_next())
            .await
            .map_err(|_| out_of_time(uri, deadline, bytes.len()))?;
        let Some(chunk) = next.map_err(|e| format!("reading {uri}: {e}"))? else {
            break;
        };
        if (bytes.len() + chunk.len()) as u64 > max_bytes {
            return Err(format!("{uri} is over {max_bytes} bytes; a result is at most that"));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

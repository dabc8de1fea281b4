//! Results kept in S3: [`ResultsWriter`] writes a whole result document to one object
//! (PutObject, replacing the previous copy of the same run: nothing else is touched,
//! nothing is ever deleted). Its first PUT is conditional (`If-None-Match: *`: an
//! object already at the key, someone else's, answers 412 and is left alone); each
//! later one replaces only the copy it wrote (`If-Match` on the ETag it got back). And [`read_object`] reads one back for `report`,
//! `compare` and `history`, bounded in bytes and in time: the whole read, request to
//! last byte, within [`read_deadline`] (a server sending a body at a byte a second
//! is an error, not a hang). A failed write or read is a [`ResultsError`] naming the
//! object, for the caller to record or show.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_s3::primitives::ByteStream;
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;

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

/// Why a result could not be written to S3 or read back.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    #[error("serializing the result: {0}")]
    Serialize(#[from] serde_json::Error),
    #[error("writing {object}: an object is there already, not written by this run: left alone")]
    Taken { object: ObjectUri },
    /// The request failed: S3's or the connection's message and its error kind's name.
    #[error("{} {object}: {message} ({kind})", if *.writing { "writing" } else { "reading" })]
    Failed {
        writing: bool,
        object: ObjectUri,
        message: String,
        kind: &'static str,
    },
    #[error("writing {object}: no answer within {} ms", .limit.as_millis())]
    WriteTimedOut { object: ObjectUri, limit: Duration },
    #[error(
        "reading {object}: not read whole within {secs:.1} s ({got_bytes} bytes came): the server sends too slowly or stalled; s3sweep gives a read {secs:.1} s from request to last byte",
        secs = .deadline.as_secs_f64()
    )]
    ReadTimedOut {
        object: ObjectUri,
        deadline: Duration,
        got_bytes: usize,
    },
    #[error("{object} is {length_bytes} bytes; a result is at most {max_bytes}")]
    TooLong {
        object: ObjectUri,
        length_bytes: i64,
        max_bytes: u64,
    },
    #[error("{object} is over {max_bytes} bytes; a result is at most that")]
    OverLimit { object: ObjectUri, max_bytes: u64 },
    #[error("reading {object}: {message}")]
    Body { object: ObjectUri, message: String },
}

impl ResultsError {
    fn failed<E>(writing: bool, object: &ObjectUri, e: &SdkError<E, HttpResponse>) -> Self
    where
        E: ProvideErrorMetadata + std::error::Error + 'static,
    {
        let failure = classify(e);
        ResultsError::Failed {
            writing,
            object: object.clone(),
            message: failure.message,
            kind: failure.kind.name(),
        }
    }
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
    /// names the object and what failed.
    pub async fn put(&self, result: &SweepResult, limit: Duration) -> Result<(), ResultsError> {
        let body = serde_json::to_vec(result)?;
        self.put_bytes(body, "application/json", limit).await
    }

    /// Writes `body` of `content_type`, as [`Self::put`] does (conditional PUTs).
    pub async fn put_bytes(&self, body: Vec<u8>, content_type: &str, limit: Duration) -> Result<(), ResultsError> {
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
                Err(ResultsError::Taken {
                    object: self.object.clone(),
                })
            }
            Ok(Err(e)) => Err(ResultsError::failed(true, &self.object, &e)),
            Err(_) => Err(ResultsError::WriteTimedOut {
                object: self.object.clone(),
                limit: limit.min(MAX_WRITE_TIME),
            }),
        }
    }
}

/// Reads the object `uri` through `client`, refusing one over `max_bytes`: from its
/// `Content-Length` before the body is read, else as soon as the body streamed in
/// passes it (a chunked body has no length; it is never collected whole first); and
/// one not read whole within [`read_deadline`].
pub async fn read_object(client: &SweepClient, uri: &ObjectUri, max_bytes: u64) -> Result<Vec<u8>, ResultsError> {
    let deadline = read_deadline();
    let out_of_time = |got_bytes| ResultsError::ReadTimedOut {
        object: uri.clone(),
        deadline,
        got_bytes,
    };
    let until = tokio::time::Instant::now() + deadline;
    let s3 = client.s3(RequestSettings::maintenance(deadline.min(Duration::from_secs(60))));
    let send = s3.get_object().bucket(&uri.bucket).key(&uri.key).send();
    let out = tokio::time::timeout_at(until, send)
        .await
        .map_err(|_| out_of_time(0))?
        .map_err(|e| ResultsError::failed(false, uri, &e))?;
    if let Some(length_bytes) = out.content_length().filter(|&l| l as u64 > max_bytes) {
        return Err(ResultsError::TooLong {
            object: uri.clone(),
            length_bytes,
            max_bytes,
        });
    }
    let mut body = out.body;
    let mut bytes = Vec::new();
    loop {
        let next = tokio::time::timeout_at(until, body.try_next())
            .await
            .map_err(|_| out_of_time(bytes.len()))?;
        let Some(chunk) = next.map_err(|e| ResultsError::Body {
            object: uri.clone(),
            message: e.to_string(),
        })?
        else {
            break;
        };
        if (bytes.len() + chunk.len()) as u64 > max_bytes {
            return Err(ResultsError::OverLimit {
                object: uri.clone(),
                max_bytes,
            });
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

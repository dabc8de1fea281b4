//! Sorting failed requests into [`ErrorKind`]s with a one-line message: SDK errors by
//! their HTTP status and S3 error code (a failed TLS handshake or `CreateSession` by
//! the error underneath), body errors by what the stream reported.

use std::fmt;

use aws_sdk_s3::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_s3::operation::get_object::GetObjectError;
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;

use crate::model::ErrorKind;
use crate::transport::TlsHandshakeError;

/// A `CreateSession` that failed: the bucket, the kind of failure and the message.
/// The GET that needed the session fails with this as its source.
#[derive(Debug)]
pub struct CreateSessionFailed {
    pub bucket: String,
    pub kind: ErrorKind,
    pub message: String,
}

impl fmt::Display for CreateSessionFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CreateSession (ReadOnly) on {} failed: {}",
            self.bucket, self.message
        )
    }
}
impl std::error::Error for CreateSessionFailed {}

/// Sorts a GET's SDK error into a kind, with a one-line message.
pub fn classify_sdk_error(err: &SdkError<GetObjectError, HttpResponse>) -> (ErrorKind, String) {
    classify(err)
}

/// Sorts any operation's SDK error into a kind, with a one-line message.
pub(crate) fn classify<E>(err: &SdkError<E, HttpResponse>) -> (ErrorKind, String)
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
{
    // The SDK's chain around these is long; their own message says it all.
    if let Some(tls) = find_source::<TlsHandshakeError>(err) {
        return (ErrorKind::Connection, one_line(&tls.to_string()));
    }
    if let Some(session) = find_source::<CreateSessionFailed>(err) {
        return (session.kind, one_line(&session.to_string()));
    }
    let message = one_line(&DisplayErrorContext(err).to_string());
    let kind = match err {
        SdkError::TimeoutError(_) => ErrorKind::Timeout,
        SdkError::DispatchFailure(f) => {
            if f.is_timeout() {
                ErrorKind::Timeout
            } else if f.is_io() {
                ErrorKind::Connection
            } else {
                ErrorKind::Other
            }
        }
        SdkError::ServiceError(e) => {
            let code = e.err().code().unwrap_or("");
            kind_of_status(e.raw().status().as_u16(), code)
        }
        SdkError::ResponseError(e) => kind_of_status(e.raw().status().as_u16(), ""),
        _ => ErrorKind::Other,
    };
    (kind, message)
}

/// The first error of type `E` in `err`'s source chain.
fn find_source<'a, E: std::error::Error + 'static>(err: &'a (dyn std::error::Error + 'static)) -> Option<&'a E> {
    let mut next = Some(err);
    while let Some(e) = next {
        if let Some(found) = e.downcast_ref::<E>() {
            return Some(found);
        }
        next = e.source();
    }
    None
}

pub fn kind_of_status(status: u16, code: &str) -> ErrorKind {
    match (status, code) {
        (_, "ExpiredToken") | (_, "InvalidToken") => ErrorKind::Session,
        (_, "SlowDown") | (429, _) | (503, _) => ErrorKind::Throttled,
        (_, "NoSuchKey") | (_, "NoSuchBucket") | (404, _) => ErrorKind::NotFound,
        (_, "AccessDenied") | (403, _) => ErrorKind::AccessDenied,
        (500..=599, _) => ErrorKind::ServerError,
        _ => ErrorKind::Other,
    }
}

pub fn classify_body_error(err: &aws_smithy_types::byte_stream::error::Error) -> (ErrorKind, String) {
    let message = one_line(&DisplayErrorContext(err).to_string());
    let lower = message.to_ascii_lowercase();
    let kind = if lower.contains("timed out") || lower.contains("timeout") {
        ErrorKind::Timeout
    } else {
        // Resets, early EOF and short bodies all surface here as I/O failures.
        ErrorKind::Connection
    };
    (kind, message)
}

pub fn one_line(s: &str) -> String {
    let s: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if s.len() > 300 {
        let mut end = 300;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}...", &s[..end])
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_kinds() {
        assert_eq!(kind_of_status(404, "NoSuchKey"), ErrorKind::NotFound);
        assert_eq!(kind_of_status(403, ""), ErrorKind::AccessDenied);
        assert_eq!(kind_of_status(503, "SlowDown"), ErrorKind::Throttled);
        assert_eq!(kind_of_status(429, ""), ErrorKind::Throttled);
        assert_eq!(kind_of_status(500, "InternalError"), ErrorKind::ServerError);
        assert_eq!(kind_of_status(400, "Weird"), ErrorKind::Other);
        assert_eq!(kind_of_status(400, "ExpiredToken"), ErrorKind::Session);
        assert_eq!(kind_of_status(400, "InvalidToken"), ErrorKind::Session);
    }

    #[test]
    fn one_line_folds_and_cuts() {
        assert_eq!(one_line("a\n  b"), "a b");
        let long = "x".repeat(400);
        assert_eq!(one_line(&long).len(), 303);
    }
}

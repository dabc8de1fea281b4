//! Sorting failed requests into [`ErrorKind`]s with a one-line message: SDK errors by
//! their HTTP status and S3 error code, body errors by what the stream reported.

use aws_sdk_s3::error::{DisplayErrorContext, SdkError};
use aws_sdk_s3::operation::get_object::GetObjectError;
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;

use crate::model::ErrorKind;

/// Sorts an SDK error into a kind, with a one-line message.
pub fn classify_sdk_error(err: &SdkError<GetObjectError, HttpResponse>) -> (ErrorKind, String) {
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
            let code = aws_sdk_s3::error::ProvideErrorMetadata::code(e.err()).unwrap_or("");
            kind_of_status(e.raw().status().as_u16(), code)
        }
        SdkError::ResponseError(e) => kind_of_status(e.raw().status().as_u16(), ""),
        _ => ErrorKind::Other,
    };
    (kind, message)
}

pub fn kind_of_status(status: u16, code: &str) -> ErrorKind {
    match (status, code) {
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
    }

    #[test]
    fn one_line_folds_and_cuts() {
        assert_eq!(one_line("a\n  b"), "a b");
        let long = "x".repeat(400);
        assert_eq!(one_line(&long).len(), 303);
    }
}

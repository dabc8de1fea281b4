//! Failed S3 calls, sorted twice: into [`ErrorKind`]s with a one-line message (a
//! [`Failure`], what the sweep counts and samples), and into a [`BucketError`] that
//! says what failed and what to do (what the preflight, `seed`, `clean` and the CLI
//! print). Kinds come from S3's error code and the HTTP status
//! ([`ErrorKind::of_http_status`], shared with the transport), and from the types in an
//! error's source chain (a TLS handshake, a `CreateSession`, missing credentials, an
//! I/O timeout), never from message text. Messages are built from the errors'
//! `Display` chains and S3's error code: never from the SDK's `Debug` output, which
//! goes to the debug log only.

use std::error::Error as StdError;
use std::fmt;

use aws_credential_types::provider::error::CredentialsError;
use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;

use crate::model::ErrorKind;
use crate::transport::TlsHandshakeError;

/// A `CreateSession` that failed: the bucket, the kind of failure and the message.
/// The GET that needed the session fails with this as its source.
#[derive(Debug)]
pub(crate) struct CreateSessionFailed {
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

/// One failed call: its kind, S3's error code when the server sent one, the whole
/// cause on one line, and the innermost cause alone (`Connection refused (os error
/// 111)`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub kind: ErrorKind,
    /// `NoSuchBucket`, `AccessDenied`, `SignatureDoesNotMatch`, ...
    pub code: Option<String>,
    /// One line: `NoSuchBucket: The specified bucket does not exist (HTTP 404)`, or the
    /// `Display` chain of a failure without a response.
    pub message: String,
    /// The innermost cause of a failure without a response (the message otherwise).
    pub cause: String,
    /// What failed before a request could get an answer, when the error's type says.
    pub origin: Origin,
}

/// What a failure was, beyond its kind, as the types in its source chain say.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Origin {
    /// A request that failed on its way or was answered with an error.
    #[default]
    Request,
    /// The credentials provider found no credentials (or failed to load them).
    NoCredentials,
    /// The TLS handshake failed (usually: the endpoint's certificate is not trusted).
    TlsHandshake,
}

impl Failure {
    /// A failure with no error code and a message of our own.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        let message = message.into();
        Failure {
            kind,
            code: None,
            cause: message.clone(),
            message,
            origin: Origin::Request,
        }
    }
}

/// Sorts an SDK error of any S3 operation into a [`Failure`]. The full `Debug` form
/// goes to the debug log (`-v`, `RUST_LOG=debug`), not into the message.
pub fn classify<E>(err: &SdkError<E, HttpResponse>) -> Failure
where
    E: ProvideErrorMetadata + StdError + 'static,
{
    tracing::debug!(error = ?err, "S3 call failed");
    // The SDK's chain around these is long; their own message says it all.
    if let Some(tls) = find_source::<TlsHandshakeError>(err) {
        return Failure {
            origin: Origin::TlsHandshake,
            ..Failure::new(ErrorKind::Connection, one_line(&tls.to_string()))
        };
    }
    if let Some(session) = find_source::<CreateSessionFailed>(err) {
        return Failure::new(session.kind, one_line(&session.to_string()));
    }
    if find_source::<CredentialsError>(err).is_some() {
        return Failure {
            origin: Origin::NoCredentials,
            ..unanswered(ErrorKind::Other, err)
        };
    }
    match err {
        SdkError::ServiceError(e) => {
            let status = e.raw().status().as_u16();
            let code = e.err().code().map(str::to_string);
            let text = e.err().message().unwrap_or("").trim();
            match code {
                Some(code) => answered(status, Some(code), text),
                None => answered_as(status, None, &e.err().to_string(), text),
            }
        }
        SdkError::ResponseError(e) => {
            let status = e.raw().status().as_u16();
            let message = one_line(&format!("{} (HTTP {status})", chain(err)));
            Failure {
                kind: kind_of_status(status, ""),
                code: None,
                cause: innermost(err),
                message,
                origin: Origin::Request,
            }
        }
        SdkError::TimeoutError(_) => unanswered(ErrorKind::Timeout, err),
        SdkError::DispatchFailure(f) if f.is_timeout() => unanswered(ErrorKind::Timeout, err),
        SdkError::DispatchFailure(f) if f.is_io() => unanswered(ErrorKind::Connection, err),
        _ => unanswered(ErrorKind::Other, err),
    }
}

/// An error answer: its kind by S3's code and the status, the message
/// `CODE: TEXT (HTTP STATUS)`. The SDK path and the lean client share it.
pub(crate) fn answered(status: u16, code: Option<String>, text: &str) -> Failure {
    let head = code.clone().unwrap_or_else(|| format!("HTTP {status}"));
    answered_as(status, code, &head, text)
}

fn answered_as(status: u16, code: Option<String>, head: &str, text: &str) -> Failure {
    let message = if text.is_empty() {
        one_line(&format!("{head} (HTTP {status})"))
    } else {
        one_line(&format!("{head}: {text} (HTTP {status})"))
    };
    Failure {
        kind: kind_of_status(status, code.as_deref().unwrap_or("")),
        code,
        cause: message.clone(),
        message,
        origin: Origin::Request,
    }
}

/// Sorts a request that got no answer from the transport (the lean client's), as
/// [`classify`] sorts the SDK's dispatch failures: a TLS handshake, a timeout, the
/// connection, or something else.
pub(crate) fn classify_connector_error(err: &aws_smithy_runtime_api::client::result::ConnectorError) -> Failure {
    tracing::debug!(error = ?err, "request failed");
    if let Some(tls) = find_source::<TlsHandshakeError>(err) {
        return Failure {
            origin: Origin::TlsHandshake,
            ..Failure::new(ErrorKind::Connection, one_line(&tls.to_string()))
        };
    }
    if err.is_timeout() {
        unanswered(ErrorKind::Timeout, err)
    } else if err.is_io() {
        unanswered(ErrorKind::Connection, err)
    } else {
        unanswered(ErrorKind::Other, err)
    }
}

/// A failure without an answer: the message is the error's chain, the cause its
/// innermost source.
fn unanswered(kind: ErrorKind, err: &(dyn StdError + 'static)) -> Failure {
    Failure {
        kind,
        code: None,
        message: one_line(&chain(err)),
        cause: innermost(err),
        origin: Origin::Request,
    }
}

/// Sorts a failed GET into a kind, with a one-line message.
pub fn classify_sdk_error(err: &SdkError<aws_sdk_s3::operation::get_object::GetObjectError, HttpResponse>) -> Failure {
    classify(err)
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

/// The kind of an answered failure: by S3's error code when it names one, else by
/// the HTTP status ([`ErrorKind::of_http_status`]).
pub(crate) fn kind_of_status(status: u16, code: &str) -> ErrorKind {
    match code {
        "ExpiredToken" | "InvalidToken" => ErrorKind::Session,
        "SlowDown" => ErrorKind::Throttled,
        "NoSuchKey" | "NoSuchBucket" => ErrorKind::NotFound,
        "AccessDenied" => ErrorKind::AccessDenied,
        _ => ErrorKind::of_http_status(status).unwrap_or(ErrorKind::Other),
    }
}

/// True when a type in `err`'s source chain says it timed out (an I/O timeout, hyper's
/// timeout, tokio's elapsed timer).
fn timed_out(err: &(dyn StdError + 'static)) -> bool {
    let mut next = Some(err);
    while let Some(e) = next {
        if e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut)
            || e.downcast_ref::<hyper::Error>().is_some_and(hyper::Error::is_timeout)
            || e.is::<tokio::time::error::Elapsed>()
        {
            return true;
        }
        next = e.source();
    }
    false
}

/// Sorts a failure while reading a body: a timeout, or (resets, early EOF and short
/// bodies all surface here as I/O failures) the connection.
pub(crate) fn classify_body_error(err: &aws_smithy_types::byte_stream::error::Error) -> Failure {
    classify_io_body_error(err)
}

/// Sorts a failure while reading a body frame (the lean client's): as
/// [`classify_body_error`], a timeout or the connection.
pub(crate) fn classify_io_body_error(err: &(dyn StdError + Send + Sync + 'static)) -> Failure {
    tracing::debug!(error = ?err, "reading a body failed");
    Failure {
        kind: if timed_out(err) {
            ErrorKind::Timeout
        } else {
            ErrorKind::Connection
        },
        code: None,
        cause: innermost(err),
        message: one_line(&chain(err)),
        origin: Origin::Request,
    }
}

/// The `Display` of an error and of each of its sources, joined with `: `; a source
/// whose text the previous one already contains is left out.
pub fn chain(err: &(dyn StdError + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next = Some(err);
    while let Some(e) = next {
        let text = e.to_string();
        if !text.is_empty() && !parts.last().is_some_and(|p| p.contains(&text)) {
            parts.push(text);
        }
        next = e.source();
    }
    parts.join(": ")
}

/// The `Display` of the innermost source.
fn innermost(err: &(dyn StdError + 'static)) -> String {
    let mut e = err;
    while let Some(s) = e.source() {
        e = s;
    }
    one_line(&e.to_string())
}

pub(crate) fn one_line(s: &str) -> String {
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

/// What a call was doing when it failed: for the message, and the permission it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// GET (the preflight, the sweep).
    Read,
    /// HEAD then PUT (`seed`).
    Write,
    /// DeleteObjects (`clean`).
    Delete,
    /// CreateBucket (`seed --create-bucket`).
    CreateBucket,
    /// ListObjectsV2 (a sweep's `key_prefix`).
    List,
}

impl Action {
    /// `reading`, `writing`, `deleting`, `creating`.
    pub fn doing(self) -> &'static str {
        match self {
            Action::Read => "reading",
            Action::Write => "writing",
            Action::Delete => "deleting",
            Action::CreateBucket => "creating",
            Action::List => "listing",
        }
    }

    /// The IAM permission the call needs.
    fn permission(self) -> &'static str {
        match self {
            Action::Read => "s3:GetObject on the bucket's objects (and s3express:CreateSession for a directory bucket)",
            Action::Write => "s3:PutObject and s3:GetObject (seed checks each key before writing it)",
            Action::Delete => "s3:DeleteObject on the manifest's keys",
            Action::CreateBucket => "s3:CreateBucket",
            Action::List => "s3:ListBucket on the bucket (to list the keys under key_prefix)",
        }
    }
}

/// S3 error codes that mean "these credentials", not "this permission".
const CREDENTIAL_CODES: [&str; 6] = [
    "SignatureDoesNotMatch",
    "InvalidAccessKeyId",
    // s3s (the embedded server) for an access key it does not know.
    "NotSignedUp",
    "InvalidToken",
    "ExpiredToken",
    "InvalidClientTokenId",
];

/// A call to a bucket failed in a way every later call would too: what failed (the
/// kind, the bucket or key, the endpoint) and what to do about it. The preflight
/// returns it; `seed` and `clean` too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BucketError {
    NoCredentials {
        detail: String,
    },
    BucketNotFound {
        action: Action,
        bucket: String,
        endpoint: String,
    },
    AccessDenied {
        action: Action,
        bucket: String,
        key: String,
        endpoint: String,
        /// S3's error code (`AccessDenied`, `SignatureDoesNotMatch`, ...), if any.
        code: String,
    },
    ObjectNotFound {
        bucket: String,
        key: String,
    },
    Unreachable {
        bucket: String,
        endpoint: String,
        detail: String,
    },
    /// The endpoint's certificate is not trusted (or the handshake failed otherwise).
    TlsHandshake {
        bucket: String,
        endpoint: String,
        detail: String,
    },
    Other {
        action: Action,
        bucket: String,
        endpoint: String,
        detail: String,
    },
}

impl fmt::Display for BucketError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BucketError::NoCredentials { detail } => write!(
                f,
                "no AWS credentials were found ({detail}): set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, a profile (AWS_PROFILE, `aws sso login`), or run where a role is attached"
            ),
            BucketError::BucketNotFound {
                action,
                bucket,
                endpoint,
            } => {
                write!(
                    f,
                    "bucket {bucket:?} does not exist at {endpoint} (or is in another region): "
                )?;
                f.write_str(match action {
                    Action::Write | Action::CreateBucket => {
                        "create it (`s3sweep seed --create-bucket` does, on the embedded server or for a general purpose bucket), or fix --bucket"
                    }
                    Action::Delete => {
                        "nothing of the manifest can be there: check the manifest's bucket, endpoint and region"
                    }
                    Action::Read | Action::List => "create it, or fix the bucket name",
                })
            }
            BucketError::AccessDenied {
                action,
                bucket,
                key,
                endpoint,
                code,
            } => {
                let what = if key.is_empty() {
                    format!("bucket {bucket:?}")
                } else {
                    format!("{bucket:?}/{key}")
                };
                let code_note = if code.is_empty() { String::new() } else { format!(" ({code})") };
                write!(f, "access denied {} {what} at {endpoint}{code_note}: ", action.doing())?;
                if CREDENTIAL_CODES.contains(&code.as_str()) {
                    write!(
                        f,
                        "the endpoint refused the credentials; check the keys (--credentials, AWS_PROFILE, AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)"
                    )
                } else {
                    write!(f, "grant {}, or check the credentials", action.permission())
                }
            }
            BucketError::ObjectNotFound { bucket, key } => write!(
                f,
                "object {bucket:?}/{key} does not exist: write the test objects first with `s3sweep seed --bucket {bucket}` (with the same key template and count, and the same --object-sizes for a size axis)"
            ),
            BucketError::Unreachable {
                bucket,
                endpoint,
                detail,
            } => write!(
                f,
                "cannot reach {endpoint} for bucket {bucket:?} ({detail}): check that the endpoint is up and that its URL, the region and the network are right"
            ),
            BucketError::TlsHandshake {
                bucket,
                endpoint,
                detail,
            } => write!(
                f,
                "the TLS handshake for {bucket:?} at {endpoint} failed, so the endpoint's certificate is not trusted: {detail}. Trust its CA with --ca-file FILE or AWS_CA_BUNDLE=FILE"
            ),
            BucketError::Other {
                action,
                bucket,
                endpoint,
                detail,
            } => write!(f, "{} {bucket:?} at {endpoint} failed: {detail}", action.doing()),
        }
    }
}

impl StdError for BucketError {}

impl BucketError {
    /// What a failed call on `bucket` (and `key`, empty for calls on the bucket) at
    /// `endpoint` means for the person running s3sweep.
    pub fn from_failure(failure: &Failure, action: Action, bucket: &str, key: &str, endpoint: &str) -> BucketError {
        let bucket = bucket.to_string();
        let endpoint = endpoint.to_string();
        let code = failure.code.clone().unwrap_or_default();
        match (failure.origin, failure.kind) {
            (Origin::NoCredentials, _) => BucketError::NoCredentials {
                detail: failure.cause.clone(),
            },
            (Origin::TlsHandshake, _) => BucketError::TlsHandshake {
                bucket,
                endpoint,
                detail: failure.message.clone(),
            },
            (_, ErrorKind::NotFound) if code == "NoSuchBucket" || action != Action::Read => {
                BucketError::BucketNotFound {
                    action,
                    bucket,
                    endpoint,
                }
            }
            (_, ErrorKind::NotFound) => BucketError::ObjectNotFound {
                bucket,
                key: key.to_string(),
            },
            (_, ErrorKind::AccessDenied) => BucketError::AccessDenied {
                action,
                bucket,
                key: key.to_string(),
                endpoint,
                code,
            },
            (_, ErrorKind::Connection | ErrorKind::Timeout) => BucketError::Unreachable {
                bucket,
                endpoint,
                detail: failure.cause.clone(),
            },
            _ => BucketError::Other {
                action,
                bucket,
                endpoint,
                detail: failure.message.clone(),
            },
        }
    }

    /// A stable name for the kind of failure (the Lambda's `errorType`, the CLI's first
    /// word).
    pub fn error_type(&self) -> &'static str {
        match self {
            BucketError::NoCredentials { .. } => "NoCredentials",
            BucketError::BucketNotFound { .. } => "BucketNotFound",
            BucketError::AccessDenied { .. } => "AccessDenied",
            BucketError::ObjectNotFound { .. } => "ObjectNotFound",
            BucketError::Unreachable { .. } => "EndpointUnreachable",
            BucketError::TlsHandshake { .. } => "TlsHandshakeFailed",
            BucketError::Other { .. } => "StartFailed",
        }
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
        assert_eq!(kind_of_status(404, ""), ErrorKind::NotFound);
        assert_eq!(kind_of_status(503, ""), ErrorKind::Throttled);
        assert_eq!(kind_of_status(502, ""), ErrorKind::ServerError);
    }

    #[test]
    fn one_line_folds_and_cuts() {
        assert_eq!(one_line("a\n  b"), "a b");
        let long = "x".repeat(400);
        assert_eq!(one_line(&long).len(), 303);
    }

    #[test]
    fn chains_skip_repeated_text() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "Connection refused");
        #[derive(Debug)]
        struct Outer(std::io::Error);
        impl fmt::Display for Outer {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("tcp connect error")
            }
        }
        impl StdError for Outer {
            fn source(&self) -> Option<&(dyn StdError + 'static)> {
                Some(&self.0)
            }
        }
        let e = Outer(io);
        assert_eq!(chain(&e), "tcp connect error: Connection refused");
        assert_eq!(innermost(&e), "Connection refused");
    }

    fn failure(kind: ErrorKind, code: Option<&str>) -> Failure {
        Failure {
            kind,
            code: code.map(str::to_string),
            message: format!("{}: whatever (HTTP 4xx)", code.unwrap_or("x")),
            cause: "the cause".into(),
            origin: Origin::Request,
        }
    }

    #[test]
    fn failures_become_advice_naming_bucket_key_and_endpoint() {
        let e = BucketError::from_failure(
            &failure(ErrorKind::NotFound, Some("NoSuchBucket")),
            Action::Read,
            "b-1",
            "k/0",
            "http://h:1",
        );
        assert_eq!(e.error_type(), "BucketNotFound");
        assert!(e.to_string().contains("\"b-1\" does not exist at http://h:1"), "{e}");
        // A 404 without a code is the key on a read, the bucket on a write or delete.
        let read = BucketError::from_failure(&failure(ErrorKind::NotFound, None), Action::Read, "b-1", "k/0", "e");
        assert_eq!(read.error_type(), "ObjectNotFound");
        assert!(read.to_string().contains("s3sweep seed --bucket b-1"), "{read}");
        let write = BucketError::from_failure(&failure(ErrorKind::NotFound, None), Action::Write, "b-1", "k/0", "e");
        assert_eq!(write.error_type(), "BucketNotFound");
        // Refused keys and missing permissions get different advice.
        let keys = BucketError::from_failure(
            &failure(ErrorKind::AccessDenied, Some("SignatureDoesNotMatch")),
            Action::Write,
            "b-1",
            "k/0",
            "e",
        );
        assert!(keys.to_string().contains("refused the credentials"), "{keys}");
        let perm = BucketError::from_failure(
            &failure(ErrorKind::AccessDenied, Some("AccessDenied")),
            Action::Delete,
            "b-1",
            "",
            "e",
        );
        assert!(perm.to_string().contains("s3:DeleteObject"), "{perm}");
        assert!(perm.to_string().contains("deleting bucket \"b-1\""), "{perm}");
        let down = BucketError::from_failure(
            &failure(ErrorKind::Connection, None),
            Action::Read,
            "b-1",
            "k",
            "http://h:1",
        );
        assert_eq!(down.error_type(), "EndpointUnreachable");
        assert!(
            down.to_string()
                .contains("cannot reach http://h:1 for bucket \"b-1\" (the cause)"),
            "{down}"
        );
        // Missing credentials are found by the error's type, whatever its text says.
        let missing: SdkError<aws_sdk_s3::operation::get_object::GetObjectError, HttpResponse> =
            SdkError::construction_failure(CredentialsError::not_loaded("the chain came up empty"));
        let failure = classify(&missing);
        assert_eq!(failure.origin, Origin::NoCredentials, "{failure:?}");
        let creds = BucketError::from_failure(&failure, Action::Read, "b-1", "k", "e");
        assert_eq!(creds.error_type(), "NoCredentials");
        // Text alone is not a type.
        let text_only: SdkError<aws_sdk_s3::operation::get_object::GetObjectError, HttpResponse> =
            SdkError::construction_failure("no credentials in the chain");
        assert_eq!(classify(&text_only).origin, Origin::Request);
    }

    #[test]
    fn body_timeouts_are_found_by_type() {
        let timeout = aws_smithy_types::byte_stream::error::Error::from(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "slow",
        ));
        assert_eq!(classify_body_error(&timeout).kind, ErrorKind::Timeout);
        let reset = aws_smithy_types::byte_stream::error::Error::from(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "the read timed out, says the text",
        ));
        assert_eq!(classify_body_error(&reset).kind, ErrorKind::Connection);
    }
}

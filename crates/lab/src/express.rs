//! Directory buckets' authentication in the lab. s3s checks SigV4 only for the `s3`
//! and `sts` services and refuses `s3express`, the signing name aws-sdk-s3 (and
//! botocore) use for directory buckets, so the HTTP layer ([`super::conn`]) asks
//! [`check`] first about every request signed for `s3express`:
//! - without a session token (`CreateSession`, or a client with session auth
//!   disabled): the lab's own keys, checked as s3s would;
//! - with `x-amz-s3session-token`: the session's keys; an unknown token is refused
//!   with 400 `InvalidToken`, an expired one with 400 `ExpiredToken`, a session used
//!   for another bucket with 403 `AccessDenied`, as S3 does.
//!
//! An accepted request goes on to s3s without its `Authorization` header and with an
//! [`ExpressAuth`] extension; [`LabAccess`] lets such requests through s3s's access
//! check and refuses writes made with a ReadOnly session (403 `AccessDenied`).

use std::sync::Arc;

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body as HttpBody, Frame};
use ring::digest;
use s3s::access::{S3Access, S3AccessContext};
use s3s::path::S3Path;
use s3s::{s3_error, S3Result};

use crate::plan::is_directory_bucket;

use super::sessions::{SessionMode, Sessions};
use super::sigv4::{parse_authorization, verify, Authorization, SignatureProblem};
use super::{LOCAL_ACCESS_KEY, LOCAL_SECRET_KEY};

/// What a request body whose SHA-256 is not the signed `x-amz-content-sha256` fails
/// with (the store answers it as S3's `XAmzContentSHA256Mismatch`).
pub(crate) const PAYLOAD_MISMATCH: &str = "x-amz-content-sha256 mismatch";

/// The header a request signed with a session carries its token in.
pub(crate) const SESSION_TOKEN_HEADER: &str = "x-amz-s3session-token";

/// How an `s3express` request was authenticated: with the lab's keys (`mode: None`)
/// or with a session of that mode, made for `bucket`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExpressAuth {
    pub mode: Option<SessionMode>,
    /// The directory bucket of the session (None: the lab's keys).
    pub bucket: Option<String>,
}

/// An S3 error answer: status, code, message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub(crate) status: u16,
    pub(crate) code: &'static str,
    pub(crate) message: String,
}

impl Refusal {
    fn new(status: u16, code: &'static str, message: impl Into<String>) -> Self {
        Refusal {
            status,
            code,
            message: message.into(),
        }
    }

    /// The answer as S3 writes it: an XML `<Error>` document.
    pub(crate) fn response(&self) -> http::Response<s3s::Body> {
        let body = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{}</Code><Message>{}</Message><RequestId>s3sweep-lab</RequestId></Error>",
            self.code,
            xml_escape(&self.message)
        );
        let mut resp = http::Response::new(s3s::Body::from(body));
        *resp.status_mut() = http::StatusCode::from_u16(self.status).unwrap_or(http::StatusCode::FORBIDDEN);
        resp.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/xml"),
        );
        resp
    }
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// What [`check`] decided.
#[derive(Debug)]
pub(crate) enum Decision {
    /// Not signed for `s3express`: s3s checks it as usual.
    NotExpress,
    /// Accepted; the body must have this SHA-256 (hex), when signed.
    Accepted(ExpressAuth, Option<String>),
    /// Refused with this answer.
    Refused(Refusal),
}

/// The bucket of a path-style request (`/bucket/key`).
fn bucket_of(path: &str) -> &str {
    path.trim_start_matches('/').split('/').next().unwrap_or("")
}

/// S3's answer to a signature problem.
fn signature_refusal(problem: SignatureProblem) -> Refusal {
    match problem {
        SignatureProblem::Mismatch => Refusal::new(
            403,
            "SignatureDoesNotMatch",
            "The request signature we calculated does not match the signature you provided.",
        ),
        SignatureProblem::MissingDate => Refusal::new(400, "InvalidRequest", "missing header: x-amz-date"),
        SignatureProblem::MissingHeader(h) => Refusal::new(
            400,
            "InvalidRequest",
            format!("signed header {h} is not in the request"),
        ),
        SignatureProblem::BadDate => Refusal::new(400, "InvalidRequest", "invalid header: x-amz-date"),
        SignatureProblem::Skewed => Refusal::new(
            403,
            "RequestTimeTooSkewed",
            "The difference between the request time and the current time is too large.",
        ),
        SignatureProblem::ScopeDate => Refusal::new(
            403,
            "SignatureDoesNotMatch",
            "credential scope date does not match x-amz-date",
        ),
        SignatureProblem::HostNotSigned => Refusal::new(
            400,
            "InvalidRequest",
            "'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization.",
        ),
        SignatureProblem::MissingPayloadHash => {
            Refusal::new(400, "InvalidRequest", "missing header: x-amz-content-sha256")
        }
    }
}

/// The SHA-256 a body must have: the signed `x-amz-content-sha256` when it is a hash
/// (not `UNSIGNED-PAYLOAD` or a `STREAMING-` mode).
fn payload_hash(parts: &http::request::Parts) -> Option<String> {
    let v = parts.headers.get("x-amz-content-sha256")?.to_str().ok()?;
    (v.len() == 64 && v.bytes().all(|c| c.is_ascii_hexdigit())).then(|| v.to_ascii_lowercase())
}

/// Authenticates a request signed for `s3express` (see the module comment). Any
/// SigV4-signed request that does not sign `host` is refused here too, as S3 does
/// (s3s does not check it).
pub(crate) fn check(parts: &http::request::Parts, sessions: &Sessions) -> Decision {
    if let Some((status, code, message)) = super::sigv4::refused_scheme(parts) {
        return Decision::Refused(Refusal::new(status, code, message));
    }
    let Some(header) = parts
        .headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    else {
        return Decision::NotExpress;
    };
    let Some(auth) = parse_authorization(header) else {
        return Decision::NotExpress;
    };
    if auth.service != "s3express" {
        if !auth.signed_headers.iter().any(|h| h.eq_ignore_ascii_case("host")) {
            return Decision::Refused(signature_refusal(SignatureProblem::HostNotSigned));
        }
        return Decision::NotExpress;
    }
    let streaming_signed = parts
        .headers
        .get("x-amz-content-sha256")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("STREAMING-AWS4-"));
    if streaming_signed {
        return Decision::Refused(Refusal::new(
            501,
            "NotImplemented",
            "signed aws-chunked bodies (STREAMING-AWS4-*) on the S3 Express path are not implemented by the lab",
        ));
    }
    match parts.headers.get(SESSION_TOKEN_HEADER).and_then(|v| v.to_str().ok()) {
        None => check_local_key(parts, &auth),
        Some(token) => check_session(parts, &auth, token, sessions),
    }
}

/// An `s3express` request with no session token: signed with the lab's own key.
fn check_local_key(parts: &http::request::Parts, auth: &Authorization<'_>) -> Decision {
    if auth.access_key != LOCAL_ACCESS_KEY {
        return Decision::Refused(Refusal::new(
            403,
            "InvalidAccessKeyId",
            "The AWS Access Key Id you provided does not exist in our records.",
        ));
    }
    match verify(parts, auth, LOCAL_SECRET_KEY) {
        Ok(()) => Decision::Accepted(
            ExpressAuth {
                mode: None,
                bucket: None,
            },
            payload_hash(parts),
        ),
        Err(problem) => Decision::Refused(signature_refusal(problem)),
    }
}

/// An `s3express` request with a session token: the session must exist, belong to
/// the signing key, verify, be unexpired and be for the bucket asked.
fn check_session(parts: &http::request::Parts, auth: &Authorization<'_>, token: &str, sessions: &Sessions) -> Decision {
    let invalid = || {
        Refusal::new(
            400,
            "InvalidToken",
            "The provided token is malformed or otherwise invalid.",
        )
    };
    let Some(session) = sessions.get(token) else {
        sessions.count(|t| t.refused_invalid += 1);
        return Decision::Refused(invalid());
    };
    if session.access_key_id != auth.access_key {
        sessions.count(|t| t.refused_invalid += 1);
        return Decision::Refused(invalid());
    }
    if let Err(problem) = verify(parts, auth, &session.secret_access_key) {
        sessions.count(|t| t.refused_signature += 1);
        return Decision::Refused(signature_refusal(problem));
    }
    if std::time::SystemTime::now() >= session.expires {
        sessions.count(|t| t.refused_expired += 1);
        return Decision::Refused(Refusal::new(400, "ExpiredToken", "The provided token has expired."));
    }
    if bucket_of(parts.uri.path()) != session.bucket {
        sessions.count(|t| t.refused_other_bucket += 1);
        return Decision::Refused(Refusal::new(
            403,
            "AccessDenied",
            format!("the session was created for bucket {}", session.bucket),
        ));
    }
    sessions.count(|t| t.accepted += 1);
    Decision::Accepted(
        ExpressAuth {
            mode: Some(session.mode),
            bucket: Some(session.bucket.clone()),
        },
        payload_hash(parts),
    )
}

/// Operations a ReadOnly session may call.
const READ_OPERATIONS: &[&str] = &["GetObject", "HeadObject", "HeadBucket", "ListObjectsV2", "ListObjects"];

/// s3s's access check for the lab: signed requests (s3s checked them) and requests
/// [`check`] accepted pass; writes with a ReadOnly session are refused, as S3 does.
pub(crate) struct LabAccess {
    pub(crate) sessions: Arc<Sessions>,
}

#[async_trait::async_trait]
impl S3Access for LabAccess {
    async fn check(&self, cx: &mut S3AccessContext<'_>) -> S3Result<()> {
        if cx.credentials().is_some() {
            return Ok(());
        }
        let op = cx.s3_op().name().to_string();
        let target = match cx.s3_path() {
            S3Path::Root => None,
            S3Path::Bucket { bucket } | S3Path::Object { bucket, .. } => Some(bucket.to_string()),
        };
        match cx.extensions_mut().get::<ExpressAuth>() {
            None => Err(s3_error!(AccessDenied, "Signature is required")),
            Some(ExpressAuth { bucket: Some(own), .. })
                if target.as_deref() != Some(own.as_str()) || !is_directory_bucket(own) =>
            {
                self.sessions.count(|t| t.refused_other_bucket += 1);
                Err(s3_error!(
                    AccessDenied,
                    "a session of {own} is only for its own directory bucket, not {}",
                    target.as_deref().unwrap_or("the service")
                ))
            }
            Some(ExpressAuth {
                mode: Some(SessionMode::ReadOnly),
                ..
            }) if !READ_OPERATIONS.contains(&op.as_str()) => {
                self.sessions.count(|t| t.refused_read_only_writes += 1);
                Err(s3_error!(
                    AccessDenied,
                    "{op} is not allowed with a ReadOnly session (CreateSession with SessionMode ReadWrite)"
                ))
            }
            Some(_) => Ok(()),
        }
    }
}

/// A request body checked against the signed `x-amz-content-sha256` as it streams:
/// at its end, a body with another SHA-256 fails with [`PAYLOAD_MISMATCH`] (s3s does
/// the same on the ordinary path).
pub(crate) struct PayloadCheck<B> {
    inner: B,
    hasher: Option<digest::Context>,
    expected_hex: String,
}

impl<B> PayloadCheck<B> {
    pub(crate) fn new(inner: B, expected_hex: String) -> Self {
        PayloadCheck {
            inner,
            hasher: Some(digest::Context::new(&digest::SHA256)),
            expected_hex,
        }
    }
}

impl<B> HttpBody for PayloadCheck<B>
where
    B: HttpBody<Data = Bytes> + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(h), Some(data)) = (this.hasher.as_mut(), frame.data_ref()) {
                    h.update(data);
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e.into()))),
            Poll::Ready(None) => {
                let Some(h) = this.hasher.take() else {
                    return Poll::Ready(None);
                };
                let got: String = h.finish().as_ref().iter().map(|b| format!("{b:02x}")).collect();
                if got == this.expected_hex {
                    Poll::Ready(None)
                } else {
                    Poll::Ready(Some(Err(PAYLOAD_MISMATCH.into())))
                }
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsigned_and_s3_signed_requests_are_left_to_s3s() {
        let sessions = Sessions::default();
        let (parts, ()) = http::Request::get("http://127.0.0.1/b/k")
            .body(())
            .unwrap()
            .into_parts();
        assert!(matches!(check(&parts, &sessions), Decision::NotExpress));
        let (parts, ()) = http::Request::get("http://127.0.0.1/b/k")
            .header(
                "authorization",
                "AWS4-HMAC-SHA256 Credential=s3sweep/20240101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00",
            )
            .body(())
            .unwrap()
            .into_parts();
        assert!(matches!(check(&parts, &sessions), Decision::NotExpress));
    }

    #[test]
    fn unknown_tokens_and_keys_are_refused_as_s3_does() {
        let sessions = Sessions::default();
        let auth = "AWS4-HMAC-SHA256 Credential=SOMEKEY/20240101/us-east-1/s3express/aws4_request, SignedHeaders=host;x-amz-date, Signature=00";
        let (parts, ()) = http::Request::get("http://127.0.0.1/b--az1--x-s3/k")
            .header("authorization", auth)
            .header("x-amz-date", "20240101T000000Z")
            .header(SESSION_TOKEN_HEADER, "made-up")
            .body(())
            .unwrap()
            .into_parts();
        match check(&parts, &sessions) {
            Decision::Refused(r) => assert_eq!((r.status, r.code), (400, "InvalidToken")),
            other => panic!("{other:?}"),
        }
        assert_eq!(sessions.tally().refused_invalid, 1);
        let (parts, ()) = http::Request::get("http://127.0.0.1/b--az1--x-s3?session")
            .header("authorization", auth)
            .header("x-amz-date", "20240101T000000Z")
            .body(())
            .unwrap()
            .into_parts();
        match check(&parts, &sessions) {
            Decision::Refused(r) => assert_eq!((r.status, r.code), (403, "InvalidAccessKeyId")),
            other => panic!("{other:?}"),
        }
        let xml = Refusal::new(400, "ExpiredToken", "a < b").response();
        assert_eq!(xml.status(), 400);
    }
}

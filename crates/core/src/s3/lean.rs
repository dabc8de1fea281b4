//! The lean client (`client: "lean"`): a GET with the least work a correct S3 client
//! can do, to show how much of a plateau is the SDK's per-request work and how much is
//! S3 and the network. A measuring instrument, not a client for applications: it only
//! GETs whole objects.
//!
//! What it shares with the SDK path, so the two are measured alike: the
//! [`Transport`] (the same pool, per-host cap, TLS, first-byte timing at the wire and
//! counters, through [`Transport::send`]), the credentials (the SDK config's provider,
//! cached here and refreshed before they expire, never logged), S3 Express ReadOnly
//! sessions ([`ReadOnlySessions`], the SDK's `CreateSession`), the error kinds
//! ([`errors::kind_of_status`]) and the retry rules of the SDK's standard strategy
//! (transient causes only: 500/502/503/504, throttling codes, timeouts and connection
//! failures before the headers; full-jitter exponential backoff from 1 s, at most 20 s;
//! `max_attempts` in all), with the first-byte and attempt timeouts of
//! [`RequestSettings`]. What it leaves out: endpoint rules (the URL is built from the
//! bucket name: path-style under an explicit endpoint, virtual-hosted on AWS), the
//! interceptor chain, the SDK's retry quota, and response parsing beyond an error's
//! `<Code>` and `<Message>`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_sigv4::http_request::{
    sign, PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SigningSettings,
    UriPathNormalizationMode,
};
use aws_sigv4::sign::v4::SigningParams;
use aws_smithy_runtime_api::client::identity::Identity;
use aws_smithy_types::body::SdkBody;
use http_body_util::BodyExt;

use crate::model::ErrorKind;
use crate::transport::{current_probe, Lane};

use super::errors::{self, Failure, Origin};
use super::express::ReadOnlySessions;
use super::RequestSettings;

/// The header S3 Express takes the session token in.
const SESSION_TOKEN_HEADER: &str = "x-amz-s3session-token";

/// The SDK standard strategy's first backoff and its cap.
const INITIAL_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(20);

/// Credentials are refreshed this long before they expire (the SDK's identity cache
/// uses 5 minutes; a fifth of the lifetime when that is shorter).
const CREDENTIALS_MARGIN: Duration = Duration::from_secs(300);

/// Error codes the SDK's standard strategy retries as throttling or transient.
const RETRIED_CODES: [&str; 8] = [
    "SlowDown",
    "Throttling",
    "ThrottlingException",
    "RequestLimitExceeded",
    "TooManyRequestsException",
    "RequestThrottled",
    "RequestTimeout",
    "InternalError",
];

/// Statuses the SDK's standard strategy retries whatever the code.
const RETRIED_STATUSES: [u16; 4] = [500, 502, 503, 504];

/// The lean client: signed GETs on one lane of a transport, with the credentials and
/// S3 Express sessions of its [`super::SweepClient`] or sweep session. Cheap to clone.
#[derive(Clone)]
pub struct LeanClient {
    lane: Lane,
    endpoint: Option<String>,
    region: String,
    credentials: Arc<CachedCredentials>,
    sessions: Arc<ReadOnlySessions>,
    settings: RequestSettings,
}

impl std::fmt::Debug for LeanClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeanClient")
            .field("endpoint", &self.endpoint)
            .field("region", &self.region)
            .field("settings", &self.settings)
            .finish()
    }
}

impl LeanClient {
    /// Built by [`super::SweepClient::lean`].
    pub(crate) fn from_parts(
        lane: Lane,
        endpoint: Option<String>,
        region: String,
        provider: Option<SharedCredentialsProvider>,
        sessions: Arc<ReadOnlySessions>,
        settings: RequestSettings,
    ) -> Self {
        LeanClient {
            lane,
            endpoint: endpoint.map(|e| e.trim_end_matches('/').to_string()),
            region,
            credentials: Arc::new(CachedCredentials::new(provider)),
            sessions,
            settings,
        }
    }

    /// The lane its requests go out on.
    pub fn lane(&self) -> &Lane {
        &self.lane
    }

    /// The retries and timeouts of this client.
    pub fn settings(&self) -> RequestSettings {
        self.settings
    }

    /// The same client with other retries and timeouts (same transport, credentials and
    /// sessions).
    pub fn with_settings(&self, settings: RequestSettings) -> Self {
        LeanClient {
            settings,
            ..self.clone()
        }
    }

    /// The same client (its credentials cache and settings) sending on `lane`.
    pub(crate) fn on_lane(&self, lane: Lane) -> Self {
        LeanClient { lane, ..self.clone() }
    }

    /// GETs `bucket`/`key` and drains the body: the bytes read, or the failure (its
    /// kind as the SDK path sorts it). No limit on the whole GET: the caller sets one.
    pub async fn get(&self, bucket: &str, key: &str) -> Result<u64, Failure> {
        self.get_timed(bucket, key, &AtomicU64::new(0), Instant::now(), |_| {})
            .await
    }

    /// [`LeanClient::get`], keeping the body (for checks; the sweep never keeps one).
    pub async fn get_body(&self, bucket: &str, key: &str) -> Result<Vec<u8>, Failure> {
        let mut body = Vec::new();
        self.get_timed(bucket, key, &AtomicU64::new(0), Instant::now(), |chunk| {
            body.extend_from_slice(chunk)
        })
        .await?;
        Ok(body)
    }

    /// [`LeanClient::get`], storing the nanoseconds from `start` to the response
    /// headers in `headers_ns`, each chunk of the body shown to `sink`.
    pub(crate) async fn get_timed(
        &self,
        bucket: &str,
        key: &str,
        headers_ns: &AtomicU64,
        start: Instant,
        sink: impl FnMut(&[u8]),
    ) -> Result<u64, Failure> {
        self.get_timed_watched(bucket, key, headers_ns, start, sink, || {})
            .await
    }

    /// [`LeanClient::get_timed`], calling `on_headers` when the headers come.
    pub(crate) async fn get_timed_watched(
        &self,
        bucket: &str,
        key: &str,
        headers_ns: &AtomicU64,
        start: Instant,
        mut sink: impl FnMut(&[u8]),
        on_headers: impl FnOnce(),
    ) -> Result<u64, Failure> {
        let response = self.headers(bucket, key).await?;
        headers_ns.store(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
        on_headers();
        let expected = response
            .headers()
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        let mut body = response.into_body();
        let mut received: u64 = 0;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| body_failure(e.as_ref()))?;
            if let Some(data) = frame.data_ref() {
                sink(data);
                received += data.len() as u64;
            }
        }
        match expected {
            Some(expected) if expected != received => Err(Failure::new(
                ErrorKind::Connection,
                format!("body ended after {received} of {expected} bytes"),
            )),
            _ => Ok(received),
        }
    }

    /// Attempts until one gets a 2xx answer's headers, or a failure that is final
    /// (not retryable, or the last attempt).
    async fn headers(&self, bucket: &str, key: &str) -> Result<http::Response<SdkBody>, Failure> {
        let attempts = self.settings.max_attempts.max(1);
        let probe = current_probe();
        let mut attempt = 0;
        loop {
            attempt += 1;
            if let Some(probe) = &probe {
                probe.attempt_started();
            }
            let failure = match self.attempt(bucket, key).await {
                Ok(response) => return Ok(response),
                Err(failure) => failure,
            };
            if attempt >= attempts || !failure.retryable {
                return Err(failure.failure);
            }
            tokio::time::sleep(backoff(attempt)).await;
        }
    }

    /// One attempt: identity, signature, the request on the transport, bounded by the
    /// attempt timeout; an error answer's body is read and sorted.
    async fn attempt(&self, bucket: &str, key: &str) -> Result<http::Response<SdkBody>, Attempted> {
        let express = is_directory_bucket(bucket);
        let identity = if express {
            self.sessions
                .identity(bucket)
                .await
                .map_err(|e| Attempted::final_(session_failure(e.as_ref())))?
        } else {
            self.credentials.identity().await.map_err(Attempted::final_)?
        };
        let request = self
            .signed(bucket, key, &identity, express)
            .map_err(Attempted::final_)?;
        let token = express.then(|| session_token(&request)).flatten();
        let limit = self.settings.attempt_timeout;
        let work = async {
            let response = self
                .lane
                .send(request, Some(self.settings.first_byte_timeout))
                .await
                .map_err(|e| Attempted::of(errors::classify_connector_error(&e)))?;
            if response.status().is_success() {
                return Ok(response);
            }
            let status = response.status().as_u16();
            Err(Attempted::answered(error_answer(response).await, Some(status)))
        };
        let result = match tokio::time::timeout(limit, work).await {
            Ok(result) => result,
            Err(_) => Err(Attempted::of(Failure::new(
                ErrorKind::Timeout,
                format!("attempt not answered within {} ms", limit.as_millis()),
            ))),
        };
        if let (Err(failed), Some(token)) = (&result, &token) {
            if matches!(failed.failure.code.as_deref(), Some("ExpiredToken" | "InvalidToken")) {
                self.sessions.refused(bucket, token);
            }
        }
        result
    }

    /// The GET request for `bucket`/`key`, signed with `identity`.
    fn signed(
        &self,
        bucket: &str,
        key: &str,
        identity: &Identity,
        express: bool,
    ) -> Result<http::Request<SdkBody>, Failure> {
        let uri = self.uri(bucket, key);
        let mut settings = SigningSettings::default();
        settings.percent_encoding_mode = PercentEncodingMode::Single;
        settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
        settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
        if express {
            settings.session_token_name_override = Some(SESSION_TOKEN_HEADER);
        }
        let params = SigningParams::builder()
            .identity(identity)
            .region(&self.region)
            .name(if express { "s3express" } else { "s3" })
            .time(SystemTime::now())
            .settings(settings)
            .build()
            .map_err(|e| Failure::new(ErrorKind::Other, format!("signing: {e}")))?;
        let params = params.into();
        let signable = SignableRequest::new("GET", uri.as_str(), std::iter::empty(), SignableBody::Bytes(&[]))
            .map_err(|e| Failure::new(ErrorKind::Other, format!("signing: {e}")))?;
        let (instructions, _signature) = sign(signable, &params)
            .map_err(|e| Failure::new(ErrorKind::Other, format!("signing: {e}")))?
            .into_parts();
        let mut request = http::Request::get(uri)
            .body(SdkBody::empty())
            .map_err(|e| Failure::new(ErrorKind::Other, format!("request: {e}")))?;
        instructions.apply_to_request_http1x(&mut request);
        Ok(request)
    }

    /// The object's URL: path-style under an explicit endpoint; on AWS, virtual-hosted
    /// (`BUCKET.s3.REGION.amazonaws.com`, or the zone's S3 Express endpoint for a
    /// directory bucket), path-style for bucket names with dots.
    fn uri(&self, bucket: &str, key: &str) -> String {
        let key = encode_key(key);
        match &self.endpoint {
            Some(base) => format!("{base}/{bucket}/{key}"),
            None => match directory_zone(bucket) {
                Some(zone) => format!("https://{bucket}.s3express-{zone}.{}.amazonaws.com/{key}", self.region),
                None if bucket.contains('.') => format!("https://s3.{}.amazonaws.com/{bucket}/{key}", self.region),
                None => format!("https://{bucket}.s3.{}.amazonaws.com/{key}", self.region),
            },
        }
    }
}

/// How one attempt failed, and whether the SDK's standard strategy would retry it.
struct Attempted {
    failure: Failure,
    retryable: bool,
}

impl Attempted {
    fn of(failure: Failure) -> Self {
        Self::answered(failure, None)
    }

    /// A failure with the answer's status, if one came.
    fn answered(failure: Failure, status: Option<u16>) -> Self {
        let retryable = retryable(&failure, status);
        Attempted { failure, retryable }
    }

    fn final_(failure: Failure) -> Self {
        Attempted {
            failure,
            retryable: false,
        }
    }
}

/// The SDK standard strategy's rule: timeouts and connection failures before the
/// headers, the transient statuses and the throttling codes are retried; nothing else.
fn retryable(failure: &Failure, status: Option<u16>) -> bool {
    match failure.kind {
        ErrorKind::Timeout | ErrorKind::Connection => failure.origin == Origin::Request,
        ErrorKind::Throttled | ErrorKind::ServerError => {
            failure.code.as_deref().is_some_and(|c| RETRIED_CODES.contains(&c))
                || status.is_some_and(|s| RETRIED_STATUSES.contains(&s))
        }
        _ => false,
    }
}

/// Full-jitter exponential backoff before attempt `attempt + 1`, as the SDK's standard
/// strategy sleeps: a random fraction of `1 s x 2^(attempt-1)`, at most 20 s.
fn backoff(attempt: u32) -> Duration {
    let ceiling = INITIAL_BACKOFF
        .checked_mul(1u32 << (attempt - 1).min(16))
        .unwrap_or(MAX_BACKOFF)
        .min(MAX_BACKOFF);
    ceiling.mul_f64(rand::random::<f64>())
}

/// Most bytes of an error answer's body read (S3's are well under 1 KiB): the rest
/// is left unread and the connection dropped, so an endless body costs at most this.
pub(crate) const MAX_ERROR_BODY_BYTES: usize = 64 << 10;

/// An error answer: at most [`MAX_ERROR_BODY_BYTES`] of its body read (within the
/// caller's attempt timeout), S3's `<Code>` and `<Message>` taken out, sorted as the
/// SDK path sorts it.
async fn error_answer(response: http::Response<SdkBody>) -> Failure {
    let status = response.status().as_u16();
    let mut body = response.into_body();
    let mut kept = Vec::new();
    while kept.len() < MAX_ERROR_BODY_BYTES {
        match body.frame().await {
            None => break,
            Some(Err(e)) => return body_failure(e.as_ref()),
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    let room = MAX_ERROR_BODY_BYTES - kept.len();
                    kept.extend_from_slice(&data[..data.len().min(room)]);
                }
            }
        }
    }
    let text = String::from_utf8_lossy(&kept);
    let code = xml_element(&text, "Code").map(str::to_string);
    let message = xml_element(&text, "Message").unwrap_or("").trim();
    errors::answered(status, code, message)
}

/// The text of the first `<name>...</name>` in `xml`.
fn xml_element<'a>(xml: &'a str, name: &str) -> Option<&'a str> {
    let open = format!("<{name}>");
    let start = xml.find(&open)? + open.len();
    let end = xml[start..].find(&format!("</{name}>"))?;
    Some(&xml[start..start + end])
}

/// A failure while reading a body: a timeout or the connection.
fn body_failure(err: &(dyn std::error::Error + Send + Sync + 'static)) -> Failure {
    errors::classify_io_body_error(err)
}

/// A `CreateSession` that failed: its kind, as on the SDK path.
fn session_failure(err: &(dyn std::error::Error + Send + Sync + 'static)) -> Failure {
    match err.downcast_ref::<errors::CreateSessionFailed>() {
        Some(session) => Failure::new(session.kind, errors::one_line(&session.to_string())),
        None => Failure::new(ErrorKind::Other, errors::one_line(&errors::chain(err))),
    }
}

fn session_token(request: &http::Request<SdkBody>) -> Option<String> {
    request
        .headers()
        .get(SESSION_TOKEN_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// A directory bucket's name ends `--x-s3`.
pub(crate) fn is_directory_bucket(bucket: &str) -> bool {
    bucket.ends_with("--x-s3")
}

/// The zone of a directory bucket (`base--use1-az4--x-s3` -> `use1-az4`).
fn directory_zone(bucket: &str) -> Option<&str> {
    let base = bucket.strip_suffix("--x-s3")?;
    base.rsplit_once("--").map(|(_, zone)| zone)
}

/// A key URI-encoded as S3 wants it: every byte but the unreserved ones and `/`.
fn encode_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 8);
    for b in key.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The base credentials (the SDK config's provider), cached until shortly before they
/// expire; loaded by one request while the others wait.
struct CachedCredentials {
    provider: Option<SharedCredentialsProvider>,
    current: Mutex<Option<(Identity, Option<SystemTime>)>>,
    loading: tokio::sync::Mutex<()>,
}

impl CachedCredentials {
    fn new(provider: Option<SharedCredentialsProvider>) -> Self {
        CachedCredentials {
            provider,
            current: Mutex::new(None),
            loading: tokio::sync::Mutex::new(()),
        }
    }

    fn fresh(&self) -> Option<Identity> {
        let current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        let (identity, refresh_at) = current.as_ref()?;
        refresh_at
            .is_none_or(|at| SystemTime::now() < at)
            .then(|| identity.clone())
    }

    async fn identity(&self) -> Result<Identity, Failure> {
        if let Some(identity) = self.fresh() {
            return Ok(identity);
        }
        let _loading = self.loading.lock().await;
        if let Some(identity) = self.fresh() {
            return Ok(identity);
        }
        let no_credentials = |detail: String| Failure {
            origin: Origin::NoCredentials,
            ..Failure::new(ErrorKind::Other, detail)
        };
        let provider = self
            .provider
            .as_ref()
            .ok_or_else(|| no_credentials("no credentials provider is configured".into()))?;
        let asked = SystemTime::now();
        let credentials = provider
            .provide_credentials()
            .await
            .map_err(|e| no_credentials(errors::one_line(&errors::chain(&e))))?;
        let refresh_at = credentials.expiry().map(|expiry| {
            let lifetime = expiry.duration_since(asked).unwrap_or_default();
            let margin = (lifetime / 5).min(CREDENTIALS_MARGIN);
            expiry.checked_sub(margin).unwrap_or(expiry)
        });
        let identity = Identity::from(credentials);
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = Some((identity.clone(), refresh_at));
        Ok(identity)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_encoded_once_and_slashes_kept() {
        assert_eq!(encode_key("test/1/vectors"), "test/1/vectors");
        assert_eq!(encode_key("a b/c+d"), "a%20b/c%2Bd");
    }

    #[test]
    fn directory_buckets_have_a_zone() {
        assert_eq!(directory_zone("data--use1-az4--x-s3"), Some("use1-az4"));
        assert_eq!(directory_zone("plain-bucket"), None);
        assert!(is_directory_bucket("a--use1-az4--x-s3"));
    }

    #[test]
    fn retries_follow_the_standard_strategy() {
        let answered = |status, code: Option<&str>| {
            retryable(&errors::answered(status, code.map(str::to_string), "m"), Some(status))
        };
        assert!(answered(503, Some("SlowDown")));
        assert!(answered(500, Some("InternalError")));
        assert!(answered(502, None));
        assert!(!answered(403, Some("AccessDenied")));
        assert!(!answered(404, Some("NoSuchKey")));
        assert!(!answered(400, Some("ExpiredToken")));
        assert!(!answered(429, None));
        assert!(retryable(&Failure::new(ErrorKind::Timeout, "t"), None));
        assert!(retryable(&Failure::new(ErrorKind::Connection, "reset"), None));
        for attempt in 1..8 {
            let b = backoff(attempt);
            assert!(b <= MAX_BACKOFF && b <= INITIAL_BACKOFF * (1 << (attempt - 1)), "{b:?}");
        }
    }

    #[test]
    fn error_bodies_give_code_and_message() {
        let xml = "<Error><Code>AccessDenied</Code><Message>no</Message></Error>";
        assert_eq!(xml_element(xml, "Code"), Some("AccessDenied"));
        assert_eq!(xml_element(xml, "Message"), Some("no"));
        assert_eq!(xml_element(xml, "Resource"), None);
    }
}

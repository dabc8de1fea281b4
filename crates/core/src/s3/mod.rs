//! The S3 client s3sweep measures with: one [`SweepClient`] per process (credentials,
//! region, endpoint, the SDK's base configuration), built once; each sweep reads through
//! a [`SweepSession`] of its own ([`session`]: its transport, and per lane the reading
//! clients on that lane), with the sweep's retries and timeouts. Credentials are
//! passed in ([`CredentialSource`]): the standard AWS chain, or static keys the caller
//! chose; so is an extra CA file to trust; this module knows nothing of the embedded
//! server. Reads ([`SweepClient::reader`]) use ReadOnly S3 Express sessions
//! ([`express`]); writes ([`SweepClient::s3`]: seed, clean) the SDK's ReadWrite ones.
//! [`errors`] sorts failures into [`crate::model::ErrorKind`]s, [`get`] is the measured
//! GET, [`seed`] and [`clean`] write and delete the test objects, recorded in a
//! [`manifest`] and its journal, after [`guards`] checks the store honours the
//! conditions they rely on; [`results`] keeps a result document in S3.

pub mod clean;
pub mod endpoint;
pub mod errors;
pub(crate) mod express;
pub mod get;
pub mod guards;
pub mod lab_client;
pub(crate) mod lean;
pub mod list;
pub mod manifest;
pub mod results;
pub mod seed;
mod session;

use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_sdk_s3::config::retry::RetryConfig;
use aws_sdk_s3::config::timeout::TimeoutConfig;
use aws_sdk_s3::config::{Region, RequestChecksumCalculation};
use aws_sdk_s3::config::{ResponseChecksumValidation, StalledStreamProtectionConfig};
use aws_types::SdkConfig;

use crate::transport::{Transport, TransportSettings, TrustError};

pub use errors::Failure;
use express::{ReadOnlyScheme, ReadOnlySessions, SessionRefusals};
pub use lean::LeanClient;
pub use session::{lanes_for, request_settings, sweep_lanes, transport_settings, SweepSession};

/// Errors building the client. Request-level failures are never errors here: the sweep
/// counts them by kind.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("invalid endpoint URL {url:?}: {reason}")]
    InvalidEndpoint {
        url: String,
        reason: crate::plan::names::NameError,
    },
    #[error("invalid region ({from}): {reason}")]
    InvalidRegion {
        from: &'static str,
        reason: crate::plan::names::NameError,
    },
    #[error(transparent)]
    Trust(#[from] TrustError),
}

/// Where credentials come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialSource {
    /// The standard AWS chain: environment, profile, SSO, container or instance role.
    Chain,
    /// Fixed keys the caller chose (the embedded server's, for example).
    Static(StaticCredentials),
}

impl CredentialSource {
    /// The source's name in a result's environment block: `chain`, or the static
    /// keys' `provider_name` (`lab` for the embedded server's).
    pub fn name(&self) -> &'static str {
        match self {
            CredentialSource::Chain => "chain",
            CredentialSource::Static(keys) => keys.provider_name,
        }
    }
}

/// A fixed access key and secret. `Debug` never shows the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct StaticCredentials {
    pub access_key_id: String,
    pub secret_access_key: String,
    /// Where they come from, for logs and the result's environment block (`lab`).
    pub provider_name: &'static str,
}

impl fmt::Debug for StaticCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StaticCredentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"** redacted **")
            .field("provider_name", &self.provider_name)
            .finish()
    }
}

/// How to build the process's S3 client.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Explicit endpoint (`http://127.0.0.1:9000`). `None`: AWS's own endpoints.
    /// With an endpoint, path-style addressing is used.
    pub endpoint: Option<String>,
    /// Region; `None` takes it from the AWS chain, falling back to `us-east-1`.
    pub region: Option<String>,
    /// Where credentials come from.
    pub credentials: CredentialSource,
    /// A PEM file of CA certificates trusted besides the webpki roots (`--ca-file`,
    /// `AWS_CA_BUNDLE`).
    pub ca_file: Option<PathBuf>,
}

impl ClientOptions {
    /// Options for an explicit endpoint (path-style, `us-east-1` unless a region is
    /// given) or, without one, for AWS with the region from the chain.
    pub fn for_endpoint(endpoint: Option<String>, region: Option<String>, credentials: CredentialSource) -> Self {
        let region = match &endpoint {
            Some(_) => Some(region.unwrap_or_else(|| "us-east-1".into())),
            None => region,
        };
        ClientOptions {
            endpoint,
            region,
            credentials,
            ca_file: None,
        }
    }

    /// The same options, also trusting the CA certificates of `ca_file`.
    pub fn with_ca_file(mut self, ca_file: Option<PathBuf>) -> Self {
        self.ca_file = ca_file;
        self
    }

    /// Options for real AWS: everything from the standard chain.
    pub fn aws() -> Self {
        ClientOptions {
            endpoint: None,
            region: None,
            credentials: CredentialSource::Chain,
            ca_file: None,
        }
    }
}

/// Per-request settings the SDK applies: retries and timeouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestSettings {
    /// Attempts per request, first included (1 = no retries).
    pub max_attempts: u32,
    /// Limit from sending a request to its response headers.
    pub first_byte_timeout: Duration,
    /// Limit on one attempt (the SDK's attempt timeout).
    pub attempt_timeout: Duration,
}

impl RequestSettings {
    /// Settings for writing or deleting test objects (seed, clean) rather than
    /// measuring: 3 attempts, 10 s to the first byte, `attempt` per attempt.
    pub const fn maintenance(attempt: Duration) -> Self {
        RequestSettings {
            max_attempts: 3,
            first_byte_timeout: Duration::from_secs(10),
            attempt_timeout: attempt,
        }
    }
}

/// The process's S3 client: one SDK client on one [`Transport`] of default settings,
/// built once and reused for seeding, cleaning and other work that is not a sweep; a
/// sweep reads through a [`SweepSession`] of its own ([`SweepClient::session`]). Cheap
/// to clone.
#[derive(Clone, Debug)]
pub struct SweepClient {
    base: aws_sdk_s3::Config,
    transport: Transport,
    endpoint: Option<String>,
    region: String,
    credentials: &'static str,
    derived: Arc<Mutex<Option<(RequestSettings, aws_sdk_s3::Client)>>>,
    readers: Arc<Mutex<Option<(RequestSettings, aws_sdk_s3::Client)>>>,
    sessions: Arc<ReadOnlySessions>,
    /// The base credentials' provider (the chain's, or the static keys), for the lean
    /// client.
    provider: Option<aws_credential_types::provider::SharedCredentialsProvider>,
}

/// Settings of the client that creates ReadOnly sessions: 3 attempts, 10 s each.
const SESSION_SETTINGS: RequestSettings = RequestSettings::maintenance(Duration::from_secs(10));

impl SweepClient {
    /// The first half of building the client: `options` checked, the transport made
    /// with default settings (each sweep's session has its own). The AWS shared
    /// configuration (the credential chain, the region) is loaded by the crate above
    /// that owns aws-config (`s3sweep_aws::sweep_client`) over [`Prepared::http_client`],
    /// then given to [`Prepared::finish`]: the core builds without aws-config, so the
    /// CLI's build and the function's share it.
    pub fn prepare(options: ClientOptions) -> Result<Prepared, ClientError> {
        if let Some(url) = &options.endpoint {
            validate_endpoint(url)?;
        }
        if let Some(region) = &options.region {
            check_region(region, "--region or the request")?;
        }
        let transport = Transport::with_ca_file(TransportSettings::default(), options.ca_file.as_deref())?;
        Ok(Prepared { options, transport })
    }

    /// The client's own transport (seeding, cleaning, the lean client of
    /// [`SweepClient::lean`]), for its counters and settings; not a sweep's.
    pub fn transport(&self) -> &Transport {
        &self.transport
    }

    /// The explicit endpoint, if any.
    pub fn endpoint(&self) -> Option<&str> {
        self.endpoint.as_deref()
    }

    /// The region requests are signed for.
    pub fn region(&self) -> &str {
        &self.region
    }

    /// Where requests go, for messages: the explicit endpoint, or `AWS S3 (REGION)`.
    pub fn endpoint_name(&self) -> String {
        match &self.endpoint {
            Some(url) => url.clone(),
            None => format!("AWS S3 ({})", self.region),
        }
    }

    /// The credential source's name ([`CredentialSource::name`]).
    pub fn credentials(&self) -> &'static str {
        self.credentials
    }

    /// The SDK client for writing and deleting (seed, clean) with the given retries and
    /// timeouts: the SDK's own S3 Express sessions, which are ReadWrite. The same
    /// settings give the same client back; all clients share the transport (and so
    /// the pool).
    pub fn s3(&self, settings: RequestSettings) -> aws_sdk_s3::Client {
        cached(&self.derived, settings, || with_settings(&self.base, settings))
    }

    /// The lean client ([`lean`]) on this client's transport, credentials and S3
    /// Express sessions, with the retries and timeouts of `settings`.
    pub fn lean(&self, settings: RequestSettings) -> LeanClient {
        LeanClient::from_parts(
            self.transport.lane(0).clone(),
            self.endpoint.clone(),
            self.region.clone(),
            self.provider.clone(),
            self.sessions.clone(),
            settings,
        )
    }

    /// The SDK client for the sweep's reads: S3 Express sessions are created
    /// `ReadOnly` ([`express`]), one per bucket for this whole client, whatever the
    /// settings.
    pub fn reader(&self, settings: RequestSettings) -> aws_sdk_s3::Client {
        cached(&self.readers, settings, || {
            reader_config(&self.base, settings, &self.sessions)
        })
    }
}

/// A client half built ([`SweepClient::prepare`]): its options checked and its
/// transport made, waiting for the AWS shared configuration.
#[derive(Debug)]
pub struct Prepared {
    options: ClientOptions,
    transport: Transport,
}

impl Prepared {
    /// The HTTP client the shared configuration's own calls (credentials from STS,
    /// SSO or the instance's metadata) go through: the client's transport.
    pub fn http_client(&self) -> aws_smithy_runtime_api::client::http::SharedHttpClient {
        self.transport.http_client()
    }

    /// The region the options give (`None`: the chain's).
    pub fn region(&self) -> Option<Region> {
        self.options.region.clone().map(Region::new)
    }

    /// The static keys the options give (`None`: the chain's credentials).
    pub fn static_credentials(&self) -> Option<aws_credential_types::Credentials> {
        match &self.options.credentials {
            CredentialSource::Static(keys) => Some(aws_credential_types::Credentials::new(
                keys.access_key_id.clone(),
                keys.secret_access_key.clone(),
                None,
                None,
                keys.provider_name,
            )),
            CredentialSource::Chain => None,
        }
    }

    /// The client, from the shared configuration loaded with [`Self::http_client`],
    /// [`Self::region`] and [`Self::static_credentials`].
    pub fn finish(self, shared: &SdkConfig) -> Result<SweepClient, ClientError> {
        let Prepared { options, transport } = self;
        let region = shared
            .region()
            .map(|r| r.to_string())
            .unwrap_or_else(|| "us-east-1".to_string());
        // The chain's region (AWS_REGION, a profile) is checked as a given one is.
        check_region(&region, "AWS_REGION or the profile's region")?;
        let mut builder = aws_sdk_s3::config::Builder::from(shared)
            .region(Region::new(region.clone()))
            // Bodies are counted, not checked: a CRC per GET is client CPU the seed's
            // question is not about, and S3 only returns checksums when asked.
            .response_checksum_validation(ResponseChecksumValidation::WhenRequired)
            .request_checksum_calculation(RequestChecksumCalculation::WhenRequired)
            // Our own timeouts bound every body; the SDK's stall detector would add a
            // second, differently defined one.
            .stalled_stream_protection(StalledStreamProtectionConfig::disabled())
            // The SDK's rules, cached per bucket rather than per object ([`endpoint`]).
            .endpoint_resolver(endpoint::KeyBlindCache::default());
        if let Some(url) = &options.endpoint {
            builder = builder.endpoint_url(url).force_path_style(true);
        }
        let base = builder.build();
        let sessions = Arc::new(ReadOnlySessions::new(aws_sdk_s3::Client::from_conf(with_settings(
            &base,
            SESSION_SETTINGS,
        ))));
        Ok(SweepClient {
            base,
            transport,
            endpoint: options.endpoint,
            region,
            credentials: options.credentials.name(),
            derived: Arc::new(Mutex::new(None)),
            readers: Arc::new(Mutex::new(None)),
            sessions,
            provider: shared.credentials_provider(),
        })
    }
}

/// The configuration of a reading client: `base` with `settings`, its S3 Express
/// sessions ReadOnly from `sessions`.
fn reader_config(
    base: &aws_sdk_s3::Config,
    settings: RequestSettings,
    sessions: &Arc<ReadOnlySessions>,
) -> aws_sdk_s3::Config {
    with_settings(base, settings)
        .to_builder()
        .push_auth_scheme(ReadOnlyScheme::new(sessions.clone()))
        .interceptor(SessionRefusals(sessions.clone()))
        .interceptor(get::AttemptClock)
        .build()
}

/// The client of `slot` if it has `settings`, else a new one from `config`.
fn cached(
    slot: &Mutex<Option<(RequestSettings, aws_sdk_s3::Client)>>,
    settings: RequestSettings,
    config: impl FnOnce() -> aws_sdk_s3::Config,
) -> aws_sdk_s3::Client {
    let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((have, client)) = slot.as_ref() {
        if *have == settings {
            return client.clone();
        }
    }
    let client = aws_sdk_s3::Client::from_conf(config());
    *slot = Some((settings, client.clone()));
    client
}

/// `base` with the retries and timeouts of `settings`.
fn with_settings(base: &aws_sdk_s3::Config, settings: RequestSettings) -> aws_sdk_s3::Config {
    base.to_builder()
        .retry_config(RetryConfig::standard().with_max_attempts(settings.max_attempts.max(1)))
        .timeout_config(
            TimeoutConfig::builder()
                .read_timeout(settings.first_byte_timeout)
                .operation_attempt_timeout(settings.attempt_timeout)
                .build(),
        )
        .build()
}

/// Where `s3` sends requests, for messages: the explicit endpoint, or `AWS S3
/// (REGION)`.
pub fn endpoint_name(s3: &aws_sdk_s3::Client, endpoint: Option<&str>) -> String {
    match endpoint {
        Some(url) => url.to_string(),
        None => format!("AWS S3 ({})", s3.config().region().map_or("no region", |r| r.as_ref())),
    }
}

/// The endpoint checked by the one rule for endpoints ([`crate::plan::names`]).
fn validate_endpoint(url: &str) -> Result<(), ClientError> {
    crate::plan::names::check_endpoint(url).map_err(|reason| ClientError::InvalidEndpoint {
        url: crate::plan::names::shown(url),
        reason,
    })
}

/// The region checked by the one rule for regions ([`crate::plan::names`]); the SDK's
/// signer panics on one that is not a header value.
fn check_region(region: &str, from: &'static str) -> Result<(), ClientError> {
    crate::plan::names::check_region(region).map_err(|reason| ClientError::InvalidRegion { from, reason })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_validation_names_the_problem() {
        assert!(validate_endpoint("http://127.0.0.1:9000").is_ok());
        assert!(validate_endpoint("https://s3.us-east-1.amazonaws.com").is_ok());
        let err = validate_endpoint("ftp://host").unwrap_err().to_string();
        assert!(err.contains("scheme"), "{err}");
        let err = validate_endpoint("not a url").unwrap_err().to_string();
        assert!(err.contains("not a URL"), "{err}");
    }

    #[test]
    fn static_secrets_are_never_debug_printed() {
        let options = ClientOptions::for_endpoint(
            Some("http://127.0.0.1:9".into()),
            None,
            CredentialSource::Static(StaticCredentials {
                access_key_id: "AKID".into(),
                secret_access_key: "canary-secret".into(),
                provider_name: "test",
            }),
        );
        let shown = format!("{options:?}");
        assert!(shown.contains("AKID") && !shown.contains("canary-secret"), "{shown}");
        assert_eq!(options.region.as_deref(), Some("us-east-1"));
        assert_eq!(
            ClientOptions::for_endpoint(None, None, CredentialSource::Chain).region,
            None
        );
    }
}

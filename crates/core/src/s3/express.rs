//! ReadOnly S3 Express sessions for the sweep's GETs. aws-sdk-s3's own S3 Express
//! identity provider calls `CreateSession` without a session mode, which S3 takes as
//! ReadWrite; a role that may only create ReadOnly sessions (the template's
//! `s3express:SessionMode: ReadOnly` condition) is then refused. The SDK has no knob
//! for the mode, so the reading client replaces the `sigv4-s3express` auth scheme
//! with [`ReadOnlyScheme`]: the SDK's own SigV4 signer (session token in
//! `x-amz-s3session-token`, signing name `s3express`, both set by the SDK's S3 Express
//! plugin) with an identity resolver of ours, [`ReadOnlySessions`], that asks for
//! `SessionMode::ReadOnly`.
//!
//! The resolver keeps one session per bucket for the whole client (every derived
//! client shares it), created by one request while the others wait, and refreshed
//! when less than a fifth of its lifetime (at most 10 s, the SDK's own margin) is
//! left. A GET the server refuses with `ExpiredToken` or `InvalidToken` drops the
//! session it was signed with ([`SessionRefusals`]), so the next GET creates a new
//! one instead of failing until the client's own refresh time.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials;
use aws_runtime::auth::sigv4::SigV4Signer;
use aws_sdk_s3::error::ProvideErrorMetadata;
use aws_sdk_s3::operation::get_object::GetObjectError;
use aws_sdk_s3::types::SessionMode;
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::auth::{AuthScheme, AuthSchemeId, Sign};
use aws_smithy_runtime_api::client::endpoint::EndpointResolverParams;
use aws_smithy_runtime_api::client::identity::{
    Identity, IdentityCacheLocation, IdentityFuture, ResolveIdentity, SharedIdentityResolver,
};
use aws_smithy_runtime_api::client::interceptors::context::{
    BeforeTransmitInterceptorContextRef, FinalizerInterceptorContextRef,
};
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::runtime_components::{GetIdentityResolver, RuntimeComponents};
use aws_smithy_types::config_bag::{ConfigBag, Storable, StoreReplace};

use crate::model::ErrorKind;

use super::errors::{classify, CreateSessionFailed};

/// The auth scheme id the SDK's endpoint rules give directory-bucket requests.
const SCHEME_ID: AuthSchemeId = AuthSchemeId::new("sigv4-s3express");

/// The header the SDK sends the session token in.
const SESSION_TOKEN_HEADER: &str = "x-amz-s3session-token";

/// The provider name of the session credentials (shows in logs).
const PROVIDER_NAME: &str = "s3sweep-express-readonly";

/// The SDK's refresh margin for S3 Express sessions; shorter sessions get a fifth of
/// their lifetime.
const MAX_REFRESH_MARGIN: Duration = Duration::from_secs(10);

/// The session of one bucket: the current one, and a lock so one request creates it.
#[derive(Default)]
struct BucketSession {
    current: RwLock<Option<Cached>>,
    loading: tokio::sync::Mutex<()>,
}

#[derive(Clone)]
struct Cached {
    identity: Identity,
    token: String,
    refresh_at: SystemTime,
}

/// ReadOnly sessions per bucket, created with `create` (a client on the same
/// transport and base credentials, whose `CreateSession` is signed with plain SigV4).
/// The sweep sessions of one client share the cache ([`ReadOnlySessions::sharing`]),
/// as the SDK's own provider is shared by a client: one S3 Express session per bucket
/// per process, created through the transport of the sweep that first needs it.
pub(crate) struct ReadOnlySessions {
    create: aws_sdk_s3::Client,
    buckets: Arc<Mutex<HashMap<String, Arc<BucketSession>>>>,
}

impl fmt::Debug for ReadOnlySessions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.buckets.lock().map(|b| b.len()).unwrap_or(0);
        write!(f, "ReadOnlySessions({n} bucket(s))")
    }
}

impl ReadOnlySessions {
    pub(crate) fn new(create: aws_sdk_s3::Client) -> Self {
        ReadOnlySessions {
            create,
            buckets: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// Sessions created with `create` that share `other`'s cache of them.
    pub(crate) fn sharing(create: aws_sdk_s3::Client, other: &ReadOnlySessions) -> Self {
        ReadOnlySessions {
            create,
            buckets: other.buckets.clone(),
        }
    }

    fn bucket(&self, name: &str) -> Arc<BucketSession> {
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        buckets.entry(name.to_string()).or_default().clone()
    }

    fn fresh(session: &BucketSession, now: SystemTime) -> Option<Identity> {
        let current = session.current.read().unwrap_or_else(|e| e.into_inner());
        current
            .as_ref()
            .filter(|c| now < c.refresh_at)
            .map(|c| c.identity.clone())
    }

    pub(crate) async fn identity(&self, bucket: &str) -> Result<Identity, BoxError> {
        let session = self.bucket(bucket);
        if let Some(identity) = Self::fresh(&session, SystemTime::now()) {
            return Ok(identity);
        }
        let _loading = session.loading.lock().await;
        // Another request may have created it while this one waited.
        if let Some(identity) = Self::fresh(&session, SystemTime::now()) {
            return Ok(identity);
        }
        let asked = SystemTime::now();
        let out = self
            .create
            .create_session()
            .bucket(bucket)
            .session_mode(SessionMode::ReadOnly)
            .send()
            .await
            .map_err(|e| {
                let failure = classify(&e);
                CreateSessionFailed {
                    bucket: bucket.to_string(),
                    kind: failure.kind,
                    message: failure.message,
                }
            })?;
        let creds = out.credentials().ok_or_else(|| CreateSessionFailed {
            bucket: bucket.to_string(),
            kind: ErrorKind::Other,
            message: "the answer holds no credentials".into(),
        })?;
        let expiration = SystemTime::try_from(*creds.expiration()).map_err(|_| CreateSessionFailed {
            bucket: bucket.to_string(),
            kind: ErrorKind::Other,
            message: format!("expiration {} is not a time this system can hold", creds.expiration()),
        })?;
        let lifetime = expiration.duration_since(asked).unwrap_or_default();
        let margin = (lifetime / 5).min(MAX_REFRESH_MARGIN);
        let credentials = Credentials::new(
            creds.access_key_id(),
            creds.secret_access_key(),
            Some(creds.session_token().to_string()),
            Some(expiration),
            PROVIDER_NAME,
        );
        let identity = Identity::new(credentials, Some(expiration));
        *session.current.write().unwrap_or_else(|e| e.into_inner()) = Some(Cached {
            identity: identity.clone(),
            token: creds.session_token().to_string(),
            refresh_at: expiration.checked_sub(margin).unwrap_or(expiration),
        });
        Ok(identity)
    }

    /// Drops `bucket`'s session if it is still the one with `token` (a GET signed with
    /// it was refused), so the next GET creates a new one.
    pub(crate) fn refused(&self, bucket: &str, token: &str) {
        let session = self.bucket(bucket);
        let mut current = session.current.write().unwrap_or_else(|e| e.into_inner());
        if current.as_ref().is_some_and(|c| c.token == token) {
            tracing::info!(bucket, "the server refused the S3 Express session; creating a new one");
            *current = None;
        }
    }
}

/// The bucket of the operation being sent, from its endpoint parameters.
fn bucket_of(cfg: &ConfigBag) -> Option<&str> {
    cfg.load::<EndpointResolverParams>()?
        .get::<aws_sdk_s3::config::endpoint::Params>()?
        .bucket()
}

/// The identity resolver of [`ReadOnlyScheme`]: the bucket's ReadOnly session.
#[derive(Debug, Clone)]
struct ReadOnlyResolver(Arc<ReadOnlySessions>);

impl ResolveIdentity for ReadOnlyResolver {
    fn resolve_identity<'a>(&'a self, _components: &'a RuntimeComponents, cfg: &'a ConfigBag) -> IdentityFuture<'a> {
        IdentityFuture::new(async move {
            let bucket = bucket_of(cfg).ok_or("an S3 Express request without a bucket")?;
            self.0.identity(bucket).await
        })
    }

    fn cache_location(&self) -> IdentityCacheLocation {
        // The resolver caches per bucket itself; the client's identity cache would
        // keep one identity for every bucket.
        IdentityCacheLocation::IdentityResolver
    }
}

/// `sigv4-s3express` with ReadOnly sessions: the SDK's SigV4 signer, our resolver.
#[derive(Debug)]
pub(crate) struct ReadOnlyScheme {
    resolver: SharedIdentityResolver,
    signer: SigV4Signer,
}

impl ReadOnlyScheme {
    pub(crate) fn new(sessions: Arc<ReadOnlySessions>) -> Self {
        ReadOnlyScheme {
            resolver: SharedIdentityResolver::new(ReadOnlyResolver(sessions)),
            signer: SigV4Signer::new(),
        }
    }
}

impl AuthScheme for ReadOnlyScheme {
    fn scheme_id(&self) -> AuthSchemeId {
        SCHEME_ID
    }

    fn identity_resolver(&self, _resolvers: &dyn GetIdentityResolver) -> Option<SharedIdentityResolver> {
        Some(self.resolver.clone())
    }

    fn signer(&self) -> &dyn Sign {
        &self.signer
    }
}

/// Drops a session the server refused (`ExpiredToken`, `InvalidToken`) after the GET
/// that carried it.
#[derive(Debug)]
pub(crate) struct SessionRefusals(pub(crate) Arc<ReadOnlySessions>);

/// The session token a request was sent with (kept in the operation's config bag:
/// the request itself is gone once it was sent).
#[derive(Debug, Clone)]
struct SentToken(String);

impl Storable for SentToken {
    type Storer = StoreReplace<Self>;
}

impl Intercept for SessionRefusals {
    fn name(&self) -> &'static str {
        "SessionRefusals"
    }

    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if let Some(token) = context.request().headers().get(SESSION_TOKEN_HEADER) {
            cfg.interceptor_state().store_put(SentToken(token.to_string()));
        }
        Ok(())
    }

    fn read_after_execution(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let Some(Err(err)) = context.output_or_error() else {
            return Ok(());
        };
        let code = err
            .as_operation_error()
            .and_then(|e| e.downcast_ref::<GetObjectError>())
            .and_then(|e| e.code());
        if !matches!(code, Some("ExpiredToken") | Some("InvalidToken")) {
            return Ok(());
        }
        let token = cfg.load::<SentToken>().map(|t| t.0.clone());
        if let (Some(bucket), Some(token)) = (bucket_of(cfg), token) {
            self.0.refused(bucket, &token);
        }
        Ok(())
    }
}

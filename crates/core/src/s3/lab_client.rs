//! How a client talks to the lab (the embedded S3 server, crate `s3sweep-lab`): its
//! one fixed pair of keys and the client options that use them. Here, below both the
//! lab and the function, so the function can be pointed at a lab
//! (`S3SWEEP_CREDENTIALS=lab`) without depending on the lab's code.

use super::{ClientOptions, CredentialSource, StaticCredentials};

/// Access key the embedded server accepts (and the only one).
pub const LOCAL_ACCESS_KEY: &str = "s3sweep";
/// Secret key of [`LOCAL_ACCESS_KEY`]. Not a secret: it only guards a loopback test server.
pub const LOCAL_SECRET_KEY: &str = "s3sweep-local-secret";

/// The lab's credentials, for a client that talks to it.
pub fn credentials() -> CredentialSource {
    CredentialSource::Static(StaticCredentials {
        access_key_id: LOCAL_ACCESS_KEY.to_string(),
        secret_access_key: LOCAL_SECRET_KEY.to_string(),
        provider_name: "lab",
    })
}

/// Client options for the lab at `endpoint`: its credentials, region us-east-1.
pub fn client_options(endpoint: impl Into<String>) -> ClientOptions {
    ClientOptions::for_endpoint(Some(endpoint.into()), Some("us-east-1".into()), credentials())
}

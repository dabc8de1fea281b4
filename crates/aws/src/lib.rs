//! The S3 client with the AWS environment's configuration: aws-config's shared
//! configuration (the credential chain: environment, profile, SSO, container or
//! instance role; the region) loaded over the client's own transport and handed to the
//! core's [`SweepClient`]. This is the only crate of the workspace below the adapters
//! that depends on aws-config. Its features differ between the CLI's build (with the
//! `sso` and `credentials-process` providers, for a user's profiles) and the function's
//! (without: it has a role), so whatever depends on aws-config is compiled once per
//! build; kept out of the core, that is this small crate and the adapters, not the core
//! (`make test-builds` checks it).

use aws_config::{BehaviorVersion, ConfigLoader};
use s3sweep_core::s3::{ClientError, ClientOptions, Prepared, SweepClient};

/// Builds the process's S3 client from `options`: checked and given a transport by the
/// core ([`SweepClient::prepare`]), then the shared configuration loaded by aws-config
/// (the options' region and static keys when given, the chain's otherwise) and the
/// client finished with it.
pub async fn sweep_client(options: ClientOptions) -> Result<SweepClient, ClientError> {
    let prepared = SweepClient::prepare(options)?;
    let shared = loader(&prepared).load().await;
    prepared.finish(&shared)
}

/// aws-config's defaults over the prepared client's transport, with its region and
/// static keys when it has them.
fn loader(prepared: &Prepared) -> ConfigLoader {
    let mut loader = aws_config::defaults(BehaviorVersion::latest()).http_client(prepared.http_client());
    if let Some(region) = prepared.region() {
        loader = loader.region(region);
    }
    if let Some(keys) = prepared.static_credentials() {
        loader = loader.credentials_provider(keys);
    }
    loader
}

//! Where the commands send requests and with which keys: `--endpoint`, `--region`
//! and `--credentials` made into a client. Credentials follow the endpoint: the lab's
//! fixed keys only when the endpoint is the embedded server (it says so at
//! `GET /_s3sweep/hello`, asked once before the client is built), the standard AWS
//! chain (environment, profile, SSO, role) otherwise, and either one when forced.

use std::time::Duration;

use crate::lab;
use crate::lab::detect::{detect_trusting, DetectError, Detected};
use crate::s3::errors::BucketError;
use crate::s3::{ClientOptions, CredentialSource, SweepClient};

use super::args::{ca_file_or_env, Credentials, TargetArgs};
use super::CliError;

/// How long asking whether the endpoint is the lab waits for a connection, and then for the answer.
pub(crate) const DETECT_TIMEOUT: Duration = Duration::from_secs(3);

impl TargetArgs {
    /// The target flags the user gave, as typed again (` --endpoint URL --region R
    /// --credentials lab --ca-file F`), empty when none: a suggested command repeats
    /// them, so it runs against the same target ([`CliError::in_user_terms`]).
    pub(crate) fn flags(&self) -> String {
        let mut out = String::new();
        let mut add = |flag: &str, value: &str| {
            let quoted = if value.contains(char::is_whitespace) || value.contains('\'') {
                format!("'{}'", value.replace('\'', r"'\''"))
            } else {
                value.to_string()
            };
            out.push_str(&format!(" --{flag} {quoted}"));
        };
        if let Some(e) = &self.endpoint {
            add("endpoint", e);
        }
        if let Some(r) = &self.region {
            add("region", r);
        }
        match self.credential_choice() {
            Credentials::Auto => {}
            Credentials::Lab => add("credentials", "lab"),
            Credentials::Chain => add("credentials", "chain"),
        }
        if let Some(f) = &self.ca_file {
            add("ca-file", &f.to_string_lossy());
        }
        out
    }

    /// The credential choice the flags make (`--aws-credentials` is `chain`).
    pub fn credential_choice(&self) -> Credentials {
        if self.aws_credentials {
            Credentials::Chain
        } else {
            self.credentials
        }
    }

    /// The client for a command on `bucket` (named in errors): the endpoint checked,
    /// asked whether it is the lab when the credentials are `auto`, and the keys that
    /// follow from the answer. An endpoint nothing listens on is an
    /// `EndpointUnreachable` error here, before anything else is tried.
    pub async fn client(&self, bucket: &str) -> Result<SweepClient, CliError> {
        let ca_file = ca_file_or_env(self.ca_file.as_ref());
        let credentials = match (&self.endpoint, self.credential_choice()) {
            (None, Credentials::Lab) => {
                return Err(CliError::Usage(
                    "--credentials lab: the embedded server's keys need --endpoint pointing at it".into(),
                ))
            }
            (None, _) | (Some(_), Credentials::Chain) => CredentialSource::Chain,
            (Some(_), Credentials::Lab) => lab::credentials(),
            (Some(url), Credentials::Auto) => match detect_trusting(url, ca_file.as_deref(), DETECT_TIMEOUT).await {
                Ok(Detected::Lab(hello)) => {
                    tracing::info!(endpoint = %url, version = %hello.version, "the endpoint is the s3sweep lab: signing with its keys");
                    lab::credentials()
                }
                Ok(Detected::NotLab(why)) => {
                    tracing::info!(endpoint = %url, %why, "not the s3sweep lab: signing with the AWS credential chain");
                    CredentialSource::Chain
                }
                Err(DetectError::Unreachable(detail)) => {
                    return Err(CliError::Bucket(BucketError::Unreachable {
                        bucket: bucket.to_string(),
                        endpoint: url.clone(),
                        detail,
                    }))
                }
                Err(DetectError::Tls(detail)) => {
                    return Err(CliError::Bucket(BucketError::TlsHandshake {
                        bucket: bucket.to_string(),
                        endpoint: url.clone(),
                        detail,
                    }))
                }
                Err(e @ DetectError::BadUrl { .. }) => return Err(CliError::flag("--endpoint", e)),
            },
        };
        let options =
            ClientOptions::for_endpoint(self.endpoint.clone(), self.region.clone(), credentials).with_ca_file(ca_file);
        s3sweep_aws::sweep_client(options).await.map_err(|e| match e {
            crate::s3::ClientError::InvalidRegion { .. } => CliError::flag("--region", e),
            e => CliError::flag("--endpoint", e),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flags_given_are_repeated_and_nothing_else() {
        let none = TargetArgs {
            endpoint: None,
            region: None,
            credentials: Credentials::Auto,
            aws_credentials: false,
            ca_file: None,
        };
        assert_eq!(none.flags(), "");
        let all = TargetArgs {
            endpoint: Some("http://127.0.0.1:9000".into()),
            region: Some("eu-west-1".into()),
            credentials: Credentials::Lab,
            aws_credentials: false,
            ca_file: Some("/tmp/my lab/ca.pem".into()),
        };
        assert_eq!(
            all.flags(),
            " --endpoint http://127.0.0.1:9000 --region eu-west-1 --credentials lab --ca-file '/tmp/my lab/ca.pem'"
        );
    }
}

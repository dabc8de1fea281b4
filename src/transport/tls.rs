//! The client side of TLS: which certificates the transport trusts (the webpki roots,
//! plus a CA file the user names with `--ca-file` or `AWS_CA_BUNDLE`), the rustls
//! configuration built from them, the TLS handshake on a connected TCP socket, and
//! the one-line error a failed handshake gives, naming the CA file that was trusted.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use http::Uri;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// Why the trusted certificates could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrustError {
    /// The CA file is missing, unreadable, not PEM, or holds no usable certificate.
    #[error("CA file {path}: {reason}")]
    CaFile { path: PathBuf, reason: String },
}

/// The certificates a transport trusts, and how to say so in an error message.
#[derive(Clone)]
pub(crate) struct Trust {
    pub(crate) config: Arc<rustls::ClientConfig>,
    /// `the webpki roots` or `the webpki roots and the CA file /x/ca.pem (N certificates)`.
    pub(crate) described: Arc<str>,
}

impl Trust {
    /// The webpki roots, and the certificates of `ca_file` when given.
    pub(crate) fn load(ca_file: Option<&Path>) -> Result<Trust, TrustError> {
        let mut roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        let described = match ca_file {
            None => "the webpki roots".to_string(),
            Some(path) => {
                let bad = |reason: String| TrustError::CaFile {
                    path: path.to_path_buf(),
                    reason,
                };
                let text = std::fs::read(path).map_err(|e| bad(format!("cannot be read: {e}")))?;
                let mut added = 0;
                for cert in CertificateDer::pem_slice_iter(&text) {
                    let cert = cert.map_err(|e| bad(format!("is not a PEM certificate file: {e}")))?;
                    roots
                        .add(cert)
                        .map_err(|e| bad(format!("holds a certificate rustls cannot use: {e}")))?;
                    added += 1;
                }
                if added == 0 {
                    return Err(bad("holds no PEM certificate (-----BEGIN CERTIFICATE-----)".into()));
                }
                format!(
                    "the webpki roots and the CA file {} ({added} certificate(s))",
                    path.display()
                )
            }
        };
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("ring supports the default TLS versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Trust {
            config: Arc::new(config),
            described: described.into(),
        })
    }
}

impl fmt::Debug for Trust {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.described)
    }
}

/// A TLS handshake that failed: the host, what rustls said, and what was trusted.
#[derive(Debug)]
pub struct TlsHandshakeError {
    pub host: String,
    pub reason: String,
    pub trusted: Arc<str>,
}

impl fmt::Display for TlsHandshakeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "TLS handshake with {} failed: {}; trusted: {}",
            self.host, self.reason, self.trusted
        )
    }
}
impl std::error::Error for TlsHandshakeError {}

/// The name the server's certificate must carry: the URI's host (an IP address too).
pub(crate) fn server_name(uri: &Uri) -> Result<ServerName<'static>, String> {
    let host = uri.host().unwrap_or_default();
    let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    ServerName::try_from(host.to_string()).map_err(|e| format!("{host:?} is not a valid TLS server name: {e}"))
}

/// The TLS handshake on a connected socket.
pub(crate) async fn handshake(
    trust: &Trust,
    name: ServerName<'static>,
    authority: &str,
    tcp: TcpStream,
) -> Result<TlsStream<TcpStream>, TlsHandshakeError> {
    let connector = tokio_rustls::TlsConnector::from(trust.config.clone());
    connector.connect(name, tcp).await.map_err(|e| TlsHandshakeError {
        host: authority.to_string(),
        reason: e.to_string(),
        trusted: trust.described.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_ca_files_are_named_with_the_reason() {
        let dir = std::env::temp_dir().join(format!("s3sweep-trust-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = dir.join("missing.pem");
        let err = Trust::load(Some(&missing)).unwrap_err().to_string();
        assert!(err.contains("missing.pem") && err.contains("cannot be read"), "{err}");
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let err = Trust::load(Some(&empty)).unwrap_err().to_string();
        assert!(err.contains("empty.pem") && err.contains("no PEM certificate"), "{err}");
        let trust = Trust::load(None).unwrap();
        assert_eq!(&*trust.described, "the webpki roots");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn server_names_come_from_the_host() {
        let ip = server_name(&"https://127.0.0.1:9000/b".parse().unwrap()).unwrap();
        assert!(matches!(ip, ServerName::IpAddress(_)));
        let v6 = server_name(&"https://[::1]:9000/b".parse().unwrap()).unwrap();
        assert!(matches!(v6, ServerName::IpAddress(_)));
        let dns = server_name(&"https://s3.us-east-1.amazonaws.com/".parse().unwrap()).unwrap();
        assert!(matches!(dns, ServerName::DnsName(_)));
    }
}

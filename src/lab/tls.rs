//! HTTPS for the lab: a certificate authority made at start (rcgen, ECDSA P-256), a
//! server certificate it signs for `127.0.0.1`, `::1` and `localhost`, the CA written
//! to a PEM file for clients to trust (`--ca-file`, `AWS_CA_BUNDLE`, boto3's
//! `verify=`), and the rustls acceptor the server hands each accepted socket to. A new
//! CA each start: nothing to keep secret, nothing trusted beyond the lab's life.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// Why HTTPS could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    #[error("making the lab's certificates: {0}")]
    Certificate(String),
    #[error("writing the lab's CA certificate to {path}: {source}")]
    WriteCa { path: PathBuf, source: std::io::Error },
}

/// The lab's certificates: the CA in PEM (what clients trust) and the server's
/// configuration.
pub struct LabCertificates {
    pub ca_pem: String,
    pub(crate) server: Arc<rustls::ServerConfig>,
}

impl std::fmt::Debug for LabCertificates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LabCertificates")
    }
}

/// Makes a new CA and a server certificate signed by it.
pub fn generate() -> Result<LabCertificates, TlsSetupError> {
    let bad = |e: rcgen::Error| TlsSetupError::Certificate(e.to_string());
    let ca_key = KeyPair::generate().map_err(bad)?;
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(bad)?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "s3sweep lab CA (made at start, for 127.0.0.1 only)");
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_cert = ca.self_signed(&ca_key).map_err(bad)?;
    let issuer = Issuer::new(ca, ca_key);

    let server_key = KeyPair::generate().map_err(bad)?;
    let mut server = CertificateParams::new(vec![
        "127.0.0.1".to_string(),
        "::1".to_string(),
        "localhost".to_string(),
    ])
    .map_err(bad)?;
    server.distinguished_name.push(DnType::CommonName, "s3sweep lab");
    server.is_ca = IsCa::NoCa;
    server.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    server.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let server_cert = server.signed_by(&server_key, &issuer).map_err(bad)?;

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server_key.serialize_der()));
    let chain: Vec<CertificateDer<'static>> = vec![server_cert.der().clone(), ca_cert.der().clone()];
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsSetupError::Certificate(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| TlsSetupError::Certificate(e.to_string()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(LabCertificates {
        ca_pem: ca_cert.pem(),
        server: Arc::new(config),
    })
}

/// Writes the CA certificate to `path` (creating its folder).
pub fn write_ca(path: &Path, pem: &str) -> Result<(), TlsSetupError> {
    let wrap = |source| TlsSetupError::WriteCa {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(wrap)?;
    }
    std::fs::write(path, pem).map_err(wrap)
}

/// Where the CA goes when no path is given: a file of its own under the temporary
/// folder, named after the process and the port.
pub fn default_ca_path(port: u16) -> PathBuf {
    std::env::temp_dir()
        .join(format!("s3sweep-lab-{}-{port}", std::process::id()))
        .join("ca.pem")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ca_is_a_pem_certificate_and_each_start_makes_another() {
        let a = generate().unwrap();
        let b = generate().unwrap();
        assert!(a.ca_pem.starts_with("-----BEGIN CERTIFICATE-----"), "{}", a.ca_pem);
        assert_ne!(a.ca_pem, b.ca_pem);
        assert_eq!(a.server.alpn_protocols, vec![b"http/1.1".to_vec()]);
    }
}

//! HTTPS for the lab: a certificate authority made at start (rcgen, ECDSA P-256), a
//! server certificate it signs for `127.0.0.1`, `::1` and `localhost`, the CA written
//! to a PEM file for clients to trust (`--ca-file`, `AWS_CA_BUNDLE`, boto3's
//! `verify=`), and the rustls acceptor the server hands each accepted socket to. A new
//! CA each start: nothing to keep secret, nothing trusted beyond the lab's life. The
//! CA is name-constrained to loopback (`127.0.0.1`, `::1`, `localhost`: it cannot
//! vouch for any other name) and valid for [`CA_VALIDITY_DAYS`] days. [`CaFile`]
//! writes it into a private folder (0700) of its own, made with `mkdir` and the file
//! with `O_CREAT|O_EXCL|O_NOFOLLOW` (nothing planted at either path is followed or
//! reused), and removes both when dropped (when the server stops).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};

use rcgen::{
    BasicConstraints, CertificateParams, CidrSubnet, DnType, ExtendedKeyUsagePurpose, GeneralSubtree, IsCa, Issuer,
    KeyPair, KeyUsagePurpose, NameConstraints,
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

/// How long the lab's CA and server certificate are valid, in days from start.
pub const CA_VALIDITY_DAYS: i64 = 7;

/// The only names the lab's CA may vouch for.
fn loopback_only() -> NameConstraints {
    NameConstraints {
        permitted_subtrees: vec![
            GeneralSubtree::IpAddress(CidrSubnet::from_v4_prefix([127, 0, 0, 1], 32)),
            GeneralSubtree::IpAddress(CidrSubnet::from_v6_prefix(std::net::Ipv6Addr::LOCALHOST.octets(), 128)),
            GeneralSubtree::DnsName("localhost".to_string()),
        ],
        excluded_subtrees: Vec::new(),
    }
}

/// Valid from an hour ago (clocks differ a little) for [`CA_VALIDITY_DAYS`].
fn short_lived(params: &mut CertificateParams) {
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - time::Duration::hours(1);
    params.not_after = now + time::Duration::days(CA_VALIDITY_DAYS);
}

/// Makes a new CA and a server certificate signed by it.
pub fn generate() -> Result<LabCertificates, TlsSetupError> {
    let bad = |e: rcgen::Error| TlsSetupError::Certificate(e.to_string());
    let ca_key = KeyPair::generate().map_err(bad)?;
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(bad)?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca.name_constraints = Some(loopback_only());
    short_lived(&mut ca);
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
    short_lived(&mut server);
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

/// The lab's CA certificate on disk; dropping it removes the file, and the folder when
/// it made one.
#[derive(Debug)]
pub struct CaFile {
    path: PathBuf,
    /// The private folder it made (None: the file is at a path the user chose).
    dir: Option<PathBuf>,
}

impl CaFile {
    /// Writes `pem` to `path`, or (None) into a new private folder under the
    /// temporary folder. An existing file or link at the path is an error, never
    /// followed or replaced.
    pub fn create(path: Option<&Path>, port: u16, pem: &str) -> Result<CaFile, TlsSetupError> {
        let (path, dir) = match path {
            Some(p) => (p.to_path_buf(), None),
            None => {
                let dir = private_dir(port)?;
                (dir.join("ca.pem"), Some(dir))
            }
        };
        let wrap = |source| TlsSetupError::WriteCa {
            path: path.clone(),
            source,
        };
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .and_then(|mut f| f.write_all(pem.as_bytes()).and_then(|()| f.sync_all()));
        if let Err(e) = written {
            // Nothing at `path` is ours to remove (it may be what was planted there);
            // only the empty folder made above is.
            if let Some(dir) = &dir {
                let _ = std::fs::remove_dir(dir);
            }
            return Err(wrap(e));
        }
        Ok(CaFile { path, dir })
    }

    /// Where the CA certificate is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for CaFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// A new folder only this user can enter, with an unpredictable name.
fn private_dir(port: u16) -> Result<PathBuf, TlsSetupError> {
    let mut last = None;
    for _ in 0..8 {
        let dir = std::env::temp_dir().join(format!(
            "s3sweep-lab-{}-{port}-{:016x}",
            std::process::id(),
            rand::random::<u64>()
        ));
        // mkdir(2) never follows a link at the last component: anything already
        // there (a planted symlink included) is EEXIST.
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) => last = Some((dir, e)),
        }
    }
    let (path, source) = last.expect("tried at least once");
    Err(TlsSetupError::WriteCa { path, source })
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

    #[test]
    fn the_ca_file_is_private_refuses_links_and_goes_away() {
        use std::os::unix::fs::PermissionsExt;
        let ca = CaFile::create(None, 1, "pem").unwrap();
        let dir = ca.path().parent().unwrap().to_path_buf();
        assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
        assert_eq!(
            std::fs::metadata(ca.path()).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(std::fs::read_to_string(ca.path()).unwrap(), "pem");
        let target = dir.join("target");
        std::fs::write(&target, "mine").unwrap();
        let link = dir.join("link.pem");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(
            CaFile::create(Some(&link), 1, "pem").is_err(),
            "a link is never followed"
        );
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "mine");
        std::fs::remove_file(&link).unwrap();
        std::fs::remove_file(&target).unwrap();
        let path = ca.path().to_path_buf();
        drop(ca);
        assert!(!path.exists() && !dir.exists(), "removed on drop");
    }
}

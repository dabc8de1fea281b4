//! The client side of TLS: which certificates the transport trusts (the webpki roots,
//! plus a CA file the user names with `--ca-file` or `AWS_CA_BUNDLE`), the rustls
//! configuration built from them, the TLS handshake on a connected TCP socket, and
//! the one-line error a failed handshake gives, naming the CA file that was trusted.
//!
//! Two adapters keep HTTPS reads close to plain HTTP's (measured: `recvfrom` calls and
//! client CPU per GET, docs/performance.md):
//! - rustls reads its records from the socket about 4 KiB at a time, so a 46 KB body
//!   took seven `recvfrom` calls per GET where plain HTTP takes one. [`GulpReader`]
//!   sits between the socket and rustls and reads the socket in gulps of up to
//!   [`GULP_BYTES`] (two calls per GET), which rustls then takes in small pieces from
//!   memory;
//! - tokio-rustls hands out one TLS record (at most 16 KiB) per read, so hyper passed a
//!   body on in three or four pieces, each a wake-up of the task reading it.
//!   [`FillTls`] keeps reading while plaintext is at hand without I/O, so hyper gets
//!   as much as its buffer takes, as it does over plain TCP.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use http::Uri;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
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
pub struct Trust {
    pub(crate) config: Arc<rustls::ClientConfig>,
    /// `the webpki roots` or `the webpki roots and the CA file /x/ca.pem (N certificates)`.
    pub(crate) described: Arc<str>,
}

impl Trust {
    /// The webpki roots, and the certificates of `ca_file` when given.
    pub fn load(ca_file: Option<&Path>) -> Result<Trust, TrustError> {
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
                let text = crate::sys::files::read_capped(path, MAX_CA_FILE_BYTES, "a CA file")
                    .map_err(|e| bad(format!("cannot be read: {e}")))?;
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

/// A host no certificate can name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{host:?} is not a valid TLS server name: {reason}")]
pub struct BadServerName {
    pub host: String,
    /// rustls's reason.
    pub reason: String,
}

/// The name the server's certificate must carry: the URI's host (an IP address too).
pub fn server_name(uri: &Uri) -> Result<ServerName<'static>, BadServerName> {
    let host = uri.host().unwrap_or_default();
    let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    ServerName::try_from(host.to_string()).map_err(|e| BadServerName {
        host: host.to_string(),
        reason: e.to_string(),
    })
}

/// The most one socket read under TLS takes in: a 46 KB response in two reads. 64 KiB
/// (one read) measured the same CPU per GET, but raised the peak RSS of `make demo`
/// (up to 256 connections busy at once) from 62 to 93 MiB.
/// Most bytes of a `--ca-file` read: a bundle of every public root is about 250 KB.
const MAX_CA_FILE_BYTES: u64 = 16 << 20;

pub(crate) const GULP_BYTES: usize = 32 * 1024;

/// A TCP socket read in gulps of up to [`GULP_BYTES`] and handed out in whatever pieces
/// the reader asks for; writes go straight through. The buffer exists only while it
/// holds unread bytes, so an idle connection keeps none.
pub(crate) struct GulpReader {
    pub(crate) io: TcpStream,
    buf: Vec<u8>,
    start: usize,
}

impl GulpReader {
    pub(crate) fn new(io: TcpStream) -> Self {
        GulpReader {
            io,
            buf: Vec::new(),
            start: 0,
        }
    }
}

impl AsyncRead for GulpReader {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, out: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.start == this.buf.len() {
            if out.remaining() >= GULP_BYTES {
                // A large read gains nothing from the buffer.
                return Pin::new(&mut this.io).poll_read(cx, out);
            }
            let mut gulp = Vec::with_capacity(GULP_BYTES);
            let mut into = ReadBuf::uninit(&mut gulp.spare_capacity_mut()[..GULP_BYTES]);
            ready!(Pin::new(&mut this.io).poll_read(cx, &mut into))?;
            let n = into.filled().len();
            // SAFETY: `into` wrote (and so initialised) the first `n` bytes of `gulp`'s
            // spare capacity, and `n <= GULP_BYTES <= capacity`.
            unsafe { gulp.set_len(n) };
            this.buf = gulp;
            this.start = 0;
            if n == 0 {
                return Poll::Ready(Ok(()));
            }
        }
        let n = out.remaining().min(this.buf.len() - this.start);
        out.put_slice(&this.buf[this.start..this.start + n]);
        this.start += n;
        if this.start == this.buf.len() {
            this.buf = Vec::new();
            this.start = 0;
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for GulpReader {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

impl GulpReader {
    /// Bytes read from the socket that the reader has not taken yet.
    fn unread(&self) -> usize {
        self.buf.len() - self.start
    }
}

/// A TLS stream whose reads return all the plaintext that can be had without I/O (up to
/// the caller's buffer), not one record at a time.
pub struct FillTls(pub(crate) TlsStream<GulpReader>);

impl AsyncRead for FillTls {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, out: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let tls = &mut self.get_mut().0;
        ready!(Pin::new(&mut *tls).poll_read(cx, out))?;
        while out.remaining() > 0 {
            let (gulp, conn) = tls.get_mut();
            let at_hand = gulp.unread() > 0
                || conn
                    .process_new_packets()
                    .is_ok_and(|state| state.plaintext_bytes_to_read() > 0);
            if !at_hand {
                break;
            }
            let before = out.filled().len();
            match Pin::new(&mut *tls).poll_read(cx, out) {
                Poll::Ready(Ok(())) if out.filled().len() > before => {}
                // End of stream, nothing more yet, or an error the next read will report:
                // hand out what this read has.
                _ => break,
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for FillTls {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().0).poll_write(cx, buf)
    }
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().0).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_flush(cx)
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_shutdown(cx)
    }
}

/// The TLS handshake on a connected socket.
pub async fn handshake(
    trust: &Trust,
    name: ServerName<'static>,
    authority: &str,
    tcp: TcpStream,
) -> Result<FillTls, TlsHandshakeError> {
    let connector = tokio_rustls::TlsConnector::from(trust.config.clone());
    match connector.connect(name, GulpReader::new(tcp)).await {
        Ok(tls) => Ok(FillTls(tls)),
        Err(e) => Err(TlsHandshakeError {
            host: authority.to_string(),
            reason: e.to_string(),
            trusted: trust.described.clone(),
        }),
    }
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

    #[tokio::test]
    async fn gulps_are_handed_out_in_the_pieces_asked_for() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let sent: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let expected = sent.clone();
        let writer = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            socket.write_all(&sent).await.unwrap();
        });
        let mut reader = GulpReader::new(TcpStream::connect(addr).await.unwrap());
        let mut got = Vec::new();
        let mut piece = [0u8; 4096];
        loop {
            let n = reader.read(&mut piece).await.unwrap();
            if n == 0 {
                break;
            }
            assert!(reader.buf.len() <= GULP_BYTES);
            got.extend_from_slice(&piece[..n]);
        }
        assert_eq!(got, expected);
        assert!(reader.buf.is_empty(), "no buffer kept once drained");
        writer.await.unwrap();
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

//! Is an endpoint the embedded server? The lab answers `GET /_s3sweep/hello` with a
//! small JSON document ([`Hello`]); [`detect_trusting`] asks once, so a client signs with the
//! lab's fixed keys only when the endpoint really is the lab, and with the standard
//! AWS chain otherwise. An `https://` endpoint (the lab with `--tls`) is asked over
//! TLS, trusting the CA file given (the lab's) besides the webpki roots.

use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde::{Deserialize, Serialize};

use crate::transport::{handshake, server_name, Trust};

/// Path where the lab says who it is; like the fault tally's path, not a valid bucket
/// name, so never an S3 request.
pub const HELLO_PATH: &str = "/_s3sweep/hello";

/// The `server` value the lab answers with.
pub(crate) const SERVER_NAME: &str = "s3sweep";

/// What the lab says at [`HELLO_PATH`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// Always [`SERVER_NAME`].
    pub server: String,
    /// The s3sweep version serving.
    pub version: String,
    /// What it is, in words.
    pub description: String,
}

impl Hello {
    /// This build's answer.
    pub(crate) fn current() -> Self {
        Hello {
            server: SERVER_NAME.to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            description: "the s3sweep embedded S3 server (fixed local credentials)".to_string(),
        }
    }
}

/// What the question found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Detected {
    /// The endpoint is the lab.
    Lab(Hello),
    /// Something else answered (or, for `https://`, nothing was asked): why we think so.
    NotLab(String),
}

/// The endpoint could not be asked at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DetectError {
    #[error("invalid endpoint URL {url:?}: {reason}")]
    BadUrl { url: String, reason: String },
    /// No TCP connection: refused, no route, or no answer to the connect in time.
    #[error("{0}")]
    Unreachable(String),
    /// An `https://` endpoint whose TLS handshake failed (its certificate is not
    /// trusted): the message names the CA that was trusted.
    #[error("{0}")]
    Tls(String),
}

/// Asks `endpoint` (`http://host:port`) whether it is the lab, within `timeout` for
/// the connection and again for the answer. A server that accepts the connection
/// but answers anything else (a 403, a 404, no answer in time) is not the lab.
#[cfg(test)]
pub(crate) async fn detect(endpoint: &str, timeout: Duration) -> Result<Detected, DetectError> {
    detect_trusting(endpoint, None, timeout).await
}

/// Asks `endpoint` whether it is the lab, within `timeout` for the connection and
/// again for the answer, trusting `ca_file` for an `https://` endpoint. The lab's TLS
/// server answers the question like its plain one ([`super::tls`]).
pub async fn detect_trusting(
    endpoint: &str,
    ca_file: Option<&Path>,
    timeout: Duration,
) -> Result<Detected, DetectError> {
    let bad = |reason: &str| DetectError::BadUrl {
        url: endpoint.to_string(),
        reason: reason.to_string(),
    };
    let base: http::Uri = endpoint.parse().map_err(|_| bad("not a URL"))?;
    match base.scheme_str() {
        Some("http") => {}
        Some("https") => return detect_https(&base, ca_file, timeout).await,
        _ => return Err(bad("the scheme must be http or https")),
    }
    let authority = base.authority().ok_or_else(|| bad("no host"))?;
    let uri: http::Uri = format!("http://{authority}{HELLO_PATH}")
        .parse()
        .map_err(|_| bad("not a URL"))?;
    let mut connector = HttpConnector::new();
    connector.set_connect_timeout(Some(timeout));
    connector.set_nodelay(true);
    let client: Client<_, Empty<Bytes>> = Client::builder(TokioExecutor::new()).build(connector);
    let ask = async {
        // Err(true): no connection; Err(false): connected, then the exchange failed.
        let response = client.get(uri).await.map_err(|e| (e.is_connect(), innermost(&e)))?;
        let status = response.status();
        let body = Limited::new(response.into_body(), 4096).collect().await;
        Ok::<_, (bool, String)>((status, body.map(|b| b.to_bytes()).ok()))
    };
    judge(tokio::time::timeout(timeout, ask).await, timeout, "")
}

/// The question's exchange: the status and body, or (connected?, why) it failed.
type Exchange = Result<(http::StatusCode, Option<Bytes>), (bool, String)>;

/// What the exchange says: `Err(true, why)` no connection, `Err(false, why)`
/// connected and then the exchange failed (a failed TLS handshake is marked), else the
/// status and body; `None` when no answer came within `timeout`.
fn judge(
    answer: Result<Exchange, tokio::time::error::Elapsed>,
    timeout: Duration,
    over: &str,
) -> Result<Detected, DetectError> {
    match answer {
        Err(_) => Ok(Detected::NotLab(format!(
            "no answer to GET {HELLO_PATH} within {} ms",
            timeout.as_millis()
        ))),
        Ok(Err((true, why))) => Err(DetectError::Unreachable(why)),
        // Something is there, and it is not the lab (or its certificate is not trusted).
        Ok(Err((false, why))) => match why.strip_prefix(TLS_MARK) {
            Some(tls) => Err(DetectError::Tls(tls.to_string())),
            None => Ok(Detected::NotLab(format!("GET {HELLO_PATH}{over} failed: {why}"))),
        },
        Ok(Ok((status, body))) => {
            let hello = body.and_then(|b| serde_json::from_slice::<Hello>(&b).ok());
            match hello {
                Some(h) if status.is_success() && h.server == SERVER_NAME => Ok(Detected::Lab(h)),
                _ => Ok(Detected::NotLab(format!(
                    "GET {HELLO_PATH} answered HTTP {}",
                    status.as_u16()
                ))),
            }
        }
    }
}

/// Marks a failed handshake among the question's failures.
const TLS_MARK: &str = "tls: ";

/// The question over TLS: a connection of its own, the handshake trusting `ca_file`, one
/// GET on HTTP/1.1. A failed handshake means "not (reachable as) the lab": the client
/// built next reports the certificate problem itself.
async fn detect_https(base: &http::Uri, ca_file: Option<&Path>, timeout: Duration) -> Result<Detected, DetectError> {
    let authority = base.authority().map(|a| a.to_string()).unwrap_or_default();
    let port = base.port_u16().unwrap_or(443);
    let host = base.host().unwrap_or_default().to_string();
    let ask = async {
        let tcp = tokio::net::TcpStream::connect((host.trim_start_matches('[').trim_end_matches(']'), port))
            .await
            .map_err(|e| (true, e.to_string()))?;
        let _ = tcp.set_nodelay(true);
        let trust = Trust::load(ca_file).map_err(|e| (false, e.to_string()))?;
        let name = server_name(base).map_err(|e| (false, e.to_string()))?;
        let tls = handshake(&trust, name, &authority, tcp)
            .await
            .map_err(|e| (false, format!("{TLS_MARK}{e}")))?;
        let (mut send, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls))
            .await
            .map_err(|e| (false, e.to_string()))?;
        tokio::spawn(conn);
        let request = http::Request::get(HELLO_PATH)
            .header(http::header::HOST, &authority)
            .body(Empty::<Bytes>::new())
            .map_err(|e| (false, e.to_string()))?;
        let response = send.send_request(request).await.map_err(|e| (false, e.to_string()))?;
        let status = response.status();
        let body = Limited::new(response.into_body(), 4096).collect().await;
        Ok::<_, (bool, String)>((status, body.map(|b| b.to_bytes()).ok()))
    };
    judge(tokio::time::timeout(timeout, ask).await, timeout, " over TLS")
}

/// The `Display` of the innermost source of an error.
fn innermost(err: &(dyn std::error::Error + 'static)) -> String {
    let mut e = err;
    while let Some(s) = e.source() {
        e = s;
    }
    e.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{start, ServerConfig};

    #[tokio::test]
    async fn the_lab_says_who_it_is_and_others_do_not() {
        let server = start(ServerConfig::default()).await.unwrap();
        let answer = detect(&server.endpoint(), Duration::from_secs(2)).await.unwrap();
        assert_eq!(answer, Detected::Lab(Hello::current()));

        // Something that answers 404 to everything is not the lab.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            while let Ok((mut s, _)) = listener.accept().await {
                let mut buf = [0u8; 1024];
                let _ = s.read(&mut buf).await;
                let _ = s
                    .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                    .await;
            }
        });
        let answer = detect(&format!("http://{addr}"), Duration::from_secs(2)).await.unwrap();
        assert!(
            matches!(&answer, Detected::NotLab(why) if why.contains("404")),
            "{answer:?}"
        );

        // Nothing listening: unreachable, named.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let err = detect(&format!("http://127.0.0.1:{port}"), Duration::from_secs(2))
            .await
            .unwrap_err();
        assert!(matches!(err, DetectError::Unreachable(_)), "{err:?}");
        assert!(err.to_string().to_lowercase().contains("refused"), "{err}");

        // Over TLS: a server that does not speak TLS fails the handshake, named as such.
        let err = detect(&format!("https://{addr}"), Duration::from_secs(2))
            .await
            .unwrap_err();
        assert!(matches!(err, DetectError::Tls(_)), "{err:?}");
        assert!(matches!(
            detect("ftp://x", Duration::from_secs(2)).await,
            Err(DetectError::BadUrl { .. })
        ));
    }
}

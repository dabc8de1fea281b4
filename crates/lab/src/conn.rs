//! The HTTP/TCP layer of the embedded server: a hyper service per accepted connection,
//! around the s3s service, that authenticates requests signed for `s3express` (directory
//! buckets: [`super::express::check`]) before s3s sees them, carries out the
//! connection-level faults [`super::faults::WithFaults`] marks (reset before the
//! headers, reset or stall or truncation mid-body), and answers `GET /_s3sweep/faults`
//! and `GET /_s3sweep/sessions` and `GET /_s3sweep/network` with the fault, session
//! and network tallies as JSON, and `GET /_s3sweep/hello` with who it is (how a
//! client tells the lab from S3). Each S3 request is in flight for the idle timeout
//! ([`super::idle`]) until its response body is written.
//!
//! A reset is a real TCP RST: the socket gets `SO_LINGER` 0 and the connection is then
//! dropped, so the client sees `ECONNRESET`, not a clean end of stream. A truncated
//! body is a clean close: the announced `Content-Length` is never reached.

use std::future::Future;
use std::os::fd::RawFd;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body as HttpBody, Frame};
use hyper::body::Incoming;
use s3s::service::S3Service;
use s3s::{Body, HttpError};

use super::detect::{Hello, HELLO_PATH};
use super::express::{check, Decision, PayloadCheck};
use super::faults::{ConnectionFault, Faults, InjectedFault};
use super::idle::{self, Activity};
use super::network::{Network, NETWORK_PATH};
use super::sessions::{Sessions, SESSIONS_PATH};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Path of the fault tally endpoint (not a valid bucket name, so never an S3 request).
pub const FAULTS_PATH: &str = "/_s3sweep/faults";

/// A small JSON response.
fn json_response(doc: &serde_json::Value) -> Result<http::Response<Body>, HttpError> {
    http::Response::builder()
        .status(200)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Body::from(doc.to_string()))
        .map_err(|e| HttpError::new(Box::new(e)))
}

/// Answers a connection past the lab's connection cap and drops it: over HTTP a
/// 503 `SlowDown` written at once if the socket takes it (never waited for), over
/// HTTPS nothing (the client has not done its handshake yet), so it is just closed.
pub(crate) fn refuse_busy(stream: tokio::net::TcpStream, tls: bool) {
    if !tls {
        let body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code><Message>too many connections to the lab (serve --max-connections)</Message><RequestId>s3sweep-lab</RequestId></Error>";
        let answer = format!(
            "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/xml\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = stream.try_write(answer.as_bytes());
    }
    drop(stream);
}

/// The accepted socket of one connection, to reset it.
#[derive(Debug)]
pub(crate) struct ConnSocket {
    fd: RawFd,
}

impl ConnSocket {
    pub(crate) fn new(fd: RawFd) -> Self {
        ConnSocket { fd }
    }

    /// Makes the coming close an RST (`SO_LINGER` on, 0 seconds).
    fn arm_reset(&self) {
        let linger = libc::linger {
            l_onoff: 1,
            l_linger: 0,
        };
        // SAFETY: `fd` is the socket of the connection whose task calls this (the
        // service and its bodies are only polled while hyper owns the open stream);
        // setsockopt only reads the struct we pass.
        let rc = unsafe {
            libc::setsockopt(
                self.fd,
                libc::SOL_SOCKET,
                libc::SO_LINGER,
                &linger as *const libc::linger as *const libc::c_void,
                std::mem::size_of::<libc::linger>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            tracing::warn!(err = %std::io::Error::last_os_error(), "setting SO_LINGER 0 failed");
        }
    }
}

/// The per-connection service: faults and the tally endpoint around s3s.
#[derive(Clone)]
pub(crate) struct ConnService {
    pub(crate) inner: S3Service,
    pub(crate) faults: Arc<Faults>,
    pub(crate) sessions: Arc<Sessions>,
    pub(crate) socket: Arc<ConnSocket>,
    pub(crate) network: Arc<Network>,
    pub(crate) activity: Arc<Activity>,
}

type ResponseFuture = Pin<Box<dyn Future<Output = Result<http::Response<Body>, HttpError>> + Send>>;

impl hyper::service::Service<http::Request<Incoming>> for ConnService {
    type Response = http::Response<Body>;
    type Error = HttpError;
    type Future = ResponseFuture;

    /// Every request is in flight for the idle timeout until its response is written.
    fn call(&self, req: http::Request<Incoming>) -> Self::Future {
        let in_flight = self.activity.begin();
        let response = self.route(req);
        Box::pin(async move { response.await.map(|resp| idle::track(resp, in_flight)) })
    }
}

impl ConnService {
    /// The lab's own JSON documents (fault tally, hello, sessions, network), answered
    /// for a GET of their path; `None` for any other request.
    fn control_document(&self, req: &http::Request<Incoming>) -> Option<serde_json::Value> {
        if req.method() != http::Method::GET {
            return None;
        }
        let path = req.uri().path();
        if path == FAULTS_PATH {
            let doc = serde_json::json!({
                "tally": self.faults.tally(),
                "timing": self.faults.timing(),
            });
            return Some(doc);
        }
        if path == HELLO_PATH {
            let doc = serde_json::to_value(Hello::current()).unwrap_or_default();
            return Some(doc);
        }
        if path == SESSIONS_PATH {
            let doc = serde_json::json!({
                "tally": self.sessions.tally(),
                "ttl_s": self.sessions.ttl().as_secs_f64(),
            });
            return Some(doc);
        }
        if path == NETWORK_PATH {
            let doc = serde_json::to_value(self.network.tally()).unwrap_or_default();
            return Some(doc);
        }
        None
    }

    fn route(&self, req: http::Request<Incoming>) -> ResponseFuture {
        if let Some(doc) = self.control_document(&req) {
            return Box::pin(std::future::ready(json_response(&doc)));
        }
        let (mut parts, body) = req.into_parts();
        let mut payload_sha256 = None;
        match check(&parts, &self.sessions) {
            Decision::NotExpress => {}
            Decision::Accepted(auth, sha256) => {
                // s3s refuses the `s3express` signing name: it sees an unsigned request
                // with the verdict attached, which the lab's access check honours; the
                // body is checked against the signed hash here, as s3s would.
                parts.headers.remove(http::header::AUTHORIZATION);
                parts.extensions.insert(auth);
                payload_sha256 = sha256;
            }
            Decision::Refused(refusal) => return Box::pin(std::future::ready(Ok(refusal.response()))),
        }
        let response: Pin<Box<dyn Future<Output = Result<http::Response<Body>, HttpError>> + Send>> =
            match payload_sha256 {
                None => hyper::service::Service::call(&self.inner, http::Request::from_parts(parts, body)),
                Some(hex) => {
                    let inner = self.inner.clone();
                    let body = Body::http_body_unsync(PayloadCheck::new(body, hex));
                    Box::pin(async move { inner.call(http::Request::from_parts(parts, body)).await })
                }
            };
        let faults = self.faults.clone();
        let socket = self.socket.clone();
        Box::pin(async move { cut_if_faulted(response.await?, &faults, socket) })
    }
}

/// A response the store marked with a connection-level fault gets its connection
/// reset before the headers or its body cut after half; any other passes unchanged.
fn cut_if_faulted(
    mut resp: http::Response<Body>,
    faults: &Faults,
    socket: Arc<ConnSocket>,
) -> Result<http::Response<Body>, HttpError> {
    let Some(InjectedFault(kind)) = resp.extensions_mut().remove::<InjectedFault>() else {
        return Ok(resp);
    };
    let cut = match kind {
        ConnectionFault::ResetBeforeHeaders => {
            socket.arm_reset();
            return Err(HttpError::new("injected fault: reset-before-headers".into()));
        }
        ConnectionFault::ResetMidBody => BodyCut::Reset,
        ConnectionFault::StallBody => BodyCut::Stall,
        ConnectionFault::TruncatedBody => BodyCut::Truncate,
    };
    let length: u64 = resp
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let pause = match cut {
        BodyCut::Stall => Duration::from_millis(faults.timing().stall_ms),
        // Long enough for hyper to flush what was sent before the cut.
        BodyCut::Reset | BodyCut::Truncate => Duration::from_millis(5),
    };
    let body = std::mem::take(resp.body_mut());
    *resp.body_mut() = Body::http_body_unsync(CutBody {
        inner: body,
        cut,
        limit: length / 2,
        sent: 0,
        pause,
        sleep: None,
        socket,
        done: false,
    });
    Ok(resp)
}

/// How a [`CutBody`] ends, after half the body: the connection-level faults that act
/// mid-body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyCut {
    /// `reset-mid-body`: an RST.
    Reset,
    /// `stall-body`: nothing for the stall, then an error that closes the connection.
    Stall,
    /// `truncated-body`: a clean end short of the announced length.
    Truncate,
}

/// A response body that sends `limit` bytes, waits `pause`, then ends the way `cut`
/// says: an RST (`reset-mid-body`), an error that closes the connection
/// (`stall-body`, after its long pause), or a clean end short of the announced
/// length (`truncated-body`).
struct CutBody {
    inner: Body,
    cut: BodyCut,
    limit: u64,
    sent: u64,
    pause: Duration,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
    socket: Arc<ConnSocket>,
    done: bool,
}

impl HttpBody for CutBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        while this.sent < this.limit {
            match Pin::new(&mut this.inner).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(frame))) => {
                    let Ok(mut data) = frame.into_data() else { continue };
                    let room = (this.limit - this.sent) as usize;
                    if data.len() > room {
                        data.truncate(room);
                    }
                    this.sent += data.len() as u64;
                    if data.is_empty() {
                        continue;
                    }
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(None) => break,
            }
        }
        let pause = this.pause;
        let sleep = this.sleep.get_or_insert_with(|| Box::pin(tokio::time::sleep(pause)));
        if sleep.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        this.done = true;
        match this.cut {
            BodyCut::Truncate => Poll::Ready(None),
            BodyCut::Reset => {
                this.socket.arm_reset();
                Poll::Ready(Some(Err("injected fault: reset-mid-body".into())))
            }
            BodyCut::Stall => Poll::Ready(Some(Err(format!(
                "injected fault: stall-body (stalled {} ms)",
                pause.as_millis()
            )
            .into()))),
        }
    }
}

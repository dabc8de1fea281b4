//! The connector under the pool: a per-host connection cap (each connection holds a
//! semaphore permit for its life), the connect timeout, TCP connect then (for `https`)
//! the TLS handshake, each timed and counted (also into the requesting task's
//! [`super::RequestProbe`]), and the mapping of hyper-util errors to the SDK's connector
//! error kinds.

use std::collections::HashMap;
use std::error::Error as StdError;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

use aws_smithy_runtime_api::client::result::ConnectorError;
use http::Uri;
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector as TcpConnector};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::counters::{HeldBody, InFlight};
use super::tls::{handshake, server_name, FillTls, Trust};
use super::{current_probe, Counters, REQUEST_SERVED};

pub(crate) type BoxError = Box<dyn StdError + Send + Sync>;

#[derive(Debug)]
pub(crate) struct FirstByteTimeout(pub(crate) Duration);

impl fmt::Display for FirstByteTimeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no response headers within {} ms", self.0.as_millis())
    }
}
impl StdError for FirstByteTimeout {}

#[derive(Debug)]
struct ConnectTimeout(Duration);

impl fmt::Display for ConnectTimeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "connection not established within {} ms", self.0.as_millis())
    }
}
impl StdError for ConnectTimeout {}

fn find_source<'a, E: StdError + 'static>(err: &'a (dyn StdError + 'static)) -> Option<&'a E> {
    let mut next = Some(err);
    while let Some(err) = next {
        if let Some(found) = err.downcast_ref::<E>() {
            return Some(found);
        }
        next = err.source();
    }
    None
}

/// What the connector returns for one attempt's outcome: a timeout to the headers, a
/// connection error, or the response, whose body keeps the request `in_flight` (a
/// throttled one counted, unless a CreateSession call's: `counters` is `None` for
/// those).
pub(crate) fn answer_of(
    response: Option<Result<http::Response<hyper::body::Incoming>, hyper_util::client::legacy::Error>>,
    read_timeout: Option<Duration>,
    counters: Option<&Arc<Counters>>,
    in_flight: InFlight,
) -> Result<http::Response<aws_smithy_types::body::SdkBody>, ConnectorError> {
    let Some(response) = response else {
        let limit = read_timeout.unwrap_or_default();
        return Err(ConnectorError::timeout(Box::new(FirstByteTimeout(limit))));
    };
    let response = response
        .map_err(|err| classify_hyper_error(Box::new(err)))?
        .map(|body| aws_smithy_types::body::SdkBody::from_body_1_x(HeldBody::new(body, in_flight)));
    if let Some(counters) = counters {
        if crate::model::ErrorKind::of_http_status(response.status().as_u16())
            == Some(crate::model::ErrorKind::Throttled)
        {
            counters.throttled_responses.fetch_add(1, Ordering::Relaxed);
        }
    }
    Ok(response)
}

/// Maps a hyper-util error to the SDK's connector error kinds, so the SDK's retry
/// classifier and our error counting see timeouts and I/O failures as such.
pub(crate) fn classify_hyper_error(err: BoxError) -> ConnectorError {
    if find_source::<ConnectTimeout>(err.as_ref()).is_some() {
        return ConnectorError::timeout(err);
    }
    if let Some(hyper_err) = find_source::<hyper::Error>(err.as_ref()) {
        if hyper_err.is_timeout() {
            return ConnectorError::timeout(err);
        }
        if hyper_err.is_user() {
            return ConnectorError::user(err);
        }
        if hyper_err.is_incomplete_message() {
            // The server closed the connection before a whole response: a connection
            // failure (counted as `connection`, retried as transient), not "other".
            return ConnectorError::io(err);
        }
        if hyper_err.is_closed() || hyper_err.is_canceled() || find_source::<std::io::Error>(hyper_err).is_some() {
            return ConnectorError::io(err);
        }
    }
    if let Some(util_err) = find_source::<hyper_util::client::legacy::Error>(err.as_ref()) {
        if util_err.is_connect() || find_source::<std::io::Error>(util_err).is_some() {
            return ConnectorError::io(err);
        }
    }
    if find_source::<std::io::Error>(err.as_ref()).is_some() {
        return ConnectorError::io(err);
    }
    ConnectorError::other(err, None)
}

/// Per-host connection caps: one semaphore per scheme + authority.
pub(crate) struct HostLimits {
    per_host: usize,
    semaphores: Mutex<HashMap<String, Arc<Semaphore>>>,
}

impl HostLimits {
    pub(crate) fn new(per_host: usize) -> Self {
        HostLimits {
            per_host: per_host.max(1),
            semaphores: Mutex::new(HashMap::new()),
        }
    }

    fn for_uri(&self, uri: &Uri) -> Arc<Semaphore> {
        let key = format!(
            "{}://{}",
            uri.scheme_str().unwrap_or("http"),
            uri.authority().map(|a| a.as_str()).unwrap_or("")
        );
        let mut map = self.semaphores.lock().unwrap_or_else(|e| e.into_inner());
        map.entry(key)
            .or_insert_with(|| Arc::new(Semaphore::new(self.per_host)))
            .clone()
    }
}

/// A connector that waits for a per-host permit before connecting and keeps it for the
/// connection's life, so no host ever has more than `per_host` connections open. It
/// opens the TCP connection itself and, for `https`, does the TLS handshake on it, so
/// the two are timed apart.
#[derive(Clone)]
pub(crate) struct LimitedConnector {
    pub(crate) tcp: TcpConnector,
    pub(crate) trust: Trust,
    pub(crate) limits: Arc<HostLimits>,
    pub(crate) counters: Arc<Counters>,
    pub(crate) connect_timeout: Duration,
}

/// A connection of the pool: plain TCP, or TLS over TCP. Unboxed on purpose: each
/// lives in its own heap-allocated hyper connection, and every read goes through it.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Stream {
    Http(TokioIo<TcpStream>),
    Https(TokioIo<FillTls>),
}

impl Connection for Stream {
    fn connected(&self) -> Connected {
        match self {
            Stream::Http(io) => io.connected(),
            Stream::Https(io) => io.inner().0.get_ref().0.io.connected(),
        }
    }
}

impl Stream {
    /// Reads into hyper's buffer as [`TokioIo`] does, and says how many bytes came.
    fn poll_read_counted(
        &mut self,
        cx: &mut Context<'_>,
        mut buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<usize>> {
        // SAFETY: as hyper-util's `TokioIo::poll_read`: tokio's `ReadBuf` over the
        // cursor's unfilled part only ever initialises bytes, and the cursor is
        // advanced by the `n` bytes it filled.
        let n = unsafe {
            let mut tbuf = tokio::io::ReadBuf::uninit(buf.as_mut());
            let polled = match self {
                Stream::Http(io) => tokio::io::AsyncRead::poll_read(Pin::new(io.inner_mut()), cx, &mut tbuf),
                Stream::Https(io) => tokio::io::AsyncRead::poll_read(Pin::new(io.inner_mut()), cx, &mut tbuf),
            };
            match polled {
                Poll::Ready(Ok(())) => tbuf.filled().len(),
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        };
        unsafe { buf.advance(n) };
        Poll::Ready(Ok(n))
    }
}

impl hyper::rt::Write for Stream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Stream::Http(io) => Pin::new(io).poll_write(cx, buf),
            Stream::Https(io) => Pin::new(io).poll_write(cx, buf),
        }
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Http(io) => Pin::new(io).poll_flush(cx),
            Stream::Https(io) => Pin::new(io).poll_flush(cx),
        }
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Http(io) => Pin::new(io).poll_shutdown(cx),
            Stream::Https(io) => Pin::new(io).poll_shutdown(cx),
        }
    }
    fn is_write_vectored(&self) -> bool {
        match self {
            Stream::Http(io) => io.is_write_vectored(),
            Stream::Https(io) => io.is_write_vectored(),
        }
    }
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Stream::Http(io) => Pin::new(io).poll_write_vectored(cx, bufs),
            Stream::Https(io) => Pin::new(io).poll_write_vectored(cx, bufs),
        }
    }
}

/// How long a connect may wait for a free slot under the per-host cap. A request never
/// waits this long: hyper hands it the next connection returned to the pool, and only
/// the speculative background connect is left to give up.
const PERMIT_WAIT: Duration = Duration::from_secs(120);

/// What opening one connection took: TCP connect and TLS handshake apart.
struct Opened {
    stream: Stream,
    tcp: Duration,
    tls: Option<Duration>,
}

impl LimitedConnector {
    async fn open(mut tcp: TcpConnector, trust: Trust, uri: Uri) -> Result<Opened, BoxError> {
        let https = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            other => return Err(format!("unsupported scheme {other:?}").into()),
        };
        let name = if https { Some(server_name(&uri)?) } else { None };
        let authority = uri.authority().map(|a| a.to_string()).unwrap_or_default();
        let started = Instant::now();
        std::future::poll_fn(|cx| tower_service::Service::<Uri>::poll_ready(&mut tcp, cx)).await?;
        let io = tower_service::Service::call(&mut tcp, uri).await?;
        let tcp_time = started.elapsed();
        let Some(name) = name else {
            return Ok(Opened {
                stream: Stream::Http(io),
                tcp: tcp_time,
                tls: None,
            });
        };
        let tls_started = Instant::now();
        let tls = handshake(&trust, name, &authority, io.into_inner()).await?;
        Ok(Opened {
            stream: Stream::Https(TokioIo::new(tls)),
            tcp: tcp_time,
            tls: Some(tls_started.elapsed()),
        })
    }
}

impl tower_service::Service<Uri> for LimitedConnector {
    type Response = CountedIo<Stream>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let tcp = self.tcp.clone();
        let trust = self.trust.clone();
        let semaphore = self.limits.for_uri(&uri);
        let counters = self.counters.clone();
        let connect_timeout = self.connect_timeout;
        let probe = current_probe();
        let served = REQUEST_SERVED.try_with(Arc::clone).ok();
        Box::pin(async move {
            let served = async {
                match served {
                    Some(s) => s.wait().await,
                    None => std::future::pending().await,
                }
            };
            let permit = tokio::select! {
                biased;
                acquired = tokio::time::timeout(PERMIT_WAIT, semaphore.acquire_owned()) => match acquired {
                    Ok(Ok(permit)) => permit,
                    Ok(Err(closed)) => return Err(Box::new(closed) as BoxError),
                    Err(_) => return Err("timed out waiting for a free connection slot".into()),
                },
                // Its request got a pooled connection (or gave up): this connect is not
                // needed, and must not take the slot a waiting request needs.
                _ = served => return Err("connect not needed: its request was served".into()),
            };
            let result = tokio::time::timeout(connect_timeout, Self::open(tcp, trust, uri)).await;
            let opened = match result {
                Ok(Ok(opened)) => opened,
                Ok(Err(err)) => {
                    counters.connections_failed.fetch_add(1, Ordering::Relaxed);
                    return Err(err);
                }
                Err(_) => {
                    counters.connections_failed.fetch_add(1, Ordering::Relaxed);
                    return Err(Box::new(ConnectTimeout(connect_timeout)) as BoxError);
                }
            };
            let tcp_ns = opened.tcp.as_nanos() as u64;
            let tls_ns = opened.tls.map_or(0, |t| t.as_nanos() as u64);
            let handshakes = u64::from(opened.tls.is_some());
            counters.connect_ns.fetch_add(tcp_ns + tls_ns, Ordering::Relaxed);
            counters.tls_handshakes.fetch_add(handshakes, Ordering::Relaxed);
            counters.tls_handshake_ns.fetch_add(tls_ns, Ordering::Relaxed);
            if let Some(probe) = probe {
                probe.connections.fetch_add(1, Ordering::Relaxed);
                probe.connect_ns.fetch_add(tcp_ns + tls_ns, Ordering::Relaxed);
                probe.tls_handshakes.fetch_add(handshakes, Ordering::Relaxed);
                probe.tls_ns.fetch_add(tls_ns, Ordering::Relaxed);
            }
            counters.connections_opened.fetch_add(1, Ordering::Relaxed);
            counters.connections_open.fetch_add(1, Ordering::Relaxed);
            Ok(CountedIo {
                io: opened.stream,
                id: NEXT_CONNECTION_ID.fetch_add(1, Ordering::Relaxed),
                _permit: permit,
                counters,
            })
        })
    }
}

/// A connection that holds its host's slot and updates the open-connections gauge.
pub(crate) struct CountedIo<T> {
    io: T,
    id: u64,
    _permit: OwnedSemaphorePermit,
    counters: Arc<Counters>,
}

impl<T> Drop for CountedIo<T> {
    fn drop(&mut self) {
        self.counters.connections_open.fetch_sub(1, Ordering::Relaxed);
    }
}

impl<T: Connection> Connection for CountedIo<T> {
    fn connected(&self) -> Connected {
        self.io.connected().extra(ConnectionId(self.id))
    }
}

/// A connection's number in this process (from 1, in the order opened), carried in its
/// [`Connected`] so a request can say which connection it went out on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ConnectionId(u64);

/// Notes in `probe` the number of the connection hyper gave its attempt
/// ([`ConnectionId`]; 0: none). Read once the attempt ended, not when hyper handed the
/// connection over: a quick answer can come in the same poll, before that was seen.
pub(super) fn note_connection(probe: Option<&super::RequestProbe>, connected: Option<&Connected>) {
    let mut extensions = http::Extensions::new();
    connected.iter().for_each(|c| c.get_extras(&mut extensions));
    let id = extensions.get::<ConnectionId>().map_or(0, |c| c.0);
    probe.iter().for_each(|p| p.connection_id.store(id, Ordering::Relaxed));
}

/// The next connection's number.
static NEXT_CONNECTION_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl hyper::rt::Read for CountedIo<Stream> {
    /// A read, its bytes added to the transport's `rx_bytes` (one relaxed add).
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        let n = ready!(self.io.poll_read_counted(cx, buf))?;
        self.counters.rx_bytes.fetch_add(n as u64, Ordering::Relaxed);
        Poll::Ready(Ok(()))
    }
}

impl<T: hyper::rt::Write + Unpin> hyper::rt::Write for CountedIo<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }
}

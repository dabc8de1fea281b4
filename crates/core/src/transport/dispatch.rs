//! How one request goes out on a [`Lane`]: counted, stamped into the caller's
//! [`RequestProbe`], sent on the lane's hyper client, bounded to its headers by the
//! first-byte limit, sent again when hyper leaves it without a connection, and its
//! connection retired after an error answer. The SDK reaches it through the lane as
//! its HTTP client ([`HttpClient`]), the lean client through [`Lane::send`].

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use aws_smithy_runtime_api::client::connection::{CaptureSmithyConnection, ConnectionMetadata};
use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient, SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::body::SdkBody;
use http::Uri;
use hyper_util::client::legacy::connect::{capture_connection, CaptureConnection};

use super::connector::{self, answer_of};
use super::counters;
use super::lanes::Lane;
use super::probe::{clock_ns, current_probe, Cause, RequestProbe};

/// Set once the request that started a connect has its answer (or failed). hyper-util
/// races a new connect against the pool; when the pool wins, the connect goes on in
/// the background to add an idle connection. Under the per-host cap such a connect
/// would wait for a slot, and the slot a closing (retired) connection frees would go to
/// it rather than to a request that still needs one, which could then wait for its
/// first-byte timeout. So a connect that is still waiting for a slot when its request
/// is served gives up.
#[derive(Debug, Default)]
pub(crate) struct RequestServed {
    done: std::sync::atomic::AtomicBool,
    notify: tokio::sync::Notify,
}

impl RequestServed {
    fn set(&self) {
        self.done.store(true, Ordering::Release);
        self.notify.notify_waiters();
    }

    /// Resolves once the request is served.
    pub(crate) async fn wait(&self) {
        loop {
            let notified = self.notify.notified();
            if self.done.load(Ordering::Acquire) {
                return;
            }
            notified.await;
        }
    }
}

tokio::task_local! {
    /// The request a connect is started for (see [`RequestServed`]).
    pub(crate) static REQUEST_SERVED: Arc<RequestServed>;
}

impl HttpClient for Lane {
    fn http_connector(&self, settings: &HttpConnectorSettings, _components: &RuntimeComponents) -> SharedHttpConnector {
        SharedHttpConnector::new(LaneConnector {
            lane: self.clone(),
            read_timeout: settings.read_timeout(),
        })
    }
}

/// The SDK-facing side of a lane for one set of connector settings.
#[derive(Debug)]
struct LaneConnector {
    lane: Lane,
    read_timeout: Option<Duration>,
}

impl HttpConnector for LaneConnector {
    fn call(&self, request: aws_smithy_runtime_api::client::orchestrator::HttpRequest) -> HttpConnectorFuture {
        let sent = clock_ns();
        let request = match request.try_into_http1x() {
            Ok(request) => request,
            Err(err) => return HttpConnectorFuture::ready(Err(ConnectorError::user(err.into()))),
        };
        let response = self.lane.dispatch(request, self.read_timeout, sent);
        HttpConnectorFuture::new(async move {
            let response = response.await?;
            HttpResponse::try_from(response).map_err(|err| ConnectorError::other(err.into(), None))
        })
    }
}

impl Lane {
    /// This lane as the SDK's HTTP client.
    pub fn http_client(&self) -> SharedHttpClient {
        SharedHttpClient::new(self.clone())
    }

    /// Sends one request through the lane, as the SDK's requests go: the same per-host
    /// cap, TLS, counters, probe stamps (the caller's [`REQUEST_PROBE`]) and first-byte
    /// limit (`first_byte_timeout`, connection in hand or not, to the response headers).
    /// The lean client's way in ([`crate::s3::lean`]).
    pub fn send(
        &self,
        request: http::Request<SdkBody>,
        first_byte_timeout: Option<Duration>,
    ) -> impl std::future::Future<Output = Result<http::Response<SdkBody>, ConnectorError>> + Send + 'static {
        self.dispatch(request, first_byte_timeout, clock_ns())
    }

    /// Counts a request handed over at `sent`: a CreateSession call, or an attempt of a
    /// GET (stamped into the caller's probe).
    fn count_handed_over(&self, session: bool, probe: Option<&Arc<RequestProbe>>, sent: u64) {
        let counters = &self.inner.counters;
        if session {
            counters.session_requests.fetch_add(1, Ordering::Relaxed);
            if let Some(probe) = probe {
                probe.sessions.fetch_add(1, Ordering::Relaxed);
            }
        } else {
            counters.requests_sent.fetch_add(1, Ordering::Relaxed);
            // A retry is counted here, where it is sent: the attempt after one of the
            // same request that ended with a cause.
            if probe.is_some_and(|p| p.handed_over(sent)) {
                counters.retries.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// One request handed over at `sent`: counted, stamped into the caller's probe,
    /// sent on the lane's connections, bounded by `read_timeout` to its headers.
    fn dispatch(
        &self,
        mut request: http::Request<SdkBody>,
        read_timeout: Option<Duration>,
        sent: u64,
    ) -> impl std::future::Future<Output = Result<http::Response<SdkBody>, ConnectorError>> + Send + 'static {
        let session = is_create_session(request.uri());
        let probe = current_probe();
        self.count_handed_over(session, probe.as_ref(), sent);
        let in_flight = counters::InFlight::enter(&self.inner.counters);
        let mut connection = capture_connection(&mut request);
        hand_over_connection(&request, &connection);
        // To send again if hyper leaves the request without a connection (see below).
        let template = copy_request(&request);
        let counters = self.inner.counters.clone();
        let lane = self.clone();
        let served = Arc::new(RequestServed::default());
        let response = REQUEST_SERVED.scope(served.clone(), lane.inner.client.request(request));
        // CreateSession calls are part of some GET's preparation, not attempts of it.
        let mut attempt = AttemptRecord::starting(probe.filter(|_| !session), sent);
        async move {
            let conn_at = &mut attempt.conn_at;
            // The lane, kept alive (moved in) while the request is in flight, and used
            // to send the request again.
            let lane_ref = &lane;
            let served_ref = &served;
            let timed = async {
                tokio::pin!(response);
                let mut redispatch_at = tokio::time::Instant::now() + REDISPATCH_AFTER;
                let mut due = false;
                loop {
                    tokio::select! {
                        biased;
                        answer = &mut response => break answer,
                        got = connection.wait_for_connection_metadata(), if conn_at.is_none() => {
                            // `None`: hyper dropped the request without a connection.
                            *conn_at = Some(got.is_some().then(clock_ns));
                        }
                        _ = tokio::time::sleep_until(redispatch_at), if conn_at.is_none() && template.is_some() => {
                            redispatch_at += REDISPATCH_AFTER;
                            due = true;
                        }
                    }
                    // hyper-util's pool can leave a request waiting only for a connect of
                    // its own (after the idle connection it was handed turned out closed),
                    // and under the per-host cap that connect waits for a slot that idle
                    // connections hold. A request that never reached a connection can be
                    // sent again safely: a fresh checkout finds the idle ones.
                    if std::mem::take(&mut due) && conn_at.is_none() && connection.connection_metadata().is_none() {
                        if let Some(mut again) = template.as_ref().and_then(copy_request) {
                            connection = capture_connection(&mut again);
                            hand_over_connection(&again, &connection);
                            tracing::debug!("no connection after {REDISPATCH_AFTER:?}: request sent again");
                            response
                                .set(REQUEST_SERVED.scope(served_ref.clone(), lane_ref.inner.client.request(again)));
                        }
                    }
                }
            };
            let response = match read_timeout {
                Some(limit) => tokio::time::timeout(limit, timed).await.ok(),
                None => Some(timed.await),
            };
            served.set();
            connector::note_connection(attempt.probe.as_deref(), connection.connection_metadata().as_ref());
            let (headers, cause) = headers_and_cause(&response);
            retire_after_an_error_answer(cause, &connection);
            attempt.ended(headers, cause);
            answer_of(response, read_timeout, (!session).then_some(&counters), in_flight)
        }
    }
}

/// A connection whose answer was throttled or a server error is retired now, at the
/// headers, as the SDK would retire it after reading the error: poisoned later, it
/// would already be back in the pool, maybe handed to a request waiting for one, which
/// then finds it closed and waits for a connect of its own while every slot under the
/// cap is held by idle connections.
fn retire_after_an_error_answer(cause: Option<Cause>, connection: &CaptureConnection) {
    if matches!(cause, Some(Cause::Throttled | Cause::ServerError)) {
        if let Some(connected) = connection.connection_metadata().as_ref() {
            connected.poison();
        }
    }
}

/// How long a request may wait for hyper to give it a connection before it is sent
/// again (see the connector's loop): far longer than a connect on a loaded machine.
const REDISPATCH_AFTER: Duration = Duration::from_millis(250);

/// A copy of a request that was not sent yet (method, URI, version, headers and a
/// body that can be copied, as the SDK's GETs and small PUTs have); `None` otherwise.
/// Extensions are not copied: the copy gets its own connection capture.
fn copy_request(request: &http::Request<SdkBody>) -> Option<http::Request<SdkBody>> {
    let mut copy = http::Request::new(request.body().try_clone()?);
    *copy.method_mut() = request.method().clone();
    *copy.uri_mut() = request.uri().clone();
    *copy.version_mut() = request.version();
    *copy.headers_mut() = request.headers().clone();
    if let Some(smithy) = request.extensions().get::<CaptureSmithyConnection>() {
        copy.extensions_mut().insert(smithy.clone());
    }
    Some(copy)
}

/// One attempt's stamps until it ends, into its GET's probe. An attempt dropped before
/// its headers (the SDK's attempt timeout, or the caller's) ends as a timeout.
struct AttemptRecord {
    probe: Option<Arc<RequestProbe>>,
    sent: u64,
    /// When hyper gave the request a connection; `Some(None)`: it gave up without one.
    conn_at: Option<Option<u64>>,
    connecting_before: u64,
}

/// Whether an attempt's headers came, and why it failed if it did: `None` is a
/// request that ran out of its read timeout.
fn headers_and_cause<B, E>(response: &Option<Result<http::Response<B>, E>>) -> (bool, Option<Cause>) {
    match response {
        None => (false, Some(Cause::Timeout)),
        Some(Err(_)) => (false, Some(Cause::Connection)),
        Some(Ok(r)) => (true, Cause::of_status(r.status().as_u16())),
    }
}

impl AttemptRecord {
    /// An attempt sent at `sent`, stamped into `probe` (its connect time so far kept,
    /// to tell this attempt's own).
    fn starting(probe: Option<Arc<RequestProbe>>, sent: u64) -> AttemptRecord {
        AttemptRecord {
            connecting_before: probe.as_ref().map_or(0, |p| p.connect_ns.load(Ordering::Relaxed)),
            probe,
            sent,
            conn_at: None,
        }
    }

    fn ended(&mut self, headers: bool, cause: Option<Cause>) {
        if let Some(probe) = self.probe.take() {
            let connecting = probe
                .connect_ns
                .load(Ordering::Relaxed)
                .saturating_sub(self.connecting_before);
            probe.attempt_ended(
                self.sent,
                self.conn_at.flatten(),
                clock_ns(),
                connecting,
                headers,
                cause,
            );
        }
    }
}

impl Drop for AttemptRecord {
    fn drop(&mut self) {
        self.ended(false, Some(Cause::Timeout));
    }
}

/// Lets the SDK retire the connection a request went out on: its connection-poisoning
/// interceptor puts a [`CaptureSmithyConnection`] into the request and, after a
/// transient error (a 5xx, a timeout), asks it for the connection to poison, so the
/// pool never hands it out again. Without a retriever the SDK logs an ERROR per
/// transient error and the suspect connection is reused.
fn hand_over_connection<B>(request: &http::Request<B>, connection: &CaptureConnection) {
    let Some(smithy) = request.extensions().get::<CaptureSmithyConnection>() else {
        return;
    };
    let connection = connection.clone();
    smithy.set_connection_retriever(move || {
        let proxied = connection.connection_metadata().as_ref()?.is_proxied();
        let capture = connection.clone();
        Some(
            ConnectionMetadata::builder()
                .proxied(proxied)
                .poison_fn(move || {
                    if let Some(connected) = capture.connection_metadata().as_ref() {
                        connected.poison();
                    }
                })
                .build(),
        )
    });
}

fn is_create_session(uri: &Uri) -> bool {
    uri.query().is_some_and(|q| {
        q.split('&')
            .any(|part| part == "session" || part.starts_with("session="))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_session_is_recognised_by_query() {
        assert!(is_create_session(
            &"https://b--use1-az4--x-s3.s3express-use1-az4.us-east-1.amazonaws.com/?session"
                .parse()
                .unwrap()
        ));
        assert!(!is_create_session(
            &"http://127.0.0.1:9000/b/test/1/vectors?x-id=GetObject".parse().unwrap()
        ));
        assert!(!is_create_session(&"http://127.0.0.1:9000/b/sessions".parse().unwrap()));
    }
}

//! A Lambda Runtime API of our own on 127.0.0.1 that does what Lambda does to a
//! function: hands out events (`/runtime/invocation/next`) with a deadline, takes the
//! answer or error, refuses an answer larger than 6 MB, and kills the function's
//! processes at the deadline, so an answer that comes late is lost. It also serves the
//! Lambda Invoke API (`POST /2015-03-31/functions/NAME/invocations`), queueing the event
//! for the next free process and answering with that invocation's outcome, so a
//! fan-out coordinator can invoke children among the processes started. Each Invoke
//! is authorized as Lambda does (`lambda:InvokeFunction` on the FunctionName as
//! passed, completed to an ARN) against the function's role as SAM expands it with
//! the default parameters ([`super::iam`]); a refusal is 403 `AccessDeniedException`.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::{oneshot, Notify};

/// Lambda's limit on a synchronous answer.
pub(crate) const RESPONSE_LIMIT_BYTES: usize = 6 * 1024 * 1024;

/// How one invocation ended.
#[derive(Debug, Clone)]
pub(crate) enum Ending {
    /// The function answered: the body, its size, and when (after the event was handed out).
    Answered { body: Vec<u8>, after: Duration },
    /// The function reported an error.
    Error { body: Vec<u8>, after: Duration },
    /// The answer was over 6 MB (Lambda's `Function.ResponseSizeTooLarge`).
    TooLarge { bytes: usize },
    /// Nothing before the deadline: the processes were killed.
    Killed,
}

struct Pending {
    id: String,
    payload: Vec<u8>,
    timeout: Duration,
    /// Killed this long after the event is handed out, whatever `timeout` the function
    /// is told (an environment that dies early: out of memory, a crash).
    killed_after: Option<Duration>,
}

struct Inflight {
    handed_out: Instant,
    deadline: Instant,
    done: Option<oneshot::Sender<Ending>>,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Pending>,
    inflight: HashMap<String, Inflight>,
    endings: HashMap<String, Ending>,
    next_id: u64,
    killed: bool,
    /// The role each Invoke is authorized against (`None`: none).
    iam: Option<Arc<super::iam::Enforcer>>,
}

/// `lambda:InvokeFunction` on the FunctionName in `path` as passed (with the `query`'s
/// `Qualifier` appended to an unqualified name, as AWS authorizes it), against the
/// role: the 403 answer, or `None` when allowed.
fn invoke_refusal(state: &Arc<Mutex<State>>, path: &str, query: &str) -> Option<Response<Full<Bytes>>> {
    let iam = state.lock().unwrap().iam.clone()?;
    let raw = path
        .trim_start_matches("/2015-03-31/functions/")
        .trim_end_matches("/invocations");
    let name = raw.replace("%3A", ":").replace("%3a", ":");
    let qualifier = query
        .split('&')
        .find_map(|p| p.strip_prefix("Qualifier="))
        .map(|q| q.replace("%24", "$"));
    let resource = super::iam::lambda_call_resource(&name, qualifier.as_deref());
    let d = iam.authorize("lambda:InvokeFunction", &resource, &[]).err()?;
    eprintln!("runtime: Invoke refused: {}", d.message(false));
    let body = serde_json::json!({"Type": "User", "Message": d.message(false)}).to_string();
    Some(reply(
        StatusCode::FORBIDDEN,
        body.into_bytes(),
        &[("x-amzn-errortype", "AccessDeniedException".into())],
    ))
}

/// The Runtime API and the function processes it serves.
pub(crate) struct Runtime {
    pub addr: SocketAddr,
    state: Arc<Mutex<State>>,
    queued: Arc<Notify>,
    processes: Arc<Mutex<Vec<Child>>>,
}

fn reply(status: StatusCode, body: Vec<u8>, headers: &[(&str, String)]) -> Response<Full<Bytes>> {
    let mut r = Response::builder().status(status);
    for (k, v) in headers {
        r = r.header(*k, v.as_str());
    }
    r.body(Full::new(Bytes::from(body))).unwrap()
}

impl Runtime {
    /// The role each Invoke is authorized against, with what it allowed and refused.
    pub(crate) fn iam(&self) -> Option<Arc<super::iam::Enforcer>> {
        self.state.lock().unwrap().iam.clone()
    }

    /// Panics naming every Invoke the role refused, if any.
    pub(crate) fn assert_all_allowed(&self) {
        if let Some(iam) = self.iam() {
            let denied: Vec<String> = iam.denials().iter().map(|d| d.message(false)).collect();
            assert!(denied.is_empty(), "Invokes the role refused: {denied:#?}");
        }
    }

    /// Authorizes each Invoke against `iam` (`None`: none).
    pub(crate) fn enforce(&self, iam: Option<Arc<super::iam::Enforcer>>) {
        self.state.lock().unwrap().iam = iam;
    }

    /// Starts the API on 127.0.0.1:0 and its deadline watchdog.
    pub(crate) async fn start() -> Runtime {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let rt = Runtime {
            addr,
            state: Arc::new(Mutex::new(State {
                iam: Some(super::iam::sweep_enforcer(&[("FunctionName", "s3sweep")])),
                ..State::default()
            })),
            queued: Arc::new(Notify::new()),
            processes: Arc::new(Mutex::new(Vec::new())),
        };
        let (state, queued) = (rt.state.clone(), rt.queued.clone());
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let (state, queued) = (state.clone(), queued.clone());
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let (state, queued) = (state.clone(), queued.clone());
                        async move { Ok::<_, std::convert::Infallible>(route(req, state, queued).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        // The watchdog: at an invocation's deadline without an answer, Lambda kills the
        // execution environment; so do we (every process: they share the deadline).
        let (state, processes) = (rt.state.clone(), rt.processes.clone());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(20)).await;
                let mut s = state.lock().unwrap();
                let now = Instant::now();
                let late: Vec<String> = s
                    .inflight
                    .iter()
                    .filter(|(_, i)| now >= i.deadline)
                    .map(|(id, _)| id.clone())
                    .collect();
                if late.is_empty() {
                    continue;
                }
                for id in late {
                    if let Some(mut i) = s.inflight.remove(&id) {
                        if let Some(tx) = i.done.take() {
                            let _ = tx.send(Ending::Killed);
                        }
                        s.endings.insert(id, Ending::Killed);
                    }
                }
                s.killed = true;
                for p in processes.lock().unwrap().iter_mut() {
                    let _ = p.kill();
                }
            }
        });
        rt
    }

    /// Starts `count` function processes (`binary`, this API in
    /// `AWS_LAMBDA_RUNTIME_API`, the Lambda variables, and `env`).
    pub(crate) fn spawn_functions(&self, binary: &str, count: usize, env: &[(&str, String)]) {
        for _ in 0..count {
            let mut cmd = Command::new(binary);
            cmd.env("AWS_LAMBDA_RUNTIME_API", self.addr.to_string())
                .env("AWS_LAMBDA_FUNCTION_NAME", "s3sweep")
                .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
                .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "1769")
                .env("AWS_REGION", "us-east-1")
                .env("AWS_LAMBDA_LOG_LEVEL", "warn")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::inherit());
            for (k, v) in env {
                cmd.env(k, v);
            }
            self.processes
                .lock()
                .unwrap()
                .push(cmd.spawn().expect("start the function"));
        }
    }

    /// Queues an event with `timeout` (the function's timeout) and waits for its ending.
    pub(crate) async fn invoke(&self, payload: Vec<u8>, timeout: Duration) -> (String, Ending) {
        let (id, rx) = enqueue(&self.state, &self.queued, payload, (timeout, None));
        (id, rx.await.unwrap_or(Ending::Killed))
    }

    /// As [`Runtime::invoke`], but the processes are killed `killed_after` the event
    /// is handed out while the function is told `timeout`: a hard kill it cannot see
    /// coming (out of memory, a crash), so it cannot answer first.
    pub(crate) async fn invoke_killed_after(
        &self,
        payload: Vec<u8>,
        timeout: Duration,
        killed_after: Duration,
    ) -> (String, Ending) {
        let (id, rx) = enqueue(&self.state, &self.queued, payload, (timeout, Some(killed_after)));
        (id, rx.await.unwrap_or(Ending::Killed))
    }

    /// Every invocation that ended, by request id.
    pub(crate) fn endings(&self) -> HashMap<String, Ending> {
        self.state.lock().unwrap().endings.clone()
    }

    /// Whether the watchdog killed the processes.
    pub(crate) fn killed(&self) -> bool {
        self.state.lock().unwrap().killed
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        for p in self.processes.lock().unwrap().iter_mut() {
            let _ = p.kill();
            let _ = p.wait();
        }
    }
}

fn enqueue(
    state: &Mutex<State>,
    queued: &Notify,
    payload: Vec<u8>,
    (timeout, killed_after): (Duration, Option<Duration>),
) -> (String, oneshot::Receiver<Ending>) {
    let (tx, rx) = oneshot::channel();
    let mut s = state.lock().unwrap();
    s.next_id += 1;
    let id = format!("req-{}", s.next_id);
    s.queue.push_back(Pending {
        id: id.clone(),
        payload,
        timeout,
        killed_after,
    });
    // The sender waits in `inflight` once the event is handed out.
    s.inflight.insert(
        id.clone(),
        Inflight {
            handed_out: Instant::now(),
            deadline: Instant::now() + Duration::from_secs(3600),
            done: Some(tx),
        },
    );
    drop(s);
    queued.notify_one();
    (id, rx)
}

fn finish(state: &Mutex<State>, id: &str, ending_of: impl FnOnce(Duration) -> Ending) -> bool {
    let mut s = state.lock().unwrap();
    let Some(mut i) = s.inflight.remove(id) else {
        return false; // already killed, or unknown
    };
    let ending = ending_of(i.handed_out.elapsed());
    if let Some(tx) = i.done.take() {
        let _ = tx.send(ending.clone());
    }
    s.endings.insert(id.to_string(), ending);
    true
}

async fn route(req: Request<Incoming>, state: Arc<Mutex<State>>, queued: Arc<Notify>) -> Response<Full<Bytes>> {
    let path = req.uri().path().to_string();
    let query = req.uri().query().unwrap_or("").to_string();
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes().to_vec())
        .unwrap_or_default();
    if path == "/2018-06-01/runtime/invocation/next" {
        return next_invocation(&state, &queued).await;
    }
    if let Some(rest) = path.strip_prefix("/2018-06-01/runtime/invocation/") {
        if let Some(id) = rest.strip_suffix("/response") {
            let bytes = body.len();
            if bytes > RESPONSE_LIMIT_BYTES {
                finish(&state, id, |_| Ending::TooLarge { bytes });
                return reply(StatusCode::PAYLOAD_TOO_LARGE, b"{}".to_vec(), &[]);
            }
            finish(&state, id, |after| Ending::Answered { body, after });
            return reply(StatusCode::ACCEPTED, b"{}".to_vec(), &[]);
        }
        if let Some(id) = rest.strip_suffix("/error") {
            finish(&state, id, |after| Ending::Error { body, after });
            return reply(StatusCode::ACCEPTED, b"{}".to_vec(), &[]);
        }
    }
    if path.starts_with("/2015-03-31/functions/") && path.ends_with("/invocations") {
        return invoke(&state, &queued, &path, &query, body).await;
    }
    if path == "/2018-06-01/runtime/init/error" {
        eprintln!("runtime: init error: {}", String::from_utf8_lossy(&body));
        return reply(StatusCode::ACCEPTED, b"{}".to_vec(), &[]);
    }
    reply(StatusCode::NOT_FOUND, b"{}".to_vec(), &[])
}

/// `GET /runtime/invocation/next`: the next queued event, its deadline starting now;
/// waits until one is queued.
async fn next_invocation(state: &Mutex<State>, queued: &Notify) -> Response<Full<Bytes>> {
    loop {
        let next = {
            let mut s = state.lock().unwrap();
            let p = s.queue.pop_front();
            if let Some(p) = &p {
                let now = Instant::now();
                if let Some(i) = s.inflight.get_mut(&p.id) {
                    i.handed_out = now;
                    i.deadline = now + p.killed_after.unwrap_or(p.timeout).min(p.timeout);
                }
            }
            p
        };
        if let Some(p) = next {
            let deadline_ms = (SystemTime::now() + p.timeout)
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_millis();
            return reply(
                StatusCode::OK,
                p.payload,
                &[
                    ("lambda-runtime-aws-request-id", p.id),
                    ("lambda-runtime-deadline-ms", deadline_ms.to_string()),
                    (
                        "lambda-runtime-invoked-function-arn",
                        "arn:aws:lambda:us-east-1:123456789012:function:s3sweep".into(),
                    ),
                    ("lambda-runtime-trace-id", "Root=1-0-0".into()),
                    ("content-type", "application/json".into()),
                ],
            );
        }
        queued.notified().await;
    }
}

/// A synchronous `Invoke` from the coordinator: refused as Lambda refuses it, else the
/// child runs in the next free process, with the function's timeout of 60 s.
async fn invoke(
    state: &Arc<Mutex<State>>,
    queued: &Notify,
    path: &str,
    query: &str,
    body: Vec<u8>,
) -> Response<Full<Bytes>> {
    if let Some(denied) = invoke_refusal(state, path, query) {
        return denied;
    }
    let (_, rx) = enqueue(state, queued, body, (Duration::from_secs(60), None));
    match rx.await.unwrap_or(Ending::Killed) {
        Ending::Answered { body, .. } => reply(
            StatusCode::OK,
            body,
            &[("x-amz-executed-version", "$LATEST".into())],
        ),
        Ending::Error { body, .. } => reply(
            StatusCode::OK,
            body,
            &[("x-amz-function-error", "Unhandled".into())],
        ),
        Ending::TooLarge { .. } => reply(
            StatusCode::BAD_GATEWAY,
            br#"{"Type": "User", "message": "Response payload size exceeded maximum allowed payload size (6291556 bytes)."}"#.to_vec(),
            &[("x-amzn-errortype", "RequestTooLargeException".into())],
        ),
        Ending::Killed => reply(
            StatusCode::OK,
            br#"{"errorType": "Sandbox.Timedout", "errorMessage": "Task timed out"}"#.to_vec(),
            &[("x-amz-function-error", "Unhandled".into())],
        ),
    }
}

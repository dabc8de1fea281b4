//! A scripted Lambda control-plane API of our own on 127.0.0.1:0, driven by the real
//! aws-sdk-lambda client: GetFunctionConfiguration, UpdateFunctionConfiguration (with
//! `RevisionId` compare-and-set, `ResourceConflictException` while an update runs, and
//! `LastUpdateStatus` `InProgress` for the first read after each update),
//! PublishVersion, DeleteFunction with a qualifier, and Invoke of a version, whose
//! handler runs the child's sweep. Every call is recorded in order, and a failure can
//! be injected at the Nth call of any kind (or a `Failed` update status at the Nth
//! update). The function starts with a user-owned version "1", which a sweep must
//! never touch.
//!
//! As strict as AWS: every call is authorized (by default) against the function's role
//! as SAM expands it with `MemorySweep=enabled` and the function's name ([`super::iam`]): action
//! `lambda:<Op>`, resource the FunctionName as passed completed to an ARN, with a
//! `Qualifier` parameter appended to an unqualified name (`function:NAME:Q`: AWS's rule
//! since 2022-01-24, [`super::iam::lambda_call_resource`]), refused with AWS's 403
//! `AccessDeniedException`. A
//! published version is `Pending` for a while ([`Limits::pending_reads`]) and cannot be
//! invoked until `Active`; [`Limits::new_account`] is a new account's profile (3,008
//! MB, 10 concurrent executions, 429 `TooManyRequestsException` beyond).

use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::net::TcpListener;

use super::iam::{lambda_call_resource, Enforcer};

/// What the Invoke handler is told: the version invoked and its memory.
#[derive(Debug, Clone)]
pub(crate) struct InvokeMeta {
    pub version: String,
    pub memory_mb: u32,
}

/// Runs a child invocation: `Ok(result)` or `Err(errorType/errorMessage body)`.
pub(crate) type InvokeHandler =
    Arc<dyn Fn(Value, InvokeMeta) -> Pin<Box<dyn Future<Output = Result<Value, Value>> + Send>> + Send + Sync>;

/// Call kinds a failure can be injected at.
pub(crate) const KINDS: &[&str] = &[
    "GetFunctionConfiguration",
    "UpdateFunctionConfiguration",
    "LastUpdateStatus",
    "PublishVersion",
    "Invoke",
    "DeleteFunction",
];

/// A published version's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Version {
    pub memory_mb: u32,
    pub description: String,
    /// Reads of its configuration still to answer `Pending` (then `Active`).
    pub pending_reads: u32,
}

/// The account's limits and the version lifecycle.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// A larger MemorySize is refused (400 `InvalidParameterValueException`).
    pub max_memory_mb: Option<u32>,
    /// Concurrent executions of the account; the next Invoke is throttled (429).
    pub concurrent_executions: Option<u32>,
    /// How many reads of a published version's configuration answer `Pending` before
    /// it is `Active` (counted, not timed, so the call sequence is the same every run).
    pub pending_reads: u32,
}

impl Default for Limits {
    /// No account limit; a version `Pending` for its first two reads.
    fn default() -> Self {
        Limits {
            max_memory_mb: None,
            concurrent_executions: None,
            pending_reads: 2,
        }
    }
}

impl Limits {
    /// A new account: 3,008 MB of memory at most, 10 concurrent executions.
    pub(crate) fn new_account() -> Self {
        Limits {
            max_memory_mb: Some(3008),
            concurrent_executions: Some(10),
            ..Limits::default()
        }
    }
}

/// The function as the server holds it.
#[derive(Debug, Clone)]
pub(crate) struct FunctionState {
    pub name: String,
    pub memory_mb: u32,
    pub description: String,
    pub revision: u64,
    /// Reads still to answer `InProgress` after the last update.
    pub in_progress_reads: u32,
    /// Status the last update ends in once done: `Successful` or `Failed`.
    pub settled_status: &'static str,
    pub versions: BTreeMap<u64, Version>,
    pub next_version: u64,
}

struct State {
    function: FunctionState,
    calls: Vec<String>,
    counts: BTreeMap<&'static str, u32>,
    fail_at: Option<(&'static str, u32)>,
    limits: Limits,
    /// Executions running: Invokes in flight plus those held outside (the coordinator).
    executions: u32,
    peak_executions: u32,
    /// The FunctionName of the call being served, as passed (decoded).
    passed: String,
    /// The role every call is authorized against (`None`: no IAM).
    iam: Option<Arc<Enforcer>>,
    handler: InvokeHandler,
}

/// The server; the state is shared with the test.
pub(crate) struct LambdaApi {
    pub addr: SocketAddr,
    state: Arc<Mutex<State>>,
}

fn reply(status: StatusCode, body: Value, headers: &[(&str, &str)]) -> Response<Full<Bytes>> {
    let mut r = Response::builder()
        .status(status)
        .header("content-type", "application/json");
    for (k, v) in headers {
        r = r.header(*k, *v);
    }
    r.body(Full::new(Bytes::from(body.to_string()))).unwrap()
}

/// Lambda's refusal of a call its caller's role does not allow.
fn access_denied(message: &str) -> Response<Full<Bytes>> {
    reply(
        StatusCode::FORBIDDEN,
        json!({"Type": "User", "Message": message}),
        &[("x-amzn-errortype", "AccessDeniedException")],
    )
}

fn error(status: u16, kind: &str, message: &str) -> Response<Full<Bytes>> {
    reply(
        StatusCode::from_u16(status).unwrap(),
        json!({"Type": "User", "message": message}),
        &[("x-amzn-errortype", kind)],
    )
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Ok(b) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `name`, `name:qualifier`, or an ARN with or without a qualifier: (name, qualifier).
fn split_name(raw: &str) -> (String, Option<String>) {
    let raw = percent_decode(raw);
    let tail = raw.rsplit_once("function:").map_or(raw.as_str(), |(_, t)| t);
    match tail.split_once(':') {
        Some((n, q)) => (n.to_string(), Some(q.to_string())),
        None => (tail.to_string(), None),
    }
}

/// A version's state: `Pending` while reads of it are still to answer so, then
/// `Active` (`$LATEST`: Active).
fn state_of(f: &FunctionState, version: &str) -> &'static str {
    match version.parse::<u64>().ok().and_then(|n| f.versions.get(&n)) {
        Some(v) if v.pending_reads > 0 => "Pending",
        _ => "Active",
    }
}

fn config_json(f: &FunctionState, status: &str, version: &str, memory_mb: u32, description: &str) -> Value {
    json!({
        "FunctionName": f.name,
        "FunctionArn": format!("arn:aws:lambda:us-east-1:123456789012:function:{}:{version}", f.name),
        "MemorySize": memory_mb,
        "Timeout": 900,
        "Description": description,
        "RevisionId": format!("rev-{}", f.revision),
        "Version": version,
        "State": state_of(f, version),
        "LastUpdateStatus": status,
        "LastUpdateStatusReason": if status == "Failed" { "injected: the update failed" } else { "" },
    })
}

impl LambdaApi {
    /// Starts the API for one function `name` with `memory_mb`, `description` and the
    /// user's own version "1".
    pub(crate) async fn start(name: &str, memory_mb: u32, description: &str, handler: InvokeHandler) -> LambdaApi {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut versions = BTreeMap::new();
        versions.insert(
            1,
            Version {
                memory_mb,
                description: "the user's own version".into(),
                pending_reads: 0,
            },
        );
        let state = Arc::new(Mutex::new(State {
            function: FunctionState {
                name: name.into(),
                memory_mb,
                description: description.into(),
                revision: 1,
                in_progress_reads: 0,
                settled_status: "Successful",
                versions,
                next_version: 2,
            },
            calls: Vec::new(),
            counts: BTreeMap::new(),
            fail_at: None,
            limits: Limits::default(),
            executions: 0,
            peak_executions: 0,
            passed: String::new(),
            iam: Some(super::iam::sweep_enforcer(&[
                ("MemorySweep", "enabled"),
                ("FunctionName", name),
            ])),
            handler,
        }));
        let shared = state.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let state = shared.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let state = state.clone();
                        async move { Ok::<_, std::convert::Infallible>(route(req, state).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        LambdaApi { addr, state }
    }

    pub(crate) fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Fails the `nth` (1-based) call of `kind` (one of [`KINDS`]).
    pub(crate) fn fail_at(&self, kind: &'static str, nth: u32) {
        let mut s = self.state.lock().unwrap();
        s.fail_at = Some((kind, nth));
    }

    /// Refuses any MemorySize above `mb` with Lambda's `InvalidParameterValueException`.
    pub(crate) fn refuse_memory_above(&self, mb: u32) {
        self.state.lock().unwrap().limits.max_memory_mb = Some(mb);
    }

    /// The account's limits and version lifecycle.
    pub(crate) fn set_limits(&self, limits: Limits) {
        self.state.lock().unwrap().limits = limits;
    }

    /// Authorizes every call against `iam` (`None`: none authorized, as moto).
    pub(crate) fn enforce(&self, iam: Option<Arc<Enforcer>>) {
        self.state.lock().unwrap().iam = iam;
    }

    /// The role enforced, with what it allowed and refused so far.
    pub(crate) fn iam(&self) -> Option<Arc<Enforcer>> {
        self.state.lock().unwrap().iam.clone()
    }

    /// Counts `n` executions running outside this API (the coordinator invoked by the
    /// test), towards the account's concurrency.
    pub(crate) fn hold_executions(&self, n: u32) {
        let mut s = self.state.lock().unwrap();
        s.executions += n;
        s.peak_executions = s.peak_executions.max(s.executions);
    }

    /// The most executions that ran at once.
    pub(crate) fn peak_executions(&self) -> u32 {
        self.state.lock().unwrap().peak_executions
    }

    /// The calls so far, in order, one line each.
    pub(crate) fn calls(&self) -> Vec<String> {
        self.state.lock().unwrap().calls.clone()
    }

    pub(crate) fn function(&self) -> FunctionState {
        self.state.lock().unwrap().function.clone()
    }

    /// Sets the description (a test playing another sweep, or the user).
    pub(crate) fn set_description(&self, description: &str) {
        let mut s = self.state.lock().unwrap();
        s.function.description = description.into();
        s.function.revision += 1;
    }
}

/// Counts a call of `kind`; true when a failure is injected at it.
fn count(s: &mut State, kind: &'static str) -> bool {
    let n = s.counts.entry(kind).or_insert(0);
    *n += 1;
    s.fail_at == Some((kind, *n))
}

async fn route(req: Request<Incoming>, state: Arc<Mutex<State>>) -> Response<Full<Bytes>> {
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let query = req.uri().query().unwrap_or("").to_string();
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let Some(rest) = path.strip_prefix("/2015-03-31/functions/") else {
        return error(404, "ResourceNotFoundException", &format!("no route {method} {path}"));
    };
    let (raw_name, tail) = rest.split_once('/').unwrap_or((rest, ""));
    let query_qualifier = query
        .split('&')
        .find_map(|pair| pair.strip_prefix("Qualifier="))
        .map(percent_decode);
    if let Some(denied) = refusal(&state, method.as_str(), tail, raw_name, query_qualifier.as_deref()) {
        return denied;
    }
    let (name, mut qualifier) = split_name(raw_name);
    if query_qualifier.is_some() {
        qualifier = query_qualifier;
    }
    let action = {
        let mut s = state.lock().unwrap();
        s.passed = percent_decode(raw_name);
        decide(&mut s, method.as_str(), tail, &path, name, qualifier, body)
    };
    match action {
        Action::Reply(r) => r,
        Action::Invoke(handler, body, meta) => {
            let answer = handler(body, meta).await;
            state.lock().unwrap().executions -= 1;
            match answer {
                Ok(v) => reply(StatusCode::OK, v, &[]),
                Err(v) => reply(StatusCode::OK, v, &[("x-amz-function-error", "Unhandled")]),
            }
        }
    }
}

/// The IAM action of a call.
fn operation(method: &str, tail: &str) -> Option<&'static str> {
    Some(match (method, tail) {
        ("POST", "invocations") => "InvokeFunction",
        ("GET", "configuration") => "GetFunctionConfiguration",
        ("PUT", "configuration") => "UpdateFunctionConfiguration",
        ("POST", "versions") => "PublishVersion",
        ("DELETE", "") => "DeleteFunction",
        _ => return None,
    })
}

/// The call authorized against the role, as Lambda does: the resource is the
/// FunctionName as passed, completed to an ARN, and an unqualified name with a
/// `Qualifier` is the qualified ARN `function:NAME:QUALIFIER`
/// ([`lambda_call_resource`]). A refusal is recorded as a call and answered 403
/// `AccessDeniedException` (`None`: allowed).
fn refusal(
    state: &Arc<Mutex<State>>,
    method: &str,
    tail: &str,
    raw_name: &str,
    qualifier: Option<&str>,
) -> Option<Response<Full<Bytes>>> {
    let mut s = state.lock().unwrap();
    let (Some(iam), Some(op)) = (s.iam.clone(), operation(method, tail)) else {
        return None;
    };
    let passed = percent_decode(raw_name);
    let resource = lambda_call_resource(&passed, qualifier);
    let d = iam.authorize(&format!("lambda:{op}"), &resource, &[]).err()?;
    let kind = if op == "InvokeFunction" { "Invoke" } else { op };
    let with_qualifier = qualifier.map(|q| format!(" Qualifier={q}")).unwrap_or_default();
    s.calls.push(format!(
        "{kind} FunctionName={passed}{with_qualifier} -> 403 AccessDeniedException ({} on {})",
        d.action, d.resource
    ));
    Some(access_denied(&d.message(false)))
}

enum Action {
    Reply(Response<Full<Bytes>>),
    Invoke(InvokeHandler, Value, InvokeMeta),
}

fn decide(
    s: &mut State,
    method: &str,
    tail: &str,
    path: &str,
    name: String,
    qualifier: Option<String>,
    body: Value,
) -> Action {
    if tail == "invocations" && method == "POST" {
        let inject = count(s, "Invoke");
        let q = qualifier.unwrap_or_else(|| "$LATEST".into());
        let memory_mb = match q.parse::<u64>().ok().and_then(|n| s.function.versions.get(&n)) {
            Some(v) => v.memory_mb,
            None if q == "$LATEST" => s.function.memory_mb,
            None => {
                s.calls.push(format!("Invoke Qualifier={q} -> 404"));
                return Action::Reply(error(404, "ResourceNotFoundException", &format!("no version {q}")));
            }
        };
        if state_of(&s.function, &q) == "Pending" {
            s.calls.push(format!("Invoke Qualifier={q} -> 409 version Pending"));
            return Action::Reply(error(
                409,
                "ResourceConflictException",
                "The operation cannot be performed at this time. The function is currently in the following state: Pending",
            ));
        }
        if let Some(limit) = s.limits.concurrent_executions.filter(|&l| s.executions >= l) {
            s.calls.push(format!(
                "Invoke Qualifier={q} -> 429 TooManyRequestsException ({limit} running)"
            ));
            return Action::Reply(reply(
                StatusCode::TOO_MANY_REQUESTS,
                json!({"Type": "User", "message": "Rate Exceeded.", "Reason": "ConcurrentInvocationLimitExceeded"}),
                &[("x-amzn-errortype", "TooManyRequestsException")],
            ));
        }
        s.calls.push(format!(
            "Invoke Qualifier={q} ({memory_mb} MB){}",
            if inject { " [INJECTED FAILURE]" } else { "" }
        ));
        if inject {
            return Action::Reply(error(500, "ServiceException", "injected failure"));
        }
        s.executions += 1;
        s.peak_executions = s.peak_executions.max(s.executions);
        return Action::Invoke(s.handler.clone(), body, InvokeMeta { version: q, memory_mb });
    }
    Action::Reply(control(s, method, tail, path, name, qualifier, body))
}

fn control(
    s: &mut State,
    method: &str,
    tail: &str,
    path: &str,
    name: String,
    qualifier: Option<String>,
    body: Value,
) -> Response<Full<Bytes>> {
    if name != s.function.name {
        return error(404, "ResourceNotFoundException", &format!("Function not found: {name}"));
    }
    match (method, tail) {
        ("GET", "configuration") if qualifier.as_deref().is_some_and(|q| q != "$LATEST") => {
            version_configuration(s, qualifier.as_deref().unwrap_or_default())
        }
        ("GET", "configuration") => get_configuration(s),
        ("PUT", "configuration") => update_configuration(s, &body),
        ("POST", "versions") => publish_version(s, &body),
        ("DELETE", "") => delete_version(s, qualifier),
        _ => error(404, "ResourceNotFoundException", &format!("no route {method} {path}")),
    }
}

/// `GetFunctionConfiguration` of `$LATEST`: `InProgress` for as many reads as an
/// update left, then its settled status.
fn get_configuration(s: &mut State) -> Response<Full<Bytes>> {
    let inject = count(s, "GetFunctionConfiguration");
    let f = &mut s.function;
    let status = if f.in_progress_reads > 0 {
        f.in_progress_reads -= 1;
        "InProgress"
    } else {
        f.settled_status
    };
    let line = format!("GetFunctionConfiguration -> {} MB, {status}", f.memory_mb);
    let answer = config_json(f, status, "$LATEST", f.memory_mb, &f.description.clone());
    s.calls
        .push(format!("{line}{}", if inject { " [INJECTED FAILURE]" } else { "" }));
    if inject {
        return error(500, "ServiceException", "injected failure");
    }
    reply(StatusCode::OK, answer, &[])
}

/// `UpdateFunctionConfiguration`: memory and description, refused as Lambda refuses it
/// (over the account's memory limit, during an update, on a stale revision).
fn update_configuration(s: &mut State, body: &Value) -> Response<Full<Bytes>> {
    let inject = count(s, "UpdateFunctionConfiguration");
    let memory = body.get("MemorySize").and_then(Value::as_u64);
    let description = body.get("Description").and_then(Value::as_str).map(str::to_string);
    let mut line = "UpdateFunctionConfiguration".to_string();
    if let Some(m) = memory {
        line.push_str(&format!(" MemorySize={m}"));
    }
    if let Some(d) = &description {
        line.push_str(&format!(" Description={d:?}"));
    }
    if let Some(r) = body.get("RevisionId").and_then(Value::as_str) {
        line.push_str(&format!(" RevisionId={r}"));
    }
    if inject {
        s.calls.push(format!("{line} [INJECTED FAILURE]"));
        return error(500, "ServiceException", "injected failure");
    }
    if let (Some(m), Some(max)) = (memory, s.limits.max_memory_mb) {
        if m > u64::from(max) {
            s.calls.push(format!("{line} -> 400 InvalidParameterValueException"));
            return error(
                400,
                "InvalidParameterValueException",
                &format!("1 validation error detected: Value '{m}' at 'memorySize' failed to satisfy constraint: Member must have value less than or equal to {max}"),
            );
        }
    }
    let f = &s.function;
    if f.in_progress_reads > 0 {
        s.calls.push(format!("{line} -> 409 ResourceConflictException"));
        return error(
            409,
            "ResourceConflictException",
            "An update is in progress for resource",
        );
    }
    if let Some(r) = body.get("RevisionId").and_then(Value::as_str) {
        if r != format!("rev-{}", f.revision) {
            s.calls.push(format!("{line} -> 412 PreconditionFailedException"));
            return error(
                412,
                "PreconditionFailedException",
                "The RevisionId provided does not match the latest RevisionId",
            );
        }
    }
    let failed_update = count(s, "LastUpdateStatus");
    let f = &mut s.function;
    if let Some(m) = memory {
        f.memory_mb = m as u32;
    }
    if let Some(d) = description {
        f.description = d;
    }
    f.revision += 1;
    f.in_progress_reads = 1;
    f.settled_status = if failed_update { "Failed" } else { "Successful" };
    let answer = config_json(f, "InProgress", "$LATEST", f.memory_mb, &f.description.clone());
    s.calls.push(format!(
        "{line}{}",
        if failed_update {
            " [INJECTED: LastUpdateStatus Failed]"
        } else {
            ""
        }
    ));
    reply(StatusCode::OK, answer, &[])
}

/// `PublishVersion`: a numbered version of `$LATEST` (refused on a stale revision).
fn publish_version(s: &mut State, body: &Value) -> Response<Full<Bytes>> {
    let inject = count(s, "PublishVersion");
    if inject {
        s.calls.push("PublishVersion [INJECTED FAILURE]".into());
        return error(500, "ServiceException", "injected failure");
    }
    let f = &s.function;
    if let Some(r) = body.get("RevisionId").and_then(Value::as_str) {
        if r != format!("rev-{}", f.revision) {
            s.calls.push("PublishVersion -> 412 PreconditionFailedException".into());
            return error(
                412,
                "PreconditionFailedException",
                "The RevisionId provided does not match",
            );
        }
    }
    let description = body
        .get("Description")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let pending_reads = s.limits.pending_reads;
    let f = &mut s.function;
    let n = f.next_version;
    f.next_version += 1;
    f.versions.insert(
        n,
        Version {
            memory_mb: f.memory_mb,
            description: description.clone(),
            pending_reads,
        },
    );
    let answer = config_json(f, "Successful", &n.to_string(), f.memory_mb, &description);
    let line = format!("PublishVersion -> version {n} ({} MB)", f.memory_mb);
    s.calls.push(line);
    reply(StatusCode::CREATED, answer, &[])
}

/// `DeleteFunction` of one version; without a qualifier (the whole function) refused.
fn delete_version(s: &mut State, qualifier: Option<String>) -> Response<Full<Bytes>> {
    let inject = count(s, "DeleteFunction");
    let Some(q) = qualifier else {
        s.calls
            .push("DeleteFunction WITHOUT A QUALIFIER (the whole function!)".into());
        return error(400, "InvalidParameterValueException", "refused by the test server");
    };
    let line = format!("DeleteFunction FunctionName={} -> version {q}", s.passed);
    if inject {
        s.calls.push(format!("{line} [INJECTED FAILURE]"));
        return error(500, "ServiceException", "injected failure");
    }
    let removed = q.parse::<u64>().ok().and_then(|n| s.function.versions.remove(&n));
    s.calls.push(line);
    match removed {
        Some(_) => Response::builder()
            .status(StatusCode::NO_CONTENT)
            .body(Full::new(Bytes::new()))
            .unwrap(),
        None => error(404, "ResourceNotFoundException", &format!("no version {q}")),
    }
}

/// `GetFunctionConfiguration` of a version: its memory and state (`Pending`, then `Active`).
fn version_configuration(s: &mut State, q: &str) -> Response<Full<Bytes>> {
    let inject = count(s, "GetFunctionConfiguration");
    let f = &s.function;
    let Some(v) = q.parse::<u64>().ok().and_then(|n| f.versions.get(&n)) else {
        s.calls.push(format!("GetFunctionConfiguration Qualifier={q} -> 404"));
        return error(404, "ResourceNotFoundException", &format!("no version {q}"));
    };
    let state = state_of(f, q);
    let answer = config_json(f, "Successful", q, v.memory_mb, &v.description.clone());
    if let Some(v) = s.function.versions.get_mut(&q.parse::<u64>().unwrap_or(0)) {
        v.pending_reads = v.pending_reads.saturating_sub(1);
    }
    s.calls.push(format!(
        "GetFunctionConfiguration Qualifier={q} -> {state}{}",
        if inject { " [INJECTED FAILURE]" } else { "" }
    ));
    if inject {
        return error(500, "ServiceException", "injected failure");
    }
    reply(StatusCode::OK, answer, &[])
}

/// The real SDK client of a Lambda API at `endpoint` (ours, moto's, or the emulator's):
/// fixed test keys, retries off, on s3sweep's transport.
pub(crate) fn lambda_client(endpoint: &str) -> aws_sdk_lambda::Client {
    let transport = s3sweep::transport::Transport::new(s3sweep::transport::TransportSettings::default());
    let conf = aws_sdk_lambda::Config::builder()
        .behavior_version(aws_sdk_lambda::config::BehaviorVersion::latest())
        .region(aws_sdk_lambda::config::Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .credentials_provider(aws_sdk_lambda::config::Credentials::new(
            "AKIDTEST", "secret", None, None, "test",
        ))
        .retry_config(aws_sdk_lambda::config::retry::RetryConfig::disabled())
        .http_client(transport.http_client())
        .build();
    aws_sdk_lambda::Client::from_conf(conf)
}

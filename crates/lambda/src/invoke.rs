//! Invoking a child: the Lambda client (built once, its own transport, retries off so a
//! child never runs twice), one synchronous Invoke within a time limit, and the sorting
//! of what came back into a result or a named [`ChildError`].

use std::time::Duration;

use aws_sdk_lambda::error::{DisplayErrorContext, SdkError};
use aws_sdk_lambda::primitives::Blob;
use aws_sdk_lambda::types::InvocationType;
use serde_json::Value;

use crate::model::{ChildError, ChildErrorKind, KeyRange, SweepResult};
use crate::transport::{Transport, TransportSettings};

use super::settings::FanoutSettings;

/// What came back from one child.
#[derive(Debug, Clone)]
pub struct ChildOutcome {
    pub index: u32,
    pub key_range: KeyRange,
    pub seed: u64,
    pub invoke_ms: f64,
    pub result: Result<SweepResult, ChildError>,
}

/// Idle time before TCP keepalive probes on the Invoke connections.
pub const INVOKE_KEEPALIVE: Duration = Duration::from_secs(60);

/// The Lambda client the coordinator invokes children with: built once per execution
/// environment, on its own [`Transport`] (the S3 client's transport, its own pool sized for
/// `FanoutMax` connections, so invocations never queue behind each other), retries off.
#[derive(Clone, Debug)]
pub struct Invoker {
    client: aws_sdk_lambda::Client,
}

impl Invoker {
    /// Builds the client from the standard chain (region, credentials, and
    /// `AWS_ENDPOINT_URL_LAMBDA` for an emulator).
    pub async fn new(settings: &FanoutSettings) -> Self {
        let transport = Transport::new(TransportSettings {
            pool_connections: settings.max_invocations as usize + 1,
            connect_timeout: Duration::from_secs(10),
            // A synchronous Invoke is silent for up to 900 s; NAT gateways drop flows
            // idle for 350 s.
            tcp_keepalive: Some(INVOKE_KEEPALIVE),
            // Invoke connections are reused between a coordinator's children only.
            pool_idle_timeout: Duration::from_secs(60),
            lanes: 1,
        });
        let shared = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .http_client(transport.http_client())
            .load()
            .await;
        let config = aws_sdk_lambda::config::Builder::from(&shared)
            // A retried Invoke could run a child twice: a failure is reported instead.
            .retry_config(aws_sdk_lambda::config::retry::RetryConfig::disabled())
            .build();
        Invoker {
            client: aws_sdk_lambda::Client::from_conf(config),
        }
    }

    /// An invoker around an existing client (tests: a client of a Lambda API server on
    /// 127.0.0.1).
    pub fn with_client(client: aws_sdk_lambda::Client) -> Self {
        Invoker { client }
    }

    /// The Lambda client (a memory sweep's control-plane calls use it too).
    pub fn client(&self) -> &aws_sdk_lambda::Client {
        &self.client
    }

    /// Invokes `function` once, synchronously, with `event`, within `limit`.
    pub async fn invoke(&self, function: &str, event: &Value, limit: Duration) -> Result<SweepResult, ChildError> {
        let payload = serde_json::to_vec(event).map_err(|e| ChildError {
            kind: ChildErrorKind::InvokeFailed,
            error_type: None,
            message: format!("serializing the child event: {e}"),
        })?;
        let call = self
            .client
            .invoke()
            .function_name(function)
            .invocation_type(InvocationType::RequestResponse)
            .payload(Blob::new(payload))
            .send();
        let output = match tokio::time::timeout(limit, call).await {
            Err(_) => {
                return Err(ChildError {
                    kind: ChildErrorKind::Timeout,
                    error_type: None,
                    message: format!("no answer within {} ms", limit.as_millis()),
                })
            }
            Ok(Err(err)) => return Err(classify_invoke_error(&err)),
            Ok(Ok(output)) => output,
        };
        let body = output.payload().map(|b| b.as_ref()).unwrap_or_default();
        if let Some(function_error) = output.function_error() {
            return Err(function_error_of(function_error, body));
        }
        serde_json::from_slice::<SweepResult>(body).map_err(|e| ChildError {
            kind: ChildErrorKind::BadResponse,
            error_type: None,
            message: format!("the child's answer is not a sweep result: {e}"),
        })
    }
}

/// The child's `{errorType, errorMessage}` (the payload of a function error).
fn function_error_of(header: &str, body: &[u8]) -> ChildError {
    let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let error_type = v.get("errorType").and_then(Value::as_str).map(str::to_string);
    let message = v
        .get("errorMessage")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| String::from_utf8_lossy(&body[..body.len().min(500)]).into_owned());
    let timed_out = error_type
        .as_deref()
        .is_some_and(|t| t.contains("Timedout") || t.contains("Timeout"));
    ChildError {
        kind: if timed_out {
            ChildErrorKind::Timeout
        } else {
            ChildErrorKind::FunctionError
        },
        error_type: error_type.or_else(|| Some(header.to_string())),
        message,
    }
}

fn classify_invoke_error(
    err: &SdkError<aws_sdk_lambda::operation::invoke::InvokeError, aws_smithy_runtime_api::http::Response>,
) -> ChildError {
    // `cargo lambda watch` answers a function error with a 500 and the child's
    // `{errorType, errorMessage}` (Lambda itself: 200 and `X-Amz-Function-Error`).
    if let SdkError::ServiceError(e) = err {
        if let Some(body) = e.raw().body().bytes() {
            if serde_json::from_slice::<Value>(body).is_ok_and(|v| v.get("errorType").is_some()) {
                return function_error_of("Unhandled", body);
            }
        }
    }
    let mut message = DisplayErrorContext(err).to_string();
    if message.len() > 500 {
        let mut end = 500;
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
        message.push_str("...");
    }
    let (kind, error_type) = match err {
        SdkError::TimeoutError(_) => (ChildErrorKind::Timeout, None),
        SdkError::DispatchFailure(f) if f.is_timeout() => (ChildErrorKind::Timeout, None),
        SdkError::ServiceError(e) => {
            let code = aws_sdk_lambda::error::ProvideErrorMetadata::code(e.err()).map(str::to_string);
            if e.err().is_too_many_requests_exception() || e.raw().status().as_u16() == 429 {
                (ChildErrorKind::Throttled, code)
            } else {
                (ChildErrorKind::InvokeFailed, code)
            }
        }
        SdkError::ResponseError(e) if e.raw().status().as_u16() == 429 => (ChildErrorKind::Throttled, None),
        _ => (ChildErrorKind::InvokeFailed, None),
    };
    ChildError {
        kind,
        error_type,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invoke_errors_are_classified() {
        use aws_sdk_lambda::operation::invoke::InvokeError;
        use aws_sdk_lambda::types::error::TooManyRequestsException;
        use aws_smithy_runtime_api::http::{Response, StatusCode};
        use aws_smithy_types::body::SdkBody;
        let response = |status: u16, body: &str| {
            Response::new(StatusCode::try_from(status).unwrap(), SdkBody::from(body.to_string()))
        };
        let throttled = SdkError::service_error(
            InvokeError::TooManyRequestsException(TooManyRequestsException::builder().message("Rate exceeded").build()),
            response(429, r#"{"message": "Rate exceeded"}"#),
        );
        assert_eq!(classify_invoke_error(&throttled).kind, ChildErrorKind::Throttled);
        let generic = InvokeError::generic(aws_smithy_types::error::ErrorMetadata::builder().code("X").build());
        assert_eq!(
            classify_invoke_error(&SdkError::service_error(generic, response(429, "{}"))).kind,
            ChildErrorKind::Throttled
        );
        let timeout: SdkError<InvokeError, Response> = SdkError::timeout_error("operation timed out");
        assert_eq!(classify_invoke_error(&timeout).kind, ChildErrorKind::Timeout);
        // The emulator's function error: a 500 whose body is the child's error.
        let generic = InvokeError::generic(aws_smithy_types::error::ErrorMetadata::builder().build());
        let emulated = SdkError::service_error(
            generic,
            response(
                500,
                r#"{"errorType": "ObjectNotFound", "errorMessage": "object missing"}"#,
            ),
        );
        let e = classify_invoke_error(&emulated);
        assert_eq!(e.kind, ChildErrorKind::FunctionError);
        assert_eq!(e.error_type.as_deref(), Some("ObjectNotFound"));
        let generic = InvokeError::generic(
            aws_smithy_types::error::ErrorMetadata::builder()
                .code("ResourceNotFoundException")
                .build(),
        );
        let missing = SdkError::service_error(generic, response(404, &"x".repeat(5000)));
        let e = classify_invoke_error(&missing);
        assert_eq!(e.kind, ChildErrorKind::InvokeFailed);
        assert_eq!(e.error_type.as_deref(), Some("ResourceNotFoundException"));
        assert!(e.message.len() <= 503, "{}", e.message.len());
    }

    #[test]
    fn function_errors_are_named() {
        let e = function_error_of(
            "Unhandled",
            br#"{"errorType": "InvalidEvent", "errorMessage": "invalid request (1 problem)"}"#,
        );
        assert_eq!(e.kind, ChildErrorKind::FunctionError);
        assert_eq!(e.error_type.as_deref(), Some("InvalidEvent"));
        let e = function_error_of(
            "Unhandled",
            br#"{"errorType": "Sandbox.Timedout", "errorMessage": "Task timed out"}"#,
        );
        assert_eq!(e.kind, ChildErrorKind::Timeout);
        let e = function_error_of("Unhandled", b"garbage");
        assert_eq!(e.error_type.as_deref(), Some("Unhandled"));
        assert_eq!(e.message, "garbage");
    }
}

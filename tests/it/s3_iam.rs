//! S3 as strict as AWS: the lab authorizes every request against the function's role
//! as SAM expands it (`ResultsBucket` set, tests/it/common/iam.rs), as S3 does
//! (crates/lab/src/iam_s3.rs), and the handler's paths that call S3 run under it: the sweep
//! of a general purpose and a directory bucket (GetObject, CreateSession ReadOnly), a
//! `key_prefix` listing (ListBucket) and the results write (PutObject). None is refused;
//! a request outside the role is refused with S3's 403 AccessDenied naming the action
//! and the resource. The role's statements no S3 call needed are printed.

use std::sync::Arc;
use std::time::Duration;

use aws_sdk_s3::error::ProvideErrorMetadata;
use lambda_runtime::LambdaEvent;
use serde_json::{json, Value};

use crate::common::iam::{sweep_enforcer, Enforcer, RESULTS_BUCKET};
use crate::common::lab::{LatencyProfile, RunningServer};
use crate::common::{self, EXPRESS_BUCKET, STANDARD_BUCKET};
use s3sweep::s3::RequestSettings;
use s3sweep_lambda::{Function, FunctionSettings, CA_BUNDLE_ENV, ENDPOINT_ENV, RESULTS_URI_ENV};

const RESULTS: &[(&str, &str)] = &[("ResultsBucket", RESULTS_BUCKET)];

/// The lab over HTTPS with the role's three buckets, seeded, then enforcing
/// `enforcer` (the role's policy).
fn gated_lab(enforcer: &Arc<Enforcer>) -> common::LabBuilder {
    common::LabBuilder::new()
        .bucket(STANDARD_BUCKET, LatencyProfile::None)
        .bucket(EXPRESS_BUCKET, LatencyProfile::None)
        .bucket(RESULTS_BUCKET, LatencyProfile::None)
        .tls()
        .seed(STANDARD_BUCKET, 12, 256)
        .seed(EXPRESS_BUCKET, 12, 256)
        .iam(enforcer.clone())
}

async fn function(server: &RunningServer) -> Function {
    let endpoint = server.endpoint();
    let ca = server.ca_file().unwrap().display().to_string();
    let settings = FunctionSettings::from_lookup(|var| match var {
        ENDPOINT_ENV => Some(endpoint.clone()),
        CA_BUNDLE_ENV => Some(ca.clone()),
        RESULTS_URI_ENV => Some(format!("s3://{RESULTS_BUCKET}/s3sweep-results")),
        "S3SWEEP_SAFETY_MARGIN_MS" => Some("500".into()),
        "AWS_REGION" => Some("us-east-1".into()),
        _ => None,
    })
    .unwrap();
    Function::new(settings).await.unwrap()
}

async fn handle(f: &Function, id: &str, event: Value) -> Value {
    let context = common::lambda_context(id, Some(Duration::from_secs(60)));
    let handled = tokio::time::timeout(Duration::from_secs(30), f.handle(LambdaEvent::new(event, context)))
        .await
        .expect("bounded");
    serde_json::to_value(handled.unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_handlers_s3_calls_are_all_allowed_by_the_expanded_role() {
    let enforcer = sweep_enforcer(RESULTS);
    let server = gated_lab(&enforcer).server().await;
    let f = function(&server).await;
    let sweep = handle(
        &f,
        "iam-sweep",
        json!({"buckets": [STANDARD_BUCKET, EXPRESS_BUCKET], "object_count": 12, "workers": [2]}),
    )
    .await;
    let listed = handle(
        &f,
        "iam-prefix",
        json!({"buckets": [STANDARD_BUCKET], "key_prefix": "test/", "object_count": 12, "workers": [2]}),
    )
    .await;
    for (what, result) in [("sweep", &sweep), ("key_prefix", &listed)] {
        let rows = result["results"].as_array().unwrap();
        assert!(!rows.is_empty(), "{what}: {result}");
        for row in rows {
            assert_eq!(row["ok"], row["requests"], "{what}: {row}");
            assert!(row["ok"].as_u64().unwrap() > 0, "{what}: {row}");
        }
    }
    assert_eq!(enforcer.denials(), vec![], "no S3 call of the handler is refused");
    // The results were written where the role allows.
    let written = server.store().keys(RESULTS_BUCKET).unwrap_or_default();
    assert!(
        written.iter().any(|k| k == "s3sweep-results/iam-sweep.json"),
        "{written:?}"
    );
    let unused = enforcer.unused();
    eprintln!("role statements (ResultsBucket set) no S3 call needed: {unused:?}");
    assert!(unused.iter().all(|u| u.contains("lambda:")), "{unused:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_outside_the_role_is_access_denied_naming_action_and_resource() {
    let enforcer = sweep_enforcer(RESULTS);
    let server = gated_lab(&enforcer).server().await;
    let client = common::client_of(&server).await;
    let s3 = client.s3(RequestSettings::maintenance(Duration::from_secs(5)));
    let err = s3
        .put_object()
        .bucket(STANDARD_BUCKET)
        .key("test/0/vectors")
        .body(bytes::Bytes::from_static(b"x").into())
        .send()
        .await
        .unwrap_err();
    let message = err.message().unwrap_or_default().to_string();
    eprintln!(
        "PutObject outside the role: {}: {message}",
        err.code().unwrap_or_default()
    );
    assert_eq!(err.code(), Some("AccessDenied"));
    assert!(
        message.contains("s3:PutObject") && message.contains("\"arn:aws:s3:::standard-like/test/0/vectors\""),
        "{message}"
    );
    // A ReadWrite session on the directory bucket: the role allows ReadOnly only.
    let denied = s3.create_session().bucket(EXPRESS_BUCKET).send().await.unwrap_err();
    assert_eq!(denied.code(), Some("AccessDenied"), "{denied:?}");
    let last = enforcer.denials().pop().unwrap();
    assert_eq!(last.action, "s3express:CreateSession");
}

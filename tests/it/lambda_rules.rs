//! Lambda's control-plane rules the tests' Lambda API (tests/it/common/lambda_api.rs)
//! emulates, each with one call AWS allows and one it refuses (the rule table in
//! docs/testing.md): a published version is `Pending` and refuses Invoke with 409
//! `ResourceConflictException` until it is `Active` ("Lambda function states": "Lambda
//! does not invoke a function during pending state"); an update while the last is
//! `InProgress` is 409 `ResourceConflictException`; an update with a stale `RevisionId`
//! is 412 `PreconditionFailedException` (UpdateFunctionConfiguration API reference).

use aws_sdk_lambda::error::ProvideErrorMetadata;
use aws_sdk_lambda::primitives::Blob;
use serde_json::json;

use crate::common::lambda_api::lambda_client;
use crate::memory_sweep::{setup, BUCKET, FUNCTION};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_version_refuses_invoke_until_it_is_active() {
    let s = setup().await;
    let client = lambda_client(&s.api.endpoint());
    let version = client
        .publish_version()
        .function_name(FUNCTION)
        .send()
        .await
        .unwrap()
        .version()
        .unwrap()
        .to_string();
    let qualified = format!("{FUNCTION}:{version}");
    let payload = Blob::new(json!({"buckets": [BUCKET], "object_count": 4, "workers": [1]}).to_string());
    // Refused: the version is Pending.
    let err = client
        .invoke()
        .function_name(&qualified)
        .payload(payload.clone())
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some("ResourceConflictException"), "{err:?}");
    // Its state, read until Active; then allowed.
    let mut states = Vec::new();
    loop {
        let out = client
            .get_function_configuration()
            .function_name(&qualified)
            .send()
            .await
            .unwrap();
        let state = out.state().unwrap().as_str().to_string();
        states.push(state.clone());
        if state == "Active" {
            break;
        }
        assert!(states.len() < 5, "{states:?}");
    }
    assert_eq!(states, ["Pending", "Pending", "Active"]);
    let out = client
        .invoke()
        .function_name(&qualified)
        .payload(payload)
        .send()
        .await
        .expect("an Active version is invoked");
    assert_eq!(out.function_error(), None, "{out:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_in_progress_or_on_a_stale_revision_is_refused() {
    let s = setup().await;
    let client = lambda_client(&s.api.endpoint());
    let read = client
        .get_function_configuration()
        .function_name(FUNCTION)
        .send()
        .await
        .unwrap();
    let stale = read.revision_id().unwrap().to_string();
    // Allowed: an update on the current revision.
    client
        .update_function_configuration()
        .function_name(FUNCTION)
        .memory_size(512)
        .revision_id(&stale)
        .send()
        .await
        .expect("an update on the current revision");
    // Refused: another update while that one is InProgress.
    let err = client
        .update_function_configuration()
        .function_name(FUNCTION)
        .memory_size(1024)
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some("ResourceConflictException"), "{err:?}");
    // Once Successful, an update on the revision read before is refused.
    loop {
        let out = client
            .get_function_configuration()
            .function_name(FUNCTION)
            .send()
            .await
            .unwrap();
        if out.last_update_status().map(|s| s.as_str()) == Some("Successful") {
            break;
        }
    }
    let err = client
        .update_function_configuration()
        .function_name(FUNCTION)
        .memory_size(1024)
        .revision_id(&stale)
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some("PreconditionFailedException"), "{err:?}");
}

/// Every test docs/testing.md's rule table names exists: `module::name` in
/// tests/it/MODULE.rs (or tests/it/common/), `lab::...::tests::name` in crates/lab/src/.
#[test]
fn the_rule_table_names_only_tests_that_exist() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/testing.md")).unwrap();
    let table = &doc[doc.find("## The AWS rules the tests enforce").expect("the rule table")..];
    let mut named = 0;
    for line in table
        .lines()
        .filter(|l| l.starts_with("| ") && l.chars().nth(2).is_some_and(|c| c.is_ascii_digit()))
    {
        let tests = line.trim_end_matches('|').rsplit('|').next().unwrap();
        for name in tests.split(',').map(|t| t.trim().trim_matches('`')) {
            let parts: Vec<&str> = name.split("::").collect();
            let file = match parts[0] {
                "lab" => root.join(format!("crates/lab/src/{}.rs", parts[1])),
                "common" => root.join(format!("tests/it/common/{}.rs", parts[1])),
                module => root.join(format!("tests/it/{module}.rs")),
            };
            let source = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{name}: {}: {e}", file.display()));
            let function = parts.last().unwrap();
            assert!(
                source.contains(&format!("fn {function}()")),
                "{name}: no fn {function} in {}",
                file.display()
            );
            named += 1;
        }
    }
    assert!(named >= 14, "the table names {named} tests");
}

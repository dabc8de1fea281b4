//! A memory sweep under `cargo lambda watch`: the real `s3sweep-lambda` is invoked with
//! `memory_mb`, its Lambda client points at the scripted control-plane API of
//! `tests/it/common/lambda_api.rs` (on 127.0.0.1, in this test), and that API's Invoke of
//! each published version is forwarded with the real aws-sdk-lambda client to the
//! emulator, so every size's sweep runs in the function under the emulator against
//! `s3sweep serve`. Checked: the rows of every size, the call sequence, the versions
//! deleted and the memory restored, and the function's own log lines.
//!
//! cargo-lambda is found as in `tests/it/lambda_emulator.rs` (`$CARGO_LAMBDA`, `.venv`,
//! `PATH`); `S3SWEEP_SKIP_EMULATOR=1` skips loudly when it is missing.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use crate::common::lambda_api::{lambda_client, InvokeHandler, InvokeMeta, LambdaApi};
use crate::common::{cargo_lambda_for, Serve};
use crate::emulator::*;
use s3sweep_lambda::invoke::Invoker;

const FUNCTION: &str = "s3sweep-lambda";

#[test]
fn a_memory_sweep_under_cargo_lambda_watch() {
    let Some(cargo_lambda) = cargo_lambda_for("the memory sweep emulator test") else {
        return;
    };
    let tmp = std::env::temp_dir().join(format!("s3sweep-memory-emulator-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let lab = Serve::start(&["express-like=express"], &[]);
    // Its own manifest: the default one in the working folder may record another
    // run's lab, and seed refuses to mix two seeds in one manifest.
    let manifest = tmp.join("manifest.json");
    lab.seed("express-like", 24, 1024, &manifest);

    // The control-plane API; its Invoke forwards to the emulator once it is up.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let emulator_port: Arc<Mutex<Option<u16>>> = Arc::new(Mutex::new(None));
    let forwarded: Arc<Mutex<Vec<(String, u32)>>> = Arc::new(Mutex::new(Vec::new()));
    let handler = forward_to_the_emulator(emulator_port.clone(), forwarded.clone());
    let api = rt.block_on(LambdaApi::start(FUNCTION, 2048, "deployed by SAM", handler));
    let api_endpoint = api.endpoint();
    let mut emulator = Emulator::start_full(
        &cargo_lambda,
        &lab.endpoint,
        &tmp.join("watch.log"),
        None,
        Some(2),
        &[
            ("AWS_ENDPOINT_URL_LAMBDA", api_endpoint.as_str()),
            ("AWS_REGION", "us-east-1"),
            ("AWS_ACCESS_KEY_ID", "emulator"),
            ("AWS_SECRET_ACCESS_KEY", "emulator"),
            ("S3SWEEP_FANOUT_FUNCTION", FUNCTION),
            ("S3SWEEP_MEMORY_POLL_MS", "10"),
        ],
    );
    *emulator_port.lock().unwrap() = Some(emulator.port);

    let event_path = tmp.join("memory.json");
    std::fs::write(
        &event_path,
        json!({"buckets": ["express-like"], "object_count": 24, "workers": [1, 4], "memory_mb": [512, 1769]})
            .to_string(),
    )
    .unwrap();
    let out = emulator.invoke(&event_path, FIRST_INVOKE_LIMIT);
    assert!(
        out.status.success(),
        "the memory sweep failed:\n{}\ncalls: {:#?}\nemulator log:\n{}",
        error_text(&out),
        api.calls(),
        emulator.log()
    );
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    // Every size ran in the function under the emulator, at the version published.
    assert_eq!(
        *forwarded.lock().unwrap(),
        vec![("2".to_string(), 512), ("3".to_string(), 1769)]
    );
    every_size_ran_and_the_function_is_restored(&result, &api);
    // The function's own logs: the coordinator's lock and finish, and each size's sweep.
    let logs = emulator.json_logs();
    let said = |m: &str| {
        logs.iter()
            .filter(|l| l["fields"]["message"].as_str().is_some_and(|x| x.contains(m)))
            .count()
    };
    assert_eq!(said("memory sweep: lock taken"), 1, "{}", emulator.log());
    assert_eq!(said("memory sweep finished"), 1);
    assert!(said("sweep finished") >= 3, "the two sizes' sweeps and the coordinator");
    drop(emulator);
    drop(lab);
    let _ = std::fs::remove_dir_all(Path::new(&tmp));
}

/// The scripted API's Invoke: forwarded with the real aws-sdk-lambda client to the
/// emulator at the port set in `port` once it is up; each invocation's version and
/// memory size recorded in `forwarded`.
fn forward_to_the_emulator(port: Arc<Mutex<Option<u16>>>, forwarded: Arc<Mutex<Vec<(String, u32)>>>) -> InvokeHandler {
    Arc::new(move |event: Value, meta: InvokeMeta| {
        let port = port.lock().unwrap().expect("the emulator is up");
        forwarded.lock().unwrap().push((meta.version.clone(), meta.memory_mb));
        Box::pin(async move {
            let invoker = Invoker::with_client(lambda_client(&format!("http://127.0.0.1:{port}")));
            match invoker.invoke(FUNCTION, &event, Duration::from_secs(120)).await {
                Ok(result) => Ok(serde_json::to_value(result).unwrap()),
                Err(e) => Err(json!({"errorType": e.error_type, "errorMessage": e.message})),
            }
        })
    })
}

/// The result's rows: each size at each worker count, every object read; the
/// versions deleted and the function as SAM left it (memory, description, versions),
/// its memory restored last.
fn every_size_ran_and_the_function_is_restored(result: &Value, api: &LambdaApi) {
    let calls = api.calls();
    eprintln!("control-plane calls under cargo lambda watch:");
    for c in &calls {
        eprintln!("  {c}");
    }
    let tagged: Vec<(u64, u64)> = result["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["memory_mb"].as_u64().unwrap(), r["workers"].as_u64().unwrap()))
        .collect();
    assert_eq!(tagged, vec![(512, 1), (512, 4), (1769, 1), (1769, 4)]);
    assert!(result["results"].as_array().unwrap().iter().all(|r| r["ok"] == 24));
    assert_eq!(result["memory"]["versions_deleted"], json!(["2", "3"]));
    assert_eq!(result["memory"]["memory_restored"], true);
    let f = api.function();
    assert_eq!((f.memory_mb, f.description.as_str()), (2048, "deployed by SAM"));
    assert_eq!(f.versions.keys().copied().collect::<Vec<_>>(), vec![1]);
    assert!(
        calls.iter().any(|c| c == "PublishVersion -> version 3 (1769 MB)"),
        "{calls:#?}"
    );
    assert!(calls.last().unwrap().ends_with("2048 MB, Successful"), "{calls:#?}");
}

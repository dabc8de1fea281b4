//! The function under a Lambda Runtime API of our own that enforces the deadline the
//! way Lambda does (tests/it/common/runtime.rs: the processes are killed at the deadline
//! and a late answer is lost, an answer over 6 MB is refused). The real
//! `s3sweep-lambda` binary runs against the embedded S3 server.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::common::lab::LatencyProfile;
use crate::common::runtime::{Ending, Runtime, RESPONSE_LIMIT_BYTES};
use crate::common::LabBuilder;
use s3sweep::s3::SweepClient;

/// The embedded server with `bucket` (`objects` of `size` bytes seeded) and a Runtime
/// API with `processes` function processes pointed at it, with the variables `env`
/// gives for that Runtime API.
async fn lab_and_functions(
    (bucket, profile): (&str, LatencyProfile),
    (objects, size): (u32, u64),
    processes: usize,
    env: impl FnOnce(&Runtime) -> Vec<(&'static str, String)>,
) -> (crate::common::lab::RunningServer, Runtime) {
    let server = LabBuilder::new()
        .buckets(&[(bucket, profile)])
        .seed(bucket, objects, size)
        .server()
        .await;
    let rt = Runtime::start().await;
    let mut all = env(&rt);
    all.push(("S3SWEEP_ENDPOINT_URL", server.endpoint()));
    rt.spawn_functions(crate::common::lambda_bin(), processes, &all);
    (server, rt)
}

/// The variables of a coordinator that invokes its children through `rt`, and `more`.
pub(crate) fn fanout_env(rt: &Runtime, more: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
    let mut env = vec![
        ("S3SWEEP_FANOUT_FUNCTION", "s3sweep".to_string()),
        ("AWS_ENDPOINT_URL_LAMBDA", format!("http://{}", rt.addr)),
        ("AWS_ACCESS_KEY_ID", "test".into()),
        ("AWS_SECRET_ACCESS_KEY", "test".into()),
    ];
    env.extend(more.iter().map(|(k, v)| (*k, v.to_string())));
    env
}

/// A bucket `name` made empty in the lab at `endpoint`, for results.
async fn results_bucket(endpoint: &str, name: &str) -> SweepClient {
    let client = s3sweep::sweep_client(crate::common::lab::client_options(endpoint))
        .await
        .unwrap();
    client
        .s3(crate::common::seed_settings())
        .create_bucket()
        .bucket(name)
        .send()
        .await
        .unwrap();
    client
}

/// The result document at `uri` in the lab.
async fn result_in_lab(client: &SweepClient, uri: &str) -> Value {
    let uri = s3sweep::plan::ObjectUri::parse(uri).unwrap();
    let bytes = s3sweep::s3::results::read_object(client, &uri, 64 << 20)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    serde_json::from_slice(&bytes).unwrap()
}

pub(crate) fn answered(ending: Ending) -> (Value, usize, Duration) {
    match ending {
        Ending::Answered { body, after } => (serde_json::from_slice(&body).unwrap(), body.len(), after),
        other => panic!("no answer: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_that_cannot_finish_answers_before_the_deadline_with_a_cut_short_row() {
    // 400 GETs at one worker, standard-like (~17 ms each): ~7 s of work against a 5 s
    // deadline with a 1.5 s margin. Without a cut inside the configuration the
    // function is killed at 5 s and every row is lost.
    let (server, rt) = lab_and_functions(("slow-bucket", LatencyProfile::Standard), (400, 46_080), 1, |_| {
        vec![("S3SWEEP_SAFETY_MARGIN_MS", "1500".into())]
    })
    .await;
    let event = json!({"buckets": ["slow-bucket"], "object_count": 400, "workers": [1, 8], "warmup": false});
    let deadline = Duration::from_secs(5);
    let (_, ending) = rt.invoke(serde_json::to_vec(&event).unwrap(), deadline).await;
    let (result, bytes, after) = answered(ending);
    println!(
        "answered after {} ms of a {} ms deadline (margin 1500 ms), {bytes} bytes",
        after.as_millis(),
        deadline.as_millis()
    );
    assert!(after < deadline - Duration::from_millis(500), "{after:?}");
    assert!(!rt.killed());
    assert_eq!(result["truncated"], true);
    let rows = result["results"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    let row = &rows[0];
    assert_eq!(row["workers"], 1);
    assert_eq!(row["cut_short"], true);
    let ok = row["ok"].as_u64().unwrap();
    let not_done = row["requests_not_done"].as_u64().unwrap();
    println!("row kept: {ok} GETs done, {not_done} not done");
    assert!(ok > 50, "{row}");
    assert_eq!(ok + not_done, 400);
    assert_eq!(
        row["requests"].as_u64().unwrap(),
        ok,
        "no GET cut by the deadline counts as a failure"
    );
    assert_eq!(row["errors"]["total"], 0);
    let skipped: Vec<u64> = result["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["workers"].as_u64().unwrap())
        .collect();
    assert_eq!(skipped, vec![8]);
    assert!(result["skipped"][0]["reason"].as_str().unwrap().contains("deadline"));
    // The rows still get their diagnosis.
    assert!(row["diagnosis"]["verdict"].is_string(), "{row}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_function_killed_without_answering_leaves_its_finished_rows_in_s3() {
    // 100 GETs per configuration, standard-like (~17 ms each): workers 8 take ~0.2 s,
    // 4 ~0.45 s, 2 ~0.9 s, 1 ~1.7 s. The function is told it has 60 s but is killed
    // 1.6 s after it takes the event (as out of memory would): it cannot answer, and
    // cannot reach workers 1.
    let (server, rt) = lab_and_functions(("slow-bucket", LatencyProfile::Standard), (100, 46_080), 1, |_| vec![]).await;
    let lab = results_bucket(&server.endpoint(), "results-bucket").await;
    let event = json!({"buckets": ["slow-bucket"], "object_count": 100, "workers": [8, 4, 2, 1], "warmup": false,
                       "results_uri": "s3://results-bucket/sweeps/"});
    let (id, ending) = rt
        .invoke_killed_after(
            serde_json::to_vec(&event).unwrap(),
            Duration::from_secs(60),
            Duration::from_millis(1_600),
        )
        .await;
    assert!(matches!(ending, Ending::Killed), "{ending:?}");
    assert!(rt.killed());
    let uri = format!("s3://results-bucket/sweeps/{id}.json");
    let kept = result_in_lab(&lab, &uri).await;
    let rows = kept["results"].as_array().unwrap();
    let workers: Vec<u64> = rows.iter().map(|r| r["workers"].as_u64().unwrap()).collect();
    println!(
        "killed at 1.6 s; {uri} holds the rows of workers {workers:?} ({} GETs), total_wall_ms {}",
        rows.iter().map(|r| r["ok"].as_u64().unwrap()).sum::<u64>(),
        kept["total_wall_ms"]
    );
    assert!(!rows.is_empty(), "{kept}");
    assert!(
        !workers.contains(&1),
        "workers 1 cannot finish before the kill: {workers:?}"
    );
    for row in rows {
        assert_eq!(row["ok"], 100, "{row}");
        assert_ne!(row["cut_short"], true, "{row}");
    }
    // The rows finished are the first of the run's order, each written when it ended.
    let expected: Vec<u64> = [8, 4, 2].into_iter().take(rows.len()).collect();
    assert_eq!(workers, expected);
    assert_eq!(kept["results_uri"], uri.as_str());
    assert_eq!(kept["truncated"], true);
    let writes = &kept["results_writes"];
    assert_eq!(writes["complete"], false, "{writes}");
    assert_eq!(writes["failed"], 0, "{writes}");
    assert_eq!(writes["written"].as_u64().unwrap() + 1, rows.len() as u64, "{writes}");
    let not_run: Vec<u64> = kept["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["workers"].as_u64().unwrap())
        .collect();
    assert_eq!(not_run.len() + rows.len(), 4, "{not_run:?}");
    assert!(not_run.contains(&1));
    assert!(kept["skipped"][0]["reason"].as_str().unwrap().contains("not run yet"));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_children_answer_in_time_and_the_coordinator_keeps_their_rows() {
    // Two children of 200 GETs each at one worker (~3.4 s each) under a coordinator
    // with 6 s: the children must stop in time for the coordinator to merge.
    let (server, rt) = lab_and_functions(("slow-bucket", LatencyProfile::Standard), (400, 46_080), 3, |rt| {
        fanout_env(rt, &[("S3SWEEP_SAFETY_MARGIN_MS", "1000")])
    })
    .await;
    let event = json!({
        "buckets": ["slow-bucket"], "object_count": 400, "workers": [1, 8], "warmup": false,
        "fanout": {"invocations": 2, "start_delay_ms": 300}
    });
    let deadline = Duration::from_secs(6);
    let (_, ending) = rt.invoke(serde_json::to_vec(&event).unwrap(), deadline).await;
    let (result, bytes, after) = answered(ending);
    println!(
        "coordinator answered after {} ms of {} ms, {bytes} bytes",
        after.as_millis(),
        deadline.as_millis()
    );
    assert!(!rt.killed());
    let fanout = &result["fanout"];
    assert_eq!(fanout["children_ok"], 2, "{fanout}");
    assert_eq!(fanout["children_failed"], 0, "{fanout}");
    for child in fanout["children"].as_array().unwrap() {
        let rows = child["results"].as_array().unwrap();
        assert_eq!(rows.len(), 1, "{child}");
        assert_eq!(rows[0]["cut_short"], true, "{child}");
        let ok = rows[0]["ok"].as_u64().unwrap();
        assert!(ok > 20, "{child}");
        println!(
            "child {}: {ok} GETs kept, {} not done",
            child["index"], rows[0]["requests_not_done"]
        );
    }
    let merged = &result["results"][0];
    assert_eq!(merged["cut_short"], true);
    assert_eq!(
        merged["ok"].as_u64().unwrap() + merged["requests_not_done"].as_u64().unwrap(),
        400
    );
    assert!(
        merged["diagnosis"]["verdict"].is_string(),
        "a merged result is analysed too"
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fanout_answer_over_6_mb_is_trimmed_and_says_what_it_dropped() {
    // 4 children x 800 configurations: every child's rows kept would pass 6 MB (600 make
    // about 6.2 MB with the merged rows).
    let (server, rt) = lab_and_functions(("many-bucket", LatencyProfile::None), (2, 1_024), 5, |rt| {
        fanout_env(
            rt,
            &[
                ("S3SWEEP_FANOUT_MAX", "4"),
                ("S3SWEEP_RESULTS_URI", "s3://results-bucket/runs"),
            ],
        )
    })
    .await;
    let lab = results_bucket(&server.endpoint(), "results-bucket").await;
    let workers: Vec<u32> = (1..=40).collect();
    let event = json!({
        "buckets": ["many-bucket"], "object_count": 2, "workers": workers, "repetitions": 20,
        "warmup": false, "fanout": {"invocations": 4, "split": "replicate", "start_delay_ms": 500}
    });
    let started = std::time::Instant::now();
    let (id, ending) = rt
        .invoke(serde_json::to_vec(&event).unwrap(), Duration::from_secs(120))
        .await;
    let (result, bytes, _) = answered(ending);
    let trimmed = &result["trimmed"];
    println!(
        "answer {bytes} bytes (limit {RESPONSE_LIMIT_BYTES}), {} s; trimmed: {trimmed}",
        started.elapsed().as_secs()
    );
    assert!(bytes < RESPONSE_LIMIT_BYTES);
    assert!(
        trimmed["bytes_before"].as_u64().unwrap() > RESPONSE_LIMIT_BYTES as u64,
        "{trimmed}"
    );
    assert_eq!(trimmed["bytes_after"].as_u64().unwrap(), bytes as u64);
    let dropped: Vec<&str> = trimmed["dropped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap())
        .collect();
    assert!(dropped.contains(&"children_rows"), "{dropped:?}");
    // Nothing the merged rows need was dropped.
    let rows = result["results"].as_array().unwrap();
    assert_eq!(rows.len(), 800);
    assert!(
        rows.iter().all(|r| r["ok"].as_u64() == Some(8)),
        "4 children x 2 objects per configuration"
    );
    assert_eq!(result["fanout"]["children_ok"], 4);
    assert_eq!(result["summary"].as_array().unwrap().len(), 1);
    let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
    assert!(result["started_unix_ms"].as_u64().unwrap() <= now_ms);
    // The copy in S3 (the function's S3SWEEP_RESULTS_URI) is the untrimmed result:
    // every child's rows are there. The children wrote nothing of their own.
    let uri = format!("s3://results-bucket/runs/{id}.json");
    let full = result_in_lab(&lab, &uri).await;
    assert!(full.get("trimmed").is_none());
    let children = full["fanout"]["children"].as_array().unwrap();
    assert_eq!(children.len(), 4);
    let child_rows: Vec<usize> = children
        .iter()
        .map(|c| c["results"].as_array().unwrap().len())
        .collect();
    println!("answer {bytes} bytes trimmed; {uri}: children rows {child_rows:?}");
    assert_eq!(child_rows, vec![800; 4]);
    assert_eq!(full["results"].as_array().unwrap().len(), 800);
    assert_eq!(result["results_uri"], uri.as_str());
    assert_eq!(result["results_writes"]["written"], 1, "{}", result["results_writes"]);
    let listed = lab
        .s3(crate::common::seed_settings())
        .list_objects_v2()
        .bucket("results-bucket")
        .send()
        .await
        .unwrap();
    assert_eq!(listed.key_count(), Some(1), "only the coordinator's object");
    server.shutdown().await;
}

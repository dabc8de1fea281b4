//! Drives the embedded server into each regime and checks the verdict: latency-bound,
//! pool-bound, errors, and client-CPU-bound (the engine on a one-thread runtime), plus
//! the cold/steady split of the breakdown.
//!
//! The server always runs on its own runtime in its own thread, so the engine's runtime
//! measures only the client. Every test is bounded in requests (a few thousand at most)
//! and time.
//!
//! The client's CPU figure (`cores_busy`) is the whole process's CPU time, and a busy
//! client outranks the pool and latency verdicts: the tests that expect those run alone
//! in a process of their own ([`common::isolated`]), so the other tests of this binary
//! cannot count as the client's CPU.

use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use crate::common::lab::LatencyProfile;
use crate::common::LabBuilder;
use crate::common::{self, options, seed_bucket};
use s3sweep::engine::{self, Quiet};
use s3sweep::model::{ConfigResult, SweepResult};
use s3sweep::model::{Figure, FigureName, Thresholds, Verdict};
use s3sweep::plan::Plan;
use s3sweep::render::{render_tables, Style};
use s3sweep::s3::SweepClient;

/// How long a test alone in its own process may take, start to end.
const ALONE_LIMIT: Duration = Duration::from_secs(120);

/// The embedded server on a two-thread runtime of its own; stops when dropped.
struct ServerThread {
    endpoint: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ServerThread {
    fn start(bucket: &str, profile: LatencyProfile) -> Self {
        let (tx, rx) = mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let bucket = bucket.to_string();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let running = LabBuilder::new().bucket(&bucket, profile).server().await;
                tx.send(running.endpoint()).unwrap();
                let _ = stopped.await;
                running.shutdown().await;
            });
        });
        let endpoint = rx.recv_timeout(Duration::from_secs(30)).expect("server started");
        ServerThread {
            endpoint,
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for ServerThread {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn seeded_client(server: &ServerThread, bucket: &str, count: u32, size: u64) -> SweepClient {
    let client = s3sweep::sweep_client(crate::common::lab::client_options(&server.endpoint))
        .await
        .unwrap();
    seed_bucket(&client, bucket, count, size).await;
    client
}

async fn sweep(client: &SweepClient, plan: &str) -> SweepResult {
    let plan = Plan::from_json(plan).unwrap();
    let mut result = engine::run(&client.session(&plan), &plan, &options(), Arc::new(Quiet)).await;
    s3sweep::analysis::analyse(&mut result, &Thresholds::default());
    result
}

fn verdict(row: &ConfigResult) -> Verdict {
    row.diagnosis.as_ref().expect("every row has a diagnosis").verdict
}

fn runtime(threads: usize) -> tokio::runtime::Runtime {
    if threads == 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_all()
            .build()
            .unwrap()
    }
}

#[test]
fn few_workers_on_standard_latency_are_latency_bound() {
    if !common::isolated(
        "diagnose::few_workers_on_standard_latency_are_latency_bound",
        ALONE_LIMIT,
    ) {
        return;
    }
    let server = ServerThread::start("slow-bucket", LatencyProfile::Standard);
    runtime(2).block_on(async {
        let client = seeded_client(&server, "slow-bucket", 40, 1000).await;
        let result = sweep(
            &client,
            r#"{"buckets": ["slow-bucket"], "object_count": 40, "workers": [1, 2]}"#,
        )
        .await;
        for row in &result.results {
            let d = row.diagnosis.as_ref().unwrap();
            assert_eq!(d.verdict, Verdict::Latency, "{row:#?}");
            // The inputs of the rule: the client mostly idle, requests ~16 ms.
            let c = row.client.as_ref().unwrap();
            assert!(c.runtime_busy_ratio < 0.5, "{c:?}");
            assert!(row.ttlb_ms.mean > 10.0, "{row:?}");
            // Little's law: about `workers` requests in flight.
            assert!(
                c.mean_in_flight > 0.6 * f64::from(row.workers) && c.mean_in_flight <= f64::from(row.workers) + 0.05,
                "{c:?}"
            );
            assert!(d.explanation.contains("in flight"), "{}", d.explanation);
        }
        // Two workers are about twice as fast as one: the curve is still rising.
        let a = result.analysis.as_ref().unwrap();
        // No knee where the curve did not flatten; the largest count is recommended.
        assert_eq!(a.buckets[0].knee_workers, None);
        assert_eq!(a.buckets[0].recommended_workers, Some(2));
        assert!(a.buckets[0].recommendation.contains("still rising"), "{a:?}");
        let fit = a.buckets[0].fit.as_ref().unwrap();
        assert!(fit.latency_ms_per_request > 10.0, "{fit:?}");
        let text = render_tables(&result, Style::Terminal);
        assert!(text.contains("verdicts: 1-2 latency"), "{text}");
    });
}

#[test]
fn workers_far_above_the_pool_are_pool_bound() {
    if !common::isolated("diagnose::workers_far_above_the_pool_are_pool_bound", ALONE_LIMIT) {
        return;
    }
    let server = ServerThread::start("pool-bucket", LatencyProfile::Express);
    runtime(2).block_on(async {
        let client = seeded_client(&server, "pool-bucket", 160, 1000).await;
        let result = sweep(
            &client,
            r#"{"buckets": ["pool-bucket"], "object_count": 160, "workers": [32], "pool_connections": 4}"#,
        )
        .await;
        let row = &result.results[0];
        let d = row.diagnosis.as_ref().unwrap();
        assert_eq!(d.verdict, Verdict::Pool, "{row:#?}");
        // 32 workers on 4 connections: most of a request's time is the wait.
        assert!(d.figures[FigureName::PoolWaitShare].value() > 0.5, "{d:?}");
        assert!(d.explanation.contains("pool_connections"), "{}", d.explanation);
        // Little's law sees at most the 4 connections' worth in flight.
        let c = row.client.as_ref().unwrap();
        assert!(c.mean_in_flight <= 4.2, "{c:?}");
    });
}

#[test]
fn missing_keys_are_errors() {
    let server = ServerThread::start("holey-bucket", LatencyProfile::None);
    runtime(2).block_on(async {
        let client = seeded_client(&server, "holey-bucket", 20, 100).await;
        let result = sweep(
            &client,
            r#"{"buckets": ["holey-bucket"], "object_count": 40, "workers": [4]}"#,
        )
        .await;
        let row = &result.results[0];
        let d = row.diagnosis.as_ref().unwrap();
        assert_eq!(d.verdict, Verdict::Errors, "{row:#?}");
        assert_eq!(d.figures[FigureName::Errors], Figure::Count(20));
        assert!(d.explanation.contains("not_found=20"), "{}", d.explanation);
        // A bucket with only failed configurations has no knee and says so.
        let a = &result.analysis.as_ref().unwrap().buckets[0];
        assert_eq!(a.knee_workers, None);
        assert!(a.recommendation.contains("no configuration without errors"));
    });
}

/// The engine on a one-thread runtime, the server on two threads of its own, no added
/// latency and many requests in flight: the engine's thread is the bottleneck. The
/// check is on the rule's input, the runtime busy ratio: tokio counts wall time between
/// waking and parking, so a thread the OS preempts on a busy machine still counts as
/// busy, and noise only pushes the ratio up. What could pull it down is the server
/// falling behind, which is why it gets two threads and the client's work per request
/// (SDK, signing) is heavier than its own. Measured on a shared 2-core machine under
/// extra load: 0.93-1.0. Two repetitions, and the better one must reach the threshold,
/// so one unlucky scheduling burst cannot fail the test; both must be clearly busy.
#[test]
fn a_one_thread_engine_under_heavy_load_is_client_cpu_bound() {
    let _one = common::one_at_a_time();
    let server = ServerThread::start("hot-bucket", LatencyProfile::None);
    runtime(1).block_on(async {
        let client = seeded_client(&server, "hot-bucket", 1500, 1024).await;
        let result = sweep(
            &client,
            r#"{"buckets": ["hot-bucket"], "object_count": 1500, "workers": [64], "pool_connections": 64, "repetitions": 2}"#,
        )
        .await;
        let t = Thresholds::default();
        for row in &result.results {
            assert_eq!(row.ok, 1500);
            let c = row.client.as_ref().unwrap();
            assert_eq!(c.runtime_worker_threads, 1);
            assert_eq!(c.client_cores, 1.0);
            eprintln!(
                "runtime busy {:.3} cores busy {:.3} in flight {:.1} objects/s {:.0}",
                c.runtime_busy_ratio, c.cores_busy, c.mean_in_flight, row.objects_per_s
            );
            assert!(c.runtime_busy_ratio >= 0.7, "{row:#?}");
        }
        let row = result
            .results
            .iter()
            .max_by(|a, b| {
                let busy = |r: &ConfigResult| r.client.as_ref().unwrap().runtime_busy_ratio;
                busy(a).total_cmp(&busy(b))
            })
            .unwrap();
        let c = row.client.as_ref().unwrap();
        assert!(
            c.runtime_busy_ratio >= t.cpu_busy_share,
            "the engine's one thread was busy only {:.0}% of the time: {row:#?}",
            c.runtime_busy_ratio * 100.0
        );
        assert_eq!(verdict(row), Verdict::ClientCpu, "{row:#?}");
        let d = row.diagnosis.as_ref().unwrap();
        assert!(d.explanation.contains("CPU"), "{}", d.explanation);
        assert_eq!(d.figures[FigureName::ClientCores], Figure::Cores(1.0));
    });
}

#[test]
fn cold_requests_are_kept_apart_from_steady_ones() {
    let server = ServerThread::start("cold-bucket", LatencyProfile::Express);
    runtime(2).block_on(async {
        let client = seeded_client(&server, "cold-bucket", 60, 1000).await;
        // Without warm-up the first requests open the connections.
        let result = sweep(
            &client,
            r#"{"buckets": ["cold-bucket"], "object_count": 60, "workers": [4], "warmup": false, "pool_connections": 4}"#,
        )
        .await;
        let row = &result.results[0];
        let b = row.breakdown.as_ref().unwrap();
        assert!(row.connections_opened >= 1, "{row:#?}");
        assert_eq!(b.connections_opened, row.connections_opened, "{b:#?}");
        assert!(b.cold_requests >= 1 && b.cold_requests <= 4, "{b:#?}");
        assert_eq!(b.cold_requests + b.steady_requests, row.ok, "{b:#?}");
        assert_eq!(b.connect_ms.count, b.connections_opened);
        assert!(b.first_request_cold, "{b:#?}");
        assert!(b.steady_ttfb_ms.p50 > 0.0 && b.steady_body_ms.count == b.steady_requests);
        let d = row.diagnosis.as_ref().unwrap();
        assert!(d.notes.iter().any(|n| n.contains("cold request")), "{d:?}");

        // With warm-up every timed request finds an open connection.
        let warm = sweep(
            &client,
            r#"{"buckets": ["cold-bucket"], "object_count": 60, "workers": [4], "pool_connections": 4}"#,
        )
        .await;
        let b = warm.results[0].breakdown.as_ref().unwrap();
        assert_eq!(b.cold_requests, 0, "{b:#?}");
        assert_eq!(b.steady_requests, 60);
        assert!(!b.first_request_cold);
    });
}

#[test]
fn the_json_has_every_new_block_and_old_documents_still_parse() {
    let server = ServerThread::start("json-bucket", LatencyProfile::None);
    runtime(2).block_on(async {
        let client = seeded_client(&server, "json-bucket", 30, 100).await;
        let result = sweep(
            &client,
            r#"{"buckets": ["json-bucket"], "object_count": 30, "workers": [1, 4]}"#,
        )
        .await;
        let json = serde_json::to_value(&result).unwrap();
        assert_eq!(json["schema"], "s3sweep.result/v1");
        for row in json["results"].as_array().unwrap() {
            assert!(row["breakdown"]["steady_ttfb_ms"]["p50"].is_number(), "{row}");
            assert!(row["breakdown"]["steady_body_ms"]["p99"].is_number(), "{row}");
            assert!(row["client"]["mean_in_flight"].is_number(), "{row}");
            assert!(row["client"]["peak_rss_bytes"].as_u64().unwrap() > 0, "{row}");
            assert!(row["diagnosis"]["verdict"].is_string(), "{row}");
            assert!(row["diagnosis"]["explanation"].is_string(), "{row}");
        }
        let analysis = &json["analysis"];
        assert_eq!(analysis["buckets"][0]["bucket"], "json-bucket");
        assert!(analysis["buckets"][0]["recommended_workers"].is_number());
        assert!(analysis["thresholds"]["cpu_busy_share"].is_number());
        // The document reads back into itself. Not into `result`: writing rounds every
        // float to what it supports (`model::stats::tidy`), so a figure of more digits
        // (a mean of 13.144 ms written as 13.14) reads back rounded; which figures have
        // more digits depends on how fast the machine was.
        let back: SweepResult = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(serde_json::to_value(&back).unwrap(), json);
        // A document from before these fields still reads.
        let mut old = json;
        old.as_object_mut().unwrap().remove("analysis");
        for row in old["results"].as_array_mut().unwrap() {
            for k in ["breakdown", "client", "diagnosis"] {
                row.as_object_mut().unwrap().remove(k);
            }
        }
        let back: SweepResult = serde_json::from_value(old).unwrap();
        assert!(back.analysis.is_none() && back.results[0].diagnosis.is_none());
    });
}

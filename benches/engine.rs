//! The engine alone, for developers (`make bench-engine`; CI builds but never times it).
//!
//! Starts the embedded server in this process on its own runtime threads (named
//! `s3sweep-server`), seeds one bucket, sweeps it, and prints wall time and CPU per GET
//! split into client threads and server threads (from /proc/self/task), so a change
//! to the client's hot path shows up as a number. Repeatable under callgrind:
//! `valgrind --tool=callgrind target/release/deps/engine-* --objects 2000`.
//!
//! Flags: `--objects N` (default 20000), `--workers N` (default 64), `--size BYTES`
//! (default 46080), `--profile none|express|standard` (default none), `--reps N` (3).

// mimalloc: the SDK allocates a lot per request; glibc malloc cost ~15% of client CPU.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::sync::Arc;
use std::time::Duration;

use s3sweep::engine::{self, Quiet, SweepOptions};
use s3sweep::lab::{self, LatencyProfile, ServerConfig};
use s3sweep::plan::{KeyTemplate, Plan};
use s3sweep::s3::seed::{seed, SeedSpec};
use s3sweep::s3::RequestSettings;

/// CPU seconds of this process's threads, split by whether the thread name starts
/// with `s3sweep-server`.
fn thread_cpu() -> (f64, f64) {
    let ticks = 100.0; // USER_HZ on Linux
    let (mut server, mut client) = (0.0, 0.0);
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for task in tasks.flatten() {
            let path = task.path();
            let comm = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
            let Ok(stat) = std::fs::read_to_string(path.join("stat")) else {
                continue;
            };
            let Some(close) = stat.rfind(')') else { continue };
            let fields: Vec<&str> = stat[close + 2..].split_whitespace().collect();
            let t: f64 = fields.get(11).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0)
                + fields.get(12).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
            if comm.starts_with("s3sweep-server") {
                server += t / ticks;
            } else {
                client += t / ticks;
            }
        }
    }
    (client, server)
}

fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> T {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let objects: u32 = arg(&args, "--objects", 20_000);
    let workers: u32 = arg(&args, "--workers", 64);
    let size: u64 = arg(&args, "--size", 46_080);
    let reps: u32 = arg(&args, "--reps", 3);
    let profile: LatencyProfile = arg(&args, "--profile", LatencyProfile::None);

    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("s3sweep-server")
        .enable_all()
        .build()
        .unwrap();
    let running = server_rt
        .block_on(lab::start(ServerConfig {
            buckets: vec![("bench-bucket".into(), profile)],
            ..ServerConfig::default()
        }))
        .unwrap();
    let endpoint = running.endpoint();

    let client_rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    client_rt.block_on(async move {
        let client = s3sweep::sweep_client(s3sweep::lab::client_options(&endpoint)).await.unwrap();
        let s3 = client.s3(RequestSettings::maintenance(Duration::from_secs(30)));
        seed(
            &s3,
            Some(&endpoint),
            &SeedSpec {
                bucket: "bench-bucket".into(),
                keys: KeyTemplate::parse("test/{i}/vectors", objects).unwrap(),
                object_count: objects,
                object_size_bytes: size,
                size_cycle_bytes: Vec::new(),
                object_sizes_bytes: Vec::new(),
                concurrency: 64,
                skip_existing: false,
            },
        )
        .await
        .unwrap();
        let plan = Plan::from_json(&format!(
            r#"{{"buckets": ["bench-bucket"], "object_count": {objects}, "workers": [{workers}], "pool_connections": {workers}, "repetitions": {reps}}}"#
        ))
        .unwrap();
        let (c0, s0) = thread_cpu();
        let session = client.session(&plan);
        let result = engine::run(&session, &plan, &SweepOptions::default(), Arc::new(Quiet)).await;
        let (c1, s1) = thread_cpu();
        let gets = session.transport().counters().requests_sent as f64;
        for r in &result.results {
            println!(
                "workers {} rep {}: {:.0} ms, {:.0} objects/s, process CPU {:.3} ms/GET, ttfb p50 {:.3} ms, errors {}",
                r.workers, r.repetition, r.wall_ms, r.objects_per_s, r.cpu_ms_per_get, r.ttfb_ms.p50, r.errors.total
            );
        }
        println!(
            "thread CPU over {gets} GETs (warm-up included): client {:.3} ms/GET, server {:.3} ms/GET",
            (c1 - c0) * 1000.0 / gets,
            (s1 - s0) * 1000.0 / gets
        );
    });
    drop(running);
}

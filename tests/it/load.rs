//! Load: one configuration of many requests at many workers against the embedded
//! server in this process ends with exact counts, bounded memory and no
//! file-descriptor exhaustion. `make test` runs a reduced size (4,000 requests at 256
//! workers, a few seconds); `make load` runs the full size (100,000 requests at
//! 1,024 workers, release build): `S3SWEEP_LOAD_REQUESTS` / `S3SWEEP_LOAD_WORKERS`
//! override it.
//!
//! Memory and file descriptors are measured on the whole process, so each size runs
//! alone in a process of its own ([`common::isolated`]): the other tests of this binary
//! would otherwise count in both.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::lab::LatencyProfile;
use crate::common::{self, options, LabBuilder};
use bytes::Bytes;
use s3sweep::engine::{self, Quiet};
use s3sweep::plan::Plan;
use s3sweep::sys::limits;
use s3sweep::sys::usage;

const OBJECT_BYTES: usize = 512;

async fn load(requests: u32, workers: u32, max_rss_growth_mib: u64, limit: Duration) {
    // Both ends of every connection are in this process, and nothing else is.
    let fd_limits = limits::raise_nofile();
    if let Err(e) = limits::check_budget(&fd_limits, workers, 1, true) {
        panic!("{e}");
    }
    let server = LabBuilder::new()
        .bucket("load-bucket", LatencyProfile::None)
        .server()
        .await;
    let body = Bytes::from(vec![7u8; OBJECT_BYTES]);
    for i in 0..requests {
        server.store().insert("load-bucket", &format!("load/{i}"), body.clone());
    }
    let client = s3sweep::sweep_client(crate::common::lab::client_options(server.endpoint()))
        .await
        .unwrap();
    let plan = Plan::from_json(&format!(
        r#"{{"buckets": ["load-bucket"], "key_template": "load/{{i}}", "object_count": {requests},
            "workers": [{workers}], "pool_connections": {workers}, "warmup": false}}"#
    ))
    .unwrap();
    let rss_before = current_rss_bytes();
    let rss_peak = Arc::new(AtomicU64::new(rss_before));
    let fds_before = limits::open_fds().unwrap_or(0);
    let fds_peak = Arc::new(AtomicU64::new(fds_before));
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (fds_peak, rss_peak, done) = (fds_peak.clone(), rss_peak.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                if let Some(n) = limits::open_fds() {
                    fds_peak.fetch_max(n, Ordering::Relaxed);
                }
                rss_peak.fetch_max(current_rss_bytes(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let started = Instant::now();
    let options = options();
    let session = client.session(&plan);
    let result = tokio::time::timeout(limit, engine::run(&session, &plan, &options, Arc::new(Quiet)))
        .await
        .unwrap_or_else(|_| panic!("{requests} requests at {workers} workers not done within {limit:?}"));
    let took = started.elapsed();
    done.store(true, Ordering::Relaxed);
    watcher.join().unwrap();
    let row = &result.results[0];
    let rss_after = usage::peak_rss_bytes();
    let growth_mib = rss_peak.load(Ordering::Relaxed).saturating_sub(rss_before) >> 20;
    let fds_max = fds_peak.load(Ordering::Relaxed);
    eprintln!(
        "load: {requests} requests at {workers} workers in {} ms ({:.0} objects/s); ok {} errors {}; \
         connections opened {}; process peak RSS {} MiB (RSS grew {} MiB during the sweep, sampled every 20 ms); open fds peak {} (soft limit {}, raised from {:?})",
        took.as_millis(),
        row.objects_per_s,
        row.ok,
        row.errors.total,
        row.connections_opened,
        rss_after >> 20,
        growth_mib,
        fds_max,
        fd_limits.soft,
        fd_limits.raised_from
    );
    assert_eq!(row.requests, u64::from(requests));
    assert_eq!(row.ok, u64::from(requests), "{row:?}");
    assert_eq!(row.errors.total, 0, "{:?}", row.error_samples);
    assert_eq!(row.bytes, u64::from(requests) * OBJECT_BYTES as u64);
    assert_eq!(row.retries, 0);
    assert_eq!(session.transport().counters().requests_sent, u64::from(requests));
    assert_eq!(
        server.faults().tally().get_requests,
        u64::from(requests),
        "every GET reached the server once"
    );
    assert_eq!(row.ttlb_ms.count, u64::from(requests));
    // The pool caps connections open at once, not connections ever opened: one that
    // the server or the kernel drops mid-run is replaced. A handful of replacements is
    // normal under load; a leak (a new connection per request) is not.
    assert!(row.connections_opened <= u64::from(workers) + 8, "{row:?}");
    assert!(
        client.transport().connections_open() <= i64::from(workers),
        "open connections over the cap"
    );
    assert!(
        fds_max < fd_limits.soft,
        "{fds_max} fds open, soft limit {}",
        fd_limits.soft
    );
    assert!(
        growth_mib <= max_rss_growth_mib,
        "peak RSS grew {growth_mib} MiB during the sweep (bound {max_rss_growth_mib} MiB)"
    );
}

/// Resident memory now, from /proc/self/statm (0 where unavailable).
fn current_rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    pages * page.max(4096) as u64
}

#[test]
fn load_reduced() {
    if !common::isolated("load::load_reduced", Duration::from_secs(300)) {
        return;
    }
    runtime(Some(2)).block_on(load(4_000, 256, 256, Duration::from_secs(120)));
}

fn env_u32(name: &str, default: u32) -> u32 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[test]
#[ignore = "full size: run with `make load`"]
fn load_full() {
    if !common::isolated("load::load_full", Duration::from_secs(900)) {
        return;
    }
    let requests = env_u32("S3SWEEP_LOAD_REQUESTS", 100_000);
    let workers = env_u32("S3SWEEP_LOAD_WORKERS", 1024);
    runtime(None).block_on(load(requests, workers, 1024, Duration::from_secs(600)));
}

/// A multi-thread runtime of `threads` workers (`None`: one per core).
fn runtime(threads: Option<usize>) -> tokio::runtime::Runtime {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = threads {
        builder.worker_threads(n);
    }
    builder.enable_all().build().unwrap()
}

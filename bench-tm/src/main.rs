//! The transfer manager's reference of `make bench MODE=clients` (bench-py/clients.py):
//! aws-sdk-s3-transfer-manager reading the bench's objects, measured as
//! examples/bare_sdk.rs measures the bare SDK: one client per in-flight count, one
//! untimed warm-up round (its connections open), then this process's CPU time
//! (getrusage, every thread: the transfer manager's own worker threads too) and wall
//! time over the timed round.
//!
//! `--mode download`: one `download()` per object, `--workers` of them in flight
//! (`buffer_unordered`), each body drained chunk by chunk and dropped, then `join()`.
//! `--mode objects`: one `download_objects()` over the keys' prefix (the part of
//! `--key-template` before `{i}`) with `max_concurrent_downloads` = workers: it lists
//! the prefix (ListObjectsV2) and writes every object to a file under a fresh
//! directory of the temp dir, which is removed after the round, untimed. So its CPU
//! per GET includes the listing and the files' writes, as a user of it pays them.
//! Either way the transfer manager's concurrency is `ConcurrencyMode::Explicit(workers)`.
//!
//! `--http managed` (the default): the transfer manager's own HTTP client (its runtime's
//! per-thread pools, rustls on AWS-LC). It takes no CA: over HTTPS it trusts the
//! platform's roots, so the bench names its CA in `SSL_CERT_FILE`.
//! `--http sdk`: the client handed an HTTP client of our own, the SDK's
//! (aws-smithy-http-client, rustls on AWS-LC, trusting only `--ca-file`), through the
//! documented `S3ClientConfig::enable_runtime_http(false)`.
//!
//! Prints one JSON document on stdout, shaped like bare_sdk's: `{"client": ...,
//! "results": [{workers, wall_ms, ok, errors, errors_by_kind, bytes, cpu_ms,
//! cpu_ms_per_get}, ...]}`; errors by kind are the transfer manager's error code (S3's
//! code when S3 sent one) or kind.

use std::collections::BTreeMap;
use std::time::Instant;

use aws_sdk_s3::config::retry::RetryConfig;
use aws_sdk_s3::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_s3_transfer_manager::types::{ConcurrencyMode, FailedTransferPolicy};
use aws_sdk_s3_transfer_manager::{Client, Config, S3ClientConfig};
use aws_smithy_http_client::tls::{self, rustls_provider::CryptoMode, TlsContext, TrustStore};
use futures_util::StreamExt;

struct Args {
    endpoint: String,
    bucket: String,
    objects: u32,
    workers: Vec<usize>,
    ca_file: Option<String>,
    key_template: String,
    /// `download` (per object) or `objects` (download_objects over the prefix).
    mode: String,
    /// `managed` (the transfer manager's own HTTP client) or `sdk` (ours handed to it).
    http: String,
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        endpoint: String::new(),
        bucket: String::new(),
        objects: 1000,
        workers: vec![16, 64, 256],
        ca_file: None,
        key_template: "test/{i}/vectors".into(),
        mode: "download".into(),
        http: "managed".into(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--endpoint" => args.endpoint = value()?,
            "--bucket" => args.bucket = value()?,
            "--objects" => args.objects = value()?.parse().map_err(|e| format!("--objects: {e}"))?,
            "--workers" => {
                args.workers = value()?
                    .split(',')
                    .map(|w| match w.parse() {
                        Ok(n) if n > 0 => Ok(n),
                        _ => Err(format!("--workers: {w:?} is not a whole number above 0")),
                    })
                    .collect::<Result<_, _>>()?
            }
            "--ca-file" => args.ca_file = Some(value()?),
            "--key-template" => args.key_template = value()?,
            "--mode" => match value()?.as_str() {
                m @ ("download" | "objects") => args.mode = m.into(),
                other => return Err(format!("--mode: {other:?} is not download or objects")),
            },
            "--http" => match value()?.as_str() {
                h @ ("managed" | "sdk") => args.http = h.into(),
                other => return Err(format!("--http: {other:?} is not managed or sdk")),
            },
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if args.endpoint.is_empty() || args.bucket.is_empty() {
        return Err("--endpoint and --bucket are required".into());
    }
    if args.mode == "objects" && !args.key_template.contains("{i}") {
        return Err("--mode objects needs {i} in --key-template (the prefix is what precedes it)".into());
    }
    Ok(args)
}

fn cpu_seconds() -> f64 {
    // SAFETY: getrusage writes into the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    s(usage.ru_utime) + s(usage.ru_stime)
}

/// The transfer manager for `workers` in flight, on the HTTP client `--http` names.
fn transfer_manager(args: &Args, workers: usize) -> Result<Client, String> {
    let mut s3 = aws_sdk_s3::config::Builder::new()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("s3sweep", "s3sweep-local-secret", None, None, "bench"))
        .endpoint_url(&args.endpoint)
        .force_path_style(true)
        .retry_config(RetryConfig::standard().with_max_attempts(1));
    let s3 = if args.http == "sdk" {
        let mut trust = TrustStore::empty().with_native_roots(false);
        if let Some(path) = &args.ca_file {
            trust = trust.with_pem_certificate(std::fs::read(path).map_err(|e| format!("{path}: {e}"))?);
        }
        let context = TlsContext::builder()
            .with_trust_store(trust)
            .build()
            .map_err(|e| e.to_string())?;
        s3 = s3.http_client(
            aws_smithy_http_client::Builder::new()
                .tls_provider(tls::Provider::Rustls(CryptoMode::AwsLc))
                .tls_context(context)
                .build_https(),
        );
        S3ClientConfig::new(s3).enable_runtime_http(false)
    } else {
        S3ClientConfig::new(s3)
    };
    let config = Config::builder()
        .s3_config(s3)
        .concurrency(ConcurrencyMode::Explicit(workers))
        .build();
    Ok(Client::new(config))
}

/// A failure's kind: S3's error code when it sent one, else the transfer manager's kind.
fn kind(err: &aws_sdk_s3_transfer_manager::error::Error) -> String {
    static SHOWN: std::sync::Once = std::sync::Once::new();
    SHOWN.call_once(|| eprintln!("tm-ref: first error: {err:?}"));
    err.code().map_or_else(|| format!("{:?}", err.kind()), str::to_string)
}

/// One object through `download()`: its bytes, or the failure's kind.
async fn download(tm: &Client, bucket: &str, key: String) -> Result<u64, String> {
    let mut handle = tm.download().bucket(bucket).key(key).initiate().map_err(|e| kind(&e))?;
    let mut n = 0;
    while let Some(chunk) = handle.body_mut().next().await {
        match chunk {
            Ok(chunk) => n += chunk.data.len() as u64,
            // join() carries the failure with its source (S3's code).
            Err(_) => break,
        }
    }
    handle.join().await.map_err(|e| kind(&e))?;
    Ok(n)
}

/// GETs that worked, failures by kind, bytes.
type Tally = (u64, BTreeMap<String, u64>, u64);

async fn per_object(tm: &Client, args: &Args, keys: &[String], workers: usize) -> Tally {
    let results: Vec<Result<u64, String>> = futures_util::stream::iter(keys.iter().cloned())
        .map(|key| download(tm, &args.bucket, key))
        .buffer_unordered(workers)
        .collect()
        .await;
    let mut tally: Tally = (0, BTreeMap::new(), 0);
    for r in results {
        match r {
            Ok(n) => (tally.0, tally.2) = (tally.0 + 1, tally.2 + n),
            Err(kind) => *tally.1.entry(kind).or_default() += 1,
        }
    }
    tally
}

/// `download_objects()` over the keys' prefix into `dest`.
async fn prefix(tm: &Client, args: &Args, workers: usize, dest: &std::path::Path) -> Tally {
    let prefix = args.key_template.split("{i}").next().unwrap_or_default();
    let mut failures = BTreeMap::new();
    let handle = tm
        .download_objects()
        .bucket(&args.bucket)
        .key_prefix(prefix)
        .destination(dest)
        .max_concurrent_downloads(workers)
        .failure_policy(FailedTransferPolicy::Continue)
        .initiate();
    let output = match handle {
        Ok(handle) => handle.join().await,
        Err(e) => Err(e),
    };
    match output {
        Ok(out) => {
            for failed in out.failed_transfers() {
                *failures.entry(kind(failed.error())).or_default() += 1;
            }
            (out.objects_downloaded(), failures, out.metrics().network_rx)
        }
        Err(e) => {
            failures.insert(kind(&e), 1);
            (0, failures, 0)
        }
    }
}

#[tokio::main]
async fn main() {
    let args = parse().unwrap_or_else(|e| {
        eprintln!("tm-ref: {e}");
        std::process::exit(2)
    });
    let doc = tokio::spawn(bench(args)).await.expect("the bench task does not panic");
    println!("{doc}");
}

async fn bench(args: Args) -> serde_json::Value {
    let keys: Vec<String> = (0..args.objects)
        .map(|i| args.key_template.replace("{i}", &i.to_string()))
        .collect();
    let mut results = Vec::new();
    for &workers in &args.workers {
        let tm = transfer_manager(&args, workers).unwrap_or_else(|e| {
            eprintln!("tm-ref: {e}");
            std::process::exit(2)
        });
        per_object(&tm, &args, &keys[..workers.min(keys.len())], workers).await;
        let dest = std::env::temp_dir().join(format!("tm-ref-{}-{workers}", std::process::id()));
        if args.mode == "objects" {
            // download_objects writes under the destination; it does not create it.
            std::fs::create_dir_all(&dest).unwrap_or_else(|e| {
                eprintln!("tm-ref: {}: {e}", dest.display());
                std::process::exit(2)
            });
        }
        let cpu0 = cpu_seconds();
        let t0 = Instant::now();
        let (ok, errors, bytes) = match args.mode.as_str() {
            "objects" => prefix(&tm, &args, workers, &dest).await,
            _ => per_object(&tm, &args, &keys, workers).await,
        };
        let wall = t0.elapsed().as_secs_f64();
        let cpu_ms = (cpu_seconds() - cpu0) * 1000.0;
        let _ = std::fs::remove_dir_all(&dest);
        let failed: u64 = errors.values().sum();
        let gets = ok + failed;
        eprintln!(
            "  tm ({}, {}) workers {workers}: {:.0} ms, {:.4} ms CPU/GET, {ok} ok, {failed} failed",
            args.mode,
            args.http,
            wall * 1000.0,
            cpu_ms / gets.max(1) as f64
        );
        results.push(serde_json::json!({
            "workers": workers,
            "wall_ms": (wall * 1e6).round() / 1e3,
            "ok": ok,
            "errors": failed,
            "errors_by_kind": errors,
            "bytes": bytes,
            "cpu_ms": (cpu_ms * 1e3).round() / 1e3,
            "cpu_ms_per_get": (cpu_ms / gets.max(1) as f64 * 1e4).round() / 1e4,
        }));
    }
    serde_json::json!({
        "client": format!("aws-sdk-s3-transfer-manager 0.3.1, {}, HTTP {}", if args.mode == "objects" { "download_objects" } else { "download per object" }, args.http),
        "results": results,
    })
}

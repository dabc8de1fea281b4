//! The bare-SDK baseline of `make bench`: aws-sdk-s3 reading the same keys as `s3sweep
//! run`, with nothing recorded. GETs in a `buffer_unordered` loop, bodies read to the
//! end and dropped, one untimed warm-up round (so connections are open, as in s3sweep's
//! warm-up), then CPU time of this process (getrusage) and wall time over the timed
//! round. The HTTP client is chosen with `--transport`:
//! - `smithy`: the SDK's default HTTPS client (aws-smithy-http-client: hyper-util's pool,
//!   rustls with ring), as a user's program would have it;
//! - `smithy-pool`: aws-smithy-http-client 1.5's own connection pool, with a per-host cap;
//! - `s3sweep`: s3sweep's transport ([`s3sweep::transport::Transport`]), so the bench can
//!   tell the transport's cost from the rest of s3sweep's machinery.
//!
//! Prints one JSON document on stdout, shaped like `bench-py/boto3_baseline.py`'s:
//! `{"client": ..., "results": [{workers, wall_ms, ok, errors, bytes, cpu_ms,
//! cpu_ms_per_get}, ...]}`.
//!
//! `--transport s3sweep-client` runs the loop on s3sweep's own SDK client (its
//! configuration, endpoint cache, S3 Express sessions and timeouts), and `--tasks N`
//! splits the GETs over N tasks, each a `buffer_unordered` loop of its share of the
//! workers taking the next key from a shared counter (s3sweep's driver tasks);
//! `--task-per-worker` is `--tasks` equal to the workers (s3sweep's engine before
//! issue 17): the pieces docs/performance.md took apart. `--threads N` splits them over N
//! threads instead, each a single-threaded runtime with its own client and pool
//! (s3sweep's lanes, issue 39), `--shared-client` with one client for all.
//!
//! `--client lean` runs the same loop on s3sweep's lean signed GET (issue 25) instead of
//! the SDK: `make bench MODE=clients` (bench-py/clients.py) puts the two side by side. The
//! lean client ([`s3sweep::s3::LeanClient`]) is built as s3sweep builds it: from its SDK
//! client's options (same transport, pool sized to the workers, the retries and timeouts
//! of a default request), whatever `--transport` says.
//!
//! `cargo run --release --example bare_sdk -- --endpoint URL --bucket B --objects 1000
//! --workers 1,16,64,256 [--ca-file CA.pem] [--transport smithy|smithy-pool|s3sweep|s3sweep-client]
//! [--tasks N | --task-per-worker | --threads N [--shared-client]] [--client sdk|lean]`

use std::time::Instant;

use aws_sdk_s3::config::retry::RetryConfig;
use aws_sdk_s3::config::{BehaviorVersion, Credentials, Region};
use aws_smithy_http_client::tls::{self, rustls_provider::CryptoMode, TlsContext, TrustStore};
use aws_smithy_runtime_api::client::http::SharedHttpClient;
use futures_util::StreamExt;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Clone)]
struct Args {
    /// `--threads N`: threads with a runtime and client each (s3sweep's lanes).
    threads: usize,
    /// `--shared-client`: the threads share one client and pool.
    shared_client: bool,
    endpoint: String,
    bucket: String,
    objects: u32,
    workers: Vec<usize>,
    ca_file: Option<String>,
    transport: String,
    key_template: String,
    /// Tasks the GETs are split over; `None`: one per worker.
    tasks: Option<usize>,
    /// `sdk` (aws-sdk-s3) or `lean` (s3sweep's lean signed GET).
    client: String,
}

/// What the loop reads with: the SDK's GetObject or the lean signed GET.
#[derive(Clone)]
enum Reader {
    Sdk(aws_sdk_s3::Client),
    Lean(s3sweep::s3::LeanClient),
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        endpoint: String::new(),
        bucket: String::new(),
        objects: 1000,
        workers: vec![1, 16, 64, 256],
        ca_file: None,
        transport: "smithy".into(),
        key_template: "test/{i}/vectors".into(),
        tasks: Some(1),
        threads: 1,
        shared_client: false,
        client: "sdk".into(),
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
                    .map(|w| w.parse().map_err(|e| format!("--workers: {e}")))
                    .collect::<Result<_, _>>()?
            }
            "--ca-file" => args.ca_file = Some(value()?),
            "--transport" => args.transport = value()?,
            "--key-template" => args.key_template = value()?,
            "--task-per-worker" => args.tasks = None,
            "--client" => match value()?.as_str() {
                c @ ("sdk" | "lean") => args.client = c.into(),
                other => return Err(format!("--client: {other:?} is not sdk or lean")),
            },
            "--shared-client" => args.shared_client = true,
            "--threads" => match value()?.parse() {
                Ok(n) if n > 0 => args.threads = n,
                _ => return Err("--threads: a whole number above 0".into()),
            },
            "--tasks" => match value()?.parse() {
                Ok(n) if n > 0 => args.tasks = Some(n),
                _ => return Err("--tasks: a whole number above 0".into()),
            },
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if args.threads > 1 && args.client == "lean" {
        return Err("--threads runs the SDK's client only, not --client lean".into());
    }
    if args.endpoint.is_empty() || args.bucket.is_empty() {
        return Err("--endpoint and --bucket are required".into());
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

fn http_client(args: &Args, pool_cap: usize) -> Result<SharedHttpClient, String> {
    let mut trust = TrustStore::empty().with_native_roots(false);
    if let Some(path) = &args.ca_file {
        let pem = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
        trust = trust.with_pem_certificate(pem);
    }
    let context = || {
        TlsContext::builder()
            .with_trust_store(trust.clone())
            .build()
            .map_err(|e| e.to_string())
    };
    let provider = tls::Provider::Rustls(CryptoMode::Ring);
    Ok(match args.transport.as_str() {
        "smithy" => aws_smithy_http_client::Builder::new()
            .tls_provider(provider)
            .tls_context(context()?)
            .build_https(),
        "smithy-pool" => {
            let pool = aws_smithy_http_client::pool::ConnectionPool::builder()
                .max_connections_per_host(pool_cap)
                .tcp_nodelay(true)
                .tls_provider(provider)
                .tls_context(context()?)
                .build_https()
                .map_err(|e| e.to_string())?;
            SharedHttpClient::new(aws_smithy_http_client::pool::Client::new(&pool).map_err(|e| e.to_string())?)
        }
        "s3sweep" | "s3sweep-client" => {
            let settings = s3sweep::transport::TransportSettings {
                pool_connections: pool_cap,
                ..Default::default()
            };
            s3sweep::transport::Transport::with_ca_file(settings, args.ca_file.as_deref().map(std::path::Path::new))
                .map_err(|e| e.to_string())?
                .http_client()
        }
        other => return Err(format!("--transport: {other:?} is not smithy, smithy-pool or s3sweep")),
    })
}

/// s3sweep's own SDK client (its configuration, timeouts, endpoint cache and S3 Express
/// sessions) with the settings of a default request, on its transport.
async fn s3sweep_reader(args: &Args, workers: usize) -> aws_sdk_s3::Client {
    s3sweep_session(args, workers).await.sdk(0).clone()
}

/// s3sweep's lean signed GET client, built from the same client and settings.
async fn lean_reader(args: &Args, workers: usize) -> Reader {
    match s3sweep_session(args, workers)
        .await
        .reader(0, s3sweep::model::Client::Lean)
    {
        s3sweep::s3::get::Reader::Lean(lean) => Reader::Lean(lean),
        s3sweep::s3::get::Reader::Sdk(s3) => Reader::Sdk(s3),
    }
}

/// A session of s3sweep's client with one lane sized for `workers`, and the request
/// settings of a default plan.
async fn s3sweep_session(args: &Args, workers: usize) -> s3sweep::s3::SweepSession {
    use s3sweep::s3::{ClientOptions, CredentialSource, StaticCredentials};
    let credentials = CredentialSource::Static(StaticCredentials {
        access_key_id: "s3sweep".into(),
        secret_access_key: "s3sweep-local-secret".into(),
        provider_name: "bench",
    });
    let options = ClientOptions::for_endpoint(Some(args.endpoint.clone()), None, credentials)
        .with_ca_file(args.ca_file.clone().map(Into::into));
    let client = s3sweep::sweep_client(options).await.expect("s3sweep's client builds");
    let plan = s3sweep::plan::Plan::from_json(&format!(
        r#"{{"buckets": ["{}"], "object_count": {}, "workers": [{workers}], "pool_connections": {workers}}}"#,
        args.bucket, args.objects
    ))
    .expect("a valid plan");
    let settings = s3sweep::s3::request_settings(&plan);
    // One lane: the bench's loop runs on its own runtime, through lane 0.
    client.session_with(
        s3sweep::transport::TransportSettings {
            pool_connections: workers,
            connect_timeout: plan.connect_timeout(),
            tcp_keepalive: None,
            ..Default::default()
        },
        settings,
    )
}

async fn get(reader: &Reader, bucket: &str, key: String) -> Option<u64> {
    let s3 = match reader {
        Reader::Sdk(s3) => s3,
        Reader::Lean(lean) => {
            return match lean.get(bucket, &key).await {
                Ok(n) => Some(n),
                Err(failure) => {
                    static SHOWN: std::sync::Once = std::sync::Once::new();
                    SHOWN.call_once(|| eprintln!("bare_sdk: first error: {}", failure.message));
                    None
                }
            };
        }
    };
    let output = match s3.get_object().bucket(bucket).key(key).send().await {
        Ok(output) => output,
        Err(err) => {
            static SHOWN: std::sync::Once = std::sync::Once::new();
            SHOWN.call_once(|| {
                eprintln!(
                    "bare_sdk: first error: {}",
                    aws_smithy_types::error::display::DisplayErrorContext(&err)
                )
            });
            return None;
        }
    };
    let mut body = output.body;
    let mut n = 0u64;
    while let Some(chunk) = body.next().await {
        n += chunk.ok()?.len() as u64;
    }
    Some(n)
}

async fn round(s3: &Reader, args: &Args, keys: &[String], workers: usize) -> (u64, u64, u64) {
    let tasks = args.tasks.unwrap_or(workers).clamp(1, workers.min(keys.len()).max(1));
    if tasks == 1 {
        let sizes: Vec<Option<u64>> = futures_util::stream::iter(keys.iter().cloned())
            .map(|key| get(s3, &args.bucket, key))
            .buffer_unordered(workers)
            .collect()
            .await;
        return tally(&sizes);
    }
    // Several tasks, each keeping its share of the workers in flight and taking the
    // next key from a shared counter, as s3sweep's driver tasks do (one per worker:
    // the engine before issue 17, docs/performance.md).
    let keys: std::sync::Arc<Vec<String>> = std::sync::Arc::new(keys.to_vec());
    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut set = tokio::task::JoinSet::new();
    for t in 0..tasks {
        let share = s3sweep::transport::share(workers, tasks, t);
        let (s3, keys, next, bucket) = (s3.clone(), keys.clone(), next.clone(), args.bucket.clone());
        set.spawn(async move {
            let positions = futures_util::stream::iter(std::iter::from_fn(|| {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                keys.get(i).cloned()
            }));
            let sizes: Vec<Option<u64>> = positions
                .map(|key| get(&s3, &bucket, key))
                .buffer_unordered(share.max(1))
                .collect()
                .await;
            tally(&sizes)
        });
    }
    let mut total = (0, 0, 0);
    while let Some(Ok((a, b, c))) = set.join_next().await {
        total = (total.0 + a, total.1 + b, total.2 + c);
    }
    total
}

/// GETs that succeeded, failed, and the bytes read, from each GET's body size.
fn tally(sizes: &[Option<u64>]) -> (u64, u64, u64) {
    let ok = sizes.iter().flatten().count() as u64;
    (ok, sizes.len() as u64 - ok, sizes.iter().flatten().sum())
}

#[tokio::main]
async fn main() {
    let args = parse().unwrap_or_else(|e| {
        eprintln!("bare_sdk: {e}");
        std::process::exit(2)
    });
    // On a runtime worker thread, as a program's tasks would be (and as s3sweep's
    // workers are), not on the thread that blocks on `main`.
    let doc = tokio::spawn(bench(args)).await.expect("the bench task does not panic");
    println!("{doc}");
}

async fn bench(args: Args) -> serde_json::Value {
    let keys: Vec<String> = (0..args.objects)
        .map(|i| args.key_template.replace("{i}", &i.to_string()))
        .collect();
    let mut results = Vec::new();
    for &workers in &args.workers {
        // A client (and pool) per worker count, as s3sweep sizes its pool per sweep.
        if args.threads > 1 {
            let (args, keys) = (args.clone(), keys.clone());
            let row = tokio::task::spawn_blocking(move || threaded(&args, &keys, workers)).await;
            results.push(row.expect("the threads' bench does not panic"));
            continue;
        }
        let s3 = if args.client == "lean" {
            lean_reader(&args, workers).await
        } else if args.transport == "s3sweep-client" {
            Reader::Sdk(s3sweep_reader(&args, workers).await)
        } else {
            Reader::Sdk(sdk_client(&args, workers))
        };
        round(&s3, &args, &keys[..workers.min(keys.len())], workers).await;
        let cpu0 = cpu_seconds();
        let t0 = Instant::now();
        let (ok, errors, bytes) = round(&s3, &args, &keys, workers).await;
        let wall = t0.elapsed().as_secs_f64();
        let cpu_ms = (cpu_seconds() - cpu0) * 1000.0;
        eprintln!(
            "  {} ({}) {} workers {workers}: {:.0} ms, {:.4} ms CPU/GET",
            if args.client == "lean" { "lean" } else { "bare sdk" },
            args.transport,
            args.bucket,
            wall * 1000.0,
            cpu_ms / keys.len() as f64
        );
        results.push(row(workers, (ok, errors, bytes), wall, cpu_ms, keys.len()));
    }
    let client = match args.client.as_str() {
        "lean" => "s3sweep lean signed GET".to_string(),
        _ => format!("aws-sdk-s3 bare, transport {}", args.transport),
    };
    serde_json::json!({"client": client, "results": results})
}

/// One worker count's result: GETs that worked and failed, bytes, wall seconds, CPU ms.
fn row(workers: usize, (ok, errors, bytes): (u64, u64, u64), wall: f64, cpu_ms: f64, gets: usize) -> serde_json::Value {
    serde_json::json!({
        "workers": workers,
        "repetition": 1,
        "wall_ms": (wall * 1e6).round() / 1e3,
        "ok": ok,
        "errors": errors,
        "bytes": bytes,
        "cpu_ms": (cpu_ms * 1e3).round() / 1e3,
        "cpu_ms_per_get": (cpu_ms / gets as f64 * 1e4).round() / 1e4,
    })
}

/// The SDK's client on `--transport`, its pool sized for `workers`.
fn sdk_client(args: &Args, workers: usize) -> aws_sdk_s3::Client {
    let http = http_client(args, workers).unwrap_or_else(|e| {
        eprintln!("bare_sdk: {e}");
        std::process::exit(2)
    });
    let config = aws_sdk_s3::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("s3sweep", "s3sweep-local-secret", None, None, "bench"))
        .endpoint_url(&args.endpoint)
        .force_path_style(true)
        .retry_config(RetryConfig::standard().with_max_attempts(1))
        .http_client(http)
        .build();
    aws_sdk_s3::Client::from_conf(config)
}

/// `--threads N`: the GETs split over N threads, each a single-threaded runtime with its
/// own SDK client and pool (its share of the workers), taking the next key from a shared
/// counter: s3sweep's lanes. Each thread warms its share of connections first; the
/// timed round starts when all have. `--shared-client` gives the threads one client and
/// pool (built on the first thread), so a connection's task runs on whichever thread
/// opened it.
fn threaded(args: &Args, keys: &[String], workers: usize) -> serde_json::Value {
    use std::sync::{Arc, Mutex, OnceLock};
    let n = args.threads;
    let keys = Arc::new(keys.to_vec());
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let warmed = Arc::new(tokio::sync::Barrier::new(n));
    let start = Arc::new(Mutex::new((0.0, Instant::now())));
    let shared = Arc::new(OnceLock::new());
    let threads: Vec<_> = (0..n)
        .map(|t| {
            let share = s3sweep::transport::share(workers, n, t);
            let (args, keys, next) = (args.clone(), keys.clone(), next.clone());
            let (warmed, start, shared) = (warmed.clone(), start.clone(), shared.clone());
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a runtime builds");
                runtime.block_on(async move {
                    let s3 = Reader::Sdk(match args.shared_client {
                        true => shared.get_or_init(|| sdk_client(&args, workers)).clone(),
                        false => sdk_client(&args, share),
                    });
                    let warm = keys[..share.min(keys.len())].iter().cloned();
                    let _: Vec<_> = futures_util::stream::iter(warm)
                        .map(|key| get(&s3, &args.bucket, key))
                        .buffer_unordered(share.max(1))
                        .collect()
                        .await;
                    if warmed.wait().await.is_leader() {
                        *start.lock().unwrap() = (cpu_seconds(), Instant::now());
                    }
                    let positions = futures_util::stream::iter(std::iter::from_fn(|| {
                        keys.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
                            .cloned()
                    }));
                    let sizes: Vec<Option<u64>> = positions
                        .map(|key| get(&s3, &args.bucket, key))
                        .buffer_unordered(share.max(1))
                        .collect()
                        .await;
                    // Every thread's runtime stays up until all are done: with one
                    // client, the others' connections may be polled here.
                    warmed.wait().await;
                    tally(&sizes)
                })
            })
        })
        .collect();
    let mut total = (0, 0, 0);
    for thread in threads {
        let (ok, errors, bytes) = thread.join().expect("a bench thread does not panic");
        total = (total.0 + ok, total.1 + errors, total.2 + bytes);
    }
    let (cpu0, t0) = *start.lock().unwrap();
    row(
        workers,
        total,
        t0.elapsed().as_secs_f64(),
        (cpu_seconds() - cpu0) * 1000.0,
        keys.len(),
    )
}

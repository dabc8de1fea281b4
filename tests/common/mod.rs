//! Helpers the integration tests share: the embedded server on 127.0.0.1:0, seeding a
//! bucket through the SDK, the sweep options every test uses, and the `s3sweep` binary
//! (`serve` as a child process, commands bounded in time). Each test file that needs
//! them says `mod common;`; each uses only some, hence the `dead_code` allowance.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Lines};
use std::process::{Child, ChildStdout, Command, Output};
use std::time::{Duration, Instant};

use s3sweep::engine::SweepOptions;

pub mod lambda_api;
pub mod runtime;
use s3sweep::lab::{self, LatencyProfile, RunningServer, ServerConfig};
use s3sweep::plan::KeyTemplate;
use s3sweep::s3::seed::{seed, SeedManifest, SeedSpec};
use s3sweep::s3::{RequestSettings, SweepClient};

/// The embedded server with these buckets, each behind its latency profile.
pub async fn server_with(buckets: &[(&str, LatencyProfile)]) -> RunningServer {
    lab::start(ServerConfig {
        buckets: buckets.iter().map(|(b, p)| (b.to_string(), *p)).collect(),
        ..ServerConfig::default()
    })
    .await
    .expect("server starts on 127.0.0.1:0")
}

/// The embedded server over HTTPS (a CA of its own, written to a file under the
/// temporary folder) with these buckets and S3 Express sessions of `session_ttl`.
pub async fn tls_server_with(buckets: &[(&str, LatencyProfile)], session_ttl: Duration) -> RunningServer {
    lab::start(ServerConfig {
        buckets: buckets.iter().map(|(b, p)| (b.to_string(), *p)).collect(),
        tls: Some(lab::TlsOptions::default()),
        session_ttl,
        ..ServerConfig::default()
    })
    .await
    .expect("server starts on 127.0.0.1:0 with HTTPS")
}

/// A client of `server` (its CA trusted when it serves HTTPS).
pub async fn client_of(server: &RunningServer) -> SweepClient {
    SweepClient::new(lab::client_options_for(server))
        .await
        .expect("the client builds")
}

/// What a test seeds with: `count` objects of `size_bytes` under `template`,
/// 16 at a time, keys that exist already left alone.
pub fn seed_spec(bucket: &str, template: &str, count: u32, size_bytes: u64) -> SeedSpec {
    SeedSpec {
        bucket: bucket.into(),
        keys: KeyTemplate::parse(template, count).unwrap(),
        object_count: count,
        object_size_bytes: size_bytes,
        concurrency: 16,
        skip_existing: true,
    }
}

/// Request settings for seeding and cleaning: one attempt, generous timeouts.
pub fn seed_settings() -> RequestSettings {
    RequestSettings {
        max_attempts: 1,
        first_byte_timeout: Duration::from_secs(5),
        attempt_timeout: Duration::from_secs(10),
    }
}

/// Seeds `spec` through `client` with [`seed_settings`].
pub async fn seed_with(client: &SweepClient, spec: &SeedSpec) -> SeedManifest {
    let s3 = client.s3(seed_settings());
    seed(&s3, client.endpoint(), spec).await.expect("seeding works")
}

/// Seeds `count` fresh objects `test/{i}/vectors` of `size_bytes` and checks all were written.
pub async fn seed_bucket(client: &SweepClient, bucket: &str, count: u32, size_bytes: u64) {
    let manifest = seed_with(client, &seed_spec(bucket, "test/{i}/vectors", count, size_bytes)).await;
    assert_eq!(manifest.written.len() as u32, count);
}

/// Sweep options for tests: the default engine, runner `local` (the default).
pub fn options() -> SweepOptions {
    SweepOptions::default()
}

/// The `s3sweep` binary cargo built for these tests.
pub const BIN: &str = env!("CARGO_BIN_EXE_s3sweep");

/// A `s3sweep serve` child process; killed when dropped.
pub struct Serve {
    pub child: Child,
    /// `http://127.0.0.1:PORT` (`https://` with `--tls`), from the first line `serve` prints.
    pub endpoint: String,
    /// With `--tls`: the CA file, from the `ca-file: ` line that follows.
    pub ca_file: Option<std::path::PathBuf>,
    /// What `serve` prints after its address (and CA) line, unread.
    pub stdout: Option<Lines<BufReader<ChildStdout>>>,
}

impl Serve {
    /// Spawns `cmd` (a `serve` command with stdout piped) and reads the address it
    /// prints first (and the CA file line after it, for HTTPS).
    pub fn spawn(cmd: &mut Command) -> Serve {
        let mut child = cmd.spawn().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = lines.next().expect("serve prints its address").unwrap();
        let endpoint = first
            .split_whitespace()
            .find(|w| w.starts_with("http://") || w.starts_with("https://"))
            .unwrap_or_else(|| panic!("no URL in {first:?}"))
            .to_string();
        let ca_file = endpoint.starts_with("https://").then(|| {
            let line = lines.next().expect("serve --tls prints its CA file").unwrap();
            let path = line
                .strip_prefix(lab::child::CA_FILE_PREFIX)
                .unwrap_or_else(|| panic!("no CA file in {line:?}"));
            std::path::PathBuf::from(path)
        });
        Serve {
            child,
            endpoint,
            ca_file,
            stdout: Some(lines),
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `cmd` to the end; it must finish within two minutes.
pub fn run_bounded(cmd: &mut Command) -> Output {
    let start = Instant::now();
    let out = cmd.output().unwrap();
    assert!(start.elapsed() < Duration::from_secs(120));
    out
}

/// A Lambda context as the runtime makes one (function `s3sweep-test`, 2,048 MB), with
/// the deadline `deadline_in` from now (`None`: the 1970 deadline `cargo lambda watch`
/// sends).
pub fn lambda_context(request_id: &str, deadline_in: Option<Duration>) -> lambda_runtime::Context {
    let mut ctx = lambda_runtime::Context::default();
    ctx.request_id = request_id.into();
    ctx.deadline = match deadline_in {
        Some(d) => (std::time::SystemTime::now() + d)
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64,
        None => 600_000,
    };
    ctx.env_config = std::sync::Arc::new(lambda_runtime::Config {
        function_name: "s3sweep-test".into(),
        memory: 2048,
        version: "$LATEST".into(),
        log_stream: String::new(),
        log_group: String::new(),
    });
    ctx
}

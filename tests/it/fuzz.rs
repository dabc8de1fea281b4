//! Property-based tests (proptest, bounded case counts): the request parser and the
//! embedded server's request handling never panic, whatever they are given.
//!
//! - random JSON documents and random text through `Plan::from_json`/`from_value`:
//!   either a plan or an error whose every problem names a field and says what is
//!   wrong, in bounded text;
//! - a valid request with one field replaced by random JSON: the error names that field;
//! - random methods, paths, headers and bodies (and raw garbage) sent over TCP to the
//!   embedded server: no panic in any of its tasks, and it still serves a signed GET;
//! - the CLI's argument parser together with every file it reads (issue 53): random
//!   command lines of `report`, `compare`, `history`, `preflight`, `clean`, `seed` and
//!   `run`, with extreme counts, long and control-character strings, and files of
//!   random JSON, cut or mutated results and manifests, random bytes, run through the
//!   binary for a fixed [`CLI_FUZZ_TIME`]: no run panics (exit 101);
//! - `serve`'s and `local`'s arguments, every count flag given extreme values, parsed
//!   in this process (no server started) for [`ARGS_FUZZ_TIME`]: a value or a usage
//!   error (exit 2), never a panic.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;
use std::time::Duration;

use proptest::strategy::ValueTree as _;

use proptest::prelude::*;
use serde_json::{json, Map, Value};

use s3sweep::plan::Plan;

static PANICS: AtomicU64 = AtomicU64::new(0);
static HOOK: Once = Once::new();

/// The name of the fuzzed server's runtime threads (workers and blocking threads).
const SERVER_THREADS: &str = "fuzz-server";

/// Counts every panic on the fuzzed server's threads (its tasks' panics included: tokio
/// catches those, so they would otherwise go unnoticed), then reports it as usual. Only
/// those threads: other tests of this binary share the process, and some panic on
/// purpose (under `catch_unwind`).
fn count_panics() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current().name() == Some(SERVER_THREADS) {
                PANICS.fetch_add(1, Ordering::SeqCst);
            }
            previous(info);
        }));
    });
}

const FIELDS: &[&str] = &[
    "buckets",
    "key_template",
    "object_count",
    "workers",
    "pool_connections",
    "repetitions",
    "warmup",
    "shuffle",
    "seed",
    "timeouts_ms",
    "max_attempts",
];

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        "[a-z0-9.{}/_-]{0,12}".prop_map(Value::String),
        any::<String>().prop_map(Value::String),
        Just(json!("{i}")),
        Just(json!("b-1")),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..6).prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(FIELDS).prop_map(str::to_string),
        Just("connect".to_string()),
        Just("first_byte".to_string()),
        any::<String>(),
    ]
}

fn check_error(err: &s3sweep::plan::RequestError) {
    assert!(!err.problems.is_empty());
    for p in &err.problems {
        assert!(!p.field.is_empty(), "{err}");
        assert!(!p.message.is_empty(), "{err}");
    }
    assert!(err.to_string().len() < 16 * 1024, "{} bytes", err.to_string().len());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn any_json_document_is_a_plan_or_a_clear_error(doc in json_value()) {
        if let Err(err) = Plan::from_value(doc.clone()) {
            check_error(&err);
        }
        let text = doc.to_string();
        if let Err(err) = Plan::from_json(&text) {
            check_error(&err);
        }
    }

    #[test]
    fn any_text_is_a_plan_or_a_clear_error(text in any::<String>()) {
        if let Err(err) = Plan::from_json(&text) {
            check_error(&err);
        }
    }

    #[test]
    fn a_bad_field_is_named(field in prop::sample::select(FIELDS), value in json_value()) {
        let mut doc: Map<String, Value> = serde_json::from_value(json!({
            "buckets": ["b-1"], "object_count": 10, "workers": [1, 2]
        })).unwrap();
        doc.insert(field.to_string(), value);
        if let Err(err) = Plan::from_value(Value::Object(doc)) {
            check_error(&err);
            let named = err.problems.iter().any(|p| {
                p.field == field || p.field.starts_with(&format!("{field}[")) || p.field.starts_with(&format!("{field}."))
            });
            // A large valid list can also hit the run's request limit, reported on object_count.
            let limit = err.problems.iter().any(|p| p.field == "object_count" && p.message.contains("the limit is"));
            prop_assert!(named || limit, "{field} not named in {err}");
        }
    }
}

// --- the server -------------------------------------------------------------

fn method() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "GET", "PUT", "POST", "DELETE", "HEAD", "OPTIONS", "PATCH", "CONNECT"
        ])
        .prop_map(str::to_string),
        "[A-Z]{1,10}",
    ]
}

fn path() -> impl Strategy<Value = String> {
    prop_oneof![
        "/[a-z0-9.-]{0,70}(/[a-zA-Z0-9%._~!$&'()*+,;=:@-]{0,40}){0,4}",
        "/[a-z0-9-]{3,20}/[a-z0-9/]{1,30}\\?(uploads|delete|list-type=2|versioning|acl|tagging|session|x-id=GetObject|partNumber=1|uploadId=x)?",
        "/_s3sweep/faults",
        "\\*",
        "http://[a-z.]{1,20}/[a-z/]{0,20}",
        "[ -~]{0,80}",
    ]
}

fn header() -> impl Strategy<Value = (String, String)> {
    let name = prop_oneof![
        prop::sample::select(vec![
            "authorization",
            "x-amz-date",
            "x-amz-content-sha256",
            "content-length",
            "content-type",
            "content-md5",
            "range",
            "x-amz-decoded-content-length",
            "transfer-encoding",
            "expect",
            "x-amz-copy-source",
            "x-amz-checksum-crc32",
            "host",
        ])
        .prop_map(str::to_string),
        "[a-zA-Z-]{1,20}",
    ];
    let value = prop_oneof![
        "[ -~]{0,60}",
        Just(
            "AWS4-HMAC-SHA256 Credential=s3sweep/20240101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00"
                .to_string()
        ),
        Just("STREAMING-AWS4-HMAC-SHA256-PAYLOAD".to_string()),
        Just("UNSIGNED-PAYLOAD".to_string()),
        Just("chunked".to_string()),
        Just("bytes=0-10".to_string()),
        Just("100-continue".to_string()),
        (0u64..100_000_000_000).prop_map(|n| n.to_string()),
        Just("-1".to_string()),
    ];
    (name, value)
}

#[derive(Debug, Clone)]
enum Raw {
    Http {
        method: String,
        path: String,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    Garbage(Vec<u8>),
}

fn raw_request() -> impl Strategy<Value = Raw> {
    prop_oneof![
        8 => (method(), path(), prop::collection::vec(header(), 0..8), prop::collection::vec(any::<u8>(), 0..300))
            .prop_map(|(method, path, headers, body)| Raw::Http { method, path, headers, body }),
        1 => prop::collection::vec(any::<u8>(), 0..400).prop_map(Raw::Garbage),
    ]
}

fn send(addr: SocketAddr, raw: &Raw) {
    let bytes = match raw {
        Raw::Garbage(b) => b.clone(),
        Raw::Http {
            method,
            path,
            headers,
            body,
        } => {
            let mut text = format!("{method} {path} HTTP/1.1\r\nhost: 127.0.0.1\r\n");
            for (n, v) in headers {
                text.push_str(&format!("{n}: {v}\r\n"));
            }
            text.push_str("\r\n");
            let mut b = text.into_bytes();
            b.extend_from_slice(body);
            b
        }
    };
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_secs(2)) else {
        panic!("the server stopped accepting connections");
    };
    s.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
    let _ = s.write_all(&bytes);
    let _ = s.shutdown(std::net::Shutdown::Write);
    // Read whatever comes back until the server closes or goes quiet; the answer
    // itself does not matter, only that the server survives.
    let mut buf = [0u8; 4096];
    while let Ok(n) = s.read(&mut buf) {
        if n == 0 {
            break;
        }
    }
}

#[test]
fn the_server_survives_random_requests() {
    let _one = crate::common::one_at_a_time();
    count_panics();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name(SERVER_THREADS)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime.block_on(
        crate::common::LabBuilder::new()
            .bucket("fuzz-bucket", crate::common::lab::LatencyProfile::None)
            .server(),
    );
    server
        .store()
        .insert("fuzz-bucket", "test/0/vectors", bytes::Bytes::from_static(b"hello"));
    let addr = server.addr();
    let config = ProptestConfig {
        cases: 1000,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    proptest::test_runner::TestRunner::new(config)
        .run(&raw_request(), |raw| {
            send(addr, &raw);
            Ok(())
        })
        .unwrap();
    assert_eq!(PANICS.load(Ordering::SeqCst), 0, "the server panicked");
    // It still serves a real, signed GET.
    let endpoint = server.endpoint();
    let plan = Plan::from_json(r#"{"buckets": ["fuzz-bucket"], "object_count": 1, "workers": [1]}"#).unwrap();
    runtime.block_on(async {
        let client = s3sweep::sweep_client(crate::common::lab::client_options(endpoint))
            .await
            .unwrap();
        s3sweep::engine::preflight(&client.session(&plan), &plan)
            .await
            .expect("still serving");
    });
    assert_eq!(PANICS.load(Ordering::SeqCst), 0);
    drop(server);
}

/// How long the CLI is fuzzed in the suite.
const CLI_FUZZ_TIME: Duration = Duration::from_secs(20);

/// Values a flag or a field is given: extreme counts, long and hostile strings.
fn wild_value() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "0",
            "1",
            "-1",
            "4294967296",
            "18446744073709551615",
            "18446744073709551616",
            "340282366920938463463374607431768211456",
            "1e309",
            "NaN",
            "",
            "us-east-1\n",
            "s3://b-1/",
            "s3://b-1/k",
            "http://127.0.0.1:9",
            "{i}",
            "workers,wall_ms",
        ])
        .prop_map(str::to_string),
        "[a-z0-9{}/._-]{0,24}",
        any::<String>(),
        // Long: past S3's 1,024-byte keys, under the kernel's 128 KiB per argument.
        (0usize..3, any::<char>()).prop_map(|(n, c)| c.to_string().repeat([1_025, 20_000, 30_000][n])),
        Just("k".repeat(70_000)),
    ]
}

/// What a file the CLI reads holds: random JSON, a demo result or a manifest cut or
/// with one field replaced, random bytes.
fn file_content() -> impl Strategy<Value = Vec<u8>> {
    let demo = || std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/timeline-burst.json")).unwrap();
    let manifest = json!({"schema": "s3sweep.manifest/v3", "bucket": "b-1", "endpoint": "http://127.0.0.1:9",
        "key_template": "t/{i}", "object_size_bytes": 8, "owner_marker": "0123456789abcdef0123456789abcdef",
        "written": ["t/0"], "skipped_existing": 0});
    prop_oneof![
        json_value().prop_map(|v| v.to_string().into_bytes()),
        any::<f64>().prop_map(move |cut| {
            let text = demo();
            let at = (cut.abs().fract() * text.len() as f64) as usize;
            text.as_bytes()[..at.min(text.len())].to_vec()
        }),
        (
            prop::sample::select(vec![
                "results",
                "request",
                "summary",
                "environment",
                "schema",
                "started_unix_ms",
                "tool"
            ]),
            json_value()
        )
            .prop_map(move |(field, v)| {
                let mut doc: Value = serde_json::from_str(&demo()).unwrap();
                doc[field] = v;
                doc.to_string().into_bytes()
            }),
        (
            prop::sample::select(vec![
                "written",
                "bucket",
                "key_template",
                "object_size_bytes",
                "probe_object",
                "etags",
                "owner_marker"
            ]),
            json_value()
        )
            .prop_map(move |(field, v)| {
                let mut doc = manifest.clone();
                doc[field] = v;
                doc.to_string().into_bytes()
            }),
        prop::collection::vec(any::<u8>(), 0..2048),
    ]
}

/// A command line (with `FILE` and `DIR` for the file and its folder) and the file.
fn command_line() -> impl Strategy<Value = (Vec<String>, Vec<u8>)> {
    let flags: &[(&str, &[&str])] = &[
        (
            "report FILE",
            &["--lambda-memory-mb", "--target-wall-ms", "--columns", "--timeline"],
        ),
        ("compare FILE FILE", &["--bucket-a", "--bucket-b"]),
        ("history DIR", &["--limit", "--max-total-mib"]),
        (
            "preflight --event FILE --endpoint http://127.0.0.1:9",
            &["--bucket", "--region", "--subnet-zone-ids"],
        ),
        ("clean --manifest FILE", &["--batch", "--endpoint"]),
        (
            "seed --bucket b-1 --endpoint http://127.0.0.1:9",
            &[
                "--count",
                "--size",
                "--concurrency",
                "--key-template",
                "--sizes",
                "--probe-object-mib",
                "--region",
            ],
        ),
        (
            "run --event FILE --endpoint http://127.0.0.1:9 --no-preflight",
            &["--workers", "--region", "--repetitions", "--objects", "--pool"],
        ),
    ];
    (
        0..flags.len(),
        prop::collection::vec((0usize..8, wild_value()), 0..4),
        file_content(),
    )
        .prop_map(move |(c, extra, file)| {
            let (base, names) = flags[c];
            let mut args: Vec<String> = base.split(' ').map(str::to_string).collect();
            for (n, value) in extra {
                args.push(names[n % names.len()].to_string());
                // An argument cannot hold a NUL (the kernel ends it there).
                args.push(value.replace('\0', "\\0"));
            }
            (args, file)
        })
}

#[test]
fn the_cli_and_the_files_it_reads_never_panic() {
    let dir = std::env::temp_dir().join(format!("s3sweep-fuzz-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("input.json");
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let strategy = command_line();
    let start = std::time::Instant::now();
    let mut cases = 0;
    let mut exits = std::collections::BTreeMap::new();
    while start.elapsed() < CLI_FUZZ_TIME {
        let (args, content) = strategy.new_tree(&mut runner).unwrap().current();
        std::fs::write(&file, &content).unwrap();
        let args: Vec<String> = args
            .into_iter()
            .map(|a| match a.as_str() {
                "FILE" => file.display().to_string(),
                "DIR" => dir.display().to_string(),
                _ => a,
            })
            .collect();
        let out = crate::common::run_within(
            "a fuzzed command line",
            std::process::Command::new(crate::common::BIN)
                .args(&args)
                .current_dir(&dir),
            Duration::from_secs(30),
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        let shown: Vec<String> = args
            .iter()
            .map(|a| format!("{:?}", a.chars().take(60).collect::<String>()))
            .collect();
        assert!(
            out.status.code() != Some(101) && !stderr.contains("panicked at"),
            "{shown:?} with a {}-byte file panicked: {}",
            content.len(),
            stderr.chars().take(2000).collect::<String>()
        );
        *exits.entry(out.status.code()).or_insert(0) += 1;
        cases += 1;
    }
    eprintln!("{cases} command lines in {:?}: exit codes {exits:?}", CLI_FUZZ_TIME);
    assert!(cases >= 50, "only {cases} command lines ran");
    let _ = std::fs::remove_dir_all(&dir);
}

/// How long `serve`'s and `local`'s arguments are fuzzed (parse only, in this process).
const ARGS_FUZZ_TIME: Duration = Duration::from_secs(5);

/// A count flag's value: numbers of every size, or a wild value.
fn count_value() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u64..100_000).prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        any::<u32>().prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|f| f.to_string()),
        (0u32..64).prop_map(|shift| (1u128 << shift).to_string()),
        wild_value(),
    ]
}

/// `serve` and `local` command lines with every count flag given wild values.
fn serve_or_local_line() -> impl Strategy<Value = Vec<String>> {
    const SERVE: &[&str] = &[
        "--port",
        "--seed",
        "--stall-ms",
        "--late-first-byte-ms",
        "--list-delay-ms",
        "--session-ttl-s",
        "--header-read-timeout-ms",
        "--max-connections",
        "--max-object-bytes",
        "--max-store-bytes",
        "--lambda-memory-mb",
        "--nic-burst-mib",
        "--nic-burst-mib-s",
        "--nic-burst-refill-mib-s",
        "--nic-per-connection-mib-s",
        "--prefix-rate",
        "--idle-timeout-s",
        "--tail",
        "--runtime-threads",
    ];
    const LOCAL: &[&str] = &[
        "--objects",
        "--workers",
        "--size",
        "--sizes",
        "--pool",
        "--repetitions",
        "--target-wall-ms",
        "--session-ttl-s",
        "--cpu-quota",
        "--lambda-memory-mb",
        "--bandwidth-mib-s",
        "--pool-idle-timeout-ms",
        "--max-hedge-percent",
        "--requests-log-max-mib",
        "--idle-timeout-s",
        "--prefix-rate",
        "--runtime-threads",
    ];
    (any::<bool>(), prop::collection::vec((0usize..32, count_value()), 1..5)).prop_map(|(serve, extra)| {
        let (command, names) = if serve { ("serve", SERVE) } else { ("local", LOCAL) };
        let mut args = vec!["s3sweep".to_string(), command.to_string()];
        if serve {
            args.extend(["--nic".to_string(), "100".to_string()]);
        }
        for (n, value) in extra {
            args.push(names[n % names.len()].to_string());
            args.push(value);
        }
        args
    })
}

#[test]
fn serve_and_local_arguments_are_parsed_or_refused_never_panic() {
    use clap::Parser as _;
    use s3sweep::cli::{Cli, Command};
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let strategy = serve_or_local_line();
    let start = std::time::Instant::now();
    let (mut cases, mut refused) = (0u64, 0u64);
    while start.elapsed() < ARGS_FUZZ_TIME {
        let args = strategy.new_tree(&mut runner).unwrap().current();
        let shown: Vec<String> = args
            .iter()
            .map(|a| format!("{:?}", a.chars().take(60).collect::<String>()))
            .collect();
        // Parse only (and the network flags' own check): no server is started.
        let parsed = std::panic::catch_unwind(|| match Cli::try_parse_from(&args) {
            Ok(cli) => {
                match &cli.command {
                    Command::Serve(a) => drop(a.network.config(a.lambda_memory_mb)),
                    Command::Local(a) => drop(a.network.config(a.quota.memory_mb.first().copied())),
                    _ => {}
                }
                None
            }
            Err(err) => Some(err.exit_code()),
        });
        match parsed {
            Err(_) => panic!("{shown:?} panicked"),
            Ok(Some(code)) => {
                assert_eq!(code, 2, "{shown:?} refused with exit {code}");
                refused += 1;
            }
            Ok(None) => {}
        }
        cases += 1;
    }
    eprintln!("serve/local: {cases} command lines in {ARGS_FUZZ_TIME:?}, {refused} refused");
    assert!(cases >= 1000, "only {cases} command lines ran");
}

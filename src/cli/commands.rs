//! The commands besides `local`: `run` (a request against any endpoint or AWS),
//! `seed` and `clean` (write and delete exactly the test objects), `serve` (the lab
//! alone), `report` and `compare` (read result files).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::analysis::analyse;
use crate::analysis::compare::{self, CompareOptions};
use crate::analysis::cost::CostOverrides;
use crate::engine::{self, SweepOptions};
use crate::lab::{self, LatencyProfile, ServerConfig, LOCAL_ACCESS_KEY, LOCAL_SECRET_KEY};
use crate::model::Thresholds;
use crate::plan::{check_bucket_name, is_directory_bucket, KeyTemplate, Plan, LAMBDA_MEMORY_MB};
use crate::render::compare::render_comparison;
use crate::render::progress::ProgressMode;
use crate::render::Style;
use crate::s3::clean;
use crate::s3::seed::{seed as seed_objects, SeedSpec};
use crate::s3::{RequestSettings, SweepClient};

use super::args::{check_session_ttl, CleanArgs, CompareArgs, ReportArgs, RunArgs, SeedArgs, ServeArgs, TargetArgs};
use super::{human, read_result, write_json, write_plot, CliError, Context};

/// A value as pretty JSON.
fn pretty(value: &impl serde::Serialize) -> Result<String, CliError> {
    serde_json::to_string_pretty(value).context("serializing the output")
}

pub fn report(args: ReportArgs) -> Result<(), CliError> {
    let result = read_result(&args.result)?;
    if let Some(m) = args.lambda_memory_mb {
        if !LAMBDA_MEMORY_MB.contains(&m) {
            return Err(CliError::Usage(format!(
                "--lambda-memory-mb: must be between 128 and 10240, got {m}"
            )));
        }
    }
    if args.target_wall_ms == Some(0) {
        return Err(CliError::Usage("--target-wall-ms: must be at least 1".into()));
    }
    if args.json {
        println!("{}", pretty(&result)?);
    } else {
        let bullet = if args.markdown { "- " } else { "" };
        println!("{bullet}{}: {}\n", args.result.display(), compare::environment(&result));
        print!(
            "{}",
            human(
                &result,
                Style::markdown_if(args.markdown),
                CostOverrides {
                    lambda_memory_mb: args.lambda_memory_mb,
                    target_wall_ms: args.target_wall_ms,
                }
            )
        );
    }
    if let Some(path) = &args.plot {
        write_plot(&result, path)?;
    }
    Ok(())
}

pub fn compare(args: CompareArgs) -> Result<(), CliError> {
    let a = read_result(&args.a)?;
    let (b, same_file) = match &args.b {
        Some(path) => (read_result(path)?, false),
        None => (a.clone(), true),
    };
    let comparison = compare::compare(
        &a,
        &b,
        &CompareOptions {
            bucket_a: args.bucket_a.clone(),
            bucket_b: args.bucket_b.clone(),
            same_file,
        },
    )
    .map_err(|e| CliError::Usage(e.to_string()))?;
    if args.json {
        println!("{}", pretty(&comparison)?);
    } else {
        print!("{}", render_comparison(&comparison, Style::markdown_if(args.markdown)));
    }
    Ok(())
}

pub async fn run(args: RunArgs, thresholds: Thresholds) -> Result<(), CliError> {
    args.output.check()?;
    let text = std::fs::read_to_string(&args.event).context(format!("reading {}", args.event.display()))?;
    let plan = Plan::from_json(&text).map_err(|e| CliError::Usage(format!("{}: {e}", args.event.display())))?;
    if plan.fanout().is_some() {
        return Err(CliError::Usage(format!(
            "{}: `fanout` needs the Lambda function, which invokes itself N times (docs/fanout.md); remove the field for a sweep from this machine",
            args.event.display()
        )));
    }
    plan.check_fd_budget(false).map_err(CliError::other)?;
    let client = SweepClient::new(args.target.options()).await.map_err(CliError::other)?;
    if !args.no_preflight {
        engine::preflight(&client, &plan)
            .await
            .map_err(|e| CliError::Usage(format!("{}: {e}", e.error_type())))?;
    }
    eprintln!(
        "sweeping {} bucket(s), workers {:?}, {} objects each, {} requests in all",
        plan.buckets().len(),
        plan.workers(),
        plan.object_count(),
        plan.total_requests()
    );
    let mut result = engine::run(
        &client,
        &plan,
        &SweepOptions {
            runner: "cli".into(),
            ..SweepOptions::default()
        },
        ProgressMode::for_stderr(args.output.quiet).observer(),
    )
    .await;
    analyse(&mut result, &thresholds);
    if !args.output.quiet {
        eprint!(
            "\n{}",
            human(
                &result,
                Style::markdown_if(args.output.markdown),
                CostOverrides::default()
            )
        );
    }
    println!("{}", pretty(&result)?);
    if let Some(path) = &args.json {
        write_json(path, &result)?;
    }
    if let Some(path) = &args.output.plot {
        write_plot(&result, path)?;
    }
    Ok(())
}

pub async fn seed(args: SeedArgs) -> Result<(), CliError> {
    if let Err(msg) = check_bucket_name(&args.bucket) {
        return Err(CliError::Usage(format!("--bucket: {msg}")));
    }
    let keys = KeyTemplate::parse(&args.key_template, args.count.max(1) - 1)
        .map_err(|m| CliError::Usage(format!("--key-template: {m}")))?;
    if args.count == 0 {
        return Err(CliError::Usage("--count: must be at least 1".into()));
    }
    let client = SweepClient::new(args.target.options()).await.map_err(CliError::other)?;
    let s3 = client.s3(RequestSettings::maintenance(Duration::from_secs(60)));
    if args.create_bucket {
        match s3.create_bucket().bucket(&args.bucket).send().await {
            Ok(_) => eprintln!("created bucket {}", args.bucket),
            Err(e) => {
                let code = e
                    .as_service_error()
                    .and_then(aws_sdk_s3::error::ProvideErrorMetadata::code);
                if !matches!(code, Some("BucketAlreadyOwnedByYou")) {
                    return Err(CliError::Usage(format!(
                        "creating bucket {}: {}",
                        args.bucket,
                        aws_sdk_s3::error::DisplayErrorContext(&e)
                    )));
                }
            }
        }
    }
    let started = Instant::now();
    let manifest = seed_objects(
        &s3,
        client.endpoint(),
        &SeedSpec {
            bucket: args.bucket.clone(),
            keys,
            object_count: args.count,
            object_size_bytes: args.size,
            concurrency: args.concurrency,
            skip_existing: true,
        },
    )
    .await
    .map_err(CliError::other)?;
    let path = args
        .manifest
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("s3sweep-manifest-{}.json", args.bucket)));
    manifest.save(&path).map_err(CliError::other)?;
    eprintln!(
        "wrote {} objects to {} ({} already there, left alone) in {} ms; keys written are recorded in {}",
        manifest.written.len(),
        args.bucket,
        manifest.skipped_existing,
        started.elapsed().as_millis(),
        path.display()
    );
    Ok(())
}

pub async fn serve(args: ServeArgs) -> Result<(), CliError> {
    let mut buckets = Vec::new();
    let mut problems = Vec::new();
    for spec in &args.buckets {
        let (name, profile) = spec.split_once('=').unwrap_or((spec.as_str(), "none"));
        match (check_bucket_name(name), profile.parse::<LatencyProfile>()) {
            (Ok(()), Ok(p)) => buckets.push((name.to_string(), p)),
            (Err(m), _) | (_, Err(m)) => problems.push(format!("--bucket {spec}: {m}")),
        }
    }
    let mut faults = Vec::new();
    for spec in &args.faults {
        match spec.parse::<lab::BucketFault>() {
            Ok(f) => faults.push(f),
            Err(m) => problems.push(format!("--fault {m}")),
        }
    }
    // Rates of one bucket must not add up to more than 1, and no kind twice.
    if let Err(e) = lab::Faults::new(0).set_all(&faults) {
        problems.push(format!("--fault: {e}"));
    }
    let session_ttl = check_session_ttl(args.session_ttl_s).unwrap_or_else(|m| {
        problems.push(m);
        lab::DEFAULT_SESSION_TTL
    });
    if !problems.is_empty() {
        return Err(CliError::Usage(problems.join("; ")));
    }
    let running = lab::start(ServerConfig {
        addr: std::net::SocketAddr::from(([127, 0, 0, 1], args.port)),
        buckets: buckets.clone(),
        default_profile: args.default_profile,
        seed: args.seed,
        tls: args.tls.then(|| lab::TlsOptions {
            ca_file: args.ca_out.clone(),
        }),
        session_ttl,
    })
    .await
    .context(format!("starting the server on 127.0.0.1:{}", args.port))?;
    println!("s3sweep serve: listening on {}", running.endpoint());
    if let Some(ca) = running.ca_file() {
        // `ca-file: ` then the path, alone on the line: what scripts read.
        println!("{}{}", lab::child::CA_FILE_PREFIX, ca.display());
        println!(
            "TLS: the lab's CA (made at start) is in the file above: trust it with --ca-file, AWS_CA_BUNDLE or boto3's verify="
        );
    }
    println!("credentials: access key {LOCAL_ACCESS_KEY}, secret key {LOCAL_SECRET_KEY} (path-style addressing, region us-east-1)");
    for (b, p) in &buckets {
        let express = if is_directory_bucket(b) {
            format!(
                "; directory bucket: CreateSession, sessions of {} s",
                session_ttl.as_secs()
            )
        } else {
            String::new()
        };
        println!("bucket {b}: latency profile {p}{express}");
    }
    running.faults().set_timing(lab::FaultTiming {
        stall_ms: args.stall_ms,
        late_first_byte_ms: args.late_first_byte_ms,
    });
    running.faults().set_all(&faults).map_err(CliError::other)?;
    for f in &faults {
        println!("bucket {}: fault {} at rate {}", f.bucket, f.spec.kind, f.spec.rate);
    }
    if !faults.is_empty() {
        println!("fault tally: GET {}{}", running.endpoint(), lab::FAULTS_PATH);
    }
    use std::io::Write;
    std::io::stdout().flush().context("writing to stdout")?;
    let mut term =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).context("listening for SIGTERM")?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    let tally = running.faults().tally();
    let sessions = running.sessions().tally();
    let handshakes = (running.tls_handshakes(), running.tls_handshakes_failed());
    running.shutdown().await;
    println!("s3sweep serve: faults injected: {}", tally.line());
    eprintln!("s3sweep serve: faults injected: {}", tally.line());
    eprintln!("s3sweep serve: S3 Express sessions: {}", sessions.line());
    if args.tls {
        eprintln!(
            "s3sweep serve: TLS handshakes: {} done, {} failed",
            handshakes.0, handshakes.1
        );
    }
    Ok(())
}

pub async fn clean(args: CleanArgs) -> Result<(), CliError> {
    if !(1..=clean::MAX_BATCH).contains(&args.batch) {
        return Err(CliError::Usage(format!(
            "--batch: must be between 1 and {}, got {}",
            clean::MAX_BATCH,
            args.batch
        )));
    }
    let manifest = clean::load_manifest(&args.manifest).map_err(CliError::other)?;
    let endpoint = clean::endpoint_for(&manifest, args.target.endpoint.as_deref()).map_err(CliError::other)?;
    let target = TargetArgs {
        endpoint,
        region: args.target.region.clone(),
        aws_credentials: args.target.aws_credentials,
        ca_file: args.target.ca_file.clone(),
    };
    let client = SweepClient::new(target.options()).await.map_err(CliError::other)?;
    let s3 = client.s3(RequestSettings::maintenance(Duration::from_secs(60)));
    let outcome = clean::clean(&s3, &manifest, args.batch).await;
    let left = clean::without(&manifest, &outcome.deleted);
    clean::write_manifest(&args.manifest, &left).map_err(CliError::other)?;
    eprintln!(
        "deleted {} of the {} keys recorded in {} (bucket {}); {} left in the manifest",
        outcome.deleted.len(),
        manifest.written.len(),
        args.manifest.display(),
        manifest.bucket,
        left.written.len()
    );
    if let Some((key, why)) = outcome.failed.first() {
        return Err(CliError::Usage(format!(
            "{} key(s) could not be deleted and stay in the manifest; first: {key}: {why}",
            outcome.failed.len()
        )));
    }
    Ok(())
}

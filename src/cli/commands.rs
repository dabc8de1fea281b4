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
use crate::plan::{check_bucket_name, is_directory_bucket, KeyTemplate, LAMBDA_MEMORY_MB};
use crate::render::compare::render_comparison;
use crate::render::plot;
use crate::render::progress::ProgressMode;
use crate::render::Style;
use crate::s3::clean;
use crate::s3::errors::{self, Action, BucketError};
use crate::s3::seed::{seed as seed_objects, seed_probe_object, SeedError, SeedSpec};
use crate::s3::RequestSettings;

use super::args::{check_session_ttl, CleanArgs, CompareArgs, ReportArgs, RunArgs, SeedArgs, ServeArgs, TargetArgs};
use super::memory::sweep_steps;
use super::{human, read_result, request, write_json, write_plot, CliError, Context};

/// A value as pretty JSON.
fn pretty(value: &impl serde::Serialize) -> Result<String, CliError> {
    serde_json::to_string_pretty(value).context("serializing the output")
}

pub fn report(args: ReportArgs) -> Result<(), CliError> {
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
    if let Some(path) = &args.plot {
        plot::format_of(path).map_err(|e| CliError::Usage(format!("--plot {}: {e}", path.display())))?;
    }
    let result = read_result(&args.result)?;
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
    let plan = request::run_plan(&args)?;
    if args.print_event {
        println!("{}", pretty(plan.request())?);
        return Ok(());
    }
    if plan.fanout().is_some() {
        return Err(CliError::Usage(
            "`fanout` needs the Lambda function, which invokes itself N times (docs/fanout.md): remove the field for a sweep from this machine, or send the request (`run --print-event`) to the function".into(),
        ));
    }
    // Memory sizes from --lambda-memory-mb, else the request's `memory_mb`: each is
    // emulated here by a CPU quota (the Lambda sets its real memory instead).
    let mut quota = args.quota.clone();
    if quota.lambda_memory_mb.is_empty() && quota.cpu_quota.is_none() {
        quota.lambda_memory_mb = plan.memory_mb().to_vec();
    }
    let steps = quota.steps()?;
    plan.check_fd_budget(false).map_err(CliError::other)?;
    let client = args.target.client(&plan.buckets()[0]).await?;
    if !args.no_preflight {
        engine::preflight(&client, &plan).await.map_err(CliError::Bucket)?;
    }
    eprintln!(
        "sweeping {} bucket(s) at {} (credentials: {}), workers {:?}, {} objects each, {} requests in all",
        plan.buckets().len(),
        client.endpoint_name(),
        client.credentials(),
        plan.workers(),
        plan.object_count(),
        plan.total_requests()
    );
    let mut result = sweep_steps(
        &client,
        &plan,
        &steps,
        &SweepOptions {
            runner: "cli".into(),
            ..SweepOptions::default()
        },
        ProgressMode::for_stderr(args.output.quiet).observer(),
    )
    .await?;
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
    if args.probe_object_mib.is_some_and(|m| !(1..=1024).contains(&m)) {
        return Err(CliError::Usage("--probe-object-mib: must be between 1 and 1024".into()));
    }
    let client = args.target.client(&args.bucket).await?;
    let s3 = client.s3(RequestSettings::maintenance(Duration::from_secs(60)));
    if args.create_bucket {
        match s3.create_bucket().bucket(&args.bucket).send().await {
            Ok(_) => eprintln!("created bucket {}", args.bucket),
            Err(e) => {
                let failure = errors::classify(&e);
                if failure.code.as_deref() != Some("BucketAlreadyOwnedByYou") {
                    return Err(CliError::Bucket(BucketError::from_failure(
                        &failure,
                        Action::CreateBucket,
                        &args.bucket,
                        "",
                        &client.endpoint_name(),
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
    .map_err(|e| match e {
        SeedError::Bucket(b) => CliError::Bucket(b),
        other => CliError::other(other),
    })?;
    let mut manifest = manifest;
    if let Some(mib) = args.probe_object_mib {
        let probe = seed_probe_object(&s3, client.endpoint(), &args.bucket, &args.probe_key, mib << 20)
            .await
            .map_err(|e| match e {
                SeedError::Bucket(b) => CliError::Bucket(b),
                other => CliError::other(other),
            })?;
        if let Some(p) = probe {
            manifest.written.push(p.key.clone());
            manifest.probe_object = Some(p);
        }
    }
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
    let handshakes = (
        running.tls_handshakes(),
        running.tls_handshakes_abandoned(),
        running.tls_handshakes_failed(),
    );
    running.shutdown().await;
    println!("s3sweep serve: faults injected: {}", tally.line());
    eprintln!("s3sweep serve: faults injected: {}", tally.line());
    eprintln!("s3sweep serve: S3 Express sessions: {}", sessions.line());
    if args.tls {
        eprintln!(
            "s3sweep serve: TLS handshakes: {} done, {} abandoned by the client (it closed mid-handshake), {} failed",
            handshakes.0, handshakes.1, handshakes.2
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
    let manifest = clean::load_manifest(&args.manifest).map_err(|e| {
        CliError::Message(format!(
            "{e}: give the manifest `s3sweep seed` wrote (--manifest FILE; by default s3sweep-manifest-BUCKET.json)"
        ))
    })?;
    let endpoint = clean::endpoint_for(&manifest, args.target.endpoint.as_deref()).map_err(CliError::other)?;
    let target = TargetArgs {
        endpoint,
        ..args.target.clone()
    };
    let client = target.client(&manifest.bucket).await?;
    let s3 = client.s3(RequestSettings::maintenance(Duration::from_secs(60)));
    let outcome = clean::clean(&s3, &manifest, args.batch).await;
    let left = clean::without(&manifest, &outcome.deleted);
    clean::write_manifest(&args.manifest, &left).map_err(CliError::other)?;
    // A clean-up stopped before deleting anything says so in its one error line.
    let quiet = outcome.deleted.is_empty() && outcome.stopped_by.is_some();
    if !quiet {
        eprintln!(
            "deleted {} of the {} keys recorded in {} (bucket {}); {} left in the manifest",
            outcome.deleted.len(),
            manifest.written.len(),
            args.manifest.display(),
            manifest.bucket,
            left.written.len()
        );
    }
    if let Some(error) = outcome.stopped_by {
        return Err(CliError::Failed {
            context: error.error_type().to_string(),
            source: Box::new(error),
            advice: Some(format!(
                "{} key(s) stay in {} for a later `s3sweep clean`",
                left.written.len(),
                args.manifest.display()
            )),
        });
    }
    if let Some((key, why)) = outcome.failed.first() {
        return Err(CliError::Message(format!(
            "{} key(s) could not be deleted and stay in the manifest; first: {key}: {why}",
            outcome.failed.len()
        )));
    }
    Ok(())
}

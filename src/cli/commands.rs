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
use crate::model::{Runner, Thresholds};
use crate::plan::{check_bucket_name, is_directory_bucket, KeyTemplate, LAMBDA_MEMORY_MB};
use crate::render::compare::{render_comparison, render_comparison_in};
use crate::render::plot;
use crate::render::Style;
use crate::s3::clean;
use crate::s3::errors::{self, Action, BucketError};
use crate::s3::seed::{seed_probe_object, seed_recorded, SeedError, SeedManifest, SeedSpec};
use crate::s3::RequestSettings;

use super::args::{
    check_session_ttl, CleanArgs, CompareArgs, ReportArgs, RunArgs, SeedArgs, ServeArgs, ServeBucket, TargetArgs,
};
use super::memory::sweep_steps;
use super::{human, read_result_at, request, write_json, write_plot, CliError, Context};

/// A value as pretty JSON.
fn pretty(value: &impl serde::Serialize) -> Result<String, CliError> {
    serde_json::to_string_pretty(value).context("serializing the output")
}

pub(crate) async fn report(args: ReportArgs) -> Result<(), CliError> {
    if let Some(m) = args.lambda_memory_mb {
        if !LAMBDA_MEMORY_MB.contains(&m) {
            return Err(CliError::FlagRange {
                flag: "--lambda-memory-mb",
                low: u64::from(*LAMBDA_MEMORY_MB.start()),
                high: u64::from(*LAMBDA_MEMORY_MB.end()),
                got: u64::from(m),
            });
        }
    }
    if args.target_wall_ms == Some(0) {
        return Err(CliError::Usage("--target-wall-ms: must be at least 1".into()));
    }
    if let Some(path) = &args.plot {
        plot::format_of(path).map_err(|e| CliError::flag(format!("--plot {}", path.display()), e))?;
    }
    let layout = super::layout(args.markdown, args.wide, args.columns.as_deref())?;
    let result = read_result_at(&args.result, &args.target).await?;
    if args.json {
        println!("{}", super::shown_json(&result.to_json()));
    } else {
        let bullet = if args.markdown { "- " } else { "" };
        let first = format!("{bullet}{}: {}", args.result.display(), compare::environment(&result));
        println!("{}\n", super::shown(&layout.wrap(&first)));
        print!(
            "{}",
            human(
                &result,
                &layout,
                CostOverrides {
                    lambda_memory_mb: args.lambda_memory_mb,
                    target_wall_ms: args.target_wall_ms,
                }
            )
        );
    }
    match (&args.plot, args.timeline) {
        (Some(path), Some(pick)) => super::write_timeline_plot(&result, path, pick)?,
        (Some(path), None) => write_plot(&result, path)?,
        _ => {}
    }
    if let Some(path) = &args.html {
        let overrides = CostOverrides {
            lambda_memory_mb: args.lambda_memory_mb,
            target_wall_ms: args.target_wall_ms,
        };
        let source = format!("{}: {}", args.result.display(), compare::environment(&result));
        write_html(path, &crate::render::html::report_page(&result, &source, overrides))?;
    }
    Ok(())
}

/// `page` written whole to `path` (atomically: a reader never sees half a page).
pub(crate) fn write_html(path: &std::path::Path, page: &str) -> Result<(), CliError> {
    crate::sys::files::write_atomic(path, page.as_bytes())
        .map_err(|e| CliError::file("writing the HTML page", path, e))?;
    eprintln!("HTML page written to {}", path.display());
    Ok(())
}

pub(crate) async fn compare(args: CompareArgs) -> Result<(), CliError> {
    let a = read_result_at(&args.a, &args.target).await?;
    let (b, same_file) = match &args.b {
        Some(path) => (read_result_at(path, &args.target).await?, false),
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
        println!("{}", super::shown_json(&pretty(&comparison)?));
    } else {
        let layout = super::layout(args.markdown, false, None)?;
        print!("{}", super::shown(&render_comparison_in(&comparison, &layout)));
    }
    if let Some(path) = &args.html {
        let b_name = args.b.as_ref().unwrap_or(&args.a);
        let source = format!("{} against {}", args.a.display(), b_name.display());
        let summary = format!(
            "- A, {}: {}\n- B, {}: {}\n",
            args.a.display(),
            compare::environment(&a),
            b_name.display(),
            compare::environment(&b)
        );
        let details = render_comparison(&comparison, Style::Markdown);
        write_html(
            path,
            &crate::render::html::page("s3sweep compare", &source, &summary, None, &details),
        )?;
    }
    Ok(())
}

/// A `key_prefix` sweep's listing, before the preflight (which reads the first listed
/// key); says on stderr what it found and what it cost.
async fn list_prefix(session: &crate::s3::SweepSession, plan: &crate::plan::Plan) -> Result<(), CliError> {
    engine::list_keys(session, plan).await.map_err(|e| match e {
        crate::s3::list::ListingError::Bucket(b) => CliError::Bucket(b),
        other => CliError::other(other),
    })?;
    for l in engine::listing::reports(plan) {
        eprintln!(
            "listed {} keys ({} bytes) under {:?} in {} in {} ListObjectsV2 request(s), {:.1} ms (not part of the sweep)",
            l.keys_found, l.bytes_total, l.prefix, l.bucket, l.list_requests, l.list_wall_ms
        );
    }
    Ok(())
}

pub(crate) async fn run(args: RunArgs, thresholds: Thresholds) -> Result<(), CliError> {
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
    // The plan's memory sizes (--lambda-memory-mb, else the request's `memory_mb`): each
    // is emulated here by a CPU quota (the Lambda sets its real memory instead).
    let steps = args.quota.steps(&plan)?;
    plan.check_fd_budget(false).map_err(CliError::other)?;
    let client = args.target.client(&plan.buckets()[0]).await?;
    // The listing's and the preflight's session; each sweep step makes its own (a
    // memory step's CPU quota sets its lanes).
    let session = client.session(&plan);
    list_prefix(&session, &plan).await?;
    if !args.no_preflight {
        engine::preflight(&session, &plan).await.map_err(CliError::Bucket)?;
    }
    drop(session);
    eprintln!(
        "sweeping {} bucket(s) at {} (credentials: {}), workers {:?}, {} objects each, {} requests in all",
        plan.buckets().len(),
        client.endpoint_name(),
        client.credentials(),
        plan.workers(),
        plan.object_count(),
        plan.total_requests()
    );
    let results = results_log(&client, &plan);
    let (observer, requests_log) = args.output.observer()?;
    let mut result = sweep_steps(
        &client,
        &plan,
        &steps,
        &SweepOptions {
            runner: Runner::Cli,
            results: results.clone(),
            ..SweepOptions::default()
        },
        observer,
    )
    .await?
    .result;
    super::finish_requests_log(requests_log.as_deref())?;
    analyse(&mut result, &thresholds);
    if let Some(log) = &results {
        log.finish(&mut result).await;
        let w = log.writes();
        eprintln!(
            "result written to {} ({} writes, {} failed{})",
            log.uri(),
            w.written,
            w.failed,
            w.errors.first().map(|e| format!(": {e}")).unwrap_or_default()
        );
    }
    if !args.output.quiet {
        eprint!("\n{}", human(&result, &args.output.layout()?, CostOverrides::default()));
    }
    println!("{}", super::shown_json(&result.to_json()));
    if let Some(path) = &args.json {
        write_json(path, &result)?;
    }
    if let Some(path) = &args.output.plot {
        write_plot(&result, path)?;
    }
    results_kept(&result)
}

/// A run whose result did not reach S3 whole fails (after the result is printed and
/// written locally), naming the object, the failed writes and the first failure.
fn results_kept(result: &crate::model::SweepResult) -> Result<(), CliError> {
    match (&result.results_uri, &result.results_writes) {
        (Some(uri), Some(w)) if w.status == crate::model::WritesStatus::Failed => Err(CliError::ResultsNotKept {
            uri: uri.clone(),
            failed: w.failed,
            tried: w.failed + w.written,
            first_error: w.errors.first().map_or("no message", String::as_str).to_string(),
        }),
        _ => Ok(()),
    }
}

/// The request's results destination, if any: the run id is the request's `run_id`,
/// else the start time (ms since the Unix epoch) and this process's id, `cli-<ms>-<pid>`.
fn results_log(
    client: &crate::s3::SweepClient,
    plan: &crate::plan::Plan,
) -> Option<std::sync::Arc<engine::ResultsLog>> {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let destination = plan.dated_if_asked(plan.results_uri()?, (ms / 1000) as u64);
    let run_id = plan
        .run_id()
        .map_or_else(|| format!("cli-{ms}-{}", std::process::id()), str::to_string);
    let writer = crate::s3::results::ResultsWriter::new(client, &destination, &run_id);
    eprintln!("writing the result to {} after every configuration", writer.uri());
    Some(std::sync::Arc::new(engine::ResultsLog::new(writer, None)))
}

pub(crate) async fn seed(args: SeedArgs) -> Result<(), CliError> {
    check_bucket_name(&args.bucket).map_err(|e| CliError::flag("--bucket", e))?;
    let keys = KeyTemplate::parse(&args.key_template, args.count.max(1) - 1)
        .map_err(|e| CliError::flag("--key-template", e))?;
    if args.count == 0 {
        return Err(CliError::Usage("--count: must be at least 1".into()));
    }
    if args.probe_object_mib.is_some_and(|m| !(1..=1024).contains(&m)) {
        return Err(CliError::Usage("--probe-object-mib: must be between 1 and 1024".into()));
    }
    let bad_sizes = crate::plan::sizes::size_problems(&args.object_sizes, "--object-sizes");
    if !bad_sizes.is_empty() {
        let named: Vec<String> = bad_sizes
            .iter()
            .map(|p| format!("{}: {}", p.field, p.message))
            .collect();
        return Err(CliError::Usage(named.join("; ")));
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
    let path = args
        .manifest
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("s3sweep-manifest-{}.json", args.bucket)));
    let manifest = seed_recorded(
        &s3,
        client.endpoint(),
        &SeedSpec {
            bucket: args.bucket.clone(),
            keys,
            object_count: args.count,
            object_size_bytes: args.sizes.first().copied().unwrap_or(args.size),
            size_cycle_bytes: args.sizes.clone(),
            object_sizes_bytes: args.object_sizes.clone(),
            concurrency: args.concurrency,
            skip_existing: true,
        },
        &path,
    )
    .await
    .map_err(|e| match e {
        SeedError::Bucket(b) => CliError::Bucket(b),
        other => CliError::other(other),
    })?;
    let manifest = match args.probe_object_mib {
        Some(mib) => with_probe_object(&s3, client.endpoint(), &args, mib, manifest, &path).await?,
        None => manifest,
    };
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

/// Writes the bandwidth probe's object (`--probe-object-mib`, conditional: an existing
/// key is left alone) and records it, key, size and ETag, in the manifest at `path`
/// so `clean` proves and removes it. Returns `manifest` with it added.
async fn with_probe_object(
    s3: &aws_sdk_s3::Client,
    endpoint: Option<&str>,
    args: &SeedArgs,
    mib: u64,
    mut manifest: SeedManifest,
    path: &std::path::Path,
) -> Result<SeedManifest, CliError> {
    let seed_error = |e| match e {
        SeedError::Bucket(b) => CliError::Bucket(b),
        other => CliError::other(other),
    };
    let owner = manifest
        .owner_marker
        .clone()
        .unwrap_or_else(crate::s3::manifest::new_owner_marker);
    let Some(probe) = seed_probe_object(s3, endpoint, &args.bucket, &args.probe_key, mib << 20, &owner)
        .await
        .map_err(seed_error)?
    else {
        eprintln!(
            "the probe object {} is there already: left alone, not recorded",
            args.probe_key
        );
        return Ok(manifest);
    };
    let mut record = SeedManifest::empty(
        &manifest.bucket,
        endpoint,
        &manifest.key_template,
        manifest.object_size_bytes,
    );
    record.size_cycle_bytes = manifest.size_cycle_bytes.clone();
    record.object_sizes_bytes = manifest.object_sizes_bytes.clone();
    record.owner_marker = Some(owner);
    record.written.push(probe.key.clone());
    record.probe_object = Some(probe.clone());
    record.save(path).map_err(seed_error)?;
    manifest.absorb(&record);
    Ok(manifest)
}

/// `serve`'s `--bucket NAME=PROFILE` values, each bad one added to `problems`.
/// Each value of a repeatable flag parsed as `T`; every bad one named in `problems`
/// with the flag and its form (clap's own value parser stops at the first).
fn parse_each<T: std::str::FromStr>(flag: &str, form: &str, values: &[String], problems: &mut Vec<String>) -> Vec<T>
where
    T::Err: std::fmt::Display,
{
    values
        .iter()
        .filter_map(|v| match v.parse::<T>() {
            Ok(parsed) => Some(parsed),
            Err(e) => {
                problems.push(format!("{flag} {v}: {e} (the form is {form})"));
                None
            }
        })
        .collect()
}

/// What `serve` starts with once every flag is checked.
struct ServeSettings {
    buckets: Vec<(String, LatencyProfile)>,
    faults: Vec<lab::BucketFault>,
    regions: Vec<lab::BucketRegion>,
    session_ttl: Duration,
    limits: lab::LabLimits,
    network: lab::NetworkConfig,
    iam_policy: Option<lab::iam::Policy>,
}

/// `--iam-policy FILE`: the policy read and checked (every bad field named).
fn read_iam_policy(path: Option<&std::path::Path>, problems: &mut Vec<String>) -> Option<lab::iam::Policy> {
    let path = path?;
    let text = crate::sys::files::read_capped_text(path, lab::iam::MAX_POLICY_BYTES, "an IAM policy")
        .map_err(|e| problems.push(format!("--iam-policy {}: {e}", path.display())))
        .ok()?;
    lab::iam::Policy::from_json(&text)
        .map_err(|e| problems.push(format!("--iam-policy {}: {e}", path.display())))
        .ok()
}

/// Checks every `serve` flag, naming each bad one in one usage error.
fn check_serve_args(args: &ServeArgs) -> Result<ServeSettings, CliError> {
    // Every `--bucket` and `--fault` is parsed here so that each bad one is named (clap
    // stops at the first); what is left spans several flags.
    let mut problems = Vec::new();
    let buckets: Vec<(String, LatencyProfile)> =
        parse_each::<ServeBucket>("--bucket", "NAME=PROFILE", &args.buckets, &mut problems)
            .into_iter()
            .map(|b| (b.name, b.profile))
            .collect();
    let faults: Vec<lab::BucketFault> = parse_each("--fault", "BUCKET=KIND:RATE", &args.faults, &mut problems);
    let regions: Vec<lab::BucketRegion> =
        parse_each("--bucket-region", "NAME=REGION", &args.bucket_regions, &mut problems);
    // Rates of one bucket must not add up to more than 1, and no kind twice.
    if let Err(e) = lab::Faults::new(0).set_all(&faults) {
        problems.push(format!("--fault: {e}"));
    }
    let session_ttl = check_session_ttl(args.session_ttl_s).unwrap_or_else(|m| {
        problems.push(m);
        lab::DEFAULT_SESSION_TTL
    });
    let limits = serve_limits(args, &mut problems);
    if let Some(mb) = args
        .lambda_memory_mb
        .filter(|mb| !crate::plan::LAMBDA_MEMORY_MB.contains(mb))
    {
        problems.push(format!(
            "--lambda-memory-mb: must be between 128 and 10240 (Lambda's limits), got {mb}"
        ));
    }
    let network = args.network.config(args.lambda_memory_mb).unwrap_or_else(|bad| {
        problems.extend(bad);
        lab::NetworkConfig::default()
    });
    let iam_policy = read_iam_policy(args.iam_policy.as_deref(), &mut problems);
    if !problems.is_empty() {
        return Err(CliError::Usage(problems.join("; ")));
    }
    Ok(ServeSettings {
        buckets,
        faults,
        regions,
        session_ttl,
        limits,
        network,
        iam_policy,
    })
}

pub(crate) async fn serve(args: ServeArgs) -> Result<(), CliError> {
    let ServeSettings {
        buckets,
        faults,
        regions,
        session_ttl,
        limits,
        network,
        iam_policy,
    } = check_serve_args(&args)?;
    let faults: &[lab::BucketFault] = &faults;
    let running = lab::start(ServerConfig {
        addr: std::net::SocketAddr::from(([127, 0, 0, 1], args.port)),
        buckets: buckets.clone(),
        default_profile: args.default_profile,
        seed: args.seed,
        tls: args.tls.then(|| lab::TlsOptions {
            ca_file: args.ca_out.clone(),
        }),
        session_ttl,
        limits,
        network,
    })
    .await
    .context(format!("starting the server on 127.0.0.1:{}", args.port))?;
    // Listening for SIGTERM before the address is printed: a client that stops the
    // server as soon as it reads it still gets the CA file removed.
    let mut term =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).context("listening for SIGTERM")?;
    let statements = iam_policy.as_ref().map(|p| p.statements.len());
    if let Some(policy) = iam_policy {
        running
            .iam()
            .enforce(Some(std::sync::Arc::new(lab::iam::Enforcer::new(policy))));
    }
    // Placed before the address is printed: a client may start as soon as it reads it.
    for placed in &regions {
        running.store().regions().set(&placed.bucket, &placed.region);
    }
    print_serve_banner(&running, &buckets, session_ttl);
    if let Some(n) = statements {
        println!("IAM: every request authorized against the {n} statement(s) of --iam-policy");
    }
    for placed in &regions {
        println!("bucket {}: in region {}", placed.bucket, placed.region);
    }
    running.faults().set_timing(lab::FaultTiming {
        stall_ms: args.stall_ms,
        late_first_byte_ms: args.late_first_byte_ms,
    });
    running.faults().set_all(faults).map_err(CliError::other)?;
    running
        .profiles()
        .set_list_delay(std::time::Duration::from_millis(args.list_delay_ms));
    if args.list_delay_ms > 0 {
        println!(
            "listing delay: {} ms before every ListObjectsV2 page",
            args.list_delay_ms
        );
    }
    set_tail(&running, &args.network);
    for f in faults {
        println!("bucket {}: fault {} at rate {}", f.bucket, f.spec.kind, f.spec.rate);
    }
    if !faults.is_empty() {
        println!("fault tally: GET {}{}", running.endpoint(), lab::FAULTS_PATH);
    }
    println!("{}", network_line(&running));
    use std::io::Write;
    std::io::stdout().flush().context("writing to stdout")?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    shut_down_and_print_tallies(running, args.tls).await;
    Ok(())
}

/// Stops the server, then prints what it counted: the faults injected, S3 Express sessions,
/// the network and, with `--tls`, the handshakes.
async fn shut_down_and_print_tallies(running: lab::RunningServer, tls: bool) {
    let tally = running.faults().tally();
    let sessions = running.sessions().tally();
    let network = running.network().tally();
    let handshakes = (
        running.tls_handshakes(),
        running.tls_handshakes_abandoned(),
        running.tls_handshakes_failed(),
    );
    running.shutdown().await;
    println!("s3sweep serve: faults injected: {}", tally.line());
    super::say!("s3sweep serve: S3 Express sessions: {}", sessions.line());
    super::say!("s3sweep serve: network: {}", network.line());
    if tls {
        eprintln!(
            "s3sweep serve: TLS handshakes: {} done, {} abandoned by the client (it closed mid-handshake), {} failed",
            handshakes.0, handshakes.1, handshakes.2
        );
    }
}

/// What `serve` prints once listening: the endpoint, the CA file with `--tls`, the
/// credentials, and each bucket's profile.
fn print_serve_banner(running: &lab::RunningServer, buckets: &[(String, LatencyProfile)], session_ttl: Duration) {
    println!("s3sweep serve: listening on {}", running.endpoint());
    if let Some(ca) = running.ca_file() {
        // `ca-file: ` then the path, alone on the line: what scripts read.
        println!("{}{}", lab::child::CA_FILE_PREFIX, ca.display());
        println!(
            "TLS: the lab's CA (made at start) is in the file above: trust it with --ca-file, AWS_CA_BUNDLE or boto3's verify="
        );
    }
    println!("credentials: access key {LOCAL_ACCESS_KEY}, secret key {LOCAL_SECRET_KEY} (path-style addressing, region us-east-1)");
    for (b, p) in buckets {
        let express = if is_directory_bucket(b) {
            format!(
                "; directory bucket: CreateSession, sessions of {} s",
                session_ttl.as_secs()
            )
        } else if *p == LatencyProfile::Express {
            // Cost follows the name (`*--x-s3`) or `prices.express_buckets`, not the
            // latency profile: say so where the two disagree.
            "; priced as S3 Standard (cost follows the name: NAME--ZONE--x-s3 or the request's prices.express_buckets for Express One Zone prices)".to_string()
        } else {
            String::new()
        };
        println!("bucket {b}: latency profile {p}{express}");
    }
}

/// The lab's limits from `serve`'s flags; a zero is a problem (it would refuse all).
fn serve_limits(args: &ServeArgs, problems: &mut Vec<String>) -> lab::LabLimits {
    let zero = [
        ("--header-read-timeout-ms", args.header_read_timeout_ms == 0),
        ("--max-connections", args.max_connections == 0),
        ("--max-object-bytes", args.max_object_bytes == 0),
        ("--max-store-bytes", args.max_store_bytes == 0),
    ];
    for (flag, _) in zero.iter().filter(|(_, is_zero)| *is_zero) {
        problems.push(format!("{flag}: must be more than 0"));
    }
    lab::LabLimits {
        header_read_timeout: std::time::Duration::from_millis(args.header_read_timeout_ms),
        max_connections: args.max_connections,
        store: lab::StoreLimits {
            max_object_bytes: args.max_object_bytes,
            max_store_bytes: args.max_store_bytes,
            ..lab::StoreLimits::default()
        },
    }
}

/// `--tail` (checked with the other network flags by `check_serve_args`) set on the
/// lab, and said when given.
fn set_tail(running: &lab::RunningServer, network: &super::lab_network::NetworkArgs) {
    running.profiles().set_tail(network.tail().ok().flatten());
    if network.tail.is_some() {
        println!("far tail of standard buckets: {}", running.profiles().tail());
    }
}

/// What the lab's network does, and where its tally is served.
fn network_line(running: &lab::RunningServer) -> String {
    let config = running.network().config();
    let nic = config.nic.map_or("no NIC (loopback's own speed)".to_string(), |n| {
        format!("NIC {}", n.describe())
    });
    let prefix = config.prefix_gets_per_s.map_or("no per-prefix rate".to_string(), |r| {
        format!("{r} GET/s per prefix partition, then 503 SlowDown")
    });
    let idle = config.idle_timeout.map_or("idle connections kept".to_string(), |t| {
        format!("idle connections closed after {} s", t.as_secs_f64())
    });
    format!(
        "network: {nic}; {prefix}; {idle}; tally: GET {}{}",
        running.endpoint(),
        lab::NETWORK_PATH
    )
}

pub(crate) async fn clean(args: CleanArgs) -> Result<(), CliError> {
    if !(1..=clean::MAX_BATCH).contains(&args.batch) {
        return Err(CliError::FlagRange {
            flag: "--batch",
            low: 1,
            high: clean::MAX_BATCH as u64,
            got: args.batch as u64,
        });
    }
    let _lock = clean::lock(&args.manifest).map_err(CliError::other)?;
    let manifest = clean::load_manifest(&args.manifest).map_err(|e| match e {
        clean::CleanError::Unmarked { .. } => CliError::other(e),
        source => CliError::Manifest { source },
    })?;
    let endpoint = clean::endpoint_for(&manifest, args.target.endpoint.as_deref()).map_err(CliError::other)?;
    let target = TargetArgs {
        endpoint,
        ..args.target.clone()
    };
    let client = target.client(&manifest.bucket).await?;
    let s3 = client.s3(RequestSettings::maintenance(Duration::from_secs(60)));
    let options = clean::CleanOptions {
        batch: args.batch,
        unconditional_deletes: args.unconditional_deletes,
    };
    let outcome = clean::clean_with(&s3, &manifest, &options).await;
    let removed: Vec<String> = outcome.deleted.iter().chain(&outcome.gone).cloned().collect();
    let (recorded, bucket) = (manifest.written.len(), manifest.bucket.clone());
    let left = clean::without(manifest, &removed);
    clean::write_manifest(&args.manifest, &left).map_err(CliError::other)?;
    // A clean-up stopped before deleting anything says so in its one error line.
    let quiet = outcome.deleted.is_empty() && outcome.stopped_by.is_some();
    if let Some(why) = &outcome.refused {
        return Err(CliError::DeletedNothing { why: why.to_string() });
    }
    for (key, why) in outcome.kept.iter().chain(&outcome.changed) {
        eprintln!("{}", super::shown(&format!("kept {key}: {why}")));
    }
    if !quiet {
        eprintln!(
            "deleted {} of the {} keys recorded in {} (bucket {}); {} already gone, {} kept (not provably s3sweep's), {} kept: changed since proven; {} left in the manifest",
            outcome.deleted.len(),
            recorded,
            args.manifest.display(),
            bucket,
            outcome.gone.len(),
            outcome.kept.len(),
            outcome.changed.len(),
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
        return Err(CliError::NotDeleted {
            failed: outcome.failed.len(),
            key: key.to_string(),
            why: why.to_string(),
        });
    }
    Ok(())
}

//! The s3sweep command line: `local` (the whole demo on the embedded server), `run`
//! (a sweep request against any endpoint or real AWS), `seed` (write test objects) and
//! `serve` (the embedded server alone), `report` (tables, Markdown, cost and plots of a
//! result file) and `compare` (two results side by side). Thin: parsing and printing only.

// mimalloc: the SDK allocates a lot per request; glibc malloc cost ~15% of client CPU.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use tokio::io::{AsyncBufReadExt, BufReader};

use s3sweep::client::{ClientOptions, CredentialSource, SweepClient};
use s3sweep::compare::{self, CompareOptions};
use s3sweep::cost::{self, CostOverrides};
use s3sweep::plot;
use s3sweep::progress::ProgressMode;
use s3sweep::report::{render_markdown, render_tables, SweepResult};
use s3sweep::request::{KeyTemplate, Plan, SweepRequest};
use s3sweep::seed::{seed, SeedSpec};
use s3sweep::server::{self, LatencyProfile, ServerConfig, LOCAL_ACCESS_KEY, LOCAL_SECRET_KEY};
use s3sweep::sweep::{self, SweepOptions};
use s3sweep::usage;

#[derive(Parser)]
#[command(
    name = "s3sweep",
    version,
    about = "How fast can many small S3 objects be read in parallel, and why does it stop getting faster?"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Worker threads of the async runtime that sends the requests (default: one per
    /// vCPU). `--runtime-threads 1` shows what a client serialised on one core does.
    #[arg(long, global = true)]
    runtime_threads: Option<usize>,
    /// Known network ceiling in MiB/s (measured or configured): configurations near it
    /// get the `bandwidth` verdict, and the model uses it. Default: unknown.
    #[arg(long, global = true)]
    bandwidth_mib_s: Option<f64>,
}

#[derive(Subcommand)]
enum Command {
    /// The demo: start the embedded S3 server with a Standard-like and an Express-like
    /// bucket, write the test objects, sweep both, print a table per bucket.
    Local(LocalArgs),
    /// Run a sweep request (the Lambda's event JSON) against an endpoint or real AWS;
    /// prints the result JSON on stdout and the tables on stderr.
    Run(RunArgs),
    /// Write test objects to a bucket, skipping keys that exist, and record the keys
    /// written in a manifest.
    Seed(SeedArgs),
    /// Run the embedded S3 server until interrupted.
    Serve(ServeArgs),
    /// Delete exactly the keys a seed manifest records (nothing else: no listing, no
    /// prefix or bucket deletes) and take them out of the manifest.
    Clean(CleanArgs),
    /// Read a result JSON (from `local --json`, `run` or the Lambda) and print its
    /// tables and cost, or Markdown, or draw its plot.
    Report(ReportArgs),
    /// Line up the configurations of two results (or two buckets of one) with ratios
    /// B/A, flagging differences beyond the runs' own spread.
    Compare(CompareArgs),
}

#[derive(Args)]
struct CleanArgs {
    /// The manifest `seed` wrote.
    #[arg(long)]
    manifest: PathBuf,
    /// Keys per DeleteObjects request (1 to 1000).
    #[arg(long, default_value_t = 1000)]
    batch: usize,
    #[command(flatten)]
    target: TargetArgs,
}

/// How results are shown.
#[derive(Args, Clone)]
struct OutputArgs {
    /// Draw the plot into this file (.svg or .png).
    #[arg(long, value_name = "FILE")]
    plot: Option<PathBuf>,
    /// Print the tables as Markdown, for pasting into issues.
    #[arg(long)]
    markdown: bool,
    /// No progress bars or per-configuration lines on stderr.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Args)]
struct ReportArgs {
    /// The result JSON.
    result: PathBuf,
    /// Draw the plot into this file (.svg or .png).
    #[arg(long, value_name = "FILE")]
    plot: Option<PathBuf>,
    /// Print the tables as Markdown.
    #[arg(long, conflicts_with = "json")]
    markdown: bool,
    /// Print the result document itself (validated, pretty-printed).
    #[arg(long)]
    json: bool,
    /// Lambda memory (MB) for the cost estimate, instead of the function's own (in
    /// Lambda) or `prices.lambda_memory_mb` of the request (elsewhere).
    #[arg(long, value_name = "MB")]
    lambda_memory_mb: Option<u32>,
    /// Name the cheapest configuration whose median wall time is within this many ms
    /// (instead of the request's `target_wall_ms`).
    #[arg(long, value_name = "MS")]
    target_wall_ms: Option<u64>,
}

#[derive(Args)]
struct CompareArgs {
    /// The baseline result JSON.
    a: PathBuf,
    /// The result compared with it (default: A again, to compare two of its buckets).
    b: Option<PathBuf>,
    /// The bucket of A to compare.
    #[arg(long)]
    bucket_a: Option<String>,
    /// The bucket of B to compare.
    #[arg(long)]
    bucket_b: Option<String>,
    /// Print the tables as Markdown.
    #[arg(long, conflicts_with = "json")]
    markdown: bool,
    /// Print the comparison as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct LocalArgs {
    /// Objects per bucket.
    #[arg(long, default_value_t = 1000)]
    objects: u32,
    /// Worker counts, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16,20,32,64,128,256")]
    workers: Vec<u32>,
    /// Object size in bytes.
    #[arg(long, default_value_t = 46_080)]
    size: u64,
    /// Most connections per endpoint (default: the largest worker count).
    #[arg(long)]
    pool: Option<u32>,
    /// Repetitions of each configuration.
    #[arg(long, default_value_t = 1)]
    repetitions: u32,
    /// Also write the result JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Run the server inside this process instead of a child process (its CPU then
    /// counts as client CPU).
    #[arg(long)]
    in_process: bool,
    /// Name the cheapest configuration within this wall time (ms) in the cost summary.
    #[arg(long, value_name = "MS")]
    target_wall_ms: Option<u64>,
    #[command(flatten)]
    output: OutputArgs,
}

#[derive(Args)]
struct RunArgs {
    /// The request: a JSON file in the Lambda's event format.
    #[arg(long)]
    event: PathBuf,
    #[command(flatten)]
    target: TargetArgs,
    /// Also write the result JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Skip the first-request check of each bucket.
    #[arg(long)]
    no_preflight: bool,
    #[command(flatten)]
    output: OutputArgs,
}

#[derive(Args)]
struct TargetArgs {
    /// S3 endpoint, e.g. http://127.0.0.1:9000 for `s3sweep serve`. Without it, AWS.
    #[arg(long)]
    endpoint: Option<String>,
    /// Region (default: from the AWS configuration, else us-east-1).
    #[arg(long)]
    region: Option<String>,
    /// With --endpoint: use the AWS credential chain instead of the embedded server's
    /// fixed credentials.
    #[arg(long)]
    aws_credentials: bool,
}

impl OutputArgs {
    /// Refuses a plot file name that cannot be written, before anything runs.
    fn check(&self) -> Result<()> {
        if let Some(path) = &self.plot {
            plot::format_of(path).with_context(|| format!("--plot {}", path.display()))?;
        }
        Ok(())
    }
}

impl TargetArgs {
    fn options(&self) -> ClientOptions {
        match &self.endpoint {
            Some(url) => ClientOptions {
                endpoint: Some(url.clone()),
                region: Some(self.region.clone().unwrap_or_else(|| "us-east-1".into())),
                credentials: if self.aws_credentials {
                    CredentialSource::Chain
                } else {
                    CredentialSource::Local
                },
            },
            None => ClientOptions {
                endpoint: None,
                region: self.region.clone(),
                credentials: CredentialSource::Chain,
            },
        }
    }
}

#[derive(Args)]
struct SeedArgs {
    /// Bucket to write to.
    #[arg(long)]
    bucket: String,
    /// Key template; `{i}` becomes 0..count.
    #[arg(long, default_value = "test/{i}/vectors")]
    key_template: String,
    /// Objects to write.
    #[arg(long, default_value_t = 1000)]
    count: u32,
    /// Object size in bytes.
    #[arg(long, default_value_t = 46_080)]
    size: u64,
    /// PUTs in flight.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Manifest file recording the keys written (default: s3sweep-manifest-BUCKET.json).
    #[arg(long)]
    manifest: Option<PathBuf>,
    /// Create the bucket first if it does not exist (embedded server or general purpose buckets).
    #[arg(long)]
    create_bucket: bool,
    #[command(flatten)]
    target: TargetArgs,
}

#[derive(Args)]
struct ServeArgs {
    /// Port on 127.0.0.1 (0: any free port; the chosen one is printed).
    #[arg(long, default_value_t = 9000)]
    port: u16,
    /// A bucket to create, with its latency profile (none, express, standard); repeatable.
    #[arg(long = "bucket", value_name = "NAME=PROFILE")]
    buckets: Vec<String>,
    /// Latency profile of buckets created later by clients.
    #[arg(long, default_value = "none")]
    default_profile: LatencyProfile,
    /// Seed of the latency draws.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Inject a fault into a bucket's GETs: BUCKET=KIND:RATE, KIND one of slow-down,
    /// internal-error, access-denied, reset-before-headers, reset-mid-body, stall-body,
    /// late-first-byte, truncated-body; RATE 0..1. Repeatable. The tally is served at
    /// GET /_s3sweep/faults and printed on exit.
    #[arg(long = "fault", value_name = "BUCKET=KIND:RATE")]
    faults: Vec<String>,
    /// How long a stall-body fault stalls, in ms.
    #[arg(long, default_value_t = 60_000)]
    stall_ms: u64,
    /// How late a late-first-byte fault answers, in ms.
    #[arg(long, default_value_t = 15_000)]
    late_first_byte_ms: u64,
}

fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()))
        .init();
    let cli = Cli::parse();
    // Many pooled connections need many descriptors: lift the soft limit to the hard one.
    let fd_limits = s3sweep::limits::raise_nofile();
    if let Some(from) = fd_limits.raised_from {
        tracing::debug!(from, to = fd_limits.soft, "raised the soft RLIMIT_NOFILE");
    }
    let mut problems = Vec::new();
    if cli.runtime_threads == Some(0) {
        problems.push("--runtime-threads: must be at least 1".to_string());
    }
    let thresholds = s3sweep::diagnose::Thresholds {
        bandwidth_ceiling_mib_per_s: cli.bandwidth_mib_s,
        ..Default::default()
    };
    if let Err(e) = thresholds.validate() {
        problems.push(format!("--bandwidth-mib-s: {e}"));
    }
    if !problems.is_empty() {
        bail!("{}", problems.join("; "));
    }
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = cli.runtime_threads {
        builder.worker_threads(n);
    }
    let runtime = builder.enable_all().build()?;
    runtime.block_on(async move {
        match cli.command {
            Command::Local(args) => local(args, thresholds).await,
            Command::Run(args) => run(args, thresholds).await,
            Command::Seed(args) => seed_cmd(args).await,
            Command::Serve(args) => serve(args).await,
            Command::Clean(args) => clean_cmd(args).await,
            Command::Report(args) => report(args),
            Command::Compare(args) => compare_cmd(args),
        }
    })
}

/// The tables and the cost, for people (or as Markdown).
fn human(result: &SweepResult, markdown: bool, overrides: CostOverrides) -> String {
    let preset = if markdown {
        comfy_table::presets::ASCII_MARKDOWN
    } else {
        comfy_table::presets::UTF8_FULL_CONDENSED
    };
    let tables = if markdown {
        render_markdown(result)
    } else {
        render_tables(result)
    };
    format!(
        "{tables}{}",
        cost::render_cost(&cost::cost_report(result, overrides), preset)
    )
}

fn write_plot(result: &SweepResult, path: &Path) -> Result<()> {
    plot::render_file(result, path).with_context(|| format!("writing the plot {}", path.display()))?;
    eprintln!("plot written to {}", path.display());
    Ok(())
}

fn read_result(path: &Path) -> Result<SweepResult> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    compare::parse_result(&text).with_context(|| format!("reading {}", path.display()))
}

fn report(args: ReportArgs) -> Result<()> {
    let result = read_result(&args.result)?;
    if let Some(m) = args.lambda_memory_mb {
        if !cost::LAMBDA_MEMORY_MB.contains(&m) {
            bail!("--lambda-memory-mb: must be between 128 and 10240, got {m}");
        }
    }
    if args.target_wall_ms == Some(0) {
        bail!("--target-wall-ms: must be at least 1");
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&result)?);
    } else {
        let bullet = if args.markdown { "- " } else { "" };
        println!("{bullet}{}: {}\n", args.result.display(), compare::environment(&result));
        print!(
            "{}",
            human(
                &result,
                args.markdown,
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

fn compare_cmd(args: CompareArgs) -> Result<()> {
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
    )?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&comparison)?);
    } else {
        let preset = if args.markdown {
            comfy_table::presets::ASCII_MARKDOWN
        } else {
            comfy_table::presets::UTF8_FULL_CONDENSED
        };
        print!("{}", compare::render(&comparison, preset));
    }
    Ok(())
}

fn write_json(path: &Path, result: &SweepResult) -> Result<()> {
    let text = serde_json::to_string_pretty(result)?;
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

async fn local(args: LocalArgs, thresholds: s3sweep::diagnose::Thresholds) -> Result<()> {
    args.output.check()?;
    let buckets = vec![
        ("standard-like".to_string(), LatencyProfile::Standard),
        ("express-like".to_string(), LatencyProfile::Express),
    ];
    let max_workers = args.workers.iter().copied().max().unwrap_or(1);
    let mut request = SweepRequest::new(buckets.iter().map(|(b, _)| b.clone()).collect());
    request.object_count = args.objects;
    request.workers = args.workers.clone();
    request.pool_connections = args.pool.unwrap_or(max_workers);
    request.repetitions = args.repetitions;
    request.target_wall_ms = args.target_wall_ms;
    // The Express-like bucket is priced as S3 Express One Zone.
    request.prices.express_buckets = vec!["express-like".to_string()];
    let plan = Plan::from_request(request).map_err(|e| anyhow::anyhow!("{e}"))?;
    s3sweep::limits::check_budget(
        &s3sweep::limits::nofile(),
        plan.pool_connections(),
        plan.buckets().len(),
        args.in_process,
    )?;

    // The server runs in a child process by default so its CPU is not counted as the
    // client's.
    let server = if args.in_process {
        let running = server::start(ServerConfig {
            buckets: buckets.clone(),
            ..ServerConfig::default()
        })
        .await?;
        LocalServer::InProcess(running)
    } else {
        LocalServer::spawn(&buckets).await?
    };
    let endpoint = server.endpoint();
    eprintln!("embedded S3 server at {endpoint} ({})", server.describe());

    let client = SweepClient::new(ClientOptions::local(&endpoint)).await?;
    let seed_started = Instant::now();
    for (bucket, _) in &buckets {
        let s3 = client.s3(s3sweep::client::RequestSettings::maintenance(Duration::from_secs(30)));
        seed(
            &s3,
            Some(&endpoint),
            &SeedSpec {
                bucket: bucket.clone(),
                keys: KeyTemplate::parse(&plan.keys().as_template(), plan.object_count())
                    .map_err(anyhow::Error::msg)?,
                object_count: plan.object_count(),
                object_size_bytes: args.size,
                concurrency: 64,
                skip_existing: false,
            },
        )
        .await?;
    }
    eprintln!(
        "wrote {} objects of {} bytes to each bucket in {} ms; sweeping workers {:?} (pool {} connections)",
        plan.object_count(),
        args.size,
        seed_started.elapsed().as_millis(),
        plan.workers(),
        plan.pool_connections()
    );
    let server_cpu_before = server.cpu_time();
    let requests_before = client.transport().counters().requests_sent;
    let result = sweep::run(
        &client,
        &plan,
        &SweepOptions {
            runner: "local".into(),
            thresholds,
            ..SweepOptions::default()
        },
        ProgressMode::for_stderr(args.output.quiet).observer(),
    )
    .await;
    let requests = client.transport().counters().requests_sent - requests_before;
    let server_cpu = match (server_cpu_before, server.cpu_time()) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    println!();
    print!("{}", human(&result, args.output.markdown, CostOverrides::default()));
    if let Some(cpu) = server_cpu {
        println!(
            "embedded server CPU: {:.3} ms per GET ({} GETs incl. warm-up); client peak RSS {} MiB",
            cpu.as_secs_f64() * 1000.0 / requests.max(1) as f64,
            requests,
            usage::peak_rss_bytes() >> 20
        );
    }
    if let Some(path) = &args.json {
        write_json(path, &result)?;
        eprintln!("result JSON written to {}", path.display());
    }
    if let Some(path) = &args.output.plot {
        write_plot(&result, path)?;
    }
    server.stop().await;
    Ok(())
}

enum LocalServer {
    InProcess(server::RunningServer),
    Child {
        child: tokio::process::Child,
        endpoint: String,
    },
}

impl LocalServer {
    async fn spawn(buckets: &[(String, LatencyProfile)]) -> Result<Self> {
        let exe = std::env::current_exe().context("finding the s3sweep executable")?;
        let mut cmd = tokio::process::Command::new(exe);
        cmd.arg("serve").arg("--port").arg("0");
        for (b, p) in buckets {
            cmd.arg("--bucket").arg(format!("{b}={p}"));
        }
        cmd.stdout(Stdio::piped()).stderr(Stdio::inherit()).stdin(Stdio::null());
        cmd.kill_on_drop(true);
        // SAFETY: prctl in the child before exec only sets its parent-death signal.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut child = cmd.spawn().context("starting the embedded server")?;
        let stdout = child.stdout.take().context("server stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let endpoint = tokio::time::timeout(Duration::from_secs(30), async {
            while let Some(line) = lines.next_line().await? {
                if let Some(url) = line.split_whitespace().find(|w| w.starts_with("http://")) {
                    return Ok::<_, std::io::Error>(Some(url.to_string()));
                }
            }
            Ok(None)
        })
        .await
        .context("the embedded server did not start within 30 s")??
        .context("the embedded server exited before printing its address")?;
        // Keep draining its stdout so it never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(LocalServer::Child { child, endpoint })
    }

    fn endpoint(&self) -> String {
        match self {
            LocalServer::InProcess(s) => s.endpoint(),
            LocalServer::Child { endpoint, .. } => endpoint.clone(),
        }
    }

    fn describe(&self) -> String {
        match self {
            LocalServer::InProcess(_) => "in this process".into(),
            LocalServer::Child { child, .. } => format!("child process {}", child.id().unwrap_or(0)),
        }
    }

    fn cpu_time(&self) -> Option<Duration> {
        match self {
            LocalServer::InProcess(_) => None,
            LocalServer::Child { child, .. } => child.id().and_then(usage::child_cpu_time),
        }
    }

    async fn stop(self) {
        match self {
            LocalServer::InProcess(s) => s.shutdown().await,
            LocalServer::Child { mut child, .. } => {
                let _ = child.kill().await;
            }
        }
    }
}

async fn run(args: RunArgs, thresholds: s3sweep::diagnose::Thresholds) -> Result<()> {
    args.output.check()?;
    let text = std::fs::read_to_string(&args.event).with_context(|| format!("reading {}", args.event.display()))?;
    let plan = Plan::from_json(&text).map_err(|e| anyhow::anyhow!("{}: {e}", args.event.display()))?;
    if plan.fanout().is_some() {
        anyhow::bail!(
            "{}: `fanout` needs the Lambda function, which invokes itself N times (README \"Fan-out\"); remove the field for a sweep from this machine",
            args.event.display()
        );
    }
    s3sweep::limits::check_budget(
        &s3sweep::limits::nofile(),
        plan.pool_connections(),
        plan.buckets().len(),
        false,
    )?;
    let client = SweepClient::new(args.target.options()).await?;
    if !args.no_preflight {
        sweep::preflight(&client, &plan)
            .await
            .map_err(|e| anyhow::anyhow!("{}: {e}", e.error_type()))?;
    }
    eprintln!(
        "sweeping {} bucket(s), workers {:?}, {} objects each, {} requests in all",
        plan.buckets().len(),
        plan.workers(),
        plan.object_count(),
        plan.total_requests()
    );
    let result = sweep::run(
        &client,
        &plan,
        &SweepOptions {
            runner: "cli".into(),
            thresholds,
            ..SweepOptions::default()
        },
        ProgressMode::for_stderr(args.output.quiet).observer(),
    )
    .await;
    if !args.output.quiet {
        eprint!("\n{}", human(&result, args.output.markdown, CostOverrides::default()));
    }
    println!("{}", serde_json::to_string_pretty(&result)?);
    if let Some(path) = &args.json {
        write_json(path, &result)?;
    }
    if let Some(path) = &args.output.plot {
        write_plot(&result, path)?;
    }
    Ok(())
}

async fn seed_cmd(args: SeedArgs) -> Result<()> {
    if let Err(msg) = s3sweep::request::check_bucket_name(&args.bucket) {
        bail!("--bucket: {msg}");
    }
    let keys = KeyTemplate::parse(&args.key_template, args.count.max(1) - 1)
        .map_err(|m| anyhow::anyhow!("--key-template: {m}"))?;
    if args.count == 0 {
        bail!("--count: must be at least 1");
    }
    let client = SweepClient::new(args.target.options()).await?;
    let s3 = client.s3(s3sweep::client::RequestSettings::maintenance(Duration::from_secs(60)));
    if args.create_bucket {
        match s3.create_bucket().bucket(&args.bucket).send().await {
            Ok(_) => eprintln!("created bucket {}", args.bucket),
            Err(e) => {
                let code = e
                    .as_service_error()
                    .and_then(aws_sdk_s3::error::ProvideErrorMetadata::code);
                if !matches!(code, Some("BucketAlreadyOwnedByYou")) {
                    bail!(
                        "creating bucket {}: {}",
                        args.bucket,
                        aws_sdk_s3::error::DisplayErrorContext(&e)
                    );
                }
            }
        }
    }
    let started = Instant::now();
    let manifest = seed(
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
    .await?;
    let path = args
        .manifest
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("s3sweep-manifest-{}.json", args.bucket)));
    manifest.save(&path)?;
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

async fn serve(args: ServeArgs) -> Result<()> {
    let mut buckets = Vec::new();
    let mut problems = Vec::new();
    for spec in &args.buckets {
        let (name, profile) = spec.split_once('=').unwrap_or((spec.as_str(), "none"));
        match (
            s3sweep::request::check_bucket_name(name),
            profile.parse::<LatencyProfile>(),
        ) {
            (Ok(()), Ok(p)) => buckets.push((name.to_string(), p)),
            (Err(m), _) | (_, Err(m)) => problems.push(format!("--bucket {spec}: {m}")),
        }
    }
    let mut faults = Vec::new();
    for spec in &args.faults {
        match spec.parse::<server::BucketFault>() {
            Ok(f) => faults.push(f),
            Err(m) => problems.push(format!("--fault {m}")),
        }
    }
    // Rates of one bucket must not add up to more than 1, and no kind twice.
    if let Err(e) = server::Faults::new(0).set_all(&faults) {
        problems.push(format!("--fault: {e}"));
    }
    if !problems.is_empty() {
        bail!("{}", problems.join("; "));
    }
    let running = server::start(ServerConfig {
        addr: std::net::SocketAddr::from(([127, 0, 0, 1], args.port)),
        buckets: buckets.clone(),
        default_profile: args.default_profile,
        seed: args.seed,
    })
    .await
    .with_context(|| format!("binding 127.0.0.1:{}", args.port))?;
    println!("s3sweep serve: listening on {}", running.endpoint());
    println!("credentials: access key {LOCAL_ACCESS_KEY}, secret key {LOCAL_SECRET_KEY} (path-style addressing, region us-east-1)");
    for (b, p) in &buckets {
        println!("bucket {b}: latency profile {p}");
    }
    running.faults().set_timing(server::FaultTiming {
        stall_ms: args.stall_ms,
        late_first_byte_ms: args.late_first_byte_ms,
    });
    running.faults().set_all(&faults)?;
    for f in &faults {
        println!("bucket {}: fault {} at rate {}", f.bucket, f.spec.kind, f.spec.rate);
    }
    if !faults.is_empty() {
        println!("fault tally: GET {}{}", running.endpoint(), server::FAULTS_PATH);
    }
    use std::io::Write;
    std::io::stdout().flush()?;
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    let tally = running.faults().tally();
    running.shutdown().await;
    println!("s3sweep serve: faults injected: {}", tally.line());
    eprintln!("s3sweep serve: faults injected: {}", tally.line());
    Ok(())
}

async fn clean_cmd(args: CleanArgs) -> Result<()> {
    use s3sweep::clean;
    if !(1..=clean::MAX_BATCH).contains(&args.batch) {
        bail!(
            "--batch: must be between 1 and {}, got {}",
            clean::MAX_BATCH,
            args.batch
        );
    }
    let manifest = clean::load_manifest(&args.manifest)?;
    let endpoint = clean::endpoint_for(&manifest, args.target.endpoint.as_deref())?;
    let target = TargetArgs {
        endpoint,
        region: args.target.region.clone(),
        aws_credentials: args.target.aws_credentials,
    };
    let client = SweepClient::new(target.options()).await?;
    let s3 = client.s3(s3sweep::client::RequestSettings::maintenance(Duration::from_secs(60)));
    let outcome = clean::clean(&s3, &manifest, args.batch).await;
    let left = clean::without(&manifest, &outcome.deleted);
    clean::write_manifest(&args.manifest, &left)?;
    eprintln!(
        "deleted {} of the {} keys recorded in {} (bucket {}); {} left in the manifest",
        outcome.deleted.len(),
        manifest.written.len(),
        args.manifest.display(),
        manifest.bucket,
        left.written.len()
    );
    if let Some((key, why)) = outcome.failed.first() {
        bail!(
            "{} key(s) could not be deleted and stay in the manifest; first: {key}: {why}",
            outcome.failed.len()
        );
    }
    Ok(())
}

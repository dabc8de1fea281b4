//! The command line's arguments (clap): the global flags, the commands and their
//! flags, each documented where `--help` shows it.

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

use clap::{ArgAction, Args, Parser, Subcommand, ValueEnum};

use crate::engine::requests_log::RequestsLog;
use crate::engine::Observer;
use crate::lab::{FaultKind, LatencyProfile};
use crate::plan::check_bucket_name;
use crate::render::plot;
use crate::render::progress::ProgressMode;

use super::lab_network::NetworkArgs;
pub(crate) use super::sweep_args::{QuotaArgs, QuotaStep};
use super::sweep_args::{RunFieldArgs, SweepArgs};
use super::CliError;

#[derive(Parser)]
#[command(
    name = "s3sweep",
    version,
    about = "How fast can many small S3 objects be read in parallel, and why does it stop getting faster?"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Worker threads of the async runtime that sends the requests (default: one per
    /// vCPU). `--runtime-threads 1` shows what a client serialised on one core does.
    #[arg(long, global = true)]
    pub runtime_threads: Option<usize>,
    /// More detail on stderr: -v logs s3sweep's debug lines (the SDK's full error for
    /// each failed call), -vv everything at debug, -vvv trace. RUST_LOG, when set,
    /// wins.
    #[arg(long, short, global = true, action = ArgAction::Count)]
    pub verbose: u8,
}

#[derive(Subcommand)]
pub enum Command {
    /// The demo: start the embedded S3 server with a Standard-like and an Express-like
    /// bucket, write the test objects, sweep both, print a table per bucket.
    Local(LocalArgs),
    /// Run a sweep against an endpoint or real AWS, built from flags (--bucket,
    /// --workers, ...) or read from the Lambda's event JSON (--event); prints the
    /// result JSON on stdout and the tables on stderr.
    Run(RunArgs),
    /// Write test objects to a bucket, skipping keys that exist, and record the keys
    /// written in a manifest.
    Seed(SeedArgs),
    /// Run the embedded S3 server until interrupted.
    Serve(ServeArgs),
    /// Delete exactly the keys a seed manifest records (nothing else: no listing, no
    /// prefix or bucket deletes) and take them out of the manifest.
    Clean(CleanArgs),
    /// Look at the buckets an event names before deploying: each exists, is in the
    /// stack's region (--region), holds the event's objects, and a directory bucket is
    /// in the subnets' zone; one line per problem with its fix.
    Preflight(PreflightArgs),
    /// Read a result JSON (from `local --json`, `run` or the Lambda) and print its
    /// tables and cost, or Markdown, or draw its plot.
    Report(ReportArgs),
    /// Line up the configurations of two results (or two buckets of one) with ratios
    /// B/A, flagging differences beyond the runs' own spread.
    Compare(CompareArgs),
    /// The newest results under a directory or s3://bucket/prefix/ as trends per
    /// configuration, flagging changes beyond the runs' own spread.
    History(HistoryArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) on stdout.
    Completions(CompletionsArgs),
    /// Print the manual page (roff) on stdout: `s3sweep man | man -l -`.
    Man(ManArgs),
}

#[derive(Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    pub shell: clap_complete::Shell,
}

#[derive(Args)]
pub struct ManArgs {
    /// A command's own page (`s3sweep man run`) instead of the overview.
    pub command: Option<String>,
}

#[derive(Args)]
pub struct PreflightArgs {
    /// An event (the function's JSON) whose buckets and objects to look at; repeatable.
    #[arg(long = "event", value_name = "FILE")]
    pub events: Vec<PathBuf>,
    /// A bucket to look at without an event (exists, region, zone); repeatable.
    #[arg(long = "bucket", value_name = "NAME")]
    pub buckets: Vec<String>,
    /// The zone ids of the function's subnets (template SubnetZoneIds, e.g.
    /// use1-az4,use1-az6): a directory bucket must be in one of them.
    #[arg(long, value_delimiter = ',', value_name = "ZONE,...")]
    pub subnet_zone_ids: Vec<String>,
    /// The function's subnets (template SubnetIds): EC2 is asked their zones (each must
    /// be a directory bucket's zone) and their VPC's endpoints (S3, S3 Express, Lambda).
    #[arg(long, value_delimiter = ',', value_name = "SUBNET,...")]
    pub subnet_ids: Vec<String>,
    /// The results destination (template ResultsBucket/ResultsPrefix): the bucket
    /// exists, is in the region, and takes a test write under the prefix (removed).
    #[arg(long, value_name = "s3://BUCKET/PREFIX")]
    pub results_uri: Option<String>,
    /// The stack's region is `--region` (default: the AWS configuration's).
    #[command(flatten)]
    pub target: TargetArgs,
}

#[derive(Args)]
pub struct CleanArgs {
    /// The manifest `seed` wrote.
    #[arg(long)]
    pub manifest: PathBuf,
    /// Keys per DeleteObjects request (1 to 1000).
    #[arg(long, default_value_t = 1000, value_parser = super::counts::count_usize)]
    pub batch: usize,
    /// Delete without the ETag condition when the store ignores it (found with a probe
    /// key first; without this flag such a store is refused). An object a user writes
    /// at a seeded key between its check and its delete is then deleted.
    #[arg(long)]
    pub unconditional_deletes: bool,
    #[command(flatten)]
    pub target: TargetArgs,
}

/// How results are shown.
#[derive(Args, Clone)]
pub struct OutputArgs {
    /// Draw the plot into this file (.svg or .png).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Print the tables as Markdown, for pasting into issues.
    #[arg(long)]
    pub markdown: bool,
    /// Every column of the result tables and no line wrapping (by default the tables
    /// and the lines under them fit COLUMNS, else the terminal, else 100 characters).
    #[arg(long)]
    pub wide: bool,
    /// The result tables' columns, comma-separated (e.g. `workers,wall_ms,verdict`).
    #[arg(long, value_name = "NAMES")]
    pub columns: Option<String>,
    /// Write one line per GET attempt to this file: `.csv` or `.jsonl`, gzipped when
    /// it ends in `.gz` (docs/timeline.md).
    #[arg(long, value_name = "FILE")]
    pub requests_log: Option<PathBuf>,
    /// Most MiB of lines the request log takes (before compression); lines past it are
    /// dropped and counted.
    #[arg(long, value_name = "MIB", default_value_t = 256, value_parser = super::counts::mib)]
    pub requests_log_max_mib: u64,
    /// Replace a file already at --requests-log (by default it is refused).
    #[arg(long)]
    pub force: bool,
    /// No progress bars or per-configuration lines on stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Args)]
pub struct ReportArgs {
    /// The result JSON: a file, or an S3 object (`s3://bucket/key`, read through
    /// --endpoint and the other target flags).
    pub result: PathBuf,
    /// Draw the plot into this file (.svg or .png).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Print the tables as Markdown.
    #[arg(long, conflicts_with = "json")]
    pub markdown: bool,
    /// Every column of the result tables and no line wrapping (by default the tables
    /// and the lines under them fit COLUMNS, else the terminal, else 100 characters).
    #[arg(long, conflicts_with = "json")]
    pub wide: bool,
    /// The result tables' columns, comma-separated (e.g. `workers,wall_ms,verdict`).
    #[arg(long, value_name = "NAMES", conflicts_with = "json")]
    pub columns: Option<String>,
    /// With --plot: draw the timeline of one worker count (every bucket), or `all`
    /// (a small panel per worker count), instead of the curves.
    #[arg(long, value_name = "WORKERS|all", requires = "plot")]
    pub timeline: Option<crate::render::timeline_plot::TimelinePick>,
    /// Print the result document itself (validated, pretty-printed).
    #[arg(long)]
    pub json: bool,
    /// Also write one self-contained HTML page (summary, plot, every table and note;
    /// nothing fetched) to share: docs/sharing.md.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Lambda memory (MB) for the cost estimate, instead of the function's own (in
    /// Lambda) or `prices.lambda_memory_mb` of the request (elsewhere).
    #[arg(long, value_name = "MB", value_parser = super::counts::memory_mb)]
    pub lambda_memory_mb: Option<u32>,
    /// Name the cheapest configuration whose median wall time is within this many ms
    /// (instead of the request's `target_wall_ms`).
    #[arg(long, value_name = "MS", value_parser = super::counts::ms)]
    pub target_wall_ms: Option<u64>,
    /// Where an `s3://` result is read from.
    #[command(flatten)]
    pub target: TargetArgs,
}

#[derive(Args)]
pub struct CompareArgs {
    /// The baseline result JSON: a file or `s3://bucket/key`.
    pub a: PathBuf,
    /// The result compared with it (default: A again, to compare two of its buckets);
    /// a file or `s3://bucket/key`.
    pub b: Option<PathBuf>,
    /// The bucket of A to compare.
    #[arg(long)]
    pub bucket_a: Option<String>,
    /// The bucket of B to compare.
    #[arg(long)]
    pub bucket_b: Option<String>,
    /// Print the tables as Markdown.
    #[arg(long, conflicts_with = "json")]
    pub markdown: bool,
    /// Print the comparison as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also write the comparison as one self-contained HTML page.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Where `s3://` results are read from.
    #[command(flatten)]
    pub target: TargetArgs,
}

#[derive(Args)]
pub struct HistoryArgs {
    /// A directory (walked for `*.json`) or `s3://bucket/prefix/` (read through the target flags).
    pub source: String,
    /// Read the newest N results (by name: the canary's keys are dated), 1 to 5000.
    #[arg(long, default_value_t = 200, value_name = "N", value_parser = super::counts::count_usize)]
    pub limit: usize,
    /// Read at most this many MiB in all (each result at most 64 MiB); the oldest are left out past it.
    #[arg(long, default_value_t = 256, value_name = "MIB")]
    pub max_total_mib: u64,
    /// Print the tables as Markdown.
    #[arg(long, conflicts_with = "json")]
    pub markdown: bool,
    /// Print the history (series, runs, change points) as JSON.
    #[arg(long)]
    pub json: bool,
    /// Draw the trend plot (objects/s per run, changes marked) into this .svg file.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Also write one self-contained HTML page (summary, trend plot, every table).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Where an `s3://` source is read from.
    #[command(flatten)]
    pub target: TargetArgs,
}

#[derive(Args)]
#[command(
    mut_arg("object_count", |a| a.default_value("1024")),
    mut_arg("workers", |a| a.default_value("1,2,4,8,16,20,32,64,128")),
    mut_arg("repetitions", |a| a.default_value("1"))
)]
pub struct LocalArgs {
    /// The sweep's flags, shared with `run` (`--objects` defaults to 1024 here: 8 per
    /// worker at the largest default count, so its figures are not the tail's).
    #[command(flatten)]
    pub sweep: SweepArgs,
    /// Object size in bytes.
    #[arg(long, default_value_t = 46_080, conflicts_with = "object_sizes_bytes", value_parser = super::counts::bytes)]
    pub size: u64,
    /// Mixed sizes, bytes, cycled over the objects (object i gets the (i mod n)-th),
    /// e.g. `--sizes 1000,46080,200000`. Replaces --size.
    #[arg(long, value_delimiter = ',', value_name = "BYTES,...", conflicts_with_all = ["size", "object_sizes_bytes"], value_parser = super::counts::bytes)]
    pub sizes: Vec<u64>,
    /// Also write the result JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Run the server inside this process instead of a child process (its CPU then
    /// counts as client CPU).
    #[arg(long)]
    pub in_process: bool,
    /// Serve and read over HTTPS: the lab makes a CA and a certificate at start and the
    /// client trusts that CA (`make demo` passes it).
    #[arg(long)]
    pub tls: bool,
    /// How long the lab's S3 Express sessions last, in seconds (S3: 300).
    #[arg(long, value_name = "S", default_value_t = 300, value_parser = super::counts::seconds)]
    pub session_ttl_s: u64,
    /// The lab's network (a NIC, S3's per-prefix rate and idle timeout).
    #[command(flatten)]
    pub network: NetworkArgs,
    #[command(flatten)]
    pub quota: QuotaArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Args)]
pub struct RunArgs {
    /// The request as a JSON file in the Lambda's event format. The flags below, when
    /// given too, replace the file's fields.
    #[arg(long, value_name = "FILE")]
    pub event: Option<PathBuf>,
    /// The request flags only `run` has (buckets, keys, results).
    #[command(flatten)]
    pub fields: RunFieldArgs,
    /// The sweep's flags, shared with `local`.
    #[command(flatten)]
    pub sweep: SweepArgs,
    /// Print the request as JSON (the event the Lambda takes, every default filled in)
    /// and exit without sweeping.
    #[arg(long)]
    pub print_event: bool,
    #[command(flatten)]
    pub target: TargetArgs,
    /// Also write the result JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Skip the first-request check of each bucket.
    #[arg(long)]
    pub no_preflight: bool,
    #[command(flatten)]
    pub quota: QuotaArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Which keys sign the requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum Credentials {
    /// The lab's fixed keys when the endpoint is the embedded server (it answers
    /// GET /_s3sweep/hello), the standard AWS chain otherwise.
    #[default]
    Auto,
    /// The embedded server's fixed keys, without asking.
    Lab,
    /// The standard AWS chain (environment, profile, SSO, role), without asking.
    Chain,
}

/// `--endpoint` without the URL's user and password.
fn endpoint_arg(url: &str) -> Result<String, String> {
    Ok(crate::sys::redact::without_userinfo(url))
}

#[derive(Args, Clone)]
pub struct TargetArgs {
    /// S3 endpoint, e.g. http://127.0.0.1:9000 for `s3sweep serve`. Without it, AWS;
    /// for `clean`, the endpoint the manifest records (given, it must be that one).
    /// A user or password in the URL is dropped (S3 requests are signed with keys), so
    /// it is never printed, logged or recorded.
    #[arg(long, value_parser = endpoint_arg)]
    pub endpoint: Option<String>,
    /// Region (default: from the AWS configuration, else us-east-1).
    #[arg(long)]
    pub region: Option<String>,
    /// Which keys sign the requests: `auto` asks the endpoint whether it is the
    /// embedded server (its keys then, the AWS chain otherwise); `lab` or `chain`
    /// force one.
    #[arg(long, value_enum, default_value_t = Credentials::Auto)]
    pub credentials: Credentials,
    /// Deprecated: the same as `--credentials chain`.
    #[arg(long, hide = true, conflicts_with = "credentials")]
    pub aws_credentials: bool,
    /// A PEM file of CA certificates to trust besides the built-in (webpki) roots: the
    /// CA `s3sweep serve --tls` wrote, an S3-compatible store's or a proxy's. Default:
    /// the AWS_CA_BUNDLE environment variable, if set.
    #[arg(long, value_name = "FILE")]
    pub ca_file: Option<PathBuf>,
}

impl OutputArgs {
    /// Refuses a plot file name that cannot be written, or unknown `--columns`,
    /// before anything runs.
    pub fn check(&self) -> Result<(), CliError> {
        if let Some(path) = &self.plot {
            plot::format_of(path).map_err(|e| CliError::flag(format!("--plot {}", path.display()), e))?;
        }
        if let Some(path) = &self.requests_log {
            crate::engine::requests_log::check_free(path, self.force)?;
        }
        self.layout().map(|_| ())
    }

    /// What is told about the sweep's progress: the progress bars or lines, through
    /// the request log when `--requests-log` names one (also returned, to finish).
    pub(crate) fn observer(&self) -> Result<Told, CliError> {
        let progress = ProgressMode::for_stderr(self.quiet).observer(super::terminal_width_chars());
        let Some(path) = &self.requests_log else {
            return Ok((progress, None));
        };
        let max_bytes = self.requests_log_max_mib.saturating_mul(1 << 20);
        let log = RequestsLog::create(path, max_bytes, progress, self.force)?;
        let log = Arc::new(log);
        Ok((log.clone(), Some(log)))
    }

    /// How the tables are laid out: `--markdown`, `--wide`, `--columns`.
    pub(crate) fn layout(&self) -> Result<crate::render::Layout, CliError> {
        super::layout(self.markdown, self.wide, self.columns.as_deref())
    }
}

/// The observer a sweep tells, and the request log inside it (to finish), if any.
pub(crate) type Told = (Arc<dyn Observer>, Option<Arc<RequestsLog>>);

/// The environment variable the AWS CLI and SDKs read a CA bundle from.
pub(crate) const CA_BUNDLE_ENV: &str = "AWS_CA_BUNDLE";

/// `--ca-file` if given, else `AWS_CA_BUNDLE` if set and not empty.
pub(crate) fn ca_file_or_env(flag: Option<&PathBuf>) -> Option<PathBuf> {
    flag.cloned().or_else(|| {
        std::env::var_os(CA_BUNDLE_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    })
}

#[derive(Args)]
pub struct SeedArgs {
    /// Bucket to write to.
    #[arg(long)]
    pub bucket: String,
    /// Key template; `{i}` becomes 0..count.
    #[arg(long, default_value = "test/{i}/vectors")]
    pub key_template: String,
    /// Objects to write.
    #[arg(long, default_value_t = 1000, value_parser = super::counts::count)]
    pub count: u32,
    /// Object size in bytes.
    #[arg(long, default_value_t = 46_080, value_parser = super::counts::bytes)]
    pub size: u64,
    /// Mixed sizes, bytes, cycled over the objects (object i gets the (i mod n)-th),
    /// e.g. `--sizes 1000,46080,200000`; recorded in the manifest. Replaces --size.
    #[arg(long, value_delimiter = ',', value_name = "BYTES,...", conflicts_with = "size", value_parser = super::counts::bytes)]
    pub sizes: Vec<u64>,
    /// A size axis: --count objects of each size, size S under its own prefix
    /// (`s{S}/` + the key template, what `run --object-sizes` reads), all recorded in
    /// the one manifest, e.g. `--object-sizes 4096,46080,1048576`. Not with --size or
    /// --sizes.
    #[arg(long, value_delimiter = ',', value_name = "BYTES,...", conflicts_with_all = ["size", "sizes"], value_parser = super::counts::bytes)]
    pub object_sizes: Vec<u64>,
    /// PUTs in flight.
    #[arg(long, default_value_t = 64, value_parser = super::counts::seed_concurrency)]
    pub concurrency: usize,
    /// Manifest file recording the keys written (default: s3sweep-manifest-BUCKET.json).
    #[arg(long)]
    pub manifest: Option<PathBuf>,
    /// Create the bucket first if it does not exist (embedded server or general purpose buckets).
    #[arg(long)]
    pub create_bucket: bool,
    /// Also write the bandwidth probe's object of this many MiB (1 to 1024; 64 is
    /// plenty) at --probe-key, recorded in the manifest: `run --probe-bandwidth` reads
    /// it in large ranges.
    #[arg(long, value_name = "MIB", value_parser = super::counts::mib)]
    pub probe_object_mib: Option<u64>,
    /// The probe object's key (request `probe_key`).
    #[arg(long, default_value = crate::model::request::DEFAULT_PROBE_KEY)]
    pub probe_key: String,
    #[command(flatten)]
    pub target: TargetArgs,
}

#[derive(Args)]
pub struct ServeArgs {
    /// Port on 127.0.0.1 (0: any free port; the chosen one is printed).
    #[arg(long, default_value_t = 9000)]
    pub port: u16,
    /// A bucket to create, with its latency profile (none, express, standard); repeatable.
    /// Without `=PROFILE`: none. The profile sets latency only: cost follows the name
    /// (`NAME--ZONE--x-s3`, a directory bucket, is priced as Express One Zone; other
    /// names as Standard unless listed in the request's `prices.express_buckets`).
    // Parsed into `ServeBucket`s by `serve`, so that each bad one is named.
    #[arg(long = "bucket", value_name = "NAME=PROFILE")]
    pub buckets: Vec<String>,
    /// Place a bucket in another region than the lab's (us-east-1): HeadBucket names
    /// it, and answers a request signed for another region 301 PermanentRedirect, as
    /// S3 does; repeatable.
    // Parsed into `BucketRegion`s by `serve`, so that each bad one is named.
    #[arg(long = "bucket-region", value_name = "NAME=REGION")]
    pub bucket_regions: Vec<String>,
    /// Latency profile of buckets created later by clients.
    #[arg(long, default_value = "none")]
    pub default_profile: LatencyProfile,
    /// Seed of the latency draws.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Inject a fault into a bucket's GETs (the help lists the kinds).
    // Parsed into `BucketFault`s by `serve`, so that each bad one is named.
    #[arg(long = "fault", value_name = "BUCKET=KIND:RATE", help = fault_help())]
    pub faults: Vec<String>,
    /// How long a stall-body fault stalls, in ms.
    #[arg(long, default_value_t = 60_000, value_parser = super::counts::ms)]
    pub stall_ms: u64,
    /// How late a late-first-byte fault answers, in ms.
    #[arg(long, default_value_t = 15_000, value_parser = super::counts::ms)]
    pub late_first_byte_ms: u64,
    /// Delay before every ListObjectsV2 page, in ms (0: none): a slow listing, as of a
    /// huge prefix.
    #[arg(long, value_name = "MS", default_value_t = 0, value_parser = super::counts::ms)]
    pub list_delay_ms: u64,
    /// Serve HTTPS: a CA and a server certificate for 127.0.0.1 are made at start and
    /// the CA is written to a file (`--ca-out`), whose path is printed.
    #[arg(long)]
    pub tls: bool,
    /// Where --tls writes the CA certificate (PEM). Default: a new file under the
    /// temporary folder.
    #[arg(long, value_name = "FILE", requires = "tls")]
    pub ca_out: Option<PathBuf>,
    /// How long S3 Express sessions of directory buckets (NAME--ZONE--x-s3) last, in
    /// seconds: 300 as in S3; shorter to see clients refresh them.
    #[arg(long, value_name = "S", default_value_t = 300, value_parser = super::counts::seconds)]
    pub session_ttl_s: u64,
    /// How long a client has to send a request's headers before its connection is
    /// closed, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 20_000, value_parser = super::counts::ms)]
    pub header_read_timeout_ms: u64,
    /// Most connections served at once; past it, 503 SlowDown (HTTPS: closed).
    #[arg(long, value_name = "N", default_value_t = 4096, value_parser = super::counts::lab_connections)]
    pub max_connections: usize,
    /// Largest object a PUT may carry, in bytes (past it: 400 EntityTooLarge).
    #[arg(long, value_name = "BYTES", default_value_t = 64 << 20, value_parser = super::counts::bytes)]
    pub max_object_bytes: u64,
    /// Most bytes the lab holds in all (past it: 507 InsufficientStorage).
    #[arg(long, value_name = "BYTES", default_value_t = 1 << 30, value_parser = super::counts::bytes)]
    pub max_store_bytes: u64,
    /// The lab's network (a NIC, S3's per-prefix rate and idle timeout).
    #[command(flatten)]
    pub network: NetworkArgs,
    /// Authorize every request against this IAM policy (JSON: a policy document, a
    /// list of them, or of statements), as S3 does: s3:GetObject, s3:PutObject,
    /// s3:DeleteObject on the object, s3:ListBucket on the bucket, and
    /// s3express:CreateSession with s3express:SessionMode on a directory bucket; a
    /// request it does not allow is 403 AccessDenied naming the action and resource.
    #[arg(long, value_name = "FILE")]
    pub iam_policy: Option<PathBuf>,
    /// With `--nic lambda`: the memory size whose rate --nic-table gives.
    #[arg(long, value_name = "MB", requires = "nic", value_parser = super::counts::memory_mb)]
    pub lambda_memory_mb: Option<u32>,
}

/// `--fault`'s help, with every kind the lab knows.
fn fault_help() -> String {
    let kinds: Vec<&str> = FaultKind::ALL.iter().map(|k| k.name()).collect();
    format!(
        "Inject a fault into a bucket's GETs: BUCKET=KIND:RATE, KIND one of {}; RATE 0..1. Repeatable. The tally is served at GET /_s3sweep/faults and printed on exit.",
        kinds.join(", ")
    )
}

/// `serve --bucket NAME=PROFILE`: a bucket to create and its latency profile.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ServeBucket {
    pub name: String,
    pub profile: LatencyProfile,
}

impl FromStr for ServeBucket {
    type Err = String;
    /// `NAME=PROFILE`, or `NAME` (profile `none`); every problem named.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (name, profile) = s.split_once('=').unwrap_or((s, "none"));
        let name_ok = check_bucket_name(name);
        let profile_ok = profile.parse::<LatencyProfile>();
        match (name_ok, profile_ok) {
            (Ok(()), Ok(profile)) => Ok(ServeBucket {
                name: name.to_string(),
                profile,
            }),
            (name, profile) => {
                let problems: Vec<String> = name
                    .err()
                    .map(|e| e.to_string())
                    .into_iter()
                    .chain(profile.err())
                    .collect();
                Err(problems.join("; "))
            }
        }
    }
}

/// The range `--session-ttl-s` accepts.
pub(crate) const SESSION_TTL_S: std::ops::RangeInclusive<u64> = 1..=43_200;

/// Checks `--session-ttl-s`.
pub(crate) fn check_session_ttl(seconds: u64) -> Result<std::time::Duration, String> {
    if SESSION_TTL_S.contains(&seconds) {
        Ok(std::time::Duration::from_secs(seconds))
    } else {
        Err(format!(
            "--session-ttl-s: must be between {} and {} seconds, got {seconds}",
            SESSION_TTL_S.start(),
            SESSION_TTL_S.end()
        ))
    }
}

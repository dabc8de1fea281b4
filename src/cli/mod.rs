//! The command line as a library: [`args`] are the clap definitions, [`run`] checks the
//! global flags once, builds the async runtime and calls the command; the commands
//! are in [`local`] (the demo on the embedded server), [`commands`] (`run`, `seed`,
//! `serve`, `clean`, `report`, `compare`) with [`request`] (the request `run` builds
//! from its flags and file) and [`target`] (endpoint and credentials), [`preflight`]
//! (the buckets an event names, looked at before a deploy), and [`generate`]
//! (completions, man page). `src/bin/s3sweep.rs` only parses and calls.
//!
//! Errors are [`CliError`]s, printed by [`CliError::line`] as one line that says what
//! failed and what to do: a bad flag names the flag; an S3 failure its kind, bucket
//! or key, and endpoint; anything else what was being done (`reading x.json: ...`)
//! with its causes. Never a backtrace: those are for panics, which are bugs.

/// `eprintln!` with the line wrapped at the terminal's width (`COLUMNS`, else the
/// terminal's, else 100 characters), as the tables are.
macro_rules! say {
    ($($arg:tt)*) => {
        eprintln!("{}", $crate::cli::fit_stderr(&format!($($arg)*)))
    };
}
pub(crate) use say;

pub(crate) mod args;
pub(crate) mod client_args;
pub(crate) mod commands;
pub(crate) mod counts;
mod ec2_query;
pub(crate) mod generate;
pub(crate) mod history;
pub(crate) mod lab_network;
pub(crate) mod local;
pub(crate) mod memory;
pub(crate) mod preflight;
mod preflight_bucket;
mod preflight_results;
mod preflight_vpc;
pub(crate) mod request;
pub(crate) mod sweep_args;
pub(crate) mod target;

use std::error::Error as StdError;
use std::path::Path;

use crate::analysis::cost::CostOverrides;
use crate::engine;
use crate::model::{SweepResult, Thresholds};
use crate::render::columns::Column;
use crate::render::layout::DEFAULT_WIDTH_CHARS;
use crate::render::{figure, Layout, Style};
use crate::s3::errors::BucketError;

pub use args::{Cli, Command};
pub use local::LabRoomError;

/// Why a command failed. Each variant holds what went wrong as data (the flag, the
/// numbers, the path, the underlying error) and words it in its `Display`.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Bad flags or arguments, each named.
    #[error("{0}")]
    Usage(String),
    /// One flag or argument (with its value when that says more) and why it is refused.
    #[error("{flag}: {reason}")]
    Flag {
        flag: String,
        reason: Box<dyn StdError + Send + Sync>,
    },
    /// A flag's number outside what the flag takes.
    #[error("{flag}: must be between {low} and {high}, got {got}")]
    FlagRange {
        flag: &'static str,
        low: u64,
        high: u64,
        got: u64,
    },
    /// `--requests-log`'s file cannot be made (its path and why).
    #[error("--requests-log {0}")]
    RequestsLog(#[from] crate::engine::requests_log::LogError),
    /// `local`'s objects do not fit the lab's store ([`crate::lab::StoreLimits`]).
    #[error(transparent)]
    LabRoom(#[from] LabRoomError),
    /// A network flag of `local` or `serve` (each names its flag).
    #[error(transparent)]
    Network(#[from] lab_network::NetworkFlagError),
    /// `man` for a command there is not.
    #[error("man: no command {name:?}; the commands are {}", commands.join(", "))]
    NoCommand { name: String, commands: Vec<String> },
    /// A run of `per_size` configurations at `sizes` memory sizes holds more than
    /// [`crate::plan::MAX_CONFIGURATIONS`].
    #[error(
        "{per_size} x {sizes} memory size(s) = {} configurations; a run holds at most {}: use fewer --lambda-memory-mb sizes, worker counts or repetitions",
        per_size * (*sizes).max(1) as u64,
        crate::plan::MAX_CONFIGURATIONS
    )]
    TooManyConfigurations { per_size: u64, sizes: usize },
    /// An S3 call failed in a way every retry would: kind, bucket or key, endpoint,
    /// and what to do.
    #[error("{kind}: {0}", kind = .0.error_type())]
    Bucket(BucketError),
    /// Something failed while doing `context`; `advice` says what to do, when known.
    #[error("{context}")]
    Failed {
        context: String,
        #[source]
        source: Box<dyn StdError + Send + Sync>,
        advice: Option<String>,
    },
    /// A local file could not be read or written (`doing`: `writing the plot`).
    #[error("{doing} {}: {source}", path.display())]
    File {
        doing: &'static str,
        path: std::path::PathBuf,
        #[source]
        source: Box<dyn StdError + Send + Sync>,
    },
    /// `run`: writes of the result to `uri` failed (the result printed is whole).
    #[error(
        "run: {failed} of {tried} writes of the result to {uri} failed ({first_error}): the result printed above is whole, but S3 does not hold it; check the bucket, its region and that these credentials may write under the prefix (s3sweep preflight --results-uri {uri})"
    )]
    ResultsNotKept {
        uri: String,
        failed: u32,
        tried: u32,
        first_error: String,
    },
    /// `clean` refused to delete anything.
    #[error("deleted nothing: {why}")]
    DeletedNothing { why: String },
    /// `clean` could not delete `failed` keys; the first and why.
    #[error("{failed} key(s) could not be deleted and stay in the manifest; first: {key}: {why}")]
    NotDeleted { failed: usize, key: String, why: String },
    /// `clean`: the manifest could not be used.
    #[error(
        "{source}: give the manifest `s3sweep seed` wrote (--manifest FILE; by default s3sweep-manifest-BUCKET.json)"
    )]
    Manifest {
        #[source]
        source: crate::s3::clean::CleanError,
    },
    /// `history`: `place` holds no result file.
    #[error(
        "{place}: no result files (*.json) there: give the directory or s3://bucket/prefix/ the results were written to (the function's ResultsPrefix)"
    )]
    NoResults { place: String },
    /// `history`: a directory with more entries than are walked.
    #[error("{}: over {max} entries; give a narrower directory", dir.display())]
    TooManyEntries { dir: std::path::PathBuf, max: usize },
    /// `history`: files among the newest that are not results (their names and why).
    #[error(
        "{} of the {newest} newest files are not results: {}: keep only result JSON (the function's results, `run --json`, `local --json`) there, or give --limit",
        bad.len(),
        shown_list(bad, 5)
    )]
    NotResults { newest: usize, bad: Vec<String> },
    /// `history`: the listing of `place` did not finish within `waited`.
    #[error(
        "listing {place}: not listed within {:.1} s: the server answers too slowly or stalled",
        waited.as_secs_f64()
    )]
    ListingStalled { place: String, waited: std::time::Duration },
    /// A result object that is not UTF-8.
    #[error("{uri}: not UTF-8 text")]
    NotUtf8 { uri: crate::plan::ObjectUri },
    /// `--timeline` at a worker count no row has a timeline at.
    #[error(
        "{flag}: no row with a timeline at that worker count (rows with one: {rows_with_one:?}; results written before timelines have none, and a timeline with values out of range is not drawn)"
    )]
    NoTimeline {
        flag: &'static str,
        rows_with_one: Vec<u32>,
    },
    /// `--plot` with nothing to draw.
    #[error("{flag}: no run has a drawable objects/s")]
    NothingToPlot { flag: &'static str },
    /// `preflight` found `count` problems, each printed above.
    #[error("preflight: {count} problem(s) with the buckets, each above with its fix")]
    Preflight { count: usize },
    /// A line already worded in full: an error re-worded with the user's target flags
    /// ([`CliError::in_user_terms`]).
    #[error("{0}")]
    Message(String),
    /// A failure that says everything itself.
    #[error(transparent)]
    Other(Box<dyn StdError + Send + Sync>),
}

/// The first `n` of `items` joined by `; `, and how many more.
fn shown_list(items: &[String], n: usize) -> String {
    let mut text = items.iter().take(n).cloned().collect::<Vec<_>>().join("; ");
    if items.len() > n {
        text.push_str(&format!("; and {} more", items.len() - n));
    }
    text
}

impl CliError {
    /// A file that could not be read or written while `doing` (`writing the plot`).
    pub(crate) fn file(doing: &'static str, path: &Path, source: impl StdError + Send + Sync + 'static) -> Self {
        CliError::File {
            doing,
            path: path.to_path_buf(),
            source: Box::new(source),
        }
    }

    /// `flag` (as given) refused for `reason`.
    pub(crate) fn flag(flag: impl Into<String>, reason: impl Into<Box<dyn StdError + Send + Sync>>) -> Self {
        CliError::Flag {
            flag: flag.into(),
            reason: reason.into(),
        }
    }

    /// Wraps any error as [`CliError::Other`].
    pub fn other(err: impl StdError + Send + Sync + 'static) -> Self {
        CliError::Other(Box::new(err))
    }

    /// Adds what to do to a [`CliError::Failed`] (other errors say it themselves).
    pub fn advice(self, advice: impl Into<String>) -> Self {
        match self {
            CliError::Failed { context, source, .. } => CliError::Failed {
                context,
                source,
                advice: Some(advice.into()),
            },
            other => other,
        }
    }

    /// The error with every command it suggests (`` `s3sweep seed --bucket b` ``, and
    /// `s3sweep run`) followed by the target flags the user gave (`flags`, from
    /// [`args::TargetArgs::flags`]), so the advice runs as written against the same
    /// endpoint. Bad flags, and errors that suggest no such command, stay as they are.
    pub fn in_user_terms(self, flags: &str) -> CliError {
        if flags.is_empty() || self.exit_code() == 2 {
            return self;
        }
        let line = self.line();
        let mut changed = false;
        let parts: Vec<String> = line
            .split('`')
            .enumerate()
            .map(|(i, part)| {
                let command = i % 2 == 1 && (part.starts_with("s3sweep seed") || part.starts_with("s3sweep run"));
                if command && !part.contains("--endpoint") {
                    changed = true;
                    format!("{part}{flags}")
                } else {
                    part.to_string()
                }
            })
            .collect();
        if changed {
            CliError::Message(parts.join("`"))
        } else {
            self
        }
    }

    /// The exit status: 2 for bad flags or arguments (as clap's own errors), 1 for
    /// everything else.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_)
            | CliError::Flag { .. }
            | CliError::FlagRange { .. }
            | CliError::NoTimeline { .. }
            | CliError::NoCommand { .. }
            | CliError::Network(_)
            | CliError::RequestsLog(_)
            | CliError::LabRoom(_)
            | CliError::TooManyConfigurations { .. } => 2,
            _ => 1,
        }
    }

    /// The error on one line: what failed, each cause (`: cause`, a cause the line
    /// already holds left out), and what to do.
    pub fn line(&self) -> String {
        let mut line = self.to_string();
        let mut next = self.source();
        while let Some(e) = next {
            let text = e.to_string();
            if !text.is_empty() && !line.contains(&text) {
                line.push_str(": ");
                line.push_str(&text);
            }
            next = e.source();
        }
        if let CliError::Failed { advice: Some(a), .. } = self {
            line.push_str(": ");
            line.push_str(a);
        }
        let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
        crate::sys::visible::visible(&line).into_owned()
    }
}

/// The log filter for `-v` counts when RUST_LOG is not set: warnings only (but not
/// the credential chain's, whose failure the command reports itself as
/// `NoCredentials`), then s3sweep's debug lines (the SDK's full error of each failed
/// call) and all warnings, then everything at debug, then trace.
pub fn log_filter(verbose: u8) -> &'static str {
    match verbose {
        0 => "warn,aws_config=error",
        1 => "warn,s3sweep=debug",
        2 => "debug",
        _ => "trace",
    }
}

/// A command line (`args`, the program first) clap refused, as one line: clap's
/// message and tips, and where to look (`s3sweep run --help`). Help and version
/// requests are not errors: `None`, and clap prints them itself.
pub fn parse_error_line(err: &clap::Error, args: &[String]) -> Option<String> {
    use clap::error::ErrorKind as K;
    if matches!(
        err.kind(),
        K::DisplayHelp | K::DisplayVersion | K::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        return None;
    }
    let text = err.render().to_string();
    let mut parts = Vec::new();
    let known = <Cli as clap::CommandFactory>::command();
    let mut command = match args.iter().skip(1).find(|a| known.find_subcommand(a).is_some()) {
        Some(sub) => format!("s3sweep {sub}"),
        None => "s3sweep".to_string(),
    };
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if let Some(usage) = line.strip_prefix("Usage: ") {
            let words: Vec<&str> = usage
                .split_whitespace()
                .take_while(|w| !w.starts_with(['[', '<', '-']))
                .collect();
            if !words.is_empty() {
                command = words.join(" ");
            }
        } else if !line.starts_with("For more information") {
            parts.push(line.strip_prefix("error: ").unwrap_or(line).to_string());
        }
    }
    Some(format!("{}; see `{command} --help`", parts.join("; ")))
}

/// `.context("doing x")` on results: the error becomes the source of a
/// [`CliError::Failed`] that says what was being done.
pub trait Context<T> {
    fn context(self, context: impl Into<String>) -> Result<T, CliError>;
}

impl<T, E: StdError + Send + Sync + 'static> Context<T> for Result<T, E> {
    fn context(self, context: impl Into<String>) -> Result<T, CliError> {
        self.map_err(|e| CliError::Failed {
            context: context.into(),
            source: Box::new(e),
            advice: None,
        })
    }
}

/// Runs a parsed command line: the global flags are checked (every bad one named),
/// then the command runs on a runtime with the asked-for worker threads.
pub fn run(cli: Cli) -> Result<(), CliError> {
    let mut problems = Vec::new();
    if let Some(n) = cli
        .runtime_threads
        .filter(|n| !(1..=counts::MAX_RUNTIME_THREADS).contains(n))
    {
        problems.push(format!(
            "--runtime-threads: must be from 1 to {}, got {n}",
            counts::MAX_RUNTIME_THREADS
        ));
    }
    let thresholds = Thresholds {
        // Only the sweeps read a bandwidth ceiling (`local`, `run`).
        bandwidth_ceiling_mib_per_s: match &cli.command {
            Command::Local(a) => a.sweep.client_net.bandwidth_mib_s,
            Command::Run(a) => a.sweep.client_net.bandwidth_mib_s,
            _ => None,
        },
        ..Default::default()
    };
    if let Err(e) = thresholds.validate() {
        problems.push(format!("--bandwidth-mib-s: {e}"));
    }
    if !problems.is_empty() {
        return Err(CliError::Usage(problems.join("; ")));
    }
    match &cli.command {
        Command::Completions(args) => return generate::completions(args),
        Command::Man(args) => return generate::man(args),
        _ => {}
    }
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = cli.runtime_threads {
        builder.worker_threads(n);
    }
    let runtime = builder.enable_all().build().context("starting the async runtime")?;
    runtime.block_on(async move {
        match cli.command {
            Command::Local(args) => local::local(args, thresholds).await,
            Command::Run(args) => {
                let flags = args.target.flags();
                commands::run(args, thresholds)
                    .await
                    .map_err(|e| e.in_user_terms(&flags))
            }
            Command::Seed(args) => {
                let flags = args.target.flags();
                commands::seed(args).await.map_err(|e| e.in_user_terms(&flags))
            }
            Command::Serve(args) => commands::serve(args).await,
            Command::Clean(args) => commands::clean(args).await,
            Command::Preflight(args) => preflight::preflight(args).await,
            Command::Report(args) => commands::report(args).await,
            Command::Compare(args) => commands::compare(args).await,
            Command::History(args) => history::history(args).await,
            Command::Completions(args) => generate::completions(&args),
            Command::Man(args) => generate::man(&args),
        }
    })
}

/// The tables and the cost, for people (or as Markdown), laid out by `layout`
/// ([`crate::render::report_text`]), [`shown`].
pub(crate) fn human(result: &SweepResult, layout: &Layout, overrides: CostOverrides) -> String {
    shown(&crate::render::report_text(result, layout, overrides))
}

/// Text for a terminal: every character a terminal would obey instead of show made
/// visible ([`crate::sys::visible::visible_lines`]: the one function every printer
/// uses), the program's own line breaks kept.
pub(crate) fn shown(text: &str) -> String {
    crate::sys::visible::visible_lines(text).into_owned()
}

/// JSON for a terminal: the same document with every such character escaped.
pub(crate) fn shown_json(json: &str) -> String {
    crate::sys::visible::json_escaped(json).into_owned()
}

/// Closes the request log, if one was written, and says what it holds.
pub(crate) fn finish_requests_log(log: Option<&engine::requests_log::RequestsLog>) -> Result<(), CliError> {
    if let Some(log) = log {
        let tally = log.finish().map_err(CliError::other)?;
        eprintln!("{}", log.summary(&tally));
    }
    Ok(())
}

/// The environment variable a shell sets to the terminal's width.
const COLUMNS_ENV: &str = "COLUMNS";

/// The width the text for people may use: `COLUMNS` when set to a number, else the
/// terminal's (when stdout is one), else [`DEFAULT_WIDTH_CHARS`].
/// A line for stderr: wrapped to the width when someone reads it there (stderr is a
/// terminal, or `COLUMNS` says how wide), kept whole when it goes to a file or a pipe,
/// where scripts and tests read the lab's tallies and the run's closing lines a line
/// at a time.
pub(crate) fn fit_stderr(text: &str) -> String {
    use std::io::IsTerminal;
    let asked = std::env::var(COLUMNS_ENV).is_ok_and(|v| v.trim().parse::<usize>().is_ok_and(|w| w > 0));
    if asked || std::io::stderr().is_terminal() {
        crate::render::layout::wrap_text(text, terminal_width_chars())
    } else {
        text.to_string()
    }
}

pub(crate) fn terminal_width_chars() -> usize {
    std::env::var(COLUMNS_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&w| w > 0)
        .or_else(|| comfy_table::Table::new().width().map(usize::from))
        .unwrap_or(DEFAULT_WIDTH_CHARS)
}

/// The layout of `--markdown`, `--wide` and `--columns`: Markdown and `--wide` keep
/// every column at any width; otherwise the tables fit [`terminal_width_chars`].
pub(crate) fn layout(markdown: bool, wide: bool, columns: Option<&str>) -> Result<Layout, CliError> {
    let style = Style::markdown_if(markdown);
    let columns = columns
        .map(Column::parse_list)
        .transpose()
        .map_err(|e| CliError::flag("--columns", e))?;
    if wide {
        return Ok(Layout {
            columns,
            ..Layout::wide(style)
        });
    }
    Ok(Layout::fitted(style, terminal_width_chars(), columns))
}

pub(crate) fn write_plot(result: &SweepResult, path: &Path) -> Result<(), CliError> {
    let left_out = figure::render_file(result, path).context(format!("writing the plot {}", path.display()))?;
    if let Some(note) = left_out.note() {
        eprintln!("{note}");
    }
    eprintln!("plot written to {}", path.display());
    Ok(())
}

/// The timeline picture `pick` of `result` into `path`.
pub(crate) fn write_timeline_plot(
    result: &SweepResult,
    path: &Path,
    pick: crate::render::timeline_plot::TimelinePick,
) -> Result<(), CliError> {
    let figure = figure::Figure::Timeline(pick);
    let left_out = match figure::render_file_as(result, path, figure) {
        Err(crate::render::plot::PlotError::Empty) => Err(CliError::NoTimeline {
            flag: "--timeline",
            rows_with_one: crate::render::timeline_plot::timeline_workers(result),
        }),
        other => other.context(format!("writing the plot {}", path.display())),
    }?;
    if let Some(note) = left_out.note() {
        eprintln!("{note}");
    }
    eprintln!("timeline plot written to {}", path.display());
    Ok(())
}

/// What to do about a result file that cannot be read.
const RESULT_FILE_ADVICE: &str =
    "give a result JSON: the file of `local --json FILE` or `run --json FILE`, the stdout of `run`, or the Lambda's response";

/// Most bytes of a result file `report` and `compare` read: a run holds at most 1,000
/// rows of a few KB each.
pub const MAX_RESULT_FILE_BYTES: u64 = 64 << 20;

pub(crate) fn read_result(path: &Path) -> Result<SweepResult, CliError> {
    let context = || format!("reading {}", path.display());
    let text = crate::sys::files::read_capped_text(path, MAX_RESULT_FILE_BYTES, "a result file")
        .context(context())
        .map_err(|e| e.advice(RESULT_FILE_ADVICE))?;
    result_from_json(&text)
        .context(context())
        .map_err(|e| e.advice(RESULT_FILE_ADVICE))
}

/// A result document read from outside, every string in it made visible
/// ([`crate::sys::visible::visible_json_strings`]) before any printer sees it: a line
/// break or an escape inside a bucket name, a note or `tool.client` stays text.
pub(crate) fn result_from_json(text: &str) -> Result<SweepResult, crate::model::ResultFileError> {
    SweepResult::from_json_with(text, crate::sys::visible::visible_json_strings)
}

/// A result from a file, or from S3 when `path` is an `s3://bucket/key` URI (read
/// through the client `target` makes). A copy written while its run was still going
/// (`results_writes.complete` false) is analysed here, so its rows get their summary.
pub(crate) async fn read_result_at(path: &Path, target: &args::TargetArgs) -> Result<SweepResult, CliError> {
    let text = path.to_string_lossy();
    if !text.starts_with(crate::plan::destination::S3_SCHEME) {
        return read_result(path);
    }
    let uri = crate::plan::ObjectUri::parse(&text).map_err(|e| CliError::flag(crate::plan::names::shown(&text), e))?;
    let client = target.client(&uri.bucket).await?;
    let bytes = crate::s3::results::read_object(&client, &uri, MAX_RESULT_FILE_BYTES)
        .await
        .map_err(|e| CliError::Other(e.into()))?;
    let text = String::from_utf8(bytes).map_err(|_| CliError::NotUtf8 { uri: uri.clone() })?;
    let mut result = result_from_json(&text)
        .context(format!("reading {uri}"))
        .map_err(|e| e.advice(RESULT_FILE_ADVICE))?;
    if result.results_writes.as_ref().is_some_and(|w| !w.complete) {
        crate::analysis::analyse(&mut result, &crate::model::Thresholds::default());
    }
    Ok(result)
}

/// Writes the result whole or not at all (a full disk leaves the previous file).
pub(crate) fn write_json(path: &Path, result: &SweepResult) -> Result<(), CliError> {
    crate::sys::files::write_atomic(path, result.to_json().as_bytes()).context(format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggested_commands_repeat_the_target_flags() {
        let missing = || {
            CliError::Bucket(BucketError::ObjectNotFound {
                bucket: "my-bucket".into(),
                key: "k/000001".into(),
            })
        };
        let flags = " --endpoint http://127.0.0.1:9000";
        let line = missing().in_user_terms(flags).line();
        assert!(
            line.contains("`s3sweep seed --bucket my-bucket --endpoint http://127.0.0.1:9000`"),
            "{line}"
        );
        assert!(line.starts_with(&missing().line()[..20]), "{line}");
        // No flags given: the advice is for AWS, as written.
        assert_eq!(missing().in_user_terms("").line(), missing().line());
        // A bad flag is not advice.
        let usage = CliError::Usage("--workers: `s3sweep run --workers 1,8`".into());
        assert!(matches!(usage.in_user_terms(flags), CliError::Usage(_)));
    }

    #[test]
    fn errors_hold_their_data_and_word_it_the_same_way() {
        let range = CliError::FlagRange {
            flag: "--batch",
            low: 1,
            high: 1000,
            got: 0,
        };
        assert_eq!(range.line(), "--batch: must be between 1 and 1000, got 0");
        let flag = CliError::flag("--bucket", crate::plan::check_bucket_name("ab").unwrap_err());
        assert_eq!(
            flag.line(),
            "--bucket: \"ab\" is not a bucket name: must be 3 to 63 characters long"
        );
        // Bad flags exit 2 as clap's own errors do, and are never re-worded as advice.
        for e in [
            range,
            flag,
            CliError::NoCommand {
                name: "x".into(),
                commands: vec!["run".into()],
            },
        ] {
            assert_eq!(e.exit_code(), 2, "{e}");
            assert!(matches!(
                e.in_user_terms(" --endpoint http://h"),
                CliError::Flag { .. } | CliError::FlagRange { .. } | CliError::NoCommand { .. }
            ));
        }
        let bad: Vec<String> = (0..7).map(|i| format!("r{i}.json: not JSON")).collect();
        let not_results = CliError::NotResults { newest: 20, bad };
        let line = not_results.line();
        assert!(
            line.starts_with("7 of the 20 newest files are not results: r0.json: not JSON; "),
            "{line}"
        );
        assert!(
            line.contains("r4.json: not JSON; and 2 more: keep only result JSON"),
            "{line}"
        );
        assert!(!line.contains("r5.json"), "{line}");
        assert_eq!(not_results.exit_code(), 1);
        let file = CliError::file(
            "writing the plot",
            Path::new("p.svg"),
            std::io::Error::other("disk full"),
        );
        assert_eq!(file.line(), "writing the plot p.svg: disk full");
    }
}

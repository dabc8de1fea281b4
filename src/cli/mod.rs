//! The command line as a library: [`args`] are the clap definitions, [`run`] checks the
//! global flags once, builds the async runtime and calls the command; the commands
//! are in [`local`] (the demo on the embedded server) and [`commands`] (`run`, `seed`,
//! `serve`, `clean`, `report`, `compare`). `src/bin/s3sweep.rs` only parses and calls.
//!
//! Errors are [`CliError`]s: a bad flag names the flag; anything else says what was
//! being done (`reading x.json: ...`) with the cause kept as its source.

pub mod args;
pub mod commands;
pub mod local;

use std::error::Error as StdError;
use std::path::Path;

use crate::analysis::cost::{cost_report, CostOverrides};
use crate::model::{SweepResult, Thresholds};
use crate::render::cost::render_cost;
use crate::render::{plot, render_tables, Style};

pub use args::{Cli, Command};

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Bad flags or arguments, each named.
    #[error("{0}")]
    Usage(String),
    /// Something failed while doing `context`.
    #[error("{context}")]
    Failed {
        context: String,
        #[source]
        source: Box<dyn StdError + Send + Sync>,
    },
    /// A failure that says everything itself.
    #[error(transparent)]
    Other(Box<dyn StdError + Send + Sync>),
}

impl CliError {
    /// Wraps any error as [`CliError::Other`].
    pub fn other(err: impl StdError + Send + Sync + 'static) -> Self {
        CliError::Other(Box::new(err))
    }
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
        })
    }
}

/// Runs a parsed command line: the global flags are checked (every bad one named),
/// then the command runs on a runtime with the asked-for worker threads.
pub fn run(cli: Cli) -> Result<(), CliError> {
    let mut problems = Vec::new();
    if cli.runtime_threads == Some(0) {
        problems.push("--runtime-threads: must be at least 1".to_string());
    }
    let thresholds = Thresholds {
        bandwidth_ceiling_mib_per_s: cli.bandwidth_mib_s,
        ..Default::default()
    };
    if let Err(e) = thresholds.validate() {
        problems.push(format!("--bandwidth-mib-s: {e}"));
    }
    if !problems.is_empty() {
        return Err(CliError::Usage(problems.join("; ")));
    }
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = cli.runtime_threads {
        builder.worker_threads(n);
    }
    let runtime = builder.enable_all().build().context("starting the async runtime")?;
    runtime.block_on(async move {
        match cli.command {
            Command::Local(args) => local::local(args, thresholds).await,
            Command::Run(args) => commands::run(args, thresholds).await,
            Command::Seed(args) => commands::seed(args).await,
            Command::Serve(args) => commands::serve(args).await,
            Command::Clean(args) => commands::clean(args).await,
            Command::Report(args) => commands::report(args),
            Command::Compare(args) => commands::compare(args),
        }
    })
}

/// The tables and the cost, for people (or as Markdown).
pub(crate) fn human(result: &SweepResult, style: Style, overrides: CostOverrides) -> String {
    format!(
        "{}{}",
        render_tables(result, style),
        render_cost(&cost_report(result, overrides), style)
    )
}

pub(crate) fn write_plot(result: &SweepResult, path: &Path) -> Result<(), CliError> {
    plot::render_file(result, path).context(format!("writing the plot {}", path.display()))?;
    eprintln!("plot written to {}", path.display());
    Ok(())
}

pub(crate) fn read_result(path: &Path) -> Result<SweepResult, CliError> {
    let context = || format!("reading {}", path.display());
    let text = std::fs::read_to_string(path).context(context())?;
    SweepResult::from_json(&text).context(context())
}

pub(crate) fn write_json(path: &Path, result: &SweepResult) -> Result<(), CliError> {
    let text = serde_json::to_string_pretty(result).context("serializing the result")?;
    std::fs::write(path, text).context(format!("writing {}", path.display()))
}

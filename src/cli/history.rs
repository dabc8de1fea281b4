//! `s3sweep history SOURCE`: the newest results under a directory or an
//! `s3://bucket/prefix/`, read within stated bounds, as trend tables per
//! configuration with the change points ([`crate::analysis::history`]), a trend plot
//! and an HTML page.
//!
//! Bounds: at most [`MAX_LISTED`] names are listed (files walked, or keys by
//! ListObjectsV2 pages); of the `*.json` among them, the last `--limit` (default
//! 200, at most [`MAX_LIMIT`]) in name order are read (the canary's keys are dated,
//! `YYYY/MM/DD/`, so name order is time order by day), each at most
//! [`MAX_RESULT_FILE_BYTES`], all together at most `--max-total-mib` (default 256):
//! the oldest of those chosen are left out past it, and that is said. The budget
//! counts the bytes of the files themselves (a link's target, not the link) when
//! choosing, and the bytes read while reading: a file that grew since it was listed
//! is read only up to what the budget has left. Only regular files are read
//! (a FIFO, a device, a socket named `*.json` is skipped). The arithmetic saturates
//! (`--max-total-mib 17592186044416` is no budget, not 0). One reader keeps the
//! budget in order while a thread per core parses what it read (a few texts queued
//! at most). The flags are [`HistoryArgs`].

use std::path::Path;

use futures_util::StreamExt;

use crate::analysis::history::history as history_of;
use crate::model::SweepResult;
use crate::render::history::{render_history, render_history_in, summary_markdown, trend_svg};
use crate::render::Style;

use super::args::HistoryArgs;
use super::{CliError, MAX_RESULT_FILE_BYTES};

/// The most results `--limit` allows.
pub(crate) const MAX_LIMIT: usize = 5_000;
/// Names listed at most (files walked, or S3 keys).
pub(crate) const MAX_LISTED: usize = 100_000;
/// GETs in flight while reading from S3.
const READS_IN_FLIGHT: usize = 8;

/// One name listed: where, and its size in bytes.
struct Listed {
    name: String,
    size_bytes: u64,
}

/// Runs `history`.
pub(crate) async fn history(args: HistoryArgs) -> Result<(), CliError> {
    if args.limit == 0 || args.limit > MAX_LIMIT {
        return Err(CliError::FlagRange {
            flag: "--limit",
            low: 1,
            high: MAX_LIMIT as u64,
            got: args.limit as u64,
        });
    }
    if args.max_total_mib == 0 {
        return Err(CliError::Usage("--max-total-mib: must be at least 1".into()));
    }
    let results = if args.source.starts_with(crate::plan::destination::S3_SCHEME) {
        read_s3(&args).await?
    } else {
        read_dir(&args)?
    };
    let h = history_of(&results);
    if args.json {
        let text = serde_json::to_string_pretty(&h).map_err(CliError::other)?;
        println!("{}", super::shown_json(&text));
    } else {
        let layout = super::layout(args.markdown, false, None)?;
        println!(
            "{}",
            super::shown(&format!("{} results read from {}\n", results.len(), args.source))
        );
        print!("{}", super::shown(&render_history_in(&h, &layout)));
    }
    let svg = trend_svg(&h);
    if let Some(path) = &args.plot {
        let svg = svg.as_deref().ok_or(CliError::NothingToPlot { flag: "--plot" })?;
        crate::sys::files::write_atomic(path, svg.as_bytes())
            .map_err(|e| CliError::file("writing the plot", path, e))?;
        eprintln!("plot written to {}", path.display());
    }
    if let Some(path) = &args.html {
        let source = format!("{} results from {}", results.len(), args.source);
        let page = crate::render::html::page(
            "s3sweep history",
            &source,
            &summary_markdown(&h),
            svg.as_deref(),
            &render_history(&h, Style::Markdown),
        );
        super::commands::write_html(path, &page)?;
    }
    Ok(())
}

/// Of `listed` (any order), the `*.json`, last `limit` by name, trimmed to the byte
/// budget from the oldest; newest last. Errors when none is a `.json`.
fn choose(mut listed: Vec<Listed>, args: &HistoryArgs) -> Result<Vec<Listed>, CliError> {
    listed.retain(|l| l.name.ends_with(".json"));
    if listed.is_empty() {
        return Err(CliError::NoResults {
            place: args.source.clone(),
        });
    }
    listed.sort_by(|a, b| a.name.cmp(&b.name));
    let skip = listed.len().saturating_sub(args.limit);
    let mut chosen: Vec<Listed> = listed.split_off(skip);
    let budget = budget_bytes(args);
    let mut total = 0u64;
    let mut keep = chosen.len();
    for (i, l) in chosen.iter().enumerate().rev() {
        let size = l.size_bytes.min(MAX_RESULT_FILE_BYTES);
        if total.saturating_add(size) > budget {
            break;
        }
        total = total.saturating_add(size);
        keep = i;
    }
    if keep > 0 {
        eprintln!(
            "{} older results left out: the newest {} fill --max-total-mib {}",
            keep,
            chosen.len() - keep,
            args.max_total_mib
        );
    }
    Ok(chosen.split_off(keep))
}

/// `--max-total-mib` in bytes (saturating: a budget past 16 EiB is no budget).
fn budget_bytes(args: &HistoryArgs) -> u64 {
    args.max_total_mib.saturating_mul(1 << 20)
}

/// Every regular file under `dir` (walked, at most [`MAX_LISTED`] entries), a link
/// to one listed with its target's size; a link to a directory is not walked, and
/// anything else (a FIFO, a device, a socket) is left out.
fn walk(dir: &Path) -> Result<Vec<Listed>, CliError> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    let mut seen = 0usize;
    while let Some(d) = todo.pop() {
        let entries = std::fs::read_dir(&d).map_err(|e| CliError::file("reading", &d, e))?;
        for entry in entries {
            seen += 1;
            if seen > MAX_LISTED {
                return Err(CliError::TooManyEntries {
                    dir: dir.to_path_buf(),
                    max: MAX_LISTED,
                });
            }
            let entry = entry.map_err(|e| CliError::file("reading", &d, e))?;
            let kind = entry.file_type().map_err(|e| CliError::file("reading", &d, e))?;
            if kind.is_dir() {
                todo.push(entry.path());
                continue;
            }
            // The file itself (a link followed), for its kind and size.
            match std::fs::metadata(entry.path()) {
                Ok(meta) if meta.is_file() => out.push(Listed {
                    name: entry.path().to_string_lossy().into_owned(),
                    size_bytes: meta.len(),
                }),
                _ => {}
            }
        }
    }
    Ok(out)
}

fn read_dir(args: &HistoryArgs) -> Result<Vec<SweepResult>, CliError> {
    let dir = Path::new(&args.source);
    if !dir.is_dir() {
        return Err(CliError::flag(
            args.source.clone(),
            "not a directory (give a directory of results or s3://bucket/prefix/)",
        ));
    }
    let chosen = choose(walk(dir)?, args)?;
    let (read, outcomes) = read_and_parse(&chosen, budget_bytes(args));
    if read < chosen.len() {
        eprintln!(
            "{} older results left out: the files grew past --max-total-mib {} since listed",
            chosen.len() - read,
            args.max_total_mib
        );
    }
    let (mut results, mut bad) = (Vec::with_capacity(outcomes.len()), Vec::new());
    for outcome in outcomes {
        match outcome {
            Ok(r) => results.push(r),
            Err(e) => bad.push(e),
        }
    }
    results.reverse();
    finish(results, bad)
}

/// Texts waiting for a parser at most, per parser thread.
const TEXTS_QUEUED_PER_PARSER: usize = 2;

/// Reads `chosen`, newest first, each read capped by what `budget` has left (one
/// reader, so the budget is kept in order), while parser threads (one per core, at
/// most 8) parse what was read: the files read and each one's outcome, newest first.
fn read_and_parse(chosen: &[Listed], budget: u64) -> (usize, Vec<Result<SweepResult, String>>) {
    let parsers = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 8);
    let (tx, rx) = std::sync::mpsc::sync_channel::<(usize, &Path, String)>(parsers * TEXTS_QUEUED_PER_PARSER);
    let rx = std::sync::Mutex::new(rx);
    let outcomes = std::sync::Mutex::new(Vec::with_capacity(chosen.len()));
    let push = |i: usize, outcome| outcomes.lock().unwrap_or_else(|e| e.into_inner()).push((i, outcome));
    let read = std::thread::scope(|scope| {
        for _ in 0..parsers {
            scope.spawn(|| loop {
                let job = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                let Ok((i, path, text)) = job else { break };
                let parsed = super::result_from_json(&text);
                push(i, parsed.map_err(|e| format!("reading {}: {e}", path.display())));
            });
        }
        let mut left = budget;
        let mut read = 0usize;
        for (i, l) in chosen.iter().rev().enumerate() {
            let cap = left.min(MAX_RESULT_FILE_BYTES);
            let path = Path::new(&l.name);
            read += 1;
            match crate::sys::files::read_capped_text(path, cap, "a result file") {
                // Larger than the budget has left (it grew since listed): the budget is spent.
                Err(crate::sys::files::FileError::TooLarge { .. }) if cap < MAX_RESULT_FILE_BYTES => {
                    read -= 1;
                    break;
                }
                Err(e) => push(i, Err(e.to_string())),
                Ok(text) => {
                    left = left.saturating_sub(text.len() as u64);
                    if tx.send((i, path, text)).is_err() {
                        break;
                    }
                }
            }
        }
        drop(tx);
        read
    });
    let mut outcomes = outcomes.into_inner().unwrap_or_else(|e| e.into_inner());
    outcomes.sort_unstable_by_key(|(i, _)| *i);
    (read, outcomes.into_iter().map(|(_, o)| o).collect())
}

/// The results read, or an error naming every file that was not one.
fn finish(results: Vec<SweepResult>, bad: Vec<String>) -> Result<Vec<SweepResult>, CliError> {
    if bad.is_empty() {
        return Ok(results);
    }
    Err(CliError::NotResults {
        newest: results.len() + bad.len(),
        bad,
    })
}

async fn read_s3(args: &HistoryArgs) -> Result<Vec<SweepResult>, CliError> {
    let uri = crate::plan::ResultsUri::parse(&args.source)
        .map_err(|e| CliError::flag(crate::plan::names::shown(&args.source), e))?;
    let client = args.target.client(&uri.bucket).await?;
    let s3 = client.s3(crate::s3::RequestSettings::maintenance(std::time::Duration::from_secs(
        60,
    )));
    let prefix = if uri.prefix.is_empty() {
        String::new()
    } else {
        format!("{}/", uri.prefix)
    };
    let deadline = crate::s3::results::read_deadline();
    let endpoint = client.endpoint_name();
    let listing = crate::s3::list::list_prefix(&s3, (&uri.bucket, &prefix), MAX_LISTED as u32, true, &endpoint);
    // A listing is read whole by the SDK: bounded as a whole, as each object is.
    let listing = tokio::time::timeout(deadline, listing)
        .await
        .map_err(|_| CliError::ListingStalled {
            place: args.source.clone(),
            waited: deadline,
        })?
        .map_err(|e| CliError::Failed {
            context: format!("listing {}", args.source),
            source: Box::new(e),
            advice: None,
        })?;
    let listed = listing
        .objects
        .iter()
        .map(|o| Listed {
            name: o.key.clone(),
            size_bytes: o.size_bytes,
        })
        .collect();
    let chosen = choose(listed, args)?;
    let reads = futures_util::stream::iter(chosen.iter().map(|l| {
        let object = crate::plan::ObjectUri {
            bucket: uri.bucket.clone(),
            key: l.name.clone(),
        };
        let client = &client;
        async move {
            let bytes = crate::s3::results::read_object(client, &object, MAX_RESULT_FILE_BYTES)
                .await
                .map_err(|e| e.to_string())?;
            let text = String::from_utf8(bytes).map_err(|_| format!("{object}: not UTF-8 text"))?;
            super::result_from_json(&text).map_err(|e| format!("{object}: {e}"))
        }
    }))
    .buffered(READS_IN_FLIGHT)
    .collect::<Vec<_>>()
    .await;
    let (mut results, mut bad) = (Vec::new(), Vec::new());
    for r in reads {
        match r {
            Ok(r) => results.push(r),
            Err(e) => bad.push(e),
        }
    }
    finish(results, bad)
}

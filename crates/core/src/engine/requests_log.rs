//! The request log (`--requests-log FILE`): one line per GET attempt (and per hedge copy) of every timed
//! configuration, as CSV (`.csv`) or JSON lines (`.jsonl`), gzip-compressed when the
//! name ends in `.gz`; pandas and DuckDB read each directly. Columns: the
//! configuration (`bucket`, `workers`, `repetition`), the GET (`get`: its place in the
//! configuration, in the order GETs ended), `attempt` of `attempts`, `sent_ms`,
//! `first_byte_ms` and `last_byte_ms` (after the timed phase began), `bytes`, and
//! `outcome`: `ok`, the error kind of a failed GET, or for an attempt that was retried
//! `retried_throttled` (a 503/429) or `retried` (another cause). A GET sent once:
//! `sent_ms` is its call, `first_byte_ms` its response headers, `last_byte_ms` its
//! last body byte. A retried GET: each attempt as the transport stamped it, with
//! either client (both send each attempt through it): `sent_ms` when the attempt was
//! handed over (the first attempt's: the GET's call), a retried attempt's
//! `first_byte_ms` its headers (empty when it got none: a timeout, a dropped
//! connection) and `last_byte_ms` its end; the last attempt's as a GET sent once.
//! Attempts past the eighth are not stamped (their time columns are empty).
//! `connection`: the connection the attempt went out on (the transport numbers each
//! connection it opens, from 1, for both clients, which share it); empty when it got
//! none. Then the configuration's axes, a column each ([`AXES`]: `memory_mb` and
//! `object_size_bytes`, empty without them, `s3_client`, `hedge`), so every
//! configuration's lines are told apart; `copy`: `get` for the GET's own lines, `hedge`
//! for its hedge copy, a line of its own after them (its last attempt: sent, headers,
//! end, the bytes it read, its connection) with its `fate`: `won` (its body came
//! first: the GET's result, and its `get` line, are its), `lost` (it failed) or
//! `cancelled` (the first answered; the copy was dropped, its `outcome` `cancelled`).
//! The `get` lines add up to the row; the `hedge` lines are its `hedges_sent`.
//!
//! Bounded: at most `max_bytes` (uncompressed) are written; lines past the cap are
//! dropped and counted, and [`RequestsLog::finish`] says how many.
//!
//! Written safely: the lines go to a new temporary file beside the log's path
//! (`O_EXCL`: nothing planted there, a symlink included, is followed or written
//! through), put in place when the log is finished. A file already at the path is
//! refused before the run unless the caller allows replacing it (`--force`), and even
//! then only the name is replaced (a rename): a symlink there is replaced, its target
//! never written. Without `--force` the log is linked into place only if the name is
//! still free then. A log never finished leaves nothing behind.

use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::model::{ConfigResult, AXES};

use super::hedge::HedgeFate;
use super::timeline::{AttemptEvent, GetEvent, HedgeEvent};
use super::Observer;

/// The default cap: 256 MiB of lines (about 3 million of them).
pub const DEFAULT_MAX_BYTES: u64 = 256 << 20;

/// The CSV header: the configuration, the attempt's columns, the configuration's
/// axes ([`AXES`]), the copy and its fate.
fn csv_header() -> String {
    let mut header =
        "bucket,workers,repetition,get,attempt,attempts,sent_ms,first_byte_ms,last_byte_ms,bytes,connection,outcome"
            .to_string();
    for axis in &AXES {
        header.push(',');
        header.push_str(axis.field);
    }
    header + ",copy,fate\n"
}

/// How the lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Csv,
    JsonLines,
}

/// What was written, for the closing line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogTally {
    pub lines_written: u64,
    pub lines_dropped: u64,
    pub bytes_written: u64,
}

/// The open file (the temporary one): plain or gzip.
enum Sink {
    Plain(BufWriter<File>),
    Gzip(flate2::write::GzEncoder<BufWriter<File>>),
}

impl Sink {
    fn writer(&mut self) -> &mut dyn Write {
        match self {
            Sink::Plain(w) => w,
            Sink::Gzip(w) => w,
        }
    }
}

struct State {
    sink: Option<Sink>,
    tally: LogTally,
    error: Option<std::io::Error>,
}

/// An [`Observer`] that writes the request log and passes every event on to `inner`
/// (the progress bars).
pub struct RequestsLog {
    path: PathBuf,
    /// Where the lines are written until [`RequestsLog::finish`] puts them at `path`.
    temporary: PathBuf,
    /// A file already at `path` may be replaced (`--force`).
    replace: bool,
    format: LogFormat,
    max_bytes: u64,
    state: Mutex<State>,
    inner: Arc<dyn Observer>,
}

/// Why the request log cannot be made or was not written whole.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("{name}: name the file .csv, .jsonl, .csv.gz or .jsonl.gz")]
    UnknownFormat { name: String },
    #[error("{}: a file is there already: give --force to replace it, or another name", path.display())]
    Exists { path: std::path::PathBuf },
    #[error("{name}: {source}")]
    Create {
        name: String,
        #[source]
        source: std::io::Error,
    },
    /// The first write or close that failed.
    #[error("writing {}: {source}", path.display())]
    Write {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl RequestsLog {
    /// Starts the log of `path` (its format from its name: `.csv` or `.jsonl`, each
    /// optionally `.gz`) in a new temporary file beside it; an error naming the file
    /// when it cannot be created, its name says no known format, or something is at
    /// `path` already and `replace` is false.
    pub fn create(
        path: &Path,
        max_bytes: u64,
        inner: Arc<dyn Observer>,
        replace: bool,
    ) -> Result<RequestsLog, LogError> {
        let name = path.to_string_lossy();
        let (stem, gzip) = match name.strip_suffix(".gz") {
            Some(stem) => (stem, true),
            None => (name.as_ref(), false),
        };
        let format = if stem.ends_with(".csv") {
            LogFormat::Csv
        } else if stem.ends_with(".jsonl") {
            LogFormat::JsonLines
        } else {
            return Err(LogError::UnknownFormat { name: name.to_string() });
        };
        check_free(path, replace)?;
        let temporary = crate::sys::files::temp_path_for(path);
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temporary)
            .map_err(|source| LogError::Create {
                name: name.to_string(),
                source,
            })?;
        let buffered = BufWriter::new(file);
        let sink = if gzip {
            Sink::Gzip(flate2::write::GzEncoder::new(buffered, flate2::Compression::fast()))
        } else {
            Sink::Plain(buffered)
        };
        let log = RequestsLog {
            path: path.to_path_buf(),
            temporary,
            replace,
            format,
            max_bytes,
            state: Mutex::new(State {
                sink: Some(sink),
                tally: LogTally::default(),
                error: None,
            }),
            inner,
        };
        if format == LogFormat::Csv {
            log.write(&csv_header(), false);
        }
        Ok(log)
    }

    /// Writes `text` unless it would pass the cap (then counts `lines` dropped).
    fn write(&self, text: &str, is_line: bool) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if s.tally.bytes_written + text.len() as u64 > self.max_bytes {
            s.tally.lines_dropped += u64::from(is_line);
            return;
        }
        let result = match s.sink.as_mut() {
            Some(sink) => sink.writer().write_all(text.as_bytes()),
            None => return,
        };
        match result {
            Ok(()) => {
                s.tally.bytes_written += text.len() as u64;
                s.tally.lines_written += u64::from(is_line);
            }
            Err(e) => {
                s.error.get_or_insert(e);
                s.sink = None;
            }
        }
    }

    /// Flushes and closes the file and puts it in place; the tally, or the first
    /// write error.
    pub fn finish(&self) -> Result<LogTally, LogError> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let closed = match s.sink.take() {
            Some(Sink::Plain(w)) => close(w).and_then(|()| self.place()),
            Some(Sink::Gzip(w)) => w.finish().and_then(close).and_then(|()| self.place()),
            None => Ok(()),
        };
        if let Err(e) = closed {
            s.error.get_or_insert(e);
        }
        match &s.error {
            Some(e) => Err(LogError::Write {
                path: self.path.clone(),
                source: std::io::Error::new(e.kind(), e.to_string()),
            }),
            None => Ok(s.tally),
        }
    }

    /// The temporary file at the log's path: renamed over it when replacing is
    /// allowed, else linked there only if the name is free (`link` fails on any
    /// existing name, a symlink included, and follows none).
    fn place(&self) -> std::io::Result<()> {
        if self.replace {
            return std::fs::rename(&self.temporary, &self.path);
        }
        std::fs::hard_link(&self.temporary, &self.path).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!(
                    "{e}: something was put at the log's name during the run; the log is left in {}",
                    self.temporary.display()
                ),
            )
        })?;
        std::fs::remove_file(&self.temporary)
    }

    /// The line `finish` prints: lines written, dropped, the cap.
    pub fn summary(&self, tally: &LogTally) -> String {
        let mut line = format!(
            "request log: {} lines ({} bytes before compression) written to {}",
            tally.lines_written,
            tally.bytes_written,
            self.path.display()
        );
        if tally.lines_dropped > 0 {
            let _ = write!(
                line,
                "; {} lines dropped at the cap of {} bytes (--requests-log-max-mib)",
                tally.lines_dropped, self.max_bytes
            );
        }
        line
    }
}

/// Refuses a log path something is at already (a file, a link, anything), unless
/// `replace`: checked before a run starts, and again when the log is created.
pub fn check_free(path: &Path, replace: bool) -> Result<(), LogError> {
    if !replace && std::fs::symlink_metadata(path).is_ok() {
        return Err(LogError::Exists {
            path: path.to_path_buf(),
        });
    }
    Ok(())
}

impl Drop for RequestsLog {
    /// A log never finished (the run failed) leaves no temporary file.
    fn drop(&mut self) {
        let s = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        if s.sink.take().is_some() {
            let _ = std::fs::remove_file(&self.temporary);
        }
    }
}

/// Flushes a file's buffer and its data to disk.
fn close(mut w: BufWriter<File>) -> std::io::Result<()> {
    w.flush()?;
    w.into_inner().map_err(|e| e.into_error())?.sync_all()
}

/// The time columns, bytes and connection of attempt `attempt` of the GET `e`
/// (`stamp`: the transport's stamps of that attempt, if it has them).
fn columns(e: &GetEvent, attempt: u32, stamp: Option<&AttemptEvent>) -> [String; 5] {
    let ms = |us: u64| format!("{:.3}", us as f64 / 1000.0);
    let conn = |id: u32| if id > 0 { id.to_string() } else { String::new() };
    let last = attempt == u32::from(e.attempts);
    let sent = u64::from(e.sent_us);
    match (last, stamp) {
        (true, _) => {
            // A retried GET's last attempt: sent when it was handed over, its first
            // byte its own headers.
            let own = stamp.filter(|_| attempt > 1);
            let first = own
                .and_then(|s| s.headers_us)
                .map_or(sent + u64::from(e.headers_us), u64::from);
            let own = own.map_or(sent, |s| u64::from(s.sent_us));
            [
                ms(own),
                ms(first),
                ms(e.end_us()),
                e.bytes.to_string(),
                conn(e.connection_id),
            ]
        }
        (false, Some(s)) => [
            ms(u64::from(if attempt == 1 { e.sent_us } else { s.sent_us })),
            s.headers_us.map(|h| ms(u64::from(h))).unwrap_or_default(),
            ms(u64::from(s.end_us)),
            "0".to_string(),
            conn(s.connection_id),
        ],
        (false, None) => [
            String::new(),
            String::new(),
            String::new(),
            "0".to_string(),
            String::new(),
        ],
    }
}

/// What a line says besides its configuration: which GET, which attempt of which copy,
/// the time columns, bytes, connection, outcome and (a hedge copy's) fate.
struct Line<'a> {
    get: usize,
    copy: &'static str,
    attempt: u32,
    attempts: u32,
    columns: [String; 5],
    outcome: &'a str,
    fate: &'static str,
}

/// A JSON value of a number column: `null` when empty.
fn num(s: &str) -> &str {
    if s.is_empty() {
        "null"
    } else {
        s
    }
}

/// Writes `line` of configuration `row` (`axes`: its axis columns) to `out`.
fn write_line(format: LogFormat, row: &ConfigResult, axes: &[(&str, String)], line: &Line, out: &mut String) {
    let Line {
        get,
        copy,
        attempt,
        attempts,
        outcome,
        fate,
        ..
    } = line;
    let [sent, first, done, bytes, conn] = &line.columns;
    match format {
        LogFormat::Csv => {
            let _ = write!(
                out,
                "{},{},{},{get},{attempt},{attempts},{sent},{first},{done},{bytes},{conn},{outcome}",
                row.bucket, row.workers, row.repetition
            );
            for (_, value) in axes {
                let _ = write!(out, ",{value}");
            }
            let _ = writeln!(out, ",{copy},{fate}");
        }
        LogFormat::JsonLines => {
            let _ = write!(
                out,
                r#"{{"bucket":{},"workers":{},"repetition":{},"get":{get},"attempt":{attempt},"attempts":{attempts},"sent_ms":{},"first_byte_ms":{},"last_byte_ms":{},"bytes":{bytes},"connection":{},"outcome":"{outcome}""#,
                serde_json::Value::from(row.bucket.as_str()),
                row.workers,
                row.repetition,
                num(sent),
                num(first),
                num(done),
                num(conn)
            );
            for (field, value) in axes {
                // A number (memory, object size) as a number, a name as a string.
                let value = match value.parse::<u64>() {
                    Ok(n) => n.to_string(),
                    Err(_) if value.is_empty() => "null".into(),
                    Err(_) => serde_json::Value::from(value.as_str()).to_string(),
                };
                let _ = write!(out, r#","{field}":{value}"#);
            }
            let fate = if fate.is_empty() {
                "null".to_string()
            } else {
                format!("\"{fate}\"")
            };
            let _ = writeln!(out, r#","copy":"{copy}","fate":{fate}}}"#);
        }
    }
}

/// The lines of one GET: one per attempt (`stamps`: the transport's stamps of its
/// attempts, when it was retried), then one for its hedge copy if one was sent.
fn lines_of(
    (format, row, axes): (LogFormat, &ConfigResult, &[(&str, String)]),
    get: usize,
    e: &GetEvent,
    (stamps, hedge): (&[&AttemptEvent], Option<&HedgeEvent>),
    out: &mut String,
) {
    let attempts = u32::from(e.attempts);
    // The retried attempts: throttled ones first (their order is not known).
    let final_throttled = u32::from(e.error == Some(crate::model::ErrorKind::Throttled));
    let retried_throttled = u32::from(e.throttled).saturating_sub(final_throttled);
    for attempt in 1..=attempts {
        let last = attempt == attempts;
        let outcome = match (last, e.error) {
            (true, None) => "ok",
            (true, Some(kind)) => kind.name(),
            (false, _) if attempt <= retried_throttled => "retried_throttled",
            (false, _) => "retried",
        };
        let stamp = stamps.iter().find(|s| u32::from(s.attempt) == attempt).copied();
        let line = Line {
            get,
            copy: "get",
            attempt,
            attempts,
            columns: columns(e, attempt, stamp),
            outcome,
            fate: "",
        };
        write_line(format, row, axes, &line, out);
    }
    if let Some(h) = hedge {
        write_line(format, row, axes, &hedge_line(get, h), out);
    }
}

/// The line of a hedge copy: its last attempt (its own retries are not stamped).
fn hedge_line(get: usize, h: &HedgeEvent) -> Line<'static> {
    let ms = |us: u32| format!("{:.3}", f64::from(us) / 1000.0);
    let attempts = u32::from(h.attempts);
    Line {
        get,
        copy: "hedge",
        attempt: attempts,
        attempts,
        columns: [
            ms(h.sent_us),
            h.headers_us.map(ms).unwrap_or_default(),
            ms(h.end_us),
            h.bytes.to_string(),
            if h.connection_id > 0 {
                h.connection_id.to_string()
            } else {
                String::new()
            },
        ],
        outcome: match (h.fate, h.error) {
            (HedgeFate::Cancelled, _) => "cancelled",
            (_, Some(kind)) => kind.name(),
            (_, None) => "ok",
        },
        fate: h.fate.name(),
    }
}

impl Observer for RequestsLog {
    fn config_started(&self, bucket: &str, workers: u32, repetition: u32, requests: u64) {
        self.inner.config_started(bucket, workers, repetition, requests);
    }

    fn request_done(&self, ok: bool) {
        self.inner.request_done(ok);
    }

    fn config_finished(&self, result: &ConfigResult) {
        self.inner.config_finished(result);
    }

    fn gets_done(&self, row: &ConfigResult, events: &[GetEvent], attempts: &[AttemptEvent], hedges: &[HedgeEvent]) {
        let mut ordered: Vec<usize> = (0..events.len()).collect();
        ordered.sort_by_key(|&i| events[i].end_us());
        let mut stamped: Vec<&AttemptEvent> = attempts.iter().collect();
        stamped.sort_by_key(|a| (a.get, a.attempt));
        let mut copies: Vec<&HedgeEvent> = hedges.iter().collect();
        copies.sort_by_key(|h| h.get);
        let axes = row.axes.key().fields();
        let mut text = String::new();
        for (n, i) in ordered.into_iter().enumerate() {
            let from = stamped.partition_point(|a| (a.get as usize) < i);
            let to = stamped.partition_point(|a| (a.get as usize) <= i);
            let at = copies.partition_point(|h| (h.get as usize) < i);
            let hedge = copies.get(at).filter(|h| h.get as usize == i).copied();
            text.clear();
            lines_of(
                (self.format, row, &axes),
                n + 1,
                &events[i],
                (&stamped[from..to], hedge),
                &mut text,
            );
            for line in text.split_inclusive('\n') {
                self.write(line, true);
            }
        }
        self.inner.gets_done(row, events, attempts, hedges);
    }
}

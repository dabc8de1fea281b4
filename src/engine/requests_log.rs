//! The request log (`--requests-log FILE`): one line per GET attempt of every timed
//! configuration, as CSV (`.csv`) or JSON lines (`.jsonl`), gzip-compressed when the
//! name ends in `.gz`; pandas and DuckDB read each directly. Columns: the
//! configuration (`bucket`, `workers`, `repetition`), the GET (`get`: its place in the
//! configuration, in the order GETs ended), `attempt` of `attempts`, `sent_ms`,
//! `first_byte_ms` and `last_byte_ms` (after the timed phase began), `bytes`, and
//! `outcome`: `ok`, the error kind of a failed GET, or for an attempt that was retried
//! `retried_throttled` (a 503/429) or `retried` (another cause). Only a GET's last
//! attempt is timed (the transport times a GET as a whole); a retried attempt's time
//! columns are empty. `connection`: the connection the GET's last attempt went out
//! on (the transport numbers each connection it opens, from 1, for both clients, which
//! share it); empty on a retried attempt's line and when the GET got no connection.
//!
//! Bounded: at most `max_bytes` (uncompressed) are written; lines past the cap are
//! dropped and counted, and [`RequestsLog::finish`] says how many.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::model::ConfigResult;

use super::timeline::GetEvent;
use super::Observer;

/// The default cap: 256 MiB of lines (about 3 million of them).
pub const DEFAULT_MAX_BYTES: u64 = 256 << 20;

/// The CSV header.
const CSV_HEADER: &str =
    "bucket,workers,repetition,get,attempt,attempts,sent_ms,first_byte_ms,last_byte_ms,bytes,connection,outcome\n";

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

/// The open file: plain or gzip.
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
    error: Option<String>,
}

/// An [`Observer`] that writes the request log and passes every event on to `inner`
/// (the progress bars).
pub struct RequestsLog {
    path: PathBuf,
    format: LogFormat,
    max_bytes: u64,
    state: Mutex<State>,
    inner: Arc<dyn Observer>,
}

impl RequestsLog {
    /// Creates `path` (its format from its name: `.csv` or `.jsonl`, each optionally
    /// `.gz`); an error naming the file when it cannot be created or its name says
    /// no known format.
    pub fn create(path: &Path, max_bytes: u64, inner: Arc<dyn Observer>) -> Result<RequestsLog, String> {
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
            return Err(format!("{name}: name the file .csv, .jsonl, .csv.gz or .jsonl.gz"));
        };
        let file = File::create(path).map_err(|e| format!("{name}: {e}"))?;
        let buffered = BufWriter::new(file);
        let sink = if gzip {
            Sink::Gzip(flate2::write::GzEncoder::new(buffered, flate2::Compression::fast()))
        } else {
            Sink::Plain(buffered)
        };
        let log = RequestsLog {
            path: path.to_path_buf(),
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
            log.write(CSV_HEADER, false);
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
                s.error.get_or_insert(e.to_string());
                s.sink = None;
            }
        }
    }

    /// Flushes and closes the file; the tally, or the first write error.
    pub fn finish(&self) -> Result<LogTally, String> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let closed = match s.sink.take() {
            Some(Sink::Plain(mut w)) => w.flush(),
            Some(Sink::Gzip(w)) => w.finish().and_then(|mut w| w.flush()),
            None => Ok(()),
        };
        if let Err(e) = closed {
            s.error.get_or_insert(e.to_string());
        }
        match &s.error {
            Some(e) => Err(format!("writing {}: {e}", self.path.display())),
            None => Ok(s.tally),
        }
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

/// The lines of one GET: one per attempt.
fn lines_of(format: LogFormat, row: &ConfigResult, get: usize, e: &GetEvent, out: &mut String) {
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
        let ms = |us: u64| format!("{:.3}", us as f64 / 1000.0);
        let (sent, first, done, bytes) = if last {
            let sent = u64::from(e.sent_us);
            (ms(sent), ms(sent + u64::from(e.headers_us)), ms(e.end_us()), e.bytes)
        } else {
            (String::new(), String::new(), String::new(), 0)
        };
        let conn = match (last, e.connection_id) {
            (true, id) if id > 0 => id.to_string(),
            _ => String::new(),
        };
        match format {
            LogFormat::Csv => {
                let _ = writeln!(
                    out,
                    "{},{},{},{get},{attempt},{attempts},{sent},{first},{done},{bytes},{conn},{outcome}",
                    row.bucket, row.workers, row.repetition
                );
            }
            LogFormat::JsonLines => {
                let num = |s: &str| {
                    if s.is_empty() {
                        "null".to_string()
                    } else {
                        s.to_string()
                    }
                };
                let _ = writeln!(
                    out,
                    r#"{{"bucket":{},"workers":{},"repetition":{},"get":{get},"attempt":{attempt},"attempts":{attempts},"sent_ms":{},"first_byte_ms":{},"last_byte_ms":{},"bytes":{bytes},"connection":{},"outcome":"{outcome}"}}"#,
                    serde_json::Value::from(row.bucket.as_str()),
                    row.workers,
                    row.repetition,
                    num(&sent),
                    num(&first),
                    num(&done),
                    num(&conn)
                );
            }
        }
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

    fn gets_done(&self, row: &ConfigResult, events: &[GetEvent]) {
        let mut ordered: Vec<&GetEvent> = events.iter().collect();
        ordered.sort_by_key(|e| e.end_us());
        let mut text = String::new();
        for (i, e) in ordered.into_iter().enumerate() {
            text.clear();
            lines_of(self.format, row, i + 1, e, &mut text);
            for line in text.split_inclusive('\n') {
                self.write(line, true);
            }
        }
        self.inner.gets_done(row, events);
    }
}

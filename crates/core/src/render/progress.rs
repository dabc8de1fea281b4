//! Progress for people watching a sweep: an indicatif bar per configuration (objects
//! done, rate, errors, elapsed) that stays on screen as a one-line result when the
//! configuration finishes; or, where there is no terminal, one plain line per finished
//! configuration; or nothing (`--quiet`).
//!
//! The bar costs one atomic increment per request (indicatif redraws at most 20 times
//! a second), so it does not disturb the CPU-per-GET figures.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::engine::{Observer, Quiet};
use crate::model::ConfigResult;

use super::layout::{wrap_text, DEFAULT_WIDTH_CHARS};

/// One line describing a finished configuration, named `name` (the bucket, with the
/// client and hedge when the run has several: what `config_started` was told).
pub(crate) fn config_line(name: &str, r: &ConfigResult) -> String {
    format!(
        "{:<16}{} workers {:>4} rep {}: {:>8.0} ms  {:>8.0} objects/s  ttfb p50 {:>7.2} ms  errors {}",
        name,
        r.size_axis_bytes().map_or(String::new(), |s| format!(" {s:>8} B")),
        r.workers,
        r.repetition,
        r.wall_ms,
        r.objects_per_s,
        r.ttfb_ms.p50,
        r.errors.short()
    )
}

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressMode {
    /// A live bar per configuration (stderr is a terminal).
    Bars,
    /// One line per finished configuration.
    Lines,
    /// Nothing.
    Quiet,
}

impl ProgressMode {
    /// Bars on a terminal, lines elsewhere, nothing when `quiet`.
    pub fn for_stderr(quiet: bool) -> Self {
        if quiet {
            ProgressMode::Quiet
        } else if std::io::stderr().is_terminal() {
            ProgressMode::Bars
        } else {
            ProgressMode::Lines
        }
    }

    /// The observer for this mode, drawing on stderr, each finished line wrapped at
    /// `width_chars` (the width the tables use).
    pub fn observer(self, width_chars: usize) -> Arc<dyn Observer> {
        match self {
            ProgressMode::Bars => Arc::new(Bars {
                width_chars,
                ..Bars::new(ProgressDrawTarget::stderr)
            }),
            ProgressMode::Lines => Arc::new(Lines {
                width_chars,
                ..Lines::default()
            }),
            ProgressMode::Quiet => Arc::new(Quiet),
        }
    }
}

/// Prints [`config_line`] on stderr for each finished configuration.
pub(crate) struct Lines {
    /// The name of the configuration running, as `config_started` gave it.
    name: RwLock<String>,
    /// The width a line is wrapped at.
    width_chars: usize,
}

impl Default for Lines {
    fn default() -> Self {
        Lines {
            name: RwLock::new(String::new()),
            width_chars: DEFAULT_WIDTH_CHARS,
        }
    }
}

/// A finished configuration's line, indented by two and wrapped at `width_chars`:
/// named as `config_started` named it (`started`), or by the row's bucket if that
/// name is not the row's.
pub(crate) fn finished_line(started: &str, r: &ConfigResult, width_chars: usize) -> String {
    let name = if started.starts_with(r.bucket.as_str()) {
        started
    } else {
        r.bucket.as_str()
    };
    wrap_text(&format!("  {}", config_line(name, r)), width_chars)
}

/// The name a configuration was started with.
fn started(name: &RwLock<String>) -> String {
    name.read().unwrap_or_else(|e| e.into_inner()).clone()
}

impl Observer for Lines {
    fn config_started(&self, name: &str, _workers: u32, _repetition: u32, _requests: u64) {
        *self.name.write().unwrap_or_else(|e| e.into_inner()) = name.to_string();
    }

    fn config_finished(&self, r: &ConfigResult) {
        eprintln!("{}", finished_line(&started(&self.name), r, self.width_chars));
    }
}

/// A progress bar per configuration.
pub(crate) struct Bars {
    target: fn() -> ProgressDrawTarget,
    bar: RwLock<ProgressBar>,
    errors: AtomicU64,
    /// The name of the configuration running, as `config_started` gave it.
    name: RwLock<String>,
    /// The width a finished line is wrapped at.
    width_chars: usize,
}

/// A running bar's counts, after its name and bar: 59 characters at most (7-digit
/// counts, a 10-character rate, 6 of errors, `hh:mm:ss`).
const COUNTS: &str = " {pos:>7}/{len:<7} objects {rate:>10}  errors {msg:<6} {elapsed_precise}";
const COUNTS_CHARS: usize = 59;
/// The counts where the whole of [`COUNTS`] does not fit: objects and errors.
const SHORT_COUNTS: &str = " {pos}/{len} errors {msg}";
const DONE: &str = "{msg}";

/// The running bar's template for a bar named `prefix`, fitted to `width_chars`: the
/// name (padded to 30), a bar of up to 30 and the counts when they fit; else without
/// the bar; else the name and the short counts.
fn running_template(prefix: &str, width_chars: usize) -> String {
    let name_chars = prefix.chars().count().max(30);
    let room = width_chars.saturating_sub(2 + name_chars + COUNTS_CHARS);
    if room >= 13 {
        let bar = (room - 3).min(30);
        format!("  {{prefix:<30}} [{{bar:{bar}.cyan/blue}}]{COUNTS}")
    } else if room > 0 {
        format!("  {{prefix:<30}}{COUNTS}")
    } else {
        format!("  {{prefix}}{SHORT_COUNTS}")
    }
}

impl Bars {
    /// Bars drawn on the targets `target` makes (one per configuration).
    pub(crate) fn new(target: fn() -> ProgressDrawTarget) -> Self {
        Bars {
            target,
            bar: RwLock::new(ProgressBar::hidden()),
            errors: AtomicU64::new(0),
            name: RwLock::new(String::new()),
            width_chars: DEFAULT_WIDTH_CHARS,
        }
    }
}

impl Observer for Bars {
    fn config_started(&self, name: &str, workers: u32, repetition: u32, requests: u64) {
        *self.name.write().unwrap_or_else(|e| e.into_inner()) = name.to_string();
        let prefix = format!("{name} workers {workers} rep {repetition}");
        let bar = ProgressBar::with_draw_target(Some(requests), (self.target)());
        bar.set_style(
            ProgressStyle::with_template(&running_template(&prefix, self.width_chars))
                .expect("the template is valid")
                .with_key(
                    "rate",
                    |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                        let _ = write!(w, "{:.0}/s", state.per_sec());
                    },
                )
                .progress_chars("=> "),
        );
        bar.set_prefix(prefix);
        bar.set_message("0");
        self.errors.store(0, Ordering::Relaxed);
        *self.bar.write().unwrap_or_else(|e| e.into_inner()) = bar;
    }

    fn request_done(&self, ok: bool) {
        let bar = self.bar.read().unwrap_or_else(|e| e.into_inner());
        if !ok {
            let n = self.errors.fetch_add(1, Ordering::Relaxed) + 1;
            bar.set_message(n.to_string());
        }
        bar.inc(1);
    }

    fn config_finished(&self, r: &ConfigResult) {
        let bar = self.bar.read().unwrap_or_else(|e| e.into_inner());
        bar.set_style(ProgressStyle::with_template(DONE).expect("the template is valid"));
        bar.finish_with_message(finished_line(&started(&self.name), r, self.width_chars));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::test_rows::row;
    use indicatif::TermLike;
    use std::sync::Mutex;

    /// A terminal that records what is written to it.
    #[derive(Debug, Default)]
    struct Screen(Mutex<String>);

    static SCREEN: std::sync::OnceLock<Arc<Screen>> = std::sync::OnceLock::new();

    #[derive(Debug)]
    struct Shared(Arc<Screen>);

    impl TermLike for Shared {
        fn width(&self) -> u16 {
            160
        }
        fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn write_line(&self, s: &str) -> std::io::Result<()> {
            let mut t = self.0 .0.lock().unwrap();
            t.push_str(s);
            t.push('\n');
            Ok(())
        }
        fn write_str(&self, s: &str) -> std::io::Result<()> {
            self.0 .0.lock().unwrap().push_str(s);
            Ok(())
        }
        fn clear_line(&self) -> std::io::Result<()> {
            Ok(())
        }
        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn screen_target() -> ProgressDrawTarget {
        ProgressDrawTarget::term_like(Box::new(Shared(SCREEN.get_or_init(Default::default).clone())))
    }

    #[test]
    fn a_bar_per_configuration_ends_as_its_result_line() {
        // As wide as the screen: the line is not wrapped.
        let bars = Bars {
            width_chars: 160,
            ..Bars::new(screen_target)
        };
        bars.config_started("express-like", 8, 1, 100);
        for i in 0..100 {
            bars.request_done(i % 10 != 0);
            if i == 50 {
                // Past the redraw rate limit, so the bar itself is drawn mid-way.
                std::thread::sleep(std::time::Duration::from_millis(120));
            }
        }
        let mut r = row("express-like", 8, 1, 250.0, 10);
        r.objects_per_s = 360.0;
        bars.config_finished(&r);
        let text = SCREEN.get().unwrap().0.lock().unwrap().clone();
        assert!(text.contains("express-like workers 8 rep 1"), "{text}");
        assert!(text.contains("/100"), "{text}");
        assert!(text.contains("objects"), "{text}");
        assert!(text.contains("errors 6") || text.contains("errors 5"), "{text}");
        assert!(
            text.contains("express-like     workers    8 rep 1:      250 ms       360 objects/s"),
            "{text}"
        );
        assert!(text.contains("not_found=10"), "{text}");
    }

    /// The running bar's line fits the width it is given, whatever the name's length:
    /// every field at its widest (7-digit counts, a long rate, hours elapsed).
    #[test]
    fn a_running_bar_fits_the_width() {
        // The template drawn with every field at its widest.
        let widest = |template: &str, prefix: &str| -> usize {
            let mut line = template.replace("{prefix:<30}", &format!("{prefix:<30}"));
            line = line.replace("{prefix}", prefix);
            if let Some(at) = line.find("{bar:") {
                let end = at + line[at..].find('}').unwrap();
                let n: usize = line[at + 5..end].split('.').next().unwrap().parse().unwrap();
                line.replace_range(at..=end, &"=".repeat(n));
            }
            for (field, widest) in [
                ("{pos:>7}", "1234567"),
                ("{len:<7}", "1234567"),
                ("{pos}", "1234567"),
                ("{len}", "1234567"),
                ("{rate:>10}", "12345678/s"),
                ("{msg:<6}", "123456"),
                ("{msg}", "123456"),
                ("{elapsed_precise}", "99:59:59"),
            ] {
                line = line.replace(field, widest);
            }
            assert!(!line.contains('{'), "a field left: {line}");
            line.chars().count()
        };
        let names = [
            "b-1 workers 1 rep 1",
            "express-like--lab1-az1--x-s3 lean hedge p95 workers 128 rep 2",
            "standard-like 512MB lean hedge 40ms workers 4096 rep 10",
        ];
        for width in [60, 80, 100, 160] {
            for name in names {
                let template = running_template(name, width);
                let chars = widest(&template, name);
                assert!(ProgressStyle::with_template(&template).is_ok(), "{template}");
                if 2 + name.chars().count() + 30 <= width {
                    assert!(chars <= width, "{width}: {chars} characters for {name:?}: {template}");
                }
            }
        }
        assert!(
            running_template(names[0], 160).contains("{bar:30"),
            "a wide screen keeps the bar"
        );
        assert!(!running_template(names[1], 100).contains("{bar"), "no room for a bar");
    }

    #[test]
    fn quiet_wins() {
        assert_eq!(ProgressMode::for_stderr(true), ProgressMode::Quiet);
    }

    #[test]
    fn lines_name_the_client_and_hedge_they_were_started_with() {
        let lines = Lines::default();
        let mut r = row("standard-like", 1, 1, 250.0, 0);
        for name in ["standard-like sdk hedge off", "standard-like lean hedge p95"] {
            lines.config_started(name, 1, 1, 100);
            assert!(finished_line(&started(&lines.name), &r, 500).starts_with(&format!("  {name}")));
        }
        // A name for another bucket (none given for this row): the row's bucket.
        r.bucket = "other".into();
        assert!(finished_line(&started(&lines.name), &r, 500).starts_with("  other "));
    }

    #[test]
    fn a_finished_line_fits_the_width() {
        let r = row("express-like--lab1-az1--x-s3", 256, 1, 250.0, 0);
        let name = "express-like--lab1-az1--x-s3 lean hedge p95";
        for width in [80, 100] {
            let text = finished_line(name, &r, width);
            assert!(text.lines().all(|l| l.chars().count() <= width), "{width}: {text}");
            assert!(text.starts_with(&format!("  {name} workers")), "{text}");
            assert!(text.lines().count() == 2, "wrapped, not cut: {text}");
        }
    }
}

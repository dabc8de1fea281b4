//! Issue 38: `report --html` opened in a real headless browser (Chromium, from `make
//! browser-tools`, which `make test` runs). On docs/demo.json's page: the browser logs
//! no console message (no script error, no refused load), the page names nothing to
//! fetch (no `src` or `href` at all, and a Content-Security-Policy that forbids any),
//! the figure is drawn (an SVG with a line per bucket and the buckets in its legend),
//! and every row of every table `report --markdown` prints is a row of the page as the
//! browser parsed it. A control page that does try to fetch an image must make the
//! browser log its refusal, so the console check can fail. Without Chromium the test
//! skips, saying why, unless CI=true, where it fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::{run_within, BIN};

const DEMO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/demo.json");

fn chromium() -> Option<PathBuf> {
    let found = Command::new("sh")
        .args(["-c", "command -v chromium"])
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    Some(PathBuf::from(String::from_utf8_lossy(&found.stdout).trim()))
}

/// Chromium, or `None` after saying the test is skipped (under CI=true: a failure).
pub(crate) fn chromium_or_skip() -> Option<PathBuf> {
    let found = chromium();
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "under CI: no chromium (make browser-tools installs it)"
        );
        eprintln!("SKIPPED: no chromium (make browser-tools installs it, as root)");
    }
    found
}

/// Chromium headless on `page` with `mode` (`--dump-dom` or `--screenshot=FILE`):
/// (stdout, stderr, where its console messages are logged).
pub(crate) fn browse(chromium: &Path, page: &Path, mode: &str, profile: &Path) -> (String, String) {
    let mut cmd = Command::new(chromium);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-extensions",
        "--disable-background-networking",
        "--enable-logging=stderr",
        "--v=0",
        "--window-size=1280,2400",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .arg(mode)
    .arg(format!("file://{}", page.display()));
    let out = run_within("chromium", &mut cmd, Duration::from_secs(90));
    assert!(
        out.status.success(),
        "chromium failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The console messages (and refused loads) Chromium logged.
pub(crate) fn console(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Refused to") || l.contains("Uncaught"))
        .collect()
}

/// The text of each `<tr>` of `dom` as its cells' texts joined by " | ".
pub(crate) fn dom_rows(dom: &str) -> Vec<String> {
    dom.split("<tr>")
        .skip(1)
        .map(|tr| {
            let tr = tr.split("</tr>").next().unwrap_or("");
            let cells: Vec<String> = tr
                .split("</t")
                .filter_map(|c| c.rfind("<td").or_else(|| c.rfind("<th")).map(|i| &c[i..]))
                .map(|c| text_of(c.split_once('>').map_or("", |(_, t)| t)))
                .collect();
            cells.join(" | ")
        })
        .collect()
}

/// Markup removed and the entities Chromium writes turned back into characters.
fn text_of(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&nbsp;", " ")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
        .trim()
        .to_string()
}

/// Every table row `report --markdown` prints (header and data rows, not the rules),
/// as " | "-joined cells without Markdown's code and emphasis marks.
pub(crate) fn markdown_rows(markdown: &str) -> Vec<String> {
    markdown
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with('|') && !l.starts_with("|---") && !l.starts_with("| ---"))
        .filter(|l| {
            !l.trim_matches(|c| c == '|' || c == '-' || c == ':' || c == ' ')
                .is_empty()
        })
        .map(|l| {
            l.trim_matches('|')
                .split('|')
                .map(|c| c.trim().replace(['`', '*'], ""))
                .collect::<Vec<_>>()
                .join(" | ")
        })
        .collect()
}

#[test]
fn the_html_report_in_a_headless_browser() {
    let Some(chromium) = chromium_or_skip() else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("s3sweep-html-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let page = dir.join("report.html");
    let made = run_within(
        "s3sweep report --html",
        Command::new(BIN).args(["report", DEMO, "--html"]).arg(&page),
        Duration::from_secs(60),
    );
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let markdown = run_within(
        "s3sweep report --markdown",
        Command::new(BIN).args(["report", DEMO, "--markdown"]),
        Duration::from_secs(60),
    );
    let markdown = String::from_utf8_lossy(&markdown.stdout).into_owned();
    let html = std::fs::read_to_string(&page).unwrap();

    // Nothing to fetch, and a policy that forbids it.
    assert!(html.contains("http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'"));
    for attribute in [" src=", " href=", "@import", "url("] {
        assert!(!html.contains(attribute), "{attribute} in the page");
    }

    let (dom, stderr) = browse(&chromium, &page, "--dump-dom", &dir.join("profile"));
    assert!(
        console(&stderr).is_empty(),
        "the browser logged: {:#?}",
        console(&stderr)
    );

    the_page_shows_the_figure_and_every_row(&dom, &markdown);

    // The console check can fail: a page that tries to load an image is refused, and
    // the browser says so.
    let control = dir.join("control.html");
    let refused = html.replacen("</body>", "<img src=\"http://127.0.0.1:9/x.png\"></body>", 1);
    std::fs::write(&control, refused).unwrap();
    let (_, stderr) = browse(&chromium, &control, "--dump-dom", &dir.join("profile2"));
    assert!(
        !console(&stderr).is_empty(),
        "a refused load is logged, so the check above can fail:\n{stderr}"
    );

    // A picture of the page, for people (kept when S3SWEEP_KEEP_SCREENSHOT names a path).
    let shot = dir.join("report.png");
    browse(
        &chromium,
        &page,
        &format!("--screenshot={}", shot.display()),
        &dir.join("profile3"),
    );
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG") && png.len() > 20_000, "{} bytes", png.len());
    if let Ok(keep) = std::env::var("S3SWEEP_KEEP_SCREENSHOT") {
        std::fs::copy(&shot, keep).unwrap();
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The page as the browser built it (`dom`): one figure with a line per bucket (and
/// more: percentiles, CDF); every table row of `report --markdown` is a row of it; and
/// the summary first, its rows naming each bucket's best configuration.
fn the_page_shows_the_figure_and_every_row(dom: &str, markdown: &str) {
    // The figure: one SVG, a line per bucket (and more: percentiles, CDF), both
    // buckets in its text.
    assert_eq!(dom.matches("<svg").count(), 1, "one figure");
    let svg = &dom[dom.find("<svg").unwrap()..dom.find("</svg>").unwrap()];
    assert!(svg.matches("<polyline").count() >= 4, "lines drawn");
    for bucket in ["standard-like", "express-like--lab1-az1--x-s3"] {
        assert!(svg.contains(bucket), "{bucket} in the figure");
    }

    // Every table row of `report --markdown` is a row of the page.
    let rows = dom_rows(dom);
    let wanted = markdown_rows(markdown);
    assert!(wanted.len() >= 20, "{} Markdown rows:\n{markdown}", wanted.len());
    let missing: Vec<&String> = wanted.iter().filter(|r| !rows.contains(r)).collect();
    assert!(
        missing.is_empty(),
        "rows of report --markdown not in the page: {missing:#?}"
    );
    // And the summary first: its table's rows name each bucket's best configuration.
    let summary = &dom[dom.find("id=\"summary\"").unwrap()..dom.find("id=\"figures\"").unwrap()];
    for bucket in ["standard-like", "express-like--lab1-az1--x-s3"] {
        assert!(summary.contains(bucket), "{bucket} in the summary");
    }
}

//! One self-contained HTML page of a result (`report --html FILE`) or of a comparison
//! (`compare --html FILE`), to share in a review, a ticket or a chat: the summary first
//! (per bucket, from its story: best, knee, what bound it and what to do), then the
//! figure (the plot, inline SVG), then every table and note exactly as
//! `report --markdown` prints them, converted once (pulldown-cmark). Nothing is
//! fetched: no script, font, stylesheet or image outside the page, and a
//! Content-Security-Policy that forbids any (so a page opened from S3 or a PR
//! attachment makes no request). Text from the result (bucket names, error
//! samples, notes) stays text: raw HTML in the Markdown shows as text, a link, an
//! image or an autolink (`[x](javascript:..)`, `![i](https://..)`, `<https://..>`)
//! shows as the Markdown it was written in (no renderer writes one, so any found came
//! from data), and control and bidi characters show as escapes
//! ([`crate::sys::visible`]); the CSP is a second layer, not the only one. Readable
//! on a phone (tables scroll sideways, the figure scales) and printable.

use std::fmt::Write as _;

use pulldown_cmark::{html, CowStr, Event, Options, Parser, Tag, TagEnd};

use crate::analysis::story::{Shape, Story};
use crate::model::SweepResult;

/// The page's Content-Security-Policy: nothing from anywhere but inline styles and
/// `data:` images.
pub(crate) const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

const STYLE: &str = "\
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:0 auto;max-width:75rem;padding:1rem;line-height:1.45;color:#1b1f24}\
h1{font-size:1.5rem;margin:.2rem 0}h2{font-size:1.2rem;border-bottom:1px solid #d0d7de;padding-bottom:.2rem;margin-top:1.6rem}\
.source{color:#57606a;font-size:.9rem}\
.table{overflow-x:auto;margin:.6rem 0}table{border-collapse:collapse;font-size:.85rem;font-variant-numeric:tabular-nums}\
th,td{border:1px solid #d0d7de;padding:.25rem .5rem;white-space:nowrap}th{background:#f6f8fa}#summary td{white-space:normal;min-width:6rem}\
figure{margin:0}figure svg{max-width:100%;height:auto}\
code{font-size:.85em;background:#f6f8fa;padding:0 .2em}\
@media print{body{max-width:none}.table{overflow:visible}h2{break-after:avoid}figure{break-inside:avoid}}";

/// A whole page: `title`, a line saying where it came from, the summary and details
/// (Markdown, as `report --markdown` prints them) and the figure (an SVG document).
pub fn page(title: &str, source: &str, summary_md: &str, figure_svg: Option<&str>, details_md: &str) -> String {
    let mut out = String::with_capacity(details_md.len() * 2 + figure_svg.map_or(0, str::len) + 4096);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str(&format!(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n"
    ));
    out.push_str(&format!(
        "<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        escape(title)
    ));
    out.push_str(&format!(
        "<header><h1>{}</h1><p class=\"source\">{}</p></header>\n",
        escape(title),
        escape(source)
    ));
    out.push_str("<section id=\"summary\">\n<h2>Summary</h2>\n");
    out.push_str(&markdown_to_html(summary_md));
    out.push_str("</section>\n");
    if let Some(svg) = figure_svg {
        out.push_str("<section id=\"figures\">\n<h2>Figures</h2>\n<figure>\n");
        out.push_str(strip_xml_declaration(svg));
        out.push_str("\n</figure>\n</section>\n");
    }
    out.push_str("<section id=\"details\">\n<h2>Every configuration</h2>\n");
    out.push_str(&markdown_to_html(details_md));
    out.push_str("</section>\n</body>\n</html>\n");
    out
}

/// The page of `result` (`report --html`, and the Lambda's page beside its result):
/// `source` says where it came from; `overrides` as the cost table takes them.
pub fn report_page(result: &SweepResult, source: &str, overrides: crate::analysis::cost::CostOverrides) -> String {
    let svg = super::figure::render_svg(result).ok();
    let details = super::report_text(result, &super::Layout::wide(super::Style::Markdown), overrides);
    page(
        "s3sweep report",
        source,
        &summary_markdown(result),
        svg.as_deref(),
        &details,
    )
}

/// The summary of `result` as Markdown: one row per bucket (and axis value): the best
/// configuration, the knee, the verdict where the sweep ended and the recommendation,
/// all from the bucket's [`Story`] (the lines under its table read the same), and the
/// best row's explanation.
pub(crate) fn summary_markdown(result: &SweepResult) -> String {
    let named = result.named_axes();
    let mut out = String::from(
        "| bucket | best workers | objects/s | wall ms | knee | verdict at the largest count | recommended | at the best: what bound it |\n\
         |---|---:|---:|---:|---|---|---|---|\n",
    );
    for s in &result.summary {
        let story = Story::of_bucket(result, s);
        let best = result
            .rows_for(s)
            .find(|r| r.workers == s.best_workers)
            .and_then(|r| r.diagnosis.as_ref());
        let label = s.axes.label(named);
        let knee = match story.shape {
            Shape::Flattened { knee, .. } => format!("{knee} workers"),
            Shape::NoCleanRows => "none (errors at every count)".to_string(),
            Shape::StillRising { .. } => format!("none ({})", story.knee_words()),
        };
        let _ = writeln!(
            out,
            "| {}{} | {} | {:.0} | {:.1} | {} | {} | {} | {} |",
            s.bucket,
            label,
            s.best_workers,
            s.best_objects_per_s,
            s.best_wall_ms,
            knee,
            story.binding.map_or("-", |b| b.verdict.name()),
            story.recommendation.replace('|', "/"),
            best.map_or("-".to_string(), |d| d.explanation.replace('|', "/")),
        );
    }
    if result.summary.is_empty() {
        out.push_str("| (no configuration measured) | | | | | | | |\n");
    }
    out
}

/// Markdown (tables on) as HTML; raw HTML in it becomes text, a link or an image its
/// Markdown source as text, control and bidi characters visible; each line of a
/// paragraph stays a line, every table scrolls.
pub(crate) fn markdown_to_html(markdown: &str) -> String {
    let mut events = Vec::new();
    let mut inside_link = 0usize;
    for (event, range) in Parser::new_ext(markdown, Options::ENABLE_TABLES).into_offset_iter() {
        match event {
            Event::Start(Tag::Link { .. } | Tag::Image { .. }) => {
                if inside_link == 0 {
                    events.push(Event::Text(shown(&markdown[range])));
                }
                inside_link += 1;
            }
            Event::End(TagEnd::Link | TagEnd::Image) => inside_link = inside_link.saturating_sub(1),
            _ if inside_link > 0 => {}
            Event::Html(raw) | Event::InlineHtml(raw) | Event::Text(raw) => events.push(Event::Text(shown(&raw))),
            Event::Code(code) => events.push(Event::Code(shown(&code))),
            // The notes under a table are one line each in the terminal: keep them so.
            Event::SoftBreak => events.push(Event::HardBreak),
            other => events.push(other),
        }
    }
    let mut body = String::new();
    html::push_html(&mut body, events.into_iter());
    body.replace("<table>", "<div class=\"table\"><table>")
        .replace("</table>", "</table></div>")
}

/// `text` with control and bidi characters as visible escapes, for a text event.
fn shown(text: &str) -> CowStr<'static> {
    CowStr::from(crate::sys::visible::visible(text).into_owned())
}

/// `text` safe inside an element or a double-quoted attribute, control and bidi
/// characters shown as escapes.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in crate::sys::visible::visible(text).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// An SVG document without its `<?xml ...?>` line, to sit inside HTML.
fn strip_xml_declaration(svg: &str) -> &str {
    let svg = svg.trim_start();
    match svg
        .strip_prefix("<?xml")
        .and_then(|rest| rest.find("?>").map(|end| &rest[end + 2..]))
    {
        Some(rest) => rest.trim_start(),
        None => svg,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_html_in_a_result_shows_as_text() {
        let md = "| a | b |\n|---|---|\n| <script>alert(1)</script> | <img src=\"http://example.com/x.png\"> |\n\n\
                  note: <iframe src=\"https://example.com\"></iframe>\n";
        let body = markdown_to_html(md);
        for tag in ["<script", "<img", "<iframe"] {
            assert!(!body.contains(tag), "{tag} in {body}");
        }
        assert!(body.contains("&lt;script&gt;") && body.contains("&lt;iframe"), "{body}");
        assert!(body.contains("<div class=\"table\"><table>"), "{body}");
    }

    #[test]
    fn links_images_and_autolinks_from_data_stay_text() {
        let md = "| bucket | note |\n|---|---|\n| [x](javascript:alert(1)) | ![i](https://evil.example/p.png) |\n\n\
                  note: <https://evil.example> and [ref][r] and `code\u{1b}[2J` \u{202e}gnp.exe\n\n[r]: https://evil.example/r\n";
        let body = markdown_to_html(md);
        for bad in ["<a ", "<img", "href=", "src=", "\u{202e}", "\u{1b}"] {
            assert!(!body.contains(bad), "{bad:?} in {body}");
        }
        for text in [
            "[x](javascript:alert(1))",
            "![i](https://evil.example/p.png)",
            "&lt;https://evil.example&gt;",
            "[ref][r]",
            "\\u{202e}gnp.exe",
            "code\\u{1b}[2J",
        ] {
            assert!(body.contains(text), "{text:?} not shown in {body}");
        }
        assert!(escape("a\u{202e}b").contains("a\\u{202e}b"));
    }

    #[test]
    fn the_page_fetches_nothing_and_escapes_its_own_text() {
        let svg = "<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"><polyline/></svg>";
        let page = page(
            "s3sweep <report>",
            "from \"a\" & b",
            "- best",
            Some(svg),
            "| x |\n|---|\n| 1 |\n",
        );
        assert!(page.starts_with("<!DOCTYPE html>"));
        assert!(page.contains(CSP));
        assert!(page.contains("<title>s3sweep &lt;report&gt;</title>"));
        assert!(page.contains("from &quot;a&quot; &amp; b"));
        assert!(!page.contains("<?xml"), "the SVG's declaration is dropped");
        assert!(page.contains("<figure>\n<svg xmlns"));
        for attribute in ["src=", "href="] {
            assert!(!page.contains(attribute), "{attribute} in the page");
        }
    }
}

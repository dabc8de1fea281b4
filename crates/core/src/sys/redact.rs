//! Secrets kept out of everything the process writes: [`redact`] blanks the values of
//! credential headers and query parameters (`x-amz-s3session-token`,
//! `x-amz-security-token`, `authorization`), credential elements of S3's XML
//! (`<SessionToken>`, `<SecretAccessKey>`), and the password of a URL
//! (`http://user:***@host`); [`Redacting`] is a log writer that passes every line
//! through it, at every level (the SDK and hyper print request headers at trace).

use std::borrow::Cow;
use std::io::{self, Write};

/// What a secret is replaced with.
pub const REDACTED: &str = "***";

/// Names whose value is a secret, lowercase: headers, query parameters, JSON fields.
const SECRET_NAMES: &[&str] = &[
    "x-amz-s3session-token",
    "x-amz-security-token",
    "authorization",
    "x-amz-server-side-encryption-customer-key",
    "session_token",
    "secret_access_key",
    "aws_secret_access_key",
];

/// XML elements whose text is a secret.
const SECRET_ELEMENTS: &[&str] = &["SessionToken", "SecretAccessKey"];

/// `text` with every secret it shows replaced by [`REDACTED`].
pub fn redact(text: &str) -> Cow<'_, str> {
    let lower = text.to_ascii_lowercase();
    let needs = SECRET_NAMES.iter().any(|n| lower.contains(n))
        || SECRET_ELEMENTS.iter().any(|e| text.contains(e))
        || text.contains("://");
    if !needs {
        return Cow::Borrowed(text);
    }
    let mut out = url_passwords(text);
    for name in SECRET_NAMES {
        out = named_values(&out, name);
    }
    for element in SECRET_ELEMENTS {
        out = element_texts(&out, element);
    }
    Cow::Owned(out)
}

/// `url` without its user and password (`http://u:p@host/` is `http://host/`).
pub fn without_userinfo(url: &str) -> String {
    let Some(i) = url.find("://") else {
        return url.to_string();
    };
    let (head, tail) = url.split_at(i + 3);
    let authority_end = tail.find(['/', '?', '#']).unwrap_or(tail.len());
    match tail[..authority_end].rfind('@') {
        Some(at) => format!("{head}{}", &tail[at + 1..]),
        None => url.to_string(),
    }
}

/// `scheme://user:password@host` becomes `scheme://user:***@host`.
fn url_passwords(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let authority_end = tail
            .find(|c: char| c == '/' || c == '?' || c == '#' || c.is_whitespace() || c == '"' || c == '\'')
            .unwrap_or(tail.len());
        let authority = &tail[..authority_end];
        match (authority.rfind('@'), authority.find(':')) {
            (Some(at), Some(colon)) if colon < at => {
                out.push_str(&authority[..colon + 1]);
                out.push_str(REDACTED);
                out.push_str(&authority[at..]);
            }
            _ => out.push_str(authority),
        }
        rest = &tail[authority_end..];
    }
    out.push_str(rest);
    out
}

/// The value after each case-insensitive `name` (`name: v`, `"name": "v"`,
/// `name=v`) replaced, up to the next quote, `&`, `,`, `;`, `}` or line end (for
/// `authorization`, whose value holds commas and spaces, up to a quote or line end).
fn named_values(text: &str, name: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut pos = 0;
    while let Some(found) = lower[pos..].find(name) {
        let start = pos + found;
        let after_name = start + name.len();
        out.push_str(&text[pos..after_name]);
        // Separators between the name and its value.
        let sep_len = text[after_name..]
            .find(|c: char| !matches!(c, '"' | '\'' | ':' | '=' | ' ' | '\\'))
            .unwrap_or(text.len() - after_name);
        if sep_len == 0 || !text[after_name..after_name + sep_len].contains([':', '=']) {
            pos = after_name;
            continue;
        }
        let value_start = after_name + sep_len;
        out.push_str(&text[after_name..value_start]);
        let stops: &[char] = if name == "authorization" {
            &['"', '\'', '\r', '\n', '\\']
        } else {
            &['"', '\'', '&', ',', ';', '}', ')', ' ', '\r', '\n', '\\', '<']
        };
        let value_len = text[value_start..].find(stops).unwrap_or(text.len() - value_start);
        if value_len > 0 {
            out.push_str(REDACTED);
        }
        pos = value_start + value_len;
    }
    out.push_str(&text[pos..]);
    out
}

/// `<Element>secret</Element>` becomes `<Element>***</Element>`.
fn element_texts(text: &str, element: &str) -> String {
    let open = format!("<{element}>");
    let close = format!("</{element}>");
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(&open) {
        let body = i + open.len();
        out.push_str(&rest[..body]);
        match rest[body..].find(&close) {
            Some(j) => {
                out.push_str(REDACTED);
                rest = &rest[body + j..];
            }
            None => {
                out.push_str(REDACTED);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// A log writer (`tracing_subscriber`'s `MakeWriter`) that redacts each event before
/// writing it to `W` (stderr for the CLI, stdout for the Lambda).
#[derive(Debug, Clone, Copy)]
pub struct Redacting<F>(pub F);

impl<'a, F, W> tracing_subscriber::fmt::MakeWriter<'a> for Redacting<F>
where
    F: Fn() -> W + 'static,
    W: Write,
{
    type Writer = EventBuffer<W>;
    fn make_writer(&'a self) -> Self::Writer {
        EventBuffer {
            buf: Vec::new(),
            out: (self.0)(),
        }
    }
}

/// One log event, held until it is complete, then redacted and written.
pub struct EventBuffer<W: Write> {
    buf: Vec<u8>,
    out: W,
}

impl<W: Write> Write for EventBuffer<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<W: Write> Drop for EventBuffer<W> {
    fn drop(&mut self) {
        let text = String::from_utf8_lossy(&self.buf);
        let _ = self.out.write_all(redact(&text).as_bytes());
        let _ = self.out.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_in_headers_urls_and_xml_are_blanked() {
        let cases = [
            (
                r#"headers: {"x-amz-s3session-token": "CANARY1", "host": "h"}"#,
                r#"headers: {"x-amz-s3session-token": "***", "host": "h"}"#,
            ),
            (
                "X-Amz-S3session-Token: CANARY1\r\nhost: h",
                "X-Amz-S3session-Token: ***\r\nhost: h",
            ),
            (
                "GET /?X-Amz-Security-Token=CANARY2&x=1",
                "GET /?X-Amz-Security-Token=***&x=1",
            ),
            (
                r#"authorization: "AWS4-HMAC-SHA256 Credential=AK/x, Signature=ab""#,
                r#"authorization: "***""#,
            ),
            (
                "endpoint http://user:CANARY3@127.0.0.1:9000/x and https://h/",
                "endpoint http://user:***@127.0.0.1:9000/x and https://h/",
            ),
            (
                "<Credentials><SessionToken>CANARY4</SessionToken><SecretAccessKey>CANARY5</SecretAccessKey>",
                "<Credentials><SessionToken>***</SessionToken><SecretAccessKey>***</SecretAccessKey>",
            ),
            (r#"{"session_token": "CANARY6"}"#, r#"{"session_token": "***"}"#),
        ];
        for (input, want) in cases {
            assert_eq!(redact(input), want, "{input}");
        }
        assert!(matches!(redact("plain line, nothing secret"), Cow::Borrowed(_)));
        assert_eq!(without_userinfo("http://u:p@127.0.0.1:9/x@y"), "http://127.0.0.1:9/x@y");
        assert_eq!(without_userinfo("http://127.0.0.1:9"), "http://127.0.0.1:9");
        assert_eq!(redact("the authorization failed"), "the authorization failed");
    }
}

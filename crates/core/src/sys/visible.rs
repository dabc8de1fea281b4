//! Text from outside (a result file, an S3 key, a server's answer) shown as text, never
//! obeyed by a terminal or a browser: [`visible`] is the one function every printer
//! passes such text through. It replaces each character a terminal or a text
//! renderer would act on instead of showing with its escape, `\u{1b}`:
//!
//! - every control character: C0 (ESC, BEL, CR, LF, TAB, ...), DEL and C1 (U+0080 to
//!   U+009F, among them the 8-bit CSI and OSC);
//! - the bidirectional controls and marks (U+061C, U+200E, U+200F, U+202A to U+202E,
//!   U+2066 to U+2069) that make a line read in another order than it is stored;
//! - the zero-width and separator characters that hide or break text (U+200B to
//!   U+200D, U+2028, U+2029, U+2060, U+FEFF).
//!
//! [`visible_lines`] keeps the line breaks of a text the program laid out itself (a
//! table) and makes everything else visible; [`visible_json_strings`] applies
//! [`visible`] to every string of a JSON document (a result read from a file, before
//! any printer sees it, so a line break inside a bucket name cannot forge a line);
//! [`json_escaped`] makes JSON text safe for a terminal without changing its data
//! (the characters above as `\uXXXX` JSON escapes).

use std::borrow::Cow;

/// True for a character [`visible`] replaces with its escape.
pub fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{2069}'
                | '\u{feff}'
        )
}

/// `text` with every [`hidden`] character replaced by its escape (`\u{1b}`); borrowed
/// when there is none.
pub fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(hidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if hidden(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `text` laid out in lines by the program: each line through [`visible`], the line
/// breaks (`\n`) kept.
pub fn visible_lines(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| c != '\n' && hidden(c)) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.split('\n').map(visible).collect::<Vec<_>>().join("\n"))
}

/// Every string of `value` (object keys too) through [`visible`].
pub fn visible_json_strings(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::String(s) => {
            if let Cow::Owned(v) = visible(s) {
                *s = v;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(visible_json_strings),
        Value::Object(map) => {
            if map.keys().any(|k| k.chars().any(hidden)) {
                let old = std::mem::take(map);
                for (k, mut v) in old {
                    visible_json_strings(&mut v);
                    map.insert(visible(&k).into_owned(), v);
                }
            } else {
                map.values_mut().for_each(visible_json_strings);
            }
        }
        _ => {}
    }
}

/// JSON text (as serde_json writes it: C0 controls already escaped) with every other
/// [`hidden`] character as a `\uXXXX` escape: the same document, safe on a terminal.
pub fn json_escaped(json: &str) -> Cow<'_, str> {
    if !json.chars().any(|c| c != '\n' && hidden(c)) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if c != '\n' && hidden(c) {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The payloads a hostile result carries (issue 53's red team's, and more).
    pub(crate) const PAYLOADS: &[&str] = &[
        "\u{1b}[2J\u{1b}[H",
        "\u{1b}]0;owned\u{7}",
        "\u{1b}]8;;https://evil.example/\u{1b}\\link\u{1b}]8;;\u{1b}\\",
        "forged\rline",
        "two\nlines",
        "\u{9b}31m",
        "\u{202e}txt.exe",
        "a\u{2066}b\u{2069}",
        "\u{7f}\u{0}\u{8}",
    ];

    #[test]
    fn every_payload_is_shown_not_obeyed() {
        for p in PAYLOADS {
            let v = visible(p);
            assert!(!v.chars().any(hidden), "{p:?} -> {v:?}");
            assert!(v.contains("\\u{"), "{v}");
        }
        assert!(matches!(visible("bucket-1 ok é ü 東京"), Cow::Borrowed(_)));
        assert_eq!(visible("a\u{1b}b"), "a\\u{1b}b");
    }

    #[test]
    fn lines_keep_their_breaks_and_json_keeps_its_data() {
        assert_eq!(visible_lines("a\u{7}\nb\r\n"), "a\\u{7}\nb\\u{d}\n");
        let doc = serde_json::json!({"bucket": "b\u{202e}1", "rows": [{"note": "x\u{9b}y"}]});
        let text = serde_json::to_string(&doc).unwrap();
        let safe = json_escaped(&text);
        assert!(!safe.chars().any(hidden), "{safe}");
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, doc);
        let mut v = doc.clone();
        visible_json_strings(&mut v);
        assert_eq!(v["bucket"], "b\\u{202e}1");
        assert_eq!(v["rows"][0]["note"], "x\\u{9b}y");
    }
}

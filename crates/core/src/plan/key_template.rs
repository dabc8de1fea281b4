//! Key templates (`test/{i}/vectors`): the numbered keys a sweep reads, checked once
//! (the placeholder present, every key within S3's length limit).

use crate::model::request::INDEX_PLACEHOLDER;

use super::fields::preview;
use super::names::NameError;
use super::MAX_KEY_BYTES;

/// Why a key template is refused; `shown` is the template as shown ([`preview`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("must contain {INDEX_PLACEHOLDER} (the object index), got {shown}")]
    NoPlaceholder { shown: String },
    #[error("is {bytes} bytes; S3 keys are at most {MAX_KEY_BYTES}: {shown}")]
    TooLong { bytes: usize, shown: String },
    #[error("produces keys of {bytes} bytes; S3 keys are at most {MAX_KEY_BYTES}")]
    KeysTooLong { bytes: usize },
    /// The longest key it makes is no key S3 takes.
    #[error(transparent)]
    Key(#[from] NameError),
}

/// A key template with exactly the `{i}` placeholder(s) substituted per object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyTemplate {
    parts: Vec<String>,
}

impl KeyTemplate {
    /// Parses a template; it must contain `{i}` and produce keys of at most 1,024 bytes.
    pub fn parse(template: &str, max_index: u32) -> Result<Self, TemplateError> {
        if !template.contains(INDEX_PLACEHOLDER) {
            return Err(TemplateError::NoPlaceholder {
                shown: preview(template),
            });
        }
        // The template's own length first: a key made from a 100,000-byte template
        // is not built to be measured.
        if template.len() > MAX_KEY_BYTES {
            return Err(TemplateError::TooLong {
                bytes: template.len(),
                shown: preview(template),
            });
        }
        let parts: Vec<String> = template.split(INDEX_PLACEHOLDER).map(str::to_string).collect();
        let t = KeyTemplate { parts };
        let longest = t.key(max_index);
        if longest.len() > MAX_KEY_BYTES {
            return Err(TemplateError::KeysTooLong { bytes: longest.len() });
        }
        super::names::check_key(&longest)?;
        Ok(t)
    }

    /// The key of object `i`.
    pub fn key(&self, i: u32) -> String {
        let index = i.to_string();
        let mut key = String::with_capacity(self.parts.iter().map(String::len).sum::<usize>() + 8);
        for (n, part) in self.parts.iter().enumerate() {
            if n > 0 {
                key.push_str(&index);
            }
            key.push_str(part);
        }
        key
    }

    /// The index `i` whose key is `key`, if the template makes it (`{i}` in decimal,
    /// as [`KeyTemplate::key`] writes it).
    pub fn index_of(&self, key: &str) -> Option<u32> {
        let rest = key.strip_prefix(self.parts.first()?.as_str())?;
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count().min(10);
        (1..=digits)
            .filter_map(|n| rest[..n].parse::<u32>().ok())
            .find(|&i| self.key(i) == key)
    }

    /// The same template under `prefix` (its keys are `prefix` + this template's).
    pub fn under(&self, prefix: &str) -> KeyTemplate {
        let mut parts = self.parts.clone();
        parts[0] = format!("{prefix}{}", parts[0]);
        KeyTemplate { parts }
    }

    /// The template text.
    pub fn as_template(&self) -> String {
        self.parts.join(INDEX_PLACEHOLDER)
    }
}

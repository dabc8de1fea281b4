//! The one field reader every typed section of a request uses (the request itself,
//! `timeouts_ms`, `fanout`, `prices`): unknown fields are named with the list of known
//! ones (the list once, at most [`MAX_NAMED_UNKNOWN`] names, the rest counted), each
//! field is typed on its own so one pass reports every wrong type, and a field with
//! the wrong type keeps its default so range checks still see the rest. Like
//! mini-redis's `parse.finish()`, a section refuses what was not read: a known field
//! still unread when the section is dropped is a problem named by its path, so a field
//! a section lists but never takes fails the first test that sends it.

use serde_json::{Map, Value};

use super::FieldProblem;

/// Unknown fields of one section named one by one; the rest are counted.
pub(crate) const MAX_NAMED_UNKNOWN: usize = 10;

/// One JSON object of a request being read into typed fields.
pub(crate) struct Section<'p> {
    /// `""` for the request itself, else `"name."`.
    prefix: String,
    map: Map<String, Value>,
    problems: &'p mut Vec<FieldProblem>,
}

impl<'p> Section<'p> {
    /// Opens `value` as the section `name` (`""` for the request) whose fields are
    /// `known`. Unknown fields are reported now and dropped. A value that is not an
    /// object is reported (`example` shows what one looks like) and gives `None`.
    pub(crate) fn open(
        name: &str,
        value: Value,
        known: &[&str],
        example: &str,
        problems: &'p mut Vec<FieldProblem>,
    ) -> Option<Section<'p>> {
        let Value::Object(mut map) = value else {
            problems.push(FieldProblem {
                field: name.to_string(),
                message: format!("must be an object like {example}, got {}", kind_of(&value)),
            });
            return None;
        };
        let prefix = if name.is_empty() {
            String::new()
        } else {
            format!("{name}.")
        };
        report_unknown(
            &prefix,
            name,
            map.keys().filter(|k| !known.contains(&k.as_str())),
            known,
            problems,
        );
        map.retain(|k, _| known.contains(&k.as_str()));
        Some(Section { prefix, map, problems })
    }

    /// The path of field `name` in this section.
    pub(crate) fn path(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    /// Takes field `name` out of the section, untyped.
    pub(crate) fn raw(&mut self, name: &str) -> Option<Value> {
        self.map.remove(name)
    }

    /// Reads field `name` into `slot` when present; a value of the wrong type is
    /// reported as "must be `expected`" and `slot` keeps its default.
    pub(crate) fn take<T: serde::de::DeserializeOwned>(&mut self, name: &str, expected: &str, slot: &mut T) {
        if let Some(v) = self.map.remove(name) {
            let path = self.path(name);
            typed(v, &path, expected, self.problems, slot);
        }
    }

    /// As [`Section::take`], but a missing field is reported with `missing`.
    pub(crate) fn require<T: serde::de::DeserializeOwned>(
        &mut self,
        name: &str,
        expected: &str,
        missing: &str,
        slot: &mut T,
    ) {
        if self.map.contains_key(name) {
            self.take(name, expected, slot);
        } else {
            let field = self.path(name);
            self.problems.push(FieldProblem {
                field,
                message: format!("required: {missing}"),
            });
        }
    }

    /// The problems list, for a nested section.
    pub(crate) fn problems(&mut self) -> &mut Vec<FieldProblem> {
        self.problems
    }
}

impl Drop for Section<'_> {
    /// The finish of a section: a known field nothing took is a problem, never a
    /// silent drop (the reader lists a field it does not read).
    fn drop(&mut self) {
        for key in self.map.keys() {
            self.problems.push(FieldProblem {
                field: format!("{}{key}", self.prefix),
                message: "is a known field that s3sweep did not read (a bug in s3sweep: please report it)".into(),
            });
        }
    }
}

/// Unknown fields named one by one up to [`MAX_NAMED_UNKNOWN`], the rest counted; the
/// list of known fields is given once, with the first.
fn report_unknown<'k>(
    prefix: &str,
    section: &str,
    unknown: impl Iterator<Item = &'k String>,
    known: &[&str],
    problems: &mut Vec<FieldProblem>,
) {
    let mut more = 0usize;
    for (i, key) in unknown.enumerate() {
        if i >= MAX_NAMED_UNKNOWN {
            more += 1;
            continue;
        }
        let message = if i == 0 {
            format!("unknown field; known fields are {}", known.join(", "))
        } else {
            "unknown field".to_string()
        };
        problems.push(FieldProblem {
            field: format!("{prefix}{}", field_name(key)),
            message,
        });
    }
    if more > 0 {
        problems.push(FieldProblem {
            field: if section.is_empty() {
                "(request)".into()
            } else {
                section.to_string()
            },
            message: format!("{more} more unknown field(s) not listed"),
        });
    }
}

/// Types one JSON value into `slot`, or reports it under `path`.
pub(crate) fn typed<T: serde::de::DeserializeOwned>(
    value: Value,
    path: &str,
    expected: &str,
    problems: &mut Vec<FieldProblem>,
    slot: &mut T,
) {
    let shown = kind_of(&value);
    match serde_json::from_value::<T>(value) {
        Ok(v) => *slot = v,
        Err(e) => problems.push(FieldProblem {
            field: path.to_string(),
            message: format!("must be {expected}, got {shown} ({})", preview(&e.to_string())),
        }),
    }
}

/// A short description of a JSON value, never its whole text (strings may be huge).
pub(crate) fn kind_of(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => format!("the string {}", preview(s)),
        Value::Array(a) => format!("a list of {} item(s)", a.len()),
        Value::Object(_) => "an object".into(),
    }
}

/// An unknown field's name as given, or a quoted preview when it is long or odd.
pub(crate) fn field_name(key: &str) -> String {
    let plain = key.len() <= 60 && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain && !key.is_empty() {
        key.to_string()
    } else {
        preview(key)
    }
}

/// At most 60 characters of `s`, quoted.
pub(crate) fn preview(s: &str) -> String {
    const MAX: usize = 60;
    if s.chars().count() <= MAX {
        format!("{s:?}")
    } else {
        let head: String = s.chars().take(MAX).collect();
        format!("{head:?}... ({} bytes)", s.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_known_field_left_unread_is_a_problem_naming_it() {
        let mut problems = Vec::new();
        let value = json!({"read": 1, "forgotten": 2, "colour": 3});
        let mut s = Section::open("part", value, &["read", "forgotten"], "{}", &mut problems).unwrap();
        let mut read = 0u32;
        s.take("read", "a whole number", &mut read);
        drop(s);
        let fields: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, ["part.colour", "part.forgotten"], "{problems:?}");
        assert!(problems[1].message.contains("did not read"), "{problems:?}");
        assert_eq!(read, 1);
    }
}

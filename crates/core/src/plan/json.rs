//! Reading a request's JSON text strictly: at most [`MAX_EVENT_BYTES`] (Lambda's own
//! payload limit), and a key given twice in one object is a problem named by its path
//! (serde_json alone keeps the last one silently). [`EventJson`] is the parsed
//! document with its duplicate keys; the Lambda's runtime deserializes events into it
//! directly, the CLI parses request files with [`parse_event`].

use std::cell::RefCell;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Number, Value};

use super::{FieldProblem, RequestError, MAX_LISTED_PROBLEMS};

/// Most bytes of a request document: Lambda's payload limit for a synchronous invoke.
pub const MAX_EVENT_BYTES: usize = 6 * 1024 * 1024;

/// A parsed request document and the keys it gave twice.
#[derive(Debug, Clone, PartialEq)]
pub struct EventJson {
    pub value: Value,
    /// Paths of duplicated keys (`fanout.invocations`), the first
    /// [`MAX_LISTED_PROBLEMS`] of them.
    pub duplicates: Vec<String>,
    /// Duplicated keys beyond those listed.
    pub more_duplicates: usize,
}

impl From<Value> for EventJson {
    /// An already parsed value: no duplicates can be seen any more.
    fn from(value: Value) -> Self {
        EventJson {
            value,
            duplicates: Vec::new(),
            more_duplicates: 0,
        }
    }
}

impl EventJson {
    /// The duplicate keys as problems (empty when there are none).
    pub fn duplicate_problems(&self) -> Vec<FieldProblem> {
        let mut out: Vec<FieldProblem> = self
            .duplicates
            .iter()
            .map(|path| FieldProblem {
                field: path.clone(),
                message: "is given more than once in its object; give each field once".into(),
            })
            .collect();
        if self.more_duplicates > 0 {
            out.push(FieldProblem {
                field: "(request)".into(),
                message: format!("{} more duplicated key(s) not listed", self.more_duplicates),
            });
        }
        out
    }
}

/// Parses a request document: at most [`MAX_EVENT_BYTES`], valid JSON; duplicate keys
/// are kept in the result for the plan to report with every other problem.
pub fn parse_event(text: &str) -> Result<EventJson, RequestError> {
    if text.len() > MAX_EVENT_BYTES {
        return Err(RequestError::single(
            "(request)",
            format!(
                "is {} bytes; a request is at most {MAX_EVENT_BYTES} bytes (Lambda's payload limit)",
                text.len()
            ),
        ));
    }
    serde_json::from_str::<EventJson>(text)
        .map_err(|e| RequestError::single("(request)", format!("not valid JSON: {e}")))
}

#[derive(Default)]
struct Dups {
    listed: Vec<String>,
    more: usize,
}

impl<'de> Deserialize<'de> for EventJson {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let dups = RefCell::new(Dups::default());
        let value = Node { path: "", dups: &dups }.deserialize(d)?;
        let dups = dups.into_inner();
        Ok(EventJson {
            value,
            duplicates: dups.listed,
            more_duplicates: dups.more,
        })
    }
}

/// One JSON value at `path`, read into a `Value` while duplicate keys are noted.
struct Node<'a> {
    path: &'a str,
    dups: &'a RefCell<Dups>,
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        loop {
            let path = format!("{}[{}]", self.path, out.len());
            match seq.next_element_seed(Node {
                path: &path,
                dups: self.dups,
            })? {
                Some(v) => out.push(v),
                None => return Ok(Value::Array(out)),
            }
        }
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = child(self.path, &super::fields::field_name(&key));
            let value = map.next_value_seed(Node {
                path: &path,
                dups: self.dups,
            })?;
            if out.contains_key(&key) {
                let mut dups = self.dups.borrow_mut();
                if dups.listed.len() < MAX_LISTED_PROBLEMS && !dups.listed.contains(&path) {
                    dups.listed.push(path);
                } else if !dups.listed.contains(&path) {
                    dups.more += 1;
                }
            }
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_keys_are_named_by_their_path() {
        let e =
            parse_event(r#"{"buckets": ["a-1"], "fanout": {"invocations": 2, "invocations": 3}, "buckets": ["b-1"]}"#)
                .unwrap();
        assert_eq!(e.duplicates, vec!["fanout.invocations", "buckets"]);
        let plain = parse_event(r#"{"buckets": ["a-1"], "x": [{"k": 1}, {"k": 2}]}"#).unwrap();
        assert!(plain.duplicates.is_empty());
        assert_eq!(plain.value["x"][1]["k"], 2);
    }

    #[test]
    fn many_duplicates_are_counted_past_the_cap() {
        let body: Vec<String> = (0..1000).map(|_| "\"seed\": 1".to_string()).collect();
        let e = parse_event(&format!("{{{}}}", body.join(","))).unwrap();
        assert_eq!(e.duplicates, vec!["seed"]);
        let body: Vec<String> = (0..100)
            .flat_map(|i| [format!("\"k{i}\": 1"), format!("\"k{i}\": 2")])
            .collect();
        let e = parse_event(&format!("{{{}}}", body.join(","))).unwrap();
        assert_eq!(e.duplicates.len(), MAX_LISTED_PROBLEMS);
        assert_eq!(e.more_duplicates, 100 - MAX_LISTED_PROBLEMS);
    }

    #[test]
    fn oversized_documents_are_refused_unread() {
        let text = format!("{{\"buckets\": [\"{}\"]}}", "a".repeat(MAX_EVENT_BYTES));
        let err = parse_event(&text).unwrap_err();
        assert!(err.to_string().contains("at most 6291456 bytes"), "{err}");
    }
}

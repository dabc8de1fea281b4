//! The object size axis (request `object_sizes_bytes`): its checks, and the keys each
//! size is read at. Size `S`'s objects live under [`size_prefix`]`(S)` + the key
//! template (`s4096/test/{i}/vectors`), where `seed --object-sizes` writes them: one
//! prefix per size keeps the sizes' keys apart (a size never reads another's objects,
//! `run --prefix s4096/` lists one size, `clean` proves a key's size by its prefix) and
//! leaves the user's template as it is.

use std::collections::BTreeSet;

use crate::model::request::{size_prefix, SweepRequest};

use super::key_template::KeyTemplate;
use super::{FieldProblem, Keys, Plan, MAX_KEY_BYTES};

/// Most sizes on one size axis.
pub const MAX_OBJECT_SIZES: usize = 16;
/// Largest object size, bytes (S3's largest single PUT: 5 GiB).
pub const MAX_OBJECT_SIZE_BYTES: u64 = 5 << 30;

/// The template of the objects of `size_bytes`: `template` under [`size_prefix`].
pub fn sized_template(template: &KeyTemplate, size_bytes: u64) -> KeyTemplate {
    template.under(&size_prefix(size_bytes))
}

/// The sizes a run sweeps, `None` standing for the one size of a run without the axis.
pub(crate) fn size_axis(sizes: &[u64]) -> Vec<Option<u64>> {
    if sizes.is_empty() {
        vec![None]
    } else {
        sizes.iter().map(|&s| Some(s)).collect()
    }
}

/// `object_sizes_bytes`: at most [`MAX_OBJECT_SIZES`] sizes, each 1..=5 GiB, none
/// twice, keys within 1,024 bytes; not with `key_prefix` (a prefix's objects have the
/// sizes they have), `fanout` or `memory_mb` (those merge or split rows by worker count
/// and memory size only).
pub(crate) fn check_object_sizes(request: &SweepRequest, problems: &mut Vec<FieldProblem>) {
    let sizes = &request.object_sizes_bytes;
    if sizes.is_empty() {
        return;
    }
    for (other, given) in [
        ("key_prefix", request.key_prefix.is_some()),
        ("fanout", request.fanout.is_some()),
        ("memory_mb", !request.memory_mb.is_empty()),
    ] {
        if given {
            problems.push(FieldProblem {
                field: "object_sizes_bytes".into(),
                message: format!("cannot be combined with {other} (give one of object_sizes_bytes and {other})"),
            });
        }
    }
    problems.extend(size_problems(sizes, "object_sizes_bytes"));
    let longest = sizes.iter().max().map_or(0, |&s| size_prefix(s).len());
    if let Ok(t) = KeyTemplate::parse(&request.key_template, request.object_count.max(1) - 1) {
        let key = t.key(request.object_count.max(1) - 1);
        if key.len() + longest > MAX_KEY_BYTES {
            problems.push(FieldProblem {
                field: "object_sizes_bytes".into(),
                message: format!(
                    "the size prefix makes keys of {} bytes; S3 keys are at most {MAX_KEY_BYTES}",
                    key.len() + longest
                ),
            });
        }
    }
}

/// The problems of a list of object sizes given as `field` (`object_sizes_bytes`, or
/// a flag): too many, a size out of 1..=5 GiB, a size twice; each named by its place.
pub fn size_problems(sizes: &[u64], field: &str) -> Vec<FieldProblem> {
    let mut problems = Vec::new();
    let mut bad = |field: String, message: String| problems.push(FieldProblem { field, message });
    if sizes.len() > MAX_OBJECT_SIZES {
        bad(
            field.into(),
            format!("at most {MAX_OBJECT_SIZES} sizes, got {}", sizes.len()),
        );
        return problems;
    }
    let mut seen = BTreeSet::new();
    for (i, &size) in sizes.iter().enumerate() {
        if size == 0 || size > MAX_OBJECT_SIZE_BYTES {
            bad(
                format!("{field}[{i}]"),
                format!("must be between 1 and {MAX_OBJECT_SIZE_BYTES} bytes (5 GiB), got {size}"),
            );
        } else if !seen.insert(size) {
            bad(format!("{field}[{i}]"), format!("{size} is listed twice"));
        }
    }
    problems
}

impl Plan {
    /// The sizes of the run, `None` for the one size of a run without the axis.
    pub fn size_axis(&self) -> Vec<Option<u64>> {
        size_axis(self.object_sizes())
    }
    /// The keys bucket number `bucket` is read with at `size` (`None`: [`Plan::keys_of`]).
    pub fn keys_at(&self, bucket: usize, size: Option<u64>) -> Keys {
        match size {
            Some(s) => Keys::Template(sized_template(self.keys(), s)),
            None => self.keys_of(bucket),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_bad_size_is_named() {
        let err = Plan::from_value(json!({
            "buckets": ["b-1"],
            "object_sizes_bytes": [4096, 0, 4096, 6_000_000_000u64]
        }))
        .unwrap_err();
        assert_eq!(
            err.fields(),
            vec![
                "object_sizes_bytes[1]",
                "object_sizes_bytes[2]",
                "object_sizes_bytes[3]"
            ],
            "{err}"
        );
        let err = Plan::from_value(json!({"buckets": ["b-1"], "object_sizes_bytes": "big"})).unwrap_err();
        assert_eq!(err.fields(), vec!["object_sizes_bytes"], "{err}");
        let err = Plan::from_value(json!({"buckets": ["b-1"], "key_prefix": "p/", "object_sizes_bytes": [4096]}))
            .unwrap_err();
        assert_eq!(err.fields(), vec!["object_sizes_bytes"], "{err}");
        assert!(err.to_string().contains("key_prefix"), "{err}");
    }

    #[test]
    fn sizes_multiply_the_configurations_and_prefix_the_keys() {
        let plan = Plan::from_value(json!({
            "buckets": ["b-1", "b-2"], "workers": [1, 8], "object_count": 10,
            "object_sizes_bytes": [4096, 1_048_576]
        }))
        .unwrap();
        assert_eq!(plan.configurations(), 2 * 2 * 2);
        assert_eq!(plan.total_requests(), 2 * 2 * 2 * 10);
        let Keys::Template(t) = plan.keys_at(0, Some(4096)) else {
            panic!("a template")
        };
        assert_eq!(t.key(3), "s4096/test/3/vectors");
        assert_eq!(plan.size_axis(), vec![Some(4096), Some(1_048_576)]);
        let plain = Plan::from_value(json!({"buckets": ["b-1"]})).unwrap();
        assert_eq!(plain.size_axis(), vec![None]);
        assert!(serde_json::to_value(plain.request())
            .unwrap()
            .get("object_sizes_bytes")
            .is_none());
    }
}

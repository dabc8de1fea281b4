//! The axes a configuration is keyed by besides its bucket and worker count: the
//! Lambda memory size, the object size, the S3 client and the hedge policy. [`Axes`] is the one
//! definition: every struct keyed by a configuration (rows, summaries, curves,
//! comparisons, memory choices, compare pairs, cost rows) holds one, flattened into its
//! JSON object, so each axis keeps its field name (`memory_mb`, `object_size_bytes`,
//! `s3_client`, `hedge`) and results written before this struct load unchanged. Rows group and
//! pair by `Axes` equality, so a new axis is one more field here (with its label in
//! [`Axes::label`] and its key in [`Axes::key`]) and nothing else.

use serde::{Deserialize, Serialize};

use super::closed_set::Client;
use super::hedge::Hedge;
use super::listing::ObjectSize;

/// A configuration's place on the sweep's axes. Absent axes (`None`, the SDK client)
/// are not written. `Size` is the object size's type: `u64` bytes for everything keyed
/// by a configuration; a row's own [`ObjectSize`], which may instead describe a
/// `key_prefix` listing's spread of sizes (not an axis: see [`Axes::key`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Axes<Size = u64> {
    /// A memory sweep's Lambda memory size, MB (request `memory_mb`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mb: Option<u32>,
    /// A size axis's object size, bytes (request `object_sizes_bytes`).
    #[serde(default = "none", skip_serializing_if = "Option::is_none")]
    pub object_size_bytes: Option<Size>,
    /// The S3 client that made the GETs (request `clients`): `lean`, or `sdk` (the
    /// default, not written).
    #[serde(default, skip_serializing_if = "Client::is_sdk")]
    pub s3_client: Client,
    /// When a GET without a first byte got a second copy (request `hedge`): `off`
    /// (the default, not written), `"p95"`, `{"after_ms": 40}`.
    #[serde(default, skip_serializing_if = "Hedge::is_off")]
    pub hedge: Hedge,
}

fn none<T>() -> Option<T> {
    None
}

impl<Size> Default for Axes<Size> {
    fn default() -> Self {
        Axes {
            memory_mb: None,
            object_size_bytes: None,
            s3_client: Client::Sdk,
            hedge: Hedge::Off,
        }
    }
}

impl Axes<ObjectSize> {
    /// The row's key on the axes: a listing's spread of sizes is not a size axis, so
    /// its object size is `None`.
    pub fn key(&self) -> Axes {
        Axes {
            memory_mb: self.memory_mb,
            object_size_bytes: self.object_size_bytes.and_then(|s| s.fixed()),
            s3_client: self.s3_client,
            hedge: self.hedge,
        }
    }
}

impl Axes {
    /// The same axes without the memory size (a memory sweep's answers are per bucket
    /// and the other axes, the memory being what they choose).
    pub fn without_memory(self) -> Axes {
        Axes {
            memory_mb: None,
            ..self
        }
    }

    /// The same axes without the object size (a size axis's notes are read across
    /// sizes).
    pub fn without_size(self) -> Axes {
        Axes {
            object_size_bytes: None,
            ..self
        }
    }

    /// The order configurations are listed in (compare): memory size, object size,
    /// client name, hedge policy (off first).
    pub fn sort_key(&self) -> (Option<u32>, Option<u64>, &'static str, Hedge) {
        (
            self.memory_mb,
            self.object_size_bytes,
            self.s3_client.name(),
            self.hedge,
        )
    }

    /// The axes in words after a bucket's name, e.g. ` at 512 MB (objects of 4096
    /// bytes) (client lean)`; empty when no axis is set. The client is named when
    /// `clients` is true (several ran).
    pub fn label(&self, clients: bool) -> String {
        let mut out = self.memory_mb.map(|m| format!(" at {m} MB")).unwrap_or_default();
        if let Some(b) = self.object_size_bytes {
            out.push_str(&format!(" (objects of {b} bytes)"));
        }
        if clients {
            out.push_str(&format!(" (client {})", self.s3_client));
        }
        if !self.hedge.is_off() {
            out.push_str(&format!(" (hedge {})", self.hedge));
        }
        out
    }
}

/// Groups `items` by their axes: one group per distinct [`Axes`], in the order first
/// seen, each with the indexes of its items.
pub fn group_by_axes<T>(items: &[T], axes: impl Fn(&T) -> Axes) -> Vec<(Axes, Vec<usize>)> {
    let mut groups: Vec<(Axes, Vec<usize>)> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let key = axes(item);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, index)) => index.push(i),
            None => groups.push((key, vec![i])),
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::SizeSpread;

    #[test]
    fn absent_axes_are_not_written_and_load_back() {
        let none: Axes = Axes::default();
        assert_eq!(serde_json::to_string(&none).unwrap(), "{}");
        assert_eq!(serde_json::from_str::<Axes>("{}").unwrap(), none);
        let all = Axes {
            memory_mb: Some(512),
            object_size_bytes: Some(4096),
            s3_client: Client::Lean,
            hedge: Hedge::Percentile(95),
        };
        let text = serde_json::to_string(&all).unwrap();
        assert_eq!(
            text,
            r#"{"memory_mb":512,"object_size_bytes":4096,"s3_client":"lean","hedge":"p95"}"#
        );
        assert_eq!(serde_json::from_str::<Axes>(&text).unwrap(), all);
    }

    #[test]
    fn a_listings_spread_is_not_a_size_axis() {
        let spread = SizeSpread {
            min: 1,
            p50: 2,
            p99: 3,
            max: 4,
        };
        let row = Axes {
            object_size_bytes: Some(ObjectSize::Spread(spread)),
            ..Axes::default()
        };
        assert_eq!(row.key(), Axes::default());
        let fixed = Axes {
            object_size_bytes: Some(ObjectSize::Fixed(64)),
            ..Axes::default()
        };
        assert_eq!(fixed.key().object_size_bytes, Some(64));
    }

    #[test]
    fn groups_keep_the_order_first_seen() {
        let at = |m: Option<u32>, c: Client| Axes {
            memory_mb: m,
            s3_client: c,
            ..Axes::default()
        };
        let items = [
            at(Some(512), Client::Sdk),
            at(None, Client::Lean),
            at(Some(512), Client::Sdk),
        ];
        let groups = group_by_axes(&items, |a| *a);
        assert_eq!(groups, vec![(items[0], vec![0, 2]), (items[1], vec![1])]);
    }

    /// Rows and summaries written before `Axes` (the three fields at the top level of
    /// the object) load into it and are written back with the same keys in the same
    /// place: no `axes` key appears.
    #[test]
    fn axes_stay_flat_in_rows_and_summaries() {
        let mut row = crate::model::test_rows::row("b", 8, 1, 100.0, 0);
        row.axes = Axes {
            memory_mb: Some(512),
            object_size_bytes: Some(ObjectSize::Fixed(4096)),
            s3_client: Client::Lean,
            hedge: Hedge::Off,
        };
        let value = serde_json::to_value(&row).unwrap();
        assert!(value.get("axes").is_none(), "{value}");
        assert_eq!(
            (&value["memory_mb"], &value["object_size_bytes"], &value["s3_client"]),
            (
                &serde_json::json!(512),
                &serde_json::json!(4096),
                &serde_json::json!("lean")
            )
        );
        let again: crate::model::ConfigResult = serde_json::from_value(value).unwrap();
        assert_eq!(again, row);
        let summary = crate::model::BucketSummary {
            bucket: "b".into(),
            best_workers: 8,
            best_wall_ms: 1.5,
            best_objects_per_s: 2.0,
            one_worker_wall_ms: None,
            speedup_over_one_worker: None,
            errors_total: 0,
            knee_workers: None,
            axes: row.axes.key(),
        };
        let text = serde_json::to_string(&summary).unwrap();
        assert!(
            text.ends_with(r#""knee_workers":null,"memory_mb":512,"object_size_bytes":4096,"s3_client":"lean"}"#),
            "{text}"
        );
        assert_eq!(
            serde_json::from_str::<crate::model::BucketSummary>(&text).unwrap(),
            summary
        );
    }
}

//! The axes a configuration is keyed by besides its bucket and worker count: the
//! Lambda memory size, the object size, the S3 client and the hedge policy. [`Axes`] is the one
//! definition: every struct keyed by a configuration (rows, summaries, curves,
//! comparisons, memory choices, compare pairs, cost rows) holds one, flattened into its
//! JSON object, so each axis keeps its field name (`memory_mb`, `object_size_bytes`,
//! `s3_client`, `hedge`) and results written before this struct load unchanged. Rows group and
//! pair by `Axes` equality. Every output names an axis through [`AXES`] (its column
//! header, its EMF dimension, its words in a label) and a run's values on the axes are
//! an [`AxisValues`] (the order, the count, the merge of a fan-out go through it), so a
//! new axis is one more field here, one entry of [`AXES`], its values in
//! [`AxisValues`], and nothing else.

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

    /// A row's axes at configuration `point`: the point's, but the row's own object size
    /// (what it read, which may be a listing's spread).
    pub fn at_point(self, point: Axes) -> Axes<ObjectSize> {
        Axes {
            memory_mb: point.memory_mb,
            object_size_bytes: self.object_size_bytes,
            s3_client: point.s3_client,
            hedge: point.hedge,
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

    /// The axes `named` in words after a bucket's name, e.g. ` (512 MB, objects of 4096
    /// bytes, client lean, hedge p95)`; empty when none is.
    pub fn label(&self, named: Named) -> String {
        let words = self.words(named);
        if words.is_empty() {
            String::new()
        } else {
            format!(" ({})", words.join(", "))
        }
    }

    /// The axes `named`, each in words (`512 MB`, `client lean`), in [`AXES`]' order.
    pub fn words(&self, named: Named) -> Vec<String> {
        named.axes().map(|a| (a.words)(&(a.cell)(self))).collect()
    }

    /// The axes `named`, each in a progress line's few characters (`lean`, `hedge
    /// p95`).
    pub fn short_words(&self, named: Named) -> Vec<String> {
        named.axes().map(|a| (a.short)(&(a.cell)(self))).collect()
    }

    /// The axes `named`, each as a (column header, value) cell.
    pub fn cells(&self, named: Named) -> Vec<(&'static str, String)> {
        named.axes().map(|a| (a.header, (a.cell)(self))).collect()
    }

    /// Every axis as (JSON field name, value), the value empty where the axis is
    /// absent (no memory size, no size axis): a request log line's columns.
    pub fn fields(&self) -> Vec<(&'static str, String)> {
        AXES.iter()
            .map(|a| (a.field, Some((a.cell)(self)).filter(|v| v != "-").unwrap_or_default()))
            .collect()
    }

    /// The EMF dimensions of the axes this configuration sets (its memory size, its
    /// object size, a client other than `sdk`, a hedge policy other than `off`), as
    /// (dimension name, value).
    pub fn dimensions(&self) -> Vec<(&'static str, String)> {
        AXES.iter()
            .filter(|a| (a.set)(self))
            .map(|a| (a.dimension, (a.cell)(self)))
            .collect()
    }
}

/// One axis as every output names it.
pub struct Axis {
    /// Its field name in JSON (a row's, the request log's column: `s3_client`).
    pub field: &'static str,
    /// Its column header in tables (`client`).
    pub header: &'static str,
    /// Its EMF dimension name (`Client`).
    pub dimension: &'static str,
    /// A configuration's value on it (`lean`, `sdk`, `-` for an absent size).
    pub cell: fn(&Axes) -> String,
    /// True when a configuration sets it: a value, or other than the default.
    pub set: fn(&Axes) -> bool,
    /// A value in a label's words (`client lean`).
    pub words: fn(&str) -> String,
    /// A value in a progress line's few characters (`lean`, `hedge p95`).
    pub short: fn(&str) -> String,
}

/// The axes, in the order labels and tables name them.
pub const AXES: [Axis; 4] = [
    Axis {
        field: "memory_mb",
        header: "memory MB",
        dimension: "MemoryMB",
        cell: |a| a.memory_mb.map_or("-".into(), |m| m.to_string()),
        set: |a| a.memory_mb.is_some(),
        words: |v| format!("{v} MB"),
        short: |v| format!("{v}MB"),
    },
    Axis {
        field: "object_size_bytes",
        header: "object bytes",
        dimension: "ObjectSizeBytes",
        cell: |a| a.object_size_bytes.map_or("-".into(), |b| b.to_string()),
        set: |a| a.object_size_bytes.is_some(),
        words: |v| format!("objects of {v} bytes"),
        short: |v| format!("{v}B"),
    },
    Axis {
        field: "s3_client",
        header: "client",
        dimension: "Client",
        cell: |a| a.s3_client.to_string(),
        set: |a| !a.s3_client.is_sdk(),
        words: |v| format!("client {v}"),
        short: |v| v.to_string(),
    },
    Axis {
        field: "hedge",
        header: "hedge",
        dimension: "Hedge",
        cell: |a| a.hedge.to_string(),
        set: |a| !a.hedge.is_off(),
        words: |v| format!("hedge {v}"),
        short: |v| format!("hedge {v}"),
    },
];

/// The axes an output names for a set of configurations: each axis some configuration
/// sets or on which two differ (several clients: `sdk` is named too).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Named([bool; AXES.len()]);

impl Named {
    /// The axes `configurations` set or differ on.
    pub fn of(configurations: impl IntoIterator<Item = Axes>) -> Named {
        let all: Vec<Axes> = configurations.into_iter().collect();
        let mut named = [false; AXES.len()];
        for (i, axis) in AXES.iter().enumerate() {
            named[i] = all
                .iter()
                .any(|c| (axis.set)(c) || (axis.cell)(c) != (axis.cell)(&all[0]));
        }
        Named(named)
    }

    /// True when some axis is named.
    pub fn any(&self) -> bool {
        self.0.iter().any(|&n| n)
    }

    /// The axes named here or in `other`.
    pub fn and(self, other: Named) -> Named {
        let mut both = self.0;
        for (b, o) in both.iter_mut().zip(other.0) {
            *b |= o;
        }
        Named(both)
    }

    /// Every axis.
    pub fn all() -> Named {
        Named([true; AXES.len()])
    }

    /// These axes but `header`'s (a title that names it its own way).
    pub fn without(mut self, header: &str) -> Named {
        for (i, axis) in AXES.iter().enumerate() {
            if axis.header == header {
                self.0[i] = false;
            }
        }
        self
    }

    /// True when `header`'s axis is named.
    pub fn has(&self, header: &str) -> bool {
        AXES.iter().zip(self.0).any(|(a, n)| n && a.header == header)
    }

    /// The named axes, in [`AXES`]' order.
    pub fn axes(self) -> impl Iterator<Item = &'static Axis> {
        AXES.iter().zip(self.0).filter(|(_, n)| *n).map(|(a, _)| a)
    }
}

/// A run's values on each axis, as its request lists them; an axis the run does not
/// sweep holds its one default value. The run's configurations on the axes are
/// [`AxisValues::points`]; their number is [`AxisValues::count`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AxisValues {
    pub memory_mb: Vec<Option<u32>>,
    pub object_size_bytes: Vec<Option<u64>>,
    pub s3_client: Vec<Client>,
    pub hedge: Vec<Hedge>,
}

/// `values` as an axis's values: the default alone when none are listed.
fn or_default<T: Copy, U: Default>(values: &[T], to: impl Fn(T) -> U) -> Vec<U> {
    if values.is_empty() {
        vec![U::default()]
    } else {
        values.iter().map(|&v| to(v)).collect()
    }
}

impl AxisValues {
    /// The values a request lists (memory sizes, object sizes, clients, hedge policies).
    pub fn new(memory_mb: &[u32], object_sizes_bytes: &[u64], clients: &[Client], hedges: &[Hedge]) -> AxisValues {
        AxisValues {
            memory_mb: or_default(memory_mb, Some),
            object_size_bytes: or_default(object_sizes_bytes, Some),
            s3_client: or_default(clients, |c| c),
            hedge: or_default(hedges, |h| h),
        }
    }

    /// The number of points: the product of every axis's number of values.
    pub fn count(&self) -> u64 {
        self.lengths().iter().map(|&(n, _)| n as u64).product()
    }

    /// Each axis's number of values and its name in a count (`clients`).
    pub fn lengths(&self) -> [(usize, &'static str); AXES.len()] {
        [
            (self.memory_mb.len(), "memory sizes"),
            (self.object_size_bytes.len(), "object sizes"),
            (self.s3_client.len(), "clients"),
            (self.hedge.len(), "hedge policies"),
        ]
    }

    /// The axes with more than one value (those that tell a run's configurations apart).
    pub fn swept(&self) -> Named {
        Named(self.lengths().map(|(n, _)| n > 1))
    }

    /// Every point, each axis's values rotated by `turn` (so in an interleaved order
    /// another value goes first in each round), the last axis varying fastest.
    pub fn points(&self, turn: usize) -> Vec<Axes> {
        let r = |n: usize, i: usize| (i + turn) % n;
        let mut out = Vec::with_capacity(self.count() as usize);
        for m in 0..self.memory_mb.len() {
            for s in 0..self.object_size_bytes.len() {
                for c in 0..self.s3_client.len() {
                    for h in 0..self.hedge.len() {
                        out.push(Axes {
                            memory_mb: self.memory_mb[r(self.memory_mb.len(), m)],
                            object_size_bytes: self.object_size_bytes[r(self.object_size_bytes.len(), s)],
                            s3_client: self.s3_client[r(self.s3_client.len(), c)],
                            hedge: self.hedge[r(self.hedge.len(), h)],
                        });
                    }
                }
            }
        }
        out
    }

    /// These values with one value on the memory and size axes: `at`'s (the axes an
    /// order does not run back to back).
    pub fn at(&self, at: Axes) -> AxisValues {
        AxisValues {
            memory_mb: vec![at.memory_mb],
            object_size_bytes: vec![at.object_size_bytes],
            ..self.clone()
        }
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

    #[test]
    fn the_count_is_the_number_of_points_and_each_point_is_one_configuration() {
        let values = AxisValues::new(
            &[],
            &[4096, 1 << 20],
            &[Client::Sdk, Client::Lean],
            &[Hedge::Off, Hedge::Percentile(95), Hedge::AfterMs(40)],
        );
        assert_eq!(values.count(), 12);
        for turn in 0..3 {
            let points = values.points(turn);
            assert_eq!(points.len(), 12);
            let distinct: std::collections::HashSet<Axes> = points.iter().copied().collect();
            assert_eq!(distinct.len(), 12, "turn {turn}: each point once");
        }
        assert_eq!(values.points(0)[0].hedge, Hedge::Off);
        assert_eq!(values.points(1)[0].hedge, Hedge::Percentile(95), "rotated by the turn");
        assert_eq!(AxisValues::new(&[], &[], &[], &[]).points(0), [Axes::default()]);
    }

    #[test]
    fn every_set_axis_is_a_label_word_a_cell_and_a_dimension() {
        let all = Axes {
            memory_mb: Some(512),
            object_size_bytes: Some(4096),
            s3_client: Client::Lean,
            hedge: Hedge::Percentile(95),
        };
        assert_eq!(
            all.label(Named::of([all])),
            " (512 MB, objects of 4096 bytes, client lean, hedge p95)"
        );
        assert_eq!(
            all.dimensions(),
            [
                ("MemoryMB", "512".to_string()),
                ("ObjectSizeBytes", "4096".to_string()),
                ("Client", "lean".to_string()),
                ("Hedge", "p95".to_string())
            ]
        );
        assert_eq!(Axes::default().label(Named::of([Axes::default()])), "");
        assert!(Axes::default().dimensions().is_empty());
        // Two configurations that differ only in a default value: both named.
        let lean = Axes {
            s3_client: Client::Lean,
            ..Axes::default()
        };
        let named = Named::of([Axes::default(), lean]);
        assert_eq!(Axes::default().label(named), " (client sdk)");
        assert_eq!(
            Axes::default().cells(named.without("client")),
            Vec::<(&str, String)>::new()
        );
        assert!(named.has("client") && !named.has("hedge"));
    }
}

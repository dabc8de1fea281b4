//! The size axis read across sizes: per bucket, the limit that binds each object
//! size's curve (the verdict of its largest worker count, and the smallest worker count
//! from which every larger one has that verdict), and whether it changes with size,
//! e.g. client CPU at 4 KB and the NIC at 1 MiB. Rows must already carry their
//! diagnosis ([`super::analyse`] calls this last).

use crate::model::result::worker_counts;
use crate::model::stats::first_seen;
use crate::model::{ConfigResult, SizeLimit, SizeLimits, Verdict};

/// One note per bucket (and axes but the size: S3 client ...) with rows at two object
/// sizes or more, in the order run.
pub(crate) fn size_limits(rows: &[ConfigResult]) -> Vec<SizeLimits> {
    let across_sizes = |r: &ConfigResult| r.axes.key().without_size();
    first_seen(rows.iter().map(|r| (r.bucket.as_str(), across_sizes(r))))
        .into_iter()
        .filter_map(|(bucket, axes)| {
            let mine: Vec<&ConfigResult> = rows
                .iter()
                .filter(|r| r.bucket == bucket && across_sizes(r) == axes)
                .collect();
            let sizes: Vec<SizeLimit> = first_seen(mine.iter().filter_map(|r| r.size_axis_bytes()))
                .into_iter()
                .filter_map(|size| binding(size, mine.iter().copied().filter(|r| r.size_axis_bytes() == Some(size))))
                .collect();
            (sizes.len() >= 2).then(|| SizeLimits {
                axes,
                ..limits_of(bucket, sizes)
            })
        })
        .collect()
}

/// The binding limit of one size's rows: the verdict at the largest worker count (its
/// first repetition's), held from the smallest worker count after which it never
/// changes. `None` without a diagnosed row.
fn binding<'a>(size: u64, rows: impl Iterator<Item = &'a ConfigResult> + Clone) -> Option<SizeLimit> {
    let mut workers = worker_counts(rows.clone());
    workers.sort_unstable();
    let verdict_at = |w: u32| {
        rows.clone()
            .find(|r| r.workers == w)
            .and_then(|r| r.diagnosis.as_ref())
            .map(|d| d.verdict)
    };
    let verdicts: Vec<(u32, Verdict)> = workers.iter().filter_map(|&w| verdict_at(w).map(|v| (w, v))).collect();
    let &(_, last) = verdicts.last()?;
    let from_workers = verdicts
        .iter()
        .rev()
        .take_while(|(_, v)| *v == last)
        .last()
        .map_or(0, |(w, _)| *w);
    Some(SizeLimit {
        object_size_bytes: size,
        verdict: last,
        from_workers,
    })
}

/// The note of one bucket from its sizes' limits.
fn limits_of(bucket: &str, sizes: Vec<SizeLimit>) -> SizeLimits {
    let changes = sizes.iter().any(|s| s.verdict != sizes[0].verdict);
    let parts: Vec<String> = sizes
        .iter()
        .map(|s| {
            format!(
                "{} B {} from {} worker{}",
                s.object_size_bytes,
                s.verdict.name(),
                s.from_workers,
                if s.from_workers == 1 { "" } else { "s" }
            )
        })
        .collect();
    let note = if changes {
        format!("the binding limit changes with size: {}", parts.join(", "))
    } else {
        format!(
            "the binding limit is the same at every size ({}): {}",
            sizes[0].verdict.name(),
            parts.join(", ")
        )
    };
    SizeLimits {
        bucket: bucket.to_string(),
        axes: Default::default(),
        sizes,
        changes,
        note,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{test_rows, Diagnosis, ObjectSize};

    fn at(size: u64, workers: u32, verdict: Verdict) -> ConfigResult {
        let mut r = test_rows::row("sized-bucket", workers, 1, 100.0, 0);
        r.axes.object_size_bytes = Some(ObjectSize::Fixed(size));
        r.diagnosis = Some(Diagnosis {
            verdict,
            figures: Default::default(),
            explanation: String::new(),
            notes: vec![],
        });
        r
    }

    #[test]
    fn the_note_says_where_the_limit_changes_with_size() {
        use Verdict::*;
        let rows = vec![
            at(4096, 1, Latency),
            at(4096, 8, Latency),
            at(4096, 64, ClientCpu),
            at(4096, 256, ClientCpu),
            at(1_048_576, 1, Latency),
            at(1_048_576, 8, Bandwidth),
            at(1_048_576, 64, Bandwidth),
            at(1_048_576, 256, Bandwidth),
        ];
        let notes = size_limits(&rows);
        assert_eq!(notes.len(), 1);
        assert!(notes[0].changes);
        assert_eq!(
            notes[0].note,
            "the binding limit changes with size: 4096 B client_cpu from 64 workers, 1048576 B bandwidth from 8 workers"
        );
        // A limit that comes back after another does not count from its first sight.
        let dip = vec![
            at(4096, 1, ClientCpu),
            at(4096, 8, Latency),
            at(4096, 64, ClientCpu),
            at(46_080, 1, ClientCpu),
            at(46_080, 64, ClientCpu),
        ];
        let n = &size_limits(&dip)[0];
        assert!(!n.changes, "{}", n.note);
        assert_eq!((n.sizes[0].from_workers, n.sizes[1].from_workers), (64, 1));
        assert!(n
            .note
            .starts_with("the binding limit is the same at every size (client_cpu)"));
        // One size is no axis: no note.
        assert!(size_limits(&rows[..4]).is_empty());
    }

    #[test]
    fn each_client_gets_its_own_note() {
        use crate::model::Client;
        use Verdict::*;
        let lean = |size, workers, verdict| {
            let mut r = at(size, workers, verdict);
            r.axes.s3_client = Client::Lean;
            r
        };
        let rows = vec![
            at(4096, 64, ClientCpu),
            at(1_048_576, 64, Bandwidth),
            lean(4096, 64, Latency),
            lean(1_048_576, 64, Bandwidth),
        ];
        let notes = size_limits(&rows);
        let got: Vec<(Client, Vec<Verdict>)> = notes
            .iter()
            .map(|n| (n.axes.s3_client, n.sizes.iter().map(|s| s.verdict).collect()))
            .collect();
        assert_eq!(
            got,
            vec![
                (Client::Sdk, vec![ClientCpu, Bandwidth]),
                (Client::Lean, vec![Latency, Bandwidth])
            ],
            "never a verdict of one client's rows in another's note"
        );
    }
}

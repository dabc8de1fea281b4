//! CloudWatch metrics from a result, in embedded metric format (EMF): one JSON line
//! per configuration that CloudWatch Logs turns into metrics when the function logs it
//! (no PutMetricData call, so no permission beyond the function's own logs). Metrics:
//! objects/s, body bytes/s, first-byte p50 and p99, errors and requests; dimensions:
//! bucket, workers and the row's axes as [`crate::model::Axes::dimensions`] names
//! them: the Lambda memory size, MB (the row's on a memory sweep, else the function's;
//! left out where neither is known), the object size on a size axis, and the client
//! and the hedge policy where they are not the default (`sdk`, `off`: an unhedged SDK
//! row keeps the dimensions it always had). Within EMF's limits: one directive of 6
//! metrics and one dimension set of at most 6 (EMF allows 100 and 30),
//! dimension values at most [`MAX_DIMENSION_VALUE_CHARS`], a value only where it is a
//! finite number (a row with no answered GET has no first-byte metrics). A result
//! written to S3 adds one line under no dimension counting its writes and the failed
//! ones (`ResultsWritesFailed`): a lost result shows in the metrics.

use serde_json::{json, Map, Value};

use crate::model::{ConfigResult, SweepResult};

/// Longest dimension value EMF accepts, characters.
pub(crate) const MAX_DIMENSION_VALUE_CHARS: usize = 1024;

/// One metric of a row: its name, its CloudWatch unit and how it is read.
struct Metric {
    name: &'static str,
    unit: &'static str,
    value: fn(&ConfigResult) -> Option<f64>,
}

/// The metrics of every line, in order.
const METRICS: &[Metric] = &[
    Metric {
        name: "ObjectsPerSecond",
        unit: "Count/Second",
        value: |r| Some(r.objects_per_s),
    },
    Metric {
        name: "BodyBytesPerSecond",
        unit: "Bytes/Second",
        value: |r| (r.wall_ms > 0.0).then(|| r.bytes as f64 * 1000.0 / r.wall_ms),
    },
    Metric {
        name: "FirstByteP50",
        unit: "Milliseconds",
        value: |r| (r.ttfb_ms.count > 0).then_some(r.ttfb_ms.p50),
    },
    Metric {
        name: "FirstByteP99",
        unit: "Milliseconds",
        value: |r| (r.ttfb_ms.count > 0).then_some(r.ttfb_ms.p99),
    },
    Metric {
        name: "Errors",
        unit: "Count",
        value: |r| Some(r.errors.total as f64),
    },
    Metric {
        name: "Requests",
        unit: "Count",
        value: |r| Some(r.requests as f64),
    },
];

/// One EMF line per configuration of `result`, in `namespace`, stamped `timestamp_ms`,
/// and for a result written to S3 one line counting its failed writes.
pub fn lines(result: &SweepResult, namespace: &str, timestamp_ms: u64) -> Vec<String> {
    let function_mb = result.environment.lambda.as_ref().and_then(|l| l.memory_size_mb);
    result
        .results
        .iter()
        .map(|row| line(row, namespace, timestamp_ms, row.axes.memory_mb.or(function_mb)).to_string())
        .chain(writes_line(result, namespace, timestamp_ms).map(|v| v.to_string()))
        .collect()
}

/// The run's writes of its result to S3 (`ResultsWritesFailed`, `ResultsWrites`), under
/// no dimension (an alarm on `ResultsWritesFailed` > 0 sees every lost result); none
/// when the result is not written to S3.
fn writes_line(result: &SweepResult, namespace: &str, timestamp_ms: u64) -> Option<Value> {
    let w = result.results_writes.as_ref()?;
    Some(json!({
        "ResultsWritesFailed": w.failed,
        "ResultsWrites": w.written + w.failed,
        "ResultsStatus": w.status,
        "_aws": {
            "Timestamp": timestamp_ms,
            "CloudWatchMetrics": [{
                "Namespace": namespace,
                "Dimensions": [[]],
                "Metrics": [
                    {"Name": "ResultsWritesFailed", "Unit": "Count"},
                    {"Name": "ResultsWrites", "Unit": "Count"},
                ],
            }],
        },
    }))
}

/// The EMF document of one row.
fn line(row: &ConfigResult, namespace: &str, timestamp_ms: u64, memory_mb: Option<u32>) -> Value {
    let mut doc = Map::new();
    let mut dimensions = vec!["Bucket", "Workers"];
    doc.insert("Bucket".into(), json!(dimension_value(&row.bucket)));
    doc.insert("Workers".into(), json!(row.workers.to_string()));
    let axes = crate::model::Axes {
        memory_mb,
        ..row.axes.key()
    };
    for (name, value) in axes.dimensions() {
        dimensions.push(name);
        doc.insert(name.into(), json!(value));
    }
    let mut metrics = Vec::new();
    for metric in METRICS {
        if let Some(value) = (metric.value)(row).filter(|v| v.is_finite()) {
            metrics.push(json!({"Name": metric.name, "Unit": metric.unit}));
            doc.insert(metric.name.into(), json!(value));
        }
    }
    // Searchable in Logs Insights, not metrics.
    doc.insert("Repetition".into(), json!(row.repetition));
    if let Some(d) = &row.diagnosis {
        doc.insert("Verdict".into(), json!(d.verdict.name()));
    }
    doc.insert(
        "_aws".into(),
        json!({
            "Timestamp": timestamp_ms,
            "CloudWatchMetrics": [{
                "Namespace": namespace,
                "Dimensions": [dimensions],
                "Metrics": metrics,
            }],
        }),
    );
    Value::Object(doc)
}

/// A bucket name as a dimension value: at most [`MAX_DIMENSION_VALUE_CHARS`].
fn dimension_value(text: &str) -> String {
    text.chars().take(MAX_DIMENSION_VALUE_CHARS).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::stats::Percentiles;

    fn row(bucket: &str, workers: u32, ok: u64) -> ConfigResult {
        let mut row = crate::model::test_rows::row(bucket, workers, 1, 500.0, 0);
        row.ok = ok;
        row.requests = ok + 2;
        row.errors.add(crate::model::ErrorKind::Throttled, 2);
        row.bytes = ok * 1000;
        row.wall_ms = 500.0;
        row.objects_per_s = ok as f64 * 2.0;
        row.ttfb_ms = Percentiles {
            p50: 12.5,
            p99: 40.25,
            count: ok,
            ..Percentiles::default()
        };
        row
    }

    fn doc(line: &str) -> Value {
        serde_json::from_str(line).unwrap()
    }

    #[test]
    fn a_line_carries_the_rows_figures_under_its_dimensions() {
        let mut result = crate::model::test_rows::result(vec![row("std-1", 64, 100)]);
        result.results[0].axes.memory_mb = Some(1769);
        let lines = lines(&result, "s3sweep/canary", 1_796_169_599_000);
        assert_eq!(lines.len(), 1);
        let d = doc(&lines[0]);
        let directive = &d["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(directive["Namespace"], "s3sweep/canary");
        assert_eq!(directive["Dimensions"], json!([["Bucket", "Workers", "MemoryMB"]]));
        assert_eq!(d["_aws"]["Timestamp"], 1_796_169_599_000u64);
        assert_eq!(
            (d["Bucket"].clone(), d["Workers"].clone(), d["MemoryMB"].clone()),
            (json!("std-1"), json!("64"), json!("1769"))
        );
        assert_eq!(d["ObjectsPerSecond"], 200.0);
        assert_eq!(d["BodyBytesPerSecond"], 200_000.0);
        assert_eq!(
            (d["FirstByteP50"].clone(), d["FirstByteP99"].clone()),
            (json!(12.5), json!(40.25))
        );
        assert_eq!((d["Errors"].clone(), d["Requests"].clone()), (json!(2.0), json!(102.0)));
        let names: Vec<&str> = directive["Metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["Name"].as_str().unwrap())
            .collect();
        assert_eq!(names, METRICS.iter().map(|m| m.name).collect::<Vec<_>>());
    }

    #[test]
    fn a_hedged_rows_policy_and_a_lean_rows_client_are_dimensions() {
        let mut hedged = row("std-1", 64, 100);
        hedged.axes.hedge = crate::model::Hedge::Percentile(95);
        let mut lean = hedged.clone();
        lean.axes.s3_client = crate::model::Client::Lean;
        lean.axes.hedge = crate::model::Hedge::AfterMs(40);
        let result = crate::model::test_rows::result(vec![row("std-1", 64, 100), hedged, lean]);
        let dims: Vec<(Value, Value, Value)> = lines(&result, "s3sweep", 1)
            .iter()
            .map(|l| {
                let d = doc(l);
                let set = d["_aws"]["CloudWatchMetrics"][0]["Dimensions"].clone();
                (
                    set,
                    d.get("Client").cloned().unwrap_or_default(),
                    d.get("Hedge").cloned().unwrap_or_default(),
                )
            })
            .collect();
        assert_eq!(
            dims,
            vec![
                (json!([["Bucket", "Workers"]]), Value::Null, Value::Null),
                (json!([["Bucket", "Workers", "Hedge"]]), Value::Null, json!("p95")),
                (
                    json!([["Bucket", "Workers", "Client", "Hedge"]]),
                    json!("lean"),
                    json!("40ms")
                ),
            ]
        );
    }

    #[test]
    fn a_failed_results_write_is_counted_in_a_line_of_its_own() {
        let mut result = crate::model::test_rows::result(vec![row("std-1", 64, 100)]);
        assert_eq!(lines(&result, "s3sweep", 1).len(), 1, "not written to S3: no line");
        let mut writes = crate::model::ResultsWrites::default();
        writes.add(Ok(()));
        writes.add(Err("AccessDenied: kms:GenerateDataKey".into()));
        result.results_writes = Some(writes);
        let all = lines(&result, "s3sweep", 1);
        assert_eq!(all.len(), 2);
        let d = doc(&all[1]);
        assert_eq!(
            (
                d["ResultsWritesFailed"].clone(),
                d["ResultsWrites"].clone(),
                d["ResultsStatus"].clone()
            ),
            (json!(1), json!(2), json!("failed"))
        );
        let directive = &d["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(directive["Dimensions"], json!([[]]));
        assert_eq!(directive["Metrics"][0]["Name"], "ResultsWritesFailed");
    }

    #[test]
    fn a_row_without_answers_has_no_first_byte_metrics_and_no_memory_without_one() {
        let result = crate::model::test_rows::result(vec![row("exp--use1-az4--x-s3", 8, 0)]);
        let d = doc(&lines(&result, "s3sweep", 1)[0]);
        let directive = &d["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(directive["Dimensions"], json!([["Bucket", "Workers"]]));
        assert!(d.get("FirstByteP50").is_none() && d.get("MemoryMB").is_none(), "{d}");
        assert!(
            directive["Metrics"]
                .as_array()
                .unwrap()
                .iter()
                .all(|m| m["Name"] != "FirstByteP99"),
            "{directive}"
        );
    }
}

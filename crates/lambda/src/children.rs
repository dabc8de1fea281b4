//! The coordinator's children: one child event per invocation (a shard of the keys, or
//! all keys with its own shuffle seed; one shared start; a finish-by time inside the
//! coordinator's deadline), invoked all at once, waited for together.

use std::time::Instant;

use serde_json::Value;

use crate::engine::Deadline;
use crate::model::stats::round3;
use crate::model::{FromCoordinator, KeyRange, ListedShare, Role, Split, SweepRequest};
use crate::plan::{BucketListing, Plan};

use super::invoke::{ChildOutcome, Invoker};
use super::settings::{FanoutSettings, FUNCTION_ENV, NO_DEADLINE_INVOKE_LIMIT};

/// Why a fan-out could not start at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FanoutError {
    #[error(
        "fan-out needs the function's own name: AWS_LAMBDA_FUNCTION_NAME (set by Lambda) or {FUNCTION_ENV} is not set"
    )]
    NoFunctionName,
    #[error("fan-out is not available in this process (no Lambda client was built)")]
    NoInvoker,
}

/// Invokes every child of `plan` at once and waits for all of them. `deadline` is the
/// coordinator's own: the children are told to finish by its stop time (the deadline
/// less the margin), and are waited for until half the margin is left.
pub(crate) async fn invoke_children(
    invoker: &Invoker,
    settings: &FanoutSettings,
    function: &str,
    plan: &Plan,
    deadline: Option<Deadline>,
) -> Result<(u64, Vec<ChildOutcome>), FanoutError> {
    let f = plan.fanout().copied().ok_or(FanoutError::NoInvoker)?;
    let now = Instant::now();
    let now_ms = crate::sys::now_unix_ms();
    let start_unix_ms = now_ms + f.start_delay_ms;
    let (limit, finish_by) = match deadline {
        Some(d) => {
            let usable = d.usable_from(now);
            let finish_by = now_ms + usable.as_millis() as u64;
            (d.wait_for(now, usable), Some(finish_by.max(start_unix_ms + 1)))
        }
        None => (NO_DEADLINE_INVOKE_LIMIT, None),
    };
    let children = child_requests(plan, start_unix_ms, finish_by);
    let calls = children.into_iter().map(|(index, request)| {
        let function = function.to_string();
        let key_range = reported_range(plan, index, &request);
        let seed = request.seed;
        let event = break_for_test(settings, index, child_event(&request));
        async move {
            let started = Instant::now();
            let result = invoker.invoke(&function, &event, limit).await;
            let invoke_ms = round3(started.elapsed().as_secs_f64() * 1000.0);
            match &result {
                Ok(_) => tracing::info!(child = index, invoke_ms, "child finished"),
                Err(e) => tracing::warn!(child = index, kind = %e.kind, error = %e.message, "child failed"),
            }
            ChildOutcome {
                index,
                key_range,
                seed,
                invoke_ms,
                result,
            }
        }
    });
    let outcomes = futures_util::future::join_all(calls).await;
    Ok((start_unix_ms, outcomes))
}

/// A child's event: the request as JSON, without the (default, unused) `key_template`
/// beside a `key_prefix`, which validation refuses.
pub fn child_event(request: &SweepRequest) -> Value {
    let mut event = serde_json::to_value(request).unwrap_or(Value::Null);
    if let (Some(_), Value::Object(m)) = (&request.key_prefix, &mut event) {
        m.remove("key_template");
    }
    event
}

/// Tests only, debug builds only: the child `settings.break_child` names gets an
/// unknown field, so its invocation fails for real (`InvalidEvent`).
#[cfg(debug_assertions)]
fn break_for_test(settings: &FanoutSettings, index: u32, mut event: Value) -> Value {
    if settings.break_child == Some(index) {
        if let Value::Object(m) = &mut event {
            m.insert("broken_by_test_hook".into(), Value::Bool(true));
        }
    }
    event
}

/// A release build has no test switch: the event goes out as made.
#[cfg(not(debug_assertions))]
fn break_for_test(_: &FanoutSettings, _: u32, event: Value) -> Value {
    event
}

/// Child `k` of `n`'s part of `count` keys: `k*count/n .. (k+1)*count/n`.
fn shard(k: u32, n: u64, count: u64) -> KeyRange {
    let k64 = u64::from(k);
    KeyRange {
        start: (k64 * count / n) as u32,
        end: ((k64 + 1) * count / n) as u32,
    }
}

/// Child `k` of `n`'s share of every bucket's listing: the keys of its shard of that
/// bucket's listed keys, named by the key before the shard (none for the first) and
/// their number. The shares of the `n` children are disjoint and cover the listing.
pub(crate) fn listed_shares(listing: &[BucketListing], k: u32, n: u32) -> Vec<ListedShare> {
    listing
        .iter()
        .map(|b| {
            let r = shard(k, u64::from(n), b.objects.len() as u64);
            let start_after = (r.start > 0).then(|| b.objects[r.start as usize - 1].key.clone());
            ListedShare {
                start_after,
                count: r.end - r.start,
            }
        })
        .collect()
}

/// The coordinator's listing report, with each bucket's keys per child (shard split).
pub fn listing_reports(plan: &Plan) -> Vec<crate::model::KeyListing> {
    let mut reports = crate::engine::listing::reports(plan);
    let (Some(f), Some(listing)) = (plan.fanout(), plan.listing()) else {
        return reports;
    };
    if f.split == Split::Shard {
        for (i, report) in reports.iter_mut().enumerate() {
            report.keys_per_child = (0..f.invocations)
                .map(|k| listed_shares(&listing[i..=i], k, f.invocations)[0].count)
                .collect();
        }
    }
    reports
}

/// The key range a child's outcome is reported with: its `key_range`, its shard of
/// `object_count` when it lists its share, or all keys (a replica).
fn reported_range(plan: &Plan, k: u32, request: &SweepRequest) -> KeyRange {
    let all = KeyRange {
        start: 0,
        end: plan.object_count(),
    };
    let Some(c) = &request.from_coordinator else {
        return all;
    };
    match (c.key_range, c.listed_shares.is_empty(), plan.fanout()) {
        (Some(r), _, _) => r,
        (None, false, Some(f)) => shard(k, u64::from(f.invocations), u64::from(plan.object_count())),
        _ => all,
    }
}

/// The child events of a fan-out plan: index, shard, and the request.
pub fn child_requests(plan: &Plan, start_unix_ms: u64, finish_by_unix_ms: Option<u64>) -> Vec<(u32, SweepRequest)> {
    let Some(f) = plan.fanout() else {
        return Vec::new();
    };
    let n = u64::from(f.invocations);
    let count = u64::from(plan.object_count());
    (0..f.invocations)
        .map(|k| {
            let mut request = plan.request().clone();
            request.fanout = None;
            request.results_uri = None; // the coordinator writes the result
            let mut envelope = FromCoordinator {
                role: Role::Child,
                key_range: None,
                start_unix_ms: Some(start_unix_ms),
                finish_by_unix_ms,
                config_slot_ms: f.slot_ms,
                listed_shares: Vec::new(),
            };
            match f.split {
                Split::Shard => match plan.listing() {
                    // A listed prefix: the child lists only its share, after the key
                    // before it, and sweeps all it lists (so no key_range).
                    Some(listing) if plan.key_prefix().is_some() => {
                        envelope.listed_shares = listed_shares(listing, k, f.invocations);
                        request.object_count = envelope.listed_shares.iter().map(|s| s.count).max().unwrap_or(1);
                        request.allow_fewer_keys =
                            envelope.listed_shares.iter().any(|s| s.count < request.object_count);
                    }
                    _ => envelope.key_range = Some(shard(k, n, count)),
                },
                Split::Replicate => {
                    // Each child its own order, so they do not all hit one object at once.
                    request.seed = request.seed.wrapping_add(u64::from(k));
                }
            }
            request.from_coordinator = Some(envelope);
            (k, request)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::StartSchedule;
    use serde_json::json;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn shards_cover_every_key_once_and_replicas_vary_the_seed() {
        let p = Plan::from_value(json!({
            "buckets": ["b-1"], "object_count": 10, "fanout": {"invocations": 3}
        }))
        .unwrap();
        let children = child_requests(&p, 123, Some(456));
        let envelope = |r: &SweepRequest| r.from_coordinator.clone().expect("a child event carries the envelope");
        let ranges: Vec<(u32, u32)> = children
            .iter()
            .map(|(_, r)| envelope(r).key_range.map(|k| (k.start, k.end)).unwrap())
            .collect();
        assert_eq!(ranges, vec![(0, 3), (3, 6), (6, 10)]);
        for (_, r) in &children {
            assert_eq!(envelope(r).role, Role::Child);
            assert!(r.fanout.is_none());
            assert_eq!(envelope(r).start_unix_ms, Some(123));
            assert_eq!(envelope(r).finish_by_unix_ms, Some(456));
            // Every child event is itself a valid child plan.
            let plan = Plan::from_value(serde_json::to_value(r).unwrap()).unwrap();
            assert_eq!(plan.role(), Role::Child);
        }
        let p = Plan::from_value(json!({
            "buckets": ["b-1"], "object_count": 10, "fanout": {"invocations": 2, "split": "replicate"}
        }))
        .unwrap();
        let children = child_requests(&p, 123, None);
        assert!(children.iter().all(|(_, r)| envelope(r).key_range.is_none()));
        assert_ne!(children[0].1.seed, children[1].1.seed);
    }

    /// Every request field at a value other than its default: the first sample names
    /// its objects by template, the second by prefix (a request gives one of the two).
    fn every_field_not_default() -> [Value; 2] {
        let template = json!({
            "buckets": ["b-1", "b-2"], "key_template": "k/{i}", "object_count": 7,
            "workers": [3, 5], "pool_connections": 9, "repetitions": 3, "warmup": false,
            "shuffle": false, "seed": 42,
            "fanout": {"invocations": 2, "start_delay_ms": 500, "split": "replicate", "slot_ms": 100},
            "timeouts_ms": {"connect": 1, "first_byte": 2, "attempt": 3}, "max_attempts": 4,
            "prices": {
                "s3_standard_get_per_1000_usd": 0.5, "s3_express_get_per_1000_usd": 0.25,
                "s3_express_retrieval_per_gb_usd": 0.125, "lambda_x86_64_gb_s_usd": 0.0625,
                "lambda_arm64_gb_s_usd": 0.03125, "lambda_memory_mb": 512,
                "lambda_architecture": "arm64", "express_buckets": ["e-1"],
                "lmi_instance_hour_usd": 0.5, "lmi_management_fee_share": 0.25,
                "lmi_request_per_million_usd": 0.125
            },
            "target_wall_ms": 1000, "memory_mb": [512, 1024], "order": "interleaved",
            "probe_bandwidth": true, "probe_key": "p/k", "pool_idle_timeout_ms": 1000,
            "results_uri": "s3://r-1/runs", "requests_log_uri": "s3://r-1/runs/logs", "object_sizes_bytes": [10, 20], "clients": ["lean"],
            "hedge": ["off", "p95", {"after_ms": 40}], "max_hedge_percent": 10,
            "run_id": "nightly-1", "results_by_date": true, "results_html": true, "metrics_namespace": "s3sweep/canary",
            "expect_memory_mb": 3008,
        });
        let mut prefix = template.clone();
        let m = prefix.as_object_mut().unwrap();
        m.remove("key_template");
        m.insert("key_prefix".into(), json!("p/"));
        m.insert("allow_fewer_keys".into(), json!(true));
        [template, prefix]
    }

    /// Reads `event` field by field as the plan does; every problem fails the test.
    fn read(event: Value) -> SweepRequest {
        let mut problems = Vec::new();
        let request = crate::plan::request_fields::typed_request(event.as_object().unwrap().clone(), &mut problems);
        assert!(problems.is_empty(), "{problems:?}");
        request
    }

    #[test]
    fn every_request_field_is_read_and_reaches_a_child() {
        let samples = every_field_not_default();
        for field in crate::plan::REQUEST_FIELDS {
            assert!(
                samples.iter().any(|s| s.get(field).is_some()),
                "request field {field} has no non-default value in every_field_not_default()"
            );
        }
        let default = serde_json::to_value(SweepRequest::default()).unwrap();
        for sample in samples {
            let request = read(sample.clone());
            let echoed = serde_json::to_value(&request).unwrap();
            for (field, value) in sample.as_object().unwrap() {
                assert_ne!(
                    default.get(field),
                    Some(value),
                    "{field}: the sample's value is the default"
                );
                assert_eq!(echoed.get(field), Some(value), "{field} was not read as given");
                if let Some(section) = echoed[field].as_object() {
                    let given: std::collections::BTreeSet<&String> = value.as_object().unwrap().keys().collect();
                    let all: std::collections::BTreeSet<&String> = section.keys().collect();
                    assert_eq!(given, all, "{field}: the sample gives every field of the section");
                }
            }
            // What a child is sent, read as the child reads it, is the same request.
            assert_eq!(
                read(child_event(&request)),
                request,
                "a field is lost on the way to a child"
            );
        }
    }

    #[test]
    fn slots_align_every_configuration() {
        let start = UNIX_EPOCH + Duration::from_secs(1_000);
        let first_only = StartSchedule {
            start_at: Some(start),
            slot: None,
        };
        assert_eq!(first_only.for_configuration(0, true).start_at, Some(start));
        assert_eq!(
            first_only.for_configuration(3, true).start_at,
            Some(start),
            "first run after skips"
        );
        assert_eq!(first_only.for_configuration(1, false).start_at, None);
        let slotted = StartSchedule {
            start_at: Some(start),
            slot: Some(Duration::from_millis(250)),
        };
        assert_eq!(slotted.for_configuration(0, true).start_at, Some(start));
        assert_eq!(
            slotted.for_configuration(4, false).start_at,
            Some(start + Duration::from_secs(1))
        );
        // Validation: the schedule fits in 15 minutes; a child slot needs a start.
        let err = Plan::from_value(json!({
            "buckets": ["b-1"], "workers": [1, 2, 4], "fanout": {"invocations": 2, "slot_ms": 300_001}
        }))
        .unwrap_err();
        assert_eq!(err.fields(), vec!["fanout.slot_ms"]);
        let err = Plan::from_value(json!({
            "buckets": ["b-1"], "from_coordinator": {"role": "child", "config_slot_ms": 100}
        }))
        .unwrap_err();
        assert_eq!(err.fields(), vec!["from_coordinator.config_slot_ms"]);
        let p = Plan::from_value(json!({
            "buckets": ["b-1"], "workers": [1, 2], "fanout": {"invocations": 2, "slot_ms": 5000}
        }))
        .unwrap();
        let children = child_requests(&p, crate::sys::now_unix_ms() + 1000, None);
        assert_eq!(
            children[1].1.from_coordinator.as_ref().unwrap().config_slot_ms,
            Some(5000)
        );
        let child = Plan::from_value(serde_json::to_value(&children[1].1).unwrap()).unwrap();
        assert_eq!(StartSchedule::of(&child).unwrap().slot, Some(Duration::from_secs(5)));
    }
}

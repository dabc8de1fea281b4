//! Reading a raw request into a typed [`SweepRequest`] section by section (the request,
//! `timeouts_ms`, `fanout`, `prices`), and the range checks of the fan-out and price
//! sections. [`super::Plan::from_request`] calls the checks with the rest.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::model::request::{
    FanoutRequest, FromCoordinator, Prices, Role, Split, SweepRequest, TimeoutsMs, DEFAULT_START_DELAY_MS,
    FROM_COORDINATOR_FIELD,
};

use super::bucket_name::check_bucket_name;
use super::fields::Section;
use super::FieldProblem;

/// Largest `fanout.invocations` validation accepts whatever the function allows.
pub const MAX_INVOCATIONS: u32 = 1_000;
/// Largest `fanout.start_delay_ms`.
pub(crate) const MAX_START_DELAY_MS: u64 = 60_000;
/// Longest schedule of slots (configurations x `slot_ms`): Lambda's 15 minutes.
pub(crate) const MAX_SLOTS_MS: u64 = 900_000;
/// How far in the future a child's `start_unix_ms` may be (delay plus clock skew).
pub(crate) const MAX_START_AHEAD_MS: u64 = MAX_START_DELAY_MS + 10_000;
/// Lambda memory limits, MB.
pub const LAMBDA_MEMORY_MB: std::ops::RangeInclusive<u32> = 128..=10_240;
/// Most memory sizes one memory sweep may run (`memory_mb`).
pub const MAX_MEMORY_SIZES: usize = 10;
/// Most accepted `target_wall_ms` (one day).
pub const MAX_TARGET_WALL_MS: u64 = 86_400_000;
/// Highest price accepted per 1,000 GETs or per GB (a sanity bound against typos).
const MAX_REQUEST_PRICE_USD: f64 = 1.0;
/// Highest price accepted per GB-second.
const MAX_GB_S_PRICE_USD: f64 = 0.01;
/// Highest instance price accepted per hour (the largest EC2 instances list below it).
const MAX_INSTANCE_HOUR_USD: f64 = 1000.0;
/// Highest management fee accepted, as a share of the instance price.
const MAX_FEE_SHARE: f64 = 1.0;

/// The fields of the coordinator's envelope ([`FROM_COORDINATOR_FIELD`]).
const FROM_COORDINATOR_FIELDS: &[&str] = &[
    "role",
    "key_range",
    "start_unix_ms",
    "finish_by_unix_ms",
    "config_slot_ms",
    "listed_shares",
];

const PRICE_FIELDS: &[&str] = &[
    "s3_standard_get_per_1000_usd",
    "s3_express_get_per_1000_usd",
    "s3_express_retrieval_per_gb_usd",
    "lambda_x86_64_gb_s_usd",
    "lambda_arm64_gb_s_usd",
    "lambda_memory_mb",
    "lambda_architecture",
    "express_buckets",
    "lmi_instance_hour_usd",
    "lmi_management_fee_share",
    "lmi_request_per_million_usd",
];

/// `clients`: at least one, none twice.
pub(crate) fn check_clients(request: &SweepRequest, problems: &mut Vec<FieldProblem>) {
    if request.clients.is_empty() {
        problems.push(FieldProblem {
            field: "clients".into(),
            message: "must list at least one client: \"sdk\", \"lean\"".into(),
        });
    }
    for (i, c) in request.clients.iter().enumerate() {
        if request.clients[..i].contains(c) {
            problems.push(FieldProblem {
                field: format!("clients[{i}]"),
                message: format!("{:?} is listed twice", c.name()),
            });
        }
    }
}

/// `hedge`: at least one policy, each in range and listed once; `max_hedge_percent`
/// 0 to 100.
pub(crate) fn check_hedge(request: &SweepRequest, problems: &mut Vec<FieldProblem>) {
    if request.hedge.is_empty() {
        problems.push(FieldProblem {
            field: "hedge".into(),
            message: "must list at least one policy: \"off\", \"pNN\", {\"after_ms\": N}".into(),
        });
    }
    for (i, h) in request.hedge.iter().enumerate() {
        let message = if request.hedge[..i].contains(h) {
            Some(format!("{h} is listed twice"))
        } else {
            h.problem()
        };
        if let Some(message) = message {
            problems.push(FieldProblem {
                field: format!("hedge[{i}]"),
                message,
            });
        }
    }
    if request.max_hedge_percent > 100 {
        problems.push(FieldProblem {
            field: "max_hedge_percent".into(),
            message: format!("must be 0 to 100, got {}", request.max_hedge_percent),
        });
    }
}

/// The problem of a request naming its objects both ways.
pub(crate) fn both_key_sources() -> FieldProblem {
    FieldProblem {
        field: "key_prefix".into(),
        message:
            "give exactly one of key_prefix (list the keys under a prefix) and key_template (numbered keys), not both"
                .into(),
    }
}

/// The `timeouts_ms` section; fields with a wrong type keep their defaults.
pub(super) fn typed_timeouts(value: Value, problems: &mut Vec<FieldProblem>) -> TimeoutsMs {
    let mut timeouts = TimeoutsMs::default();
    let known = ["connect", "first_byte", "attempt"];
    let example = "{\"connect\": 3000, \"first_byte\": 10000, \"attempt\": 30000}";
    if let Some(mut t) = Section::open("timeouts_ms", value, &known, example, problems) {
        let ms = "a whole number of milliseconds";
        t.take("connect", ms, &mut timeouts.connect);
        t.take("first_byte", ms, &mut timeouts.first_byte);
        t.take("attempt", ms, &mut timeouts.attempt);
    }
    timeouts
}

/// The coordinator's envelope; `None` when it is not an object (reported).
pub(super) fn typed_from_coordinator(value: Value, problems: &mut Vec<FieldProblem>) -> Option<FromCoordinator> {
    let example = "{\"role\": \"child\", \"key_range\": {\"start\": 0, \"end\": 500}}";
    let mut c = Section::open(
        FROM_COORDINATOR_FIELD,
        value,
        FROM_COORDINATOR_FIELDS,
        example,
        problems,
    )?;
    let mut envelope = FromCoordinator::default();
    let epoch_ms = "milliseconds since the Unix epoch";
    c.take("role", "\"coordinator\" or \"child\"", &mut envelope.role);
    c.take(
        "key_range",
        "an object like {\"start\": 0, \"end\": 500}",
        &mut envelope.key_range,
    );
    c.take("start_unix_ms", epoch_ms, &mut envelope.start_unix_ms);
    c.take("finish_by_unix_ms", epoch_ms, &mut envelope.finish_by_unix_ms);
    c.take(
        "config_slot_ms",
        "a whole number of milliseconds",
        &mut envelope.config_slot_ms,
    );
    c.take(
        "listed_shares",
        "a list like [{\"start_after\": \"images/9.jpg\", \"count\": 100}], one per bucket",
        &mut envelope.listed_shares,
    );
    Some(envelope)
}

/// The `fanout` section; `None` when it is not an object (reported).
pub(super) fn typed_fanout(value: Value, problems: &mut Vec<FieldProblem>) -> Option<FanoutRequest> {
    let known = ["invocations", "start_delay_ms", "split", "slot_ms"];
    let example = "{\"invocations\": 4, \"start_delay_ms\": 2000, \"split\": \"shard\"}";
    let mut f = Section::open("fanout", value, &known, example, problems)?;
    let mut fanout = FanoutRequest {
        invocations: 1,
        start_delay_ms: DEFAULT_START_DELAY_MS,
        split: Split::Shard,
        slot_ms: None,
    };
    f.require(
        "invocations",
        "a whole number",
        "how many invocations to fan out to",
        &mut fanout.invocations,
    );
    f.take(
        "start_delay_ms",
        "a whole number of milliseconds",
        &mut fanout.start_delay_ms,
    );
    f.take("slot_ms", "a whole number of milliseconds", &mut fanout.slot_ms);
    f.take("split", "\"shard\" or \"replicate\"", &mut fanout.split);
    Some(fanout)
}

/// The `prices` section; fields with a wrong type keep their defaults.
pub(super) fn typed_prices(value: Value, problems: &mut Vec<FieldProblem>) -> Prices {
    let mut prices = Prices::default();
    let example = "{\"s3_standard_get_per_1000_usd\": 0.0004}";
    let Some(mut p) = Section::open("prices", value, PRICE_FIELDS, example, problems) else {
        return prices;
    };
    let usd = "a number of US dollars";
    p.take(
        "s3_standard_get_per_1000_usd",
        usd,
        &mut prices.s3_standard_get_per_1000_usd,
    );
    p.take(
        "s3_express_get_per_1000_usd",
        usd,
        &mut prices.s3_express_get_per_1000_usd,
    );
    p.take(
        "s3_express_retrieval_per_gb_usd",
        usd,
        &mut prices.s3_express_retrieval_per_gb_usd,
    );
    p.take("lambda_x86_64_gb_s_usd", usd, &mut prices.lambda_x86_64_gb_s_usd);
    p.take("lambda_arm64_gb_s_usd", usd, &mut prices.lambda_arm64_gb_s_usd);
    p.take("lambda_memory_mb", "a whole number of MB", &mut prices.lambda_memory_mb);
    p.take(
        "lambda_architecture",
        "\"x86_64\" or \"arm64\"",
        &mut prices.lambda_architecture,
    );
    p.take("express_buckets", "a list of bucket names", &mut prices.express_buckets);
    p.take("lmi_instance_hour_usd", usd, &mut prices.lmi_instance_hour_usd);
    p.take(
        "lmi_management_fee_share",
        "a share of the instance price (0.15 = 15%)",
        &mut prices.lmi_management_fee_share,
    );
    p.take(
        "lmi_request_per_million_usd",
        usd,
        &mut prices.lmi_request_per_million_usd,
    );
    prices
}

/// Range checks of a typed price table and `target_wall_ms`; one problem per bad field.
pub(crate) fn check_prices(prices: &Prices, target_wall_ms: Option<u64>, problems: &mut Vec<FieldProblem>) {
    check_dollar_prices(prices, problems);
    check_fee_and_memory(prices, problems);
    check_express_buckets(prices, problems);
    check_target_wall(target_wall_ms, problems);
}

/// Each price in dollars: from 0 to its kind's ceiling.
fn check_dollar_prices(prices: &Prices, problems: &mut Vec<FieldProblem>) {
    for (name, v, max) in [
        (
            "s3_standard_get_per_1000_usd",
            prices.s3_standard_get_per_1000_usd,
            MAX_REQUEST_PRICE_USD,
        ),
        (
            "s3_express_get_per_1000_usd",
            prices.s3_express_get_per_1000_usd,
            MAX_REQUEST_PRICE_USD,
        ),
        (
            "s3_express_retrieval_per_gb_usd",
            prices.s3_express_retrieval_per_gb_usd,
            MAX_REQUEST_PRICE_USD,
        ),
        (
            "lambda_x86_64_gb_s_usd",
            prices.lambda_x86_64_gb_s_usd,
            MAX_GB_S_PRICE_USD,
        ),
        (
            "lambda_arm64_gb_s_usd",
            prices.lambda_arm64_gb_s_usd,
            MAX_GB_S_PRICE_USD,
        ),
        (
            "lmi_instance_hour_usd",
            prices.lmi_instance_hour_usd,
            MAX_INSTANCE_HOUR_USD,
        ),
        (
            "lmi_request_per_million_usd",
            prices.lmi_request_per_million_usd,
            MAX_REQUEST_PRICE_USD,
        ),
    ] {
        if !(v.is_finite() && (0.0..=max).contains(&v)) {
            problems.push(FieldProblem {
                field: format!("prices.{name}"),
                message: format!("must be between 0 and {max} US dollars, got {v}"),
            });
        }
    }
}

/// The management fee is a share; the memory size one Lambda allows.
fn check_fee_and_memory(prices: &Prices, problems: &mut Vec<FieldProblem>) {
    let fee = prices.lmi_management_fee_share;
    if !(fee.is_finite() && (0.0..=MAX_FEE_SHARE).contains(&fee)) {
        problems.push(FieldProblem {
            field: "prices.lmi_management_fee_share".into(),
            message: format!("must be a share between 0 and {MAX_FEE_SHARE} (0.15 = 15%), got {fee}"),
        });
    }
    if !LAMBDA_MEMORY_MB.contains(&prices.lambda_memory_mb) {
        problems.push(FieldProblem {
            field: "prices.lambda_memory_mb".into(),
            message: format!(
                "must be between {} and {} MB (Lambda's limits), got {}",
                LAMBDA_MEMORY_MB.start(),
                LAMBDA_MEMORY_MB.end(),
                prices.lambda_memory_mb
            ),
        });
    }
}

/// Each bucket named as a directory bucket is a valid bucket name.
fn check_express_buckets(prices: &Prices, problems: &mut Vec<FieldProblem>) {
    // Problems past the listed ones would only be counted: not made at all.
    for (i, b) in prices
        .express_buckets
        .iter()
        .enumerate()
        .take(super::MAX_LISTED_PROBLEMS + 1)
    {
        if let Err(e) = check_bucket_name(b) {
            problems.push(FieldProblem {
                field: format!("prices.express_buckets[{i}]"),
                message: e.to_string(),
            });
        }
    }
}

/// The wall time a fan-out aims at, when given: 1 ms to its ceiling.
fn check_target_wall(target_wall_ms: Option<u64>, problems: &mut Vec<FieldProblem>) {
    if let Some(t) = target_wall_ms {
        if t == 0 || t > MAX_TARGET_WALL_MS {
            problems.push(FieldProblem {
                field: "target_wall_ms".into(),
                message: format!("must be between 1 and {MAX_TARGET_WALL_MS} ms, got {t}"),
            });
        }
    }
}

fn now_unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Range and consistency checks of the fan-out: the `fanout` section a user asks for,
/// and the envelope a coordinator sends its children ([`FROM_COORDINATOR_FIELD`]).
pub(crate) fn check_fanout(request: &SweepRequest, problems: &mut Vec<FieldProblem>) {
    if let Some(f) = &request.fanout {
        check_fanout_section(f, request, problems);
    }
    if let Some(c) = &request.from_coordinator {
        check_from_coordinator(c, request, problems);
    }
}

/// The `fanout` section: its ranges, and nothing a coordinator only gives its children.
fn check_fanout_section(f: &FanoutRequest, request: &SweepRequest, problems: &mut Vec<FieldProblem>) {
    let mut bad = |field: &str, message: String| {
        problems.push(FieldProblem {
            field: field.to_string(),
            message,
        })
    };
    let envelope = request.from_coordinator.clone().unwrap_or_default();
    if envelope.role == Role::Child {
        bad(
            "fanout",
            "a child (role \"child\") never fans out again: fan-out is one level deep".into(),
        );
    }
    let directory = request
        .buckets
        .iter()
        .any(|b| super::bucket_name::is_directory_bucket(b));
    if request.key_prefix.is_some() && f.split == Split::Shard && directory {
        bad(
            "fanout",
            "cannot shard a key_prefix listing of a directory bucket (--x-s3): its children list their shares after a key (start-after), which directory buckets do not support; use split \"replicate\", one invocation per bucket, or key_template".into(),
        );
    }
    if f.invocations == 0 || f.invocations > MAX_INVOCATIONS {
        bad(
            "fanout.invocations",
            format!("must be between 1 and {MAX_INVOCATIONS}, got {}", f.invocations),
        );
    } else if f.split == Split::Shard && f.invocations > request.object_count {
        bad(
            "fanout.invocations",
            format!(
                "split \"shard\" gives every invocation at least one object: at most object_count ({}) invocations, or use split \"replicate\"",
                request.object_count
            ),
        );
    }
    if f.start_delay_ms > MAX_START_DELAY_MS {
        bad(
            "fanout.start_delay_ms",
            format!("must be at most {MAX_START_DELAY_MS} ms, got {}", f.start_delay_ms),
        );
    }
    if let Some(slot) = f.slot_ms {
        let configurations =
            request.buckets.len() as u64 * request.workers.len() as u64 * u64::from(request.repetitions);
        if slot == 0 || slot.saturating_mul(configurations) > MAX_SLOTS_MS {
            bad(
                "fanout.slot_ms",
                format!(
                    "must be at least 1 ms, and {configurations} configurations x slot_ms at most {MAX_SLOTS_MS} ms (Lambda's 15 minutes), got {slot}"
                ),
            );
        }
    }
    for (name, set) in [
        ("config_slot_ms", envelope.config_slot_ms.is_some()),
        ("key_range", envelope.key_range.is_some()),
        ("start_unix_ms", envelope.start_unix_ms.is_some()),
        ("finish_by_unix_ms", envelope.finish_by_unix_ms.is_some()),
        ("listed_shares", !envelope.listed_shares.is_empty()),
    ] {
        if set {
            bad(
                &format!("{FROM_COORDINATOR_FIELD}.{name}"),
                "is set by the coordinator for its children; a fan-out request does not take it".into(),
            );
        }
    }
}

/// The coordinator's envelope: a shard inside the keys, a slot with a start, a start
/// not too far ahead, a finish after the start.
fn check_from_coordinator(c: &FromCoordinator, request: &SweepRequest, problems: &mut Vec<FieldProblem>) {
    let mut bad = |name: &str, message: String| {
        problems.push(FieldProblem {
            field: format!("{FROM_COORDINATOR_FIELD}.{name}"),
            message,
        })
    };
    check_listed_shares(c, request, &mut bad);
    if let Some(r) = c.key_range {
        if r.start >= r.end || r.end > request.object_count {
            bad(
                "key_range",
                format!(
                    "must satisfy start < end <= object_count ({}), got start {} end {}",
                    request.object_count, r.start, r.end
                ),
            );
        }
    }
    if let Some(slot) = c.config_slot_ms {
        if slot == 0 || slot > MAX_SLOTS_MS || c.start_unix_ms.is_none() {
            bad(
                "config_slot_ms",
                format!("must be 1 to {MAX_SLOTS_MS} ms and come with start_unix_ms, got {slot}"),
            );
        }
    }
    let now = now_unix_ms();
    if let Some(t) = c.start_unix_ms {
        if t > now + MAX_START_AHEAD_MS {
            bad(
                "start_unix_ms",
                format!(
                    "is {} ms in the future; at most {MAX_START_AHEAD_MS} ms is accepted",
                    t - now
                ),
            );
        }
    }
    if let (Some(start), Some(finish)) = (c.start_unix_ms, c.finish_by_unix_ms) {
        if finish <= start {
            bad(
                "finish_by_unix_ms",
                format!("must be after start_unix_ms ({start}), got {finish}"),
            );
        }
    }
}

/// Checks of `memory_mb`: each size within Lambda's limits, none twice, at most
/// [`MAX_MEMORY_SIZES`], never on a child (the coordinator of a memory sweep invokes
/// one version per size; those invocations do not sweep memory again).
pub(crate) fn check_memory(request: &SweepRequest, problems: &mut Vec<FieldProblem>) {
    let mut bad = |field: String, message: String| problems.push(FieldProblem { field, message });
    if request.memory_mb.len() > MAX_MEMORY_SIZES {
        bad(
            "memory_mb".into(),
            format!(
                "at most {MAX_MEMORY_SIZES} memory sizes, got {}",
                request.memory_mb.len()
            ),
        );
    }
    let child = request.from_coordinator.as_ref().is_some_and(|c| c.role == Role::Child);
    if child && !request.memory_mb.is_empty() {
        bad(
            "memory_mb".into(),
            "a child (role \"child\") runs at its function's memory: memory_mb is for the coordinator".into(),
        );
    }
    let mut seen = std::collections::BTreeSet::new();
    let listed = if request.memory_mb.len() > MAX_MEMORY_SIZES {
        0
    } else {
        MAX_MEMORY_SIZES
    };
    for (i, &mb) in request.memory_mb.iter().enumerate().take(listed) {
        if !LAMBDA_MEMORY_MB.contains(&mb) {
            bad(
                format!("memory_mb[{i}]"),
                format!(
                    "must be between {} and {} MB (Lambda's limits), got {mb}",
                    LAMBDA_MEMORY_MB.start(),
                    LAMBDA_MEMORY_MB.end()
                ),
            );
        } else if !seen.insert(mb) {
            bad(format!("memory_mb[{i}]"), format!("{mb} is listed twice"));
        }
    }
}

/// A child's shares of its coordinator's listing: only with `key_prefix`, one per
/// bucket, each at least one key and at most `object_count`, never beside a `key_range`.
fn check_listed_shares(c: &FromCoordinator, request: &SweepRequest, bad: &mut impl FnMut(&str, String)) {
    if c.listed_shares.is_empty() {
        return;
    }
    let fits = c
        .listed_shares
        .iter()
        .all(|s| s.count >= 1 && s.count <= request.object_count);
    if request.key_prefix.is_none() || c.key_range.is_some() {
        bad(
            "listed_shares",
            "applies only with key_prefix, and not beside key_range".into(),
        );
    } else if c.listed_shares.len() != request.buckets.len() || !fits {
        bad(
            "listed_shares",
            format!(
                "must hold one share per bucket ({}), each of 1 to object_count ({}) keys; got {}",
                request.buckets.len(),
                request.object_count,
                c.listed_shares.len()
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Plan;
    use serde_json::json;

    fn problems_of(v: Value) -> Vec<String> {
        let mut problems = Vec::new();
        let p = typed_prices(v, &mut problems);
        check_prices(&p, None, &mut problems);
        problems.into_iter().map(|p| p.field).collect()
    }

    #[test]
    fn clients_are_a_closed_set_named_when_wrong() {
        let plan = Plan::from_value(json!({"buckets": ["b-1"]})).unwrap();
        assert_eq!(plan.clients(), [crate::model::Client::Sdk], "default: the SDK alone");
        let both =
            Plan::from_value(json!({"buckets": ["b-1"], "clients": ["sdk", "lean"], "workers": [1, 2]})).unwrap();
        assert_eq!(both.clients().len(), 2);
        assert_eq!(both.configurations(), 4, "each client runs every configuration");
        let err = Plan::from_value(json!({"buckets": ["b-1"], "clients": ["sdk", "boto3"]})).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("clients") && text.contains("\"lean\""), "{text}");
        let err = Plan::from_value(json!({"buckets": ["b-1"], "clients": []})).unwrap_err();
        assert!(err.to_string().contains("`clients`: must list at least one"), "{err}");
        let err = Plan::from_value(json!({"buckets": ["b-1"], "clients": ["lean", "lean"]})).unwrap_err();
        assert!(err.to_string().contains("clients[1]"), "{err}");
        // Echoed only when not the default, so older results' requests stay as they were.
        let echoed = serde_json::to_value(plan.request()).unwrap();
        assert!(echoed.get("clients").is_none(), "{echoed}");
        assert_eq!(
            serde_json::to_value(both.request()).unwrap()["clients"],
            json!(["sdk", "lean"])
        );
    }

    #[test]
    fn every_bad_price_is_named() {
        let fields = problems_of(serde_json::json!({
            "s3_standard_get_per_1000_usd": -1,
            "s3_express_get_per_1000_usd": "cheap",
            "lambda_x86_64_gb_s_usd": 5,
            "lambda_memory_mb": 64,
            "lambda_architecture": "sparc",
            "express_buckets": ["Not_A_Bucket"],
            "colour": 1
        }));
        for f in [
            "prices.s3_standard_get_per_1000_usd",
            "prices.s3_express_get_per_1000_usd",
            "prices.lambda_x86_64_gb_s_usd",
            "prices.lambda_memory_mb",
            "prices.lambda_architecture",
            "prices.express_buckets[0]",
            "prices.colour",
        ] {
            assert!(fields.iter().any(|x| x == f), "{f} missing from {fields:?}");
        }
        assert!(problems_of(serde_json::json!({})).is_empty());
        assert_eq!(problems_of(serde_json::json!(3)), vec!["prices"]);
    }

    #[test]
    fn fanout_fields_are_validated_with_every_bad_one_named() {
        let err = Plan::from_value(json!({
            "buckets": ["b-1"],
            "object_count": 2,
            "from_coordinator": {"role": "child", "key_range": {"start": 5, "end": 1}},
            "fanout": {"invocations": 3, "start_delay_ms": 999999, "colour": 1},
        }))
        .unwrap_err();
        let fields = err.fields();
        for f in [
            "fanout.colour",
            "fanout",
            "fanout.invocations",
            "fanout.start_delay_ms",
            "from_coordinator.key_range",
        ] {
            assert!(fields.contains(&f), "{f} missing from {err}");
        }
        assert!(err.to_string().contains("never fans out again"), "{err}");
        let err = Plan::from_value(json!({
            "buckets": ["b-1"], "from_coordinator": {"role": "boss", "start_unix_ms": "soon"}, "fanout": {"split": "halves"}
        }))
        .unwrap_err();
        let fields = err.fields();
        for f in [
            "from_coordinator.role",
            "fanout.invocations",
            "fanout.split",
            "from_coordinator.start_unix_ms",
        ] {
            assert!(fields.contains(&f), "{f} missing from {err}");
        }
        let err = Plan::from_value(json!({"buckets": ["b-1"], "fanout": {"invocations": 0}})).unwrap_err();
        assert_eq!(err.fields(), vec!["fanout.invocations"]);
        let err = Plan::from_value(json!({"buckets": ["b-1"], "fanout": 3})).unwrap_err();
        assert_eq!(err.fields(), vec!["fanout"]);
        let far = now_unix_ms() + MAX_START_AHEAD_MS + 60_000;
        let err = Plan::from_value(json!({
            "buckets": ["b-1"], "from_coordinator": {"role": "child", "start_unix_ms": far}
        }))
        .unwrap_err();
        assert_eq!(err.fields(), vec!["from_coordinator.start_unix_ms"]);
        let err = Plan::from_value(json!({
            "buckets": ["b-1"], "fanout": {"invocations": 2}, "from_coordinator": {"key_range": {"start": 0, "end": 5}}
        }))
        .unwrap_err();
        assert_eq!(err.fields(), vec!["from_coordinator.key_range"]);
        let err = Plan::from_value(json!({"buckets": ["b-1"], "from_coordinator": [1]})).unwrap_err();
        assert_eq!(err.fields(), vec!["from_coordinator"]);
        // Defaults, and a child with its shard.
        let p = Plan::from_value(json!({"buckets": ["b-1"], "fanout": {"invocations": 2}})).unwrap();
        assert_eq!(p.fanout().unwrap().start_delay_ms, DEFAULT_START_DELAY_MS);
        assert_eq!(p.fanout().unwrap().split, Split::Shard);
        let p = Plan::from_value(json!({
            "buckets": ["b-1"], "object_count": 100,
            "from_coordinator": {"role": "child", "key_range": {"start": 10, "end": 20}}
        }))
        .unwrap();
        assert_eq!(p.key_range(), 10..20);
        assert_eq!(p.role(), Role::Child);
        assert_eq!(p.total_requests(), 9 * 10);
        // A plain request echoes no envelope.
        let plain = Plan::from_value(json!({"buckets": ["b-1"]})).unwrap();
        let echoed = serde_json::to_value(plain.request()).unwrap();
        assert!(echoed.get(FROM_COORDINATOR_FIELD).is_none(), "{echoed}");
    }

    #[test]
    fn the_child_fields_are_not_request_fields() {
        // A user's event cannot set them at the top level, and the error does not
        // list them (nor the envelope) among the known fields.
        for f in [
            "role",
            "key_range",
            "start_unix_ms",
            "finish_by_unix_ms",
            "config_slot_ms",
        ] {
            let err = Plan::from_value(json!({"buckets": ["b-1"], f: json!(1)})).unwrap_err();
            assert_eq!(err.fields(), vec![f], "{err}");
            let message = &err.problems[0].message;
            assert!(message.starts_with("unknown field"), "{message}");
            for hidden in FROM_COORDINATOR_FIELDS.iter().chain([&FROM_COORDINATOR_FIELD]) {
                assert!(
                    !message.split(['(', ',', ' ']).any(|w| w == *hidden),
                    "{hidden} shown to users: {message}"
                );
            }
        }
    }
}

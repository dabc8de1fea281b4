//! The plan's own tests: requests validated into plans, and every bad field named.
use super::*;
use serde_json::json;
use std::time::Duration;

#[test]
fn defaults_are_the_seed_experiment() {
    let plan = Plan::from_json(r#"{"buckets": ["my-bucket"]}"#).unwrap();
    assert_eq!(plan.object_count(), 1000);
    assert_eq!(plan.workers(), &[1, 2, 4, 8, 16, 17, 18, 19, 20]);
    assert_eq!(plan.pool_connections(), 20);
    assert_eq!(plan.repetitions(), 1);
    assert!(plan.warmup());
    assert!(plan.shuffle());
    assert_eq!(plan.max_attempts(), 1);
    assert_eq!(plan.keys().key(7), "test/7/vectors");
    assert_eq!(plan.connect_timeout(), Duration::from_secs(3));
    assert_eq!(plan.total_requests(), 9000);
}

#[test]
fn every_bad_field_is_reported_at_once() {
    let err = Plan::from_value(json!({
        "buckets": ["Bad_Bucket", "ok-bucket", "ok-bucket"],
        "key_template": "no-placeholder",
        "object_count": 0,
        "workers": [0, 8, 8, 5000],
        "pool_connections": 0,
        "repetitions": 0,
        "max_attempts": 0,
        "timeouts_ms": {"connect": 0}
    }))
    .unwrap_err();
    let fields = err.fields();
    for f in [
        "buckets[0]",
        "buckets[2]",
        "key_template",
        "object_count",
        "workers[0]",
        "workers[2]",
        "workers[3]",
        "pool_connections",
        "repetitions",
        "max_attempts",
        "timeouts_ms.connect",
    ] {
        assert!(fields.contains(&f), "{f} missing from {err}");
    }
}

#[test]
fn wrong_types_and_unknown_fields_are_all_named() {
    let err = Plan::from_value(json!({
        "buckets": "just-one",
        "object_count": -5,
        "workers": ["four"],
        "warmup": "yes",
        "colour": "blue",
        "timeouts_ms": {"connect": 1.5, "nap": 3}
    }))
    .unwrap_err();
    let fields = err.fields();
    for f in [
        "buckets",
        "object_count",
        "workers",
        "warmup",
        "colour",
        "timeouts_ms.connect",
        "timeouts_ms.nap",
    ] {
        assert!(fields.contains(&f), "{f} missing from {err}");
    }
    let text = err.to_string();
    assert!(text.contains("-5"), "{text}");
}

#[test]
fn missing_buckets_and_non_objects_are_clear() {
    let err = Plan::from_json("{}").unwrap_err();
    assert_eq!(err.fields(), vec!["buckets"]);
    assert!(err.to_string().contains("required"));
    let err = Plan::from_json("[1,2]").unwrap_err();
    assert!(err.to_string().contains("must be a JSON object"));
    let err = Plan::from_json("{\"buckets\": [").unwrap_err();
    assert!(err.to_string().contains("not valid JSON"));
    let err = Plan::from_json(r#"{"buckets": []}"#).unwrap_err();
    assert!(err.to_string().contains("at least one bucket"));
}

#[test]
fn total_request_limit() {
    let err = Plan::from_value(json!({
        "buckets": ["a-bucket", "b-bucket"],
        "object_count": 1_000_000,
        "workers": [1, 2, 4, 8, 16, 32],
    }))
    .unwrap_err();
    assert!(err.to_string().contains("12000000 requests"), "{err}");
}

#[test]
fn huge_strings_are_not_echoed() {
    let long = "x".repeat(10 * 1024 * 1024);
    let err = Plan::from_value(json!({"buckets": [long.clone()], "key_template": long})).unwrap_err();
    let text = err.to_string();
    assert!(text.len() < 2000, "error is {} bytes", text.len());
    assert_eq!(err.fields(), vec!["buckets[0]", "key_template"]);
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let err = Plan::from_json(&format!("{{\"buckets\": {deep}}}")).unwrap_err();
    assert!(err.to_string().contains("not valid JSON"), "{err}");
}

#[test]
fn key_templates() {
    let t = KeyTemplate::parse("a/{i}/b/{i}", 10).unwrap();
    assert_eq!(t.key(3), "a/3/b/3");
    assert_eq!(t.as_template(), "a/{i}/b/{i}");
    assert!(KeyTemplate::parse("x".repeat(1030).as_str(), 1).is_err());
    assert!(KeyTemplate::parse(&format!("{}{{i}}", "x".repeat(1020)), 99_999).is_err());
    assert!(KeyTemplate::parse("a\n{i}", 1).is_err());
}

#[test]
fn bucket_names() {
    assert!(check_bucket_name("standard-like").is_ok());
    assert!(check_bucket_name("my-bucket--use1-az4--x-s3").is_ok());
    assert!(is_directory_bucket("my-bucket--use1-az4--x-s3"));
    assert!(check_bucket_name("ab").is_err());
    assert!(check_bucket_name("-abc").is_err());
    assert!(check_bucket_name("ABC").is_err());
    assert!(check_bucket_name("a..b").is_err());
}

#[test]
fn prices_and_target_are_validated_with_the_rest() {
    let err = Plan::from_value(json!({
        "buckets": ["ok-bucket"],
        "workers": [0],
        "prices": {"s3_standard_get_per_1000_usd": -0.1, "lambda_memory_mb": 99999, "lambda_arm64_gb_s_usd": "x"},
        "target_wall_ms": 0
    }))
    .unwrap_err();
    let fields = err.fields();
    for f in [
        "workers[0]",
        "prices.s3_standard_get_per_1000_usd",
        "prices.lambda_memory_mb",
        "prices.lambda_arm64_gb_s_usd",
        "target_wall_ms",
    ] {
        assert!(fields.contains(&f), "{f} missing from {err}");
    }
    let plan = Plan::from_json(
        r#"{"buckets": ["b-1"], "prices": {"s3_express_get_per_1000_usd": 0.0001}, "target_wall_ms": 2500}"#,
    )
    .unwrap();
    assert_eq!(plan.request().prices.s3_express_get_per_1000_usd, 0.0001);
    assert_eq!(plan.request().prices.s3_standard_get_per_1000_usd, 0.0004);
    assert_eq!(plan.request().target_wall_ms, Some(2500));
    let echoed = serde_json::to_value(plan.request()).unwrap();
    assert_eq!(echoed["prices"]["lambda_memory_mb"], 10240);
}

#[test]
fn memory_sizes_are_checked_each_by_name() {
    let err = Plan::from_value(json!({
        "buckets": ["ok-bucket"],
        "memory_mb": [512, 64, 512, 20000, "big"],
        "workers": [0]
    }))
    .unwrap_err();
    assert_eq!(err.fields(), vec!["memory_mb", "workers[0]"], "{err}");
    let err = Plan::from_value(json!({"buckets": ["ok-bucket"], "memory_mb": [512, 64, 512, 20000], "workers": [0]}))
        .unwrap_err();
    assert_eq!(
        err.fields(),
        vec!["workers[0]", "memory_mb[1]", "memory_mb[2]", "memory_mb[3]"],
        "{err}"
    );
    assert!(err.to_string().contains("between 128 and 10240"), "{err}");
    let err = Plan::from_value(json!({"buckets": ["b-1"], "from_coordinator": {"role": "child"}, "memory_mb": [512]}))
        .unwrap_err();
    assert_eq!(err.fields(), vec!["memory_mb"]);
    let err =
        Plan::from_value(json!({"buckets": ["b-1"], "memory_mb": (1..=11).map(|i| 128 * i).collect::<Vec<u32>>()}))
            .unwrap_err();
    assert_eq!(err.fields(), vec!["memory_mb"]);
    // Every size runs the whole sweep: the request limit counts them.
    let err = Plan::from_value(json!({
        "buckets": ["b-1"], "object_count": 1_000_000, "workers": [1, 2, 4, 8], "memory_mb": [512, 1024, 2048]
    }))
    .unwrap_err();
    assert!(err.to_string().contains("x 3 memory sizes"), "{err}");
    // Each axis is named only when it has more than one value: hedging alone does not
    // bring in "x 0 object sizes".
    let err = Plan::from_value(json!({
        "buckets": ["b-1"], "workers": [1, 2, 4, 8, 16, 32], "repetitions": 100, "hedge": ["off", "p95"]
    }))
    .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("100 repetitions x 2 hedge policies)"), "{text}");
    assert!(!text.contains("object sizes"), "{text}");
    let plan =
        Plan::from_value(json!({"buckets": ["b-1"], "memory_mb": [512, 1769], "fanout": {"invocations": 2}})).unwrap();
    assert_eq!(plan.memory_mb(), &[512, 1769]);
    assert_eq!(
        serde_json::to_value(plan.request()).unwrap()["memory_mb"],
        json!([512, 1769])
    );
    let plain = Plan::from_value(json!({"buckets": ["b-1"]})).unwrap();
    assert!(serde_json::to_value(plain.request())
        .unwrap()
        .get("memory_mb")
        .is_none());
}

#[test]
fn request_round_trips() {
    let plan = Plan::from_json(r#"{"buckets": ["b-1"], "workers": [3], "timeouts_ms": {"attempt": 5}}"#).unwrap();
    let text = serde_json::to_string(plan.request()).unwrap();
    let again = Plan::from_json(&text).unwrap();
    assert_eq!(plan, again);
    assert_eq!(again.attempt_timeout(), Duration::from_millis(5));
    assert_eq!(again.first_byte_timeout(), Duration::from_secs(10));
}

#[test]
fn a_plan_holds_the_values_validation_made() {
    let plan = Plan::from_value(json!({
        "buckets": ["b-1", "b-2"], "workers": [1, 8], "repetitions": 3, "object_count": 50,
        "timeouts_ms": {"connect": 250}, "pool_idle_timeout_ms": 900,
        "results_uri": "s3://my-results/runs/", "requests_log_uri": "s3://my-logs",
        "hedge": ["off", "p95"], "run_id": "r-1", "metrics_namespace": "s3sweep/canary",
        "from_coordinator": {"role": "child", "key_range": {"start": 10, "end": 30},
                             "start_unix_ms": 1000, "config_slot_ms": 40}
    }))
    .unwrap();
    // Durations, not milliseconds to convert; destinations parsed, not text.
    assert_eq!(plan.connect_timeout(), Duration::from_millis(250));
    assert_eq!(plan.pool_idle_timeout(), Duration::from_millis(900));
    assert_eq!(plan.config_slot(), Some(Duration::from_millis(40)));
    let results = plan.results_uri().unwrap();
    assert_eq!(
        (results.bucket.as_str(), results.prefix.as_str()),
        ("my-results", "runs")
    );
    assert_eq!(plan.requests_log_uri().unwrap().prefix, "");
    // Defaults resolved once: the order for 3 repetitions, the probe's key.
    assert_eq!(plan.order(), crate::model::Order::default_for(3));
    assert_eq!(plan.probe_key(), crate::model::request::DEFAULT_PROBE_KEY);
    // The envelope taken apart, the configurations counted.
    assert_eq!(
        (plan.role(), plan.key_range(), plan.start_unix_ms()),
        (crate::model::request::Role::Child, 10..30, Some(1000))
    );
    assert!(plan.from_coordinator());
    assert_eq!(
        (plan.run_id(), plan.metrics_namespace()),
        (Some("r-1"), Some("s3sweep/canary"))
    );
    assert!(!Plan::from_value(json!({"buckets": ["b-1"]}))
        .unwrap()
        .from_coordinator());
    assert_eq!(plan.configurations(), 2 * 2 * 3 * 2);
    assert_eq!(plan.total_requests(), 2 * 2 * 3 * 2 * 20);
}

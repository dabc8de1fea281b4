//! `s3sweep preflight`: the buckets an event names, looked at before a deploy (or an
//! invoke), with the same reads the function makes: each bucket exists (HeadBucket),
//! is in the stack's region (the `x-amz-bucket-region` S3 answers with), holds the
//! objects the event reads (a HeadObject of its first and last key, or a one-key
//! listing of its `key_prefix`), and a directory bucket's zone is one of the
//! function's subnets' zones when they are given; the subnets and their VPC's
//! endpoints through EC2 (`--subnet-ids`, src/cli/preflight_vpc.rs); and the results
//! destination (`--results-uri`, src/cli/preflight_results.rs). Each problem is one line saying
//! what is wrong and what to do; any problem makes the command fail.

use std::time::Duration;

use aws_sdk_s3::error::SdkError;

use super::args::PreflightArgs;
use super::preflight_bucket::{head_bucket, BucketState};
use super::CliError;
use crate::s3::RequestSettings;

/// What to look at in one bucket.
#[derive(Debug, Clone, PartialEq)]
struct Wanted {
    bucket: String,
    /// Keys that must exist (an event's first and last key).
    keys: Vec<String>,
    /// A prefix that must list at least one key (an event's `key_prefix`).
    prefix: Option<String>,
    /// Where the bucket was named (an event file, or `--bucket`).
    source: String,
}

/// Why an event file names no bucket preflight can look at; `event` is its path.
#[derive(Debug, thiserror::Error)]
enum EventProblem {
    #[error("--event {event}: {reason}")]
    Unreadable {
        event: String,
        reason: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("{event}: buckets: a list of bucket names is required")]
    NoBuckets { event: String },
    #[error("{event}: key_prefix: {reason}")]
    KeyPrefix {
        event: String,
        reason: crate::plan::names::NameError,
    },
    #[error("{event}: key_template: {reason}")]
    KeyTemplate {
        event: String,
        reason: crate::plan::TemplateError,
    },
    #[error("{event}: buckets[{index}]: not a string")]
    NotAString { event: String, index: usize },
    #[error("{event}: buckets[{index}]: {reason}")]
    Bucket {
        event: String,
        index: usize,
        reason: crate::plan::BucketNameError,
    },
}

/// The buckets and objects of one event: `buckets`, and `key_template` (default
/// `test/{i}/vectors`) for `object_count` (default 1000) keys, or `key_prefix`.
fn wanted_of(source: &str, event: &serde_json::Value) -> Result<Vec<Wanted>, EventProblem> {
    let named = || source.to_string();
    let buckets = event["buckets"]
        .as_array()
        .filter(|b| !b.is_empty())
        .ok_or_else(|| EventProblem::NoBuckets { event: named() })?;
    let template = event["key_template"].as_str().unwrap_or("test/{i}/vectors");
    let count = event["object_count"]
        .as_u64()
        .unwrap_or(1000)
        .clamp(1, u64::from(u32::MAX));
    let prefix = event["key_prefix"].as_str().map(str::to_string);
    // The names checked as every command checks them (crate::plan::names), before
    // any is put in a request.
    let keys = match &prefix {
        Some(p) => {
            crate::plan::names::check_key_prefix(p)
                .map_err(|reason| EventProblem::KeyPrefix { event: named(), reason })?;
            vec![]
        }
        None => {
            let t = crate::plan::KeyTemplate::parse(template, (count - 1) as u32)
                .map_err(|reason| EventProblem::KeyTemplate { event: named(), reason })?;
            vec![t.key(0), t.key((count - 1) as u32)]
        }
    };
    buckets
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let bucket = b.as_str().ok_or_else(|| EventProblem::NotAString {
                event: named(),
                index: i,
            })?;
            crate::plan::check_bucket_name(bucket).map_err(|reason| EventProblem::Bucket {
                event: named(),
                index: i,
                reason,
            })?;
            let mut keys = keys.clone();
            keys.dedup();
            Ok(Wanted {
                bucket: bucket.to_string(),
                keys,
                prefix: prefix.clone(),
                source: source.to_string(),
            })
        })
        .collect()
}

/// Every bucket to look at, from the events and `--bucket`: a bucket once per distinct
/// set of keys (each event's first and last key, or its prefix) the events read.
fn wanted(args: &PreflightArgs) -> Result<Vec<Wanted>, CliError> {
    let mut all: Vec<Wanted> = Vec::new();
    let mut problems = Vec::new();
    for path in &args.events {
        let source = path.display().to_string();
        let limit = crate::plan::json::MAX_EVENT_BYTES as u64;
        let unreadable = |reason: Box<dyn std::error::Error + Send + Sync>| EventProblem::Unreadable {
            event: source.clone(),
            reason,
        };
        let parsed = crate::sys::files::read_capped_text(path, limit, "an event")
            .map_err(|e| unreadable(e.into()))
            .and_then(|text| serde_json::from_str(&text).map_err(|e| unreadable(e.into())))
            .and_then(|event| wanted_of(&source, &event));
        match parsed {
            Ok(found) => all.extend(found),
            Err(e) => problems.push(e.to_string()),
        }
    }
    all.extend(args.buckets.iter().map(|b| Wanted {
        bucket: b.clone(),
        keys: vec![],
        prefix: None,
        source: "--bucket".into(),
    }));
    if !problems.is_empty() {
        return Err(CliError::Usage(problems.join("; ")));
    }
    if all.is_empty() {
        return Err(CliError::Usage(
            "give at least one --event FILE or --bucket NAME".into(),
        ));
    }
    // Each event's objects are looked at (canary.json's 300 keys must not hide
    // seed.json's 1,000 in the same bucket); the same bucket, keys and prefix once.
    let mut seen = std::collections::BTreeSet::new();
    all.retain(|w| seen.insert((w.bucket.clone(), w.keys.clone(), w.prefix.clone())));
    Ok(all)
}

/// A directory bucket's zone id (`NAME--ZONE--x-s3`), none for a general purpose one.
fn zone_of(bucket: &str) -> Option<&str> {
    bucket.strip_suffix("--x-s3")?.rsplit_once("--").map(|(_, zone)| zone)
}

/// The zone problem of `bucket`, if the subnets' zones are known and it is not in one.
fn zone_problem(bucket: &str, subnet_zones: &[String]) -> Option<String> {
    let zone = zone_of(bucket)?;
    if subnet_zones.is_empty() || subnet_zones.iter().any(|z| z == zone) {
        return None;
    }
    Some(format!(
        "directory bucket {bucket} is in zone {zone}, the function's subnets in {}: deploy with a subnet in {zone} (SUBNET_IDS, SUBNET_ZONE_IDS; docs/deploy.md), or use a directory bucket in one of the subnets' zones",
        subnet_zones.join(",")
    ))
}

/// The problems of one bucket's objects: each key HEADed, the prefix listed once.
async fn object_problems(s3: &aws_sdk_s3::Client, w: &Wanted) -> Vec<String> {
    let seed = format!(
        "write them (make seed-aws, or `s3sweep seed --bucket {}` with the event's key template and count), or fix {}",
        w.bucket, w.source
    );
    let mut problems = Vec::new();
    for key in &w.keys {
        match s3.head_object().bucket(&w.bucket).key(key).send().await {
            Ok(_) => {}
            Err(SdkError::ServiceError(e)) if e.raw().status().as_u16() == 404 => {
                problems.push(format!(
                    "bucket {}: no object {key}, which {} reads: {seed}",
                    w.bucket, w.source
                ));
            }
            Err(e) => problems.push(format!(
                "bucket {}: HeadObject {key} failed ({}): check these credentials may read it",
                w.bucket,
                crate::s3::errors::chain(&e)
            )),
        }
    }
    if let Some(prefix) = &w.prefix {
        let listed = s3
            .list_objects_v2()
            .bucket(&w.bucket)
            .prefix(prefix)
            .max_keys(1)
            .send()
            .await;
        match listed {
            Ok(page) if page.key_count().unwrap_or(0) > 0 => {}
            Ok(_) => problems.push(format!(
                "bucket {}: no key under key_prefix {prefix:?}: {seed}",
                w.bucket
            )),
            Err(e) => problems.push(format!(
                "bucket {}: listing {prefix:?} failed ({}): check these credentials may list it",
                w.bucket,
                crate::s3::errors::chain(&e)
            )),
        }
    }
    problems
}

/// Every problem of one bucket, in the order they would stop the function.
async fn bucket_problems(s3: &aws_sdk_s3::Client, w: &Wanted, region: &str, zones: &[String]) -> Vec<String> {
    let b = &w.bucket;
    let mut problems: Vec<String> = zone_problem(b, zones).into_iter().collect();
    match head_bucket(s3, b, region).await {
        BucketState::In(found) if found != region => problems.push(format!(
            "bucket {b} is in {found}, not the stack's region {region}: deploy the stack in {found} (make deploy REGION={found}), or use a bucket in {region}"
        )),
        BucketState::In(_) => problems.extend(object_problems(s3, w).await),
        BucketState::Missing => problems.push(format!(
            "bucket {b} does not exist (HeadBucket: 404), named by {}: create it in {region} (docs/deploy.md), or fix the name",
            w.source
        )),
        BucketState::Refused => problems.push(format!(
            "bucket {b}: HeadBucket refused (403): it belongs to another account, or these credentials may not read it"
        )),
        BucketState::Failed(why) => problems.push(format!("bucket {b}: could not be looked at: {why}")),
    }
    problems
}

/// `s3sweep preflight`: prints one line per bucket (`ok`) or per problem (`PROBLEM`,
/// with its fix); fails when there is any problem.
pub(crate) async fn preflight(args: PreflightArgs) -> Result<(), CliError> {
    let wanted = wanted(&args)?;
    let client = args.target.client(&wanted[0].bucket).await?;
    let region = args
        .target
        .region
        .clone()
        .unwrap_or_else(|| client.region().to_string());
    let s3 = client.reader(RequestSettings::maintenance(Duration::from_secs(10)));
    let mut count = 0;
    let mut zoned = std::collections::BTreeSet::new();
    for w in &wanted {
        // A bucket named by several events: its zone is looked at once.
        let zones: &[String] = if zoned.insert(w.bucket.clone()) {
            &args.subnet_zone_ids
        } else {
            &[]
        };
        let problems = bucket_problems(&s3, w, &region, zones).await;
        if problems.is_empty() {
            let held = if w.keys.is_empty() {
                String::new()
            } else {
                format!(", holds {}", w.keys.join(" and "))
            };
            let line = format!("preflight: ok: bucket {} is in {region}{held}", w.bucket);
            println!("{}", super::shown(&line));
        }
        for p in &problems {
            // A suggested command repeats the target flags given.
            let p = CliError::Message(p.clone()).in_user_terms(&args.target.flags()).line();
            println!("preflight: PROBLEM: {p}");
        }
        count += problems.len();
    }
    if !args.subnet_ids.is_empty() {
        let directory_zones: Vec<(String, String)> = wanted
            .iter()
            .filter_map(|w| zone_of(&w.bucket).map(|z| (w.bucket.clone(), z.to_string())))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let ec2 = super::preflight_vpc::ec2_client(&region).await;
        let (ok, problems, warnings) =
            super::preflight_vpc::vpc_lines(&ec2, &args.subnet_ids, &directory_zones, &region).await;
        for line in ok {
            println!("preflight: ok: {line}");
        }
        for w in warnings {
            println!("preflight: WARNING: {w}");
        }
        for p in &problems {
            println!("preflight: PROBLEM: {p}");
        }
        count += problems.len();
    }
    if let Some(uri) = &args.results_uri {
        match super::preflight_results::results_line(&s3, uri, &region).await {
            Ok(line) => println!("preflight: ok: {line}"),
            Err(p) => {
                println!("preflight: PROBLEM: {p}");
                count += 1;
            }
        }
    }
    if count > 0 {
        return Err(CliError::Preflight { count });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_names_its_first_and_last_key_or_its_prefix() {
        let event = serde_json::json!({"buckets": ["a-1", "b--use1-az4--x-s3"], "object_count": 10});
        let found = wanted_of("e.json", &event).unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(found[1].keys, vec!["test/0/vectors", "test/9/vectors"]);
        let event = serde_json::json!({"buckets": ["a-1"], "key_prefix": "p/"});
        let found = wanted_of("e.json", &event).unwrap();
        assert_eq!((found[0].keys.len(), found[0].prefix.as_deref()), (0, Some("p/")));
        assert!(wanted_of("e.json", &serde_json::json!({"workers": [1]})).is_err());
    }

    #[test]
    fn a_directory_bucket_outside_the_subnets_zones_is_a_problem() {
        assert_eq!(zone_of("b--use1-az4--x-s3"), Some("use1-az4"));
        assert_eq!(zone_of("plain-bucket"), None);
        let zones = vec!["use1-az6".to_string()];
        let p = zone_problem("b--use1-az4--x-s3", &zones).unwrap();
        assert!(
            p.contains("is in zone use1-az4, the function's subnets in use1-az6"),
            "{p}"
        );
        assert!(zone_problem("b--use1-az6--x-s3", &zones).is_none());
        assert!(zone_problem("b--use1-az4--x-s3", &[]).is_none());
        assert!(zone_problem("plain-bucket", &zones).is_none());
    }
}

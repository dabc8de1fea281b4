//! Tests of [`super`]: every flag that sets a request field serializes to exactly that
//! field (the clap id, the field's Rust name), takes a value the request takes back
//! unchanged, and is the flag errors name for it; `run` and `local` have them all.

use clap::FromArgMatches;
use serde_json::Value;

use super::*;
use crate::model::SweepRequest;
use crate::plan::REQUEST_FIELDS;

/// A command line value for each flag that sets a request field: a flag missing here
/// fails the test, so a new one is checked too.
const SAMPLES: &[(&str, &[&str])] = &[
    ("--objects", &["30"]),
    ("--workers", &["1,8"]),
    ("--pool", &["4"]),
    ("--repetitions", &["2"]),
    ("--prefix", &["p/"]),
    ("--object-sizes", &["4096,8192"]),
    ("--target-wall-ms", &["200"]),
    ("--clients", &["sdk,lean"]),
    ("--probe-bandwidth", &[]),
    ("--order", &["interleaved"]),
    ("--pool-idle-timeout-ms", &["9000"]),
    ("--hedge", &["off,p95,40ms"]),
    ("--max-hedge-percent", &["7"]),
    ("--bucket", &["my-bucket"]),
    ("--key-template", &["k/{i}"]),
    ("--allow-fewer", &[]),
    ("--results-uri", &["s3://my-bucket/results"]),
    ("--run-id", &["r-1"]),
    ("--lambda-memory-mb", &["512,1769"]),
];

/// The flags of these structs that set no request field, with a value.
const NOT_FIELDS: &[(&str, &str)] = &[("--bandwidth-mib-s", "100"), ("--cpu-quota", "1.5")];

/// The request fields one command line of field flags sets.
fn fields_of(line: &[&str]) -> Map<String, Value> {
    let matches = field_flags().no_binary_name(true).try_get_matches_from(line).unwrap();
    let sweep = SweepArgs::from_arg_matches(&matches).unwrap();
    let run = RunFieldArgs::from_arg_matches(&matches).unwrap();
    let quota = QuotaArgs::from_arg_matches(&matches).unwrap();
    let mut fields = request_fields(&sweep);
    fields.extend(request_fields(&run));
    fields.extend(request_fields(&quota));
    fields
}

/// Each flag alone sets exactly its own request field (named by the flag's clap id),
/// whose value a request takes and writes back unchanged, and errors name that
/// field by that flag.
#[test]
fn each_flag_sets_its_own_request_field_and_nothing_else() {
    let cmd = field_flags();
    let default = serde_json::to_value(SweepRequest::new(vec!["b".into()])).unwrap();
    for arg in cmd.get_arguments() {
        let (id, flag) = (arg.get_id().as_str(), format!("--{}", arg.get_long().unwrap()));
        if let Some((_, value)) = NOT_FIELDS.iter().find(|(f, _)| *f == flag) {
            assert!(fields_of(&[&flag, value]).is_empty(), "{flag} sets a request field");
            continue;
        }
        let (_, sample) = SAMPLES
            .iter()
            .find(|(f, _)| *f == flag)
            .unwrap_or_else(|| panic!("{flag} (`{id}`): no sample value in SAMPLES"));
        let line: Vec<&str> = std::iter::once(flag.as_str()).chain(sample.iter().copied()).collect();
        let fields = fields_of(&line);
        let keys: Vec<&String> = fields.keys().collect();
        assert_eq!(keys, [id], "{flag} (clap id `{id}`) sets these request fields");
        assert!(REQUEST_FIELDS.contains(&id), "{flag}: `{id}` is no request field");
        assert_eq!(
            flag_of(id).as_deref(),
            Some(flag.as_str()),
            "the flag errors name for `{id}`"
        );
        let mut value = default.clone();
        value.as_object_mut().unwrap().extend(fields.clone());
        let request: SweepRequest = serde_json::from_value(value)
            .unwrap_or_else(|e| panic!("{flag}: the request does not take {fields:?}: {e}"));
        let back = serde_json::to_value(request).unwrap();
        assert_eq!(back.get(id), fields.get(id), "{flag}: `{id}` written back");
    }
    for (flag, _) in SAMPLES {
        assert!(
            cmd.get_arguments().any(|a| a.get_long() == flag.strip_prefix("--")),
            "{flag}: a sample for no flag"
        );
    }
    assert!(fields_of(&[]).is_empty(), "no flag, no field");
}

/// `run` has every flag that sets a request field; `local` every one but `run`'s own.
#[test]
fn run_and_local_have_the_field_flags() {
    use clap::CommandFactory;
    let cli = crate::cli::Cli::command();
    let longs = |name: &str| -> Vec<String> {
        let sub = cli.find_subcommand(name).unwrap();
        sub.get_arguments()
            .filter_map(|a| a.get_long())
            .map(str::to_string)
            .collect()
    };
    let (run, local) = (longs("run"), longs("local"));
    let run_only: Vec<String> = RunFieldArgs::augment_args(Command::new("x"))
        .get_arguments()
        .filter_map(|a| a.get_long())
        .map(str::to_string)
        .collect();
    for arg in field_flags().get_arguments() {
        let long = arg.get_long().unwrap().to_string();
        assert!(run.contains(&long), "--{long} is no flag of run");
        assert!(
            local.contains(&long) || run_only.contains(&long),
            "--{long} is no flag of local"
        );
    }
}

/// docs/usage.md's table of `run`'s flags has a row for every flag that sets a
/// request field, naming that field.
#[test]
fn the_usage_table_names_each_flag_with_its_field() {
    let usage = include_str!("../../docs/usage.md");
    let start = usage
        .find("### `run` from flags")
        .expect("usage.md has `run` from flags");
    let section = &usage[start..];
    let table = &section[..section[4..].find("\n#").map_or(section.len(), |end| end + 4)];
    for arg in field_flags().get_arguments() {
        let (id, long) = (arg.get_id().as_str(), arg.get_long().unwrap());
        if NOT_FIELDS.iter().any(|(f, _)| f.strip_prefix("--") == Some(long)) {
            continue;
        }
        let row = table
            .lines()
            .find(|l| l.starts_with(&format!("| `--{long}")))
            .unwrap_or_else(|| panic!("docs/usage.md: no row for --{long}"));
        assert!(
            row.contains(&format!("| `{id}` |")),
            "docs/usage.md: --{long}'s row names not `{id}`: {row}"
        );
    }
}

/// Every flag given is a request field of the same name with a flag in the
/// request's field table, and its value is the one the request takes.
#[test]
fn the_flags_serialize_to_the_request_fields_they_set() {
    let all = crate::cli::client_args::ClientNetworkArgs {
        clients: vec![
            crate::cli::client_args::ClientArg::Sdk,
            crate::cli::client_args::ClientArg::Lean,
        ],
        probe_bandwidth: true,
        bandwidth_mib_s: Some(100.0),
        order: Some(crate::cli::client_args::OrderArg::Interleaved),
        pool_idle_timeout_ms: Some(9000),
        hedge: vec![
            crate::model::Hedge::Off,
            crate::model::Hedge::Percentile(95),
            crate::model::Hedge::AfterMs(40),
        ],
        max_hedge_percent: Some(7),
    };
    let fields = request_fields(&all);
    for field in fields.keys() {
        assert!(flag_of(field).is_some(), "{field}: no flag in the field table");
    }
    let mut value = serde_json::to_value(SweepRequest::new(vec!["b".into()])).unwrap();
    value.as_object_mut().unwrap().extend(fields);
    let request: SweepRequest = serde_json::from_value(value).unwrap();
    assert_eq!(request.clients, [crate::model::Client::Sdk, crate::model::Client::Lean]);
    assert_eq!(request.order, Some(crate::model::Order::Interleaved));
    assert_eq!(request.hedge, all.hedge);
    assert!(request.probe_bandwidth);
    assert_eq!((request.pool_idle_timeout_ms, request.max_hedge_percent), (9000, 7));
    assert!(
        request_fields(&crate::cli::client_args::ClientNetworkArgs::default()).is_empty(),
        "no flag, no field"
    );
}

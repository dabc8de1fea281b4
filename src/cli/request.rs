//! The request `run` sweeps: built from its flags (`--bucket`, `--objects`,
//! `--workers`, `--pool`, `--repetitions`, `--key-template`, `--order`, `--clients`,
//! `--probe-bandwidth`, `--pool-idle-timeout-ms`), from an event file
//! (`--event`), or from both, the flags then replacing the file's fields (each flag
//! struct serialized to the fields it sets: [`super::sweep_args`]). The result
//! is the same JSON document the Lambda takes, validated by [`Plan`] like any event,
//! with every bad field named by the flag or the file it came from.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{Map, Value};

use crate::plan::json::{parse_event, EventJson, MAX_EVENT_BYTES};
use crate::plan::{Plan, RequestError};
use crate::sys::files::{read_capped_text, FileError};

use super::args::RunArgs;
use super::sweep_args::{self, SweepArgs};
use super::{CliError, Context};

/// The flag that sets `field` (`workers[2]` is `--workers`'s), read from clap
/// ([`sweep_args::flag_of`]).
fn flag_of(field: &str) -> Option<String> {
    sweep_args::flag_of(field.split(['[', '.']).next().unwrap_or(field))
}

/// A request error with every problem named by where it came from: the flag for
/// fields in `from_flags`, else the event file (`file: `workers[0]``), else the
/// field alone. When every problem is the file's, the file is named once.
pub(crate) fn name_sources(err: &RequestError, from_flags: &BTreeSet<String>, file: Option<&Path>) -> CliError {
    let flag_for = |field: &str| {
        let top = field.split(['[', '.']).next().unwrap_or(field);
        flag_of(field).filter(|_| from_flags.contains(top))
    };
    let n = err.problems.len();
    let head = format!("invalid request ({n} problem{})", if n == 1 { "" } else { "s" });
    let any_flag = err.problems.iter().any(|p| flag_for(&p.field).is_some());
    let parts: Vec<String> = err
        .problems
        .iter()
        .map(|p| match (flag_for(&p.field), file) {
            (Some(flag), _) if p.field.contains(['[', '.']) => format!("{flag} (`{}`): {}", p.field, p.message),
            (Some(flag), _) => format!("{flag}: {}", p.message),
            (None, Some(path)) if any_flag => format!("{}: `{}`: {}", path.display(), p.field, p.message),
            (None, _) => format!("`{}`: {}", p.field, p.message),
        })
        .collect();
    match file {
        Some(path) if !any_flag => CliError::Usage(format!("{}: {head}: {}", path.display(), parts.join("; "))),
        _ => CliError::Usage(format!("{head}: {}", parts.join("; "))),
    }
}

/// The plan of `run`: the event file's request (if any) with the flags' fields
/// over it. Without `--event`, `--bucket` is required and `--pool` defaults to the
/// largest `--workers` count (as for `local`), written into the request so a replay
/// is the same sweep.
pub(crate) fn run_plan(args: &RunArgs) -> Result<Plan, CliError> {
    let (map, duplicates) = event_map(args)?;
    let flags = [
        sweep_args::request_fields(&args.fields),
        sweep_args::request_fields(&args.sweep),
        sweep_args::request_fields(&args.quota),
    ];
    let (map, from_flags) = with_flags(map, flags, &args.sweep);
    let event = EventJson {
        value: Value::Object(map),
        ..duplicates
    };
    Plan::from_event(event).map_err(|e| name_sources(&e, &from_flags, args.event.as_deref()))
}

/// `map` (a request's fields) with every field the `flags` set over it, and the pool
/// of `sweep`'s --workers where neither names one ([`SweepArgs::pool_default`]);
/// also the fields so set, for errors to name their flags.
pub(crate) fn with_flags(
    mut map: Map<String, Value>,
    flags: impl IntoIterator<Item = Map<String, Value>>,
    sweep: &SweepArgs,
) -> (Map<String, Value>, BTreeSet<String>) {
    let mut from_flags = BTreeSet::new();
    for (field, value) in flags.into_iter().flatten() {
        from_flags.insert(field.clone());
        map.insert(field, value);
    }
    for (field, value) in sweep_args::request_fields(&sweep.pool_default()) {
        if !map.contains_key(&field) {
            from_flags.insert(field.clone());
            map.insert(field, value);
        }
    }
    (map, from_flags)
}

/// The request `run` starts from: the event file's object (and its duplicate keys), or
/// an empty one when the flags name the buckets.
fn event_map(args: &RunArgs) -> Result<(Map<String, Value>, EventJson), CliError> {
    let Some(path) = &args.event else {
        if args.fields.buckets.is_empty() {
            return Err(CliError::Usage(
                "run: say what to read: --bucket NAME (repeatable, with --objects, --workers, ...), or --event FILE"
                    .into(),
            ));
        }
        return Ok((Map::new(), EventJson::from(Value::Null)));
    };
    let text = match read_capped_text(path, MAX_EVENT_BYTES as u64, "a request file") {
        // Too large is bad input, named like any other problem of the request.
        Err(FileError::TooLarge { cap_bytes, .. }) => {
            let err = RequestError::single(
                "(request)",
                format!("is larger than {cap_bytes} bytes, the most a request may be (Lambda's payload limit)"),
            );
            return Err(name_sources(&err, &BTreeSet::new(), Some(path)));
        }
        other => other,
    }
    .context(format!("reading {}", path.display()))
    .map_err(|e| e.advice("give a request JSON file (the Lambda's event format, docs/usage.md), or build the request with --bucket and the other flags"))?;
    let event = parse_event(&text).map_err(|err| name_sources(&err, &BTreeSet::new(), Some(path)))?;
    match event.value {
        Value::Object(ref map) => Ok((map.clone(), event)),
        // Not a JSON object: the plan says why, as for any event.
        _ => {
            let err = Plan::from_event(event)
                .err()
                .unwrap_or_else(|| RequestError::new(Vec::new()));
            Err(name_sources(&err, &BTreeSet::new(), Some(path)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use clap::Parser;

    fn args(line: &[&str]) -> RunArgs {
        let mut full = vec!["s3sweep", "run"];
        full.extend_from_slice(line);
        match Cli::try_parse_from(full).unwrap().command {
            crate::cli::Command::Run(a) => a,
            _ => unreachable!("a run command line"),
        }
    }

    #[test]
    fn flags_build_the_request_an_event_would() {
        let plan = run_plan(&args(&[
            "--bucket",
            "a-bucket",
            "--bucket",
            "b-bucket",
            "--objects",
            "30",
            "--workers",
            "1,8,64",
            "--repetitions",
            "2",
            "--key-template",
            "k/{i}",
        ]))
        .unwrap();
        let from_json = Plan::from_json(
            r#"{"buckets": ["a-bucket", "b-bucket"], "object_count": 30, "workers": [1, 8, 64],
                "pool_connections": 64, "repetitions": 2, "key_template": "k/{i}"}"#,
        )
        .unwrap();
        assert_eq!(plan, from_json);
        let plan = run_plan(&args(&["--bucket", "a-bucket", "--workers", "4", "--pool", "2"])).unwrap();
        assert_eq!(plan.pool_connections(), 2);
        let plan = run_plan(&args(&["--bucket", "a-bucket"])).unwrap();
        assert_eq!(plan.pool_connections(), 20, "the request's default without --workers");
    }

    #[test]
    fn every_bad_flag_is_named() {
        let err = run_plan(&args(&[
            "--bucket",
            "Bad_Name",
            "--objects",
            "0",
            "--workers",
            "0,8",
            "--repetitions",
            "0",
            "--key-template",
            "no-index",
        ]))
        .unwrap_err()
        .line();
        for needle in [
            "--bucket (`buckets[0]`)",
            "--objects:",
            "--workers (`workers[0]`)",
            "--repetitions:",
            "--key-template:",
        ] {
            assert!(err.contains(needle), "{needle} not in {err}");
        }
        let err = run_plan(&args(&[])).unwrap_err().line();
        assert!(err.contains("--bucket") && err.contains("--event"), "{err}");
    }

    #[test]
    fn flags_replace_the_fields_of_the_file_and_file_fields_are_named_by_the_file() {
        let path = std::env::temp_dir().join(format!("s3sweep-request-{}.json", std::process::id()));
        std::fs::write(
            &path,
            r#"{"buckets": ["file-bucket"], "workers": [0], "object_count": 7}"#,
        )
        .unwrap();
        let p = path.display().to_string();
        let plan = run_plan(&args(&["--event", &p, "--workers", "2,4"])).unwrap();
        assert_eq!(plan.buckets(), ["file-bucket".to_string()]);
        assert_eq!(plan.workers(), [2, 4]);
        assert_eq!(plan.object_count(), 7);
        assert_eq!(plan.pool_connections(), 4);
        let err = run_plan(&args(&["--event", &p, "--objects", "0"])).unwrap_err().line();
        assert!(err.contains(&format!("{p}: `workers[0]`")), "{err}");
        assert!(err.contains("--objects: must be"), "{err}");
        let err = run_plan(&args(&["--event", &p])).unwrap_err().line();
        assert!(
            err.starts_with(&format!("{p}: invalid request (1 problem): `workers[0]`")),
            "{err}"
        );
        std::fs::remove_file(path).unwrap();
    }
}

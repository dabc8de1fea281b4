//! Issue 33, defaults that deploy: plain `sam build --beta-features` builds the baseline
//! function on any local Python (its recipe, baseline/Makefile, asks pip for Lambda's
//! python3.12 wheels of the pinned boto3), `make deploy` builds the baseline only when it
//! is deployed (a stack deployed with the baseline keeps it, built) and passes Baseline
//! only when asked, and
//! `make compare-baseline` on a stack without the baseline says so. The Makefiles run
//! with `make -n`, or against a fake `aws` / `python` of the test's own.

use super::first_deploy::{calls, fake_aws, make, path_with, TempDir};
use super::*;

/// An executable `name` in `dir` that appends its arguments to `dir/calls.log`.
fn recorder(dir: &TempDir, name: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let file = dir.path().join(name);
    let script = format!("#!/bin/sh\necho \"{name} $*\" >> {}/calls.log\n", dir.path().display());
    fs::write(&file, script).unwrap();
    fs::set_permissions(&file, fs::Permissions::from_mode(0o755)).unwrap();
    file
}

/// Issue 33: `sam build` builds every function whatever its condition, and SAM's python
/// builder needs python3.12 on PATH: the baseline is built by baseline/Makefile
/// instead, which copies handler.py and has pip install the pinned requirements for
/// python3.12 (binary wheels only, Lambda's platform) into SAM's ARTIFACTS_DIR.
#[test]
fn the_baseline_builds_on_any_local_python() {
    let metadata = path(&template(), &["Resources", "BaselineFunction", "Metadata"]).body;
    assert_eq!(
        child(&metadata, "BuildMethod").map(|n| n.inline).as_deref(),
        Some("makefile"),
        "BaselineFunction is built by SAM's python builder (needs python3.12)"
    );
    let dir = TempDir::new();
    let python = recorder(&dir, "python");
    let artifacts = dir.path().join("artifacts");
    fs::create_dir_all(&artifacts).unwrap();
    let out = std::process::Command::new("make")
        .current_dir(root().join("baseline"))
        .args(["--no-print-directory", "build-BaselineFunction"])
        .arg(format!("ARTIFACTS_DIR={}", artifacts.display()))
        .arg(format!("PYTHON={}", python.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        fs::read_to_string(artifacts.join("handler.py")).unwrap(),
        read("baseline/handler.py"),
        "handler.py is in the artifact"
    );
    let pip = calls(&dir);
    for part in [
        "-m pip install",
        "--python-version 3.12",
        "--only-binary=:all:",
        "--platform manylinux2014_",
        &format!("--target {}", artifacts.display()),
        "-r requirements.txt",
    ] {
        assert!(pip.contains(part), "{part} not in: {pip}");
    }
    // The Makefile's own builds no longer name the Rust function alone.
    let mk = read("Makefile");
    assert!(!mk.contains("-- SweepFunction"), "sam build of one function only");
}

/// The lines of `make -n ARGS` that contain `needle`.
pub(super) fn dry_run_lines(args: &[&str], needle: &str) -> Vec<String> {
    let aws = fake_aws(&[]);
    // A recipe line continued with a backslash is one command.
    let out = make(&[&["-n"], args].concat(), &[path_with(&aws)]).replace("\\\n", " ");
    let found: Vec<String> = out.lines().filter(|l| l.contains(needle)).map(str::to_string).collect();
    assert!(!found.is_empty(), "no {needle} in make -n {args:?}:\n{out}");
    found
}

/// Issue 33: a plain `make deploy` on a stack deployed with BASELINE=enabled built only
/// the Rust function (and shipped handler.py without its pinned boto3). Now every
/// deploy builds both functions, and sends Baseline only when BASELINE is set, so SAM
/// keeps the stack's own value (UsePreviousValue) otherwise.
#[test]
fn make_deploy_builds_every_function_and_keeps_the_stacks_baseline() {
    let buckets = [
        "STANDARD_BUCKET=s-1",
        "EXPRESS_BUCKET=e-1--use1-az4--x-s3",
        "REGION=eu-west-1",
    ];
    for variant in [&[][..], &["BASELINE=enabled"][..], &["BASELINE=disabled"][..]] {
        let args = [&["deploy"][..], &buckets[..], variant].concat();
        // Issue 49: the baseline is built (its boto3 pip-installed) only when deployed:
        // BASELINE=enabled, or unset on a stack whose Baseline is enabled.
        for build in dry_run_lines(&args, "sam build") {
            match variant.first() {
                Some(&"BASELINE=enabled") => assert!(build.contains("baseline=enabled;"), "{build}"),
                Some(&"BASELINE=disabled") => assert!(build.contains("baseline=disabled;"), "{build}"),
                _ => assert!(build.contains("baseline=$(aws cloudformation describe-stacks --region eu-west-1 --stack-name s3sweep --query \"Stacks[0].Parameters[?ParameterKey=='Baseline'].ParameterValue\""), "{build}"),
            }
            assert!(
                build.contains("if [ \"$baseline\" = enabled ] || [ \"$managed\" = enabled ]; then ")
                    && build.contains("sam build --beta-features --parameter-overrides Architecture=arm64; else ")
                    && build.contains(
                        "sam build SweepFunction --beta-features --parameter-overrides Architecture=arm64; fi"
                    ),
                "{variant:?}: {build}"
            );
        }
        let deploy = dry_run_lines(&args, "sam deploy").join("\n");
        match variant.first() {
            None => assert!(!deploy.contains("Baseline="), "unset: the stack's own value: {deploy}"),
            Some(v) => assert!(deploy.contains(&v.replace("BASELINE", "Baseline")), "{deploy}"),
        }
    }
}

/// Issue 33: on a stack without the baseline, the stack has no BaselineFunctionName
/// output (the CLI prints nothing): compare-baseline said nothing and invoked a function
/// named `baseline.json`. It says so, and invokes nothing.
#[test]
fn compare_baseline_on_a_stack_without_the_baseline_says_so() {
    for answer in ["\n", "None\n"] {
        let aws = fake_aws(&[("describe-stacks", answer)]);
        let event = aws.path().join("event.json");
        fs::write(&event, "{\"buckets\": [\"b\"]}").unwrap();
        let out = make(
            &[
                "compare-baseline",
                &format!("EVENT={}", event.display()),
                "FUNCTION=s3sweep",
                "REGION=eu-west-1",
            ],
            &[path_with(&aws)],
        );
        assert!(
            out.contains("stack s3sweep has no baseline function") && out.contains("BASELINE=enabled"),
            "{answer:?}: {out}"
        );
        let log = calls(&aws);
        assert!(log.contains("describe-stacks"), "{log}");
        assert!(!log.contains("lambda invoke"), "{answer:?}: invoked: {log}");
    }
}

/// Issue 33: `make preflight` looks at the buckets too (s3sweep preflight, tested
/// against the lab in tests/it/preflight.rs) with the filled events, the region and
/// the subnets' zones, warning only.
#[test]
fn make_preflight_looks_at_the_buckets() {
    let args = [
        "preflight",
        "STANDARD_BUCKET=s-1",
        "EXPRESS_BUCKET=e-1--use1-az4--x-s3",
        "REGION=eu-west-1",
        "SUBNET_ZONE_IDS=use1-az4",
    ];
    let line = dry_run_lines(&args, " preflight --bucket").join("\n");
    assert!(
        line.contains("preflight --bucket s-1 --bucket e-1--use1-az4--x-s3")
            && line.contains("--region eu-west-1 --subnet-zone-ids use1-az4")
            && line.contains("|| echo \"preflight: WARNING"),
        "{line}"
    );
    let aws = fake_aws(&[]);
    let out = make(&["-n", "preflight"], &[path_with(&aws)]);
    assert!(!out.contains(" preflight --bucket"), "no buckets, no look: {out}");
}

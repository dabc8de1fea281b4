//! Issue 23, a first deploy that works in a new account, checked without one: the
//! memory sweep's permissions only with `MemorySweep=enabled`, the memory event within a
//! new account's limit and published only with the sweep, `make preflight`,
//! `make stack-retry` after ROLLBACK_COMPLETE, `make destroy`, `seed-aws` in REGION,
//! `invoke` without megabytes. The Makefile's AWS logic runs against a fake `aws` on
//! PATH that records its calls and answers canned text.

use super::*;

/// Issue 23: the role could always rewrite its own configuration. The memory sweep's
/// self-update and version statements are only in a policy under the condition
/// MemorySweepEnabled, which needs the parameter MemorySweep=enabled (default disabled).
#[test]
fn memory_sweep_permissions_only_when_the_parameter_enables_them() {
    let t = template();
    let param = path(&t, &["Parameters", "MemorySweep"]).body;
    assert_eq!(child(&param, "Default").unwrap().inline, "disabled", "{param}");
    assert_eq!(
        values(&child(&param, "AllowedValues").unwrap()),
        vec!["enabled", "disabled"]
    );
    assert_eq!(
        path(&t, &["Conditions", "MemorySweepEnabled"]).inline,
        "!Equals [!Ref MemorySweep, enabled]"
    );
    let always = actions_of(&statements_if(None));
    let sweep = actions_of(&statements_if(Some("MemorySweepEnabled")));
    for action in [
        "lambda:GetFunctionConfiguration",
        "lambda:UpdateFunctionConfiguration",
        "lambda:PublishVersion",
        "lambda:DeleteFunction",
    ] {
        assert!(
            !always.contains(&action.to_string()),
            "{action} is granted without the parameter: {always:?}"
        );
        assert!(
            sweep.contains(&action.to_string()),
            "{action} missing with MemorySweep=enabled: {sweep:?}"
        );
    }
    assert_eq!(
        always.iter().filter(|a| a.starts_with("lambda:")).collect::<Vec<_>>(),
        vec!["lambda:InvokeFunction"],
        "without the memory sweep the role may only invoke itself on Lambda"
    );
    // The Makefile passes the parameter, and docs/deploy.md lists every statement.
    assert!(read("Makefile").contains("$(call param,MemorySweep,$(MEMORY_SWEEP),disabled)"));
    let docs = read("docs/deploy.md");
    for sid in statements().iter().map(|s| child(s, "Sid").unwrap().inline) {
        assert!(docs.contains(&sid), "docs/deploy.md does not list the statement {sid}");
    }
    assert!(
        docs.contains("MEMORY_SWEEP=enabled"),
        "docs: how to enable the memory sweep"
    );
}

/// Issue 23: `make console-events` published the memory event to everyone's Test tab;
/// now only when the stack says MemorySweep is enabled (its output).
#[test]
fn the_memory_event_is_published_only_with_the_memory_sweep() {
    let outputs = path(&template(), &["Outputs", "MemorySweep"]).body;
    assert_eq!(child(&outputs, "Value").unwrap().inline, "!Ref MemorySweep");
    let (_, publish) = target("console-events");
    assert!(
        publish.contains(r#"if [ "$$name" = memory ] && [ "$$sweep" != enabled ]"#),
        "{publish}"
    );
    assert!(publish.contains("sweep=$(STACK_MEMORY_SWEEP)"), "{publish}");
}

/// Issue 23: events/memory.json asked for 3,538 and 5,307 MB, which a new account
/// refuses; docs/memory-sweep.md says how to ask for more.
#[test]
fn the_memory_event_fits_a_new_account() {
    let v: serde_json::Value = serde_json::from_str(&read("events/memory.json")).unwrap();
    let sizes: Vec<u64> = v["memory_mb"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_u64().unwrap())
        .collect();
    assert!(sizes.len() >= 2, "{sizes:?}");
    assert!(sizes.iter().all(|&m| (128..=3008).contains(&m)), "{sizes:?}");
    let docs = read("docs/memory-sweep.md");
    assert!(
        docs.contains("3,008 MB") && docs.contains("Service Quotas"),
        "docs/memory-sweep.md: how to ask for more memory"
    );
    assert!(
        read("docs/deploy.md").contains("events/filled/memory.json"),
        "docs/deploy.md documents the memory event"
    );
}

/// Issue 23: `make seed-aws` seeded through the profile's region, not REGION.
#[test]
fn seed_aws_honours_the_region() {
    let (_, seed) = target("seed-aws");
    let seeds: Vec<&str> = seed.lines().filter(|l| l.contains(" seed --bucket")).collect();
    assert_eq!(seeds.len(), 2, "{seed}");
    for line in seeds {
        assert!(line.contains("$(S3SWEEP_REGION)"), "{line}");
    }
    let mk = read("Makefile");
    assert!(mk.contains("S3SWEEP_REGION = $(if $(REGION),--region $(REGION))"));
    let dry = make(
        &[
            "-n",
            "seed-aws",
            "STANDARD_BUCKET=s-1",
            "EXPRESS_BUCKET=e--use1-az4--x-s3",
            "REGION=eu-west-1",
        ],
        &[],
    );
    assert_eq!(dry.matches("--region eu-west-1").count(), 2, "{dry}");
}

/// Issue 23: `make invoke` printed megabytes through json.tool; now its size, the
/// error when there is one, and how to read it with `s3sweep report`.
#[test]
fn invoke_prints_no_megabytes_and_points_at_the_report() {
    let (_, invoke) = target("invoke");
    assert!(!invoke.contains("json.tool"), "{invoke}");
    assert!(invoke.contains("s3sweep -- report $(RESULT)"), "{invoke}");
    assert!(invoke.contains("head -c 4000 $(RESULT)"), "{invoke}");
    assert!(
        read("docs/deploy.md").contains("s3sweep report"),
        "docs/deploy.md: s3sweep report"
    );
}

/// Issue 23: the zone command listed every zone; no API says which support directory
/// buckets, so the docs say where to look and how a wrong zone fails.
#[test]
fn the_zone_list_is_honest_about_directory_buckets() {
    let docs = read("docs/deploy.md");
    assert!(!docs.contains(r#"--query "AvailabilityZones[].[ZoneName,ZoneId]" --output table`."#));
    assert!(
        docs.contains("S3 Express One Zone Availability Zones and Regions"),
        "docs: where the supported zones are listed"
    );
}

// -- the Makefile's AWS logic against a fake `aws` on PATH --

/// A directory of its own under the temp dir, removed when dropped.
pub(super) struct TempDir(PathBuf);

impl TempDir {
    pub(super) fn new() -> TempDir {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("s3sweep-fake-aws-{}-{n}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub(super) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A temp dir with a fake `aws` that appends each call to calls.log and answers from
/// the files the test writes (`answer-<subcommand>`; none: exit 255 like an error).
pub(super) fn fake_aws(answers: &[(&str, &str)]) -> TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new();
    let script = format!(
        "#!/bin/sh\necho \"aws $*\" >> {log}\nf={dir}/answer-$2\nif [ -f \"$f\" ]; then cat \"$f\"; else exit 255; fi\n",
        log = dir.path().join("calls.log").display(),
        dir = dir.path().display()
    );
    let aws = dir.path().join("aws");
    fs::write(&aws, script).unwrap();
    fs::set_permissions(&aws, fs::Permissions::from_mode(0o755)).unwrap();
    for (sub, answer) in answers {
        fs::write(dir.path().join(format!("answer-{sub}")), answer).unwrap();
    }
    dir
}

pub(super) fn calls(dir: &TempDir) -> String {
    fs::read_to_string(dir.path().join("calls.log")).unwrap_or_default()
}

/// `make ARGS` in the repository with `fake` (if any) first on PATH; stdout and stderr.
pub(super) fn make(args: &[&str], env: &[(&str, String)]) -> String {
    let mut cmd = std::process::Command::new("make");
    cmd.current_dir(root()).arg("--no-print-directory").args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("make runs");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

pub(super) fn path_with(dir: &TempDir) -> (&'static str, String) {
    (
        "PATH",
        format!("{}:{}", dir.path().display(), std::env::var("PATH").unwrap()),
    )
}

/// Issue 23: the deploy says before deploying what the account will refuse.
#[test]
fn preflight_warns_about_what_the_account_refuses() {
    // A new account: 10 concurrent executions, 10 unreserved.
    let aws = fake_aws(&[("get-account-settings", "10\t10\n")]);
    let out = make(
        &[
            "preflight",
            "RESERVED_CONCURRENCY=5",
            "FANOUT_MAX=20",
            "MEMORY_MB=3538",
            "REGION=eu-west-1",
        ],
        &[path_with(&aws)],
    );
    assert!(out.contains("account concurrency limit 10, unreserved 10"), "{out}");
    assert!(out.contains("RESERVED_CONCURRENCY=5 would leave 5 unreserved"), "{out}");
    assert!(
        out.contains("FANOUT_MAX=20 needs 21 executions at once (a fan-out: N+1), more than the 5 available"),
        "{out}"
    );
    assert!(
        out.contains("MemorySize 3538 MB") && out.contains("MEMORY_MB=3008"),
        "{out}"
    );
    assert!(
        calls(&aws).contains("aws lambda get-account-settings --region eu-west-1 --query"),
        "{}",
        calls(&aws)
    );
    // What fits says nothing, the template's defaults included (issue 33: 3,008 MB).
    let out = make(&["preflight", "FANOUT_MAX=9", "MEMORY_MB=3008"], &[path_with(&aws)]);
    assert!(!out.contains("WARNING"), "{out}");
    let out = make(&["preflight"], &[path_with(&aws)]);
    assert!(!out.contains("WARNING"), "{out}");
    // Issue 33: a fan-out inside a memory sweep holds N+2 (the sweep's invocation waits
    // for each size's coordinator): 9 no longer fits 10.
    let out = make(&["preflight", "MEMORY_SWEEP=enabled"], &[path_with(&aws)]);
    assert!(
        out.contains("FANOUT_MAX=9 needs 11 executions at once (a fan-out inside a memory sweep: N+2), more than the 10 available: deploy with FANOUT_MAX=8"),
        "{out}"
    );
    let out = make(
        &["preflight", "MEMORY_SWEEP=enabled", "FANOUT_MAX=8"],
        &[path_with(&aws)],
    );
    assert!(!out.contains("WARNING"), "{out}");
    // Without an answer it says the limits were not checked, and does not fail.
    let none = fake_aws(&[]);
    let out = make(&["preflight"], &[path_with(&none)]);
    assert!(out.contains("the account's limits were not checked"), "{out}");
    let (deps, deploy) = target("deploy");
    assert!(deps.contains("tools"));
    assert!(deploy.contains("$(MAKE) --no-print-directory preflight"), "{deploy}");
}

/// Issue 23: a failed first create leaves ROLLBACK_COMPLETE, which SAM cannot update:
/// the stack is deleted, saying why and what to change; other states are left alone.
#[test]
fn a_stack_left_in_rollback_complete_is_deleted_for_the_retry() {
    let aws = fake_aws(&[
        ("describe-stacks", "ROLLBACK_COMPLETE\n"),
        (
            "describe-stack-events",
            "SweepFunction\t'MemorySize' value failed to satisfy constraint\n",
        ),
        ("delete-stack", ""),
        ("wait", ""),
    ]);
    let out = make(
        &["stack-retry", "STACK=s3sweep-t", "REGION=eu-west-1"],
        &[path_with(&aws)],
    );
    let log = calls(&aws);
    assert!(
        out.contains("ROLLBACK_COMPLETE") && out.contains("MEMORY_MB=3008"),
        "{out}"
    );
    assert!(out.contains("'MemorySize' value failed"), "the reason is shown: {out}");
    assert!(
        log.contains("aws cloudformation delete-stack --region eu-west-1 --stack-name s3sweep-t"),
        "{log}"
    );
    assert!(
        log.contains("aws cloudformation wait stack-delete-complete --region eu-west-1 --stack-name s3sweep-t"),
        "{log}"
    );
    for status in ["UPDATE_ROLLBACK_COMPLETE", "CREATE_COMPLETE"] {
        let aws = fake_aws(&[("describe-stacks", status), ("delete-stack", "")]);
        make(&["stack-retry"], &[path_with(&aws)]);
        assert!(!calls(&aws).contains("delete-stack"), "{status}: {}", calls(&aws));
    }
    // No stack at all: nothing deleted, no failure.
    let aws = fake_aws(&[]);
    let out = make(&["stack-retry"], &[path_with(&aws)]);
    assert!(!calls(&aws).contains("delete-stack") && !out.contains("Error"), "{out}");
    let (_, deploy) = target("deploy");
    assert!(
        deploy.contains("|| \\\n\t\t{ $(STACK_RETRY); exit 1; }"),
        "after a failed deploy: {deploy}"
    );
    // A failed deploy stays failed after the check, whatever the stack's state.
    assert!(!read("Makefile").contains("STACK_RETRY = status=$$(aws cloudformation describe-stacks $(REGION_FLAG) --stack-name $(STACK) --query 'Stacks[0].StackStatus' --output text 2>/dev/null) ||"));
    // make -n deploy prints, and calls neither aws nor sam (a $(MAKE) in the sam
    // deploy line would make -n run it).
    let fake = fake_aws(&[("describe-stacks", "ROLLBACK_COMPLETE")]);
    std::fs::copy(fake.path().join("aws"), fake.path().join("sam")).unwrap();
    let dry = make(
        &[
            "-n",
            "deploy",
            "STANDARD_BUCKET=s-1",
            "EXPRESS_BUCKET=e-1--use1-az4--x-s3",
        ],
        &[path_with(&fake)],
    );
    assert!(dry.contains("sam deploy --stack-name s3sweep"), "{dry}");
    assert_eq!(calls(&fake), "", "make -n deploy called aws or sam:\n{dry}");
}

/// Issue 23: `make destroy` removes what the deploy made, cleans the seeded keys from
/// the manifests, deletes the buckets only when asked and empty, and says what it left.
#[test]
fn destroy_removes_what_the_deploy_made_and_says_what_it_left() {
    let args = [
        "-n",
        "destroy",
        "STANDARD_BUCKET=s-1",
        "EXPRESS_BUCKET=e-1--use1-az4--x-s3",
        "REGION=eu-west-1",
    ];
    let dry = make(&args, &[]);
    assert!(
        dry.contains("aws cloudformation delete-stack --region eu-west-1 --stack-name s3sweep\n"),
        "{dry}"
    );
    assert!(
        dry.contains("aws cloudformation wait stack-delete-complete --region eu-west-1 --stack-name s3sweep\n"),
        "{dry}"
    );
    // Every event file the console gets (all of events/ but local.json), by name.
    let mut events: Vec<String> = std::fs::read_dir(root().join("events"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .filter(|name| name != "local")
        .collect();
    events.sort();
    assert!(events.len() >= 4, "{events:?}");
    assert!(
        dry.contains(&format!("for name in {}; do", events.join(" "))),
        "every test event: {dry}"
    );
    assert!(
        dry.contains("sam remote test-event delete SweepFunction --stack-name s3sweep --region eu-west-1 --name $name"),
        "{dry}"
    );
    assert!(dry.contains("for b in s-1 e-1--use1-az4--x-s3; do"), "{dry}");
    assert!(
        dry.contains("s3sweep -- clean --manifest $m --credentials chain --region eu-west-1"),
        "{dry}"
    );
    assert!(
        !dry.contains("delete-bucket --region eu-west-1 --bucket $b &&") || dry.contains("for b in ; do"),
        "{dry}"
    );
    assert!(
        dry.contains("make destroy DELETE_BUCKETS=yes") && dry.contains("aws-sam-cli-managed-default"),
        "{dry}"
    );
    deleting_buckets_deletes_only_empty_ones(&args);
    a_real_destroy_keeps_a_bucket_with_objects();
}

/// `make -n destroy ARGS DELETE_BUCKETS=yes`: both buckets cleaned and then deleted,
/// each only when empty.
fn deleting_buckets_deletes_only_empty_ones(args: &[&str]) {
    let mut asked = args.to_vec();
    asked.push("DELETE_BUCKETS=yes");
    let dry = make(&asked, &[]);
    let loop_line = dry
        .lines()
        .filter(|l| l.starts_with("for b in s-1 e-1--use1-az4--x-s3"))
        .count();
    assert_eq!(loop_line, 2, "clean and delete both buckets: {dry}");
    assert!(
        dry.contains("list-objects-v2 --region eu-west-1 --bucket $b --max-keys 1"),
        "{dry}"
    );
    assert!(
        dry.contains(r#"if [ "$n" = 0 ]; then aws s3api delete-bucket"#),
        "only an empty bucket: {dry}"
    );
}

/// `make destroy` for real against the fake aws: no manifests here, nothing cleaned;
/// a bucket holding objects is kept; docs/deploy.md explains the teardown.
fn a_real_destroy_keeps_a_bucket_with_objects() {
    let aws = fake_aws(&[("delete-stack", ""), ("wait", ""), ("list-objects-v2", "3\n")]);
    let out = make(
        &[
            "destroy",
            "STANDARD_BUCKET=s3sweep-test-none-1",
            "EXPRESS_BUCKET=",
            "DELETE_BUCKETS=yes",
            "VENV=/nonexistent",
        ],
        &[path_with(&aws)],
    );
    let log = calls(&aws);
    assert!(
        log.contains("aws cloudformation delete-stack --stack-name s3sweep"),
        "{log}"
    );
    assert!(
        !log.contains("delete-bucket"),
        "a bucket with objects is never deleted: {log}"
    );
    assert!(out.contains("bucket s3sweep-test-none-1 kept"), "{out}");
    assert!(out.contains("no s3sweep-manifest-s3sweep-test-none-1.json"), "{out}");
    assert!(
        read("docs/deploy.md").contains("make destroy"),
        "docs/deploy.md: teardown"
    );
}

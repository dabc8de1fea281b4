//! Issue 49, the second deploy: `make preflight` checks the results bucket
//! (`--results-uri`) when the deploy names one. The Makefile runs with `make -n`.

use super::defaults::dry_run_lines;

const BUCKETS: [&str; 2] = ["STANDARD_BUCKET=std-1", "EXPRESS_BUCKET=exp--use1-az4--x-s3"];

#[test]
fn preflight_checks_the_results_bucket_under_its_prefix() {
    let line = dry_run_lines(
        &[&["preflight", "RESULTS_BUCKET=my-results"], &BUCKETS[..]].concat(),
        " preflight ",
    );
    assert!(
        line.iter()
            .any(|l| l.contains("--results-uri s3://my-results/s3sweep-results")),
        "{line:?}"
    );
    let line = dry_run_lines(
        &[
            &["preflight", "RESULTS_BUCKET=my-results", "RESULTS_PREFIX=runs/x"],
            &BUCKETS[..],
        ]
        .concat(),
        " preflight ",
    );
    assert!(
        line.iter().any(|l| l.contains("--results-uri s3://my-results/runs/x")),
        "{line:?}"
    );
    let line = dry_run_lines(&[&["preflight"], &BUCKETS[..]].concat(), " preflight ");
    assert!(line.iter().all(|l| !l.contains("--results-uri")), "{line:?}");
}

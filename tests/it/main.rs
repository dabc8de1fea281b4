//! The integration tests, as one test binary (`cargo test --test it`): each file of
//! tests/it/ is a module, so the SDK, hyper and rustls are linked once, not once per
//! file. `common` holds the helpers most modules share (the embedded server, seeding,
//! the `s3sweep` binary as a child process), `emulator` the Lambda emulator tests'
//! machinery. One filter selects a module (`cargo test --test it cli_flags::`) or a
//! test (`cargo test --test it -- --exact diagnose::missing_keys_are_errors`).
//!
//! The modules share one process. A test that measures the whole process (its CPU
//! time, peak RSS or open file descriptors) runs in a process of its own
//! ([`common::isolated`]); the tests with thresholds in milliseconds or in throughput
//! under a CPU quota, and the tests that keep the CPU busy, run one at a time
//! ([`common::one_at_a_time`]); a panic hook counts only the panics of its own threads
//! (`fuzz`); no test sets an environment variable or changes the current folder; files
//! under the temporary folder have names no other module uses (the process id alone no
//! longer tells the modules apart).

mod common;
mod emulator;

mod bad_requests;
mod baseline_function;
mod bench_clients;
mod boto3_reads;
mod canary_memory;
mod clean;
mod cli;
mod cli_errors;
mod cli_flags;
mod cli_reliability;
mod cpu_quota;
mod credentials;
mod data_safety;
mod deploy_files;
mod diagnose;
mod doc_examples;
mod doc_figures;
mod docs;
mod end_to_end;
mod escapes;
mod evidence_network;
mod express;
mod fanout_handler;
mod fanout_network;
mod faults;
mod forged_manifests;
mod fuzz;
mod hedging;
mod history;
mod html_report;
mod idle_emulator;
mod lab_conformance;
mod lab_fairness;
mod lab_limits;
mod lab_network;
mod lab_tools;
mod lambda_emulator;
mod lambda_handler;
mod lambda_rules;
mod lanes;
mod layers;
mod lean_client;
mod lmi_emulator;
mod load;
mod log_secrets;
mod memory_bounds;
mod memory_emulator;
mod memory_sweep;
mod memory_sweep_iam;
mod moto_ec2;
mod moto_lambda;
mod network;
mod no_panics;
mod ownership;
mod plot_bounds;
mod prefix;
mod prefix_lambda;
mod preflight;
mod preflight_results;
mod read_limits;
mod report_and_compare;
mod requests_log;
mod runtime_api;
mod s3_iam;
mod sessions;
mod sizes;
mod slow_bodies;
mod stdout_closed;
mod story_court;
mod timeline;
mod tls_cli;
mod widths;
mod wire_timing;
mod written_files;

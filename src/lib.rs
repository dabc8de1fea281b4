//! s3sweep measures how fast many small objects can be read from S3 in parallel,
//! bucket by bucket and concurrency level by concurrency level, and says why each
//! curve flattens.
//!
//! # Map of the crate
//!
//! One-way layers: each module imports only the ones listed above it (a test,
//! `tests/it/layers.rs`, fails on any import that goes up or round in a circle).
//!
//! - [`model`]: the serde contract and nothing else: the sweep request (with its
//!   fan-out and price sections) and the result document (`s3sweep.result/v1`: rows,
//!   summaries, environment, diagnosis and fan-out blocks), percentiles, error kinds.
//! - [`sys`]: the machine and the process: CPU time, peak memory, vCPUs, the
//!   file-descriptor budget.
//! - [`plan`]: a request validated into a [`plan::Plan`] that cannot hold invalid
//!   values: one field reader for every section, key templates, bucket-name rules,
//!   price and fan-out checks; every bad field named in one error.
//! - [`transport`]: the HTTP transport the SDK sends through: hyper-util's pool with a
//!   per-host connection cap, in lanes (a thread, runtime and share of the pool per
//!   core), `TCP_NODELAY`, connect and first-byte timeouts, counters.
//! - [`s3`]: the one S3 client per process on that transport (credentials passed in),
//!   error classification, the measured GET, and `seed`/`clean` of test objects.
//! - [`engine`]: the run: bucket x workers x repetition, exactly `workers` GETs in
//!   flight, the recorder (histograms, cold/steady breakdown), the preflight, the start
//!   schedule of side-by-side sweeps and the deadline rule. Returns measured rows.
//! - [`analysis`]: model in, model out: summaries and knee, verdicts, the curve fit and
//!   its predictions, cost, and the comparison of two results.
//! - [`render`]: tables (terminal and Markdown from one place), diagnosis text, cost
//!   and compare tables, the plot, progress bars.
//! - [`lab`]: the embedded S3-compatible server (s3s) with latency profiles and faults,
//!   its credentials, and the helper that runs it as a child process. Used by the CLI
//!   and tests, never by the client.
//! - [`lambda`]: the Lambda adapter: settings from the environment, event validation,
//!   the handler, and fan-out (children, invoke, merge).
//! - [`cli`]: the command-line adapter: clap arguments and the commands.
//!
//! The binaries only parse and call: `src/bin/s3sweep.rs` runs [`cli::run`];
//! `src/bin/s3sweep-lambda.rs` builds one [`lambda::Function`] and runs it under
//! `lambda_runtime`. `docs/architecture.md` follows one request from event to row.

pub mod analysis;
pub mod cli;
pub mod engine;
pub mod lab;
pub mod lambda;
pub mod model;
pub mod plan;
pub mod render;
pub mod s3;
pub mod sys;
pub mod transport;

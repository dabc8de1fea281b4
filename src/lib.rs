//! s3sweep measures how fast many small objects can be read from S3 in parallel,
//! bucket by bucket and concurrency level by concurrency level.
//!
//! # Map of the crate
//!
//! - [`request`]: the sweep request (the Lambda's event, `s3sweep run --event`'s file)
//!   and its validation into a [`request::Plan`] that cannot hold invalid values.
//! - [`client`]: the one S3 client per process: the AWS SDK on a transport we own
//!   (hyper-util's pool with a per-host connection cap, `TCP_NODELAY`, counters).
//! - [`sweep`]: the engine: bucket x workers x repetition, exactly `workers` GETs in
//!   flight, bodies drained and counted, failures counted by kind.
//! - [`diagnose`]: why each configuration ran as fast as it did: the per-request
//!   breakdown (cold requests apart), client CPU and requests in flight, a verdict per
//!   configuration, and per bucket the knee, a fit of the throughput model and its
//!   predictions.
//! - [`report`]: the result document (`s3sweep.result/v1`), percentiles, summaries and
//!   the human tables.
//! - [`seed`]: writes the test objects (skipping keys already there) and records what
//!   it wrote in a manifest.
//! - [`clean`]: deletes exactly the keys a seed manifest records (never a listing),
//!   and takes them out of the manifest.
//! - [`limits`]: the file-descriptor budget: raises the soft `RLIMIT_NOFILE` and says
//!   clearly when a sweep needs more descriptors than allowed.
//! - [`server`]: the embedded S3-compatible server (s3s) with per-bucket latency
//!   profiles, for laptops and tests.
//! - [`usage`]: CPU time, peak memory and machine facts.
//! - [`fanout`]: one sweep over N invocations of the function: the coordinator's
//!   child events (shards, shared start), invoking them (aws-sdk-lambda, no retries),
//!   and the merge of their rows (summed counts, merged hdrhistograms, common window).
//! - [`cost`]: the price table (request field `prices`), the S3 and Lambda cost of each
//!   configuration, the cheapest configuration meeting `target_wall_ms`.
//! - [`plot`]: the picture of a result (throughput and wall time against workers, knee
//!   marked; first-byte percentiles; latency CDF) as SVG or PNG, with plotters.
//! - [`compare`]: two results side by side, matching configurations, ratios, and
//!   differences beyond the runs' own spread.
//! - [`progress`]: the CLI's progress bars (indicatif), one per configuration.
//! - [`lambda`]: the Lambda function's settings (from its environment only), handler,
//!   deadline reading and progress log lines; errors become `Diagnostic`s with a
//!   stable `errorType`.
//!
//! The binaries are thin: `src/bin/s3sweep.rs` (the CLI) parses arguments and calls
//! into these modules; `src/bin/s3sweep-lambda.rs` builds one [`lambda::Function`] and
//! runs it under `lambda_runtime`.

pub mod clean;
pub mod client;
pub mod compare;
pub mod cost;
pub mod diagnose;
pub mod fanout;
pub mod lambda;
pub mod limits;
pub mod plot;
pub mod progress;
pub mod report;
pub mod request;
pub mod seed;
pub mod server;
pub mod sweep;
pub mod usage;

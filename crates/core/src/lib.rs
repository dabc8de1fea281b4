//! The core of s3sweep, everything but its adapters and its lab: how fast many small
//! objects can be read from S3 in parallel, bucket by bucket and concurrency level by
//! concurrency level, and why each curve flattens.
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
//!   error classification, the measured GET, `seed`/`clean` of test objects, and how
//!   a client talks to the lab (its fixed keys, [`s3::lab_client`]).
//! - [`engine`]: the run: bucket x workers x repetition, exactly `workers` GETs in
//!   flight, the recorder (histograms, cold/steady breakdown), the preflight, the start
//!   schedule of side-by-side sweeps and the deadline rule. Returns measured rows.
//! - [`analysis`]: model in, model out: summaries and knee, verdicts, the curve fit and
//!   its predictions, cost, and the comparison of two results.
//! - [`render`]: tables (terminal and Markdown from one place), diagnosis text, cost
//!   and compare tables, the plot, progress bars.
//!
//! Above it, each in its own crate: the lab (`s3sweep-lab`, the embedded S3 server),
//! the function (`s3sweep-lambda`, which depends on this crate alone) and the command
//! line (`s3sweep`, which depends on this crate and the lab).

pub mod analysis;
pub mod engine;
pub mod model;
pub mod plan;
pub mod render;
pub mod s3;
pub mod sys;
pub mod transport;

//! s3sweep measures how fast many small objects can be read from S3 in parallel,
//! bucket by bucket and concurrency level by concurrency level, and says why each
//! curve flattens.
//!
//! # Map of the workspace
//!
//! Five crates, one-way (`tests/it/layers.rs` checks the imports and the dependency
//! tree):
//!
//! - `s3sweep-core` (`crates/core`): [`model`], [`sys`], [`plan`], [`transport`],
//!   [`s3`], [`engine`], [`analysis`], [`render`], re-exported here under the same
//!   names, and how a client talks to the lab (`s3::lab_client`);
//! - `s3sweep-aws` (`crates/aws`): [`sweep_client`], the core's S3 client with the
//!   shared configuration aws-config loads (credential chain, region); the one crate
//!   of ours below the adapters that depends on aws-config, so the core is built once
//!   for the CLI (aws-config with SSO) and the function (without);
//! - `s3sweep-lab` (`crates/lab`), re-exported as [`lab`]: the embedded S3-compatible
//!   server (s3s) with latency profiles and faults, and the helper that runs it as a
//!   child process. Used by the CLI and tests, never by the function;
//! - `s3sweep-lambda` (`crates/lambda`): the Lambda adapter and its binary
//!   `s3sweep-lambda`: settings from the environment, event validation, the handler,
//!   and fan-out (children, invoke, merge). It depends on the core and `s3sweep-aws`;
//! - this crate: [`cli`], the command-line adapter (clap arguments and the commands),
//!   and the binary `s3sweep`.
//!
//! The binaries only parse and call: `src/bin/s3sweep.rs` runs [`cli::run`];
//! `crates/lambda/src/main.rs` builds one `s3sweep_lambda::Function` and runs it under
//! `lambda_runtime`. `docs/architecture.md` follows one request from event to row.

pub use s3sweep_aws::sweep_client;
pub use s3sweep_core::{analysis, engine, model, plan, render, s3, sys, transport};
pub use s3sweep_lab as lab;

pub mod cli;

//! The flags of a sweep's client side shared by `run` and `local`: the S3 clients,
//! the hedge policies and their budget, the bandwidth probe, the order, the pool's
//! idle timeout (each a request field: cli::request maps them).

use clap::{Args, ValueEnum};

use crate::model::Hedge;

/// An S3 client a sweep runs with (request `clients`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ClientArg {
    /// aws-sdk-s3, as an application uses it (the default).
    Sdk,
    /// Signed GETs with the least client work (docs/lean-client.md).
    Lean,
}

impl ClientArg {
    pub fn client(self) -> crate::model::Client {
        match self {
            ClientArg::Sdk => crate::model::Client::Sdk,
            ClientArg::Lean => crate::model::Client::Lean,
        }
    }
}

/// The client's network side of a sweep: the bandwidth probe, the order, the pool's
/// idle timeout, the S3 clients.
#[derive(Args, Clone, Default)]
pub struct ClientNetworkArgs {
    /// The S3 clients each configuration runs with, comma separated (request
    /// `clients`; default `sdk`): `--clients sdk,lean` runs every configuration with
    /// both and compares them.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "CLIENTS")]
    pub clients: Vec<ClientArg>,
    /// Measure the bandwidth ceiling to the first bucket before the sweep (at most 4 s
    /// and 1 GiB): the verdicts and the model then use it (request `probe_bandwidth`).
    #[arg(long)]
    pub probe_bandwidth: bool,
    /// Known network ceiling in MiB/s (measured or configured): configurations near it
    /// get the `bandwidth` verdict, and the model uses it (source `user`; it wins over
    /// `--probe-bandwidth`'s). Default: unknown, or the probe's when it ran.
    #[arg(long, value_parser = super::counts::rate)]
    pub bandwidth_mib_s: Option<f64>,
    /// The order configurations run in (request `order`; default: interleaved when
    /// repetitions > 1, else ascending).
    #[arg(long, value_enum)]
    pub order: Option<OrderArg>,
    /// The client closes a pooled connection idle this long, ms (request
    /// `pool_idle_timeout_ms`; default 15000, below S3's idle close of about 20 s).
    #[arg(long, value_name = "MS", value_parser = super::counts::ms)]
    pub pool_idle_timeout_ms: Option<u64>,
    /// The hedge policies each configuration runs with, comma separated (request
    /// `hedge`; default `off`): `off`, `pNN` (a second copy of a GET with no first byte
    /// after the running NN-th percentile of first bytes), `Nms` (after N ms), e.g.
    /// `--hedge off,p95,40ms` (docs/hedging.md).
    #[arg(long, value_delimiter = ',', value_name = "POLICIES")]
    pub hedge: Vec<Hedge>,
    /// Most hedges, in percent of a configuration's GETs so far (request
    /// `max_hedge_percent`; default 5).
    #[arg(long, value_name = "PERCENT", value_parser = super::counts::percent)]
    pub max_hedge_percent: Option<u32>,
}

/// The order configurations run in (request `order`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OrderArg {
    /// Bucket, then workers, then repetition, back to back.
    Ascending,
    /// Repetitions as rounds, the worker counts of each round in a seeded shuffle.
    Interleaved,
}

impl OrderArg {
    pub fn order(self) -> crate::model::Order {
        match self {
            OrderArg::Ascending => crate::model::Order::Ascending,
            OrderArg::Interleaved => crate::model::Order::Interleaved,
        }
    }
}

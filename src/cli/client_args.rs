//! The flags of a sweep's client side shared by `run` and `local`: the S3 clients,
//! the hedge policies and their budget, the bandwidth probe, the order, the pool's
//! idle timeout. Each is a request field of the same name: [`ClientNetworkArgs`]
//! serializes to the fields its flags set (serde's names, the request's own), inside
//! [`super::sweep_args::SweepArgs`]: no mapping is written by hand.

use clap::{Args, ValueEnum};
use serde::Serialize;

use crate::model::Hedge;

/// An S3 client a sweep runs with (request `clients`, written as the model's name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(into = "crate::model::Client")]
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

impl From<ClientArg> for crate::model::Client {
    fn from(c: ClientArg) -> Self {
        c.client()
    }
}

/// The client's network side of a sweep: the bandwidth probe, the order, the pool's
/// idle timeout, the S3 clients. Serialized, the request fields the flags given set.
#[derive(Args, Clone, Default, Serialize)]
pub struct ClientNetworkArgs {
    /// The S3 clients each configuration runs with, comma separated (request
    /// `clients`; default `sdk`): `--clients sdk,lean` runs every configuration with
    /// both and compares them.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "CLIENTS")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub clients: Vec<ClientArg>,
    /// Measure the bandwidth ceiling to the first bucket before the sweep (at most 4 s
    /// and 1 GiB): the verdicts and the model then use it (request `probe_bandwidth`).
    #[arg(long)]
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub probe_bandwidth: bool,
    /// Known network ceiling in MiB/s (measured or configured): configurations near it
    /// get the `bandwidth` verdict, and the model uses it (source `user`; it wins over
    /// `--probe-bandwidth`'s). Default: unknown, or the probe's when it ran.
    #[arg(long, value_parser = super::counts::rate)]
    #[serde(skip)]
    pub bandwidth_mib_s: Option<f64>,
    /// The order configurations run in (request `order`; default: interleaved when
    /// repetitions > 1, else ascending).
    #[arg(long, value_enum)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order: Option<OrderArg>,
    /// The client closes a pooled connection idle this long, ms (request
    /// `pool_idle_timeout_ms`; default 15000, below S3's idle close of about 20 s).
    #[arg(long, value_name = "MS", value_parser = super::counts::ms)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool_idle_timeout_ms: Option<u64>,
    /// The hedge policies each configuration runs with, comma separated (request
    /// `hedge`; default `off`): `off`, `pNN` (a second copy of a GET with no first byte
    /// after the running NN-th percentile of first bytes), `Nms` (after N ms), e.g.
    /// `--hedge off,p95,40ms` (docs/hedging.md).
    #[arg(long, value_delimiter = ',', value_name = "POLICIES")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hedge: Vec<Hedge>,
    /// Most hedges, in percent of a configuration's GETs so far (request
    /// `max_hedge_percent`; default 5).
    #[arg(long, value_name = "PERCENT", value_parser = super::counts::percent)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_hedge_percent: Option<u32>,
}

/// The order configurations run in (request `order`, written as the model's name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(into = "crate::model::Order")]
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

impl From<OrderArg> for crate::model::Order {
    fn from(o: OrderArg) -> Self {
        o.order()
    }
}

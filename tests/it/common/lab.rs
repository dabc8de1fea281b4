//! The one way a test starts the embedded lab in its own process: [`LabBuilder`] takes
//! the buckets, HTTPS, the network, the limits, faults and what to seed, and returns
//! the running server and a client of it. It is also the one place the tests name the
//! lab's crate path: tests import lab types from here (`crate::common::lab::…`), so
//! moving the lab elsewhere is an edit of the `use` below. (`s3sweep serve` as a child
//! process is [`super::Serve`].)

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use s3sweep::lab::{self as product, ServerConfig, TlsOptions};
use s3sweep::s3::seed::SeedSpec;
use s3sweep::s3::SweepClient;

pub(crate) use s3sweep::lab::iam::{Enforcer, Policy};
pub(crate) use s3sweep::lab::{
    child, client_options, client_options_for, nic, tls, BucketFault, FaultKind, FaultSpec, FaultTally, FaultTiming,
    LabLimits, LatencyProfile, MemStore, NetworkConfig, RunningServer, Session, SessionMode, StoreLimits, Tail,
    FAULTS_PATH, HELLO_PATH, LOCAL_ACCESS_KEY, LOCAL_SECRET_KEY, MAX_BUCKETS, MAX_SESSIONS, NETWORK_PATH,
};

use super::{client_of, seed_spec, seed_with};

/// How a test's lab is set up. Start with [`LabBuilder::new`], add what the test needs,
/// and end with [`LabBuilder::start`] (server and client) or [`LabBuilder::server`].
///
/// In [`start`](LabBuilder::start), in this order: the server starts (on 127.0.0.1:0),
/// the read tail is set, a client is made, the SDK seeds (`seed`, `seed_spec`), objects
/// are written straight into the store (`stored`), then faults, their timing and the
/// IAM policy take effect, so seeding never meets them.
#[must_use]
pub(crate) struct LabBuilder {
    config: ServerConfig,
    tail: Option<Tail>,
    seeds: Vec<SeedSpec>,
    stored: Vec<(String, String, Bytes)>,
    faults: Vec<(String, Vec<FaultSpec>)>,
    fault_timing: Option<FaultTiming>,
    iam: Option<Arc<Enforcer>>,
}

impl LabBuilder {
    /// No bucket, plain HTTP, the default network and limits.
    pub(crate) fn new() -> LabBuilder {
        LabBuilder {
            config: ServerConfig::default(),
            tail: None,
            seeds: Vec::new(),
            stored: Vec::new(),
            faults: Vec::new(),
            fault_timing: None,
            iam: None,
        }
    }

    /// A bucket behind its latency profile.
    pub(crate) fn bucket(mut self, name: &str, profile: LatencyProfile) -> LabBuilder {
        self.config.buckets.push((name.to_string(), profile));
        self
    }

    /// These buckets, each behind its latency profile.
    pub(crate) fn buckets(self, buckets: &[(&str, LatencyProfile)]) -> LabBuilder {
        buckets
            .iter()
            .fold(self, |lab, (name, profile)| lab.bucket(name, *profile))
    }

    /// HTTPS, with a CA of its own written under the temporary folder (the client
    /// trusts it).
    pub(crate) fn tls(self) -> LabBuilder {
        self.tls_with(TlsOptions::default())
    }

    /// HTTPS with these options (the CA file's place).
    pub(crate) fn tls_with(mut self, options: TlsOptions) -> LabBuilder {
        self.config.tls = Some(options);
        self
    }

    /// HTTPS when `on`.
    pub(crate) fn tls_if(self, on: bool) -> LabBuilder {
        if on {
            self.tls()
        } else {
            self
        }
    }

    /// How long S3 Express sessions last.
    pub(crate) fn session_ttl(mut self, ttl: Duration) -> LabBuilder {
        self.config.session_ttl = ttl;
        self
    }

    /// The lab's network: NIC, per-prefix rate, idle timeout.
    pub(crate) fn network(mut self, network: NetworkConfig) -> LabBuilder {
        self.config.network = network;
        self
    }

    /// What the server takes in (connections, header time, store caps).
    pub(crate) fn limits(mut self, limits: LabLimits) -> LabBuilder {
        self.config.limits = limits;
        self
    }

    /// The standard far tail of every bucket's reads.
    pub(crate) fn tail(mut self, tail: Tail) -> LabBuilder {
        self.tail = Some(tail);
        self
    }

    /// `bucket`'s faults, in effect once seeding is done.
    pub(crate) fn faults(mut self, bucket: &str, faults: Vec<FaultSpec>) -> LabBuilder {
        self.faults.push((bucket.to_string(), faults));
        self
    }

    /// When the faults strike (the stall's and the late first byte's lengths).
    pub(crate) fn fault_timing(mut self, timing: FaultTiming) -> LabBuilder {
        self.fault_timing = Some(timing);
        self
    }

    /// Every request authorized against `enforcer`'s policy, once seeding is done.
    pub(crate) fn iam(mut self, enforcer: Arc<Enforcer>) -> LabBuilder {
        self.iam = Some(enforcer);
        self
    }

    /// `count` objects `test/{i}/vectors` of `size_bytes` seeded into `bucket` through
    /// the SDK; all of them must be written.
    pub(crate) fn seed(self, bucket: &str, count: u32, size_bytes: u64) -> LabBuilder {
        self.seed_spec(seed_spec(bucket, "test/{i}/vectors", count, size_bytes))
    }

    /// `spec` seeded through the SDK; every object it names must be written (or, with
    /// `skip_existing`, be there already).
    pub(crate) fn seed_spec(mut self, spec: SeedSpec) -> LabBuilder {
        self.seeds.push(spec);
        self
    }

    /// `body` at `bucket`/`key`, written straight into the store (no request: a
    /// per-prefix rate or a fault does not see it).
    pub(crate) fn stored(mut self, bucket: &str, key: &str, body: Bytes) -> LabBuilder {
        self.stored.push((bucket.to_string(), key.to_string(), body));
        self
    }

    /// Starts the lab as set up, and returns it with a client of it.
    pub(crate) async fn start(self) -> (RunningServer, SweepClient) {
        let (server, client) = self.launch().await;
        let client = match client {
            Some(client) => client,
            None => client_of(&server).await,
        };
        (server, client)
    }

    /// Starts the lab as set up: seeded through a client of its own (made only when
    /// there is something to seed, and returned), then its stored objects, faults and
    /// IAM policy.
    async fn launch(self) -> (RunningServer, Option<SweepClient>) {
        let server = product::start(self.config)
            .await
            .expect("the lab starts on 127.0.0.1:0");
        if let Some(tail) = self.tail {
            server.profiles().set_tail(Some(tail));
        }
        let client = if self.seeds.is_empty() {
            None
        } else {
            Some(client_of(&server).await)
        };
        if let Some(client) = &client {
            for spec in &self.seeds {
                let manifest = seed_with(client, spec).await;
                let seeded = manifest.written.len() as u64 + manifest.skipped_existing;
                let sizes = spec.object_sizes_bytes.len().max(1) as u64;
                assert_eq!(seeded, u64::from(spec.object_count) * sizes, "seeding {}", spec.bucket);
            }
        }
        for (bucket, key, body) in self.stored {
            server.store().insert(&bucket, &key, body);
        }
        if let Some(timing) = self.fault_timing {
            server.faults().set_timing(timing);
        }
        for (bucket, faults) in self.faults {
            server.faults().set(&bucket, faults).expect("the faults are valid");
        }
        if let Some(enforcer) = self.iam {
            server.iam().enforce(Some(enforcer));
        }
        (server, client)
    }

    /// [`start`](LabBuilder::start), for a test that makes its own client (none is
    /// made unless seeding needs one).
    pub(crate) async fn server(self) -> RunningServer {
        self.launch().await.0
    }
}

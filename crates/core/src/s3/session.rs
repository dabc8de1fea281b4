//! A sweep session: the value one sweep (one CLI run, one Lambda invocation) reads
//! through. [`SweepClient::session`] builds it from a plan: a [`Transport`] of its own
//! with the plan's settings (its lanes, each its own connection pool, its threads, its
//! counters), and on each lane an SDK reading client and a lean client whose HTTP
//! client is that lane. Nothing of it is shared with another session in the process,
//! and nothing is reconfigured: a sweep with other settings is another session.
//! Building one starts no thread and opens no connection (the lanes' threads start with
//! the first work spawned on them), so each invocation can make its own; the
//! connections close and the threads stop when it is dropped. What two sessions of one
//! [`SweepClient`] do share holds no connection: the credentials, the endpoint rules'
//! cache, and the ReadOnly S3 Express sessions (one per bucket per process, created
//! through the transport of the sweep that first needs one, and counted there).

use std::sync::Arc;

use crate::model::Client;
use crate::plan::Plan;
use crate::sys::cpu::UsableCpu;
use crate::transport::{Transport, TransportSettings};

use super::express::ReadOnlySessions;
use super::get::Reader;
use super::{LeanClient, RequestSettings, SweepClient, SESSION_SETTINGS};

/// One sweep's transport and clients ([`SweepClient::session`]). Cheap to clone (the
/// clones are the same session: they share its transport).
#[derive(Clone, Debug)]
pub struct SweepSession {
    client: SweepClient,
    transport: Transport,
    /// Per lane, in the transport's order: the clients whose HTTP client is that lane.
    lanes: Arc<Vec<LaneReaders>>,
}

/// The reading clients of one lane.
#[derive(Debug)]
struct LaneReaders {
    sdk: aws_sdk_s3::Client,
    lean: LeanClient,
}

impl SweepClient {
    /// A session for `plan`: its transport settings ([`transport_settings`]) and its
    /// retries and timeouts ([`request_settings`]).
    pub fn session(&self, plan: &Plan) -> SweepSession {
        self.session_with(transport_settings(plan), request_settings(plan))
    }

    /// A session with the given transport settings and request settings.
    pub fn session_with(&self, transport: TransportSettings, settings: RequestSettings) -> SweepSession {
        let transport = self.transport().sibling(transport);
        let create = super::with_settings(&self.base, SESSION_SETTINGS)
            .to_builder()
            .http_client(transport.http_client())
            .build();
        let sessions = Arc::new(ReadOnlySessions::sharing(
            aws_sdk_s3::Client::from_conf(create),
            &self.sessions,
        ));
        // One reader configuration and one lean client (one credentials cache) for the
        // session; each lane gets them with its own HTTP client.
        let reader = super::reader_config(&self.base, settings, &sessions);
        let lean = LeanClient::from_parts(
            transport.lane(0).clone(),
            self.endpoint.clone(),
            self.region.clone(),
            self.provider.clone(),
            sessions,
            settings,
        );
        let lanes = transport
            .lanes()
            .iter()
            .map(|lane| LaneReaders {
                sdk: aws_sdk_s3::Client::from_conf(reader.to_builder().http_client(lane.http_client()).build()),
                lean: lean.on_lane(lane.clone()),
            })
            .collect();
        SweepSession {
            client: self.clone(),
            transport,
            lanes: Arc::new(lanes),
        }
    }
}

impl SweepSession {
    /// Its transport: lanes, threads and counters.
    pub fn transport(&self) -> &Transport {
        &self.transport
    }

    /// The client it was made by (region, endpoint, credentials' name).
    pub fn client(&self) -> &SweepClient {
        &self.client
    }

    /// The SDK reading client of lane `lane` (modulo the lanes): lane 0 for work off the
    /// lanes' threads (listing, preflight).
    pub fn sdk(&self, lane: usize) -> &aws_sdk_s3::Client {
        &self.lanes[lane % self.lanes.len()].sdk
    }

    /// The reader of `client` kind on lane `lane` (modulo the lanes): what a driver
    /// spawned on that lane sends through.
    pub fn reader(&self, lane: usize, client: Client) -> Reader {
        let readers = &self.lanes[lane % self.lanes.len()];
        match client {
            Client::Sdk => Reader::Sdk(readers.sdk.clone()),
            Client::Lean => Reader::Lean(readers.lean.clone()),
        }
    }
}

/// The transport of a sweep of `plan`: its pool, timeouts, and one lane per usable core
/// ([`lane_count`]).
pub fn transport_settings(plan: &Plan) -> TransportSettings {
    TransportSettings {
        pool_connections: plan.pool_connections() as usize,
        connect_timeout: plan.connect_timeout(),
        tcp_keepalive: None,
        pool_idle_timeout: plan.pool_idle_timeout(),
        lanes: sweep_lanes(),
    }
}

/// The retries and timeouts of a sweep of `plan`.
pub fn request_settings(plan: &Plan) -> RequestSettings {
    RequestSettings {
        max_attempts: plan.max_attempts(),
        first_byte_timeout: plan.first_byte_timeout(),
        attempt_timeout: plan.attempt_timeout(),
    }
}

/// The lanes of a sweep started here: one per usable core, at most one per thread of
/// the runtime it runs on ([`lane_count`]).
pub fn sweep_lanes() -> usize {
    lanes_for(UsableCpu::read().cores)
}

/// [`sweep_lanes`] for `usable_cores` already read.
pub fn lanes_for(usable_cores: f64) -> usize {
    lane_count(usable_cores, runtime_threads())
}

/// The transport's lanes for a sweep: one per usable core (its CPU quota or Lambda
/// share, rounded up), at most one per thread of the runtime the sweep was started on
/// (`--runtime-threads 1` keeps it to one core). Each lane is a thread with its own
/// runtime and its own share of the pool, and runs one driver of each configuration
/// (docs/performance.md, "Lanes: a thread, runtime and pool per core").
fn lane_count(usable_cores: f64, runtime_threads: usize) -> usize {
    (usable_cores.ceil() as usize).clamp(1, runtime_threads.max(1))
}

/// Worker threads of the runtime this runs on (1 off a runtime).
fn runtime_threads() -> usize {
    tokio::runtime::Handle::try_current().map_or(1, |h| h.metrics().num_workers())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// How long building a session may take at most: generous, as the machine may be
    /// loaded (a few hundred microseconds on an idle one).
    const CHEAP: Duration = Duration::from_millis(200);
    use crate::s3::{ClientOptions, CredentialSource, StaticCredentials};

    async fn client() -> SweepClient {
        let keys = CredentialSource::Static(StaticCredentials {
            access_key_id: "AKID".into(),
            secret_access_key: "secret".into(),
            provider_name: "test",
        });
        let prepared = SweepClient::prepare(ClientOptions::for_endpoint(
            Some("http://127.0.0.1:9".into()),
            None,
            keys,
        ))
        .unwrap();
        // What aws-config's loader gives for static keys and a region, by hand: the
        // core has no aws-config.
        let shared = aws_types::SdkConfig::builder()
            .region(prepared.region())
            .credentials_provider(aws_credential_types::provider::SharedCredentialsProvider::new(
                prepared.static_credentials().unwrap(),
            ))
            .http_client(prepared.http_client())
            .behavior_version(aws_sdk_s3::config::BehaviorVersion::latest())
            .build();
        prepared.finish(&shared).unwrap()
    }

    #[test]
    fn lanes_follow_the_cores_and_the_runtime() {
        assert_eq!(lane_count(1.0, 4), 1);
        assert_eq!(lane_count(1.5, 4), 2);
        assert_eq!(lane_count(8.0, 2), 2);
        assert_eq!(lane_count(0.2, 0), 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_session_is_cheap_and_each_lane_has_its_readers() {
        let client = client().await;
        let settings = TransportSettings {
            pool_connections: 4,
            lanes: 2,
            ..Default::default()
        };
        let started = std::time::Instant::now();
        let a = client.session_with(settings, RequestSettings::maintenance(Duration::from_secs(1)));
        assert!(started.elapsed() < CHEAP, "a session is cheap: {:?}", started.elapsed());
        assert_eq!(a.transport().lanes().len(), 2);
        match (a.reader(1, Client::Lean), a.reader(0, Client::Lean)) {
            (Reader::Lean(one), Reader::Lean(zero)) => {
                assert_eq!((one.lane().index(), zero.lane().index()), (1, 0));
            }
            _ => panic!("lean readers"),
        }
        assert_eq!(a.reader(0, Client::Sdk).client(), Client::Sdk);
    }
}

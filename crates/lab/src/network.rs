//! The lab's network as a Lambda function and S3 see it, in one place: the NIC
//! ([`super::nic`]: an aggregate rate, a one-time burst, a per-connection cap), S3's
//! request rate per prefix partition ([`super::prefix_rate`]) and S3's idle timeout
//! for keep-alive connections ([`super::idle`]). [`NetworkConfig`] says what is on
//! (documented defaults: no NIC, no prefix rate, idle connections closed after 20 s);
//! [`Network`] is the running state and [`NetworkTally`] what it did, served as JSON
//! at [`NETWORK_PATH`] and printed by `serve` when it stops.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use super::idle::DEFAULT_IDLE_TIMEOUT;
use super::nic::{Nic, NicConfig, NicError, NicTally};
use super::prefix_rate::{PrefixRate, PrefixRateTally};

/// Path of the network tally endpoint (not a valid bucket name, so never an S3 request).
pub const NETWORK_PATH: &str = "/_s3sweep/network";

/// What the lab's network does.
#[derive(Debug, Clone, PartialEq)]
pub struct NetworkConfig {
    /// The NIC shaping what the server sends (`None`: loopback's own speed).
    pub nic: Option<NicConfig>,
    /// Reads per second per prefix partition (`None`: no limit).
    pub prefix_gets_per_s: Option<f64>,
    /// Idle keep-alive connections are closed after this long (`None`: never).
    /// Default: 20 s, as S3.
    pub idle_timeout: Option<Duration>,
}

impl Default for NetworkConfig {
    fn default() -> Self {
        NetworkConfig {
            nic: None,
            prefix_gets_per_s: None,
            idle_timeout: Some(DEFAULT_IDLE_TIMEOUT),
        }
    }
}

/// A network setting the lab refuses.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NetworkProblem {
    #[error("NIC: {0}")]
    Nic(NicError),
    #[error("prefix rate must be a positive number of GETs per second, got {0}")]
    PrefixRate(f64),
    #[error("idle timeout must be more than 0 s (leave it out to never close)")]
    IdleTimeoutZero,
    /// A rate changed on a lab started without one.
    #[error("the lab has no per-prefix rate")]
    NoPrefixRate,
}

/// Every setting of a [`NetworkConfig`] the lab refuses.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", crate::each_named(&.0))]
pub struct NetworkError(pub Vec<NetworkProblem>);

impl NetworkConfig {
    /// Checks every setting, naming each bad one.
    pub fn check(&self) -> Result<(), NetworkError> {
        let mut bad = Vec::new();
        if let Some(Err(e)) = self.nic.as_ref().map(NicConfig::check) {
            bad.push(NetworkProblem::Nic(e));
        }
        if let Some(r) = self.prefix_gets_per_s.filter(|r| !(r.is_finite() && *r > 0.0)) {
            bad.push(NetworkProblem::PrefixRate(r));
        }
        if self.idle_timeout.is_some_and(|t| t.is_zero()) {
            bad.push(NetworkProblem::IdleTimeoutZero);
        }
        match bad.is_empty() {
            true => Ok(()),
            false => Err(NetworkError(bad)),
        }
    }
}

/// What the network did so far.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct NetworkTally {
    /// The NIC's settings (`None`: no NIC).
    pub nic: Option<NicConfig>,
    /// What the NIC shaped.
    pub nic_tally: Option<NicTally>,
    /// The per-prefix rate and what it refused (`None`: no limit).
    pub prefix_rate: Option<PrefixRateTally>,
    /// The idle timeout in seconds (`None`: connections are never closed for idleness).
    pub idle_timeout_s: Option<f64>,
    /// Keep-alive connections the server closed because they were idle.
    pub idle_closes: u64,
}

impl NetworkTally {
    /// `NIC: 12.0 MiB shaped (...); prefix rate: ...; idle closes: 3 (timeout 20 s)`.
    pub fn line(&self) -> String {
        let nic = match (&self.nic, &self.nic_tally) {
            (Some(c), Some(t)) => format!(
                "NIC {}: {:.1} MiB sent in {} frames ({:.1} MiB in the burst), writers waited {:.0} ms in {} writes",
                c.describe(),
                t.bytes_shaped as f64 / (1024.0 * 1024.0),
                t.frames,
                t.burst_bytes as f64 / (1024.0 * 1024.0),
                t.throttled_ms,
                t.throttled_writes
            ),
            _ => "no NIC".to_string(),
        };
        let prefix = match &self.prefix_rate {
            Some(p) => format!(
                "prefix rate {} GET/s: {} allowed, {} answered 503 SlowDown, {} partitions",
                p.gets_per_s, p.allowed, p.throttled, p.partitions
            ),
            None => "no prefix rate".to_string(),
        };
        let idle = match self.idle_timeout_s {
            Some(s) => format!("idle connections closed: {} (timeout {s} s)", self.idle_closes),
            None => "idle connections never closed".to_string(),
        };
        format!("{nic}; {prefix}; {idle}")
    }
}

/// The running network state of one server.
#[derive(Debug)]
pub struct Network {
    config: NetworkConfig,
    nic: Option<Arc<Nic>>,
    prefix: Option<Arc<PrefixRate>>,
    idle_closes: AtomicU64,
}

impl Network {
    /// The state for `config` (checked by the caller).
    pub fn new(config: NetworkConfig) -> Self {
        Network {
            nic: config.nic.map(|c| Arc::new(Nic::new(c))),
            prefix: config.prefix_gets_per_s.map(|r| Arc::new(PrefixRate::new(r))),
            idle_closes: AtomicU64::new(0),
            config,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &NetworkConfig {
        &self.config
    }

    pub(crate) fn nic(&self) -> Option<Arc<Nic>> {
        self.nic.clone()
    }

    pub(crate) fn prefix_rate(&self) -> Option<Arc<PrefixRate>> {
        self.prefix.clone()
    }

    /// Changes the per-prefix rate while the lab runs (a prefix's limit reached in
    /// the middle of a configuration); `Err` without a prefix rate or for a rate that
    /// is not a positive number.
    pub fn set_prefix_gets_per_s(&self, gets_per_s: f64) -> Result<(), NetworkProblem> {
        if !(gets_per_s.is_finite() && gets_per_s > 0.0) {
            return Err(NetworkProblem::PrefixRate(gets_per_s));
        }
        let prefix = self.prefix.as_ref().ok_or(NetworkProblem::NoPrefixRate)?;
        prefix.set_gets_per_s(gets_per_s);
        Ok(())
    }

    pub(crate) fn idle_closes_counter(&self) -> &AtomicU64 {
        &self.idle_closes
    }

    /// The tally so far.
    pub fn tally(&self) -> NetworkTally {
        NetworkTally {
            nic: self.config.nic,
            nic_tally: self.nic.as_ref().map(|n| n.tally()),
            prefix_rate: self.prefix.as_ref().map(|p| p.tally()),
            idle_timeout_s: self.config.idle_timeout.map(|t| t.as_secs_f64()),
            idle_closes: self.idle_closes.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bad_setting_is_named() {
        let bad = NetworkConfig {
            nic: Some(NicConfig {
                rate_mib_s: -1.0,
                burst: None,
                per_connection_mib_s: None,
            }),
            prefix_gets_per_s: Some(0.0),
            idle_timeout: Some(Duration::ZERO),
        };
        let e = bad.check().unwrap_err();
        assert!(matches!(
            e.0[..],
            [NetworkProblem::Nic(_), NetworkProblem::PrefixRate(r), NetworkProblem::IdleTimeoutZero] if r == 0.0
        ));
        for part in ["NIC: rate", "prefix rate", "idle timeout"] {
            assert!(e.to_string().contains(part), "{e}");
        }
        assert!(NetworkConfig::default().check().is_ok());
    }
}

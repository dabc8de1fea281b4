//! The lab's network flags of `serve` and `local` (`--nic`, its burst and
//! per-connection cap, `--nic-table`, `--prefix-rate`, `--idle-timeout-s`, and the
//! far tail of `standard` buckets, `--tail`), checked
//! into a [`NetworkConfig`] with every bad flag named, and handed on to a child
//! `serve` as the same flags.

use std::time::Duration;

use clap::Args;

use crate::lab::lambda_nic::{self, NicTable};
use crate::lab::nic::{Burst, NicConfig};
use crate::lab::prefix_rate::S3_GETS_PER_S;
use crate::lab::{NetworkConfig, Tail, DEFAULT_IDLE_TIMEOUT};

/// The lab's network: a NIC, S3's per-prefix rate, S3's idle timeout.
#[derive(Args, Clone, Debug, Default)]
pub struct NetworkArgs {
    /// Shape what the lab sends with a NIC: RATE_MIB_S over all connections, or
    /// `lambda` (600 Mbit/s sustained after a one-time burst at 2.7 Gbit/s, the
    /// published figures; docs/network.md). Default: no NIC.
    #[arg(long, value_name = "RATE_MIB_S|lambda")]
    pub nic: Option<String>,
    /// The NIC's burst, in MiB, sent at --nic-burst-mib-s before the sustained rate
    /// (`lambda`: 321.9 MiB); one-time unless --nic-burst-refill-mib-s refills it.
    #[arg(long, value_name = "MIB", requires = "nic", value_parser = super::counts::rate)]
    pub nic_burst_mib: Option<f64>,
    /// The rate of the burst, MiB/s (`lambda`: 321.9, i.e. 2.7 Gbit/s).
    #[arg(long, value_name = "MIB_S", requires = "nic", value_parser = super::counts::rate)]
    pub nic_burst_mib_s: Option<f64>,
    /// Burst credit regained per second the link is idle, MiB/s, up to the burst's
    /// size (as EC2's burst credits refill). Default 0: a one-time burst.
    #[arg(long, value_name = "MIB_S", requires = "nic", value_parser = super::counts::rate)]
    pub nic_burst_refill_mib_s: Option<f64>,
    /// Most one connection may receive, MiB/s (default: only the aggregate binds).
    #[arg(long, value_name = "MIB_S", requires = "nic", value_parser = super::counts::rate)]
    pub nic_per_connection_mib_s: Option<f64>,
    /// With `--nic lambda` and --lambda-memory-mb: the sustained rate by memory,
    /// `measured-2024` (flat 600 Mbit/s), `announced-2026` (unverified: 625 Mbit/s
    /// at 2 GB to 3,000 at 10 GB) or a file of `MEMORY_MB RATE_MIB_S` lines.
    #[arg(long, value_name = "NAME|FILE", default_value = "measured-2024", requires = "nic")]
    pub nic_table: String,
    /// Reads (GET, HEAD) per second per prefix partition (bucket and key up to its
    /// first `/`), beyond which the lab answers 503 SlowDown; `s3` is S3's 5,500.
    /// Default: no limit.
    #[arg(long, value_name = "GETS_PER_S|s3")]
    pub prefix_rate: Option<String>,
    /// Close keep-alive connections idle this long, in seconds, as S3 does after
    /// about 20 s; 0: never.
    #[arg(long, value_name = "S", default_value_t = DEFAULT_IDLE_TIMEOUT.as_secs_f64())]
    pub idle_timeout_s: f64,
    /// The far tail of `standard` buckets: RATE:MS, a share RATE (0 to 1, or 1/N) of
    /// reads waits MS more; `off`: none. Default 1/5000:1500 (docs/lab.md).
    #[arg(long, value_name = "RATE:MS|off")]
    pub tail: Option<String>,
}

/// Why a network flag is refused; each names its flag.
#[derive(Debug, thiserror::Error)]
pub enum NetworkFlagError {
    /// `--tail`, in the lab's own words (they name the flag).
    #[error("{0}")]
    Tail(String),
    #[error("--nic-table {0}")]
    NicTable(lambda_nic::NicTableError),
    #[error("--nic: want a rate in MiB/s or `lambda`, got {given:?}")]
    NicRate { given: String },
    #[error("--nic-burst-mib and --nic-burst-mib-s: give both for a burst (--nic-burst-refill-mib-s refills one)")]
    BurstHalf,
    /// The NIC the flags make, refused by the lab.
    #[error("--nic: {0}")]
    Nic(crate::lab::nic::NicError),
    #[error("--nic lambda follows one memory size, got --lambda-memory-mb {sizes:?}: run once per size")]
    OneMemorySize { sizes: Vec<u32> },
}

impl NetworkArgs {
    /// The network these flags ask for at `memory_mb` (for `--nic lambda`), or every
    /// problem, each naming its flag.
    pub fn config(&self, memory_mb: Option<u32>) -> Result<NetworkConfig, Vec<String>> {
        let mut bad = Vec::new();
        let nic = self.nic(memory_mb).unwrap_or_else(|e| {
            bad.push(e.to_string());
            None
        });
        let prefix_gets_per_s = match self.prefix_rate.as_deref() {
            None => None,
            Some("s3") => Some(S3_GETS_PER_S),
            Some(v) => match v.parse::<f64>() {
                Ok(r) if r.is_finite() && r > 0.0 => Some(r),
                _ => {
                    bad.push(format!(
                        "--prefix-rate: want a positive number of GETs per second or `s3`, got {v:?}"
                    ));
                    None
                }
            },
        };
        let t = self.idle_timeout_s;
        let idle_timeout = if !(t.is_finite() && (0.0..=86_400.0).contains(&t)) {
            bad.push(format!("--idle-timeout-s: want 0 (never) to 86400 seconds, got {t}"));
            None
        } else {
            (t > 0.0).then(|| Duration::from_secs_f64(t))
        };
        if let Err(e) = self.tail() {
            bad.push(e.to_string());
        }
        if !bad.is_empty() {
            return Err(bad);
        }
        Ok(NetworkConfig {
            nic,
            prefix_gets_per_s,
            idle_timeout,
        })
    }

    /// `--tail`, checked (`None`: the profile's own far tail).
    pub(crate) fn tail(&self) -> Result<Option<Tail>, NetworkFlagError> {
        self.tail
            .as_deref()
            .map(str::parse)
            .transpose()
            .map_err(NetworkFlagError::Tail)
    }

    fn nic(&self, memory_mb: Option<u32>) -> Result<Option<NicConfig>, NetworkFlagError> {
        let Some(spec) = self.nic.as_deref() else {
            return Ok(None);
        };
        let mut config = if spec == "lambda" {
            let rate = match memory_mb {
                Some(mb) => NicTable::load(&self.nic_table)
                    .map_err(NetworkFlagError::NicTable)?
                    .rate_mib_s(mb),
                None => lambda_nic::sustained_mib_s(),
            };
            lambda_nic::nic(rate)
        } else {
            let rate = spec.parse::<f64>().map_err(|_| NetworkFlagError::NicRate {
                given: spec.to_string(),
            })?;
            NicConfig {
                rate_mib_s: rate,
                burst: None,
                per_connection_mib_s: None,
            }
        };
        let refill = self.nic_burst_refill_mib_s;
        config.burst = match (config.burst, self.nic_burst_mib, self.nic_burst_mib_s) {
            (_, Some(size_mib), Some(rate_mib_s)) => Some(Burst {
                size_mib,
                rate_mib_s,
                refill_mib_s: refill.unwrap_or(0.0),
            }),
            (Some(b), size, rate) => Some(Burst {
                size_mib: size.unwrap_or(b.size_mib),
                rate_mib_s: rate.unwrap_or(b.rate_mib_s),
                refill_mib_s: refill.unwrap_or(b.refill_mib_s),
            }),
            (None, None, None) if refill.is_none() => None,
            (None, _, _) => return Err(NetworkFlagError::BurstHalf),
        };
        config.per_connection_mib_s = self.nic_per_connection_mib_s;
        config.check().map_err(NetworkFlagError::Nic)?;
        Ok(Some(config))
    }

    /// The same flags for a child `serve`.
    pub fn serve_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        let mut flag = |name: &str, value: String| {
            args.push(format!("--{name}"));
            args.push(value);
        };
        if let Some(nic) = &self.nic {
            flag("nic", nic.clone());
            flag("nic-table", self.nic_table.clone());
        }
        for (name, value) in [
            ("nic-burst-mib", self.nic_burst_mib),
            ("nic-burst-mib-s", self.nic_burst_mib_s),
            ("nic-burst-refill-mib-s", self.nic_burst_refill_mib_s),
            ("nic-per-connection-mib-s", self.nic_per_connection_mib_s),
        ] {
            if let Some(v) = value {
                flag(name, v.to_string());
            }
        }
        if let Some(r) = &self.prefix_rate {
            flag("prefix-rate", r.clone());
        }
        flag("idle-timeout-s", self.idle_timeout_s.to_string());
        if let Some(t) = &self.tail {
            flag("tail", t.clone());
        }
        args
    }
}

/// The one memory size a `local --nic lambda` follows: none, or exactly one.
pub(crate) fn one_memory_size(args: &NetworkArgs, sizes: &[u32]) -> Result<Option<u32>, NetworkFlagError> {
    match sizes {
        [] => Ok(None),
        [one] => Ok(Some(*one)),
        _ if args.nic.as_deref() == Some("lambda") => Err(NetworkFlagError::OneMemorySize { sizes: sizes.to_vec() }),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> NetworkArgs {
        NetworkArgs {
            nic_table: "measured-2024".into(),
            idle_timeout_s: 20.0,
            ..NetworkArgs::default()
        }
    }

    #[test]
    fn defaults_are_no_nic_no_rate_and_20_s_idle() {
        let c = args().config(None).unwrap();
        assert_eq!(c, NetworkConfig::default());
    }

    #[test]
    fn lambda_follows_the_table_and_flags_override_it() {
        let a = NetworkArgs {
            nic: Some("lambda".into()),
            nic_table: "announced-2026".into(),
            nic_burst_mib: Some(8.0),
            ..args()
        };
        let nic = a.config(Some(10_240)).unwrap().nic.unwrap();
        assert!((nic.rate_mib_s - 357.63).abs() < 0.01, "{}", nic.rate_mib_s);
        let burst = nic.burst.unwrap();
        assert_eq!(burst.size_mib, 8.0);
        assert!((burst.rate_mib_s - 321.87).abs() < 0.01);
        // Several sizes cannot be followed by one server.
        assert!(matches!(
            one_memory_size(&a, &[512, 1024]),
            Err(NetworkFlagError::OneMemorySize { sizes }) if sizes == [512, 1024]
        ));
        assert!(matches!(one_memory_size(&args(), &[512, 1024]), Ok(None)));
    }

    #[test]
    fn every_bad_flag_is_named() {
        let a = NetworkArgs {
            nic: Some("fast".into()),
            prefix_rate: Some("-3".into()),
            idle_timeout_s: -1.0,
            tail: Some("often:10".into()),
            ..args()
        };
        let e = a.config(None).unwrap_err().join("; ");
        for flag in ["--nic:", "--prefix-rate", "--idle-timeout-s", "--tail"] {
            assert!(e.contains(flag), "{e}");
        }
        let half_burst = NetworkArgs {
            nic: Some("40".into()),
            nic_burst_mib: Some(8.0),
            ..args()
        };
        assert!(half_burst.config(None).unwrap_err()[0].contains("give both"));
    }

    #[test]
    fn a_burst_refills_only_when_asked() {
        let burst = |refill: Option<f64>| NetworkArgs {
            nic: Some("5".into()),
            nic_burst_mib: Some(10.0),
            nic_burst_mib_s: Some(20.0),
            nic_burst_refill_mib_s: refill,
            ..args()
        };
        let refilled = burst(Some(40.0));
        assert_eq!(
            refilled.config(None).unwrap().nic.unwrap().burst.unwrap().refill_mib_s,
            40.0
        );
        assert!(refilled.serve_args().join(" ").contains("--nic-burst-refill-mib-s 40"));
        assert_eq!(
            burst(None)
                .config(None)
                .unwrap()
                .nic
                .unwrap()
                .burst
                .unwrap()
                .refill_mib_s,
            0.0
        );
        assert!(burst(Some(-1.0)).config(None).unwrap_err()[0].contains("burst refill"));
        let lone = NetworkArgs {
            nic_burst_mib: None,
            nic_burst_mib_s: None,
            ..burst(Some(40.0))
        };
        assert!(lone.config(None).unwrap_err()[0].contains("give both"));
    }

    #[test]
    fn the_flags_reach_a_child_serve_unchanged() {
        let a = NetworkArgs {
            nic: Some("40".into()),
            nic_per_connection_mib_s: Some(5.0),
            tail: Some("1/50:1000".into()),
            prefix_rate: Some("s3".into()),
            idle_timeout_s: 2.5,
            ..args()
        };
        let argv = a.serve_args();
        let joined = argv.join(" ");
        assert!(joined.contains("--nic 40") && joined.contains("--nic-per-connection-mib-s 5"));
        assert!(joined.contains("--prefix-rate s3") && joined.contains("--idle-timeout-s 2.5"));
        assert!(joined.contains("--tail 1/50:1000"), "{joined}");
    }
}

//! A diagnosis's figures, typed: each figure's name is one of a closed set
//! ([`FigureName`], the JSON key) and its value carries its unit ([`Figure`]), which
//! decides how it is rounded when written. The JSON is a map of name to bare number,
//! as before; a figure read back takes the unit its name has.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::closed_set::closed_set;
use super::stats::{round3, sig4};

/// The unit of a figure: how it is rounded and read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FigureUnit {
    /// Milliseconds: three decimals (a microsecond).
    Ms,
    /// Objects per second: three decimals.
    ObjectsPerS,
    /// MiB per second: three decimals.
    MibPerS,
    /// MiB: three decimals.
    Mib,
    /// Client CPU milliseconds per GET: four significant digits.
    CpuMsPerGet,
    /// Cores (busy or usable): four significant digits.
    Cores,
    /// A ratio or a share: four significant digits.
    Ratio,
    /// Requests in flight on average: four significant digits.
    Requests,
    /// A count (responses, retries, workers, connections): a whole number.
    Count,
    /// Yes or no: written 1 or 0.
    Flag,
}

/// One figure a rule looked at, its unit in its type.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Figure {
    Ms(f64),
    ObjectsPerS(f64),
    MibPerS(f64),
    Mib(f64),
    CpuMsPerGet(f64),
    Cores(f64),
    Ratio(f64),
    Requests(f64),
    Count(u64),
    Flag(bool),
}

impl Figure {
    /// The figure's unit.
    pub fn unit(self) -> FigureUnit {
        match self {
            Figure::Ms(_) => FigureUnit::Ms,
            Figure::ObjectsPerS(_) => FigureUnit::ObjectsPerS,
            Figure::MibPerS(_) => FigureUnit::MibPerS,
            Figure::Mib(_) => FigureUnit::Mib,
            Figure::CpuMsPerGet(_) => FigureUnit::CpuMsPerGet,
            Figure::Cores(_) => FigureUnit::Cores,
            Figure::Ratio(_) => FigureUnit::Ratio,
            Figure::Requests(_) => FigureUnit::Requests,
            Figure::Count(_) => FigureUnit::Count,
            Figure::Flag(_) => FigureUnit::Flag,
        }
    }

    /// The number as the result document writes it: durations and rates to three
    /// decimals, CPU, cores, ratios and mean requests to four significant digits,
    /// counts whole, a flag 1 or 0.
    pub fn value(self) -> f64 {
        match self {
            Figure::Ms(x) | Figure::ObjectsPerS(x) | Figure::MibPerS(x) | Figure::Mib(x) => round3(x),
            Figure::CpuMsPerGet(x) | Figure::Cores(x) | Figure::Ratio(x) | Figure::Requests(x) => sig4(x),
            Figure::Count(n) => n as f64,
            Figure::Flag(b) => f64::from(u8::from(b)),
        }
    }

    /// The same figure with `f` applied to its number (counts and flags unchanged).
    pub fn map(self, f: impl Fn(f64) -> f64) -> Figure {
        match self {
            Figure::Count(_) | Figure::Flag(_) => self,
            _ => unit_figure(self.unit(), f(self.value_unrounded())),
        }
    }

    /// The number before rounding.
    fn value_unrounded(self) -> f64 {
        match self {
            Figure::Ms(x)
            | Figure::ObjectsPerS(x)
            | Figure::MibPerS(x)
            | Figure::Mib(x)
            | Figure::CpuMsPerGet(x)
            | Figure::Cores(x)
            | Figure::Ratio(x)
            | Figure::Requests(x) => x,
            Figure::Count(n) => n as f64,
            Figure::Flag(b) => f64::from(u8::from(b)),
        }
    }

    /// The same figure, rounded as it is written (so a diagnosis read back from its
    /// JSON equals the one written).
    pub fn rounded(self) -> Figure {
        unit_figure(self.unit(), self.value())
    }
}

/// A figure of `unit` from the number written.
fn unit_figure(unit: FigureUnit, x: f64) -> Figure {
    match unit {
        FigureUnit::Ms => Figure::Ms(x),
        FigureUnit::ObjectsPerS => Figure::ObjectsPerS(x),
        FigureUnit::MibPerS => Figure::MibPerS(x),
        FigureUnit::Mib => Figure::Mib(x),
        FigureUnit::CpuMsPerGet => Figure::CpuMsPerGet(x),
        FigureUnit::Cores => Figure::Cores(x),
        FigureUnit::Ratio => Figure::Ratio(x),
        FigureUnit::Requests => Figure::Requests(x),
        FigureUnit::Count => Figure::Count(x.max(0.0).round() as u64),
        FigureUnit::Flag => Figure::Flag(x != 0.0),
    }
}

closed_set! {
    /// The name of a figure (its JSON key), and through it the figure's unit.
    pub enum FigureName {
        BandwidthCeilingMibPerS = "bandwidth_ceiling_mib_per_s",
        BandwidthCeilingLowMibPerS = "bandwidth_ceiling_low_mib_per_s",
        BandwidthCeilingHighMibPerS = "bandwidth_ceiling_high_mib_per_s",
        BodyMsP50 = "body_ms_p50",
        BodyMsP50AtFewestWorkers = "body_ms_p50_at_fewest_workers",
        BurstMib = "burst_mib",
        BurstMibPerS = "burst_mib_per_s",
        ClientCores = "client_cores",
        CoresBusy = "cores_busy",
        CpuMsPerGet = "cpu_ms_per_get",
        ErrorShare = "error_share",
        Errors = "errors",
        FewerWorkers = "fewer_workers",
        LeanCpuMsPerGet = "lean_cpu_ms_per_get",
        LeanObjectsPerS = "lean_objects_per_s",
        LeanSpeedup = "lean_speedup",
        MachineBusyShare = "machine_busy_share",
        MachineCores = "machine_cores",
        MachineCoresBusy = "machine_cores_busy",
        MeanInFlight = "mean_in_flight",
        MibPerS = "mib_per_s",
        ObjectsPerS = "objects_per_s",
        ObjectsPerSAtFewerWorkers = "objects_per_s_at_fewer_workers",
        PoolConnections = "pool_connections",
        PoolWaitMsMean = "pool_wait_ms_mean",
        PoolWaitShare = "pool_wait_share",
        Retries = "retries",
        RetriesAfterThrottling = "retries_after_throttling",
        RuntimeBusyRatio = "runtime_busy_ratio",
        SettledMibPerS = "settled_mib_per_s",
        SlowStartMs = "slow_start_ms",
        SlowStartRateShare = "slow_start_rate_share",
        StallAtMs = "stall_at_ms",
        StallMs = "stall_ms",
        StragglersLast1PctShare = "stragglers_last_1pct_share",
        StragglersLast5PctShare = "stragglers_last_5pct_share",
        ThrottlingAtMs = "throttling_at_ms",
        SdkCoresForLeanRate = "sdk_cores_for_lean_rate",
        SdkExtraCpuMsPerGet = "sdk_extra_cpu_ms_per_get",
        Starved = "starved",
        ThrottledRequests = "throttled_requests",
        ThrottledResponses = "throttled_responses",
        ThrottledShare = "throttled_share",
        TtlbMsMean = "ttlb_ms_mean",
        TtlbMsP50LowestOfBucket = "ttlb_ms_p50_lowest_of_bucket",
        Workers = "workers",
    }
}

impl FigureName {
    /// The unit of the figure of this name.
    pub fn unit(self) -> FigureUnit {
        use FigureName as N;
        match self {
            N::PoolWaitMsMean | N::TtlbMsMean | N::TtlbMsP50LowestOfBucket => FigureUnit::Ms,
            N::BodyMsP50 | N::BodyMsP50AtFewestWorkers => FigureUnit::Ms,
            N::SlowStartMs | N::StallAtMs | N::StallMs | N::ThrottlingAtMs => FigureUnit::Ms,
            N::BurstMib => FigureUnit::Mib,
            N::BurstMibPerS | N::SettledMibPerS => FigureUnit::MibPerS,
            N::SlowStartRateShare | N::StragglersLast1PctShare | N::StragglersLast5PctShare => FigureUnit::Ratio,
            N::LeanObjectsPerS | N::ObjectsPerS | N::ObjectsPerSAtFewerWorkers => FigureUnit::ObjectsPerS,
            N::BandwidthCeilingMibPerS | N::MibPerS => FigureUnit::MibPerS,
            N::BandwidthCeilingLowMibPerS | N::BandwidthCeilingHighMibPerS => FigureUnit::MibPerS,
            N::CpuMsPerGet | N::LeanCpuMsPerGet | N::SdkExtraCpuMsPerGet => FigureUnit::CpuMsPerGet,
            N::ClientCores | N::CoresBusy | N::MachineCores | N::MachineCoresBusy | N::SdkCoresForLeanRate => {
                FigureUnit::Cores
            }
            N::ErrorShare | N::LeanSpeedup | N::MachineBusyShare | N::PoolWaitShare | N::RuntimeBusyRatio => {
                FigureUnit::Ratio
            }
            N::ThrottledShare => FigureUnit::Ratio,
            N::MeanInFlight => FigureUnit::Requests,
            N::Errors
            | N::FewerWorkers
            | N::PoolConnections
            | N::Retries
            | N::RetriesAfterThrottling
            | N::ThrottledRequests
            | N::ThrottledResponses
            | N::Workers => FigureUnit::Count,
            N::Starved => FigureUnit::Flag,
        }
    }
}

/// Figures are kept (and written) in the order of their names.
impl PartialOrd for FigureName {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for FigureName {
    fn cmp(&self, other: &Self) -> Ordering {
        self.name().cmp(other.name())
    }
}

/// A diagnosis's figures by name; written as a map of name to number.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Figures(BTreeMap<FigureName, Figure>);

impl Figures {
    /// Sets a figure, rounded as the result document writes it. The figure must have
    /// its name's unit.
    pub fn set(&mut self, name: FigureName, figure: Figure) {
        debug_assert_eq!(figure.unit(), name.unit(), "{name}");
        self.0.insert(name, figure.rounded());
    }

    /// The figure of `name`, if the rule looked at it.
    pub fn get(&self, name: FigureName) -> Option<Figure> {
        self.0.get(&name).copied()
    }

    /// The number written for `name`, if the rule looked at it.
    pub fn value(&self, name: FigureName) -> Option<f64> {
        self.get(name).map(Figure::value)
    }

    /// Every figure, in the order of their names.
    pub fn iter(&self) -> impl Iterator<Item = (FigureName, Figure)> + '_ {
        self.0.iter().map(|(n, f)| (*n, *f))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::ops::Index<FigureName> for Figures {
    type Output = Figure;
    fn index(&self, name: FigureName) -> &Figure {
        &self.0[&name]
    }
}

impl Serialize for Figures {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(n, f)| (n, f.value())))
    }
}

impl<'de> Deserialize<'de> for Figures {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = BTreeMap::<FigureName, f64>::deserialize(d)?;
        let mut out = BTreeMap::new();
        for (name, x) in raw {
            if !x.is_finite() {
                return Err(D::Error::custom(format!("figure {name} is not a number")));
            }
            out.insert(name, unit_figure(name.unit(), x));
        }
        Ok(Figures(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_unit_rounds_as_written_and_reads_back_equal() {
        let mut figures = Figures::default();
        figures.set(FigureName::TtlbMsMean, Figure::Ms(13.144_49));
        figures.set(FigureName::ObjectsPerS, Figure::ObjectsPerS(1_234.567_89));
        figures.set(FigureName::CoresBusy, Figure::Cores(1.234_567_8));
        figures.set(FigureName::PoolWaitShare, Figure::Ratio(0.666_666));
        figures.set(FigureName::Retries, Figure::Count(123_457));
        figures.set(FigureName::Starved, Figure::Flag(true));
        let text = serde_json::to_string(&figures).unwrap();
        assert_eq!(
            text,
            r#"{"cores_busy":1.235,"objects_per_s":1234.568,"pool_wait_share":0.6667,"retries":123457.0,"starved":1.0,"ttlb_ms_mean":13.144}"#
        );
        let back: Figures = serde_json::from_str(&text).unwrap();
        assert_eq!(back, figures);
        assert_eq!(back[FigureName::Starved], Figure::Flag(true));
        assert_eq!(back.value(FigureName::Retries), Some(123_457.0));
        let off: Figures = serde_json::from_str(r#"{"starved":0.0}"#).unwrap();
        assert_eq!(off.get(FigureName::Starved), Some(Figure::Flag(false)));
    }

    #[test]
    fn figures_are_kept_in_the_order_of_their_names() {
        let mut names: Vec<FigureName> = FigureName::ALL.to_vec();
        names.sort();
        let sorted: Vec<&str> = names.iter().map(|n| n.name()).collect();
        let mut by_text = sorted.clone();
        by_text.sort_unstable();
        assert_eq!(sorted, by_text);
    }

    #[test]
    fn an_unknown_figure_name_is_refused() {
        let err = serde_json::from_str::<Figures>(r#"{"warp_factor":9.0}"#).unwrap_err();
        assert!(err.to_string().contains("warp_factor"), "{err}");
    }
}

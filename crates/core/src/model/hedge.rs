//! The hedge policy of a configuration (request `hedge`, a row's `hedge`): when a GET
//! that has no first byte yet gets a second copy. In JSON a policy is `"off"`,
//! `"pNN"` (after the running NN-th percentile of the first-byte times this
//! configuration has seen, once it has seen a warm-up's worth) or `{"after_ms": N}`
//! (after a fixed delay); on the command line `off`, `pNN`, `Nms`. docs/hedging.md
//! says what hedging is and what it costs.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The percentiles `pNN` may name.
pub(crate) const HEDGE_PERCENTILES: std::ops::RangeInclusive<u8> = 50..=99;
/// The fixed delays `after_ms` may give, ms.
pub(crate) const HEDGE_AFTER_MS: std::ops::RangeInclusive<u32> = 1..=600_000;

/// When a GET without a first byte gets its one hedge. Ordered as declared (off
/// first), then by the percentile or the delay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Hedge {
    /// Never (the default, not written in a row).
    #[default]
    Off,
    /// After the running percentile (50 to 99) of this configuration's first-byte
    /// times.
    Percentile(u8),
    /// After a fixed delay, ms.
    AfterMs(u32),
}

impl Hedge {
    /// For `skip_serializing_if`: the default is not written.
    pub fn is_off(&self) -> bool {
        *self == Hedge::Off
    }

    /// What is wrong with the policy's value, if anything.
    pub fn problem(&self) -> Option<String> {
        match *self {
            Hedge::Off => None,
            Hedge::Percentile(p) if !HEDGE_PERCENTILES.contains(&p) => Some(format!(
                "the percentile must be p{} to p{}, got p{p}",
                HEDGE_PERCENTILES.start(),
                HEDGE_PERCENTILES.end()
            )),
            Hedge::AfterMs(ms) if !HEDGE_AFTER_MS.contains(&ms) => Some(format!(
                "after_ms must be {} to {}, got {ms}",
                HEDGE_AFTER_MS.start(),
                HEDGE_AFTER_MS.end()
            )),
            _ => None,
        }
    }
}

impl fmt::Display for Hedge {
    /// `off`, `p95`, `40ms`: the command line's spelling, used in labels.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Hedge::Off => f.write_str("off"),
            Hedge::Percentile(p) => write!(f, "p{p}"),
            Hedge::AfterMs(ms) => write!(f, "{ms}ms"),
        }
    }
}

impl FromStr for Hedge {
    type Err = String;
    /// `off`, `pNN` or `Nms` (the command line's `--hedge`); the range is checked by
    /// [`Hedge::problem`].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("want off, pNN (p50 to p99) or a delay like 40ms, got {s:?}");
        if s == "off" {
            Ok(Hedge::Off)
        } else if let Some(p) = s.strip_prefix('p') {
            p.parse().map(Hedge::Percentile).map_err(|_| bad())
        } else if let Some(ms) = s.strip_suffix("ms") {
            ms.parse().map(Hedge::AfterMs).map_err(|_| bad())
        } else {
            Err(bad())
        }
    }
}

/// What hedging did in one configuration (a row's `hedging`, absent when its policy
/// is `off`). A hedge is not a retry and a losing one is not an error.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HedgeCounts {
    /// Second copies sent (at most one per GET, within the budget).
    pub hedges_sent: u64,
    /// GETs whose hedge finished first (its body was the one counted).
    pub hedges_won: u64,
    /// Body bytes the losing copies had received when they were cancelled.
    pub hedge_discarded_bytes: u64,
    /// GETs a hedge was due for that the budget (`max_hedge_percent`) refused, at
    /// least once (a refused GET asks again while it waits).
    pub hedges_refused: u64,
}

impl HedgeCounts {
    /// The counts of two rows together (a fan-out's children).
    pub fn add(&mut self, other: &HedgeCounts) {
        self.hedges_sent += other.hedges_sent;
        self.hedges_won += other.hedges_won;
        self.hedge_discarded_bytes += other.hedge_discarded_bytes;
        self.hedges_refused += other.hedges_refused;
    }
}

/// A policy's JSON: a name, or the fixed delay's object.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum HedgeJson {
    Name(String),
    After(AfterMs),
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AfterMs {
    after_ms: u32,
}

impl Serialize for Hedge {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match *self {
            Hedge::AfterMs(after_ms) => HedgeJson::After(AfterMs { after_ms }),
            other => HedgeJson::Name(other.to_string()),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Hedge {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match HedgeJson::deserialize(deserializer)? {
            HedgeJson::After(a) => Ok(Hedge::AfterMs(a.after_ms)),
            HedgeJson::Name(n) if n.ends_with("ms") => Err(serde::de::Error::custom(format!(
                "a fixed delay is written {{\"after_ms\": N}}, not {n:?}"
            ))),
            HedgeJson::Name(n) => n.parse().map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_order_off_first_then_percentiles_then_delays() {
        let mut v = vec![
            Hedge::AfterMs(5),
            Hedge::Percentile(99),
            Hedge::Off,
            Hedge::AfterMs(1),
            Hedge::Percentile(50),
        ];
        v.sort();
        assert_eq!(
            v,
            vec![
                Hedge::Off,
                Hedge::Percentile(50),
                Hedge::Percentile(99),
                Hedge::AfterMs(1),
                Hedge::AfterMs(5)
            ]
        );
    }

    #[test]
    fn policies_round_trip_in_json_and_on_the_command_line() {
        for (h, json, cli) in [
            (Hedge::Off, r#""off""#, "off"),
            (Hedge::Percentile(95), r#""p95""#, "p95"),
            (Hedge::AfterMs(40), r#"{"after_ms":40}"#, "40ms"),
        ] {
            assert_eq!(serde_json::to_string(&h).unwrap(), json);
            assert_eq!(serde_json::from_str::<Hedge>(json).unwrap(), h);
            assert_eq!(cli.parse::<Hedge>().unwrap(), h);
            assert_eq!(h.to_string(), cli);
        }
    }

    #[test]
    fn bad_policies_are_refused() {
        for bad in [r#""p""#, r#""sometimes""#, r#""40ms""#, r#"{"after":3}"#, "3"] {
            assert!(serde_json::from_str::<Hedge>(bad).is_err(), "{bad}");
        }
        assert!(Hedge::Percentile(100).problem().unwrap().contains("p50 to p99"));
        assert!(Hedge::AfterMs(0).problem().unwrap().contains("after_ms"));
        assert_eq!(Hedge::Percentile(95).problem(), None);
        assert!("fast".parse::<Hedge>().unwrap_err().contains("pNN"));
    }
}

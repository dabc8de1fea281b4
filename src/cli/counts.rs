//! Counts capped where they are parsed (clap value parsers): a count past what the
//! machine or the runtime can hold is a clear usage error naming the flag, not a panic
//! deep inside tokio ("more than MAX_PERMITS" for `seed --concurrency
//! 18446744073709551615`) or a thread spawn that never ends.

/// Most PUTs `seed` keeps in flight.
pub(crate) const MAX_SEED_CONCURRENCY: usize = 1024;
/// Most worker threads of the async runtime (checked with the other global flags,
/// so every bad one is named together).
pub(crate) const MAX_RUNTIME_THREADS: usize = 1024;
/// Most connections the lab serves at once (a process's file descriptors are fewer).
pub(crate) const MAX_LAB_CONNECTIONS: usize = 1 << 20;

/// Most of anything counted (objects, workers, pool, repetitions, batch, limit):
/// far above every plan's own cap, far below an overflow.
pub(crate) const MAX_COUNT: u64 = 100_000_000;
/// Longest time in milliseconds a flag takes: a day.
pub(crate) const MAX_MS: u64 = 86_400_000;
/// Longest time in seconds a flag takes: a year.
pub(crate) const MAX_S: u64 = 31_536_000;
/// Largest size in bytes a flag takes: 1 TiB.
pub(crate) const MAX_BYTES: u64 = 1 << 40;
/// Largest size in MiB (or memory in MB) a flag takes: 1 TiB.
pub(crate) const MAX_MIB: u64 = 1 << 20;
/// Largest rate (MiB/s) or CPU quota a flag takes.
pub(crate) const MAX_RATE: f64 = 1e9;

/// Why a flag's number is refused (clap shows it after the flag and the value).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum CountError {
    #[error("must be a whole number from {low} to {high}, got {text:?}")]
    NotWhole { low: u64, high: u64, text: String },
    #[error("must be from {low} to {high}, got {got}")]
    OutOfRange { low: u64, high: u64, got: u128 },
    #[error("must be a number from -{MAX_RATE} to {MAX_RATE}, got {text:?}")]
    NotRate { text: String },
}

/// `text` as a whole number from `low` to `high`.
fn number_in(text: &str, low: u64, high: u64) -> Result<u64, CountError> {
    let got: u128 = text.trim().parse().map_err(|_| CountError::NotWhole {
        low,
        high,
        text: text.to_string(),
    })?;
    match u64::try_from(got) {
        Ok(n) if (low..=high).contains(&n) => Ok(n),
        _ => Err(CountError::OutOfRange { low, high, got }),
    }
}

/// A count (`--objects`, `--workers`, `--pool`, `--repetitions`, `--count`): 0 to
/// [`MAX_COUNT`] (the plan names what it refuses below that).
pub(crate) fn count(text: &str) -> Result<u32, CountError> {
    number_in(text, 0, MAX_COUNT).map(|n| n as u32)
}

/// A count held as `usize` (`--batch`, `--limit`): 0 to [`MAX_COUNT`].
pub(crate) fn count_usize(text: &str) -> Result<usize, CountError> {
    number_in(text, 0, MAX_COUNT).map(|n| n as usize)
}

/// Milliseconds: 0 to [`MAX_MS`].
pub(crate) fn ms(text: &str) -> Result<u64, CountError> {
    number_in(text, 0, MAX_MS)
}

/// Seconds: 0 to [`MAX_S`].
pub(crate) fn seconds(text: &str) -> Result<u64, CountError> {
    number_in(text, 0, MAX_S)
}

/// Bytes: 0 to [`MAX_BYTES`].
pub(crate) fn bytes(text: &str) -> Result<u64, CountError> {
    number_in(text, 0, MAX_BYTES)
}

/// MiB: 0 to [`MAX_MIB`].
pub(crate) fn mib(text: &str) -> Result<u64, CountError> {
    number_in(text, 0, MAX_MIB)
}

/// Memory in MB: 0 to [`MAX_MIB`].
pub(crate) fn memory_mb(text: &str) -> Result<u32, CountError> {
    number_in(text, 0, MAX_MIB).map(|n| n as u32)
}

/// A percentage: 0 to 100.
pub(crate) fn percent(text: &str) -> Result<u32, CountError> {
    number_in(text, 0, 100).map(|n| n as u32)
}

/// A rate in MiB/s or a CPU quota: a finite number at most [`MAX_RATE`] in size (its
/// sign is checked after parsing, with the other flags, so every bad one is named).
pub(crate) fn rate(text: &str) -> Result<f64, CountError> {
    match text.trim().parse::<f64>() {
        Ok(r) if r.is_finite() && r.abs() <= MAX_RATE => Ok(r),
        _ => Err(CountError::NotRate { text: text.to_string() }),
    }
}

/// `text` as a count from `low` to `high`.
fn count_in(text: &str, low: usize, high: usize) -> Result<usize, CountError> {
    number_in(text, low as u64, high as u64).map(|n| n as usize)
}

/// `seed --concurrency`: 1 to [`MAX_SEED_CONCURRENCY`].
pub(crate) fn seed_concurrency(text: &str) -> Result<usize, CountError> {
    count_in(text, 1, MAX_SEED_CONCURRENCY)
}

/// `serve --max-connections`: 1 to [`MAX_LAB_CONNECTIONS`].
pub(crate) fn lab_connections(text: &str) -> Result<usize, CountError> {
    count_in(text, 1, MAX_LAB_CONNECTIONS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_past_their_cap_are_errors_not_panics() {
        assert_eq!(seed_concurrency("64"), Ok(64));
        for bad in [
            "0",
            "1025",
            "18446744073709551615",
            "999999999999999999999999999999",
            "-1",
            "x",
        ] {
            assert!(seed_concurrency(bad).is_err(), "{bad}");
        }
        assert!(lab_connections("0").is_err() && lab_connections("4096").is_ok());
        assert_eq!(count("1024"), Ok(1024));
        assert!(count("4294967296").is_err() && count("100000001").is_err());
        assert!(ms("86400001").is_err() && ms("18446744073709551615").is_err());
        assert!(bytes("1099511627777").is_err() && mib("17592186044416").is_err());
        assert!(memory_mb("4294967296").is_err() && percent("101").is_err());
        for bad in ["inf", "NaN", "-1e10", "1e300"] {
            assert!(rate(bad).is_err(), "{bad}");
        }
        assert_eq!(rate("2.5"), Ok(2.5));
    }
}

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

/// `text` as a count from `low` to `high`.
fn count_in(text: &str, low: usize, high: usize) -> Result<usize, String> {
    let n: u128 = text
        .trim()
        .parse()
        .map_err(|_| format!("must be a whole number from {low} to {high}, got {text:?}"))?;
    match usize::try_from(n) {
        Ok(n) if (low..=high).contains(&n) => Ok(n),
        _ => Err(format!("must be from {low} to {high}, got {n}")),
    }
}

/// `seed --concurrency`: 1 to [`MAX_SEED_CONCURRENCY`].
pub(crate) fn seed_concurrency(text: &str) -> Result<usize, String> {
    count_in(text, 1, MAX_SEED_CONCURRENCY)
}

/// `serve --max-connections`: 1 to [`MAX_LAB_CONNECTIONS`].
pub(crate) fn lab_connections(text: &str) -> Result<usize, String> {
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
    }
}

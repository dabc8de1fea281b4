//! The machine and the process: CPU time, peak memory, vCPUs and memory
//! ([`usage`]), the interfaces' receive counters ([`netdev`]), the file-descriptor
//! budget ([`limits`]), files written whole or not at all and read up to a cap
//! ([`files`]), secrets kept out of logs ([`redact`]), text from outside shown, never
//! obeyed, by a terminal or a browser ([`visible`]), and the wall clock as Unix
//! milliseconds ([`now_unix_ms`]). Imports nothing from the crate.

pub mod cpu;
pub mod files;
pub mod limits;
pub(crate) mod netdev;
pub mod quota;
pub mod redact;
pub mod usage;
pub mod visible;

/// The wall clock, ms since the Unix epoch (0 if the clock is before it).
pub fn now_unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

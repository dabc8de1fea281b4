//! The machine and the process: CPU time, peak memory, vCPUs and memory
//! ([`usage`]), the interfaces' receive counters ([`netdev`]), the file-descriptor
//! budget ([`limits`]), files written whole or not at all and read up to a cap
//! ([`files`]), and secrets kept out of logs ([`redact`]). Imports nothing from the crate.

pub(crate) mod cpu;
pub(crate) mod files;
pub mod limits;
pub(crate) mod netdev;
pub(crate) mod quota;
pub mod redact;
pub mod usage;

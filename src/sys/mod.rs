//! The machine and the process: CPU time, peak memory, vCPUs and memory
//! ([`usage`]), the interfaces' receive counters ([`netdev`]), and the file-descriptor
//! budget ([`limits`]). Imports nothing from the crate.

pub mod cpu;
pub mod limits;
pub mod netdev;
pub mod quota;
pub mod usage;

//! The machine and the process: CPU time, peak memory, vCPUs and memory
//! ([`usage`]), and the file-descriptor budget ([`limits`]). Imports nothing from the
//! crate.

pub mod cpu;
pub mod limits;
pub mod quota;
pub mod usage;

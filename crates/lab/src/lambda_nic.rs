//! The `lambda` NIC: published figures for a Lambda function's network, as
//! assumptions a user can override (docs/network.md gives them with their sources and
//! dates). Sustained: about 600 Mbit/s (75 MB/s) at every memory size (iperf3 from
//! Lambda, June 2024); a one-time burst to about 2.7 Gbit/s that was over within the
//! first one-second interval, taken here as one second's worth; no per-connection
//! cap (the measurements used one TCP connection and got the full rate).
//!
//! [`NicTable`] maps memory to the sustained rate, interpolating linearly between
//! rows: the built-in `measured-2024` (flat, as measured) and `announced-2026` (the
//! reported, unverified scaling with memory from 2 GB), or a file of `MEMORY_MB
//! RATE_MIB_S` lines.

use std::path::Path;

use super::nic::{Burst, NicConfig};
use crate::sys::files::{read_capped_text, FileError};

/// Most bytes of a NIC table file read: a line per memory size is a few hundred.
const MAX_TABLE_BYTES: u64 = 1 << 20;

/// Why a NIC table could not be had.
#[derive(Debug, thiserror::Error)]
pub enum NicTableError {
    #[error("{file}: {source} (give a file of `MEMORY_MB RATE_MIB_S` lines, or one of {TABLE_NAMES:?})")]
    Read { file: String, source: FileError },
    #[error("{file}: {lines}")]
    Lines { file: String, lines: BadLines },
}

/// A line of a NIC table file that is not a row, with its number (from 1) and text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadLine {
    #[error("line {line}: want a memory size in MB and a positive rate in MiB/s, got {text:?}")]
    Values { line: usize, text: String },
    #[error("line {line}: want two fields, MEMORY_MB RATE_MIB_S, got {text:?}")]
    Fields { line: usize, text: String },
    #[error("no rows")]
    NoRows,
}

/// Every bad line of a NIC table file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", crate::each_named(&.0))]
pub struct BadLines(pub Vec<BadLine>);

/// Mbit/s in MiB/s.
fn mbit_s(mbit: f64) -> f64 {
    mbit * 1e6 / 8.0 / (1024.0 * 1024.0)
}

/// Sustained rate measured from Lambda: 600 Mbit/s (71.5 MiB/s).
pub fn sustained_mib_s() -> f64 {
    mbit_s(600.0)
}

/// The burst measured from Lambda: 2.7 Gbit/s (321.9 MiB/s) for at most a second,
/// taken as a full second.
pub(crate) fn burst() -> Burst {
    let rate = mbit_s(2_700.0);
    Burst {
        size_mib: rate,
        rate_mib_s: rate,
        refill_mib_s: 0.0,
    }
}

/// The `lambda` NIC at `rate_mib_s` sustained.
pub fn nic(rate_mib_s: f64) -> NicConfig {
    NicConfig {
        rate_mib_s,
        burst: Some(burst()),
        per_connection_mib_s: None,
    }
}

/// A table of sustained rate by memory size.
#[derive(Debug, Clone, PartialEq)]
pub struct NicTable {
    /// `(memory_mb, rate_mib_s)`, by memory ascending.
    rows: Vec<(u32, f64)>,
}

/// The built-in tables' names.
pub(crate) const TABLE_NAMES: [&str; 2] = ["measured-2024", "announced-2026"];

impl NicTable {
    /// What iperf3 measured from Lambda in June 2024 (128 to 3,008 MB; 10 GB in a
    /// July 2024 follow-up): about 600 Mbit/s whatever the memory.
    pub(crate) fn measured_2024() -> Self {
        NicTable {
            rows: vec![(128, mbit_s(600.0)), (10_240, mbit_s(600.0))],
        }
    }

    /// Reported, not verified: from 2 GB outside a VPC, about 625 Mbit/s at 2 GB up
    /// to about 3,000 Mbit/s at 10 GB; 600 Mbit/s below 2 GB as measured.
    pub(crate) fn announced_2026() -> Self {
        NicTable {
            rows: vec![
                (128, mbit_s(600.0)),
                (2_047, mbit_s(600.0)),
                (2_048, mbit_s(625.0)),
                (10_240, mbit_s(3_000.0)),
            ],
        }
    }

    /// A built-in table by name, or a file of `MEMORY_MB RATE_MIB_S` lines (blank
    /// lines and `#` comments skipped; commas or spaces between the two).
    pub fn load(name_or_file: &str) -> Result<Self, NicTableError> {
        match name_or_file {
            "measured-2024" => Ok(Self::measured_2024()),
            "announced-2026" => Ok(Self::announced_2026()),
            file => {
                let text = read_capped_text(Path::new(file), MAX_TABLE_BYTES, "a NIC table").map_err(|source| {
                    NicTableError::Read {
                        file: file.to_string(),
                        source,
                    }
                })?;
                Self::parse(&text).map_err(|lines| NicTableError::Lines {
                    file: file.to_string(),
                    lines,
                })
            }
        }
    }

    /// Parses `MEMORY_MB RATE_MIB_S` lines, naming every bad line.
    pub(crate) fn parse(text: &str) -> Result<Self, BadLines> {
        let mut rows = Vec::new();
        let mut bad = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let fields: Vec<&str> = line
                .split(|c: char| c == ',' || c.is_whitespace())
                .filter(|f| !f.is_empty())
                .collect();
            match fields.as_slice() {
                [mb, rate] => match (mb.parse::<u32>(), rate.parse::<f64>()) {
                    (Ok(mb), Ok(rate)) if rate.is_finite() && rate > 0.0 => rows.push((mb, rate)),
                    _ => bad.push(BadLine::Values {
                        line: i + 1,
                        text: line.to_string(),
                    }),
                },
                _ => bad.push(BadLine::Fields {
                    line: i + 1,
                    text: line.to_string(),
                }),
            }
        }
        if rows.is_empty() && bad.is_empty() {
            bad.push(BadLine::NoRows);
        }
        if !bad.is_empty() {
            return Err(BadLines(bad));
        }
        rows.sort_by_key(|r| r.0);
        Ok(NicTable { rows })
    }

    /// The sustained rate at `memory_mb`: linear between rows, the end rows' rate
    /// outside them.
    pub fn rate_mib_s(&self, memory_mb: u32) -> f64 {
        let rows = &self.rows;
        let first = rows[0];
        let last = rows[rows.len() - 1];
        if memory_mb <= first.0 {
            return first.1;
        }
        if memory_mb >= last.0 {
            return last.1;
        }
        let i = rows.iter().position(|r| r.0 >= memory_mb).unwrap_or(rows.len() - 1);
        let (lo, hi) = (rows[i - 1], rows[i]);
        let t = f64::from(memory_mb - lo.0) / f64::from(hi.0 - lo.0);
        lo.1 + t * (hi.1 - lo.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_figures_convert_as_documented() {
        assert!((sustained_mib_s() - 71.53).abs() < 0.01);
        assert!((burst().rate_mib_s - 321.87).abs() < 0.01);
    }

    #[test]
    fn tables_interpolate_and_clamp() {
        let t = NicTable::announced_2026();
        assert!((t.rate_mib_s(1024) - mbit_s(600.0)).abs() < 1e-9);
        assert!((t.rate_mib_s(10_240) - mbit_s(3_000.0)).abs() < 1e-9);
        assert!((t.rate_mib_s(20_000) - mbit_s(3_000.0)).abs() < 1e-9);
        let mid = t.rate_mib_s(6_144);
        assert!((mid - mbit_s(1_812.5)).abs() < 0.01, "{mid}");
        assert_eq!(NicTable::measured_2024().rate_mib_s(4096), sustained_mib_s());
    }

    #[test]
    fn a_table_file_parses_and_bad_lines_are_all_named() {
        let t = NicTable::parse("# mine\n1024 10\n2048,20\n\n").unwrap();
        assert_eq!(t.rate_mib_s(1536), 15.0);
        let e = NicTable::parse("1024\nx 3\n512 -1\n").unwrap_err();
        let lines: Vec<usize> =
            e.0.iter()
                .map(|b| match b {
                    BadLine::Values { line, .. } | BadLine::Fields { line, .. } => *line,
                    BadLine::NoRows => 0,
                })
                .collect();
        assert_eq!(lines, [1, 2, 3], "{e}");
        assert!(matches!(e.0[0], BadLine::Fields { .. }) && matches!(e.0[2], BadLine::Values { .. }));
        assert_eq!(NicTable::parse("# nothing\n").unwrap_err().0, [BadLine::NoRows]);
        assert!(NicTable::load("/nonexistent/table")
            .unwrap_err()
            .to_string()
            .contains("measured-2024"));
    }
}

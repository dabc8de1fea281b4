//! The result table's columns as a closed set: each one's header, its `--columns`
//! name, and which of them a narrow table keeps first (the ones a reader needs to
//! follow the verdict, then the rest by how often a verdict's sentence cites them).

use std::fmt;

/// One column of a bucket's result table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Column {
    MemoryMb,
    Client,
    Workers,
    Rep,
    WallMs,
    ObjectsPerS,
    MibPerS,
    TtfbP50Ms,
    TtfbP99Ms,
    PoolWaitP50Ms,
    CpuMsPerGet,
    Conns,
    TlsP50Ms,
    Sessions,
    InFlight,
    Errors,
    WireMibPerS,
    Verdict,
    BytesRead,
    ObjectBytes,
}

impl Column {
    /// Every column in the order a table shows them.
    pub const ALL: [Column; 20] = [
        Column::MemoryMb,
        Column::Client,
        Column::Workers,
        Column::Rep,
        Column::WallMs,
        Column::ObjectsPerS,
        Column::MibPerS,
        Column::TtfbP50Ms,
        Column::TtfbP99Ms,
        Column::PoolWaitP50Ms,
        Column::CpuMsPerGet,
        Column::Conns,
        Column::TlsP50Ms,
        Column::Sessions,
        Column::InFlight,
        Column::Errors,
        Column::WireMibPerS,
        Column::Verdict,
        Column::BytesRead,
        Column::ObjectBytes,
    ];

    /// The columns a fitted table always keeps (when the table has them): which
    /// configuration (and repetition), how fast, and the verdict.
    pub(crate) const ESSENTIAL: [Column; 7] = [
        Column::MemoryMb,
        Column::Client,
        Column::Workers,
        Column::Rep,
        Column::WallMs,
        Column::ObjectsPerS,
        Column::Verdict,
    ];

    /// The other columns in the order a fitted table adds them while they fit: first
    /// the CPU per GET, the headline that carries over to AWS
    /// (docs/getting-started.md), so it is never the first left out; then the
    /// figures the verdicts' sentences cite first.
    pub(crate) const BY_PRIORITY: [Column; 13] = [
        Column::CpuMsPerGet,
        Column::MibPerS,
        Column::TtfbP50Ms,
        Column::InFlight,
        Column::Errors,
        Column::TtfbP99Ms,
        Column::WireMibPerS,
        Column::Conns,
        Column::TlsP50Ms,
        Column::PoolWaitP50Ms,
        Column::Sessions,
        Column::BytesRead,
        Column::ObjectBytes,
    ];

    /// The header cell.
    pub fn header(self) -> &'static str {
        match self {
            Column::MemoryMb => "memory MB",
            Column::Client => "client",
            Column::Workers => "workers",
            Column::Rep => "rep",
            Column::WallMs => "wall ms",
            Column::ObjectsPerS => "objects/s",
            Column::MibPerS => "MiB/s",
            Column::TtfbP50Ms => "ttfb p50 ms",
            Column::TtfbP99Ms => "ttfb p99 ms",
            Column::PoolWaitP50Ms => "pool wait p50 ms",
            Column::CpuMsPerGet => "cpu ms/GET",
            Column::Conns => "conns",
            Column::TlsP50Ms => "tls p50 ms",
            Column::Sessions => "sessions",
            Column::InFlight => "in flight",
            Column::Errors => "errors",
            Column::WireMibPerS => "wire MiB/s",
            Column::Verdict => "verdict",
            Column::BytesRead => "bytes read",
            Column::ObjectBytes => "object bytes min/p50/p99/max",
        }
    }

    /// The name `--columns` takes: the header in snake case.
    pub fn name(self) -> &'static str {
        match self {
            Column::MemoryMb => "memory_mb",
            Column::Client => "client",
            Column::Workers => "workers",
            Column::Rep => "rep",
            Column::WallMs => "wall_ms",
            Column::ObjectsPerS => "objects_per_s",
            Column::MibPerS => "mib_per_s",
            Column::TtfbP50Ms => "ttfb_p50_ms",
            Column::TtfbP99Ms => "ttfb_p99_ms",
            Column::PoolWaitP50Ms => "pool_wait_p50_ms",
            Column::CpuMsPerGet => "cpu_ms_per_get",
            Column::Conns => "conns",
            Column::TlsP50Ms => "tls_p50_ms",
            Column::Sessions => "sessions",
            Column::InFlight => "in_flight",
            Column::Errors => "errors",
            Column::WireMibPerS => "wire_mib_per_s",
            Column::Verdict => "verdict",
            Column::BytesRead => "bytes_read",
            Column::ObjectBytes => "object_bytes",
        }
    }

    /// Whether the column is right-aligned (the numbers, and the short cells beside
    /// them, as the table has always drawn them).
    pub(crate) fn right_aligned(self) -> bool {
        !matches!(
            self,
            Column::WireMibPerS | Column::Verdict | Column::BytesRead | Column::ObjectBytes
        )
    }

    /// `--columns workers,wall_ms,verdict`: the columns in the order given, each once;
    /// an error naming every unknown name and the known ones.
    pub fn parse_list(text: &str) -> Result<Vec<Column>, ColumnsError> {
        let mut picked = Vec::new();
        let mut unknown = Vec::new();
        for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match Column::ALL.iter().find(|c| c.name() == name) {
                Some(c) if !picked.contains(c) => picked.push(*c),
                Some(_) => {}
                None => unknown.push(name.to_string()),
            }
        }
        if !unknown.is_empty() {
            return Err(ColumnsError::Unknown(unknown));
        }
        if picked.is_empty() {
            return Err(ColumnsError::None);
        }
        Ok(picked)
    }
}

impl fmt::Display for Column {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A `--columns` list that names no column, or names that are not columns.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ColumnsError {
    /// The unknown names, in the order given.
    #[error(
        "unknown column(s) {}; the columns are {}",
        .0.iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(", "),
        Column::ALL.iter().map(|c| c.name()).collect::<Vec<_>>().join(", ")
    )]
    Unknown(Vec<String>),
    #[error("name at least one column")]
    None,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_column_is_essential_or_ranked_once() {
        let mut seen: Vec<Column> = Column::ESSENTIAL.to_vec();
        seen.extend(Column::BY_PRIORITY);
        for c in Column::ALL {
            assert_eq!(seen.iter().filter(|&&s| s == c).count(), 1, "{c}");
            assert_eq!(Column::parse_list(c.name()), Ok(vec![c]));
        }
        assert_eq!(seen.len(), Column::ALL.len());
    }

    #[test]
    fn a_bad_column_list_names_every_bad_name() {
        let err = Column::parse_list("workers,wal_ms,nope").unwrap_err();
        assert_eq!(err, ColumnsError::Unknown(vec!["wal_ms".into(), "nope".into()]));
        let shown = err.to_string();
        assert!(
            shown.contains("\"wal_ms\", \"nope\"") && shown.contains("wall_ms"),
            "{shown}"
        );
        assert_eq!(
            Column::parse_list("verdict, workers,verdict"),
            Ok(vec![Column::Verdict, Column::Workers])
        );
        assert_eq!(Column::parse_list(" , "), Err(ColumnsError::None));
    }
}

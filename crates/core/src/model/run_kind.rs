//! What kind of run a result is, read once from its rows: the one answer the
//! analysis (how it groups rows), the tables (which columns they get) and the figure
//! (which picture it draws) all ask.

use super::result::SweepResult;

/// What kind of run a result is. The kinds combine (a memory sweep may also vary the
/// object size and the client); the first that holds, in the order declared, names
/// the run, and the axes below it are read from the rows where they matter
/// ([`SweepResult::object_sizes`], [`SweepResult::several_clients`]). A fan-out's
/// merged rows are analysed and drawn like one function's: its kind is that of its
/// rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunKind {
    /// Rows at Lambda memory sizes (`memory_mb`, or `--lambda-memory-mb` emulated
    /// locally): each size a sweep of its own.
    MemorySweep,
    /// Rows at fixed object sizes (`object_sizes_bytes`): each size a sweep of its own.
    SizeAxis,
    /// Rows on any other axis (more than one S3 client, a client other than `sdk`,
    /// hedged rows): each client and hedge policy a sweep of its own (so a run of
    /// `lean` alone keeps its client in its summaries).
    Clients,
    /// One sweep: one function (or a fan-out's merged children), one object size, one
    /// client.
    Plain,
}

impl SweepResult {
    /// What kind of run this result is ([`RunKind`]).
    pub fn run_kind(&self) -> RunKind {
        if self.results.iter().any(|r| r.axes.memory_mb.is_some()) {
            RunKind::MemorySweep
        } else if self.results.iter().any(|r| r.size_axis_bytes().is_some()) {
            RunKind::SizeAxis
        } else if self.named_axes().without("memory MB").without("object bytes").any() {
            RunKind::Clients
        } else {
            RunKind::Plain
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::test_rows::{result, row};
    use crate::model::{Client, ObjectSize, SizeSpread};

    #[test]
    fn the_first_kind_that_holds_names_the_run() {
        let plain = row("b-1", 4, 1, 100.0, 0);
        let mut lean = plain.clone();
        lean.axes.s3_client = Client::Lean;
        let mut sized = plain.clone();
        sized.axes.object_size_bytes = Some(ObjectSize::Fixed(4096));
        let mut memory = sized.clone();
        memory.axes.memory_mb = Some(1769);
        let kind =
            |rows: &[&crate::model::ConfigResult]| result(rows.iter().map(|r| (*r).clone()).collect()).run_kind();
        assert_eq!(kind(&[&plain]), RunKind::Plain);
        assert_eq!(kind(&[&plain, &plain]), RunKind::Plain);
        assert_eq!(kind(&[&plain, &lean]), RunKind::Clients);
        assert_eq!(kind(&[&lean]), RunKind::Clients, "lean alone keeps its client");
        assert_eq!(kind(&[&sized, &lean]), RunKind::SizeAxis);
        assert_eq!(kind(&[&plain, &memory, &lean]), RunKind::MemorySweep);
        // A listing's spread of sizes is no size axis.
        let mut listed = plain.clone();
        listed.axes.object_size_bytes = Some(ObjectSize::Spread(SizeSpread {
            min: 10,
            p50: 20,
            p99: 30,
            max: 40,
        }));
        assert_eq!(kind(&[&listed]), RunKind::Plain);
        assert_eq!(kind(&[]), RunKind::Plain);
    }
}

//! The client axis in the verdicts. With `clients: ["sdk", "lean"]` every SDK row
//! whose verdict is `client_cpu` or `machine_cpu` gets a note: what the lean client
//! reached at the same bucket, workers and memory size, how much more CPU per GET the
//! SDK's client costs (each row's measured `cpu_ms_per_get`), and what that means in
//! Lambda memory (1,769 MB buys one vCPU's worth of CPU time): the share the row had,
//! and the share the SDK would need to read as fast as the lean client did.

use crate::model::stats::{median, round3};
use crate::model::{Axes, Client, ConfigResult, Figure, FigureName, Verdict};

/// Lambda memory per vCPU's worth of CPU time, MB.
const LAMBDA_MB_PER_VCPU: f64 = 1_769.0;
/// Lambda's largest memory size, MB.
const LAMBDA_MAX_MB: f64 = 10_240.0;

/// What the lean client reached at one bucket, workers and memory size: medians over
/// its rows with successful GETs.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Reached {
    objects_per_s: f64,
    cpu_ms_per_get: f64,
}

/// The lean client's rows like `row` (same bucket, workers and axes but the client),
/// summed up.
fn lean_like(rows: &[ConfigResult], row: &ConfigResult) -> Option<Reached> {
    let lean = Axes {
        s3_client: Client::Lean,
        ..row.axes.key()
    };
    let like = || {
        rows.iter()
            .filter(|r| r.bucket == row.bucket && r.workers == row.workers && r.axes.key() == lean && r.ok > 0)
    };
    Some(Reached {
        objects_per_s: median(like().map(|r| r.objects_per_s).collect())?,
        cpu_ms_per_get: median(like().map(|r| r.cpu_ms_per_get).collect())?,
    })
}

/// True for a row the comparison is about: the SDK's, bound by CPU.
fn cpu_bound_sdk(row: &ConfigResult) -> bool {
    row.axes.s3_client == Client::Sdk
        && row.ok > 0
        && row
            .diagnosis
            .as_ref()
            .is_some_and(|d| matches!(d.verdict, Verdict::ClientCpu | Verdict::MachineCpu))
}

/// Adds the lean comparison to every CPU-bound SDK row that has lean rows beside it.
pub(crate) fn lean_notes(rows: &mut [ConfigResult]) {
    let found: Vec<(usize, Reached)> = rows
        .iter()
        .enumerate()
        .filter(|(_, r)| cpu_bound_sdk(r))
        .filter_map(|(i, r)| lean_like(rows, r).map(|l| (i, l)))
        .collect();
    for (i, lean) in found {
        let row = &mut rows[i];
        let (text, figures) = comparison(row, lean);
        if let Some(d) = row.diagnosis.as_mut() {
            for (name, value) in figures {
                d.set_figure(name, value);
            }
            d.notes.push(text);
        }
    }
}

/// The note and its figures for an SDK row and what the lean client reached beside it.
fn comparison(row: &ConfigResult, lean: Reached) -> (String, Vec<(FigureName, Figure)>) {
    let sdk_cpu = row.cpu_ms_per_get;
    let extra = sdk_cpu - lean.cpu_ms_per_get;
    let speedup = lean.objects_per_s / row.objects_per_s.max(1e-9);
    let cores = row.client.as_ref().map_or(0.0, |c| c.client_cores);
    // The memory whose CPU share the row had: its own size, else its cores' worth.
    let memory_mb = row.axes.memory_mb.map_or(cores * LAMBDA_MB_PER_VCPU, f64::from);
    // CPU the SDK would burn reading at the lean client's rate, in cores, and the
    // Lambda memory that buys it.
    let needed_cores = lean.objects_per_s * sdk_cpu / 1000.0;
    let needed_mb = needed_cores * LAMBDA_MB_PER_VCPU;
    let cost = if extra > 0.0 {
        format!(
            "the SDK's client costs {extra:.3} ms more per GET ({sdk_cpu:.3} against the lean client's {:.3} ms)",
            lean.cpu_ms_per_get
        )
    } else {
        format!(
            "the lean client cost no less CPU per GET here ({:.3} against the SDK's {sdk_cpu:.3} ms)",
            lean.cpu_ms_per_get
        )
    };
    let need = if speedup <= 1.0 {
        "the SDK needs no more CPU to read as fast".to_string()
    } else if needed_mb > LAMBDA_MAX_MB {
        format!(
            "the SDK would need about {needed_cores:.2} cores to read as fast, more than Lambda's largest size gives"
        )
    } else {
        format!(
            "the SDK would need about {needed_cores:.2} cores, a {:.0} MB Lambda's share, to read as fast",
            needed_mb.max(128.0)
        )
    };
    let text = format!(
        "{cost}; the lean client reached {speedup:.1}x ({:.0} against {:.0} objects/s) at {memory_mb:.0} MB of Lambda CPU ({cores:.2} cores) with the same {} workers; {need}",
        lean.objects_per_s, row.objects_per_s, row.workers
    );
    let figures = vec![
        (
            FigureName::LeanObjectsPerS,
            Figure::ObjectsPerS(round3(lean.objects_per_s)),
        ),
        (FigureName::LeanCpuMsPerGet, Figure::CpuMsPerGet(lean.cpu_ms_per_get)),
        (FigureName::LeanSpeedup, Figure::Ratio(speedup)),
        (FigureName::SdkExtraCpuMsPerGet, Figure::CpuMsPerGet(extra)),
        (FigureName::SdkCoresForLeanRate, Figure::Cores(needed_cores)),
    ];
    (text, figures)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::test_rows::row;
    use crate::model::{ClientMeasure, ClientSide, CpuSource, Diagnosis};

    /// A row of `client` at 16 workers under a quota of 0.5 cores, `cpu_ms_per_get`
    /// per GET, `objects_per_s`, with `verdict`.
    fn at(client: Client, objects_per_s: f64, cpu_ms_per_get: f64, verdict: Verdict) -> ConfigResult {
        let mut r = row("b", 16, 1, 1000.0, 0);
        r.axes.s3_client = client;
        r.objects_per_s = objects_per_s;
        r.cpu_ms_per_get = cpu_ms_per_get;
        let mut side = ClientSide::of(&r, ClientMeasure::default());
        side.client_cores = 0.5;
        side.usable_cores = 0.5;
        side.cpu_source = CpuSource::CgroupV2;
        r.client = Some(side);
        r.diagnosis = Some(Diagnosis {
            verdict,
            figures: Default::default(),
            explanation: String::new(),
            notes: Vec::new(),
        });
        r
    }

    #[test]
    fn a_cpu_bound_sdk_row_says_what_the_lean_client_reached() {
        let mut rows = vec![
            at(Client::Sdk, 2570.0, 0.085, Verdict::ClientCpu),
            at(Client::Lean, 5400.0, 0.031, Verdict::ClientCpu),
        ];
        lean_notes(&mut rows);
        let d = rows[0].diagnosis.as_ref().unwrap();
        let note = d.notes.last().expect("a note on the SDK row");
        assert!(note.contains("the SDK's client costs 0.054 ms more per GET"), "{note}");
        assert!(
            note.contains(
                "the lean client reached 2.1x (5400 against 2570 objects/s) at 884 MB of Lambda CPU (0.50 cores)"
            ),
            "{note}"
        );
        // 5,400 GETs/s at 0.085 ms each is 0.459 cores, a 812 MB Lambda's share.
        assert!(note.contains("about 0.46 cores, a 812 MB Lambda's share"), "{note}");
        assert_eq!(d.figures[FigureName::LeanSpeedup], Figure::Ratio(2.101));
        assert!(
            rows[1].diagnosis.as_ref().unwrap().notes.is_empty(),
            "the lean row gets none"
        );
    }

    #[test]
    fn only_cpu_bound_sdk_rows_with_lean_beside_them_get_it() {
        let mut rows = vec![
            at(Client::Sdk, 2570.0, 0.085, Verdict::Latency),
            at(Client::Lean, 5400.0, 0.031, Verdict::Latency),
        ];
        lean_notes(&mut rows);
        assert!(rows[0].diagnosis.as_ref().unwrap().notes.is_empty());
        let mut alone = vec![at(Client::Sdk, 2570.0, 0.085, Verdict::ClientCpu)];
        lean_notes(&mut alone);
        assert!(alone[0].diagnosis.as_ref().unwrap().notes.is_empty());
        let mut other_workers = vec![at(Client::Sdk, 2570.0, 0.085, Verdict::MachineCpu), {
            let mut l = at(Client::Lean, 5400.0, 0.031, Verdict::Latency);
            l.workers = 8;
            l
        }];
        lean_notes(&mut other_workers);
        assert!(other_workers[0].diagnosis.as_ref().unwrap().notes.is_empty());
        // A lean row that did worse is said to have done worse.
        let mut worse = vec![
            at(Client::Sdk, 2570.0, 0.085, Verdict::ClientCpu),
            at(Client::Lean, 1200.0, 0.2, Verdict::ClientCpu),
        ];
        lean_notes(&mut worse);
        let note = &worse[0].diagnosis.as_ref().unwrap().notes[0];
        assert!(note.contains("the lean client cost no less CPU per GET here"), "{note}");
        assert!(
            note.contains("reached 0.5x") && note.contains("needs no more CPU"),
            "{note}"
        );
    }
}

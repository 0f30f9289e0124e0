//! Two runs in one process are independent: two different commands with different threads
//! and `--metrics` files, run at once on two threads, give the same outputs, summaries,
//! messages and (deterministic parts of the) metrics as when each runs alone.

use kmerflow_cli::{execute_with, Outcome};
use kmerflow_core::run::RunContext;
use serde_json::Value;
use std::ffi::OsString;
use std::path::Path;

/// `n` pseudo-random FASTQ reads of 80 bases (a fixed linear congruential sequence).
fn write_reads(path: &Path, n: usize, seed: u64) {
    let mut x = seed;
    let mut text = String::new();
    for i in 0..n {
        let seq: String = (0..80)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                b"ACGT"[(x >> 62) as usize] as char
            })
            .collect();
        text += &format!("@r{i}\n{seq}\n+\n{}\n", "I".repeat(80));
    }
    std::fs::write(path, text).unwrap();
}

fn argv(args: &[String]) -> Vec<OsString> {
    std::iter::once("kmerflow".to_string()).chain(args.iter().cloned()).map(OsString::from).collect()
}

/// The parts of a metrics document that do not depend on timing.
fn deterministic(metrics: &Path) -> Value {
    let doc: Value = serde_json::from_slice(&std::fs::read(metrics).unwrap()).unwrap();
    // The fields `fields` of each entry of the list `list`.
    let pick = |list: &str, fields: &[&str]| -> Vec<Value> {
        let entries = doc[list].as_array().unwrap().iter();
        entries.map(|entry| fields.iter().map(|&field| entry[field].clone()).collect()).collect()
    };
    serde_json::json!({
        "command": doc["command"], "threads": doc["threads"],
        "inputs": pick("inputs", &["path", "bytes_compressed", "bytes_decompressed"]),
        "pipelines": pick("pipelines", &["label", "threads", "records"]),
        "counters": doc["counters"], "totals": doc["totals"],
    })
}

/// A command line with its output files, run in `dir`.
struct Job {
    args: Vec<String>,
    outputs: Vec<String>,
    metrics: String,
}

impl Job {
    /// The run's outcome with the report's measurements (timings, memory) left out; its
    /// parameters, files and counters stay.
    fn run(&self) -> Outcome {
        let mut outcome = execute_with(argv(&self.args), &RunContext::new()).unwrap();
        for measured in ["timings", "memory"] {
            outcome.report.as_object_mut().unwrap().remove(measured);
        }
        outcome
    }

    /// The outputs' bytes and the deterministic metrics.
    fn results(&self) -> (Vec<Vec<u8>>, Value) {
        let outputs = self.outputs.iter().map(|o| std::fs::read(o).unwrap()).collect();
        (outputs, deterministic(Path::new(&self.metrics)))
    }
}

#[test]
fn two_runs_at_once_are_independent() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    write_reads(Path::new(&p("a.fq")), 20_000, 1);
    write_reads(Path::new(&p("b.fq")), 15_000, 2);
    let s = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    let normalize = Job {
        args: s(&[
            "normalize-by-median",
            "-T",
            "1",
            "-k",
            "17",
            "-C",
            "3",
            "-M",
            "4e6",
            "-o",
            &p("a.keep"),
            "--metrics",
            &p("a.json"),
            &p("a.fq"),
        ]),
        outputs: vec![p("a.keep")],
        metrics: p("a.json"),
    };
    let count = Job {
        args: s(&[
            "load-into-counting",
            "-T",
            "3",
            "-k",
            "21",
            "-M",
            "40e6",
            "--metrics",
            &p("b.json"),
            &p("b.ct"),
            &p("b.fq"),
            &p("a.fq"),
        ]),
        outputs: vec![p("b.ct"), p("b.ct.info")],
        metrics: p("b.json"),
    };
    let alone = [normalize.run(), count.run()];
    let alone_results = [normalize.results(), count.results()];
    for job in [&normalize, &count] {
        job.outputs.iter().chain([&job.metrics]).for_each(|o| std::fs::remove_file(o).unwrap());
    }
    for _ in 0..2 {
        let together = std::thread::scope(|scope| {
            let a = scope.spawn(|| normalize.run());
            let b = scope.spawn(|| count.run());
            [a.join().unwrap(), b.join().unwrap()]
        });
        assert_eq!(together, alone, "summaries and messages");
        assert_eq!([normalize.results(), count.results()], alone_results, "outputs and metrics");
    }
    assert_eq!(alone_results[0].1["threads"], 1);
    assert_eq!(alone_results[1].1["threads"], 3);
    assert_eq!(alone[0].summary["total"], 20_000);
    assert!(alone[0].messages.iter().any(|m| m.text.starts_with("DONE with")), "{:?}", alone[0].messages);
    assert_eq!(alone[1].summary["tally"]["reads"], 35_000);
}

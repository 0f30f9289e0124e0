//! `unique-kmers`: HyperLogLog estimate of the distinct k-mers per file and in total
//! (docs/khmer-compat.md §4.8).

use super::count::{for_each_batch, ReadTally};
use super::pyfmt::scientific;
use super::sizing::{estimate_with_fp_rate, estimate_with_memory};
use crate::io::{write_record, RecordBatch};
use crate::run::metrics::KMERS;
use crate::run::RunContext;
use crate::table::hll::{HllCounter, HllHash};
use crate::Result;

/// Options of `unique-kmers`.
#[derive(Debug, Clone)]
pub struct Options {
    /// k.
    pub ksize: usize,
    /// `-e/--error-rate`.
    pub error_rate: f64,
    /// Input files.
    pub inputs: Vec<String>,
    /// Hand every record, formatted as khmer writes it, to the caller (`-S/--stream-records`).
    pub stream_records: bool,
    /// How k-mers are hashed: khmer's hash for `unique-kmers`, the fast one for sizing tables.
    pub hash: HllHash,
    /// Which strand k-mers are hashed on (`--single-strand`).
    pub strand: crate::kmer::Strand,
}

/// The estimate of one input.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FileEstimate {
    /// The input.
    pub path: String,
    /// Estimated distinct k-mers.
    pub cardinality: u64,
}

/// What `unique-kmers` found.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Summary {
    /// Per-file estimates, in input order.
    pub files: Vec<FileEstimate>,
    /// Estimate of the union.
    pub total: u64,
    /// Reads and k-mers of all inputs.
    pub tally: ReadTally,
}

/// Runs `unique-kmers`; with `stream_records`, `on_records` receives the records of each batch,
/// formatted as FASTA/FASTQ, in file order. The estimate does not depend on the run's threads.
/// Its only outputs are the front end's (the report, declared as side outputs of `ctx`).
pub fn run(opts: &Options, ctx: &RunContext, mut on_records: impl FnMut(&[u8]) -> Result<()>) -> Result<Summary> {
    crate::io::refuse_inputs_as_outputs(ctx, &opts.inputs, None::<&str>)?;
    let mut summary = Summary::default();
    let empty = HllCounter::with_hash(opts.error_rate, opts.ksize, opts.hash)?.with_strand(opts.strand);
    let mut total = empty.clone();
    for path in &opts.inputs {
        let mut hll = empty.clone();
        let template = hll.clone();
        for_each_batch(
            path,
            ctx,
            || {
                |batch: RecordBatch| {
                    let mut part = template.clone();
                    let tally = ReadTally::of_batch(&batch, opts.ksize, |seq| {
                        part.consume_seq(seq);
                    });
                    let echo = if opts.stream_records { format_records(&batch) } else { Vec::new() };
                    Ok((part, tally, echo))
                }
            },
            |(part, tally, echo)| {
                hll.merge(&part)?;
                summary.tally.add(tally);
                if opts.stream_records {
                    on_records(&echo)?;
                }
                Ok(())
            },
        )?;
        total.merge(&hll)?;
        summary.files.push(FileEstimate { path: path.clone(), cardinality: hll.estimate() });
    }
    ctx.metrics().add_count(KMERS, summary.tally.kmers);
    summary.total = total.estimate();
    Ok(summary)
}

/// The records of a batch as khmer writes them.
fn format_records(batch: &RecordBatch) -> Vec<u8> {
    let mut out = Vec::new();
    for record in batch.iter() {
        write_record(&mut out, &record);
    }
    out
}

/// khmer's `graphsize_args_report`: recommended table shapes for FP rates 0.1..0.9 and memory
/// budgets of 1..5000 GB (the `--diagnostics` text).
pub fn sizing_report(unique_kmers: u64, fp_rate: f64) -> String {
    let n = unique_kmers as f64;
    let mut lines = vec![
        String::new(),
        format!("number of unique k-mers: \t{unique_kmers}"),
        format!("false positive rate: \t{fp_rate:.3}"),
        String::new(),
        "If you have expected false positive rate to achieve:".into(),
        "expected_fp\tnumber_hashtable(Z)\tsize_hashtable(H)\texpected_memory_usage".into(),
    ];
    for tenth in 1..10 {
        let e = estimate_with_fp_rate(n, f64::from(tenth) / 10.0);
        lines.push(format!(
            "{:11.3}\t{:19}\t{}\t{}",
            e.fp_rate,
            e.n_tables,
            scientific(e.table_size as f64, 17, 6),
            scientific(e.memory as f64, 21, 6)
        ));
    }
    lines.extend([
        String::new(),
        "If you have expected memory to use:".into(),
        "expected_memory_usage\tnumber_hashtable(Z)\tsize_hashtable(H)\texpected_fp".into(),
    ]);
    for gb in [1u64, 5, 10, 20, 50, 100, 200, 300, 400, 500, 1000, 2000, 5000] {
        let e = estimate_with_memory(n, gb as f64 * 1e9);
        lines.push(format!(
            "{}\t{:19}\t{}\t{:11.3}",
            scientific(e.memory as f64, 21, 6),
            e.n_tables,
            scientific(e.table_size as f64, 17, 6),
            e.fp_rate
        ));
    }
    lines.join("\n")
}

//! `kmerflow unique-kmers`: HyperLogLog estimate of distinct k-mers (khmer's unique-kmers.py).

use super::counting_args::StrandArgs;
use crate::common::{summary_json, CommonArgs, Ctx, ReadFilesArgs};
use kmerflow_core::io::{Compression, OutputFile};
use kmerflow_core::ops::count::write_text;
use kmerflow_core::ops::unique_kmers;
use kmerflow_core::run::files::Output;
use kmerflow_core::table::hll::HllHash;
use kmerflow_core::Error;
use serde_json::Value;
use std::io::Write;

/// khmer's default k for unique-kmers: `$KHMER_KSIZE` when set to a number, else 32.
fn default_ksize() -> usize {
    std::env::var("KHMER_KSIZE").ok().and_then(|v| v.parse().ok()).unwrap_or(32)
}

/// Arguments of `unique-kmers`.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = "\
The estimates (per file and in total) are printed on stderr; -R also writes them, with the
table-sizing report of --diagnostics, to a file.

Examples:
  kmerflow unique-kmers -k 20 reads_1.fq.gz reads_2.fq.gz
  kmerflow unique-kmers -k 31 -e 0.005 -R estimate.txt genome.fa")]
pub struct Args {
    /// k-mer size (default: $KHMER_KSIZE or 32).
    #[arg(short = 'k', long = "ksize", default_value_t = default_ksize(), value_parser = crate::flags::positive, allow_negative_numbers = true)]
    pub ksize: usize,
    /// Acceptable error rate of the estimate.
    #[arg(short = 'e', long = "error-rate", default_value_t = 0.01, value_parser = crate::flags::hll_error_rate, allow_negative_numbers = true)]
    pub error_rate: f64,
    /// Write the estimates (and the sizing report) to this file.
    #[arg(short = 'R', long = "report", value_name = "FILE")]
    pub report: Option<String>,
    /// Write the input records to stdout.
    #[arg(short = 'S', long = "stream-records")]
    pub stream_records: bool,
    /// Print recommended table sizes on stderr.
    #[arg(long = "diagnostics")]
    pub diagnostics: bool,
    #[command(flatten)]
    /// `--single-strand`: count k-mers as read.
    pub strand: StrandArgs,
    #[command(flatten)]
    pub reads: ReadFilesArgs,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Runs `unique-kmers`. The estimates are the command's result, so they are printed even with
/// `-q`, as khmer does.
pub fn run(args: Args, ctx: &mut Ctx) -> kmerflow_core::Result<Value> {
    if let Some(path) = &args.report {
        ctx.run.add_side_output(Output::side_file("-R", path.as_str()));
    }
    let opts = unique_kmers::Options {
        ksize: args.ksize,
        error_rate: args.error_rate,
        inputs: args.reads.inputs,
        stream_records: args.stream_records,
        hash: HllHash::Khmer,
        strand: args.strand.strand(),
    };
    let mut stdout = args.stream_records.then(|| OutputFile::create_with("-", Compression::None)).transpose()?;
    let summary = unique_kmers::run(&opts, &ctx.run, |records| match &mut stdout {
        Some(out) => out.write_all(records).map_err(|e| Error::io("stdout", e)),
        None => Ok(()),
    })?;
    if let Some(out) = stdout {
        out.finish()?;
    }
    let k = args.ksize;
    let mut report = String::new();
    for file in &summary.files {
        ctx.result(format_args!("Estimated number of unique {k}-mers in {}: {}", file.path, file.cardinality));
        report.push_str(&format!("{} {k} (total)\n", file.cardinality));
    }
    ctx.result(format_args!("Total estimated number of unique {k}-mers: {}", summary.total));
    let sizing = unique_kmers::sizing_report(summary.total, args.error_rate);
    if args.diagnostics {
        ctx.result(&sizing);
    }
    if let Some(path) = &args.report {
        report.push_str(&format!("{} {k} total\n{sizing}\n", summary.total));
        write_text(path, report, &ctx.run)?;
    }
    summary_json(&summary)
}

//! `kmerflow unique-kmers`: HyperLogLog estimate of distinct k-mers (khmer's unique-kmers.py).

use clap::Args;
use kmerflow_core::ops::unique_kmers;
use kmerflow_core::Error;
use std::io::Write;

/// khmer's default k for unique-kmers: `$KHMER_KSIZE` when set to a number, else 32.
fn default_ksize() -> usize {
    std::env::var("KHMER_KSIZE").ok().and_then(|v| v.parse().ok()).unwrap_or(32)
}

/// Arguments of `unique-kmers`.
#[derive(Args, Debug, Clone)]
pub struct UniqueKmersArgs {
    /// k-mer size (default: $KHMER_KSIZE or 32).
    #[arg(short = 'k', long = "ksize", default_value_t = default_ksize())]
    pub ksize: usize,
    /// Acceptable error rate of the estimate.
    #[arg(short = 'e', long = "error-rate", default_value_t = 0.01)]
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
    /// Number of worker threads.
    #[arg(short = 'T', long = "threads", default_value_t = 1)]
    pub threads: usize,
    /// Accepted for khmer compatibility.
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
    /// Read files.
    #[arg(required = true)]
    pub inputs: Vec<String>,
}

/// Runs the command.
pub fn execute(args: &UniqueKmersArgs) -> kmerflow_core::Result<()> {
    let opts = unique_kmers::Options {
        ksize: args.ksize,
        error_rate: args.error_rate,
        inputs: args.inputs.clone(),
        threads: args.threads,
        stream_records: args.stream_records,
    };
    let mut stdout = std::io::stdout().lock();
    let summary = unique_kmers::run(&opts, |records| {
        stdout.write_all(records).map_err(|e| Error::io("stdout", e))
    })?;
    stdout.flush().map_err(|e| Error::io("stdout", e))?;
    let k = args.ksize;
    let mut report = String::new();
    for file in &summary.files {
        eprintln!("Estimated number of unique {k}-mers in {}: {}", file.path, file.cardinality);
        report.push_str(&format!("{} {k} (total)\n", file.cardinality));
    }
    eprintln!("Total estimated number of unique {k}-mers: {}", summary.total);
    let sizing = unique_kmers::sizing_report(summary.total, args.error_rate);
    if args.diagnostics {
        eprintln!("{sizing}");
    }
    if let Some(path) = &args.report {
        report.push_str(&format!("{} {k} total\n{sizing}\n", summary.total));
        std::fs::write(path, report).map_err(|e| Error::io(path.as_str(), e))?;
    }
    Ok(())
}

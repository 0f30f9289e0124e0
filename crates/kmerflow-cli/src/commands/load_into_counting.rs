//! `kmerflow load-into-counting`: count k-mers into a saved countgraph (khmer's
//! load-into-counting.py).

use super::counting_args::{CountingArgs, RunArgs};
use clap::{Args, ValueEnum};
use kmerflow_core::ops::count::{self, SummaryFormat};

/// `-s` formats.
#[derive(ValueEnum, Debug, Clone, Copy)]
pub enum InfoFormat {
    /// `OUT.info.json`.
    Json,
    /// `OUT.info.tsv`.
    Tsv,
}

/// Arguments of `load-into-counting`.
#[derive(Args, Debug, Clone)]
pub struct LoadIntoCountingArgs {
    #[command(flatten)]
    /// Table sizing.
    pub counting: CountingArgs,
    #[command(flatten)]
    /// Threads, force, quiet, report.
    pub run: RunArgs,
    /// Do not count k-mers past 255.
    #[arg(short = 'b', long = "no-bigcount")]
    pub no_bigcount: bool,
    /// Also write a machine-readable summary, OUT.info.json or OUT.info.tsv.
    #[arg(short = 's', long = "summary-info", value_enum)]
    pub summary_info: Option<InfoFormat>,
    /// The countgraph file to write (gzip-compressed when it ends in .gz).
    pub output: String,
    /// Read files (FASTA/FASTQ, optionally compressed).
    #[arg(required = true)]
    pub inputs: Vec<String>,
}

/// Runs the command.
pub fn execute(args: &LoadIntoCountingArgs) -> kmerflow_core::Result<()> {
    let opts = count::Options {
        params: args.counting.params(args.run.force),
        output: args.output.clone(),
        inputs: args.inputs.clone(),
        threads: args.run.threads,
        bigcount: !args.no_bigcount,
        summary: args.summary_info.map(|f| match f {
            InfoFormat::Json => SummaryFormat::Json,
            InfoFormat::Tsv => SummaryFormat::Tsv,
        }),
    };
    let summary = count::run(&opts)?;
    args.run.sizing_messages(&summary.messages);
    args.run.info(&format!("Total number of unique k-mers: {}", summary.unique_kmers));
    args.run.info(&format!("fp rate estimated to be {:.3}", summary.fp_rate));
    args.run.info(&format!("wrote to: {}.info", args.output));
    args.run.report(
        summary.tally,
        &[("unique_kmers", summary.unique_kmers.into()), ("fp_rate", summary.fp_rate.into())],
    )
}

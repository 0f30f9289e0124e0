//! `kmerflow abundance-dist-single`: count and histogram in one run (khmer's
//! abundance-dist-single.py).

use super::abundance_dist::HistogramArgs;
use super::counting_args::{CountingArgs, RunArgs};
use clap::Args;
use kmerflow_core::ops::abundance_dist;

/// Arguments of `abundance-dist-single`.
#[derive(Args, Debug, Clone)]
pub struct AbundanceDistSingleArgs {
    #[command(flatten)]
    /// Table sizing (-M is shared with the tracking filter).
    pub counting: CountingArgs,
    #[command(flatten)]
    /// Output flags.
    pub histogram: HistogramArgs,
    #[command(flatten)]
    /// Threads, force, quiet, report.
    pub run: RunArgs,
    /// Also save the countgraph to this file.
    #[arg(long = "savegraph", value_name = "FILE")]
    pub savegraph: Option<String>,
    /// Reads (read twice, so not stdin).
    pub seqs: String,
    /// Output CSV (`-` for stdout).
    pub output: String,
}

/// Runs the command.
pub fn execute(args: &AbundanceDistSingleArgs) -> kmerflow_core::Result<()> {
    let opts = abundance_dist::SingleOptions {
        params: args.counting.params(args.run.force),
        seqs: args.seqs.clone(),
        output: args.histogram.output(&args.output),
        bigcount: !args.histogram.no_bigcount,
        savegraph: args.savegraph.clone(),
        threads: args.run.threads,
    };
    let summary = abundance_dist::run_single(&opts)?;
    args.run.sizing_messages(&summary.messages);
    args.run.info(&format!("Total number of unique k-mers: {}", summary.unique_kmers));
    args.run.report(summary.tally, &[("unique_kmers", summary.unique_kmers.into())])
}

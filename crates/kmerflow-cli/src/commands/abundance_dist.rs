//! `kmerflow abundance-dist`: k-mer abundance histogram of reads against a saved countgraph
//! (khmer's abundance-dist.py).

use super::counting_args::RunArgs;
use clap::Args;
use kmerflow_core::ops::abundance_dist::{self, HistogramOutput};

/// Histogram output flags shared with `abundance-dist-single`.
#[derive(Args, Debug, Clone)]
pub struct HistogramArgs {
    /// Do not output rows for abundances with no k-mers.
    #[arg(short = 'z', long = "no-zero")]
    pub no_zero: bool,
    /// Overwrite an existing output file.
    #[arg(short = 's', long = "squash")]
    pub squash: bool,
    /// Do not count k-mers past 255.
    #[arg(short = 'b', long = "no-bigcount")]
    pub no_bigcount: bool,
}

impl HistogramArgs {
    /// Where the histogram goes.
    pub fn output(&self, path: &str) -> HistogramOutput {
        HistogramOutput { path: path.to_string(), squash: self.squash, output_zero: !self.no_zero }
    }
}

/// Arguments of `abundance-dist`.
#[derive(Args, Debug, Clone)]
pub struct AbundanceDistArgs {
    #[command(flatten)]
    /// Output flags.
    pub histogram: HistogramArgs,
    #[command(flatten)]
    /// Threads, force, quiet, report.
    pub run: RunArgs,
    /// Saved countgraph.
    pub graph: String,
    /// Reads.
    pub seqs: String,
    /// Output CSV (`-` for stdout).
    pub output: String,
}

/// Runs the command.
pub fn execute(args: &AbundanceDistArgs) -> kmerflow_core::Result<()> {
    let opts = abundance_dist::Options {
        graph: args.graph.clone(),
        seqs: args.seqs.clone(),
        output: args.histogram.output(&args.output),
        bigcount: !args.histogram.no_bigcount,
        threads: args.run.threads,
    };
    let summary = abundance_dist::run(&opts)?;
    args.run.sizing_messages(&summary.messages);
    args.run.report(summary.tally, &[])
}

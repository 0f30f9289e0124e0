//! `kmerflow abundance-dist`: k-mer abundance histogram of reads against a saved countgraph
//! (khmer's abundance-dist.py).

use super::counting_args::{RunArgs, StrandArgs};
use crate::common::{summary_json, CommonArgs, Ctx};
use kmerflow_core::ops::abundance_dist::{self, HistogramOutput};
use serde_json::Value;

/// Histogram output flags shared with `abundance-dist-single`.
#[derive(clap::Args, Debug, Clone)]
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
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = "\
The output CSV has the columns abundance,count,cumulative,cumulative_fraction (each distinct
k-mer of the reads counted once, at its count in the countgraph).

Examples:
  kmerflow abundance-dist -z reads.ct reads.fq reads.hist.csv
  kmerflow abundance-dist reads.ct reads.fq - | head")]
pub struct Args {
    #[command(flatten)]
    /// Output flags.
    pub histogram: HistogramArgs,
    #[command(flatten)]
    /// Force and report.
    pub run: RunArgs,
    #[command(flatten)]
    /// `--single-strand`: the countgraph's k-mers are hashed as read.
    pub strand: StrandArgs,
    /// Saved countgraph.
    pub graph: String,
    /// Reads.
    pub seqs: String,
    /// Output CSV (`-` for stdout).
    pub output: String,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Runs `abundance-dist`.
pub fn run(args: Args, ctx: &mut Ctx) -> kmerflow_core::Result<Value> {
    let opts = abundance_dist::Options {
        graph: args.graph,
        seqs: args.seqs,
        output: args.histogram.output(&args.output),
        bigcount: !args.histogram.no_bigcount,
        strand: args.strand.strand(),
    };
    let summary = abundance_dist::run(&opts, &ctx.run)?;
    args.run.report(ctx, summary.tally);
    summary_json(&summary)
}

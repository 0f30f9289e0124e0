//! `kmerflow count-median`: per-read k-mer count median, mean and standard deviation (khmer's
//! count-median.py).

use super::counting_args::StrandArgs;
use crate::common::{summary_json, CommonArgs, Ctx};
use kmerflow_core::ops::count_median;
use serde_json::Value;

/// Arguments of `count-median`.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = "\
The output CSV has the columns name,median,average,stddev,seqlen; reads shorter than k get no
row.

Examples:
  kmerflow count-median reads.ct reads.fq reads.median.csv
  kmerflow count-median reads.ct reads.fq - | sort -t, -k2 -n")]
pub struct Args {
    /// Accepted for khmer compatibility (inputs are always checked).
    #[arg(short = 'f', long = "force")]
    pub force: bool,
    #[command(flatten)]
    /// `--single-strand`: the countgraph's k-mers are hashed as read.
    pub strand: StrandArgs,
    /// Saved countgraph.
    pub graph: String,
    /// Reads.
    pub input: String,
    /// Output CSV (`-` for stdout).
    pub output: String,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Runs `count-median`.
pub fn run(args: Args, ctx: &mut Ctx) -> kmerflow_core::Result<Value> {
    let opts = count_median::Options {
        graph: args.graph,
        input: args.input,
        output: args.output,
        strand: args.strand.strand(),
    };
    let summary = count_median::run(&opts, &ctx.run)?;
    ctx.info(format_args!("{} reads; {} shorter than k skipped", summary.reads, summary.short_reads));
    summary_json(&summary)
}

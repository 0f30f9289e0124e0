//! `kmerflow load-graph`: build a nodegraph and tagset (khmer's load-graph.py).

use super::counting_args::{GraphArgs, RunArgs};
use crate::common::{summary_json, CommonArgs, Ctx, ReadFilesArgs};
use kmerflow_core::ops::load_graph;
use serde_json::Value;

/// Arguments of `load-graph`.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = "\
Writes the nodegraph OUT, its tagset OUT.tagset (unless -n) and OUT.info. Stops, writing
nothing, as soon as the estimated false-positive rate exceeds 0.15, unless -f.

Examples:
  kmerflow load-graph -k 20 -M 1G reads reads.fa
  kmerflow load-graph -n -k 31 -x 1e8 genome genome.fa.gz")]
pub struct Args {
    #[command(flatten)]
    /// Table sizing.
    pub graph: GraphArgs,
    #[command(flatten)]
    /// Force and report.
    pub run: RunArgs,
    /// Do not build the tagset.
    #[arg(short = 'n', long = "no-build-tagset")]
    pub no_build_tagset: bool,
    /// The nodegraph file (also writes OUT.tagset and OUT.info).
    pub output: String,
    #[command(flatten)]
    pub reads: ReadFilesArgs,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Runs `load-graph`.
pub fn run(args: Args, ctx: &mut Ctx) -> kmerflow_core::Result<Value> {
    let opts = load_graph::Options {
        params: args.graph.nodegraph_params(args.run.force, &args.reads.inputs, ctx)?,
        output: args.output,
        inputs: args.reads.inputs,
        build_tagset: !args.no_build_tagset,
    };
    let summary = load_graph::run(&opts, &ctx.run)?;
    ctx.info(format_args!("Total number of unique k-mers: {}", summary.unique_kmers));
    ctx.info(format_args!("false positive rate estimated to be {:.3}", summary.fp_rate));
    args.run.report(ctx, summary.tally);
    summary_json(&summary)
}

//! `kmerflow abundance-dist-single`: count and histogram in one run (khmer's
//! abundance-dist-single.py).

use super::abundance_dist::HistogramArgs;
use super::counting_args::{CountingArgs, RunArgs};
use super::shard_args::ShardArgs;
use crate::common::{summary_json, CommonArgs, Ctx};
use kmerflow_core::ops::abundance_dist;
use serde_json::Value;

/// Arguments of `abundance-dist-single`.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = "\
Counts the reads into a countgraph, then writes their k-mer abundance histogram (the reads are
read twice, so the input cannot be stdin). The histogram, the saved countgraph and the unique k-mer
count on stderr are identical for any -T.

Examples:
  kmerflow abundance-dist-single -k 20 -M 2G reads.fq reads.hist.csv
  kmerflow abundance-dist-single -z --savegraph reads.ct reads.fq reads.hist.csv
  kmerflow abundance-dist-single -k 20 -M 8G --local-cluster 2 reads.fq reads.hist.csv")]
pub struct Args {
    #[command(flatten)]
    /// Table sizing (-M is shared with the tracking filter).
    pub counting: CountingArgs,
    #[command(flatten)]
    /// Output flags.
    pub histogram: HistogramArgs,
    #[command(flatten)]
    /// Force and report.
    pub run: RunArgs,
    /// Also save the countgraph to this file.
    #[arg(long = "savegraph", value_name = "FILE")]
    pub savegraph: Option<String>,
    /// Reads (read twice, so not stdin).
    pub seqs: String,
    /// Output CSV (`-` for stdout).
    pub output: String,
    #[command(flatten)]
    /// Sharding over Dask workers (run by the Python package).
    pub sharding: ShardArgs,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Runs `abundance-dist-single`.
pub fn run(args: Args, ctx: &mut Ctx) -> kmerflow_core::Result<Value> {
    ctx.run.progress().plan_passes(2);
    let params = args.counting.resolved_params(args.run.force, std::slice::from_ref(&args.seqs), false, ctx)?;
    let opts = abundance_dist::SingleOptions {
        params,
        seqs: args.seqs,
        output: args.histogram.output(&args.output),
        bigcount: !args.histogram.no_bigcount,
        savegraph: args.savegraph,
    };
    let summary = abundance_dist::run_single(&opts, &ctx.run)?;
    ctx.info(format_args!("Total number of unique k-mers: {}", summary.unique_kmers));
    args.run.report(ctx, summary.tally);
    summary_json(&summary)
}

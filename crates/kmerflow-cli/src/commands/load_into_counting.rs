//! `kmerflow load-into-counting`: count k-mers into a saved countgraph (khmer's
//! load-into-counting.py).

use super::counting_args::{CountingArgs, LayoutArgs, RunArgs, SummaryFormatArg};
use super::shard_args::ShardArgs;
use crate::common::{summary_json, CommonArgs, Ctx};
use kmerflow_core::ops::count;
use serde_json::Value;

/// Arguments of `load-into-counting`.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = "\
Writes the countgraph, OUT.info (files counted, unique k-mers, false-positive rate) and, with
-s, OUT.info.json or OUT.info.tsv. Stops, writing nothing, as soon as the estimated
false-positive rate exceeds 0.2, unless -f.

The saved countgraph, OUT.info and the -s summary are identical for any -T, and equal to
khmer's single-threaded output (khmer's own threaded runs could vary).

With --layout blocked, OUT is written in kmerflow's own format (readable by
normalize-by-median -l, not by khmer; never compressed), any k is accepted, and counts stop at
255 (or 15 with --small-count) as there is no bigcount. A table larger than half the physical
memory is counted straight into the memory-mapped OUT (no separate save pass; it may page to
disk); smaller ones are counted in memory, which is faster, and written at the end. The file is identical for any -T.

Examples:
  kmerflow load-into-counting -k 20 -M 4G reads.ct reads.fq.gz
  kmerflow load-into-counting -k 21 -N 4 -x 1e8 -T 4 -s json all.ct a.fq b.fq
  kmerflow load-into-counting -k 41 -N 4 -M 4G --layout blocked reads.kf reads.fq.gz
  kmerflow load-into-counting -k 20 -M 8G --local-cluster 4 reads.ct reads.fq.gz")]
pub struct Args {
    #[command(flatten)]
    /// Table sizing.
    pub counting: CountingArgs,
    #[command(flatten)]
    /// Table layout.
    pub layout: LayoutArgs,
    #[command(flatten)]
    /// Force and report.
    pub run: RunArgs,
    /// Do not count k-mers past 255 (always so with --layout blocked).
    #[arg(short = 'b', long = "no-bigcount")]
    pub no_bigcount: bool,
    /// Also write a machine-readable summary, OUT.info.json or OUT.info.tsv.
    #[arg(short = 's', long = "summary-info", value_enum)]
    pub summary_info: Option<SummaryFormatArg>,
    /// The countgraph file to write (gzip-compressed when it ends in .gz).
    pub output: String,
    /// Read files (FASTA/FASTQ, optionally compressed).
    #[arg(required = true)]
    pub inputs: Vec<String>,
    #[command(flatten)]
    /// Sharding over Dask workers (run by the Python package).
    pub sharding: ShardArgs,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Runs `load-into-counting`.
pub fn run(args: Args, ctx: &mut Ctx) -> kmerflow_core::Result<Value> {
    ctx.run.progress().plan_passes(1);
    let params = args.counting.resolved_params(args.run.force, &args.inputs, false, ctx)?;
    let opts = count::Options {
        params,
        output: args.output.clone(),
        inputs: args.inputs.clone(),
        bigcount: !args.no_bigcount,
        summary: args.summary_info.map(Into::into),
        layout: args.layout.layout,
    };
    let summary = count::run(&opts, &ctx.run)?;
    tell(&args, &summary, ctx);
    summary_json(&summary)
}

/// The closing lines of `load-into-counting` of `args` that did `summary` (one process or
/// sharded).
pub fn tell(args: &Args, summary: &count::Summary, ctx: &mut Ctx) {
    ctx.info(format_args!("Total number of unique k-mers: {}", summary.unique_kmers));
    ctx.info(format_args!("fp rate estimated to be {:.3}", summary.fp_rate));
    ctx.info(format_args!("wrote to: {}.info", args.output));
    args.run.report(ctx, summary.tally);
}

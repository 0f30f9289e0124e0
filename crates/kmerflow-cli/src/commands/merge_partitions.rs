//! `kmerflow merge-partitions`: merge the subset partition maps (khmer's merge-partitions.py).

use crate::common::{summary_json, CommonArgs, Ctx};
use crate::flags;
use kmerflow_core::ops::{partition, sizing};
use serde_json::Value;

/// Arguments of `merge-partitions`.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = "\
Merges every BASE.subset.*.pmap into BASE.pmap.merged, then removes the subset maps (unless
--keep-subsets).

Examples:
  kmerflow merge-partitions -k 20 reads")]
pub struct Args {
    /// k-mer size of the partition maps.
    #[arg(short = 'k', long = "ksize", default_value_t = sizing::DEFAULT_K, value_parser = flags::positive,
          allow_negative_numbers = true)]
    pub ksize: usize,
    /// Keep the individual subset maps.
    #[arg(long = "keep-subsets")]
    pub keep_subsets: bool,
    /// Accepted for khmer compatibility.
    #[arg(short = 'f', long = "force")]
    pub force: bool,
    /// Base name of the input and output files.
    pub graphbase: String,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Runs `merge-partitions`.
pub fn run(args: Args, ctx: &mut Ctx) -> kmerflow_core::Result<Value> {
    let opts = partition::MergeOptions { base: args.graphbase, ksize: args.ksize, keep_subsets: args.keep_subsets };
    let summary = partition::merge_partitions(&opts, &ctx.run)?;
    ctx.info(format_args!(
        "merged {} pmap files: {} tags in {} partitions; saved to {}.pmap.merged",
        summary.merged.len(),
        summary.tags,
        summary.partitions,
        opts.base
    ));
    summary_json(&summary)
}

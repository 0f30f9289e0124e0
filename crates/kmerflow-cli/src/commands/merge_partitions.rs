//! `kmerflow merge-partitions`: merge the subset partition maps (khmer's merge-partitions.py).

use super::partition_args::{CompatForceArgs, KeepSubsetsArgs, KsizeArgs};
use crate::common::{summary_json, CommonArgs, Ctx};
use kmerflow_core::ops::partition;
use serde_json::Value;

/// Arguments of `merge-partitions`.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = "\
Merges every BASE.subset.*.pmap into BASE.pmap.merged, then removes the subset maps (unless
--keep-subsets).

Examples:
  kmerflow merge-partitions -k 20 reads")]
pub struct Args {
    #[command(flatten)]
    pub ksize: KsizeArgs,
    #[command(flatten)]
    pub keep_subsets: KeepSubsetsArgs,
    #[command(flatten)]
    pub force: CompatForceArgs,
    /// Base name of the input and output files.
    pub graphbase: String,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Runs `merge-partitions`.
pub fn run(args: Args, ctx: &mut Ctx) -> kmerflow_core::Result<Value> {
    let opts = partition::MergeOptions {
        base: args.graphbase,
        ksize: args.ksize.ksize,
        keep_subsets: args.keep_subsets.keep_subsets,
    };
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

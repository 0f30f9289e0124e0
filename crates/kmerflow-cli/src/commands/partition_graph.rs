//! `kmerflow partition-graph`: partition a nodegraph's tags into subset maps (khmer's
//! partition-graph.py).

use super::counting_args::StrandArgs;
use super::partition_args::SubsetArgs;
use crate::common::{summary_json, CommonArgs, Ctx};
use kmerflow_core::ops::partition;
use serde_json::Value;

/// Arguments of `partition-graph`.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = "\
Reads BASE and BASE.tagset (as load-graph writes them), writes BASE.info and one
BASE.subset.N.pmap per subset of tags; an existing subset map is kept and its subset skipped.
The subset maps are then merged by merge-partitions.

Examples:
  kmerflow load-graph -k 20 reads reads.fa
  kmerflow partition-graph -T 8 reads")]
pub struct Args {
    /// Use the stop tags in this file during partitioning.
    #[arg(short = 'S', long = "stoptags", value_name = "FILE")]
    pub stoptags: Option<String>,
    #[command(flatten)]
    pub subsets: SubsetArgs,
    /// Partition a graph over the 0.15 false-positive ceiling (its walks may not end).
    #[arg(short = 'f', long = "force")]
    pub force: bool,
    #[command(flatten)]
    /// `--single-strand`: the nodegraph's k-mers are hashed as read.
    pub strand: StrandArgs,
    /// Base name of the nodegraph and tagset.
    pub basename: String,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Runs `partition-graph`.
pub fn run(args: Args, ctx: &mut Ctx) -> kmerflow_core::Result<Value> {
    let opts = partition::PartitionOptions {
        base: args.basename,
        stoptags: args.stoptags,
        subset_size: args.subsets.subset_size(),
        stop_big_traversals: args.subsets.no_big_traverse,
        strand: args.strand.strand(),
        force: args.force,
    };
    let summary = partition::partition_graph(&opts, &ctx.run)?;
    ctx.info(format_args!("{} tags in {} subsets", summary.tags, summary.subsets));
    ctx.info(format_args!("done making subsets! see {}.subset.*.pmap", opts.base));
    summary_json(&summary)
}

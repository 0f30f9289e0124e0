//! `kmerflow do-partition`: load-graph, partition-graph, merge-partitions and
//! annotate-partitions in one run (khmer's do-partition.py).

use super::annotate_partitions::report_annotated;
use super::counting_args::{GraphArgs, RunArgs};
use super::partition_args::{KeepSubsetsArgs, SubsetArgs};
use crate::common::{summary_json, CommonArgs, Ctx, ReadFilesArgs};
use kmerflow_core::ops::{load_graph, partition};
use serde_json::Value;

/// Arguments of `do-partition`.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = "\
Builds the nodegraph and tags of the inputs in memory, partitions and merges them, and writes
<basename of input>.part for each input (as annotate-partitions) and BASE.info. The subset maps
BASE.subset.N.pmap are written only with --keep-subsets.

Examples:
  kmerflow do-partition -k 20 -x 1e8 reads reads.fa")]
pub struct Args {
    #[command(flatten)]
    /// Table sizing.
    pub graph: GraphArgs,
    #[command(flatten)]
    /// Force.
    pub run: RunArgs,
    #[command(flatten)]
    pub subsets: SubsetArgs,
    #[command(flatten)]
    pub keep_subsets: KeepSubsetsArgs,
    /// Base name for the output files.
    pub graphbase: String,
    #[command(flatten)]
    pub reads: ReadFilesArgs,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Runs `do-partition`.
pub fn run(args: Args, ctx: &mut Ctx) -> kmerflow_core::Result<Value> {
    let params = args.graph.nodegraph_params(args.run.force, &args.reads.inputs, ctx)?;
    let opts = partition::DoPartitionOptions {
        graph: load_graph::Options { params, output: args.graphbase, inputs: args.reads.inputs, build_tagset: true },
        subset_size: args.subsets.subset_size(),
        stop_big_traversals: args.subsets.no_big_traverse,
        keep_subsets: args.keep_subsets.keep_subsets,
    };
    let summary = partition::do_partition(&opts, &ctx.run)?;
    ctx.info(format_args!("fp rate estimated to be {:.3}", summary.graph.fp_rate));
    ctx.info(format_args!("{} subsets, {} partitions", summary.subsets, summary.partitions));
    report_annotated(ctx, &summary.annotated);
    summary_json(&summary)
}

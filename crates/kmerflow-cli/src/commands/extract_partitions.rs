//! `kmerflow extract-partitions`: group annotated reads by partition (khmer's
//! extract-partitions.py).

use super::partition_args::CompatForceArgs;
use crate::common::{summary_json, CommonArgs, CompressionArgs, Ctx};
use kmerflow_core::ops::partition::extract;
use serde_json::Value;

/// Arguments of `extract-partitions`.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = "\
Writes PREFIX.dist (lines `size partitions cumulative_partitions cumulative_reads`) and the
reads of partitions larger than -m into PREFIX.group0000.fa (or .fq), PREFIX.group0001.fa, ...:
partitions by ascending size, a new group once a group holds more than -X reads. With -U, the
reads without a partition go to PREFIX.unassigned.fa.

Examples:
  kmerflow extract-partitions reads reads.fa.part")]
pub struct Args {
    /// Output file prefix.
    pub prefix: String,
    /// Partition-annotated read files (from annotate-partitions).
    #[arg(required = true)]
    pub inputs: Vec<String>,
    /// Max group size (number of reads).
    #[arg(short = 'X', long = "max-size", default_value_t = extract::DEFAULT_MAX_SIZE)]
    pub max_size: u64,
    /// Minimum partition size worth keeping.
    #[arg(short = 'm', long = "min-partition-size", default_value_t = extract::DEFAULT_MIN_PARTITION_SIZE)]
    pub min_partition_size: u64,
    /// Do not write the group files.
    #[arg(short = 'n', long = "no-output-groups")]
    pub no_output_groups: bool,
    /// Write the unassigned reads too.
    #[arg(short = 'U', long = "output-unassigned")]
    pub output_unassigned: bool,
    #[command(flatten)]
    pub force: CompatForceArgs,
    #[command(flatten)]
    pub compression: CompressionArgs,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Runs `extract-partitions`.
pub fn run(args: Args, ctx: &mut Ctx) -> kmerflow_core::Result<Value> {
    let opts = extract::Options {
        prefix: args.prefix,
        inputs: args.inputs,
        max_size: args.max_size,
        min_partition_size: args.min_partition_size,
        output_groups: !args.no_output_groups,
        output_unassigned: args.output_unassigned,
        compression: args.compression.compression(),
    };
    let summary = extract::run(&opts, &ctx.run)?;
    ctx.info(format_args!("Of {} total seqs,", summary.total_reads));
    ctx.info(format_args!("extracted {} partitioned seqs into group files,", summary.grouped_reads));
    ctx.info(format_args!("discarded {} sequences from small partitions (see -m),", summary.small_partition_reads));
    ctx.info(format_args!("and found {} unpartitioned sequences (see -U).", summary.unassigned_reads));
    ctx.info(format_args!("Created {} group files", summary.groups.len()));
    summary_json(&summary)
}

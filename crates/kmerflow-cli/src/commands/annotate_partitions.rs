//! `kmerflow annotate-partitions`: label reads with their partition (khmer's
//! annotate-partitions.py).

use super::counting_args::StrandArgs;
use super::partition_args::{CompatForceArgs, KsizeArgs};
use crate::common::{summary_json, CommonArgs, Ctx, ReadFilesArgs};
use kmerflow_core::ops::partition;
use serde_json::Value;

/// Arguments of `annotate-partitions`.
#[derive(clap::Args, Debug, Clone)]
#[command(mut_arg("ksize", |a| a.help("k-mer size of the partition map")))]
#[command(mut_arg("inputs", |a| a.help("Read files to annotate")))]
#[command(after_help = "\
Loads BASE.pmap.merged and writes, for each input, <basename of input>.part in the current
directory: the reads that have a tagged k-mer, named `name<TAB>partition`, with their sequence
cleaned (non-ACGT bases as A, upper case), as khmer writes them.

Examples:
  kmerflow annotate-partitions -k 20 reads reads.fa")]
pub struct Args {
    #[command(flatten)]
    pub ksize: KsizeArgs,
    #[command(flatten)]
    pub force: CompatForceArgs,
    #[command(flatten)]
    /// `--single-strand`: the map's k-mers were hashed as read (as the graph's were).
    pub strand: StrandArgs,
    /// Base name of the merged partition map.
    pub graphbase: String,
    #[command(flatten)]
    pub reads: ReadFilesArgs,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Runs `annotate-partitions`.
pub fn run(args: Args, ctx: &mut Ctx) -> kmerflow_core::Result<Value> {
    let opts = partition::AnnotateOptions {
        base: args.graphbase,
        ksize: args.ksize.ksize,
        inputs: args.reads.inputs,
        strand: args.strand.strand(),
    };
    let summary = partition::annotate_partitions(&opts, &ctx.run)?;
    report_annotated(ctx, &summary);
    summary_json(&summary)
}

/// khmer's lines for each annotated file.
pub fn report_annotated(ctx: &Ctx, summary: &partition::AnnotateSummary) {
    for (input, output, partitions) in &summary.files {
        ctx.info(format_args!("output {partitions} partitions for {input}"));
        ctx.info(format_args!("partitions are in {output}"));
    }
}

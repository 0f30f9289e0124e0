//! `kmerflow filter-stoptags`: trim reads at stop tags (khmer's filter-stoptags.py).

use super::counting_args::StrandArgs;
use super::partition_args::{CompatForceArgs, KsizeArgs};
use crate::common::{summary_json, CommonArgs, Ctx, ReadFilesArgs};
use kmerflow_core::ops::partition::stoptags;
use serde_json::Value;

/// Arguments of `filter-stoptags`.
#[derive(clap::Args, Debug, Clone)]
#[command(mut_arg("ksize", |a| a.help("k-mer size of the stop tags")))]
#[command(after_help = "\
Writes <basename of input>.stopfilt in the current directory: reads containing N are dropped,
the others are cut k-2 bases after the start of their first k-mer that is a stop tag and kept
when at least k bases remain. Reads keep their input order.

Examples:
  kmerflow filter-stoptags -k 20 reads.stoptags reads.fa")]
pub struct Args {
    #[command(flatten)]
    pub ksize: KsizeArgs,
    #[command(flatten)]
    pub force: CompatForceArgs,
    #[command(flatten)]
    /// `--single-strand`: the stop tags' k-mers were hashed as read (as the graph's were).
    pub strand: StrandArgs,
    /// The stop tags file.
    pub stoptags: String,
    #[command(flatten)]
    pub reads: ReadFilesArgs,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Runs `filter-stoptags`.
pub fn run(args: Args, ctx: &mut Ctx) -> kmerflow_core::Result<Value> {
    let opts = stoptags::Options {
        ksize: args.ksize.ksize,
        stoptags: args.stoptags,
        inputs: args.reads.inputs,
        strand: args.strand.strand(),
    };
    let summary = stoptags::run(&opts, &ctx.run)?;
    for (input, output, reads, kept) in &summary.files {
        ctx.info(format_args!("{input}: kept {kept} of {reads} reads; output in {output}"));
    }
    summary_json(&summary)
}

//! `kmerflow normalize-by-median`: khmer's digital normalization (normalize-by-median.py).

use super::counting_args::{CountingArgs, LayoutArgs};
use super::mate_args::MateArgs;
use super::shard_args::ShardArgs;
use crate::common::{summary_json, CommonArgs, CompressionArgs, Ctx};
use clap::Args as ClapArgs;
use kmerflow_core::ops::diginorm;
use kmerflow_core::ops::sizing::TableParams;
use kmerflow_core::Result;
use serde_json::Value;

/// Discard reads whose median k-mer abundance already reaches the cutoff (digital normalization).
#[derive(ClapArgs, Debug, Clone)]
#[command(after_help = "\
Reads are decided in input order: a read (or, with -p or recognised pairs, a pair) is dropped
when its median k-mer count has already reached -C, otherwise it is counted and written. The
output is identical for any -T, and equal to khmer's.

Choosing the table: -M is the total table memory (-N tables of -M/N bytes each). With the
default 4 tables, about 5 bytes per distinct k-mer of the input give a false-positive rate near
0.1, 2.5 bytes about 0.4, and below 1.4 bytes the rate passes 0.8, where the run fails unless
-f (estimate the distinct k-mers with `kmerflow unique-kmers`). The rate is reported at the end.
-M auto does the estimate first (a HyperLogLog pass over the inputs) and sizes the table for
--fp-rate (default 0.1) within --memory-cap; -U N alone sizes it from N.

R1/R2 files: --mate R2 gives the R2 file of the input before it (one per input); its records
are the mates of the input's records, in order and by name, and are decided as pairs (as -p on
the interleaved file). -o OUT1 -O OUT2 write kept pairs as R1/R2 files (else -o gets the kept
reads interleaved, as khmer writes them; without -o, an input with a mate gets <R1>.keep and
<R2>.keep). Kept reads without a kept mate (orphans of an interleaved input, -u reads) go to
--orphans FILE or are left out and counted.

Examples:
  kmerflow normalize-by-median -k 20 -C 20 -M 1G -o normalized.fq reads.fq.gz
  kmerflow normalize-by-median -k 20 -C 20 -M auto -o normalized.fq reads.fq.gz
  kmerflow normalize-by-median -p -k 20 -C 20 -M 4G -o norm.il.fq.gz interleaved.fq.gz
  kmerflow normalize-by-median -k 20 -C 20 -M auto R1.fq.gz --mate R2.fq.gz -o out1.fq.gz -O out2.fq.gz
  kmerflow normalize-by-median -k 20 -C 5 -M 4G -s table.ct -T 4 -o out.fq a.fq b.fq
  kmerflow normalize-by-median -k 31 -C 20 -M 4G --layout blocked -o out.fq reads.fq
  kmerflow normalize-by-median -k 20 -C 20 -M 8G --scheduler tcp://head:8786 -o out.fq reads.fq")]
pub struct Args {
    #[command(flatten)]
    pub counting: CountingArgs,
    #[command(flatten)]
    pub layout: LayoutArgs,
    /// Keep a bundle unless every read's median k-mer count is >= C.
    #[arg(short = 'C', long = "cutoff", default_value = "20", value_parser = crate::flags::cutoff, allow_negative_numbers = true)]
    pub cutoff: u32,
    /// Require every read to be paired.
    #[arg(short = 'p', long = "paired", conflicts_with = "force_single")]
    pub paired: bool,
    /// Treat every read alone, ignoring pairing.
    #[arg(long = "force_single", visible_alias = "force-single")]
    pub force_single: bool,
    /// A file of unpaired reads processed after the others.
    #[arg(short = 'u', long = "unpaired-reads")]
    pub unpaired: Option<String>,
    /// Save the final countgraph to this file (kmerflow's format with --layout blocked).
    #[arg(short = 's', long = "savegraph")]
    pub savegraph: Option<String>,
    /// Start from this saved countgraph (khmer's or kmerflow's format, told apart by content).
    #[arg(short = 'l', long = "loadgraph")]
    pub loadgraph: Option<String>,
    /// CSV report `total,kept,f_kept`.
    #[arg(short = 'R', long = "report")]
    pub report: Option<String>,
    /// Report every this many reads.
    #[arg(long = "report-frequency", default_value_t = 100_000, allow_negative_numbers = true)]
    pub report_frequency: u64,
    /// Continue past unreadable inputs and a high false-positive rate.
    #[arg(short = 'f', long = "force")]
    pub force: bool,
    /// Single output file (`-` = stdout) instead of `<input>.keep`.
    #[arg(short = 'o', long = "output")]
    pub output: Option<String>,
    #[command(flatten)]
    pub compression: CompressionArgs,
    /// Accepted for compatibility: every run decides batch by batch (the engine of sharded
    /// tables too).
    #[arg(long = "batched")]
    pub batched: bool,
    #[command(flatten)]
    pub mates: MateArgs,
    /// Input sequence files.
    #[arg(required = true)]
    pub inputs: Vec<String>,
    #[command(flatten)]
    /// Sharding over Dask workers (run by the Python package).
    pub sharding: ShardArgs,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Runs `normalize-by-median` (output is identical for any number of threads).
pub fn run(args: Args, ctx: &mut Ctx) -> Result<Value> {
    let inputs: Vec<String> = args.inputs.iter().chain(&args.mates.mate).chain(&args.unpaired).cloned().collect();
    ctx.run.progress().plan_passes(1);
    let table = args.counting.resolved_params(args.force, &inputs, args.loadgraph.is_some(), ctx)?;
    diginorm::run(&options(args, table), &ctx.run).and_then(|s| summary_json(&s))
}

/// The core's options of the command line `args` with the table `table`.
pub fn options(args: Args, table: TableParams) -> diginorm::Options {
    diginorm::Options {
        table,
        cutoff: args.cutoff,
        paired: args.paired,
        force_single: args.force_single,
        unpaired: args.unpaired,
        savegraph: args.savegraph,
        loadgraph: args.loadgraph,
        report: args.report,
        report_frequency: args.report_frequency.max(1),
        output: args.output,
        mates: args.mates.into(),
        compression: args.compression.compression(),
        force: args.force,
        layout: args.layout.layout,
        inputs: args.inputs,
    }
}

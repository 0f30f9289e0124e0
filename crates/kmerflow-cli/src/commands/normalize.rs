//! `kmerflow normalize`: the normalization protocol (normalize, trim errors, normalize again)
//! in one command, with R1/R2 files, tables sized automatically and no intermediate files.

use super::counting_args::{CountingArgs, LayoutArgs};
use super::shard_args::ShardArgs;
use crate::common::{summary_json, CommonArgs, CompressionArgs, Ctx};
use clap::Args as ClapArgs;
use kmerflow_core::ops::normalize;
use kmerflow_core::run::RunContext;
use kmerflow_core::Result;
use serde_json::Value;

/// Normalize reads to a target k-mer depth, trimming sequencing errors between two passes.
#[derive(ClapArgs, Debug, Clone)]
#[command(
    mut_arg("ksize", |a| a.default_value("20")),
    mut_arg("layout", |a| a.default_value("blocked")),
    after_help = "\
Two inputs are R1 and R2 (record i of each is a pair; written to -o and -O); one input holds
interleaved pairs (recognised by name, kept together) and/or single reads.

--passes 2 (default) is khmer's protocol: normalize to the first target (default 4 x --target),
cut reads at k-mers counted fewer than --min-depth times in that pass's table (reads whose median
reaches the first target only: filter-abund -V), then normalize what is left to --target with a
new table, pairs first, then reads whose mate was trimmed away. The output equals that chain of
khmer commands; khmer's own parameters (-C 20, filter-abund -V, -C 5) are --target 5.
--passes 1: normalize to --target, then trim.

Tables are sized for --fp-rate (default 0.1) unless -M or -x is given: the first from a
HyperLogLog estimate of the input's distinct k-mers, the second from the k-mers the first counted.
Nothing is written between the steps: the input is read again instead (so it must be a file).

Every table (both passes, the trimming, the histograms) is of --layout: blocked (default; a
k-mer's counters in one cache line, one memory access a look-up) or khmer (khmer's tables, one
access per table; outputs, histograms and --save-table equal khmer's commands byte for byte).

Examples:
  kmerflow normalize R1.fq.gz R2.fq.gz -o norm_R1.fq.gz -O norm_R2.fq.gz
  kmerflow normalize R1.fq.gz R2.fq.gz -o n1.fq -O n2.fq --orphans n0.fq --hist in.csv --hist-out out.csv
  kmerflow normalize interleaved.fq.gz -o normalized.fq.gz --target 5 --report-json report.json
  kmerflow normalize reads.fa --passes 1 --target 20 --min-depth 0 -o normalized.fa"
)]
pub struct Args {
    /// Input: R1 and R2 files, or one file of interleaved pairs and/or single reads.
    #[arg(required = true, num_args = 1..=2, value_name = "IN")]
    pub inputs: Vec<String>,
    /// Output: the kept reads, or read 1 of the kept pairs with -O.
    #[arg(short = 'o', long = "output", required = true)]
    pub output: String,
    /// Read 2 of the kept pairs (without it, pairs are written interleaved to -o).
    #[arg(short = 'O', long = "mate-output")]
    pub mate_output: Option<String>,
    /// With -O: kept reads without a kept mate (without it they are dropped and counted).
    #[arg(long = "orphans", requires = "mate_output")]
    pub orphans: Option<String>,
    /// Target k-mer depth of the output (the last pass's median cutoff).
    #[arg(long = "target", default_value = "20", value_parser = crate::flags::cutoff, allow_negative_numbers = true)]
    pub target: u32,
    /// The first pass's target with --passes 2 [default: 4 x --target, at most 255].
    #[arg(long = "first-target", value_parser = crate::flags::cutoff, allow_negative_numbers = true)]
    pub first_target: Option<u32>,
    /// Cut reads before their first k-mer counted fewer times than this (0 or 1: no trimming).
    #[arg(long = "min-depth", default_value = "2", value_parser = crate::flags::cutoff, allow_negative_numbers = true)]
    pub min_depth: u32,
    /// 2: normalize, trim, normalize again; 1: normalize, trim.
    #[arg(long = "passes", default_value = "2", value_parser = clap::value_parser!(u32).range(1..=2), allow_negative_numbers = true)]
    pub passes: u32,
    #[command(flatten)]
    pub counting: CountingArgs,
    #[command(flatten)]
    pub layout: LayoutArgs,
    /// Save the first pass's table (the one the trimming reads), in its layout's format.
    #[arg(long = "save-table", value_name = "FILE")]
    pub save_table: Option<String>,
    /// Write the k-mer abundance histogram of the input (abundance-dist's CSV).
    #[arg(long = "hist", value_name = "FILE")]
    pub hist: Option<String>,
    /// Write the k-mer abundance histogram of the output.
    #[arg(long = "hist-out", value_name = "FILE")]
    pub hist_out: Option<String>,
    /// Continue past a false-positive rate over 0.8.
    #[arg(short = 'f', long = "force")]
    pub force: bool,
    #[command(flatten)]
    pub compression: CompressionArgs,
    #[command(flatten)]
    pub sharding: ShardArgs,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// The run's options, its progress passes planned in `run` (the `-M auto` pre-pass included).
pub fn options(args: Args, run: &RunContext) -> normalize::Options {
    let mut table = args.counting.params(args.force);
    let graph = &args.counting.graph;
    table.auto_memory |= graph.max_memory.is_none() && graph.max_tablesize.is_none();
    let pre_pass = table.auto_memory && table.unique_kmers <= 0.0;
    let mut inputs = args.inputs.into_iter();
    let opts = normalize::Options {
        input: inputs.next().unwrap_or_default(),
        mate: inputs.next(),
        output: args.output,
        mate_output: args.mate_output,
        orphans: args.orphans,
        target: args.target,
        first_target: args.first_target,
        min_depth: args.min_depth,
        passes: args.passes,
        table,
        layout: args.layout.layout,
        save_table: args.save_table,
        hist: args.hist,
        hist_out: args.hist_out,
        compression: args.compression.compression(),
    };
    run.progress().plan_passes(usize::from(pre_pass) + opts.progress_passes(run.threads()));
    opts
}

/// Runs `normalize`.
pub fn run(args: Args, ctx: &mut Ctx) -> Result<Value> {
    let opts = options(args, &ctx.run);
    normalize::run(&opts, &ctx.run).and_then(|s| summary_json(&s))
}

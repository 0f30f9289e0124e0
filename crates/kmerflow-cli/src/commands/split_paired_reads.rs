//! `kmerflow split-paired-reads`.

use crate::common::{summary_json, CommonArgs, Ctx, ReadOutputArgs};
use clap::Args as ClapArgs;
use kmerflow_core::ops::reads::split_paired::{split_paired_reads, SplitPairedOptions};
use serde_json::Value;

/// Arguments of `split-paired-reads` (khmer's split-paired-reads.py).
#[derive(Debug, ClapArgs)]
#[command(after_help = "\
Writes the left mates to <input>.1 and the right mates to <input>.2 in the current directory
(or in -d DIR), or to the files named by -1 and -2. A read without its mate is an error unless
-0 names a file for such orphans. Reading stdin requires -1 and -2.

Examples:
  kmerflow split-paired-reads paired.fq
  kmerflow split-paired-reads -0 orphans.fq paired.fq
  kmerflow split-paired-reads -1 reads.1 -2 reads.2 paired.fq")]
pub struct Args {
    /// The interleaved input file
    #[arg(default_value = "/dev/stdin")]
    pub infile: String,
    /// Output split reads to this directory (created if necessary)
    #[arg(short = 'd', long = "output-dir", value_name = "output_directory")]
    pub output_directory: Option<String>,
    /// Allow orphaned reads and write them to this file
    #[arg(short = '0', long = "output-orphaned", value_name = "output_orphaned")]
    pub output_orphaned: Option<String>,
    /// Output left reads to this file
    #[arg(short = '1', long = "output-first", value_name = "output_first")]
    pub output_first: Option<String>,
    /// Output right reads to this file
    #[arg(short = '2', long = "output-second", value_name = "output_second")]
    pub output_second: Option<String>,
    #[command(flatten)]
    pub output_flags: ReadOutputArgs,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Runs `split-paired-reads`.
pub fn run(args: Args, ctx: &mut Ctx) -> kmerflow_core::Result<Value> {
    let opts = SplitPairedOptions {
        input: args.infile,
        output_dir: args.output_directory,
        output_first: args.output_first,
        output_second: args.output_second,
        output_orphans: args.output_orphaned,
        compression: args.output_flags.compression.compression(),
    };
    let s = split_paired_reads(&opts, &ctx.run)?;
    ctx.info(format_args!(
        "DONE; split {} sequences ({} left, {} right, {} orphans)",
        s.left + s.right,
        s.left,
        s.right,
        s.orphans
    ));
    summary_json(&s)
}

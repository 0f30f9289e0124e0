//! `kmerflow interleave-reads`.

use crate::common::{summary_json, CommonArgs, Ctx, ReadOutputArgs};
use clap::Args as ClapArgs;
use kmerflow_core::ops::reads::interleave::{interleave_reads, InterleaveOptions};
use serde_json::Value;

/// Arguments of `interleave-reads` (khmer's interleave-reads.py).
#[derive(Debug, ClapArgs)]
#[command(after_help = "\
Each read of LEFT is written followed by the read at the same position in RIGHT. Unless
--no-reformat is given, names not already marked as mates get /1 and /2 appended and each
couple must then look like a pair (else exit 1). Files with different numbers of records are
an error.

Examples:
  kmerflow interleave-reads paired.fq.1 paired.fq.2 -o paired.fq
  kmerflow interleave-reads R1.fq.gz R2.fq.gz --gzip -o interleaved.fq.gz")]
pub struct Args {
    /// The R1 (left) file
    pub left: String,
    /// The R2 (right) file
    pub right: String,
    /// The output file (- for stdout)
    #[arg(short, long, value_name = "filename", default_value = "-")]
    pub output: String,
    /// Do not reformat read names or enforce consistency
    #[arg(long)]
    pub no_reformat: bool,
    #[command(flatten)]
    pub output_flags: ReadOutputArgs,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Runs `interleave-reads`.
pub fn run(args: Args, ctx: &mut Ctx) -> kmerflow_core::Result<Value> {
    let opts = InterleaveOptions {
        left: args.left,
        right: args.right,
        output: args.output,
        no_reformat: args.no_reformat,
        compression: args.output_flags.compression.compression(),
    };
    let pairs = interleave_reads(&opts, &ctx.run)?;
    ctx.info(format_args!("final: interleaved {} pairs", pairs.pairs));
    summary_json(&pairs)
}

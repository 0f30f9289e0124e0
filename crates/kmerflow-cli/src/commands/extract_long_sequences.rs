//! `kmerflow extract-long-sequences`.

use crate::common::{summary_json, CommonArgs, CompressionArgs, Ctx};
use clap::Args as ClapArgs;
use kmerflow_core::ops::reads::extract_long::{extract_long_sequences, ExtractLongOptions};
use serde_json::Value;

/// Arguments of `extract-long-sequences` (khmer's extract-long-sequences.py).
#[derive(Debug, ClapArgs)]
#[command(after_help = "\
Examples:
  kmerflow extract-long-sequences --length 10 paired-mixed.fa
  kmerflow extract-long-sequences -l 500 contigs.fa other.fa -o long.fa")]
pub struct Args {
    /// Input FASTA/FASTQ files
    #[arg(required = true, value_name = "input_filenames")]
    pub input_filenames: Vec<String>,
    /// The output sequence file (- for stdout)
    #[arg(short, long, value_name = "output", default_value = "-")]
    pub output: String,
    /// The minimum length of the sequences kept
    #[arg(short, long, default_value_t = 200, allow_negative_numbers = true)]
    pub length: usize,
    #[command(flatten)]
    pub compression: CompressionArgs,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Runs `extract-long-sequences`.
pub fn run(args: Args, ctx: &mut Ctx) -> kmerflow_core::Result<Value> {
    let opts = ExtractLongOptions {
        inputs: args.input_filenames,
        output: args.output,
        min_length: args.length,
        compression: args.compression.compression(),
    };
    let sum = extract_long_sequences(&opts, &ctx.run)?;
    ctx.info(format_args!("kept {} of {} sequences", sum.kept, sum.records));
    summary_json(&sum)
}

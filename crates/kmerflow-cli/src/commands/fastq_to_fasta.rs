//! `kmerflow fastq-to-fasta`.

use crate::common::{summary_json, CommonArgs, CompressionArgs, Ctx};
use clap::Args as ClapArgs;
use kmerflow_core::ops::reads::fastq_to_fasta::{fastq_to_fasta, FastqToFastaOptions};
use serde_json::Value;

/// Arguments of `fastq-to-fasta` (khmer's fastq-to-fasta.py).
#[derive(Debug, ClapArgs)]
#[command(after_help = "\
Reads containing an uppercase N are dropped unless -n is given; the number dropped is
reported on stderr as \"<n> lines dropped.\".

Examples:
  kmerflow fastq-to-fasta reads.fq.gz -o reads.fa
  kmerflow fastq-to-fasta -n reads.fq | gzip > reads.fa.gz")]
pub struct Args {
    /// The input FASTQ file (gzip/bzip2/xz/zstd compressed or not; - for stdin)
    pub input_sequence: String,
    /// The output FASTA file (- for stdout)
    #[arg(short, long, value_name = "filename", default_value = "-")]
    pub output: String,
    /// Keep reads containing 'N's (default: drop them)
    #[arg(short = 'n', long = "n_keep")]
    pub n_keep: bool,
    #[command(flatten)]
    pub compression: CompressionArgs,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Runs `fastq-to-fasta`.
pub fn run(args: Args, ctx: &mut Ctx) -> kmerflow_core::Result<Value> {
    let opts = FastqToFastaOptions {
        input: args.input_sequence,
        output: args.output,
        keep_n: args.n_keep,
        compression: args.compression.compression(),
    };
    let sum = fastq_to_fasta(&opts, &ctx.run)?;
    if opts.keep_n {
        ctx.info("No lines dropped from file.");
    } else {
        ctx.info(format_args!("{} lines dropped.", sum.dropped));
    }
    summary_json(&sum)
}

//! `kmerflow extract-paired-reads`.

use crate::common::{summary_json, CommonArgs, Ctx, ReadOutputArgs};
use clap::Args as ClapArgs;
use kmerflow_core::io::PairedInput;
use kmerflow_core::ops::reads::extract_paired::{extract_paired_reads, ExtractPairedOptions};
use serde_json::Value;

/// Arguments of `extract-paired-reads` (khmer's extract-paired-reads.py).
#[derive(Debug, ClapArgs)]
#[command(after_help = "\
Separates properly paired reads (written interleaved to <input>.pe) from orphans (written to
<input>.se), in the current directory, in -d DIR, or in the files named by -p and -s. An input
without any pair is an error. Reading stdin requires -p and -s.

Two-file input (kmerflow extension): with --mate R2, record i of R2 is the mate of record i of
the input file, so every read goes to the paired output. R1/R2 output (kmerflow extension):
with -O/--mate-output R2_OUT the pairs are written as two files, first mates to the paired
output (-p, or <input>.pe) and second mates to R2_OUT; orphans still go to the single output.

Examples:
  kmerflow extract-paired-reads paired-mixed.fq
  kmerflow extract-paired-reads -p pairs.fq -s orphans.fq reads.fq.gz
  kmerflow extract-paired-reads R1.fq.gz --mate R2.fq.gz -p interleaved.fq
  kmerflow extract-paired-reads -p pairs_1.fq -O pairs_2.fq -s orphans.fq reads.fq.gz")]
pub struct Args {
    /// The input file (broken-paired, interleaved)
    #[arg(default_value = "/dev/stdin")]
    pub infile: String,
    /// The R2 file when reads come as two files (kmerflow extension)
    #[arg(long, value_name = "R2")]
    pub mate: Option<String>,
    /// Output split reads to this directory (created if necessary)
    #[arg(short = 'd', long = "output-dir")]
    pub output_dir: Option<String>,
    /// Output paired reads to this file
    #[arg(short = 'p', long = "output-paired", value_name = "filename")]
    pub output_paired: Option<String>,
    /// Write the pairs as R1/R2 files: first mates to the paired output, second mates to this
    /// file (kmerflow extension)
    #[arg(short = 'O', long = "mate-output", value_name = "R2_OUT")]
    pub mate_output: Option<String>,
    /// Output orphaned reads to this file
    #[arg(short = 's', long = "output-single", value_name = "filename")]
    pub output_single: Option<String>,
    #[command(flatten)]
    pub output_flags: ReadOutputArgs,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Runs `extract-paired-reads`.
pub fn run(args: Args, ctx: &mut Ctx) -> kmerflow_core::Result<Value> {
    let opts = ExtractPairedOptions {
        input: PairedInput { path: args.infile, mate: args.mate },
        output_dir: args.output_dir,
        output_paired: args.output_paired,
        mate_output: args.mate_output,
        output_single: args.output_single,
        compression: args.output_flags.compression.compression(),
    };
    let s = extract_paired_reads(&opts, &ctx.run)?;
    ctx.info(format_args!(
        "DONE; read {} sequences, {} pairs and {} singletons",
        2 * s.pairs + s.singles,
        s.pairs,
        s.singles
    ));
    match &s.mate_path {
        Some(mate) => ctx.info(format_args!("wrote to: {}, {mate} and {}", s.paired_path, s.single_path)),
        None => ctx.info(format_args!("wrote to: {} and {}", s.paired_path, s.single_path)),
    }
    summary_json(&s)
}
